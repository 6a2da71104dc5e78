"""``lpes tune``: from a model to a schedule to ship, blind to the test split until the end.

1. diagnose: the unpatched model on every matrix column's validation split; where no column loses the middle
   (``tune.diagnose``: points of exact match or nats of gold log-prob, ends minus middle) it stops there.
2. search: the mixture search of the general preset (band-wise NTK by the gradient, each task's term over its
   unpatched spread, the perplexity guard) on the search split of ``tune.search_columns``.
3. validate: every column's validation split scored for the candidate; while one is harmed (its log-prob
   interval below 0), a repair chosen on validation only (``repair``), up to ``tune.repair.rounds``.
4. test: each column's haystack count from the validation spread (``tune.test``), recorded, then the matrix on
   the test split of ``tune.test_seed``, once (``splits.jsonl`` logs every read).
5. ship: a preset carrying the test matrix as its evidence, and the self-contained export with its model card.

Each stage leaves its folder (``validation/<column>``, ``search``, ``candidates``, ``test/<column>``, ``ship``)
and its result in ``tune.json``; the same command again skips finished stages and resumes the one a kill
stopped (evaluate rows and the search's checkpoint are reused by key).
"""

from __future__ import annotations

import time
from dataclasses import asdict
from pathlib import Path

from omegaconf import DictConfig, open_dict

from ..config import number, plain, prepare
from ..errors import LpesError, whole
from ..judging.pulls import mean_pulls, pull_table
from ..judging.results import paired
from ..judging.sample_size import MIN_DRAWS, check_request, sample_size
from ..io.spec import differences
from ..io.store import JsonLog, RunLock, read_json
from ..matrix import column_rows, column_task, file_cells, labelled, read_columns, verdict
from ..matrix.report import column_cost, markdown, summary_line, table_lines
from ..model.factors_file import factors_record, load_factors
from ..io.atomic import write_json_atomic
from ..model.load import identify
from ..position import build_scheme, check_scheme_for, layer_width
from ..position.bands import resolve_bands
from ..position.curves import build_curve
from ..search.stage import Search
from .access import SplitLog
from .diagnosis import anything_to_fix, middle_loss
from .repair import reset, shrink

STAGES = ("diagnose", "search", "validate", "test", "ship")
VOLATILE = ("threads", "progress", "plots", "resume", "hydra")  # may change between a run and its resume
PULL_STEPS = 5  # the search's last steps whose per-task gradients say which genes pull a harmed task


