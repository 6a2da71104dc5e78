"""``lpes <subcommand> [arguments]``, and ``python -m lpes_framework [overrides]`` (the search).

``lpes --help`` lists the subcommands; ``lpes <subcommand> --help`` gives each one's own help (Hydra's for
the config-driven ones). Without a subcommand the arguments are the search's Hydra overrides, so
``python -m lpes_framework optimizer=ga curve=bezier pos=ntk`` and multirun sweeps work as they always did.
``--plugins`` lists the registries and the installed third-party entries.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from .commands.cli import check_plugin_overrides, one_line_errors

# subcommand -> (module whose main() it runs, one line of help); the search is this module's own
SUBCOMMANDS = {
    "search": (None, "search layer factors (Hydra overrides: optimizer=ga curve=bezier pos=ntk ...)"),
    "tune": ("tune", "from a model to a schedule to ship: diagnose, search, no harm on validation, test once, ship"),
    "evaluate": ("evaluate", "score methods side by side on a split, accuracy by gold position with intervals"),
    "retest": ("retest", "re-test a preset or factors file held out in the regime it was searched in"),
    "status": ("status", "progress of a search folder, running or killed"),
    "factors": ("factors", "write a run's best factors file, or refit one (curve, bands, hold-to length)"),
    "preset": ("preset", "list the shipped presets, or make one from a finished search"),
    "attention": ("attention", "where attention goes by layer and gold position, before and after"),
    "analysis": ("analysis", "intervals and plots from finished evaluate folders"),
    "seal": ("seal", "compress a finished run's logs for keeping; every reader reads them as before"),
    "export": ("export", "save a patched model as a self-contained folder (no lpes needed to load it)"),
    "lm-eval": ("lm_eval", "run lm-evaluation-harness tasks on the patched model"),
}


def usage() -> str:
    width = max(map(len, SUBCOMMANDS))
    lines = ["usage: lpes <subcommand> [arguments]   (lpes <subcommand> --help for its own)", "",
             "subcommands:"]
    lines += [f"  {name:<{width}}  {text}" for name, (_, text) in SUBCOMMANDS.items()]
    lines += ["", "lpes [overrides] is lpes search [overrides]; lpes --plugins lists the plugin registries."]
    return "\n".join(lines)


@hydra.main(config_path="pkg://lpes_framework.conf", config_name="config", version_base="1.3")
@one_line_errors
def _search(cfg: DictConfig) -> None:
    from .search import run_search

    run_search(cfg, Path(HydraConfig.get().runtime.output_dir))


def search(argv: list[str]) -> None:
    one_line_errors(check_plugin_overrides)(argv)
    sys.argv = [sys.argv[0], *argv]  # Hydra reads its overrides from there
    _search()


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else list(argv)
    first = argv[0] if argv else ""
    if first in ("-h", "--help"):
        print(usage())
    elif first == "--plugins":
        from .registry import plugin_listing

        print(plugin_listing())
    elif first == "search":
        search(argv[1:])
    elif first in SUBCOMMANDS:
        module = importlib.import_module(f".commands.{SUBCOMMANDS[first][0]}", __package__)
        sys.argv = [f"lpes {first}", *argv[1:]]  # the Hydra commands read their overrides from sys.argv
        module.main()
    else:
        search(argv)


if __name__ == "__main__":
    main()
