"""What each registry holds, built-in and installed from third-party packages."""

from __future__ import annotations


def registries() -> dict:
    from .curves import CURVES
    from .optim import OPTIMIZERS
    from .position import SCHEMES
    from .tasks import TASKS

    return {"schemes": SCHEMES, "curves": CURVES, "optimizers": OPTIMIZERS, "tasks": TASKS}


def describe_plugins() -> str:
    lines = []
    for label, registry in registries().items():
        plugins = registry.plugins()
        lines.append(f"{label} (entry point group {registry.group}): {', '.join(registry.names())}")
        for name, where in sorted(plugins.items()):
            lines.append(f"  plugin {name}: {where}")
    return "\n".join(lines)
