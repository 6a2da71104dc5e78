"""Shared glue of the Hydra commands: one-line errors, config conversion, CPU threads."""

from __future__ import annotations

import functools
import sys
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from ..errors import LpesError
from ..registries import BY_CONFIG_KEY

CONF = Path(__file__).resolve().parent.parent / "conf"  # the config groups that ship with the package


def check_plugin_overrides(argv: list[str]) -> None:
    """Import the third-party plugins that ``group=name`` overrides ask for, before Hydra composes.

    A plugin package whose import fails also loses its Hydra config search path, so Hydra would only say
    ``Could not find 'pos/name'``; importing it first reports the plugin and its real error instead. A
    name that is neither an installed plugin nor a config option of the group gets the registry's one
    line (with its did-you-mean) instead of Hydra's listing of the search path.
    """
    for arg in argv:
        group, sep, value = arg.partition("=")
        group = group.lstrip("+~")
        if not sep or group not in BY_CONFIG_KEY:
            continue
        registry = BY_CONFIG_KEY[group]
        for name in value.split(","):  # a multirun sweep lists several
            if name in registry.plugins() or not (CONF / group / f"{name}.yaml").is_file():
                registry.get(name)


def plain(cfg) -> dict:
    """A resolved plain-Python copy of a config node."""
    return OmegaConf.to_container(cfg, resolve=True) if isinstance(cfg, DictConfig) else dict(cfg)


def one_line_errors(fn):
    """Report bad input as ``error: ...`` on one line and exit 2, instead of a traceback."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except LpesError as exc:
            print(f"error: {exc}", file=sys.stderr)
            sys.exit(2)

    return wrapper


# whole-number settings of the commands (where present) and their least values: checked before any work,
# since a 2.5 or a 0 here fails only at the first batch or after the whole search
_COUNTS = {"batch_size": 1, "seed": 0, "threads": 1, "validation.top_k": 1, "validation.bootstrap_resamples": 1,
           "bootstrap_resamples": 1}


def whole(value, setting: str, least: int) -> int:
    """``value`` as an int >= ``least``, or a one-line error naming the setting."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not float(value).is_integer() or value < least:
        raise LpesError(f"{setting} must be a whole number >= {least}, got {value!r}")
    return int(value)


def prepare(cfg) -> None:
    """First step of every command: refuse required settings left unset (``???`` in the YAML) and
    counts that are not whole numbers, then set torch's CPU threads."""
    missing = sorted(OmegaConf.missing_keys(cfg))
    if missing:
        raise LpesError(f"set {', '.join(missing)} (required, no default), e.g. {missing[0]}=...")
    for setting, least in _COUNTS.items():
        value = OmegaConf.select(cfg, setting)
        if value is not None:
            whole(value, setting, least)
    device = str(OmegaConf.select(cfg, "model.device") or "cpu")
    if device != "cpu":  # checked before a run folder is written to, not when the weights are placed
        import torch

        backend = device.split(":")[0]
        available = {"cuda": torch.cuda.is_available, "mps": torch.backends.mps.is_available}.get(backend)
        if available is None or not available():
            raise LpesError(f"model.device={device}: no such device is available on this machine (torch "
                            f"{torch.__version__}); use model.device=cpu or run where it is")
    threads = cfg.get("threads")
    if threads:
        import torch

        torch.set_num_threads(int(threads))


def number(value, setting: str) -> float:
    """``float(value)`` or a one-line error naming the setting."""
    try:
        return float(value)
    except (TypeError, ValueError):
        raise LpesError(f"{setting}: {value!r} is not a number") from None


def task_specs(cfg) -> dict[str, dict]:
    """Configs of the primary ``task`` plus ``extra_tasks``, keyed by name (extra tasks keep their dict
    key), each with the run's seed unless it sets its own."""
    specs = {cfg.task.name: plain(cfg.task)} | {k: plain(v) for k, v in (cfg.get("extra_tasks") or {}).items()}
    seed = int(cfg.get("seed", 0))
    return {key: {"seed": seed} | spec for key, spec in specs.items()}


def build_tasks(cfg) -> dict:
    from ..tasks import TASKS

    return {key: TASKS.build(spec) for key, spec in task_specs(cfg).items()}
