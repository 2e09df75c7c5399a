"""Shared inputs for the benchmarks, and a summary in Phalanx's terms (pods/s, seconds, bytes) at the end."""

from __future__ import annotations

import platform
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from benchmarks.synthetic import SHAPES, inputs
from phalanx.inputs.load import Inputs

# kube-scheduler's scheduler_perf threshold for SchedulingBasic/5000Nodes_10000Pods, and Phalanx's targets.
KUBE_SCHEDULER_FLOOR = 680
ENGINE_TARGET = 10_000  # pods/s inside the engine at 5,000 nodes
# Shapes with their own target (benchmarks/mix.py: 20% of the pods with spread or anti-affinity constraints).
ENGINE_TARGETS = {"mix-constrained": 5_000}
LOAD_TARGET = 3.0  # seconds for 15,000 objects

RESULTS: dict[str, dict[str, Any]] = {}


def record_engine(benchmark: Any, name: str, runs: Sequence[Any], nodes: int, profile: str,
                  **extra: list[float]) -> None:
    """Keep an engine benchmark's rounds for the summary, and in pytest-benchmark's extra info."""
    result: dict[str, Any] = {
        "pods": runs[0].pods,
        "engine_pods_per_second": [r.engine_pods_per_second for r in runs],
        "scheduling_seconds": [r.scheduling_seconds for r in runs],
        "whole_seconds": [r.whole_seconds for r in runs],
        "whole_pods_per_second": [r.pods / r.whole_seconds for r in runs],
        **extra,
    }
    RESULTS[f"engine:{name}"] = result
    benchmark.extra_info.update({"pods": result["pods"], "nodes": nodes, "profile": profile,
                                 "engine_pods_per_second": result["engine_pods_per_second"],
                                 "scheduling_seconds": result["scheduling_seconds"]})


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--phalanx-rounds", type=int, default=3,
                     help="rounds per Phalanx benchmark (the summary reports the median and the best)")


@pytest.fixture(scope="session")
def rounds(request: pytest.FixtureRequest) -> int:
    return max(1, int(request.config.getoption("--phalanx-rounds")))


@pytest.fixture(scope="session")
def shape_inputs() -> dict[str, Inputs]:
    """Every shape's objects, built once (the engine benchmarks only read them)."""
    return {name: inputs(shape) for name, shape in SHAPES.items()}


def _median(values: list[float]) -> float:
    return float(np.median(values)) if values else 0.0


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not RESULTS:
        return
    write = terminalreporter.write_line
    write("")
    write(f"Phalanx benchmarks (Python {platform.python_version()}, NumPy {np.__version__})")
    engine = {k: v for k, v in RESULTS.items() if k.startswith("engine:")}
    if engine:
        write(f"{'shape':<16}{'pods':>7}{'engine pods/s':>15}{'best':>9}{'whole run s':>13}{'whole pods/s':>14}"
              f"   target {ENGINE_TARGET}")
        for key, r in engine.items():
            median = _median(r["engine_pods_per_second"])
            target = ENGINE_TARGETS.get(key[7:], ENGINE_TARGET)
            verdict = ("met" if median >= target else "MISSED") + ("" if target == ENGINE_TARGET else f" ({target})")
            write(f"{key[7:]:<16}{r['pods']:>7}{median:>15,.0f}{max(r['engine_pods_per_second']):>9,.0f}"
                  f"{_median(r['whole_seconds']):>13.2f}{_median(r['whole_pods_per_second']):>14,.0f}   {verdict}")
        write(f"(kube-scheduler's scheduler_perf floor for 5000Nodes_10000Pods: {KUBE_SCHEDULER_FLOOR} pods/s)")
    load = RESULTS.get("load")
    if load:
        median = _median(load["seconds"])
        verdict = "met" if median < LOAD_TARGET else "MISSED"
        write(f"YAML load: {load['objects']:,} objects, {load['bytes'] / 1e6:.1f} MB in {median:.2f} s median, "
              f"{min(load['seconds']):.2f} s best ({load['objects'] / median:,.0f} objects/s); "
              f"target < {LOAD_TARGET:.0f} s: {verdict}")
    memory = RESULTS.get("memory")
    if memory:
        write(f"memory (tracemalloc, retained): per node {memory['node_object']:,.0f} B as a Node object + "
              f"{memory['node_engine']:,.0f} B in the engine; per pod {memory['pod_object']:,.0f} B as a Pod "
              f"object + {memory['pod_engine']:,.0f} B in the engine and simulator")


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    # The tests' addopts spread them over workers (pytest-xdist) and turn pytest-benchmark's timing off (a test
    # there runs its function once); benchmarks run in one process, timed.
    if getattr(config.option, "numprocesses", None):
        config.option.numprocesses = 0
    config.option.benchmark_enable = True
