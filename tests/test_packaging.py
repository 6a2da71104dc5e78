"""Configs compose from the package (so they work from an installed wheel) and the wheel ships them
(every option of every group is built in ``test_config_groups.py``)."""

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from lpes_framework.config import compose_config

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("experiment,key,value", [("quick", "task.samples_per_position", 4),
                                                  ("quick", "curve.low", 0.7),
                                                  ("paper", "task.pairs", 40),
                                                  ("paper", "model.name_or_path", "meta-llama/Llama-2-7b-chat-hf"),
                                                  ("qwen", "task.samples_per_position", 100),
                                                  ("qwen", "fitness.logprob_weight", 10.0),
                                                  ("qwen", "model.name", "qwen2.5-coder-0.5b-instruct"),
                                                  ("quick-gradient", "optimizer.name", "gradient"),
                                                  ("quick-gradient", "curve.name", "free"),
                                                  ("quick-gradient", "optimizer.schedule", "cosine")])
def test_experiments_set_their_values_over_the_defaults(experiment, key, value):
    default = OmegaConf.select(compose_config("config", []), key)
    assert default != value  # else the check below proves nothing
    assert OmegaConf.select(compose_config("config", [f"experiment={experiment}"]), key) == value


def test_both_commands_share_one_defaults_file():
    search, evaluate = compose_config("config", ["seed=3"]), compose_config("evaluate", ["seed=3"])
    for key in ("model", "pos", "curve", "task", "scoring", "batch_size", "share_prefix", "seed", "threads"):
        assert search[key] == evaluate[key], key
    assert search.perplexity_task.chat_template is False  # composed from task/perplexity.yaml


def test_wheel_contains_every_config(tmp_path):
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                    str(tmp_path), str(ROOT)], check=True, capture_output=True)
    (wheel,) = tmp_path.glob("lpes_framework-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for yaml in (ROOT / "lpes_framework" / "conf").rglob("*.yaml"):
        assert f"lpes_framework/conf/{yaml.relative_to(ROOT / 'lpes_framework' / 'conf')}" in names
    for preset in (ROOT / "lpes_framework" / "presets").glob("*.json"):
        assert f"lpes_framework/presets/{preset.name}" in names
