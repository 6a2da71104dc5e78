"""``lpes tune``: diagnose, search, no harm on validation, test once, ship (``tune.recipe``), into the Hydra run
directory; the same command again resumes where a kill stopped it.

    lpes tune model=qwen2.5-0.5b tune.test_seed=7 hydra.run.dir=outputs/tune/qwen
"""

from __future__ import annotations

import sys
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from .cli import check_plugin_overrides, one_line_errors


@hydra.main(config_path="pkg://lpes_framework.conf", config_name="tune", version_base="1.3")
@one_line_errors
def _tune(cfg: DictConfig) -> None:
    from ..tune.recipe import run_tune

    run_tune(cfg, Path(HydraConfig.get().runtime.output_dir))


def main() -> None:
    one_line_errors(check_plugin_overrides)(sys.argv[1:])
    _tune()


if __name__ == "__main__":
    main()
