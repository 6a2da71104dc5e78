"""The factors command: a run's best entry as a factors file, with the run's regime, usable where any is."""

import json

import pytest

from conftest import TINY_SEARCH, TINY_TASK, read_jsonl, run_cli
from lpes_framework.commands.factors import main
from lpes_framework.errors import LpesError
from lpes_framework.model.factors_file import load_factors


@pytest.fixture(scope="module")
def search_run(tmp_path_factory):
    """A finished tiny search, and (for the evaluate case) a tuning sweep of three uniform factors."""
    root = tmp_path_factory.mktemp("factors")
    run_cli("lpes_framework", *TINY_SEARCH, "optimizer.generations=2", f"hydra.run.dir={root / 'search'}")
    run_cli("lpes_framework.commands.evaluate", *TINY_TASK, "methods.uniform=[1.1,1.5,2.0]",
            f"hydra.run.dir={root / 'sweep'}")
    return root


def test_a_search_runs_best_candidate_with_its_regime(search_run, tmp_path, capsys):
    main([str(search_run / "search"), "--out", str(tmp_path / "new" / "best.json")])  # its folder is made
    assert "wrote" in capsys.readouterr().out
    record = load_factors(tmp_path / "new" / "best.json")
    candidates = [r for r in read_jsonl(search_run / "search" / "evaluations.jsonl") if r["kind"] == "candidate"]
    best = max(candidates, key=lambda r: r["outcome"]["fitness"])
    assert record["factors"] == best["factors"] and record["genome"] == best["genome"]
    assert record["metrics"]["search"] == best["outcome"]
    shipped = json.loads((search_run / "search" / "best_factors.json").read_text())
    for block in ("model", "scheme", "curve", "task", "run"):  # the regime the search itself records
        assert record[block] == shipped[block], block


def test_uniform_takes_the_best_non_identity_uniform_candidate(search_run, tmp_path):
    main([str(search_run / "search"), "--uniform", "--out", str(tmp_path / "uniform.json")])
    factors = load_factors(tmp_path / "uniform.json")["factors"]
    uniform = [r for r in read_jsonl(search_run / "search" / "evaluations.jsonl")
               if r["kind"] == "candidate" and len(set(r["factors"])) == 1 and r["factors"][0] != 1.0]
    assert factors == max(uniform, key=lambda r: r["outcome"]["fitness"])["factors"]


def test_an_evaluate_sweeps_best_method_against_its_unpatched_row(search_run, tmp_path):
    from lpes_framework.judging.fitness import FitnessWeights, task_score
    from lpes_framework.judging.results import scores_from_json

    main([str(search_run / "sweep"), "--out", str(tmp_path / "best.json")])
    record = load_factors(tmp_path / "best.json")
    results = json.loads((search_run / "sweep" / "results.json").read_text())
    scores = {name: scores_from_json(m["scores"])["kv_retrieval"] for name, m in results["methods"].items()}
    expected = {name: task_score(s, scores["unpatched"], FitnessWeights.defaults()) for name, s in scores.items()
                if name != "unpatched"}
    assert record["metrics"]["search"] == {"chosen": max(expected, key=expected.get), "fitness": expected,
                                           "weights": FitnessWeights.defaults().__dict__}
    assert record["factors"] == results["methods"][max(expected, key=expected.get)]["factors"]
    assert record["model"] == results["model"]


@pytest.mark.parametrize("args, message", [
    (["{search}", "--baseline", "{search}"], "--baseline is for evaluate folders"),
    (["{sweep}", "--uniform"], "--uniform is for search runs"),
    (["{empty}"], "not a finished evaluate folder"),
    (["{search}", "--control-points", "5"], "--control-points is for --fit"),
    (["{search}/best_factors.json", "--fit", "bezier", "--uniform"], "--fit redraws a factors file"),
    (["{search}/best_factors.json", "--fit", "bezier", "--control-points", "0"], "bezier: needs at least one gene"),
    (["{search}/best_factors.json", "--fit", "bezeir"], "did you mean 'bezier'"),
])
def test_misuse_is_one_line(search_run, tmp_path, args, message):
    (tmp_path / "empty").mkdir()
    paths = {"search": search_run / "search", "sweep": search_run / "sweep", "empty": tmp_path / "empty"}
    with pytest.raises(SystemExit) as exc:
        main([a.format(**paths) for a in args] + ["--out", str(tmp_path / "x.json")])
    assert exc.value.code == 2
    assert not (tmp_path / "x.json").exists()
    with pytest.raises(LpesError, match=message):
        main.__wrapped__([a.format(**paths) for a in args] + ["--out", str(tmp_path / "x.json")])


def test_fit_redraws_a_factors_file_in_a_curve_and_says_what_it_lost(tmp_path):
    from lpes_framework.model.factors_file import factors_record
    from lpes_framework.io.atomic import write_json_atomic
    from lpes_framework.position.curves import build_curve

    from conftest import model_block

    bezier = build_curve({"name": "bezier", "low": 0.5, "high": 3.0}, 4)
    drawn = bezier.factors([0.8, 1.9, 1.2, 1.0]).tolist()
    for name, factors in {"smooth": drawn, "zigzag": [0.6, 2.0, 0.6, 2.0]}.items():
        write_json_atomic(tmp_path / f"{name}.json", factors_record(
            model=model_block(), scheme={"name": "pi"}, factors=factors,
            curve={"name": "free", "n_genes": 4, "low": 0.5, "high": 3.0, "monotone": None}))
        main([str(tmp_path / f"{name}.json"), "--fit", "bezier", "--out", str(tmp_path / f"{name}-fit.json")])
    smooth, zigzag = (load_factors(tmp_path / f"{n}-fit.json") for n in ("smooth", "zigzag"))
    assert smooth["curve"]["name"] == "bezier" and (smooth["curve"]["low"], smooth["curve"]["high"]) == (0.5, 3.0)
    assert smooth["factors"] == pytest.approx(drawn, abs=1e-6)  # a cubic's own factors come back
    assert smooth["metrics"]["fit"]["max_abs_change"] < 1e-6 and smooth["scheme"] == {"name": "pi"}
    assert bezier.factors(zigzag["genome"]).tolist() == zigzag["factors"]
    assert zigzag["metrics"]["fit"]["rms_change"] > 0.3  # a cubic cannot zigzag: the loss is stated
