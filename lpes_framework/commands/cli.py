"""Shared glue of the Hydra commands: plugin overrides checked before Hydra composes, one-line errors."""

from __future__ import annotations

import functools
import sys

from ..registry import CONF_DIR
from ..errors import LpesError
from ..registry import BY_CONFIG_KEY



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
            if name in registry.plugins() or not (CONF_DIR / group / f"{name}.yaml").is_file():
                registry.get(name)


def one_line(message: str, most: int = 1000) -> str:
    """``message`` on one line and at most about ``most`` characters: errors quote what a file holds, and a
    received file's million-entry list quoted whole was a megabyte of one line."""
    message = " ".join(message.split("\n"))
    return message if len(message) <= most else f"{message[:most - 200]} ... {message[-150:]}"


def one_line_errors(fn):
    """Report bad input, and a file system that refuses a write, as ``error: ...`` on one line and exit 2,
    instead of a traceback."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except LpesError as exc:
            print(f"error: {one_line(str(exc))}", file=sys.stderr)
            sys.exit(2)
        except OSError as exc:  # a full disk, a read-only folder, a folder moved away while running
            where = f" ({exc.filename})" if exc.filename else ""
            print(f"error: {one_line(exc.strerror or str(exc))}{where}; what was written before is kept: fix that and "
                  "run the same command again (a search with resume=true goes on from its last record)", file=sys.stderr)
            sys.exit(2)

    return wrapper
