"""Compose the packaged Hydra configs from Python (tests, notebooks, benchmarks)."""

from __future__ import annotations

from hydra import compose, initialize_config_module
from hydra.core.global_hydra import GlobalHydra
from hydra.errors import HydraException
from omegaconf import DictConfig

from .errors import LpesError

CONFIG_MODULE = "lpes_framework.conf"


def compose_config(name: str = "config", overrides: list[str] | None = None) -> DictConfig:
    """The config the command line would build for ``overrides`` (no run directory, no logging)."""
    GlobalHydra.instance().clear()
    try:
        with initialize_config_module(CONFIG_MODULE, version_base="1.3"):
            return compose(config_name=name, overrides=list(overrides or []))
    except HydraException as exc:
        raise LpesError(str(exc).splitlines()[0]) from exc
