"""``lpes evaluate``: the unpatched model, uniform scalings, saved factors and curve genomes compared by gold
position on one split (``evaluate.run``), into the Hydra run directory.

    lpes evaluate task=kv_retrieval pos=rope methods.uniform=[1.25,1.5]

Writes ``results.json``, ``table.txt`` and ``by_position.png`` and prints the table (rows: methods;
columns: gold positions; cells: exact match % and mean gold log-prob); ``resume=true`` in the same
``hydra.run.dir`` reuses the methods (and haystacks) already scored there.
"""

from __future__ import annotations

import sys
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from ..evaluate import run_evaluate
from .cli import check_plugin_overrides, one_line_errors


@hydra.main(config_path="pkg://lpes_framework.conf", config_name="evaluate", version_base="1.3")
@one_line_errors
def _evaluate(cfg: DictConfig) -> None:
    run_evaluate(cfg, Path(HydraConfig.get().runtime.output_dir))


def main() -> None:
    one_line_errors(check_plugin_overrides)(sys.argv[1:])
    _evaluate()


if __name__ == "__main__":
    main()
