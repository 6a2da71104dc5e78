"""The main job: search per-layer factors, pick the answer on a validation split, re-test it held out.

    python -m lpes_framework optimizer=ga curve=bezier pos=ntk

Everything is checked (scheme options, curve bounds, tasks, optimizer settings, gene counts) before
the model loads. Candidates are scored by an executor (this process, or Ray workers); only this driver
writes. Outputs land in the Hydra run directory: evaluations.jsonl, checkpoint.json,
best_factors.json, factors.png, progress.png, by_position.png (pareto.png for nsga2) and report.md.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from omegaconf import DictConfig
from tqdm.auto import tqdm

from .cli import plain, prepare, task_specs
from ..report.artifacts import SearchSummary, write_artifacts
from ..evaluation.comparison import Comparison, format_intervals, format_lengths, format_table, uniform_method_name
from ..position.curves import build_curve, uniform_scaling
from ..errors import LpesError
from ..evaluation.results import rows_from_json, rows_to_json, scores_from_json, scores_to_json
from ..execution import GradientJob, Job, build_executor, encode_splits
from ..model.factors import factors_record, write_json_atomic
from ..position.bands import factors_json
from ..evaluation.fitness import FitnessWeights, Outcome, outcome, task_scales
from ..report.loggers import build_logger
from ..registries import EXECUTORS, LOGGERS
from ..model.load import identify
from ..optim import build_optimizer
from ..optim.gradient import start_genes
from ..position import build_scheme, check_scheme_for, is_identity, require_gradient
from ..evaluation.results import by_position
from ..evaluation.selection import candidate_name, select
from ..io.spec import KEY, RunSpec, differences, model_differences
from ..io.store import RunLock, RunStore, cache_key, read_evaluations, read_rows
from ..tasks import SPLITS, TASKS

# Keys that may change between a run and its resume without changing any score.
_RESUME_FREE = {"resume", "logger", "threads", "progress", "validation", "executor"}


def _fingerprint(data: dict, objectives: int) -> dict:
    """What must not change between a run and its resume (applied to the stored fingerprint too, so runs
    written before a key became free still resume)."""
    free = _RESUME_FREE | ({"perplexity_task"} if objectives == 1 else set())  # unused by a scalar optimizer
    data = {k: v for k, v in data.items() if k not in free}
    if not (data.get("fitness") or {}).get("normalise"):  # off, as runs recorded before the option are
        data["fitness"] = {k: v for k, v in (data.get("fitness") or {}).items() if k != "normalise"}
    # a resume may extend the run, and may switch layer checkpointing (memory only: the same gradients)
    data["optimizer"] = {k: v for k, v in data["optimizer"].items() if k not in ("generations", "checkpoint_layers")}
    return data


class Search:
    def __init__(self, cfg: DictConfig, out_dir: Path):
        prepare(cfg)
        self.cfg, self.out = cfg, Path(out_dir)
        self.scheme_cfg = plain(cfg.pos)
        self.scheme = build_scheme(self.scheme_cfg)  # bad options are refused now
        specs = task_specs(cfg)
        self.weights = FitnessWeights(**plain(cfg.fitness))
        self.shape = identify(cfg.model)
        check_scheme_for(self.scheme, self.shape)
        self.spec = RunSpec(command="search", config=plain(cfg), model=self.shape.as_dict())
        self.curve = build_curve(plain(cfg.curve), self.shape.n_layers, bands=self.scheme.n_bands)
        self.optimizer = build_optimizer(plain(cfg.optimizer), self.curve, int(cfg.seed))
        self.gradient = getattr(self.optimizer, "needs_gradient", False)
        self.tasks = {key: TASKS.build(spec) for key, spec in specs.items()}
        if self.optimizer.objectives == 2 and not any(t.metric == "perplexity" for t in self.tasks.values()):
            specs["perplexity"] = {"seed": int(cfg.seed)} | plain(cfg.perplexity_task)
            self.tasks["perplexity"] = TASKS.build(specs["perplexity"])
        self.task_specs = specs
        few = [k for k, t in self.tasks.items() if t.max_ratio is None and t.samples_per_position < 2]
        if self.weights.normalise and few:
            raise LpesError(f"fitness.normalise divides each task's term by its spread over samples: tasks {few} "
                            "need samples_per_position >= 2")
        if self.gradient:
            self._check_gradient_search()
        self.executor_cfg = plain(cfg.executor)
        EXECUTORS.get(self.executor_cfg["name"])  # an unknown executor or logger is refused now
        LOGGERS.get((cfg.get("logger") or {"name": "none"})["name"])
        # everything besides the factors that changes a search-split score: the evaluation cache key
        self.regime = {"model": plain(cfg.model), "scheme": self.scheme_cfg, "split": "search",
                        "scoring": cfg.scoring, "share_prefix": cfg.share_prefix,
                        "tasks": {k: t.settings() for k, t in self.tasks.items()}}
        # prompts are tokenised and measured against the model's window before any weights load
        self.sample_sets = encode_splits(cfg, self.tasks, SPLITS, info=self.shape)
        if self.gradient:
            self._check_minibatch_draws()
        self.store = RunStore(self.out)
        # held from before the "already holds a search" check to the end, so two runs started together
        # in one folder cannot both pass it and interleave their records
        self.lock = RunLock(self.out).acquire()
        self.executor = None  # started by setup()
        self.log: list[dict] = []
        self._restore_or_refuse(cfg.resume)

    def _check_gradient_search(self) -> None:
        """optimizer=gradient: a differentiable scheme and curve, a start in bounds."""
        require_gradient(self.scheme)
        if not self.curve.differentiable():
            raise LpesError(f"curve={self.curve.name} maps genes to factors without a gradient (its shape is not "
                            "written in torch); optimizer=gradient needs a differentiable curve: use optimizer=ga")
        self.optimizer.begin(start_genes(self.optimizer.start, self.curve))

    def _check_minibatch_draws(self) -> None:
        """optimizer=gradient: the last minibatch draw exists in every task (texts and files hold a finite
        number of windows and records), checked now rather than when the search reaches it."""
        opt = self.optimizer
        last = self.fixed_contexts + opt.restarts * opt.steps * opt.contexts_per_step - 1
        tokenizer = self.sample_sets["search"].tokenizer
        for task in self.tasks.values():
            if task.weight != 0:
                task.with_draws([last]).encode("search", tokenizer)

    def _restore_or_refuse(self, resume: bool) -> None:
        if resume and not self.store.has_run():
            raise LpesError(f"resume=true, but {self.out} holds no search to continue (no evaluations.jsonl): "
                            "check hydra.run.dir, or drop resume=true to start one")
        objectives = self.optimizer.objectives
        if not resume:
            if self.store.has_run():
                raise LpesError(f"{self.out} already holds a search; pass resume=true to continue it")
            # the run record is written by setup() once the executor has started, before any score: a
            # command refused before then (an executor option, a device, weights that fail to load) leaves
            # no record, so the corrected command starts afresh in the same folder
            self.cache: dict[str, dict] = {KEY: self.spec.record()}
            self.held: dict[str, dict] = {}
            return
        # every record checked against the schema (a NaN or missing fitness, a field of the wrong type)
        self.cache = {r["key"]: r for r in read_evaluations(self.store.evaluations.path)}
        if KEY not in self.cache:
            raise LpesError(f"{self.store.evaluations.path} holds no run record (its first line), so nothing ties it "
                            "to these settings; a search cannot continue from it")
        recorded = RunSpec.from_json(self.cache[KEY]["spec"], str(self.store.evaluations.path))
        differ = differences(_fingerprint(recorded.config, objectives), _fingerprint(self.spec.config, objectives))
        differ += model_differences(recorded.model, self.spec.model)
        if differ:
            raise LpesError(f"{self.out} holds a search with other settings ({', '.join(differ[:6])}"
                            f"{', ...' if len(differ) > 6 else ''} differ); resume with the original overrides")
        state = self.store.load_checkpoint()  # bound to this log (io.store), or refused
        self.held = self._held_rows()
        # the logs are this run's: a line a kill cut short goes before new ones
        self.store.evaluations.repair()
        self.store.heldout.repair()
        if state is None:
            return  # no finished generation yet: the optimizer replays from the cache
        try:
            self.optimizer.load_state_dict(state["optimizer"])
        except (KeyError, TypeError, ValueError) as exc:  # the optimizer's own part of the state (its RNG, arrays)
            raise LpesError(f"{self.store.checkpoint} does not hold a state this optimizer reads ({type(exc).__name__}: "
                            f"{str(exc)[:80]}); delete it and resume=true replays the search from evaluations.jsonl") from None
        self.log = state["log"]

    def score(self, candidates: list[tuple]) -> list[dict]:
        """Evaluation records on the search split of ``(factors or None, kind, genome or None)``, from the
        cache where done before; the rest go to the executor and are written in this order. A schedule that
        is the unpatched model (all ones under a scheme whose factor 1 is the identity) takes the baseline's
        scores instead of a second identical run."""
        keys = [cache_key(factors, self.regime) for factors, _, _ in candidates]
        todo = {key: c for key, c in zip(keys, candidates) if key not in self.cache}  # distinct keys, in order
        baseline = self.cache.get(cache_key(None, self.regime))
        same = {key: c for key, c in todo.items() if baseline is not None and self._unpatched(c[0], "search")}
        for key, (factors, kind, genome) in same.items():
            self._record(key, factors, kind, genome, baseline["scores"], seconds=0.0, same_as=baseline["key"])
        todo = {key: c for key, c in todo.items() if key not in same}
        jobs = [Job("search", factors, None if factors is None else self.scheme_cfg) for factors, _, _ in todo.values()]
        results = self.executor.run(jobs, desc=candidates[0][1] if candidates else "")
        for (key, (factors, kind, genome)), (rows, seconds) in zip(todo.items(), results):
            scores = scores_to_json({task: by_position(r) for task, r in rows.items()})
            self._record(key, factors, kind, genome, scores, seconds)
        return [self.cache[key] for key in keys]

    def _unpatched(self, factors, split: str) -> bool:
        return self.sample_sets[split].within_trained and is_identity(self.scheme, factors)

    def _record(self, key: str, factors, kind: str, genome, scores: dict, seconds: float, **extra) -> None:
        record = {"key": key, "kind": kind, "generation": self.optimizer.generation,
                  "genome": None if genome is None else [float(g) for g in genome],
                  "factors": None if factors is None else factors_json(factors),
                  "scores": scores, "seconds": round(seconds, 3), **extra}
        if kind == "candidate":
            record["outcome"] = outcome(scores_from_json(scores), self.baseline, self.tasks, self.weights).__dict__
        self.store.evaluations.append(record)
        self.cache[key] = record

    def setup(self, loaded=None) -> None:
        """Start the executor (which loads the model; locally ``loaded`` = (model, tokenizer, info) is
        reused) and score the unpatched baseline."""
        self.executor = build_executor(self.executor_cfg, plain(self.cfg), self.task_specs, SPLITS,
                                       sample_sets=self.sample_sets, loaded=loaded)
        self.info = self.executor.info
        if not self.store.evaluations.exists():  # first before any score, so a resume is checked against it
            self.store.evaluations.append(self.spec.record())
        print(self.info.line())
        self.baseline = scores_from_json(self.score([(None, "baseline", None)])[0]["scores"])

    def loop(self, logger=None) -> None:
        """Generations until the optimizer is done, checkpointing after each."""
        bar = tqdm(total=self.optimizer.generations, initial=self.optimizer.generation, desc="generations",
                   disable=not self.cfg.progress)
        while not self.optimizer.done:
            genomes = self.optimizer.ask()
            records = self.score([(self.curve.factors(g), "candidate", g) for g in genomes])
            outcomes = [Outcome(**r["outcome"]) for r in records]
            self.optimizer.tell(genomes, outcomes)
            best_genome, best = self.optimizer.best()
            finite = [o.fitness for o in outcomes if math.isfinite(o.fitness)]
            entry = {"generation": self.optimizer.generation, "evaluated": len(genomes),
                     "best_fitness": best.fitness, "mean_fitness": float(np.mean(finite)) if finite else math.nan}
            self.log.append(entry)
            self._checkpoint()
            if logger is not None:
                logger.log_generation(entry["generation"], entry, self.curve.factors(best_genome))
            bar.update(1)
            bar.set_postfix(best=f"{best.fitness:.4f}")
        bar.close()

    @property
    def fixed_contexts(self) -> int:
        """Draws of the fixed search split (every candidate's scoring); gradient minibatches start after."""
        return max(t.samples_per_position for t in self.tasks.values())

    def optimize(self, logger=None) -> None:
        """The search proper: gradient steps or ask/tell generations, whichever the optimizer takes."""
        (self.descend if self.gradient else self.loop)(logger)

    def _checkpoint(self) -> None:
        # the settings it belongs to are the log's first record, checked on resume before this is read
        self.store.save_checkpoint({"log": self.log, "optimizer": self.optimizer.state_dict()})

    def descend(self, logger=None) -> None:
        """optimizer=gradient: Adam steps on fresh minibatches, the genes scored on the fixed search split
        every ``eval_every`` steps (see ``optim.gradient``), checkpointing after every step. A step already
        in the evaluation log (a kill between its record and the checkpoint) is taken from there."""
        opt = self.optimizer
        settings = {"curve": plain(self.cfg.curve), "scheme": self.scheme_cfg, "weights": plain(self.cfg.fitness),
                    "checkpoint_layers": opt.checkpoint_layers,
                    # a mixture's task scales come from the fixed search split, never from a minibatch
                    "task_scales": task_scales(self.baseline, self.tasks, self.weights)}
        bar = tqdm(total=opt.generations, initial=opt.generation, desc="steps", disable=not self.cfg.progress)
        self.scored = self.log[-1]["mean_fitness"] if self.log else math.nan  # the latest fixed-split fitness
        while not opt.done:
            genes = opt.genes()
            scored_now = opt.scoring_due()
            if scored_now:
                record = self.score([(self.curve.factors(genes), "candidate", genes)])[0]
                opt.observe(genes, Outcome(**record["outcome"]))
                self.scored = record["outcome"]["fitness"]
            if opt.restart_over:
                opt.next_restart()
                self._checkpoint()
                continue
            draws = opt.next_draws(self.fixed_contexts)
            key = cache_key(genes, {**self.regime, "step": [opt.restart, opt.step], "draws": draws})
            if key not in self.cache:
                job = GradientJob(split="search", draws=tuple(draws), genes=tuple(float(g) for g in genes),
                                  per_position=len(draws), **settings)
                result = self.executor.gradient(job)
                self._record_step(key, genes, draws, result)
            step = self.cache[key]
            opt.update(step["gradient"])
            _, best = opt.best()
            entry = {"generation": opt.generation, "evaluated": int(scored_now), "best_fitness": best.fitness,
                     "mean_fitness": self.scored, "objective": step["objective"]}
            self.log.append(entry)
            self._checkpoint()
            if logger is not None:
                logger.log_generation(entry["generation"], entry, self.curve.factors(opt.genes()))
            bar.update(1)
            bar.set_postfix(objective=f"{step['objective']:+.4f}", best=f"{best.fitness:.4f}")
        bar.close()

    def _record_step(self, key: str, genes, draws, result) -> None:
        record = {"key": key, "kind": "step", "generation": self.optimizer.generation,
                  "restart": self.optimizer.restart, "genome": [float(g) for g in genes],
                  "factors": factors_json(self.curve.factors(genes)), "draws": draws,
                  "objective": result.value, "gradient": result.gradient,
                  "seconds": round(sum(result.seconds.values()), 3),
                  "seconds_parts": {k: round(v, 3) for k, v in result.seconds.items()}}
        self.store.evaluations.append(record)
        self.cache[key] = record

    def run(self) -> dict:
        logger = build_logger(self.cfg.get("logger"), plain(self.cfg), self.out)
        try:
            self.setup()
            self.optimize(logger)
            summary = self.finish()
            logger.log_summary({"best_fitness": summary["search"]["fitness"]})
        finally:
            logger.finish()
            if self.executor is not None:
                self.executor.close()
            self.lock.release()
        return summary

    def finish(self) -> dict:
        """Pick the answer on fresh data (``selection.select`` over the top candidates re-scored on the
        validation split), then measure it on the held-out test split against the unpatched model and the
        best uniform scaling, with paired bootstrap intervals over contexts, and write the result."""
        top = self.top_candidates(int(self.cfg.validation.top_k))
        uniform = self.uniform_baseline(self.curve.factors(top[0][0]))
        uniform_name = uniform_method_name(self.scheme_cfg["name"], uniform)
        uniform_job = ([uniform] * self.shape.n_layers, self.scheme_cfg)
        candidates = {candidate_name(i): (self.curve.factors(g), self.scheme_cfg) for i, (g, _) in enumerate(top)}
        resamples, seed = int(self.cfg.validation.bootstrap_resamples), int(self.cfg.seed)
        choice = select(top, self._validate(candidates, {uniform_name: uniform_job}), self.tasks, self.weights,
                        resamples=resamples, seed=seed)
        factors = candidates[choice.name][0]
        test = self._compare("test", {"unpatched": (None, None), uniform_name: uniform_job,
                                      "found": (factors, self.scheme_cfg)})
        test.add_intervals("found", "unpatched", resamples=resamples, seed=seed)
        test.add_intervals("found", uniform_name, resamples=resamples, seed=seed)
        return self._write_result(choice, factors, test, uniform_name, uniform, top)

    def _validate(self, candidates: dict, others: dict):
        """The candidates, the unpatched model and ``others`` scored on the validation split; the identity
        among the candidates (often the case when little beats it) is not re-run."""
        methods = {"unpatched": (None, None), **candidates, **others}
        same = {n for n, (f, _) in candidates.items() if self._unpatched(f, "validation")}
        validation = self._compare("validation", {n: m for n, m in methods.items() if n not in same})
        validation.rows = {n: validation.rows["unpatched" if n in same else n] for n in methods}
        return validation

    def _held_rows(self) -> dict[str, dict]:
        """The validation and test rows a killed run had finished (``heldout.jsonl``), by key, each checked
        now (before any weights load) to cover exactly its split's samples."""
        if not self.store.heldout.exists():
            return {}
        samples = {split: sorted((task, e.sample.draw, str(e.sample.position))
                                 for task, items in self.sample_sets[split].encoded.items() for e in items)
                   for split in ("validation", "test")}
        held = {}
        for record in read_rows(self.store.heldout.path):
            split = record.get("split")
            if split not in samples:
                raise LpesError(f"{self.store.heldout.path}: a record of split {split!r}; only validation and test "
                                "rows are kept there")
            rows = sorted((task, r.get("draw", 0), str(r["position"])) for task, per in record["rows"].items() for r in per)
            if rows != samples[split]:
                raise LpesError(f"{self.store.heldout.path}: the rows of {record['method']} ({split}) are not the "
                                "split's samples; the file was changed: delete it and resume=true scores them again")
            held[record["key"]] = record
        return held

    def _compare(self, split: str, methods: dict) -> Comparison:
        """``methods`` scored on ``split``, each distinct schedule once: from ``heldout.jsonl`` where a run killed
        during the held-out scoring had finished it, the rest by the executor, each written there as soon as
        it is done."""
        keys = {name: cache_key(factors, {**self.regime, "split": split, "scheme": scheme})
                for name, (factors, scheme) in methods.items()}
        scored = {key: rows_from_json(self.held[key]["rows"]) for key in keys.values() if key in self.held}
        todo: dict[str, str] = {}  # each unscored schedule under the first name it has
        for name, key in keys.items():
            if key not in scored:
                todo.setdefault(key, name)
        jobs = [(split, *methods[name]) for name in todo.values()]
        for (key, name), (rows, _) in zip(todo.items(), self.executor.run(jobs, desc=split)):
            self.store.heldout.append({"key": key, "method": name, "split": split, "rows": rows_to_json(rows)})
            scored[key] = rows
        return Comparison({name: scored[key] for name, key in keys.items()})

    def _write_result(self, choice, factors, test, uniform_name: str, uniform: float, top: list) -> dict:
        """best_factors.json (with the run record), pareto.json, report.md and plots; the printed summary."""
        methods = test.scores
        test_outcomes = {name: outcome(s, methods["unpatched"], self.tasks, self.weights).__dict__
                         for name, s in methods.items()}
        metrics = {"search": choice.search.__dict__,
                   "validation": {"chosen": choice.name, "fitness": choice.fitness, "intervals": choice.intervals,
                                  "genomes": {candidate_name(i): [float(x) for x in g] for i, (g, _) in enumerate(top)}},
                   "test": {n: {"outcome": test_outcomes[n], "scores": scores_to_json(s)} for n, s in methods.items()},
                   "intervals": test.as_json()["intervals"]}
        record = factors_record(model=self.info.as_dict(), scheme=self.scheme_cfg, factors=factors,
                                curve=self.curve.settings(), genome=choice.genome, metrics=metrics,
                                task=self.task_specs[self.cfg.task.name])
        write_json_atomic(self.out / "best_factors.json", record | {"run": self.spec.as_json()})
        front = self.optimizer.front()
        if front:
            write_json_atomic(self.out / "pareto.json", [{"genome": g, **o.__dict__} for g, o in front])
        table = "\n".join(filter(None, [format_table(methods), format_lengths(test), format_intervals(test)]))
        write_artifacts(self.out, SearchSummary(
            model=self.info.name, settings={"scheme": self.scheme_cfg, "curve": self.curve.settings(),
                                            "optimizer": plain(self.cfg.optimizer)},
            log=self.log, factors=list(factors), uniform_name=uniform_name, uniform=uniform, best=choice.search,
            val_fitness=choice.fitness, val_intervals=choice.intervals, chosen=choice.name, test=test,
            test_outcomes=test_outcomes, table=table,
            history=[o for _, o in self.optimizer.history.values()], front=[o for _, o in front]))
        print(table)
        low, high = choice.intervals[choice.name]
        print(f"best search fitness {choice.search.fitness:.4f}; validation chose {choice.name} "
              f"({choice.fitness[choice.name]:+.4f}, 95% interval [{low:+.4f}, {high:+.4f}]); "
              f"test fitness found {test_outcomes['found']['fitness']:.4f} vs uniform "
              f"{test_outcomes[uniform_name]['fitness']:.4f}; wrote {self.out}")
        return {"search": choice.search.__dict__, "test": test_outcomes, "factors": factors.tolist(),
                "chosen": choice.name}

    def top_candidates(self, k: int) -> list:
        """The ``k`` best distinct genomes of the search, best first: (genome, outcome)."""
        ranked = sorted(self.optimizer.history.values(), key=lambda item: item[1].fitness, reverse=True)
        return [(np.asarray(g), o) for g, o in ranked[:k]]

    def uniform_baseline(self, factors) -> float:
        """The uniform factor to test next to the found ones: the best non-identity uniform scaling the
        search evaluated (tuned on the same search data), else the mean of the found factors."""
        uniform = [(o.fitness, g[0]) for g, o in self.optimizer.history.values() if uniform_scaling(g)]
        return round(float(max(uniform)[1] if uniform else np.mean(factors)), 4)


def run_search(cfg: DictConfig, out_dir: Path) -> dict:
    return Search(cfg, out_dir).run()
