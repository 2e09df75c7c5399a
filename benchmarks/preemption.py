"""Preemption benchmarks: kube-scheduler's PreemptionAsync shape, and workload-aware gang preemption.

Run from the repository root:

    python -m benchmarks.preemption            # both, full size
    python -m benchmarks.preemption --quick    # a tenth of the size (a smoke run)

1. **pod preemption** (scheduler_perf `default_preemption` PreemptionAsync/5000Nodes): 5,000 nodes of
   scheduler_perf's `node-default.yaml` (4 cpu, 32Gi, 110 pods), each running four low-priority pods of
   `pod-low-priority.yaml` (900m, 500Mi, priority 0: 3.6 of 4 cpu used, 20,000 pods), then 5,000
   preemptors of `pod-high-priority.yaml` (3000m, 500Mi, priority 10), each of which must evict three of the
   four pods on some node. Timed: `Scheduler.schedule()` over all 5,000 preemptors (the failed pod cycle,
   its diagnosis, PostFilter and the decisions), and apart from it the PostFilter calls alone.
   kube-scheduler's threshold for this test is 570 pods/s; Phalanx's target is 2,000 preemptors/s.
2. **gang preemption**: 100 nodes each running ten low-priority pods of 300m (3 of 4 cpu used, 1,000
   victims), and one PodGroup (`gang` profile, `minCount: 100`) of 100 pods of 3 cpu at priority 10: the
   group cycle fails, workload-aware preemption searches the whole cluster, evicts seven pods per node and
   reprieves three. Timed: the one `Scheduler.schedule()` call. A second variant puts the victims in 100
   `disruptionMode: all` groups of ten pods spread over ten nodes each.

Each run prints one line per measurement and, with `--json`, the numbers as JSON.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import platform
import pstats
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from phalanx.api.objects import GroupPolicy, Node, Pod, PodGroup
from phalanx.scheduler import preemption
from phalanx.scheduler.profiles import builtin
from phalanx.scheduler.scheduler import Evict, Nominate, Preemption, Scheduler

MI = 1024 * 1024
GI = 1024 * MI


def _node(i: int) -> Node:
    name = f"node-{i:05d}"
    return Node(name=name, allocatable={"cpu": 4000, "memory": 32 * GI, "pods": 110},
                labels={"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": f"zone-{i % 3}"})


def _pod(name: str, cpu: int, memory: int, priority: int, *, namespace: str = "bench",
         group: str | None = None, grace: float = 0.0) -> Pod:
    return Pod(namespace=namespace, name=name, requests={"cpu": cpu, "memory": memory}, priority=priority,
               explicit_priority=priority, pod_group=group, termination_grace=grace, controller="ReplicaSet")


@dataclass(slots=True)
class Result:
    name: str
    seconds: float
    count: int
    unit: str
    extra: dict[str, Any]

    @property
    def rate(self) -> float:
        return self.count / self.seconds if self.seconds > 0 else 0.0

    def line(self) -> str:
        more = ", ".join(f"{k}={v}" for k, v in self.extra.items())
        return f"{self.name:<34} {self.seconds * 1000:10.1f} ms  {self.rate:10.1f} {self.unit}/s  ({more})"


def _timed_post_filter(scheduler: Scheduler) -> Callable[[], float]:
    """Wrap the Preemptor's entry points to add up the time spent in them; returns a reader."""
    spent = [0.0]
    for attr in ("for_pod", "for_group"):
        original = getattr(scheduler.preemptor, attr)

        def wrapped(*args: Any, _original: Any = original) -> Any:
            started = time.process_time()
            try:
                return _original(*args)
            finally:
                spent[0] += time.process_time() - started

        setattr(scheduler.preemptor, attr, wrapped)
    return lambda: spent[0]


