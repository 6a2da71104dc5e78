"""One generic registry per plugin kind; built-ins and third-party plugins are found the same lazy way.

A registry maps a name to a factory. A built-in plugin is one module of the registry's package, named
after the plugin (``curves/bezier.py`` is the curve ``bezier``; modules starting with ``_`` and ``base``
hold shared code), whose factory is marked ``@REGISTRY.plugin``; installed packages contribute entries
through the ``importlib.metadata`` entry point group of the registry (e.g. ``lpes_framework.curves``).
Nothing is imported until its name is asked for, so listing names costs no imports, a broken plugin
never breaks the others, and its failure is reported as one line. Plugin classes must derive from the
kind's base class, and get their ``name`` from the registry (the name is written once).
"""

from __future__ import annotations

import difflib
import importlib
import importlib.util
import inspect
import pkgutil
from importlib import metadata
from pathlib import Path
from typing import Any, Callable, Generic, TypeVar

from .errors import LpesError, is_number

CONF_DIR = Path(__file__).resolve().parent / "conf"  # the config groups that ship with the package

T = TypeVar("T")


def _same_kind(default: Any, value: Any) -> bool:
    """Whether ``value`` may stand where a numeric or flag ``default`` does: a finite number, a whole one where
    the default is an integer (a population of 9.5 is a typo, not a request), true or false where it is a flag;
    other defaults (None, text that may also be a flag, sequences) are left to the factory's own checks."""
    if isinstance(default, bool):  # a flag: "false" as text or 0 would read as a choice it is not
        return isinstance(value, bool)
    if not isinstance(default, (int, float)) or value is None:
        return True
    if not is_number(value):
        return False
    return not isinstance(default, int) or float(value).is_integer()


def _resolve(ref: str) -> Any:
    module, _, attr = ref.partition(":")
    return getattr(importlib.import_module(module), attr)


class Registry(Generic[T]):
    """``kind`` names it in messages, ``group`` is its entry point group, ``package`` holds the built-in
    modules, ``base`` ('module:Class', resolved when first needed) is the class every plugin class must
    derive from (None: any callable)."""

    def __init__(self, kind: str, group: str, package: str | None = None, base: str | None = None):
        self.kind, self.group, self.package, self._base = kind, group, package, base
        self._entries: dict[str, T] = {}

    def plugin(self, obj: T) -> T:
        """Decorator for a built-in plugin: registered under the name of the module that defines it."""
        self._add(obj.__module__.rpartition(".")[2], obj, obj.__module__)
        return obj

    def register(self, name: str) -> Callable[[T], T]:
        """Decorator registering under ``name`` from anywhere (a notebook, a test)."""

        def add(obj: T) -> T:
            self._add(name, obj, f"{obj.__module__}.{getattr(obj, '__qualname__', obj)}")
            return obj

        return add

    def _add(self, name: str, obj: T, where: str) -> None:
        if name in self._entries and self._entries[name] is not obj:
            raise LpesError(f"{self.kind} '{name}' is registered twice")
        base = _resolve(self._base) if self._base else None
        if base is not None and not (isinstance(obj, type) and issubclass(obj, base)):
            raise LpesError(f"{self.kind} '{name}' ({where}) must be a subclass of {base.__module__}.{base.__name__}")
        if base is None and not callable(obj):
            raise LpesError(f"{self.kind} '{name}' ({where}) must be callable")
        if isinstance(obj, type):
            obj.name = name  # instances report the name they were built by
        self._entries[name] = obj

    def builtins(self) -> list[str]:
        """Names of the built-in plugin modules (found without importing them)."""
        if self.package is None:
            return []
        spec = importlib.util.find_spec(self.package)
        return [m.name for m in pkgutil.iter_modules(spec.submodule_search_locations)
                if not m.name.startswith("_") and m.name != "base"]

    def _entry_points(self) -> dict[str, metadata.EntryPoint]:
        return {ep.name: ep for ep in metadata.entry_points(group=self.group)}

    def names(self) -> list[str]:
        return sorted(set(self._entries) | set(self.builtins()) | set(self._entry_points()))

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
        if name in self.builtins():
            importlib.import_module(f"{self.package}.{name}")  # the module registers its plugin
            if name not in self._entries:
                raise LpesError(f"{self.package}.{name} marks no {self.kind} with @plugin")
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
        self._add(name, obj, ep.value)
        return obj

    def options(self, cfg: Any, *args, **extra) -> tuple[Any, dict]:
        """(factory, keyword options) for a config ``{name: ..., **options}``, checked against the
        factory's signature so a misspelt option is a config error, not a crash deep inside."""
        options = {k: v for k, v in dict(cfg).items() if k != "name"} | extra
        factory = self.get(cfg["name"])
        signature = inspect.signature(factory)
        accepted = _accepted_options(factory)
        unknown = [k for k in options if accepted is not None and k not in accepted]
        if unknown:
            # the usual cause: an experiment written for another entry (a GA's population under
            # optimizer=gradient), whose keys Hydra merges into whichever entry is chosen
            positional = list(signature.parameters)[:len(args)]
            known = [k for k in accepted if k not in positional and k not in extra]  # what a config may set
            raise LpesError(f"{self.kind} '{cfg['name']}': unexpected keyword option(s) {', '.join(unknown)} "
                            f"(it takes {', '.join(known) or 'none'}); a key left by a config for another "
                            f"{self.kind} is deleted on the command line with ~<group>.<key>")
        try:
            signature.bind(*args, **options)
        except TypeError as exc:
            raise LpesError(f"{self.kind} '{cfg['name']}': {exc}") from exc
        for key, value in options.items():
            param = signature.parameters.get(key)
            if param is not None and not _same_kind(param.default, value):
                kind = ("true or false" if isinstance(param.default, bool) else
                        "a whole number" if isinstance(param.default, int) else "a finite number")
                raise LpesError(f"{self.kind} '{cfg['name']}': option {key}={value!r} must be "
                                f"{kind} like its default {param.default!r}")
        return factory, options

    def build(self, cfg: Any, *args, **extra) -> Any:
        """Instantiate the entry named by ``cfg['name']`` with the remaining keys as options."""
        factory, options = self.options(cfg, *args, **extra)
        return factory(*args, **options)


