"""Memory per node and per pod (tracemalloc: retained bytes after building, NumPy buffers included)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from benchmarks.conftest import RESULTS
from benchmarks.measure import Memory, memory
from benchmarks.synthetic import SHAPES


def test_memory_per_node_and_pod(benchmark: Any) -> None:
    measured: list[Memory] = []
    benchmark.group = "memory"
    benchmark.pedantic(lambda: measured.append(memory(SHAPES["pod-at-a-time"])), rounds=1, iterations=1)
    RESULTS["memory"] = asdict(measured[0])
    benchmark.extra_info.update(RESULTS["memory"])
