"""The main job as a library: search per-layer factors, pick the answer on a validation split, re-test it
held out.

Everything is checked (scheme options, curve bounds, tasks, optimizer settings, gene counts) before
the model loads. Every optimizer runs in one loop (``optim.base``): ask, evaluate, tell, checkpoint.
Candidates are scored by an executor (this process, or Ray workers); only this driver writes. Outputs
land in the run folder: evaluations.jsonl, checkpoint.json, search_rows.jsonl, minibatch_rows.jsonl, heldout.jsonl, best_factors.json,
factors.png, progress.png, by_position.png (pareto.png for nsga2) and report.md.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
from omegaconf import DictConfig
from tqdm.auto import tqdm

from ..config import plain, prepare, scoring_regime, task_configs
from ..errors import LpesError
from ..judging.comparison import uniform_method_name
from ..judging.fitness import FitnessWeights, Outcome, outcome, task_scales
from ..judging.results import by_position, scores_from_json, scores_to_json
from ..judging.selection import candidate_name, select
from ..execution import GradientJob, build_executor, encode_splits
from ..io.spec import KEY, RunSpec, file_digests
from ..io.store import RunLock, RunStore, cache_key
from ..model.factors_file import load_checked
from ..model.load import identify
from ..optim import build_optimizer
from ..optim.base import Gradient, GradientRequest
from ..position import build_scheme, check_scheme_for, is_identity, layer_width, require_gradient
from ..position.bands import factors_json, resolve_bands
from ..position.curves import build_curve, uniform_scaling
from ..registry import EXECUTORS, LOGGERS
from ..report.loggers import build_logger
from ..tasks import SPLITS, TASKS
from .heldout import HeldOut, SplitRows
from .minibatch import MinibatchRows
from .outputs import write_result
from .resume import restore
from .reuse import fixed_split_scores, other_runs


class Search:
    def __init__(self, cfg: DictConfig, out_dir: Path):
        prepare(cfg)
        self.cfg, self.out = cfg, Path(out_dir)
        self.model_id = identify(cfg.model)  # the model's identity, from its config alone
        self.scheme_cfg = resolve_bands(plain(cfg.pos), self.model_id)
        self.scheme = build_scheme(self.scheme_cfg)  # bad options are refused now
        specs = task_configs(cfg)
        self.weights = FitnessWeights(**plain(cfg.fitness))
        check_scheme_for(self.scheme, self.model_id)
        config = plain(cfg)
        self.spec = RunSpec(command="search", config=config, model=self.model_id.as_dict(), files=file_digests(config))
        self.curve = build_curve(plain(cfg.curve), self.model_id.n_layers, n_bands=layer_width(self.scheme, self.model_id))
        self.optimizer_cfg = plain(cfg.optimizer)
        self.optimizer = build_optimizer(self.optimizer_cfg, self.curve, int(cfg.seed))
        self.gradient = getattr(self.optimizer, "needs_gradient", False)
        start = self.optimizer_cfg.get("start")
        if isinstance(start, str):  # a start file searched on another model is refused like any factors file
            load_checked(start, self.model_id)
        if self.gradient:
            self._check_differentiable()
        self.tasks = {key: TASKS.build(spec) for key, spec in specs.items()}
        weightless = [key for key, task in self.tasks.items() if not task.weight > 0]
        if weightless:  # a zero weight drops a task from the fitness, a negative one searches against it
            raise LpesError(f"tasks {weightless} weigh {[self.tasks[k].weight for k in weightless]}: a searched "
                            "task's weight must be positive (score a task beside a search with lpes evaluate)")
        if self.optimizer.objectives == 2 and not any(t.metric == "perplexity" for t in self.tasks.values()):
            specs["perplexity"] = {"seed": int(cfg.seed)} | plain(cfg.perplexity_task)
            self.tasks["perplexity"] = TASKS.build(specs["perplexity"])
        self.task_configs = specs
        few = [k for k, t in self.tasks.items() if t.max_ratio is None and t.samples_per_position < 2]
        if self.weights.normalise and few:
            raise LpesError(f"fitness.normalise divides each task's term by its spread over samples: tasks {few} "
                            "need samples_per_position >= 2")
        self.executor_cfg = plain(cfg.executor)
        EXECUTORS.get(self.executor_cfg["name"])  # an unknown executor or logger is refused now
        LOGGERS.get((cfg.get("logger") or {"name": "none"})["name"])
        # everything besides the factors that changes a search-split score: the evaluation cache key
        self.regime = {**scoring_regime(cfg, self.tasks, "search"), "scheme": self.scheme_cfg}
        # prompts are tokenised and measured against the model's window before any weights load
        self.sample_sets = encode_splits(cfg, self.tasks, SPLITS, info=self.model_id)
        if self.gradient:
            self._check_minibatch_draws()
        self.store = RunStore(self.out)
        # held from before the "already holds a search" check to the end, so two runs started together
        # in one folder cannot both pass it and interleave their records
        self.lock = RunLock(self.out).acquire()
        self.heldout = HeldOut(self.store, self.sample_sets, self.regime, self._unpatched, every=int(cfg.record_every))
        self.fixed = SplitRows(self.store.search_rows, self.sample_sets, ("search",), int(cfg.record_every), whole=False)
        self.minibatches = MinibatchRows(
            self.store.minibatch_rows, cache_key(None, {**self.regime, "scheme": None, "rows": "minibatch"}),
            lambda draws: self.sample_sets["search"].with_draws(draws, self.fixed_contexts,
                                                                keep=lambda task: task.weight != 0))
        self.executor = None  # started by setup()
        self.log: list[dict] = []
        try:
            self._restore_or_refuse(cfg.resume)
            self._borrow(config.get("reuse"))
        except BaseException:  # a refused resume leaves the folder free (a process that lives on, a notebook)
            self.lock.release()
            raise

    def _check_differentiable(self) -> None:
        """An optimizer that asks for gradients: a differentiable scheme and curve."""
        require_gradient(self.scheme)
        if not self.curve.differentiable():
            raise LpesError(f"curve={self.curve.name} maps genes to factors without a gradient (its shape is not "
                            "written in torch); optimizer=gradient needs a differentiable curve: use optimizer=ga")

    @property
    def fixed_contexts(self) -> int:
        """Draws of the fixed search split (every candidate's scoring); gradient minibatches start after."""
        return max(t.samples_per_position for t in self.tasks.values())

    def _check_minibatch_draws(self) -> None:
        """The last minibatch draw exists in every task (texts and files hold a finite number of windows and
        records), checked now rather than when the search reaches it."""
        last = self.fixed_contexts + self.optimizer.minibatch_draws() - 1
        tokenizer = self.sample_sets["search"].tokenizer
        for task in self.tasks.values():
            if task.weight != 0:
                task.with_draws(task.step_draws([last], self.fixed_contexts)[-1:]).encode("search", tokenizer)

    def _restore_or_refuse(self, resume: bool) -> None:
        if resume and not self.store.has_run():
            raise LpesError(f"resume=true, but {self.out} holds no search to continue (no evaluations.jsonl): "
                            "check hydra.run.dir, or drop resume=true to start one")
        if not resume:
            if self.store.has_run():
                raise LpesError(f"{self.out} already holds a search; pass resume=true to continue it")
            # the run record is written by setup() once the executor has started, before any score: a
            # command refused before then (an executor option, a device, weights that fail to load) leaves
            # no record, so the corrected command starts afresh in the same folder
            self.cache: dict[str, dict] = {KEY: self.spec.record()}
            return
        self.cache, state = restore(self.store, self.spec, self.optimizer.objectives)
        self.heldout.load()
        self.fixed.load()
        self.minibatches.load()
        # the logs are this run's: a line a kill cut short goes before new ones
        for log in (self.store.evaluations, self.store.heldout, self.store.search_rows, self.store.minibatch_rows):
            log.repair()
        if state is None:
            return  # no finished generation yet: the optimizer replays from the cache
        try:
            self.optimizer.load_state_dict(state["optimizer"])
        except (KeyError, TypeError, ValueError) as exc:  # the optimizer's own part of the state (its RNG, arrays)
            raise LpesError(f"{self.store.checkpoint} does not hold a state this optimizer reads ({type(exc).__name__}: "
                            f"{str(exc)[:80]}); delete it and resume=true replays the search from evaluations.jsonl") from None
        self.log = state["log"]

    def _borrow(self, folders) -> None:
        """The scores other searches (``reuse``) made under this run's keys, read and checked now, before any
        weights load: taken where this run would score the same schedule on the same split."""
        others = other_runs(folders, self.out)
        expected = {task: dict(Counter(str(e.sample.position) for e in items))
                    for task, items in self.sample_sets["search"].encoded.items()}
        self.borrowed = fixed_split_scores(others, self.spec, expected)
        self.heldout.borrow(others)
        if self.gradient:
            self.minibatches.borrow([store.minibatch_rows for store in others])

    def setup(self, loaded=None) -> None:
        """Start the executor (which loads the model; locally ``loaded`` = (model, tokenizer, info) is
        reused) and score the unpatched baseline."""
        self.executor = build_executor(self.executor_cfg, plain(self.cfg), self.task_configs, SPLITS,
                                       sample_sets=self.sample_sets, loaded=loaded)
        self.info = self.executor.info
        if not self.store.evaluations.exists():  # first before any score, so a resume is checked against it
            self.store.evaluations.append(self.spec.record())
        print(self.info.line())
        self.baseline = scores_from_json(self.score([(None, "baseline", None)])[0]["scores"])
        # what every gradient job shares; a mixture's task scales come from the fixed search split, never
        # from a minibatch
        self.gradient_settings = {"curve": plain(self.cfg.curve), "scheme": self.scheme_cfg,
                                  "weights": plain(self.cfg.fitness),
                                  "checkpoint_layers": getattr(self.optimizer, "checkpoint_layers", False),
                                  "task_scales": task_scales(self.baseline, self.tasks, self.weights)}

    def score(self, candidates: list[tuple]) -> list[dict]:
        """Evaluation records on the search split of ``(factors or None, kind, genome or None)``, from the
        cache where done before, or from another search's log (``reuse``); the rest go to the executor and are
        written in this order (their runs of draws kept in search_rows.jsonl as they finish, see ``SplitRows``).
        A schedule that is the unpatched model (all ones under a scheme whose factor 1 is the identity) takes the baseline's
        scores instead of a second identical run."""
        keys = [cache_key(factors, self.regime) for factors, _, _ in candidates]
        todo = {key: c for key, c in zip(keys, candidates) if key not in self.cache}  # distinct keys, in order
        baseline = self.cache.get(cache_key(None, self.regime))
        same = {key: c for key, c in todo.items() if baseline is not None and self._unpatched(c[0], "search")}
        for key, (factors, kind, genome) in same.items():
            self._record(key, factors, kind, genome, baseline["scores"], seconds=0.0, same_as=baseline["key"])
        todo = {key: c for key, c in todo.items() if key not in same}
        for key in [key for key in todo if key in self.borrowed]:
            factors, kind, genome = todo.pop(key)
            lent = self.borrowed[key]
            self._record(key, factors, kind, genome, lent["scores"], seconds=0.0, reused_from=lent["reused_from"])
        schedules = {key: (kind, factors, None if factors is None else self.scheme_cfg)
                     for key, (factors, kind, _) in todo.items()}
        desc = candidates[0][1] if candidates else ""
        for key, rows, seconds in self.fixed.scored(self.executor, "search", schedules, desc=desc):
            factors, kind, genome = todo[key]
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

    def evaluate(self, asked: list) -> list:
        """The answers to an optimizer's requests, in order: genomes scored on the fixed search split (one
        batch, so Ray workers take them side by side), gradient requests one by one."""
        genomes = [a for a in asked if not isinstance(a, GradientRequest)]
        records = iter(self.score([(self.curve.factors(g), "candidate", g) for g in genomes]))
        return [self._gradient(a) if isinstance(a, GradientRequest) else Outcome(**next(records)["outcome"])
                for a in asked]

    def _gradient(self, request: GradientRequest) -> Gradient:
        """A step's value and gradient, from the evaluation log where a killed run had computed it."""
        draws = [self.fixed_contexts + d for d in request.draws]
        genes = request.genome
        key = cache_key(genes, {**self.regime, "step": list(request.step), "draws": draws})
        if key not in self.cache:
            job = GradientJob(split="search", draws=tuple(draws), genes=tuple(float(g) for g in genes),
                              per_position=len(draws), first=self.fixed_contexts,
                              baseline=self.minibatches.get(draws), **self.gradient_settings)
            result = self.executor.gradient(job)
            self.minibatches.keep(draws, result.baseline)
            record = {"key": key, "kind": "step", "generation": self.optimizer.generation,
                      "restart": request.step[0], "genome": [float(g) for g in genes],
                      "factors": factors_json(self.curve.factors(genes)), "draws": draws,
                      "objective": result.value, "gradient": result.gradient, "task_gradients": result.by_task,
                      "seconds": round(sum(result.seconds.values()), 3),
                      "seconds_parts": {k: round(v, 3) for k, v in result.seconds.items()}}
            self.store.evaluations.append(record)
            self.cache[key] = record
        step = self.cache[key]
        return Gradient(step["objective"], step["gradient"])

    def loop(self, logger=None) -> None:
        """Ask, evaluate, tell until the optimizer is done, checkpointing after each tell; a progress entry
        whenever its generation (a GA generation, an Adam step) moved on."""
        opt = self.optimizer
        desc = "steps" if self.gradient else "generations"
        # a bar on a terminal; in a log (not a terminal) a line a step instead of a line a bar frame
        bar = tqdm(total=opt.generations, initial=opt.generation, desc=desc, disable=None if self.cfg.progress else True)
        lines = self.cfg.progress and bar.disable
        while not opt.done:
            asked = opt.ask()
            answers = self.evaluate(asked)
            before = opt.generation
            opt.tell(asked, answers)
            moved = opt.generation > before  # a gradient step's fixed-split scoring is no step of its own
            if moved:
                entry = opt.progress(answers)
                self.log.append(entry)
            self._checkpoint()  # after every tell: a resume asks exactly what comes next
            if moved:
                best_genome, _ = opt.best()
                if logger is not None:
                    logger.log_generation(opt.generation, entry, self.curve.factors(best_genome))
                bar.update(opt.generation - before)
                shown = {k: f"{v:+.4f}" for k, v in entry.items() if k in ("objective", "best_fitness")}
                bar.set_postfix(shown)
                if lines:
                    print(f"{desc} {opt.generation}/{opt.generations}: " + ", ".join(f"{k} {v}" for k, v in shown.items()),
                          flush=True)
        bar.close()

    def _checkpoint(self) -> None:
        # the settings it belongs to are the log's first record, checked on resume before this is read
        self.store.save_checkpoint({"log": self.log, "optimizer": self.optimizer.state_dict()})

    def run(self) -> dict:
        logger = build_logger(self.cfg.get("logger"), plain(self.cfg), self.out)
        try:
            self.setup()
            self.loop(logger)
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
        uniform_job = ([uniform] * self.model_id.n_layers, self.scheme_cfg)
        candidates = {candidate_name(i): (self.curve.factors(g), self.scheme_cfg) for i, (g, _) in enumerate(top)}
        resamples, seed = int(self.cfg.validation.bootstrap_resamples), int(self.cfg.seed)
        validation = self.heldout.validate(self.executor, candidates, {uniform_name: uniform_job})
        choice = select(top, validation, self.tasks, self.weights, resamples=resamples, seed=seed)
        factors = candidates[choice.name][0]
        test = self.heldout.compare(self.executor, "test", {"unpatched": (None, None), uniform_name: uniform_job,
                                                            "found": (factors, self.scheme_cfg)})
        test.add_intervals("found", "unpatched", resamples=resamples, seed=seed)
        test.add_intervals("found", uniform_name, resamples=resamples, seed=seed)
        return write_result(self, choice, factors, test, uniform_name, uniform, top)

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
