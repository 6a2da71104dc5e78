"""Which model a command loads for a run folder or a factors file it was given: the user's choice, never the
file's. A run record names the model it was made on (config and identity), but a received file could name
any weights, files to join and write, or ``trust_remote_code``; so its model block is only compared with
the model the user names (or, where the user names none, with the shipped config group that equals it),
and the model loaded is always a config composed from this package's own groups."""

from __future__ import annotations

from importlib.resources import files

from omegaconf import DictConfig

from ..errors import LpesError

# settings that choose where and how a model runs, not which model it is
RUNTIME = ("device", "dtype", "attn_implementation")


def shipped_groups() -> list[str]:
    return sorted(p.name[:-5] for p in files("lpes_framework.conf").joinpath("model").iterdir()
                  if p.name.endswith(".yaml"))


def chosen_model(choice: str | None, recorded: dict | None) -> DictConfig:
    """The ``model`` config of group ``choice`` (what the user typed), or, with none, of the shipped group
    whose settings equal the record's; a record naming any other model (a hub id, a folder, its own files,
    remote code) is refused until the user names the model."""
    from ..config import compose_config

    def identity(cfg: dict) -> dict:
        return {k: v for k, v in cfg.items() if k not in RUNTIME}

    if choice:
        return compose_config("config", [f"model={choice}"]).model
    if isinstance(recorded, dict):
        from omegaconf import OmegaConf

        for group in shipped_groups():
            cfg = compose_config("config", [f"model={group}"]).model
            if identity(OmegaConf.to_container(cfg, resolve=True)) == identity(recorded):
                return cfg
    name = recorded.get("name") if isinstance(recorded, dict) else None
    raise LpesError(f"the file's run record names a model that is no shipped config group ({name!r}); name the "
                    f"model to load with --model (one of {', '.join(shipped_groups())}): a received file never "
                    "chooses the weights, files or code that run")


def check_task_reads_no_files(task: dict, where: str) -> None:
    """A recorded task that reads data files (``path``, ``files``) would have the file choose what is read."""
    paths = {k: task.get(k) for k in ("path", "files") if task.get(k)}
    if paths:
        raise LpesError(f"{where}: its task reads files ({', '.join(f'{k}={v}' for k, v in paths.items())}); a received "
                        "file never chooses what is read: re-run with the evaluate command and a task you name")
