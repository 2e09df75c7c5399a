"""Queueing profiles on Kueue's scheduler performance test shape, at a tenth of the size (1,500 workloads in
5 cohorts of 6 ClusterQueues, 500 nodes). What is measured and the full-size numbers: docs/benchmarks.md,
"Queueing profiles (kueue, volcano)"; the same runs standalone: `python -m benchmarks.queueing`."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.queueing import FULL_WORKLOADS, Run, manifests, run, write
from phalanx.inputs.load import Inputs, load_paths

WORKLOADS = FULL_WORKLOADS // 10
NODES = 500


@pytest.fixture(scope="session")
def queueing_inputs(tmp_path_factory: pytest.TempPathFactory) -> Inputs:
    path = tmp_path_factory.mktemp("queueing") / "queueing.yaml"
    write(str(path), manifests(WORKLOADS, NODES))
    return load_paths([str(path)])


@pytest.mark.parametrize("profile", ["kueue", "volcano"])
def test_queueing(benchmark: Any, queueing_inputs: Inputs, rounds: int, profile: str) -> None:
    runs: list[Run] = []

    def one() -> None:
        runs.append(run(queueing_inputs, profile))

    benchmark.group = "queueing"
    benchmark.pedantic(one, rounds=rounds, iterations=1, warmup_rounds=0)
    best = min(runs, key=lambda r: r.wall)
    assert best.admitted is not None and best.admitted >= WORKLOADS and best.bound >= WORKLOADS
    benchmark.extra_info.update({"workloads": WORKLOADS, "nodes": NODES, "admitted": best.admitted,
                                 "evicted": best.evicted, "cycle_seconds": best.cycle_seconds,
                                 "decisions_per_cycle_second": best.decisions_per_cycle_second,
                                 "decisions_per_wall_second": best.decisions_per_wall_second})
