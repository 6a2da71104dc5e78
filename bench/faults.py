"""Faults a user meets with a run directory, tried on the tiny model as a user would (the commands in
subprocesses), each judged on what came back:

- silent: the command exited 0 where it should have refused, or refused with something other than one
  ``error:`` line naming the problem;
- late:   the refusal came after the weights loaded (the model line was printed first);
- lost:   a file that was already there (the log, the result) changed or went.

Scenarios: two processes in one folder, a kill in generation 0 then a resume with another model, a resume
with other fitness weights, a crafted ``checkpoint.pkl`` (resume and status), factors from another model
or with no model block (evaluate, attention), a factor of 1e300, late-failing values (bootstrap counts,
fractional counts, non-numbers, NaN weights), a gradient start beyond the curve's bounds, resume on an
empty folder, a KV file with too few records, damaged log lines, an unknown plugin, a model without RoPE,
and (``--cache``, ~1 min more) a truncated model cache, which must be rebuilt with a line saying so.
Last line: ``faults_tried=<n> silent=<n> late=<n> lost=<n>``; target silent=0 late=0 lost=0.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import common  # noqa: F401  (puts the repository on the path)

TINY = ["model=tiny", "task.pairs=6", "task.gold_positions=[0,2,5]", "task.samples_per_position=2", "progress=false"]
SEARCH = [*TINY, "optimizer.population=5", "optimizer.parents=3", "optimizer.mutations=2", "optimizer.crossovers=2",
          "optimizer.generations=2"]
MODEL_LINE = ": LlamaForCausalLM,"  # printed once the model has loaded


def cli(module: str, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True, timeout=900,
                          env=os.environ | (env or {}))


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file() and p.name != ".lpes.lock"} \
        if folder.is_dir() else {}


class Judge:
    def __init__(self):
        self.tried, self.silent, self.late, self.lost = 0, [], [], []

    def refused(self, name: str, proc, words: str, kept: Path | None = None, before: dict | None = None) -> None:
        """``proc`` must end in one ``error:`` line holding ``words``, before the model line, and leave the
        files of ``kept`` as they were (``before``)."""
        self.tried += 1
        lines = proc.stderr.strip().splitlines()
        last = lines[-1] if lines else ""
        if proc.returncode != 2 or not last.startswith("error: ") or words not in last:
            self.silent.append(f"{name}: rc {proc.returncode}, {last[:200]!r}")
        elif MODEL_LINE in proc.stdout:
            self.late.append(name)
        after = snapshot(kept) if kept is not None else {}
        if kept is not None and any(after.get(name) != data for name, data in before.items()):
            self.lost.append(name)
        print(f"{name:<44} rc={proc.returncode} {last[:110]}")

    def check(self, name: str, ok: bool, detail: str) -> None:
        self.tried += 1
        if not ok:
            self.silent.append(f"{name}: {detail}")
        print(f"{name:<44} {'ok' if ok else 'FAULT'} {detail}")


def factors_file(path: Path, model: dict, factors: list[float]) -> Path:
    from lpes_framework.model.factors import factors_record, write_json_atomic

    write_json_atomic(path, factors_record(model=model, scheme={"name": "pi"}, factors=factors))
    return path


def run(tmp: Path, judge: Judge, cache: bool) -> None:
    from lpes_framework.config import compose_config
    from lpes_framework.model.load import identify

    block = identify(compose_config("config", ["model=tiny"]).model).as_dict()
    reference = tmp / "reference"
    assert cli("lpes_framework", *SEARCH, f"hydra.run.dir={reference}").returncode == 0, "the reference search failed"

    # a second process in a folder another one holds
    busy = tmp / "busy"
    busy.mkdir()
    holder = subprocess.Popen([sys.executable, "-c", "import sys; from lpes_framework.io.store import RunLock; "
                               f"lock = RunLock({str(busy)!r}).acquire(); print('held', flush=True); sys.stdin.read()"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    holder.stdout.readline()
    judge.refused("two processes, one folder", cli("lpes_framework", *SEARCH, f"hydra.run.dir={busy}"),
                  "is in use by another lpes process", busy, {})
    holder.stdin.close()
    holder.wait()

    # resumes that must not mix runs
    lines = (reference / "evaluations.jsonl").read_text().splitlines(keepends=True)
    killed = tmp / "killed"
    killed.mkdir()
    (killed / "evaluations.jsonl").write_text("".join(lines[:4]))  # spec, baseline, two of generation 0
    before = snapshot(killed)
    judge.refused("kill in gen 0, resume with another model", cli(
        "lpes_framework", *SEARCH, f"hydra.run.dir={killed}", "resume=true", "model.random.num_hidden_layers=2"),
        "the model's n_layers", killed, before)
    judge.refused("resume with other fitness weights", cli(
        "lpes_framework", *SEARCH, f"hydra.run.dir={killed}", "resume=true", "fitness.end_penalty=1.0"),
        "fitness.end_penalty", killed, before)
    empty = tmp / "empty"
    judge.refused("resume=true on an empty folder", cli("lpes_framework", *SEARCH, f"hydra.run.dir={empty}",
                                                        "resume=true"), "holds no search to continue")
    for label, bad in (("a '{}' line in the log", b"{}\n"), ("a non-UTF-8 line in the log", b"\xff\xfe x\n")):
        damaged = tmp / f"damaged{len(bad)}"
        damaged.mkdir()
        (damaged / "evaluations.jsonl").write_bytes(lines[0].encode() + bad + "".join(lines[1:4]).encode())
        before = snapshot(damaged)
        judge.refused(label, cli("lpes_framework", *SEARCH, f"hydra.run.dir={damaged}", "resume=true"),
                      "evaluations.jsonl", damaged, before)

    # a crafted pickle is never unpickled, by resume or by status
    crafted = tmp / "crafted"
    crafted.mkdir()
    (crafted / "evaluations.jsonl").write_text("".join(lines[:4]))
    marker = tmp / "pwned"
    (crafted / "checkpoint.pkl").write_bytes(b"cbuiltins\nopen\n(" + repr(str(marker)).encode() + b"\nVw\ntR.")
    before = snapshot(crafted)
    judge.refused("crafted checkpoint.pkl, resume", cli("lpes_framework", *SEARCH, f"hydra.run.dir={crafted}",
                                                        "resume=true"), "checkpoint of an older lpes", crafted, before)
    judge.refused("crafted checkpoint.pkl, status", cli("lpes_framework.commands.status", str(crafted)),
                  "checkpoint of an older lpes", crafted, before)
    judge.check("crafted pickle never ran", not marker.exists(), "no file created")

    # factors that do not belong to this model
    foreign = factors_file(tmp / "foreign.json", block | {"head_dim": 128, "rope_theta": 1e6}, [1.0, 1.2, 1.4, 1.6])
    blockless = factors_file(tmp / "blockless.json", {}, [1.0, 1.2, 1.4, 1.6])
    huge = factors_file(tmp / "huge.json", block, [1.0, 1e300, 1.0, 1.0])
    for label, path, words in (("foreign factors, evaluate", foreign, "head_dim=128"),
                               ("factors without a model block, evaluate", blockless, "holds no 'model' block"),
                               ("a factor of 1e300, evaluate", huge, "factors must be finite and in")):
        judge.refused(label, cli("lpes_framework.commands.evaluate", *TINY, f"methods.factors_files=[{path}]",
                                 f"hydra.run.dir={tmp / 'eval'}"), words)
    before = snapshot(reference)
    judge.refused("foreign factors, attention", cli("lpes_framework.commands.attention", str(reference), "--factors",
                                                    str(foreign), "--samples", "1"), "head_dim=128", reference, before)

    # values that used to fail after the weights loaded
    few = tmp / "few.jsonl"
    few.write_text("".join(json.dumps({"ordered_kv_records": [[f"k{i}{j}", f"v{i}{j}"] for j in range(6)],
                                       "key": f"k{i}0", "value": f"v{i}0"}) + "\n" for i in range(2)))
    for i, (label, overrides, words) in enumerate((
            ("validation.bootstrap_resamples=0", ["validation.bootstrap_resamples=0"], "bootstrap_resamples"),
            ("optimizer.population=9.5", ["optimizer.population=9.5"], "population=9.5"),
            ("batch_size=2.5", ["batch_size=2.5"], "batch_size"),
            ("fitness.end_penalty=abc", ["fitness.end_penalty=abc"], "fitness.end_penalty"),
            ("fitness.middle_bonus=nan", ["fitness.middle_bonus=nan"], "fitness.middle_bonus"),
            ("a KV file with too few records", [f"task.path={few}"], "fewer than samples_per_position"),
            ("an unknown optimizer", ["optimizer=nope"], "nope"),
            ("a model without RoPE", ["model.random.model_type=gpt2"], "no rotary position embeddings"))):
        judge.refused(label, cli("lpes_framework", *SEARCH, *overrides, f"hydra.run.dir={tmp / f'late{i}'}"), words)
    judge.refused("gradient start beyond the curve bounds", cli(
        "lpes_framework", *TINY, "optimizer=gradient", "optimizer.start=5.0", f"hydra.run.dir={tmp / 'start'}"),
        "outside the curve bounds")

    if cache:
        damaged_cache(tmp, judge)


def damaged_cache(tmp: Path, judge: Judge) -> None:
    """A converted model cut short (as by a full disk) is rebuilt, with a line, and the command succeeds."""
    from lpes_framework.config import compose_config
    from lpes_framework.model.load import ModelSpec, _converted, resolve_source

    env = {"LPES_CACHE": str(tmp / "cache")}
    args = ["model=smollm2", "task.pairs=6", "task.gold_positions=[0,5]", "task.samples_per_position=1",
            "methods.uniform=[]", "progress=false", "extra_tasks={}"]
    first = cli("lpes_framework.commands.evaluate", *args, f"hydra.run.dir={tmp / 'c1'}", env=env)  # converts into the cache
    os.environ["LPES_CACHE"] = env["LPES_CACHE"]
    folder = _converted(*resolve_source(ModelSpec.of(compose_config("config", ["model=smollm2"]).model)), "model")
    weights = next(folder.glob("*.safetensors"))
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    again = cli("lpes_framework.commands.evaluate", *args, f"hydra.run.dir={tmp / 'c2'}", env=env)
    rebuilt = first.returncode == 0 and again.returncode == 0 and "is damaged" in again.stderr
    same = rebuilt and (json.loads((tmp / "c1" / "results.json").read_text())["methods"]
                        == json.loads((tmp / "c2" / "results.json").read_text())["methods"])
    judge.check("a truncated model cache", bool(same), "rebuilt with a line, same scores" if same
                else f"rc {again.returncode}: {again.stderr.strip().splitlines()[-1:]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", action="store_true", help="also truncate a converted SmolLM2 cache (~1 min)")
    args = parser.parse_args()
    judge = Judge()
    with tempfile.TemporaryDirectory() as tmp:
        run(Path(tmp), judge, args.cache)
    for kind in ("silent", "late", "lost"):
        for what in getattr(judge, kind):
            print(f"{kind}: {what}")
    print(f"faults_tried={judge.tried} silent={len(judge.silent)} late={len(judge.late)} lost={len(judge.lost)}")


if __name__ == "__main__":
    main()
