"""Preemption: PreemptionAsync/5000Nodes (5,000 preemptors against 20,000 running low-priority pods) and
workload-aware preemption of a 100-pod gang against 1,000 victims on 100 nodes. What is measured and the
numbers: docs/benchmarks.md, "Preemption"; the same runs standalone: `python -m benchmarks.preemption`."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.preemption import Run, gang_preemption_cluster, pod_preemption_cluster, timed_schedule
from phalanx.scheduler.decisions import Evict, Preemption
from phalanx.scheduler.scheduler import Scheduler


def test_pod_preemption_5000_nodes(benchmark: Any, rounds: int) -> None:
    runs: list[Run] = []

    def one(scheduler: Scheduler) -> None:
        runs.append(timed_schedule(scheduler))

    benchmark.group = "preemption"
    benchmark.pedantic(one, setup=lambda: ((pod_preemption_cluster(),), {}), rounds=rounds, iterations=1)
    best = min(runs, key=lambda r: r.seconds)
    assert best.count(Preemption) == 5000 and best.count(Evict) == 15_000
    benchmark.extra_info.update({"preemptors": 5000, "cpu_seconds": best.seconds,
                                 "preemptors_per_second": 5000 / best.seconds,
                                 "post_filter_seconds": best.post_filter})


@pytest.mark.parametrize("all_groups", [False, True], ids=["pod-victims", "all-group-victims"])
def test_gang_preemption_100_pods(benchmark: Any, rounds: int, all_groups: bool) -> None:
    runs: list[Run] = []

    def one(scheduler: Scheduler) -> None:
        runs.append(timed_schedule(scheduler))

    benchmark.group = "preemption"
    benchmark.pedantic(one, setup=lambda: ((gang_preemption_cluster(all_groups=all_groups),), {}),
                       rounds=rounds, iterations=1)
    best = min(runs, key=lambda r: r.seconds)
    assert best.count(Preemption) == 1 and best.count(Evict) >= 700
    benchmark.extra_info.update({"cpu_seconds": best.seconds, "evictions": best.count(Evict)})
