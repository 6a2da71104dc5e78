"""bench/extrapolation.py's control: the factors file's geometric-mean factor in every layer, written where
the run keeps its rows (never a temporary folder that outlives the run)."""

import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
from extrapolation import mean_control  # noqa: E402

from lpes_framework.model.factors_file import load_factors  # noqa: E402
from lpes_framework.position.bands import factor_table  # noqa: E402


def _check(path: str, mean: float, source: dict) -> None:
    record = load_factors(path)
    values = factor_table(source["factors"]).ravel().tolist()
    geometric = math.exp(sum(math.log(v) for v in values) / len(values))
    assert mean == round(geometric, 4)
    assert record["factors"] == [mean] * len(source["factors"])
    assert record["scheme"] == source["scheme"] and record["model"] == source["model"]


def test_a_preset_control_lives_in_the_evaluate_folder(tmp_path):
    path, mean = mean_control("qwen2.5-coder-0.5b", tmp_path)
    assert Path(path) == tmp_path / "qwen2.5-coder-0.5b-mean" / "best_factors.json"
    _check(path, mean, load_factors("qwen2.5-coder-0.5b"))


def test_a_file_control_lives_beside_the_file(tmp_path):
    preset, _ = mean_control("qwen2.5-coder-0.5b", tmp_path / "first")
    path, mean = mean_control(preset, tmp_path / "unused")
    assert Path(path) == Path(preset).parent / "uniform-mean" / "best_factors.json"
    assert not (tmp_path / "unused").exists()
    _check(path, mean, load_factors(preset))


def test_a_band_wise_files_control_is_the_mean_over_every_layer_and_band(tmp_path):
    from lpes_framework.model.factors_file import factors_record, write_json_atomic

    source = tmp_path / "run" / "best_factors.json"
    source.parent.mkdir()
    record = factors_record(model=load_factors("qwen2.5-coder-0.5b")["model"], scheme={"name": "ntk", "bands": [128]},
                            factors=[[0.5, 2.0]] * 12 + [[1.0, 4.0]] * 12)
    write_json_atomic(source, record)
    path, mean = mean_control(str(source), tmp_path)
    assert mean == round(math.sqrt(2.0), 4)  # exp of the mean log over all 48 numbers
    assert load_factors(path)["factors"] == [mean] * 24
