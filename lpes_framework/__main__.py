"""``python -m lpes_framework [overrides]``: the factor search (see ``search.py``).

``python -m lpes_framework --plugins`` lists the registries and the installed third-party entries.
"""

from __future__ import annotations

import sys
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from .commands.cli import check_plugin_overrides, one_line_errors


@hydra.main(config_path="pkg://lpes_framework.conf", config_name="config", version_base="1.3")
@one_line_errors
def _search(cfg: DictConfig) -> None:
    from .commands.search import run_search

    run_search(cfg, Path(HydraConfig.get().runtime.output_dir))


def main() -> None:
    if "--plugins" in sys.argv[1:]:
        from .registries import plugin_listing

        print(plugin_listing())
        return
    one_line_errors(check_plugin_overrides)(sys.argv[1:])
    _search()


if __name__ == "__main__":
    main()
