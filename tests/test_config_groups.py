"""Every option of every config group composes AND builds what it names (a scheme, a curve, an optimizer,
a task, a logger's or executor's checked options, a model's shape), so a YAML that drifts from its
plugin's constructor fails here, not in a user's run."""

from pathlib import Path

import pytest

from conftest import OPTIONAL_MODELS
from lpes_framework.cli import plain, task_specs
from lpes_framework.config import compose_config
from lpes_framework.curves import build_curve
from lpes_framework.errors import LpesError
from lpes_framework.optim import build_optimizer
from lpes_framework.registries import BY_CONFIG_KEY, EXECUTORS, LOGGERS, TASKS

CONF = Path(__file__).resolve().parent.parent / "conf"
OPTIONS = [(group, p.stem) for group in ("pos", "curve", "optimizer", "task", "logger", "executor", "model")
           for p in sorted((CONF / group).glob("*.yaml"))]


def build(group: str, cfg):
    from lpes_framework.position import build_scheme

    curve = build_curve(plain(cfg.curve), 30)
    if group == "pos":
        return build_scheme(plain(cfg.pos))
    if group == "curve":
        return curve
    if group == "optimizer":
        return build_optimizer(plain(cfg.optimizer), curve, 0)
    if group == "task":
        return TASKS.build(task_specs(cfg)[cfg.task.name])
    if group == "logger":  # options bound to the constructor; building wandb would start a run
        return LOGGERS.options(plain(cfg.logger), {}, Path("."))
    if group == "executor":  # options bound to the constructor; building ray would start a cluster
        return EXECUTORS.options(plain(cfg.executor), {}, {}, ["search"])
    from lpes_framework.models import peek

    return peek(cfg.model)


@pytest.mark.parametrize("group,option", OPTIONS, ids=[f"{g}={o}" for g, o in OPTIONS])
def test_every_option_builds(group, option):
    cfg = compose_config("config", [f"{group}={option}"])
    if group in BY_CONFIG_KEY:
        assert cfg[group].name == option  # the YAML's name is the plugin it selects
    if group == "task" and option == "mdqa":  # needs the user's file: refused with the setting to give
        with pytest.raises(LpesError, match="set task.path"):
            build(group, cfg)
        return
    if group == "model" and option in OPTIONAL_MODELS:
        package, target = OPTIONAL_MODELS[option]
        pytest.importorskip(package, reason=f"make {target}")
    assert build(group, cfg) is not None