def pod_preemption(nodes: int = 5000, per_node: int = 4, preemptors: int = 5000,
                   profile: bool = False) -> list[Result]:
    """PreemptionAsync/5000Nodes: 20,000 running low-priority pods, 5,000 high-priority preemptors."""
    scheduler = Scheduler(builtin("default"), [_node(i) for i in range(nodes)], seed=1)
    for i in range(nodes):
        for j in range(per_node):
            scheduler.add_pod(_pod(f"low-{i:05d}-{j}", 900, 500 * MI, 0), 0.0, node=f"node-{i:05d}")
    for k in range(preemptors):
        scheduler.add_pod(_pod(f"high-{k:05d}", 3000, 500 * MI, 10), 0.0)
    post_filter = _timed_post_filter(scheduler)
    profiler = cProfile.Profile() if profile else None
    started = time.process_time()
    if profiler is not None:
        profiler.enable()
    decisions = scheduler.schedule(0.0)
    if profiler is not None:
        profiler.disable()
    seconds = time.process_time() - started
    if profiler is not None:
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)
    evictions = sum(isinstance(d, Evict) for d in decisions)
    decided = sum(isinstance(d, Preemption) for d in decisions)
    nominated = sum(isinstance(d, Nominate) for d in decisions)
    extra = {"preemptions": decided, "evictions": evictions, "nominated": nominated,
             "overcommitted": int(scheduler.cluster.overcommitted().sum())}
    return [Result(f"pod preemption {nodes} nodes", seconds, preemptors, "preemptors", extra),
            Result("  of it PostFilter alone", post_filter(), preemptors, "preemptors", {})]


def gang_preemption(nodes: int = 100, per_node: int = 10, gang: int = 100, all_groups: bool = False,
                    profile: bool = False) -> Result:
    """One 100-pod gang (3 cpu each) against 1,000 low-priority victims (300m each) on 100 nodes."""
    scheduler = Scheduler(builtin("gang"), [_node(i) for i in range(nodes)], seed=1)
    if all_groups:
        for g in range(nodes * per_node // 10):
            scheduler.add_pod_group(PodGroup("victims", f"victim-{g:04d}", GroupPolicy("gang", 10),
                                             priority=0, disruption_mode="all"), 0.0)
    for i in range(nodes):
        for j in range(per_node):
            group = f"victim-{(j * nodes + i) // 10:04d}" if all_groups else None  # ten nodes per group
            scheduler.add_pod(_pod(f"low-{i:04d}-{j}", 300, 100 * MI, 0, namespace="victims", group=group),
                              0.0, node=f"node-{i:05d}")
    scheduler.add_pod_group(PodGroup("train", "gang", GroupPolicy("gang", gang), priority=10), 0.0)
    for k in range(gang):
        scheduler.add_pod(_pod(f"worker-{k:03d}", 3000, 100 * MI, 10, namespace="train", group="gang"), 0.0)
    profiler = cProfile.Profile() if profile else None
    started = time.process_time()
    if profiler is not None:
        profiler.enable()
    decisions = scheduler.schedule(0.0)
    if profiler is not None:
        profiler.disable()
    seconds = time.process_time() - started
    if profiler is not None:
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)
    evictions = sum(isinstance(d, Evict) for d in decisions)
    nominated = sum(isinstance(d, Nominate) for d in decisions)
    name = f"gang preemption {gang} pods{' (all groups)' if all_groups else ''}"
    return Result(name, seconds, 1, "groups", {"evictions": evictions, "nominated": nominated})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.preemption", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a tenth of the size")
    parser.add_argument("--profile", action="store_true", help="print a cProfile of each run")
    parser.add_argument("--json", action="store_true", help="print the results as JSON too")
    parser.add_argument("--only", choices=("pod", "gang"), help="run one benchmark")
    args = parser.parse_args(argv)
    scale = 10 if args.quick else 1
    results: list[Result] = []
    if args.only in (None, "pod"):
        results += pod_preemption(5000 // scale, 4, 5000 // scale, profile=args.profile)
    if args.only in (None, "gang"):
        results.append(gang_preemption(100 // scale if scale > 1 else 100, 10, 100 // scale,
                                       profile=args.profile))
        results.append(gang_preemption(100 // scale if scale > 1 else 100, 10, 100 // scale, all_groups=True,
                                       profile=args.profile))
    print(f"# {platform.python_implementation()} {platform.python_version()}, numpy {np.__version__}, "
          f"{platform.machine()}, preemption module {preemption.__name__}")
    for result in results:
        print(result.line())
    if args.json:
        print(json.dumps([{"name": r.name.strip(), "seconds": round(r.seconds, 6), "count": r.count,
                           "perSecond": round(r.rate, 1), **r.extra} for r in results], indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
