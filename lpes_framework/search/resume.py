"""What ties a run folder to the settings that continue it, and the records a resume starts from."""

from __future__ import annotations

from ..errors import LpesError
from ..io.spec import KEY, RunSpec, differences, model_differences
from ..io.store import RunStore, read_evaluations

# Keys that may change between a run and its resume without changing any score.
RESUME_FREE = {"resume", "logger", "threads", "progress", "plots", "validation", "executor", "record_every", "reuse"}


def fingerprint(data: dict, objectives: int) -> dict:
    """What must not change between a run and its resume (applied to the stored fingerprint too, so runs
    written before a key became free still resume)."""
    free = RESUME_FREE | ({"perplexity_task"} if objectives == 1 else set())  # unused by a scalar optimizer
    data = {k: v for k, v in data.items() if k not in free}
    if not (data.get("fitness") or {}).get("normalise"):  # off, as runs recorded before the option are
        data["fitness"] = {k: v for k, v in (data.get("fitness") or {}).items() if k != "normalise"}
    # a resume may extend the run, and may switch layer checkpointing (memory only: the same gradients)
    data["optimizer"] = {k: v for k, v in data["optimizer"].items() if k not in ("generations", "checkpoint_layers")}
    if not data["optimizer"].get("smoothness"):  # off, as gradient runs recorded before the option are
        data["optimizer"].pop("smoothness", None)
    return data


def recorded_run(store: RunStore) -> tuple[list[dict], RunSpec]:
    """A search log's records (each checked, the log as one run's: ``read_evaluations``) and its run record,
    refused in one line where the log holds none (nothing ties its scores to any settings)."""
    path = store.evaluations.path
    records = read_evaluations(path)
    if not records or records[0]["key"] != KEY:
        raise LpesError(f"{path} holds no run record (its first line), so nothing ties it to these settings; a "
                        "search cannot continue from it or take its scores")
    return records, RunSpec.from_json(records[0]["spec"], str(path))


def restore(store: RunStore, spec: RunSpec, objectives: int) -> tuple[dict[str, dict], dict | None]:
    """The evaluation cache (records by key, each checked against the schema) and the last checkpoint of
    the run in ``store``, refused unless it was made with ``spec``'s settings."""
    records, recorded = recorded_run(store)
    cache = {r["key"]: r for r in records}
    # a file the run read is compared by its bytes where the record holds them: moved is fine, edited is not
    same_bytes = {k for k, digest in recorded.files.items() if spec.files.get(k) == digest}
    differ = [d for d in differences(fingerprint(recorded.config, objectives), fingerprint(spec.config, objectives))
              if d not in same_bytes]
    differ += [f"{k}'s content" for k, digest in recorded.files.items()
               if spec.files.get(k, digest) != digest and k not in differ]
    differ += model_differences(recorded.model, spec.model)
    if differ:
        raise LpesError(f"{store.dir} holds a search with other settings ({', '.join(differ[:6])}"
                        f"{', ...' if len(differ) > 6 else ''} differ); resume with the original overrides")
    state = store.load_checkpoint()  # bound to this log (io.store), or refused
    if state is not None:
        state["log"] = [_named(entry) for entry in state["log"]]
    return cache, state


def _named(entry: dict) -> dict:
    """A gradient step's progress entry under its own names: checkpoints written before they existed
    borrowed the GA's (``generation`` for the step, ``mean_fitness`` for the latest fixed-split score)."""
    if "objective" not in entry or "step" in entry:
        return entry
    return {"step": entry["generation"], "objective": entry["objective"], "scored_fitness": entry["mean_fitness"],
            "best_fitness": entry["best_fitness"]}
