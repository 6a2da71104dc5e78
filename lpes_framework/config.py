"""The run config: composed from the packaged Hydra configs (tests, notebooks, benchmarks), checked before
any work, and read the way every command reads it."""

from __future__ import annotations

from hydra import compose, initialize_config_module
from hydra.core.global_hydra import GlobalHydra
from hydra.errors import HydraException
from omegaconf import DictConfig, OmegaConf

from .errors import LpesError, whole

CONFIG_MODULE = "lpes_framework.conf"


def compose_config(name: str = "config", overrides: list[str] | None = None) -> DictConfig:
    """The config the command line would build for ``overrides`` (no run directory, no logging)."""
    GlobalHydra.instance().clear()
    try:
        with initialize_config_module(CONFIG_MODULE, version_base="1.3"):
            return compose(config_name=name, overrides=list(overrides or []))
    except HydraException as exc:
        raise LpesError(str(exc).splitlines()[0]) from exc


def plain(cfg) -> dict:
    """A resolved plain-Python copy of a config node."""
    return OmegaConf.to_container(cfg, resolve=True) if isinstance(cfg, DictConfig) else dict(cfg)


# whole-number settings of the commands (where present) and their least values: checked before any work,
# since a 2.5 or a 0 here fails only at the first batch or after the whole search
# (threads are bounded because torch takes them as a C int: 10^20 was an overflow traceback; resamples because
# the bootstrap draws them as one array, which 10^11 could not allocate, at the end of a search)
_COUNTS = {"batch_size": (1, None), "seed": (0, None), "threads": (1, 4096), "validation.top_k": (1, None),
           "validation.bootstrap_resamples": (1, 100_000), "bootstrap_resamples": (1, 100_000), "record_every": (0, None)}


def prepare(cfg) -> None:
    """First step of every command: refuse required settings left unset (``???`` in the YAML) and
    counts that are not whole numbers, then set torch's CPU threads."""
    missing = sorted(OmegaConf.missing_keys(cfg))
    if missing:
        raise LpesError(f"set {', '.join(missing)} (required, no default), e.g. {missing[0]}=...")
    for setting, (least, most) in _COUNTS.items():
        value = OmegaConf.select(cfg, setting)
        if value is not None:
            whole(value, setting, least, most)
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


def task_configs(cfg) -> dict[str, dict]:
    """Configs of the primary ``task`` plus ``extra_tasks``, keyed by name (extra tasks keep their dict
    key), each with the run's seed unless it sets its own."""
    primary, extra = plain(cfg.task), {k: plain(v) for k, v in (cfg.get("extra_tasks") or {}).items()}
    if primary["name"] in extra:  # the dict would silently replace the primary task with it
        raise LpesError(f"extra_tasks.{primary['name']}: an extra task may not take the primary task's name "
                        f"({primary['name']}); give it another key")
    seed = int(cfg.get("seed", 0))
    configs = {key: {"seed": seed} | conf for key, conf in {primary["name"]: primary, **extra}.items()}
    seen: dict[str, str] = {}
    for key, conf in configs.items():
        same = seen.setdefault(repr(sorted((k, repr(v)) for k, v in conf.items() if k != "weight")), key)
        if same != key:  # two copies of one task weigh it twice (or, with opposite weights, cancel)
            raise LpesError(f"tasks {same} and {key} are the same task with the same settings; keep one "
                            "(its weight says how much it counts)")
    return configs


def build_tasks(cfg) -> dict:
    from .registry import TASKS

    return {key: TASKS.build(conf) for key, conf in task_configs(cfg).items()}


def scoring_regime(cfg, tasks: dict, split: str) -> dict:
    """Everything besides a method's factors and scheme that changes its scores on ``split``: the model,
    the scorer, prefix sharing and each task's settings (the identity of cached and reused rows)."""
    return {"model": plain(cfg.model), "split": split, "scoring": cfg.scoring, "share_prefix": cfg.share_prefix,
            "tasks": {k: t.settings() for k, t in tasks.items()}}