def _accepted_options(factory) -> list[str] | None:
    """The keyword options a factory takes, in order, or None when it takes any. A class whose ``__init__``
    passes ``**common`` on to its base (the tasks) takes its bases' options too."""
    inits = [vars(c)["__init__"] for c in factory.__mro__ if "__init__" in vars(c)] if isinstance(factory, type) \
        else [factory]
    names: list[str] = []
    for init in inits:
        params = inspect.signature(init).parameters.values()
        names += [p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
                  and p.name != "self" and p.name not in names]
        if not any(p.kind is p.VAR_KEYWORD for p in params):
            return names
    return None


# The registries, one per kind, keyed by the config key that picks a plugin. Creating them imports nothing
# heavy: each loads a plugin's module only when its name is asked for.
SCHEMES = Registry("position scheme", "lpes_framework.schemes", "lpes_framework.position.schemes")
CURVES = Registry("curve", "lpes_framework.curves", "lpes_framework.position.curves",
                   "lpes_framework.position.curves.base:Curve")
OPTIMIZERS = Registry("optimizer", "lpes_framework.optimizers", "lpes_framework.optim",
                      "lpes_framework.optim.base:Optimizer")
TASKS = Registry("task", "lpes_framework.tasks", "lpes_framework.tasks", "lpes_framework.tasks.base:Task")
SCORERS = Registry("scoring", "lpes_framework.scorers", "lpes_framework.scoring")
LOGGERS = Registry("logger", "lpes_framework.loggers", "lpes_framework.report.loggers",
                    "lpes_framework.report.loggers.base:Logger")
EXECUTORS = Registry("executor", "lpes_framework.executors", "lpes_framework.execution",
                     "lpes_framework.execution.base:Executor")

# config key (a Hydra group, or ``scoring``) -> the registry its value is looked up in
BY_CONFIG_KEY = {"pos": SCHEMES, "curve": CURVES, "optimizer": OPTIMIZERS, "task": TASKS, "scoring": SCORERS,
                 "logger": LOGGERS, "executor": EXECUTORS}


def usable_names(key: str, registry: "Registry") -> list[str]:
    """What ``key=...`` takes: the group's config options (``conf/<key>/*.yaml``) and the installed plugins, or,
    for a key without config files, the entries that register under the registry (a helper module of the
    package, ``tasks.metrics``, is none)."""
    group = CONF_DIR / key
    if group.is_dir():
        return sorted({p.stem for p in group.glob("*.yaml")} | set(registry.plugins()))
    usable = []
    for name in registry.names():
        try:
            registry.get(name)
        except LpesError:
            continue
        usable.append(name)
    return usable


def plugin_listing() -> str:
    lines = []
    for key, registry in BY_CONFIG_KEY.items():
        lines.append(f"{registry.kind} ({key}=..., entry point group {registry.group}): "
                     f"{', '.join(usable_names(key, registry))}")
        for name, where in sorted(registry.plugins().items()):
            lines.append(f"  plugin {name}: {where}")
    return "\n".join(lines)
