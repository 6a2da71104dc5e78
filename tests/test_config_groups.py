"""Every option of every config group composes AND builds what it names (a scheme, a curve, an optimizer,
a task, a logger's or executor's checked options, a model's shape), so a YAML that drifts from its
plugin's constructor fails here, not in a user's run."""

from pathlib import Path

import pytest

from conftest import CharTokenizer
from lpes_framework.config import plain, task_configs
from lpes_framework.config import compose_config
from lpes_framework.position.curves import build_curve
from lpes_framework.errors import LpesError
from lpes_framework.optim import build_optimizer
from lpes_framework.registry import BY_CONFIG_KEY, EXECUTORS, LOGGERS, TASKS

CONF = Path(__file__).resolve().parent.parent / "conf"
# options that set a plugin up as a named variant (RULER's task names) rather than naming it
VARIANTS = {**{f"niah_{v}": "ruler_niah" for v in ("single_1", "single_2", "single_3", "multikey_1", "multikey_2",
                                                   "multikey_3", "multivalue", "multiquery")},
            "vt": "variable_tracking", "cwe": "common_words", "fwe": "frequent_words", "mdqa_capitals": "mdqa"}
OPTIONS = [(group, p.stem) for group in ("pos", "curve", "optimizer", "task", "logger", "executor", "model")
           for p in sorted((CONF / group).glob("*.yaml"))]


def identity(cfg):
    """The composed model's identity, read from its config; skips where the model's optional package is
    not installed."""
    from importlib import metadata

    from lpes_framework.model.load import identify

    if cfg.model.get("embedded"):
        dist = cfg.model.embedded.parts[0].split(":")[0]
        try:
            metadata.distribution(dist)
        except metadata.PackageNotFoundError:
            pytest.skip(f"{cfg.model.name}: {dist} is not installed (make install-qwen / install-qwen15)")
    return identify(cfg.model)


def n_layers(cfg) -> int:
    """The composed model's layer count (the curve's length follows the model)."""
    return identity(cfg).n_layers


def build(group: str, cfg):
    """The object a group's option names, built from the composed config."""
    from lpes_framework.position import build_scheme

    if group == "pos":
        return build_scheme(plain(cfg.pos))
    if group == "curve":
        return build_curve(plain(cfg.curve), n_layers(cfg))
    if group == "optimizer":
        return build_optimizer(plain(cfg.optimizer), build_curve(plain(cfg.curve), n_layers(cfg)), 0)
    if group == "task":
        return TASKS.build(task_configs(cfg)[cfg.task.name])
    if group == "logger":  # options bound to the constructor; building wandb would start a run
        return LOGGERS.options(plain(cfg.logger), {}, Path("."))
    if group == "executor":  # options bound to the constructor; building ray would start a cluster
        return EXECUTORS.options(plain(cfg.executor), {}, {}, ["search"])
    return identity(cfg)


def check_built(group: str, option: str, cfg, built) -> None:
    """What was built is what the option says, with the YAML's values."""
    if group == "pos":
        assert built.config == plain(cfg.pos)
    elif group in ("curve", "optimizer"):
        curve = built if group == "curve" else built.curve
        assert (curve.name, curve.n_layers) == (cfg.curve.name, n_layers(cfg))
        assert (curve.low, curve.high) == (cfg.curve.low, cfg.curve.high)
        if group == "optimizer":
            assert isinstance(built, BY_CONFIG_KEY["optimizer"].get(option))
    elif group == "task":
        plugin = VARIANTS.get(option, option)
        spec = task_configs(cfg)[plugin]  # every option the YAML sets is the task's (windows: its sample count)
        # the options at their older behaviour stay out of the settings (older runs' cache keys)
        described = dict(built.unkeyed_defaults) | built.settings() | {"windows": built.samples_per_position}
        if option == "perplexity":  # its defaults stay out of the settings (older runs' cache keys), and its
            # guard changes the fitness, not the samples
            described |= {"source": built.source, "score_from": built.score_from, "max_ratio": built.max_ratio}
        assert built.name == plugin and set(spec) <= set(described)
        assert {k: described[k] for k in spec} == spec
    elif group in ("logger", "executor"):
        factory, options = built
        assert factory is BY_CONFIG_KEY[group].get(option)
        assert options == {k: v for k, v in plain(cfg[group]).items() if k != "name"}
    else:
        assert built.n_layers == n_layers(cfg) and built.architecture.endswith("ForCausalLM")
        assert built.name == cfg.model.name and built.trained_context > 0


@pytest.mark.parametrize("group,option", OPTIONS, ids=[f"{g}={o}" for g, o in OPTIONS])
def test_every_option_builds(group, option):
    cfg = compose_config("config", [f"{group}={option}"])
    if group in BY_CONFIG_KEY:
        assert cfg[group].name == VARIANTS.get(option, option)  # the YAML's name is the plugin it selects
    if group == "task" and option == "mdqa":  # needs the user's file: refused with the setting to give
        with pytest.raises(LpesError, match="set task.path"):
            build(group, cfg)
        return
    check_built(group, option, cfg, build(group, cfg))


# hub models an experiment names, whose config cannot be read offline: their layer counts
HUB_LAYERS = {"meta-llama/Llama-2-7b-chat-hf": 32}
EXPERIMENTS = sorted(p.stem for p in (CONF / "experiment").glob("*.yaml"))


@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_every_experiment_builds_its_scheme_curve_optimizer_and_tasks(experiment):
    cfg = compose_config("config", [f"experiment={experiment}"])
    check_built("pos", cfg.pos.name, cfg, build("pos", cfg))
    for spec in task_configs(cfg).values():
        task = TASKS.build(spec)
        if task.metric == "perplexity":  # windows of a text, not samples by gold position
            assert len(task.encode("search", CharTokenizer())) == task.samples_per_position
        else:  # gold positions, or a needle task's depths
            positions = getattr(task, "gold_positions", None) or task.depths
            assert len(task.samples("search", CharTokenizer())) == len(positions) * task.samples_per_position
        assert task.name == spec["name"]
    layers = HUB_LAYERS.get(cfg.model.name_or_path) or n_layers(cfg)
    curve = build_curve(plain(cfg.curve), layers)
    optimizer = build_optimizer(plain(cfg.optimizer), curve, 0)
    assert (curve.name, curve.n_layers, curve.low, curve.high) == (cfg.curve.name, layers, cfg.curve.low, cfg.curve.high)
    assert isinstance(optimizer, BY_CONFIG_KEY["optimizer"].get(cfg.optimizer.name)) and optimizer.curve is curve


def test_every_name_the_plugin_listing_shows_is_accepted():
    from lpes_framework.registry import BY_CONFIG_KEY, SCORERS, usable_names

    for key, registry in BY_CONFIG_KEY.items():
        for name in usable_names(key, registry):
            if (CONF / key).is_dir():
                compose_config("config", [f"{key}={name}"])
            else:
                registry.get(name)
    assert "metrics" not in usable_names("task", BY_CONFIG_KEY["task"])  # a helper module, no task
    assert "gradient" not in usable_names("scoring", SCORERS)
