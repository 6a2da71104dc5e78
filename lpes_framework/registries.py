"""The plugin registries, one per kind, keyed by the config key that picks a plugin. Importing this module
imports nothing heavy: each registry loads a plugin's module only when its name is asked for."""

from __future__ import annotations

from .registry import Registry

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


def plugin_listing() -> str:
    lines = []
    for key, registry in BY_CONFIG_KEY.items():
        lines.append(f"{registry.kind} ({key}=..., entry point group {registry.group}): {', '.join(registry.names())}")
        for name, where in sorted(registry.plugins().items()):
            lines.append(f"  plugin {name}: {where}")
    return "\n".join(lines)
