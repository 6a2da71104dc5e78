"""The presets shipped with the package (``lpes_framework/presets/<name>.json``): factors files a name stands
for wherever a factors file is accepted, and how a name or path argument is resolved to a file."""

from __future__ import annotations

import os
import sys
from functools import cache
from pathlib import Path

PRESETS = Path(__file__).resolve().parent.parent / "presets"  # factors files that ship with the package


def preset_names() -> list[str]:
    return sorted(p.stem for p in PRESETS.glob("*.json"))


def is_preset(name: str | os.PathLike) -> bool:
    """A shipped preset's name that is not also an existing path (a file on disk wins)."""
    return not Path(name).exists() and str(name) in preset_names()


def resolve_factors(name_or_path: str | os.PathLike) -> Path:
    """The file behind a factors argument: an existing path, else a shipped preset of that name. A path that
    shadows a preset's name is said on stderr: a file of that name in the folder a command runs in (a
    received repository, say) would otherwise stand in for the shipped default without a word."""
    if is_preset(name_or_path):
        return PRESETS / f"{name_or_path}.json"
    if str(name_or_path) in preset_names():
        _say_shadowed(str(Path(name_or_path).resolve()), str(name_or_path))
    return Path(name_or_path)


@cache
def _say_shadowed(path: str, name: str) -> None:
    # once a process: a command resolves one argument several times (checks, then the patch)
    print(f"lpes: {name} is the file {path}, not the shipped preset of that name", file=sys.stderr)
