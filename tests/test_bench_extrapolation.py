"""bench/extrapolation.py's controls: the factors file's geometric-mean factor in every layer and, for band-wise
factors, each band's geometric mean in every layer, written where the run keeps its rows (never a temporary
folder that outlives the run)."""

import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
from extrapolation import controls  # noqa: E402

from lpes_framework.model.factors_file import factors_record, load_factors# noqa: E402
from lpes_framework.io.atomic import write_json_atomic
from lpes_framework.position.bands import factor_table  # noqa: E402


def _geometric(values) -> float:
    return round(math.exp(sum(math.log(v) for v in values) / len(values)), 4)


def _same_identity(path: str, source: dict) -> dict:
    record = load_factors(path)
    assert record["scheme"] == source["scheme"] and record["model"] == source["model"]
    return record


def test_a_preset_controls_live_in_the_evaluate_folder(tmp_path):
    (mean, _), (bands, _) = controls("qwen2.5-coder-0.5b", tmp_path)
    assert Path(mean) == tmp_path / "qwen2.5-coder-0.5b-mean" / "best_factors.json"
    assert Path(bands) == tmp_path / "qwen2.5-coder-0.5b-band-mean" / "best_factors.json"
    source = load_factors("qwen2.5-coder-0.5b")
    table = factor_table(source["factors"])
    want = _geometric(table.ravel().tolist())
    assert _same_identity(mean, source)["factors"] == [[want] * table.shape[1]] * len(table)
    per_band = [_geometric(column) for column in table.T.tolist()]
    assert _same_identity(bands, source)["factors"] == [per_band] * len(table)


def test_a_file_control_lives_beside_the_file(tmp_path):
    _, (banded, _) = controls("qwen2.5-coder-0.5b", tmp_path / "first")  # a band-wise file: two controls
    made = controls(banded, tmp_path / "unused")
    assert [Path(p) for p, _ in made] == [Path(banded).parent / f"uniform-{k}" / "best_factors.json"
                                          for k in ("mean", "band-mean")]
    assert not (tmp_path / "unused").exists()


def test_one_factor_per_layer_has_the_mean_control_alone(tmp_path):
    source = tmp_path / "run" / "best_factors.json"
    source.parent.mkdir()
    record = factors_record(model=load_factors("qwen2.5-coder-0.5b")["model"], scheme={"name": "ntk"},
                            factors=[0.5] * 12 + [2.0] * 12)
    write_json_atomic(source, record)
    [(path, description)] = controls(str(source), tmp_path)
    assert load_factors(path)["factors"] == [1.0] * 24 and "1.0 in every layer" in description


def test_band_wise_controls_take_every_band_then_each_band_alone(tmp_path):
    source = tmp_path / "run" / "best_factors.json"
    source.parent.mkdir()
    record = factors_record(model=load_factors("qwen2.5-coder-0.5b")["model"], scheme={"name": "ntk", "bands": [128]},
                            factors=[[0.5, 2.0]] * 12 + [[1.0, 4.0]] * 12)
    write_json_atomic(source, record)
    (mean, _), (bands, _) = controls(str(source), tmp_path)
    assert load_factors(mean)["factors"] == [[round(math.sqrt(2.0), 4)] * 2] * 24  # exp of the mean log of all 48
    assert load_factors(bands)["factors"] == [[round(math.sqrt(0.5), 4), round(math.sqrt(8.0), 4)]] * 24
