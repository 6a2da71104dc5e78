"""Configs compose from the package (so they work from an installed wheel) and the wheel ships them."""

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from lpes_framework.config import compose_config
from lpes_framework.curves import CURVES
from lpes_framework.optim import OPTIMIZERS
from lpes_framework.position import SCHEMES
from lpes_framework.tasks import TASKS

ROOT = Path(__file__).resolve().parent.parent
GROUPS = {"pos": SCHEMES, "curve": CURVES, "optimizer": OPTIMIZERS, "task": TASKS}


@pytest.mark.parametrize("group", sorted(GROUPS))
def test_every_group_option_composes_and_names_a_registered_entry(group):
    options = sorted(p.stem for p in (ROOT / "conf" / group).glob("*.yaml"))
    assert options
    for option in options:
        cfg = compose_config("config", [f"{group}={option}"])
        assert cfg[group].name in GROUPS[group].names()


@pytest.mark.parametrize("experiment", ["quick", "paper"])
def test_presets_compose(experiment):
    cfg = compose_config("config", [f"experiment={experiment}"])
    assert OmegaConf.to_container(cfg, resolve=False)["optimizer"]["name"] == "ga"


def test_wheel_contains_every_config(tmp_path):
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                    str(tmp_path), str(ROOT)], check=True, capture_output=True)
    (wheel,) = tmp_path.glob("lpes_framework-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for yaml in (ROOT / "lpes_framework" / "conf").rglob("*.yaml"):
        assert f"lpes_framework/conf/{yaml.relative_to(ROOT / 'lpes_framework' / 'conf')}" in names
