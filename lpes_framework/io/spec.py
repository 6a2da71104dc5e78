"""The run record: what a run was made with, written into its folder and read back by everything that
continues or analyses it (resume, status, attention, re-tests), so none of them rebuilds settings by hand.

A ``RunSpec`` holds the command, its whole resolved config and the model's identity as read from the
model's config before any weights loaded (``models.identify``: architecture, layers, heads, head size,
every RoPE parameter, trained window, where the weights came from). A search writes it as the first
record of ``evaluations.jsonl``, an evaluate as a record of ``rows.jsonl``; both copy it into their
result files (``best_factors.json`` and ``results.json``, key ``run``).
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..errors import LpesError
from .atomic import file_digest
from .jsonio import damage, loads, refuse_interpolations
from .records import GROUP_NAME

KEY = "spec"  # the record's key and kind in a run's JSONL log


@dataclass(frozen=True)
class RunSpec:
    command: str  # search | evaluate
    config: dict  # the resolved config
    model: dict  # ModelInfo.as_dict() as read before the weights loaded
    files: dict = field(default_factory=dict)  # each file the config names: its setting's dotted name -> digest

    def as_json(self) -> dict:
        return asdict(self)

    def record(self) -> dict:
        """The spec as a record of a run's log."""
        return {"key": KEY, "kind": KEY, "spec": self.as_json()}

    @classmethod
    def from_json(cls, data: dict, source: str) -> "RunSpec":
        # logs written before the run record named the model block "model_as_read" and held no command
        model = data.get("model", data.get("model_as_read"))
        if not isinstance(data.get("config"), dict) or not isinstance(model, dict):
            raise LpesError(f"{source}: damaged run record (no config or model block)")
        groups = [k for k in ("model", "pos", "curve", "task", "optimizer")
                  if k in data["config"] and not isinstance(data["config"][k], dict)]
        if groups:  # the commands read these as config groups
            raise LpesError(f"{source}: damaged run record (config.{groups[0]} is not an object)")
        unnamed = [k for k in ("pos", "curve", "task", "optimizer") if k in data["config"] and not (
            isinstance(data["config"][k].get("name"), str) and re.fullmatch(GROUP_NAME, data["config"][k]["name"]))]
        if unnamed:  # composed as ``task=<name>``: a path or a list there would load or parse something else
            raise LpesError(f"{source}: damaged run record (config.{unnamed[0]} has no plain name: "
                            f"{data['config'][unnamed[0]].get('name')!r})")
        if not isinstance(data.get("command", "search"), str):
            raise LpesError(f"{source}: damaged run record (its command is not text)")
        refuse_interpolations(data, source)  # the config becomes an OmegaConf object (``cfg``)
        files = data.get("files", {})  # records written before it hold none
        if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
            raise LpesError(f"{source}: damaged run record (its files block is not names and digests)")
        return cls(command=data.get("command", "search"), config=data["config"], model=model, files=files)

    def cfg(self):
        """The run's config as an OmegaConf object (what the commands take)."""
        from omegaconf import OmegaConf

        return OmegaConf.create(self.config)


def file_digests(config: dict, prefix: str = "") -> dict[str, str]:
    """The digest of every existing file a setting of ``config`` names, by the setting's dotted name (the
    names ``differences`` gives): what lets a resume take a data or start file moved since the run began.
    The model's files are not read (gigabytes; its identity is compared field by field)."""
    digests = {}
    for key, value in config.items():
        if not prefix and key == "model":
            continue
        if isinstance(value, dict):
            digests |= file_digests(value, f"{prefix}{key}.")
        elif isinstance(value, str) and value and Path(value).is_file():
            digests[f"{prefix}{key}"] = file_digest(Path(value))
    return digests


def differences(a, b, prefix: str = "") -> list[str]:
    """Dotted names of the settings where two nested dicts differ."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in sorted(set(a) | set(b), key=str) for d in differences(a.get(k), b.get(k), f"{prefix}{k}.")]
    return [] if a == b else [prefix.rstrip(".")]


def model_differences(recorded: dict, have: dict) -> list[str]:
    """The identity fields in which two models differ, over the fields the recorded one holds (records
    of older versions hold fewer); the label and the weights' location are not compared."""
    return [f"the model's {d}" for key in recorded if key not in ("name", "source") and key in have
            for d in differences(recorded[key], have[key], f"{key}.")]


def _log_spec(path: Path) -> RunSpec | None:
    from .store import JsonLog

    specs = [r for r in JsonLog(path).read() if r.get("kind") == KEY]
    if specs and not isinstance(specs[-1].get("spec"), dict):
        raise LpesError(f"{path}: damaged run record (its spec is not an object)")
    return RunSpec.from_json(specs[-1]["spec"], str(path)) if specs else None


def read_spec(run_dir: Path) -> RunSpec:
    """The run record of a search or evaluate folder: from its log, else from its result files. Folders
    written before the run record existed fall back to Hydra's copy of their config (no model block)."""
    from .store import JsonLog

    run_dir = Path(run_dir)
    for log in ("evaluations.jsonl", "rows.jsonl"):
        if JsonLog(run_dir / log).exists():
            spec = _log_spec(run_dir / log)
            if spec is not None:
                return spec
    for result in ("best_factors.json", "results.json"):
        path = run_dir / result
        if path.is_file():
            try:
                data = loads(path.read_text())
            except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
                raise LpesError(f"{path}: corrupted ({damage(exc)})") from None
            run = data.get("run") if isinstance(data, dict) else None
            if run is not None and not isinstance(run, dict):
                raise LpesError(f"{path}: damaged run record (not an object)")
            if run:
                return RunSpec.from_json(run, str(path))
    legacy = run_dir / ".hydra" / "config.yaml"
    if legacy.is_file():
        from omegaconf import OmegaConf

        command = "search" if JsonLog(run_dir / "evaluations.jsonl").exists() else "evaluate"
        try:
            config = OmegaConf.to_container(OmegaConf.load(legacy), resolve=False)
        except Exception as exc:  # noqa: BLE001 (YAML's and OmegaConf's errors alike: the file is damaged)
            raise LpesError(f"{legacy}: corrupted ({type(exc).__name__})") from None
        return RunSpec.from_json({"command": command, "config": config, "model": {}}, str(legacy))
    raise LpesError(f"{run_dir} is not a run directory: it holds no run record (evaluations.jsonl, rows.jsonl, "
                    "best_factors.json or results.json written by lpes)")
