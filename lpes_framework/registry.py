"""One generic registry per plugin kind, with lazy third-party entry points.

A registry maps a name to a factory. Built-in entries register with the decorator; installed packages
contribute entries through the ``importlib.metadata`` entry point group named after the registry
(e.g. ``lpes_framework.curves``). Entry points are only imported when their name is asked for, so a
broken plugin never breaks the others, and its failure is reported as one line.
"""

from __future__ import annotations

import difflib
import inspect
from importlib import metadata
from typing import Any, Callable, Generic, TypeVar

from .errors import LpesError

T = TypeVar("T")


def _same_kind(default: Any, value: Any) -> bool:
    """Whether ``value`` may stand where a numeric ``default`` does (a number, not text or a flag); other
    defaults (None, text that may also be a flag, sequences) are left to the factory's own checks."""
    if isinstance(default, bool) or not isinstance(default, (int, float)) or value is None:
        return True
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class Registry(Generic[T]):
    def __init__(self, kind: str, group: str):
        self.kind = kind
        self.group = group
        self._entries: dict[str, T] = {}

    def register(self, name: str) -> Callable[[T], T]:
        def add(obj: T) -> T:
            if name in self._entries:
                raise LpesError(f"{self.kind} '{name}' is registered twice")
            self._entries[name] = obj
            return obj

        return add

    def _entry_points(self) -> dict[str, metadata.EntryPoint]:
        return {ep.name: ep for ep in metadata.entry_points(group=self.group)}

    def names(self) -> list[str]:
        return sorted(set(self._entries) | set(self._entry_points()))

    def plugins(self) -> dict[str, str]:
        """Installed third-party entries: name -> 'module:attr (distribution)'."""
        out = {}
        for name, ep in self._entry_points().items():
            dist = ep.dist.name if ep.dist is not None else "?"
            out[name] = f"{ep.value} ({dist})"
        return out

    def get(self, name: str) -> T:
        if name in self._entries:
            return self._entries[name]
        ep = self._entry_points().get(name)
        if ep is None:
            valid = self.names()
            close = difflib.get_close_matches(name, valid, n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise LpesError(f"unknown {self.kind} '{name}'{hint}; valid: {', '.join(valid)}")
        try:
            obj = ep.load()
        except Exception as exc:  # any import-time failure of a third-party package
            raise LpesError(
                f"{self.kind} plugin '{name}' ({ep.value}) failed to import: {type(exc).__name__}: {exc}"
            ) from exc
        self._entries[name] = obj
        return obj

    def options(self, cfg: Any, *args, **extra) -> tuple[Any, dict]:
        """(factory, keyword options) for a config ``{name: ..., **options}``, checked against the
        factory's signature so a misspelt option is a config error, not a crash deep inside."""
        options = {k: v for k, v in dict(cfg).items() if k != "name"} | extra
        factory = self.get(cfg["name"])
        signature = inspect.signature(factory)
        try:
            signature.bind(*args, **options)
        except TypeError as exc:
            raise LpesError(f"{self.kind} '{cfg['name']}': {exc}") from exc
        for key, value in options.items():
            param = signature.parameters.get(key)
            if param is not None and not _same_kind(param.default, value):
                raise LpesError(f"{self.kind} '{cfg['name']}': option {key}={value!r} must be "
                                f"{type(param.default).__name__} like its default {param.default!r}")
        return factory, options

    def build(self, cfg: Any, *args, **extra) -> Any:
        """Instantiate the entry named by ``cfg['name']`` with the remaining keys as options."""
        factory, options = self.options(cfg, *args, **extra)
        return factory(*args, **options)
