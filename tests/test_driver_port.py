"""The driver port: the simulator, the live driver and the tools use the engine only through
`phalanx.scheduler.port.EnginePort` (its events, its round and its named queries), never its state.

Read from the source: every attribute read of `<anything>.scheduler`, of a local name bound to one, or of a
parameter annotated as the Scheduler or the port, must be one of the port's names. mypy holds the same line
where a driver's reference is typed as the port; this catches the untyped ones too.
"""

from __future__ import annotations

import ast
from pathlib import Path

from phalanx.scheduler.port import EnginePort

ROOT = Path(__file__).resolve().parent.parent / "phalanx"
DRIVERS = ("sim", "live", "verify", "traces", "sweep", "cli.py", "autoscale", "inputs")
# Modules whose `.scheduler` is something else: a control plane's kube-scheduler process.
NOT_THE_ENGINE = {"verify/controlplane.py"}
PORT = {name for name in vars(EnginePort) if not name.startswith("_")}
ENGINE_TYPES = ("Scheduler", "EnginePort")


def _is_engine(node: ast.expr, names: set[str]) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "scheduler") or \
        (isinstance(node, ast.Name) and node.id in names)


def reads_past_the_port(source: str) -> list[str]:
    """`line: expression` for every read of the engine that is not a name of the port."""
    found: list[str] = []
    for scope in ast.walk(ast.parse(source)):
        if not isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            continue
        names: set[str] = set()
        for node in ast.walk(scope):
            if isinstance(node, ast.Assign) and _is_engine(node.value, set()):
                names.update(t.id for t in node.targets if isinstance(t, ast.Name))
            elif isinstance(node, ast.arg) and node.annotation is not None \
                    and any(t in ast.unparse(node.annotation) for t in ENGINE_TYPES):
                names.add(node.arg)
        for node in ast.walk(scope):
            if isinstance(node, ast.Attribute) and _is_engine(node.value, names) and node.attr not in PORT:
                found.append(f"{node.lineno}: {ast.unparse(node)}")
    return sorted(set(found))


def driver_files() -> list[Path]:
    files: list[Path] = []
    for name in DRIVERS:
        path = ROOT / name
        files.extend([path] if path.is_file() else sorted(path.rglob("*.py")))
    return [f for f in files if f.relative_to(ROOT).as_posix() not in NOT_THE_ENGINE]


def test_the_port_is_what_drivers_need_and_no_more() -> None:
    assert {"schedule", "next_retry", "add_pod", "confirm_bind", "pod_message", "pending_counts"} <= PORT
    assert not {"cluster", "pods", "queue", "cycle", "preemptor", "messages", "assumed", "devices"} & PORT


def test_drivers_read_the_engine_only_through_the_port() -> None:
    broken = [f"{path.relative_to(ROOT.parent)}:{line}" for path in driver_files()
              for line in reads_past_the_port(path.read_text(encoding="utf-8"))]
    assert not broken, "engine internals read by a driver (add a query to the Scheduler and " \
                       "phalanx/scheduler/port.py instead):\n" + "\n".join(broken)


def test_the_checker_sees_chains_aliases_and_annotated_parameters() -> None:
    source = (
        "def a(self):\n    return self.scheduler.cluster.index.get('n1')\n"
        "def b(sim):\n    s = sim.scheduler\n    return s.pods, s.pod_message('p')\n"
        "def c(engine: Scheduler):\n    engine._events.add_pod(None, 0.0)\n"
        "def d(sim):\n    return sim.scheduler.is_bound('p')\n"
    )
    assert reads_past_the_port(source) == ["2: self.scheduler.cluster", "5: s.pods", "7: engine._events"]
