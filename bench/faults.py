"""Faults a user meets with a run directory, tried on the tiny model as a user would (the commands in
subprocesses), each judged on what came back:

- security:  a file received from someone else ran code, or read or wrote outside its folder;
- silent:    the command exited 0 where it should have refused, or refused with something other than one
  ``error:`` line naming the problem;
- late:      the refusal came after the weights loaded (the model line was printed first);
- lost:      a file that was already there (the log, the result) changed or went;
- traceback: a raw Python traceback instead of the one line.

Scenarios: two processes in one folder, a kill in generation 0 then a resume with another model, a resume
with other fitness weights, a crafted ``checkpoint.pkl`` (resume and status), factors from another model
or with no model block (evaluate, attention), a factor of 1e300, late-failing values (bootstrap counts,
fractional counts, non-numbers, NaN weights), a gradient start beyond the curve's bounds, resume on an
empty folder, a KV file with too few records, damaged log lines, an unknown plugin, a model without RoPE,
files received from others (links out of the folder, records naming models, files or remote code, logs and
checkpoints of other runs, held-out rows changed under their key, ambiguous data), competitor options that
make the method a no-op, every file kind damaged field by field and given to every command that reads it
(``file_probes.py``), mixtures that mean nothing, presets over other files or with another task's evidence,
``lpes tune`` settings no recipe can follow, and (``--cache``, ~1 min more) a truncated model cache, which must be rebuilt with a
line saying so. Last line: ``faults_tried=<n> security=<n> silent=<n> late=<n> lost=<n> traceback=<n>``;
target: every count but the first 0.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import common  # noqa: F401  (puts the repository on the path)
from file_probes import probe_files
from sealed_probes import probe_export, probe_sealed, probe_tune_state

TINY = ["model=tiny", "task.pairs=6", "task.gold_positions=[0,2,5]", "task.samples_per_position=2", "progress=false"]
SEARCH = [*TINY, "optimizer.population=5", "optimizer.parents=3", "optimizer.mutations=2", "optimizer.crossovers=2",
          "optimizer.generations=2"]
ROOT = Path(__file__).resolve().parents[1]
MODEL_LINE = ": LlamaForCausalLM,"  # printed once the model has loaded


def cli(module: str, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True, timeout=900,
                          env=os.environ | (env or {}))


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file() and p.name != ".lpes.lock"} \
        if folder.is_dir() else {}


CLASSES = ("security", "silent", "late", "lost", "traceback")


class Judge:
    def __init__(self):
        self.tried = 0
        self.found: dict[str, list[str]] = {kind: [] for kind in CLASSES}

    def refused(self, name: str, proc, words: str, kept: Path | None = None, before: dict | None = None) -> None:
        """``proc`` must end in one ``error:`` line holding ``words``, before the model line, and leave the files
        of ``kept`` as they were (``before``) with no ``.hydra/`` written into it."""
        self.tried += 1
        lines = proc.stderr.strip().splitlines()
        last = lines[-1] if lines else ""
        if "Traceback (most recent call last)" in proc.stderr:
            self.found["traceback"].append(f"{name}: {last[:200]!r}")
        elif proc.returncode != 2 or not last.startswith("error: ") or words not in last:
            self.found["silent"].append(f"{name}: rc {proc.returncode}, {last[:200]!r}")
        elif MODEL_LINE in proc.stdout:
            self.found["late"].append(name)
        after = snapshot(kept) if kept is not None else {}
        if kept is not None and (any(after.get(name) != data for name, data in before.items())
                                 or (kept / ".hydra").exists()):
            self.found["lost"].append(name)
        print(f"{name:<48} rc={proc.returncode} {last[:110]}")

    def check(self, name: str, ok: bool, detail: str, kind: str = "silent") -> None:
        self.tried += 1
        if not ok:
            self.found[kind].append(f"{name}: {detail}")
        print(f"{name:<48} {'ok' if ok else 'FAULT'} {detail}")


def factors_file(path: Path, model: dict, factors: list[float]) -> Path:
    from lpes_framework.model.factors_file import factors_record
    from lpes_framework.io.atomic import write_json_atomic

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
    named_only = factors_file(tmp / "named-only.json", {"name": block["name"]}, [1.0, 1.2, 1.4, 1.6])
    huge = factors_file(tmp / "huge.json", block, [1.0, 1e300, 1.0, 1.0])
    for label, path, words in (("foreign factors, evaluate", foreign, "head_dim=128"),
                               ("factors without a model block, evaluate", blockless, "holds no 'model' block"),
                               ("a model block with only a name, evaluate", named_only, "with an identity field"),
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

    evaluated = tmp / "evaluated"  # unpatched, a uniform scaling and the reference's file, re-tested
    assert cli("lpes_framework.commands.evaluate", *TINY, f"methods.factors_files=[{reference}/best_factors.json]",
               f"hydra.run.dir={evaluated}").returncode == 0, "the reference evaluate failed"
    probe_files(tmp, judge, reference, evaluated)
    probe_sealed(tmp, judge, reference, evaluated, cli, SEARCH)
    probe_tune_state(tmp, judge, cli)
    probe_export(tmp, judge, reference, cli)
    received(tmp, judge, reference, block)
    mixtures_presets_recipes(tmp, judge, reference, evaluated)
    if cache:
        damaged_cache(tmp, judge)


def mixtures_presets_recipes(tmp: Path, judge: Judge, reference: Path, evaluated: Path) -> None:
    """Issue 69's classes 1, 3, 4, 5, 7 and 8 and the recipe: scheme options, gradient start files, rows that
    disagree, the plugin listing, mixtures that mean nothing, presets over other files or with
    another task's evidence, a re-test on the search split, exports onto what they did not make, tune settings
    no recipe can follow."""
    for i, (label, overrides, words) in enumerate((
            ("an extra task named as the primary", ["+task@extra_tasks.kv_retrieval=passkey"], "primary task's name"),
            ("a negative task weight", ["+task@extra_tasks.p=passkey", "extra_tasks.p.weight=-1"], "must be positive"),
            ("a zero task weight", ["+task@extra_tasks.p=passkey", "extra_tasks.p.weight=0"], "must be positive"),
            ("one task twice in a mixture", ["+task@extra_tasks.a=passkey", "+task@extra_tasks.b=passkey"],
             "the same task with the same settings"))):
        judge.refused(label, cli("lpes_framework", *SEARCH, *overrides, f"hydra.run.dir={tmp / f'mix{i}'}"), words)
    presets = tmp / "presets"
    made = cli("lpes_framework.commands.preset", str(reference / "best_factors.json"), "--heldout", str(evaluated),
               "--name", "mine", "--out", str(presets))
    judge.check("a preset from a re-test", made.returncode == 0, made.stderr.strip()[-120:])
    before = snapshot(presets)
    judge.refused("a preset over an existing one", cli(
        "lpes_framework.commands.preset", str(reference / "best_factors.json"), "--heldout", str(evaluated), "--name",
        "mine", "--out", str(presets)), "pass --replace", presets, before)
    other = tmp / "other-task"
    other.mkdir()
    record = json.loads((reference / "best_factors.json").read_text())
    (other / "best_factors.json").write_text(json.dumps(record | {"task": {"name": "passkey"}}))
    renamed = tmp / "other-evidence"  # the re-test's row under this folder's name: only the task differs
    renamed.mkdir()
    results = json.loads((evaluated / "results.json").read_text())
    results["methods"]["file other-task"] = results["methods"].pop(f"file {reference.name}")
    results["intervals"] = {k.replace(f"file {reference.name}", "file other-task"): v for k, v in results["intervals"].items()}
    (renamed / "results.json").write_text(json.dumps(results))
    judge.refused("a preset with another task's evidence", cli(
        "lpes_framework.commands.preset", str(other / "best_factors.json"), "--heldout", str(renamed), "--name", "x",
        "--out", str(presets)), "was made for passkey", presets, before)
    judge.refused("lpes retest on the search split", cli("lpes_framework.commands.retest", "--split", "search"),
                  "a re-test is held out")
    keeps = tmp / "users-model"  # a folder no export made: the user's own model
    keeps.mkdir()
    (keeps / "README.md").write_text("mine")
    (keeps / "model.safetensors").write_text("weights")
    linked = tmp / "linked-out"
    linked.symlink_to(keeps)
    a_file = tmp / "a-file"
    a_file.write_text("x")
    for label, out, words in (("export onto a model folder it did not make", keeps, "holds files no export made"),
                              ("export through a link", linked, "is a link"),
                              ("export onto a file", a_file, "is a file")):
        before = snapshot(keeps)
        judge.refused(label, cli("lpes_framework.commands.export", str(reference / "best_factors.json"), "--model",
                                 "tiny", "--out", str(out)), words, keeps, before)
    # class 3: scheme options checked with the rest, before any weights load
    for i, (label, overrides, words) in enumerate((
            ("yarn attention_factor=nan", ["pos=yarn", "pos.attention_factor=nan"], "attention_factor must be"),
            ("yarn attention_factor=0", ["pos=yarn", "pos.attention_factor=0"], "attention_factor must be"),
            ("yarn attention_factor as text", ["pos=yarn", "pos.attention_factor=abc"], "attention_factor must be"),
            ("yarn truncate as text", ["pos=yarn", "pos.truncate=maybe"], "must be true or false"),
            ("wavelength_low=nan", ["pos=ntk", "pos.wavelength_low=nan"], "wavelength_low must be a finite"),
            ("wavelength_low as text", ["pos=ntk", "pos.wavelength_low=abc"], "wavelength_low must be a finite"),
            ("wavelength_low beyond every wavelength", ["pos=ntk", "pos.wavelength_low=1e30"], "changes no frequency"),
            ("wavelength_high without wavelength_low", ["pos=pi", "pos.wavelength_high=64"], "needs wavelength_low"))):
        judge.refused(label, cli("lpes_framework", *SEARCH, *overrides, f"hydra.run.dir={tmp / f'scheme{i}'}"), words)
    # class 8: a gradient start file is a factors file like any other
    from lpes_framework.config import compose_config
    from lpes_framework.model.load import identify

    block = identify(compose_config("config", ["model=tiny"]).model).as_dict()
    for label, path, words in (
            ("gradient start of another model", factors_file(tmp / "start-foreign.json", block | {"head_dim": 128},
                                                             [1.0, 1.2, 1.4, 1.6]), "head_dim=128"),
            ("gradient start beyond the curve bounds", factors_file(tmp / "start-wide.json", block, [1.0, 5.0, 1.0, 1.0]),
             "outside the curve bounds")):
        judge.refused(label, cli("lpes_framework", *TINY, "optimizer=gradient", "curve=free", "pos=pi",
                                 f"optimizer.start={path}", f"hydra.run.dir={tmp / 'start-file'}"), words)
    judge.refused("lm-eval's lpes backend without pretrained", cli(
        "lpes_framework", "lm-eval", "--model", "lpes", "--model_args", "factors=x.json", "--tasks", "hellaswag"),
        "needs --model_args pretrained=")
    # class 7: rows that disagree under one key, in an evaluate folder resumed
    import shutil

    twin_folder = tmp / "disagree"
    shutil.copytree(evaluated, twin_folder, ignore=shutil.ignore_patterns(".lpes.lock"))
    log = twin_folder / "rows.jsonl"
    records = [json.loads(line) for line in log.read_text().splitlines()]
    twin = next(r for r in reversed(records) if r.get("method") == "unpatched")
    twin = json.loads(json.dumps(twin))
    first = next(iter(twin["rows"]))
    twin["rows"][first][0]["logprob"] += 1.0
    log.write_text(log.read_text() + json.dumps(twin) + "\n")
    before = snapshot(twin_folder)
    judge.refused("two disagreeing records under one key", cli(
        "lpes_framework.commands.evaluate", *TINY, f"methods.factors_files=[{reference}/best_factors.json]", "resume=true",
        f"hydra.run.dir={twin_folder}"), "differ on the same samples", twin_folder, before)
    # --plugins lists only what each key takes
    listing = cli("lpes_framework", "--plugins").stdout
    tasks = next(line for line in listing.splitlines() if line.startswith("task ")).split(": ", 1)[1].split(", ")
    refused = [t for t in tasks if cli("lpes_framework", "--cfg", "job", f"task={t}").returncode != 0]
    judge.check("--plugins names every accepted task and no other", not refused and "metrics" not in tasks,
                f"refused: {refused}" if refused else f"{len(tasks)} tasks, each composes")
    tune = ["tune", "model=tiny", "matrix=tiny", "tune.search_columns=[kv-short,kv-long]", "progress=false"]
    for i, (label, overrides, words) in enumerate((
            ("tune: a search column the matrix lacks", ["tune.search_columns=[kv-short,nope]"], "unknown matrix columns"),
            ("tune: an unknown last stage", ["tune.until=deploy"], "tune.until must be one of"),
            ("tune: a test cap below the floor", ["tune.test.cap=2"], "cap must be a whole number >= 8"),
            ("tune: a matrix column of a bad size", ["+matrix.columns.bad={task:kv_retrieval,set:{pairs:0}}"],
             "matrix column 'bad'"),
            ("tune: a repair fraction of 0", ["tune.repair.reset_fraction=0"], "reset_fraction must be in"))):
        judge.refused(label, cli("lpes_framework", *tune, *overrides, f"hydra.run.dir={tmp / f'tune{i}'}"), words)


def crafted_copy(reference: Path, folder: Path, edit=None) -> Path:
    """A copy of the reference run whose run record (the log's first line) ``edit`` changed in place."""
    import shutil

    shutil.copytree(reference, folder, ignore=shutil.ignore_patterns(".lpes.lock"))
    if edit is not None:
        log = folder / "evaluations.jsonl"
        records = [json.loads(line) for line in log.read_text().splitlines()]
        edit(records)
        log.write_text("".join(json.dumps(r) + "\n" for r in records))
    return folder


def received(tmp: Path, judge: Judge, reference: Path, block: dict) -> None:
    """Files received from someone else (issue 38): links out of the folder, records that name models,
    files or remote code, checkpoints and logs that belong to other runs, data whose gold answer is
    ambiguous, values that used to fail late, and commands whose refusal used to change the folder."""
    victim = tmp / "victim.txt"
    victim.write_text("precious\n{cut")

    def untouched() -> bool:
        return victim.read_text() == "precious\n{cut"

    for name in (".lpes.lock", "evaluations.jsonl", "checkpoint.json"):
        folder = crafted_copy(reference, tmp / f"link-{name}")
        (folder / name).unlink(missing_ok=True)
        (folder / name).symlink_to(victim)
        judge.refused(f"{name} a link out of the folder, resume", cli(
            "lpes_framework", *SEARCH, f"hydra.run.dir={folder}", "resume=true"), "symbolic link")
        judge.check(f"{name} link: its target untouched", untouched(), "the linked file kept its bytes", "security")

    def remote_model(records):
        records[0]["spec"]["config"]["model"].update(
            trust_remote_code=True, random=None, embedded={"parts": ["lpes-framework:lpes_framework/__init__.py"],
                                                           "filename": str(tmp / "written.gguf")})
    folder = crafted_copy(reference, tmp / "remote", remote_model)
    judge.refused("a record naming its own model files, attention", cli(
        "lpes_framework.commands.attention", str(folder), "--samples", "1"), "no shipped config group")
    judge.check("no file written where the record said", not (tmp / "written.gguf").exists(), "nothing written",
                "security")

    def reads_file(records):
        records[0]["spec"]["config"]["task"]["path"] = str(victim)
    folder = crafted_copy(reference, tmp / "reads", reads_file)
    judge.refused("a record whose task reads a file, attention", cli(
        "lpes_framework.commands.attention", str(folder)), "its task reads files")

    # a preset whose run record names a model with remote code: re-tested on the model the user names
    marker = tmp / "remote-code-ran"
    code = tmp / "evil-model"
    code.mkdir()
    (code / "config.json").write_text(json.dumps({"model_type": "evil", "auto_map": {"AutoConfig": "evil.EvilConfig"}}))
    (code / "evil.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    record = json.loads((reference / "best_factors.json").read_text())
    record["run"]["config"]["model"] = {"name": "evil", "name_or_path": str(code), "trust_remote_code": True}
    preset = tmp / "evil-preset.json"
    preset.write_text(json.dumps(record))
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "heldout_gain.py"), "--preset", str(preset),
                           "--model", "tiny", "--samples", "1", "--uniform"], capture_output=True, text=True, timeout=900)
    judge.check("a preset naming remote code, heldout_gain", proc.returncode == 0 and not marker.exists(),
                "re-tested on the model named on the command line; the record's code never imported"
                if not marker.exists() else "the record's code ran", "security" if marker.exists() else "silent")

    # what a refused command leaves, and a foreign log's cut last line
    folder = crafted_copy(reference, tmp / "again")
    before = snapshot(folder)
    judge.refused("a second search in a finished folder", cli("lpes_framework", *SEARCH, f"hydra.run.dir={folder}"),
                  "already holds a search", folder, before)
    log = folder / "evaluations.jsonl"
    log.write_bytes(log.read_bytes() + b'{"key": "half')
    before = snapshot(folder)
    judge.refused("resume of a foreign log with a cut last line", cli(
        "lpes_framework", *SEARCH, f"hydra.run.dir={folder}", "resume=true", "seed=1"), "other settings", folder, before)

    # checkpoints and logs tied to their run
    other = tmp / "seed1"
    assert cli("lpes_framework", *SEARCH, "seed=1", f"hydra.run.dir={other}").returncode == 0
    folder = crafted_copy(reference, tmp / "swapped")
    (folder / "checkpoint.json").write_bytes((other / "checkpoint.json").read_bytes())
    judge.refused("a checkpoint copied from a seed=1 run", cli(
        "lpes_framework", *SEARCH, f"hydra.run.dir={folder}", "resume=true"), "does not belong to")
    for label, edit, words in (
            ("a log without its run record", lambda lines: lines[1:], "holds no run record"),
            ("a NaN fitness in the log", lambda lines: [
                line.replace('"fitness": ', '"fitness": null, "was": ', 1) if '"outcome"' in line else line
                for line in lines], "outcome.fitness")):
        folder = crafted_copy(reference, tmp / f"log-{len(words)}")
        (folder / "checkpoint.json").unlink()
        lines = (folder / "evaluations.jsonl").read_text().splitlines(keepends=True)
        (folder / "evaluations.jsonl").write_text("".join(edit(lines)))
        judge.refused(label, cli("lpes_framework", *SEARCH, f"hydra.run.dir={folder}", "resume=true",
                                 "model.random.num_hidden_layers=2" if "record" in label else "seed=0"), words)

    # data whose gold answer would differ from what the prompt shows
    repeated = tmp / "repeated.jsonl"
    repeated.write_text("".join(json.dumps({"ordered_kv_records": [["k", "v1"], ["j", "v2"], ["k", "v3"]] * 2,
                                            "key": "k", "value": "v1"}) + "\n" for _ in range(8)))
    string_answers = tmp / "mdqa.jsonl"
    string_answers.write_text(json.dumps({"question": "q", "answers": "Paris", "ctxs": [{"title": "t", "text": "x"}]}) + "\n")
    bomb = tmp / "bomb.jsonl.gz"  # ~1 MB on disk, past 1 GiB of text once decompressed
    with gzip.open(bomb, "wb", compresslevel=9) as f:
        for _ in range(1025):
            f.write(b" " * (1 << 20))
    for i, (label, overrides, words) in enumerate((
            ("a KV file with a repeated key", [f"task.path={repeated}"], "a key appears twice"),
            ("a .gz data file that expands past 1 GiB", [f"task.path={bomb}"], "bytes of text once decompressed"),
            ("generated keys that could collide", ["task.hex_len=1"], "too few distinct keys"),
            ("MDQA answers given as a string", ["task=mdqa", f"task.path={string_answers}", "task.documents=1",
                                                "task.gold_positions=[0]"], "answers must be a list"),
            ("task.weight=nan", ["task.weight=nan"], "weight must be a finite number"),
            ("task.weight=abc", ["task.weight=abc"], "weight must be a finite number"),
            ("task.max_new_tokens=0", ["task.max_new_tokens=0"], "max_new_tokens must be"),
            ("task.chat_template=maybe", ["task.chat_template=maybe"], "chat_template must be"),
            ("optimizer=random population=0", ["optimizer=random", "optimizer.population=0"], "population must be"),
            ("fitness.normalise=maybe", ["fitness.normalise=maybe"], "normalise must be true or false"),
            ("curve.high=1e10", ["curve.high=1e10"], "curve bounds must lie in"))):
        folder = tmp / f"data{i}"
        # the GA's keys and the KV task's stay out where another optimizer or task is chosen
        base = ["model=tiny", "progress=false"] if "task=mdqa" in overrides else \
            TINY if "optimizer=random" in overrides else SEARCH
        judge.refused(label, cli("lpes_framework", *base, *overrides, f"hydra.run.dir={folder}"), words)

    # held-out rows changed under their key: refused, not taken for the method's scores
    folder = crafted_copy(reference, tmp / "heldout")
    (folder / "best_factors.json").unlink()
    held = [json.loads(line) for line in (folder / "heldout.jsonl").read_text().splitlines()]
    held[0]["rows"] = {task: rows[:-1] for task, rows in held[0]["rows"].items()}
    (folder / "heldout.jsonl").write_text("".join(json.dumps(r) + "\n" for r in held))
    judge.refused("held-out rows changed under their key, resume", cli(
        "lpes_framework", *SEARCH, f"hydra.run.dir={folder}", "resume=true"), "are not the split's samples")
    # a run of draws that is no run (a record is kept after every record_every draws of a method)
    held = [json.loads(line) for line in (reference / "heldout.jsonl").read_text().splitlines()]
    held[0]["draws"] = [-1, True]
    (folder / "heldout.jsonl").write_text("".join(json.dumps(r) + "\n" for r in held))
    judge.refused("held-out draws [-1, true], resume", cli(
        "lpes_framework", *SEARCH, f"hydra.run.dir={folder}", "resume=true"), "draws must be [start, stop)")

    # a held-out record pasted among the fixed search split's kept runs: refused, not taken for a candidate's rows
    (folder / "heldout.jsonl").write_text((reference / "heldout.jsonl").read_text())
    (folder / "search_rows.jsonl").write_text((reference / "heldout.jsonl").read_text().splitlines()[0] + "\n")
    judge.refused("a test-split record in search_rows.jsonl, resume", cli(
        "lpes_framework", *SEARCH, f"hydra.run.dir={folder}", "resume=true"), "only search rows are kept there")

    # another search's folder lent to a new one (reuse=), its held-out rows cut under their key, or its baseline's
    # scores counted over samples the split does not hold: refused before the model loads, not taken
    lent = crafted_copy(reference, tmp / "lent")
    held = [json.loads(line) for line in (reference / "heldout.jsonl").read_text().splitlines()]
    held[0]["rows"] = {task: rows[:-1] for task, rows in held[0]["rows"].items()}
    (lent / "heldout.jsonl").write_text("".join(json.dumps(r) + "\n" for r in held))
    before = snapshot(lent)
    judge.refused("a lent folder's held-out rows cut, reuse", cli(
        "lpes_framework", *SEARCH, f"hydra.run.dir={tmp / 'borrower'}", f"reuse=[{lent}]"), "changed: leave that folder out of reuse",
        kept=lent, before=before)
    lent = crafted_copy(reference, tmp / "lent-counts", lambda records: records[1]["scores"]["kv_retrieval"]["0"].update(
        count=records[1]["scores"]["kv_retrieval"]["0"]["count"] + 1))
    judge.refused("a lent folder's baseline counted over other samples, reuse", cli(
        "lpes_framework", *SEARCH, f"hydra.run.dir={tmp / 'borrower'}", f"reuse=[{lent}]"), "changed: leave that folder out of reuse")

    # competitor options that make the method the unpatched model under its name
    site = tmp / "site"
    for plugin in ("lpes-fim", "lpes-posscale", "lpes-mspoe"):
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--target",
                        str(site), str(ROOT / "plugins" / plugin)], check=True, capture_output=True)
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))}
    for i, (label, options, words) in enumerate((
            ("fim strength=0", "{name:fim,strength:0.0}", "0 < strength <= 1"),
            ("posscale scale=1", "{name:posscale,scale:1.0}", "other than 1"),
            ("mspoe ratios of 1", "{name:mspoe,min_ratio:1.0,max_ratio:1.0}", "leaves every head unscaled"),
            ("mspoe start_layer past the model", "{name:mspoe,start_layer:9}", "leaves no layer to scale"))):
        judge.refused(f"{label}, evaluate", cli("lpes_framework.commands.evaluate", *TINY, "methods.uniform=[]",
                                                f"+methods.schemes.m={options}", f"hydra.run.dir={tmp / f'noop{i}'}",
                                                env=env), words)

    # refused before the folder holds a record, so the corrected command runs there
    for i, (label, wrong, words) in enumerate((("model.device=cuda:7", "model.device=cuda:7", "no such device"),
                                              ("executor.workers=0", "executor=ray", "workers"))):
        folder = tmp / f"late-device{i}"
        extra = ["executor.workers=0"] if "workers" in label else []
        judge.refused(f"{label}, then corrected", cli("lpes_framework", *SEARCH, wrong, *extra,
                                                      f"hydra.run.dir={folder}"), words)
        fixed = cli("lpes_framework", *SEARCH, f"hydra.run.dir={folder}")
        judge.check(f"{label}: the corrected command runs there", fixed.returncode == 0,
                    "ran" if fixed.returncode == 0 else fixed.stderr.strip().splitlines()[-1][:120], "late")


def damaged_cache(tmp: Path, judge: Judge) -> None:
    """A converted model cut short (as by a full disk) is rebuilt, with a line, and the command succeeds."""
    from lpes_framework.config import compose_config
    from lpes_framework.model.settings import ModelSettings
    from lpes_framework.model.cache import converted_folder
    from lpes_framework.model.load import resolve_source

    env = {"LPES_CACHE": str(tmp / "cache")}
    args = ["model=smollm2", "task.pairs=6", "task.gold_positions=[0,5]", "task.samples_per_position=1",
            "methods.uniform=[]", "progress=false", "extra_tasks={}"]
    first = cli("lpes_framework.commands.evaluate", *args, f"hydra.run.dir={tmp / 'c1'}", env=env)  # converts into the cache
    os.environ["LPES_CACHE"] = env["LPES_CACHE"]
    folder = converted_folder(*resolve_source(ModelSettings.of(compose_config("config", ["model=smollm2"]).model)), "model")
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
    for kind, found in judge.found.items():
        for what in found:
            print(f"{kind}: {what}")
    print(f"faults_tried={judge.tried} " + " ".join(f"{kind}={len(found)}" for kind, found in judge.found.items()))


if __name__ == "__main__":
    main()
