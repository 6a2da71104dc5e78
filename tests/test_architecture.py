"""The shape of the package: an in-tree plugin is one module plus one YAML, and config-only commands
import no torch, transformers or pymoo."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import TINY_SEARCH, read_jsonl
from lpes_framework.errors import LpesError
from lpes_framework.registry import Registry

PACKAGE = Path(__file__).resolve().parent.parent / "lpes_framework"

ZIGZAG = '''"""Zigzag: the first gene on even layers, the second on odd ones."""

import numpy as np

from ...registry import CURVES
from .base import Curve


@CURVES.plugin
class Zigzag(Curve):
    def gene_count(self, n_layers):
        return 2

    def shape(self, genes, t):
        return np.where(np.arange(len(t)) % 2 == 0, genes[0], genes[1])
'''


def test_an_in_tree_curve_is_one_module_and_one_yaml(tmp_path):
    copy = tmp_path / "lpes_framework"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "position" / "curves" / "zigzag.py").write_text(ZIGZAG)
    (copy / "conf" / "curve" / "zigzag.yaml").write_text("name: zigzag\nlow: 1.0\nhigh: 1.5\n")
    out = tmp_path / "run"
    env = os.environ | {"PYTHONPATH": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-m", "lpes_framework", *TINY_SEARCH, "curve=zigzag",
                           f"hydra.run.dir={out}"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    candidates = [r for r in read_jsonl(out / "evaluations.jsonl") if r["kind"] == "candidate"]
    zigzags = [r["factors"] for r in candidates if r["factors"][0] != r["factors"][1]]
    assert zigzags and all(f[0] == f[2] and f[1] == f[3] for f in zigzags)
    listing = subprocess.run([sys.executable, "-m", "lpes_framework", "--plugins"], cwd=tmp_path, env=env,
                             capture_output=True, text=True, check=True).stdout
    assert re.search(r"curve .*: .*zigzag", listing)


def test_config_commands_import_no_torch_transformers_or_pymoo():
    # built-in group options are config files: naming one imports no plugin module (pymoo for nsga2)
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "lpes_framework", "--cfg", "job",
                           "optimizer=nsga2", "pos=ntk", "curve=bezier"], capture_output=True, text=True, check=True)
    imported = {line.rsplit("|", 1)[1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}
    heavy = {m for m in imported if m.split(".")[0] in ("torch", "transformers", "pymoo")}
    assert not heavy, sorted(heavy)[:5]
    assert "optimizer:" in proc.stdout


def test_a_plugin_class_must_derive_from_its_kind_base():
    registry = Registry("curve", "lpes_test.none", base="lpes_framework.position.curves.base:Curve")
    with pytest.raises(LpesError, match="must be a subclass of lpes_framework.position.curves.base.Curve"):
        registry.register("not_a_curve")(type("NotACurve", (), {}))
    from lpes_framework.position.curves.base import Curve

    cls = registry.register("named_once")(type("Named", (Curve,), {}))
    assert cls.name == "named_once"  # the name is the registry's, never written twice


def package_imports() -> dict[str, set[str]]:
    """Module -> the package's modules it imports, at module level or inside functions (a lazy import
    is still a dependency)."""
    import ast

    import lpes_framework

    root = Path(lpes_framework.__file__).parent
    files = {}
    for path in root.rglob("*.py"):
        parts = path.relative_to(root.parent).with_suffix("").parts
        files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = (path, parts[-1] == "__init__")
    graph = {}
    for name, (path, is_package) in files.items():
        deps = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[: len(base) - max(node.level - 1, 0)] if node.level else []
                target = ".".join(base + ([node.module] if node.module else []))
                candidates = [target] + [f"{target}.{a.name}" for a in node.names]  # `from . import sub`
            elif isinstance(node, ast.Import):
                candidates = [a.name for a in node.names]
            else:
                continue
            deps |= {c for c in candidates if c in files and c != name}
        graph[name] = deps
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while not group or group[-1] != v:
                group.append(stack.pop())
                on_stack.discard(group[-1])
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_package_has_no_import_cycle():
    graph = package_imports()
    assert "lpes_framework.hf" in graph["lpes_framework.position.patch"]  # the walk sees relative imports
    assert "lpes_framework.position" in graph["lpes_framework.model.info"]  # ... and lazy ones inside functions
    assert import_cycles(graph) == []
    assert import_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


# The pipeline's stages, lowest first: a module imports from its own stage and the ones before it only.
# Top-level modules are the core every stage may use; the package's __init__ (the public API) and
# __main__ sit above the commands.
STAGES = ("core", "io", "position", "model", "tasks", "scoring", "judging", "execution", "optim", "report",
          "search", "evaluate", "matrix", "tune", "commands", "entry")
CORE = {"errors", "registry", "config", "hf", "conf", "exported"}  # exported: copied into exports, imports none of the package


def stage(module: str) -> str:
    parts = module.split(".")[1:]
    if not parts or parts[0] == "__main__":
        return "entry"
    if parts[0] in CORE:
        return "core"
    assert parts[0] in STAGES, f"{module} is in no stage: add it to a stage folder (or CORE)"
    return parts[0]


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    return sorted(f"{a} -> {b}" for a, deps in graph.items() for b in deps
                  if STAGES.index(stage(b)) > STAGES.index(stage(a)))


def test_no_module_imports_from_a_later_stage():
    graph = package_imports()
    assert {stage(m) for m in graph} == set(STAGES)  # every stage has modules, every module a stage
    assert upward_imports(graph) == []
    assert upward_imports({"lpes_framework.tasks.base": {"lpes_framework.scoring"}, "lpes_framework.scoring": set()}) \
        == ["lpes_framework.tasks.base -> lpes_framework.scoring"]