class Tune:
    def __init__(self, cfg: DictConfig, out: Path):
        """Everything checked from configs alone, before any weights load."""
        prepare(cfg)
        self.cfg, self.out, t = cfg, Path(out), cfg.tune
        self.columns = read_columns(cfg.matrix)
        self.search_columns = read_columns(cfg.matrix, list(t.search_columns))
        self.seed = int(cfg.seed)
        self.test_seed = whole(t.test_seed, "tune.test_seed", 0)
        self.validation_haystacks = whole(t.validation_haystacks, "tune.validation_haystacks", 2)
        self.search_haystacks = whole(t.search_haystacks, "tune.search_haystacks", 2)
        self.rounds = whole(t.repair.rounds, "tune.repair.rounds", 0, 20)
        self.fraction = number(t.repair.reset_fraction, "tune.repair.reset_fraction")
        if not 0 < self.fraction <= 1:
            raise LpesError(f"tune.repair.reset_fraction must be in (0, 1], got {self.fraction}")
        self.until = str(t.until)
        if self.until not in STAGES:
            raise LpesError(f"tune.until must be one of {', '.join(STAGES)}, got {self.until!r}")
        self.points = number(t.diagnose.middle_points, "tune.diagnose.middle_points")
        self.nats = number(t.diagnose.middle_nats, "tune.diagnose.middle_nats")
        check_request(t.test.precision, cap=t.test.cap)
        self.model_id = identify(cfg.model)
        self.scheme_cfg = resolve_bands(plain(cfg.pos), self.model_id)
        check_scheme_for(build_scheme(self.scheme_cfg), self.model_id)
        self.search_cfg = self._search_config()
        self.name = str(t.name or f"{self.model_id.name}-tuned")
        self.splits = SplitLog(self.out)
        self.state_file = self.out / "tune.json"

    # -- state ---------------------------------------------------------------------------------------
    def _settings(self) -> dict:
        settings = {k: v for k, v in plain(self.cfg).items() if k not in VOLATILE}
        settings["tune"] = {k: v for k, v in settings["tune"].items() if k != "until"}  # where to stop is free
        return settings

    def _load_state(self) -> dict:
        if not self.state_file.exists():
            return {"settings": self._settings(), "stages": {}}
        state = read_json(self.state_file)
        stages = state.get("stages") if isinstance(state, dict) else None
        if not isinstance(stages, dict) or "settings" not in state or not all(
                name in STAGES and isinstance(result, dict) for name, result in stages.items()):
            raise LpesError(f"{self.state_file} is not a tune's state (settings, and stages of {', '.join(STAGES)} "
                            "each with its result)")
        differ = differences(state["settings"], self._settings())
        if differ:
            raise LpesError(f"{self.out} holds a tune with other settings ({', '.join(differ[:6])} differ): rerun "
                            "it with its own overrides, or tune into another folder")
        return state

    def run(self) -> dict:
        self.out.mkdir(parents=True, exist_ok=True)
        with RunLock(self.out):
            state = self._load_state()
            write_json_atomic(self.state_file, state)
            for stage in STAGES:
                if stage in state["stages"]:
                    print(f"[tune] {stage}: done before ({self.state_file})")
                else:
                    start = time.perf_counter()
                    result = getattr(self, stage)(state["stages"])
                    state["stages"][stage] = result | {"seconds": round(time.perf_counter() - start, 1)}
                    write_json_atomic(self.state_file, state)
                if state["stages"][stage].get("stop"):
                    print(f"[tune] stopped after {stage}: {state['stages'][stage]['stop']}")
                    break
                if stage == self.until:
                    print(f"[tune] stopped after {stage} (tune.until); the same command with a later tune.until goes on")
                    break
            return state

    # -- shared --------------------------------------------------------------------------------------
    def _rows(self, name: str, split: str, files=(), haystacks: int | None = None, score: bool = True) -> dict:
        seed = self.test_seed if split == "test" else self.seed
        return column_rows(self.cfg, self.columns[name], self.out / split / name, split=split, seed=seed,
                           files=files, haystacks=haystacks, score=score)

    def _each_column(self, stage: str, split: str, haystacks: dict[str, int], files=()) -> dict[str, dict]:
        """Every column's rows on ``split`` (the read logged first), a progress line a column with the time
        left at the rate so far."""
        self.splits.record(stage, split, self.test_seed if split == "test" else self.seed, haystacks,
                           ["unpatched", *map(self._relative, files)])
        out, start = {}, time.perf_counter()
        for i, name in enumerate(haystacks, 1):
            out[name] = self._rows(name, split, files, haystacks[name])
            spent = time.perf_counter() - start
            print(f"[tune] {stage}: {name} scored ({i}/{len(haystacks)}), {spent / 60:.1f} min so far, about "
                  f"{spent / i * (len(haystacks) - i) / 60:.0f} min left", flush=True)
        return out

    def _rates(self) -> dict[str, float | None]:
        """Seconds a sample of each column, as the diagnosis measured them."""
        return {name: column_cost(self.out / "validation" / name, {})[0] for name in self.columns}

    def _estimate(self, haystacks: dict[str, int], methods: int) -> str:
        rates, positions = self._rates(), {n: _positions(c) for n, c in self.columns.items()}
        known = [rates[c] * haystacks[c] * positions[c] * methods for c in haystacks if rates.get(c) and positions[c]]
        return f"about {sum(known) / 3600:.1f} h at the diagnosis's rates" if known else "its rate is measured as it goes"

    # -- stages --------------------------------------------------------------------------------------
    def diagnose(self, done: dict) -> dict:
        counts = {name: self.validation_haystacks for name in self.columns}
        print(f"[tune] diagnose: the unpatched model on {len(counts)} columns x {self.validation_haystacks} validation "
              "haystacks")
        rows = self._each_column("diagnose", "validation", counts)
        losses = [x for x in (middle_loss(n, r["unpatched"][column_task(r["unpatched"])]) for n, r in rows.items())
                  if x is not None]
        for x in losses:
            print(f"[tune]   {x.line()}")
        to_fix = anything_to_fix(losses, self.points, self.nats)
        result = {"middle_loss": [asdict(x) for x in losses], "to_fix": [x.column for x in to_fix]}
        if not to_fix:
            result["stop"] = (f"nothing to fix: no column loses {self.points} points or {self.nats} nats/token in "
                              "the middle at these lengths")
        return result

    def _search_config(self) -> DictConfig:
        """The search's own config: the tune's with the search columns as its mixture (the first as the primary
        task, keyed by its task name; the others by their column names) and the perplexity guard."""
        cfg = self.cfg.copy()
        first, *rest = self.search_columns.values()
        with open_dict(cfg):
            for key in ("matrix", "tune"):
                cfg.pop(key)
            cfg.task = first.task_config() | {"samples_per_position": self.search_haystacks}
            cfg.extra_tasks = {c.name: c.task_config() | {"samples_per_position": self.search_haystacks} for c in rest}
            cfg.extra_tasks["guard"] = plain(self.cfg.tune.guard)
            cfg.fitness.normalise = True
        return cfg

    def _task_keys(self) -> dict[str, str]:
        """Search column -> the key of its task in the search (its gradient's name in the step records)."""
        first = next(iter(self.search_columns))
        return {name: (self.search_cfg.task.name if name == first else name) for name in self.search_columns}

    def search(self, done: dict) -> dict:
        folder = self.out / "search"
        cfg = self.search_cfg.copy()
        steps = int(cfg.optimizer.get("steps", 0))
        print(f"[tune] search: {', '.join(self.search_columns)} and the perplexity guard, {steps} steps on the "
              f"search split ({self._search_estimate(steps)})")
        self.splits.record("search", "search", self.seed, {c: self.search_haystacks for c in self.search_columns},
                           ["search"])
        with open_dict(cfg):
            cfg.resume = JsonLog(folder / "evaluations.jsonl").exists()
        search = Search(cfg, folder)
        try:
            search.setup()
            search.loop()
        finally:
            if search.executor is not None:
                search.executor.close()
            search.lock.release()
        genome, found = search.top_candidates(1)[0]
        path = self._candidate("search", search.curve.factors(genome), genome)
        print(f"[tune] search: best search fitness {found.fitness:.4f}; candidate {path}")
        return {"candidate": self._relative(path), "fitness": found.fitness}

    def _search_estimate(self, steps: int) -> str:
        """The search's forward-equivalents (a backward counted as two forwards) at the diagnosis's rates."""
        rates = self._rates()
        if not all(rates.get(c) for c in self.search_columns):
            return "its rate is measured as it goes"
        contexts = int(self.search_cfg.optimizer.get("contexts_per_step", 1))
        per_context = sum(rates[c] * _positions(self.columns[c]) for c in self.search_columns)
        scorings = steps // max(1, int(self.search_cfg.optimizer.get("eval_every", steps) or steps)) + 1
        seconds = steps * contexts * per_context * 4 + scorings * self.search_haystacks * per_context
        return f"about {seconds / 3600:.1f} h at the diagnosis's rates"

    def _candidate(self, name: str, factors, genome) -> Path:
        """A candidate as a factors file in a folder of its own (its rows are named after the folder), its task
        block the primary search column's."""
        path = self.out / "candidates" / name / "factors.json"
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            first = next(iter(self.search_columns.values()))
            write_json_atomic(path, factors_record(model=self.model_id.as_dict(), scheme=self.scheme_cfg, factors=factors,
                                                   curve=plain(self.search_cfg.curve), genome=genome,
                                                   task=first.task_config()))
        return path

    def _stored(self, done: dict, stage: str, key: str) -> Path:
        """A candidate file a finished stage recorded in tune.json: a file under the tune's folder, or one line
        (a received or edited tune.json must not point a stage at a file elsewhere)."""
        value = (done.get(stage) or {}).get(key) if isinstance(done.get(stage), dict) else None
        path = (self.out / value).resolve() if isinstance(value, str) else None
        if path is None or not path.is_relative_to(self.out.resolve()) or not path.is_file():
            raise LpesError(f"{self.state_file}: the {stage} stage's {key} ({value!r}) is no file of this tune; the "
                            f"file was changed: delete the {stage} stage from it (and the later ones) to redo them")
        return path

    def _counts(self, sizes, source: Path) -> dict[str, int]:
        """Each column's test haystack count as recorded before the test was read."""
        try:
            counts = {name: sizes[name]["draws"] for name in self.columns}
        except (KeyError, TypeError):
            counts = None
        if counts is None or not all(type(v) is int and MIN_DRAWS <= v <= int(self.cfg.tune.test.cap) for v in counts.values()):
            raise LpesError(f"{source}: not a count from {MIN_DRAWS} to tune.test.cap for each column; the file was changed")
        return counts

    def _relative(self, path: Path) -> str:
        return str(Path(path).relative_to(self.out))  # the folder may move between a kill and its resume

    def _pulls(self) -> dict:
        log = JsonLog(self.out / "search" / "evaluations.jsonl")
        steps = [r["task_gradients"] for r in (log.read() if log.exists() else [])
                 if r.get("kind") == "step" and isinstance(r.get("task_gradients"), dict)]
        return mean_pulls(steps[-PULL_STEPS:]) if steps else {}

    def validate(self, done: dict) -> dict:
        path = self._stored(done, "search", "candidate")
        counts = {name: self.validation_haystacks for name in self.columns}
        rounds = []
        for k in range(self.rounds + 1):
            print(f"[tune] validate: {path.parent.name} on {len(counts)} columns ({self._estimate(counts, 1)})")
            rows = self._each_column("validate", "validation", counts, [path])
            cells = {name: file_cells(r, [path])[str(path)] for name, r in rows.items()}
            said = verdict(cells)
            rounds.append({"candidate": self._relative(path), "harmed": said.harmed, "helped": said.helped})
            print(f"[tune] validate: {path.parent.name}: {said.line()}" + (f" (harmed: {', '.join(said.harmed)})" if said.harmed else ""))
            if not said.harmed:
                return {"final": self._relative(path), "rounds": rounds}
            if k < self.rounds:
                path = self._repair(path, said.harmed, k + 1)
        keys = self._task_keys()
        pulls = self._pulls()
        if pulls:
            print("[tune] which task pulls which layers and bands which way (mean of the last steps' gradients):")
            print("\n".join(pull_table(pulls, self.model_id.n_layers, layer_width(build_scheme(self.scheme_cfg),
                                                                                 self.model_id))))
        return {"final": None, "rounds": rounds, "pulls_of": {c: keys.get(c) for c in rounds[-1]["harmed"]},
                "stop": f"every candidate within {self.rounds} repairs harms a validation column "
                        f"({', '.join(rounds[-1]['harmed'])}): nothing is tested or shipped"}

    def _repair(self, path: Path, harmed: list[str], k: int) -> Path:
        """The next candidate: the genes that pull the harmed columns' tasks put back to 1 where the search's
        gradients say which (the free curve, tasks of the mixture), else every factor halfway back to 1."""
        record = load_factors(path)
        keys = self._task_keys()
        pulls = self._pulls()
        tasks = [keys[c] for c in harmed if keys.get(c) in pulls]
        if tasks and self.search_cfg.curve.name == "free":
            genome, chosen = reset(record["genome"], pulls, tasks, self.fraction)
            if chosen:
                curve = build_curve(plain(self.search_cfg.curve), self.model_id.n_layers,
                                    n_bands=layer_width(build_scheme(self.scheme_cfg), self.model_id))
                print(f"[tune] repair {k}: {len(chosen)} genes put back to 1, those that pull {', '.join(tasks)} most")
                return self._candidate(f"repair-{k}", curve.factors(genome), genome)
        print(f"[tune] repair {k}: every factor halfway back to 1 (no gene's gradient says which pulls "
              f"{', '.join(harmed)})")
        return self._candidate(f"repair-{k}", shrink(record["factors"]), None)

    def test(self, done: dict) -> dict:
        if not (done.get("validate") or {}).get("final"):
            raise LpesError("the test split is read once, after a candidate harms no validation column; "
                            "this tune has none")
        final = str(self._stored(done, "validate", "final"))
        sizes_file = self.out / "test" / "haystacks.json"
        if sizes_file.exists():
            sizes = read_json(sizes_file)
        else:
            sizes = self._test_sizes(final)
            sizes_file.parent.mkdir(parents=True, exist_ok=True)
            write_json_atomic(sizes_file, sizes)  # fixed before any test haystack is scored
        counts = self._counts(sizes, sizes_file)
        print(f"[tune] test: the matrix on the test split of seed {self.test_seed}, read once "
              f"({self._estimate(counts, 2)})")
        rows = self._each_column("test", "test", counts, [final])
        cells = {name: file_cells(r, [final])[final] for name, r in rows.items()}
        label = labelled([final])[final]
        lines = table_lines({label: cells}, list(cells))
        text = "\n".join([*lines, "", markdown({label: cells}, list(cells)), "",
                          summary_line(cells, _kv_middle(self.columns))])
        (self.out / "test" / "matrix.txt").write_text(text + "\n")
        print(text)
        said = verdict(cells)
        return {"final": done["validate"]["final"], "haystacks": counts, "harmed": said.harmed, "helped": said.helped,
                "cells": {c: asdict(cell) for c, cell in cells.items()}}

    def _test_sizes(self, final: str) -> dict:
        """Each column's test haystack count: the draws its validation deltas' spread asks for (``tune.test``)."""
        t = self.cfg.tune.test
        sizes = {}
        for name in self.columns:
            # the rows the validation stage scored, read back (no model loads for them)
            rows = self._rows(name, "validation", [final], self.validation_haystacks, score=False)
            method = labelled([final])[final]
            if method not in rows or "unpatched" not in rows:
                raise LpesError(f"{self.out / 'validation' / name}: the validation rows of {method} or of the unpatched "
                                "model are gone; the folder was changed: delete the validate stage from tune.json")
            task = column_task(rows["unpatched"])
            size = sample_size([paired(rows[method][task], rows["unpatched"][task])],
                               logprob_half_width=float(t.precision), cap=int(t.cap))
            sizes[name] = size.as_dict()
            print(f"[tune] test: {name}: {size.draws} haystacks for a {t.precision} nats/token half-width "
                  f"({size.needed} needed, cap {t.cap})")
        return sizes

    def ship(self, done: dict) -> dict:
        from .ship import make_preset

        final = str(self._stored(done, "test", "final"))
        primary = next(iter(self.search_columns))
        folder = self.out / "ship"
        preset = make_preset(final, self.out / "test" / primary, self.name, folder)
        record = load_factors(preset)
        record["metrics"]["matrix"] = {"split": "test", "seed": self.test_seed, "cells": done["test"]["cells"],
                                       "harmed": done["test"]["harmed"], "helped": done["test"]["helped"]}
        record["metrics"]["splits"] = self.splits.entries()
        write_json_atomic(preset, record)
        result = {"preset": str(preset)}
        if self.cfg.tune.export:
            from .ship import export_with

            result["export"] = str(export_with(str(preset), self.cfg.model, folder / "export"))
        print(f"[tune] ship: {preset}" + (f" and {result['export']}" if "export" in result else ""))
        return result


def _positions(column) -> int:
    """Samples a haystack of a column holds (its gold positions or depths; 1 for texts)."""
    settings = column.task_config()
    return len(settings.get("gold_positions") or settings.get("depths") or [1])


def _kv_middle(columns: dict) -> str | None:
    """The column a summary's middle gain is read from: the first key-value column."""
    return next((n for n, c in columns.items() if c.task == "kv_retrieval"), None)


def run_tune(cfg: DictConfig, out: Path) -> dict:
    return Tune(cfg, out).run()

