"""The best entry of a finished run as a factors file: a search's best candidate (its evaluation log), an
evaluate folder's best method by the search's fitness, or a factors file redrawn in a few-gene curve
(``lpes factors`` is the command; its help says when each is wanted)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from ..errors import LpesError
from ..judging.fitness import FitnessWeights, task_score
from ..judging.results import scores_from_json
from ..io.spec import read_spec
from ..io.store import read_evaluations, read_results
from ..model.factors_file import factors_record, load_factors
from ..config import plain, task_configs


def _records(run: Path, kind: str) -> list[dict]:
    return [r for r in read_evaluations(run / "evaluations.jsonl") if r["kind"] == kind]


def best_candidate(run: Path, uniform: bool = False) -> dict:
    """The factors record of the search run's best candidate by its recorded search fitness (``uniform``:
    of those with one factor other than 1 in every layer: the uniform baseline a search tests its answer
    against)."""
    from ..position import build_scheme, layer_width
    from ..position.bands import resolve_bands
    from ..position.curves import build_curve, uniform_scaling

    spec = read_spec(run)
    model = spec.model
    if not model and (run / "best_factors.json").is_file():  # written before the run record: the run's own file
        model = load_factors(run / "best_factors.json")["model"]  # checked like any received factors file
    if not model:
        raise LpesError(f"{run} was written before the run record and holds no best_factors.json: its model is "
                        "unknown, so no factors file can be made from it")
    layers = model.get("n_layers")
    if isinstance(layers, bool) or not isinstance(layers, int) or layers < 1:  # a flipped byte renames or retypes it
        raise LpesError(f"{run}: its run record's model block gives no layer count (n_layers: {layers!r}): damaged")
    candidates = [r for r in _records(run, "candidate") if not uniform or uniform_scaling(r["genome"])]
    if not candidates:
        raise LpesError(f"{run / 'evaluations.jsonl'} holds no scored {'uniform ' if uniform else ''}candidate")
    best = max(candidates, key=lambda r: r["outcome"]["fitness"])
    cfg = spec.cfg()
    info = SimpleNamespace(**model)
    scheme_cfg = resolve_bands(plain(cfg.pos), info)
    curve = build_curve(plain(cfg.curve), layers, n_bands=layer_width(build_scheme(scheme_cfg), info))
    return factors_record(model=model, scheme=scheme_cfg, factors=best["factors"], curve=curve.settings(),
                          genome=best["genome"], task=task_configs(cfg)[cfg.task.name],
                          metrics={"search": best["outcome"]}) | {"run": spec.as_json()}


def fitted(path: Path, curve_cfg: dict) -> dict:
    """The factors file at ``path`` redrawn by the curve ``curve_cfg`` (bounds default to the file's)."""
    import numpy as np

    from ..model.factors_file import load_factors
    from ..position.curves import build_curve

    record = load_factors(path)
    bounds = {k: record["curve"][k] for k in ("low", "high") if record.get("curve") and k in record["curve"]}
    width = len(np.atleast_1d(record["factors"][0]))  # the file's own numbers per layer
    curve = build_curve(bounds | curve_cfg, len(record["factors"]), n_bands=width)
    genome = curve.fit(record["factors"])
    factors = curve.factors(genome)
    change = factors - np.asarray(record["factors"])
    fit = {"from": str(path), "max_abs_change": float(np.abs(change).max()),
           "rms_change": float(np.sqrt((change ** 2).mean()))}
    return factors_record(model=record["model"], scheme=record["scheme"], factors=factors.tolist(),
                          curve=curve.settings(), genome=[float(g) for g in genome], task=record.get("task"),
                          metrics={"fit": fit}) | ({"run": record["run"]} if "run" in record else {})


def rebanded(path: Path, bands) -> dict:
    """The factors file at ``path`` on finer wavelength bands (a list, or ``per_frequency``: one per rotary
    frequency of its model), the same schedule (``bands.refine_bands``): a finer search's start."""
    from ..model.factors_file import load_factors
    from ..position.bands import check_bands, default_inv_freq, factor_table, refine_bands, resolve_bands

    record = load_factors(path)
    info = SimpleNamespace(**({"name": str(path)} | record["model"]))
    scheme = resolve_bands(record["scheme"] | {"bands": bands}, info)
    inv_freq = default_inv_freq(info)
    if inv_freq is None:
        raise LpesError(f"{path}: its model block gives no rope_theta and head size to place the bands on")
    table = refine_bands(factor_table(record["factors"]), inv_freq, record["scheme"].get("bands"),
                         check_bands(scheme["bands"]))
    return factors_record(model=record["model"], scheme=scheme, factors=table.tolist(), task=record.get("task"),
                          metrics={"rebanded_from": str(path)}) | ({"run": record["run"]} if "run" in record else {})


def best_method(folder: Path, baseline: Path | None = None) -> dict:
    """The factors record of the evaluate folder's best patched method by the fitness: against the
    ``baseline`` search run's baseline scores with its weights, or against the folder's unpatched row with
    the default weights (evaluate has no fitness of its own)."""
    path = folder / "results.json"
    results = read_results(folder)
    task = next(iter(results["tasks"]))  # the primary task comes first
    judge = read_spec(baseline).cfg() if baseline is not None else {}
    weights = FitnessWeights.defaults(**plain(judge.get("fitness") or {}))  # a recorded block may predate a weight
    methods = {name: m for name, m in results["methods"].items() if m.get("factors") is not None}
    if not methods:
        raise LpesError(f"{path} holds no patched method")
    if baseline is not None:
        records = _records(baseline, "baseline")
        if not records:
            raise LpesError(f"{baseline / 'evaluations.jsonl'} holds no baseline record")
        base = scores_from_json(records[0]["scores"])[task]
    elif "unpatched" in results["methods"]:
        base = scores_from_json(results["methods"]["unpatched"]["scores"])[task]
    else:
        raise LpesError(f"{path} holds no unpatched row: pass --baseline <search run> scored on the same samples")
    fitness = {name: task_score(scores_from_json(m["scores"])[task], base, weights) for name, m in methods.items()}
    best = max(fitness, key=fitness.get)
    return factors_record(model=results["model"], scheme=methods[best]["scheme"], factors=methods[best]["factors"],
                          task=results["tasks"][task],
                          metrics={"search": {"chosen": best, "fitness": fitness, "weights": weights.__dict__}})


def held_to(path: Path, length: int) -> dict:
    """The factors file at ``path`` with each layer's low factors raised to the least floor that keeps the
    layer's tables fixed up to ``length`` tokens (``position.fixed_table``): what an engine serving one table
    per layer (vLLM, an exported folder) needs to serve prompts that long. Only schemes whose tables move with
    the length change anything: under dynamic NTK a factor f < 1 holds up to L_train (2f - 1) / f tokens, so
    the floor is L_train / (2 L_train - length). The result is another schedule: re-test it held out."""
    import numpy as np

    from ..position import build_scheme, fixed_table
    from ..position.bands import default_inv_freq, factor_table
    from ..position.schemes.base import RopeParams

    record = load_factors(path)
    model = record["model"]
    inv_freq = default_inv_freq(SimpleNamespace(**({"name": str(path)} | model)))
    if inv_freq is None:
        raise LpesError(f"{path}: its model block gives no rope_theta and head size to compute its tables from")
    if not model.get("trained_context"):
        raise LpesError(f"{path}: its model block gives no trained_context (written before it was recorded), so "
                        "where the scheme's tables start to move is unknown")
    trained = int(model["trained_context"])
    spec = RopeParams(inv_freq=inv_freq.float(), attention_scaling=1.0, max_position=trained,
                    rope_theta=float(model["rope_theta"]))
    scheme = build_scheme(record["scheme"])
    table = factor_table(record["factors"])

    def holds(row: np.ndarray) -> bool:
        return fixed_table(scheme, spec, row.tolist() if row.size > 1 else float(row[0]), length)[2] >= length

    floors = {}
    for layer, row in enumerate(table):
        if holds(row):
            continue
        low, high = float(row.min()), max(float(row.max()), 1.0)  # holds at high, not at low
        if not holds(np.maximum(row, high)):
            raise LpesError(f"{path}: layer {layer}'s tables under pos={record['scheme']['name']} change before "
                            f"{length} tokens at any floor up to {high:g} (beyond the trained window of {trained} "
                            "tokens the scheme itself moves with the length); ask for a shorter length")
        for _ in range(60):  # bisection on the floor: a higher floor holds at least as long
            mid = (low + high) / 2
            low, high = (low, mid) if holds(np.maximum(row, mid)) else (mid, high)
        # float32 tables hide a change of the factor below ~1e-7, so the edge found can lie where the scheme's
        # float64 factor already moves and whether a table shows it depends on the model's own frequencies (here
        # from the config); 1e-6 above it the factor itself stays put up to ``length``, whatever the frequencies
        floors[layer] = high * (1 + 1e-6)
        table[layer] = np.maximum(row, floors[layer])
    before = factor_table(record["factors"])
    moved = table != before
    held = {"from": str(path), "tokens": length, "floors": {str(k): v for k, v in floors.items()},
            "changed": int(moved.sum()), "max_abs_change": float(np.abs(table - before).max())}
    factors = table.tolist() if table.shape[1] > 1 else table[:, 0].tolist()
    return factors_record(model=model, scheme=record["scheme"], factors=factors, task=record.get("task"),
                          metrics={"held_to": held}) | ({"run": record["run"]} if "run" in record else {})
