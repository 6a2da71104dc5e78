"""executor=ray on the session's local Ray instance (2 CPUs, loopback only) with the tiny model: the same records as
executor=local, a worker killed mid-run, every worker gone."""

import pytest

from conftest import TINY_SEARCH, read_jsonl, run_cli

ray = pytest.importorskip("ray")

RAY = ["executor=ray", "executor.workers=2", "executor.threads_per_worker=1"]


def records(path):
    return [(r["key"], r["kind"], r.get("generation"), r.get("scores"), r.get("outcome")) for r in read_jsonl(path)]


def test_ray_gives_the_records_of_local(tmp_path, ray_instance):
    run_cli("lpes_framework", *TINY_SEARCH, "threads=1", f"hydra.run.dir={tmp_path / 'local'}")
    run_cli("lpes_framework", *TINY_SEARCH, *RAY, f"hydra.run.dir={tmp_path / 'ray'}")
    assert records(tmp_path / "ray" / "evaluations.jsonl") == records(tmp_path / "local" / "evaluations.jsonl")
    import json

    local, remote = (json.loads((tmp_path / d / "best_factors.json").read_text()) for d in ("local", "ray"))
    assert remote["factors"] == local["factors"] and remote["metrics"] == local["metrics"]


@pytest.fixture(scope="module")
def tiny_run_cfg():
    from lpes_framework.config import plain, task_configs
    from lpes_framework.config import compose_config

    cfg = compose_config("config", [*TINY_SEARCH])
    return plain(cfg), task_configs(cfg)


def jobs(n):
    return [("search", [1.0 + 0.1 * i] * 4, {"name": "rope"}) for i in range(n)]


def test_a_killed_worker_loses_nothing_and_every_worker_gone_is_one_clear_error(tiny_run_cfg, ray_instance):
    from lpes_framework.errors import LpesError
    from lpes_framework.execution.local import LocalExecutor
    from lpes_framework.execution.ray import RayExecutor

    cfg, specs = tiny_run_cfg
    expected = [rows for rows, _ in LocalExecutor(cfg | {"threads": 1}, specs, ["search"]).run(jobs(6))]
    executor = RayExecutor(cfg, specs, ["search"], workers=2)
    try:
        results = executor.run(jobs(6))
        first = next(results)
        # dies with a job in flight or about to get one (4 jobs are still queued): that job is retried on
        # the other worker; whichever it is, every job comes back, in order, with the local scores
        ray.kill(executor.actors[0])
        got = [first] + list(results)
        assert [rows for rows, _ in got] == expected
        # then the last one goes too: the next jobs fail as one line saying how to continue
        for actor in list(executor.actors):
            ray.kill(actor)
        with pytest.raises(LpesError, match="all Ray workers are gone.*resume=true"):
            list(executor.run(jobs(3)))
    finally:
        executor.close()
