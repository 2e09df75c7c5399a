"""The import contract: which phalanx packages may import which, and no import cycle between modules.

Read from the source (every import, at module level, in functions or under TYPE_CHECKING), so that the
layering cannot erode unnoticed: a new dependency between packages is a line added to ALLOWED below, on
purpose, and the table itself must stay free of cycles. The rules that matter most: `api` (the input layer)
imports nothing above it; the engine (`scheduler`, `cluster`) never knows its driver (`sim`, `live`); the two
drivers do not know each other.
"""

from __future__ import annotations

import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "phalanx"

# package -> the phalanx packages it may import (besides itself). "phalanx" is the package's own __init__.
ALLOWED: dict[str, set[str]] = {
    "errors": set(),
    "extras": {"errors"},
    "api": {"errors"},
    "cluster": {"api", "errors"},
    "controllers": {"api", "errors"},
    "admission": {"api", "errors"},
    "migrate": {"admission", "api", "errors"},
    "scheduler": {"api", "cluster", "errors", "extras"},
    "autoscale": {"api", "cluster", "errors", "extras", "scheduler"},
    "inputs": {"api", "autoscale", "errors", "migrate"},
    "sim": {"admission", "api", "autoscale", "controllers", "errors", "extras", "inputs", "scheduler"},
    "live": {"api", "cluster", "errors", "scheduler"},
    "traces": {"api", "cluster", "errors", "inputs", "scheduler", "sim"},
    "verify": {"api", "errors", "inputs", "scheduler", "sim"},
    "devcluster": {"api", "errors", "scheduler", "verify"},
    "sweep": {"api", "cluster", "errors", "extras", "inputs", "scheduler", "sim", "traces"},
    "snapshot": {"api", "errors", "live"},
    "phalanx": {"errors", "inputs", "scheduler", "sim"},
    "cli": {"admission", "api", "autoscale", "cluster", "controllers", "devcluster", "errors", "extras", "inputs",
            "live", "migrate", "phalanx", "scheduler", "sim", "snapshot", "sweep", "traces", "verify"},
    "__main__": {"cli"},
}
# Never, whatever ALLOWED says: the engine is driver-blind, and the drivers are independent of each other.
FORBIDDEN = {("scheduler", "sim"), ("scheduler", "live"), ("cluster", "sim"), ("cluster", "live"),
             ("live", "sim"), ("sim", "live"), ("api", "scheduler"), ("api", "sim")}


def modules(root: Path = ROOT) -> dict[str, Path]:
    found: dict[str, Path] = {}
    for path in root.rglob("*.py"):
        parts = path.relative_to(root.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def imports(path: Path, known: set[str]) -> set[str]:
    """The phalanx modules `path` imports anywhere in it (`from m import name` counts `m.name` when that is a
    module)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            targets = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        elif isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            continue
        found.update(target for target in targets if target in known)
    return found


def package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def graph() -> dict[str, set[str]]:
    known = modules()
    names = set(known)
    return {name: imports(path, names) - {name} for name, path in known.items()}


def test_the_allowed_table_is_layered_and_names_every_package() -> None:
    TopologicalSorter(ALLOWED).prepare()  # raises CycleError if the table itself loops
    assert {package(m) for m in modules()} <= set(ALLOWED)
    for low, high in FORBIDDEN:
        assert high not in ALLOWED[low], f"ALLOWED lets {low} import {high}, which is forbidden"


def test_every_package_imports_only_what_it_may() -> None:
    broken = sorted(f"{module} imports {target}" for module, targets in graph().items() for target in targets
                    if package(target) != package(module) and package(target) not in ALLOWED[package(module)])
    assert not broken, "imports outside the contract (tests/test_architecture.py ALLOWED):\n" + "\n".join(broken)


def test_no_module_cycles() -> None:
    try:
        TopologicalSorter(graph()).prepare()
    except CycleError as exc:
        pytest.fail(f"an import cycle between modules: {' -> '.join(exc.args[1])}")


def test_the_checker_sees_local_and_type_checking_imports(tmp_path: Path) -> None:
    (tmp_path / "phalanx" / "api").mkdir(parents=True)
    (tmp_path / "phalanx" / "sim").mkdir()
    for name in ("phalanx/__init__.py", "phalanx/api/__init__.py", "phalanx/sim/__init__.py", "phalanx/sim/run.py"):
        (tmp_path / name).write_text("")
    (tmp_path / "phalanx" / "api" / "a.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from phalanx.sim import run\n"
        "def f():\n    import phalanx.sim.run\n")
    known = modules(tmp_path / "phalanx")
    assert imports(known["phalanx.api.a"], set(known)) == {"phalanx.sim", "phalanx.sim.run"}
