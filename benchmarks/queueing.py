"""Queueing profiles on Kueue's scheduler performance test shape: 15,000 workloads, 5,000 nodes.

The same input runs under `kueue`, `gang` (no admission) and `volcano`.

Run from the repository root:

    python -m benchmarks.queueing              # 15,000 workloads, 5,000 nodes (target: each run under 30 s)
    python -m benchmarks.queueing --quick      # a tenth of the size (a smoke run)
    python -m benchmarks.queueing --workloads 3000 --nodes 1000 --json
    python -m benchmarks.queueing --profiles kueue --profile kueue   # plus a cProfile of the kueue run

The shape restates Kueue's own scalability test (test/performance/scheduler, its baseline generator
config): one ResourceFlavor; 5 cohorts, each of 6 ClusterQueues covering cpu with a nominal quota of 20 and
a borrowing limit of 100, preempting `withinClusterQueue: LowerPriority` and `reclaimWithinCohort: Any`;
one LocalQueue per ClusterQueue, in a namespace of its own. Each ClusterQueue receives three streams of
one-pod workloads, created concurrently at a fixed interval:

    class    count  every   runs   priority  cpu
    small      350  0.1 s   0.2 s        50    1
    medium     100  0.5 s   0.5 s       100    5
    large       50  1.2 s   1.0 s       200   20

500 workloads a ClusterQueue, 15,000 in all (the offered load is about 1.1 times the nominal quota, so the
queues back up and large workloads preempt). Kueue's test creates Workload objects directly and fakes their
run; here each workload is what a user submits: a batch/v1 Job (parallelism 1) whose template asks the
class's cpu, with the class's PriorityClass, `phalanx.dev/arrival` and `phalanx.dev/duration`, the
LocalQueue label `kueue.x-k8s.io/queue-name` and the Volcano annotation `scheduling.volcano.sh/queue-name`.
The Volcano side has one Queue per ClusterQueue: weight = its nominal quota in cpus (its share), capability
= nominal + borrowing limit (the most the ClusterQueue may hold). Nodes are scheduler_perf's default node
(benchmarks.synthetic) enlarged to 32 cpu and 128Gi so a large workload's pod fits; the quotas, not the
nodes, bound what runs, as in Kueue's test. `--workloads` scales the streams' counts (their proportions
kept), `--nodes` the cluster.

Timed, each on its own, wall and CPU seconds: `load_paths` on the YAML List (what `phalanx simulate`
reads), then `simulate(inputs, builtin(p), scenario=scenario_for(p))` for p in kueue, gang, volcano. For each
run: workloads
admitted, admission decisions (admitted + evicted) per second of time spent inside the policy's `cycle`
(the gate's `policy.cycle`, wrapped with a timer) and per second of the whole run, pods bound, workloads
evicted by admission, pods evicted.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import platform
import pstats
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import yaml

from benchmarks.synthetic import node_manifest
from phalanx.inputs.load import Inputs, load_paths
from phalanx.scheduler.profiles import builtin
from phalanx.sim.run import simulate
from phalanx.sim.scenario import scenario_for
from phalanx.sim.simulation import Simulation

_Dumper: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
TARGET_SECONDS = 30.0
PROFILES = ("kueue", "gang", "volcano", "kai", "yunikorn")
KUEUE = "kueue.x-k8s.io/v1beta2"
VOLCANO = "scheduling.volcano.sh/v1beta1"
KAI = "scheduling.run.ai/v2"
FLAVOR = "rf"
COHORTS = 5
QUEUES_PER_COHORT = 6
NOMINAL_CPU = 20
BORROWING_LIMIT_CPU = 100
NODE_CPU = "32"
NODE_MEMORY = "128Gi"


@dataclass(frozen=True, slots=True)
class WorkloadClass:
    """One stream of workloads per ClusterQueue (Kueue's workloadsSets entry)."""

    name: str
    count: int  # per ClusterQueue at full size
    interval: float  # seconds between creations
    runtime: float  # seconds each runs
    priority: int
    cpu: int


CLASSES = (
    WorkloadClass("small", 350, 0.1, 0.2, 50, 1),
    WorkloadClass("medium", 100, 0.5, 0.5, 100, 5),
    WorkloadClass("large", 50, 1.2, 1.0, 200, 20),
)
FULL_WORKLOADS = COHORTS * QUEUES_PER_COHORT * sum(c.count for c in CLASSES)  # 15,000


def _seconds(value: float) -> str:
    return f"{round(value * 1000)}ms"


def queue_objects() -> list[dict[str, Any]]:
    """The ResourceFlavor, Cohorts, ClusterQueues, LocalQueues and the equivalent Volcano Queues."""
    docs: list[dict[str, Any]] = [{"apiVersion": KUEUE, "kind": "ResourceFlavor", "metadata": {"name": FLAVOR},
                                   "spec": {}}]
    for c in range(COHORTS):
        cohort = f"cohort-{c}"
        docs.append({"apiVersion": KUEUE, "kind": "Cohort", "metadata": {"name": cohort}, "spec": {}})
        for q in range(QUEUES_PER_COHORT):
            name = cluster_queue_name(c, q)
            docs.append({"apiVersion": KUEUE, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": {
                "cohortName": cohort, "namespaceSelector": {},
                "preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"},
                "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [{"name": FLAVOR, "resources": [
                    {"name": "cpu", "nominalQuota": str(NOMINAL_CPU),
                     "borrowingLimit": str(BORROWING_LIMIT_CPU)}]}]}],
            }})
            docs.append({"apiVersion": KUEUE, "kind": "LocalQueue", "metadata": {"name": name, "namespace": name},
                         "spec": {"clusterQueue": name}})
            docs.append({"apiVersion": VOLCANO, "kind": "Queue", "metadata": {"name": name}, "spec": {
                "weight": NOMINAL_CPU, "reclaimable": True,
                "capability": {"cpu": str(NOMINAL_CPU + BORROWING_LIMIT_CPU)}}})
            docs.append(kai_queue(name, cohort, NOMINAL_CPU, NOMINAL_CPU + BORROWING_LIMIT_CPU))
        docs.append(kai_queue(cohort, None, NOMINAL_CPU * QUEUES_PER_COHORT, None))
    docs.append(yunikorn_configs())
    return docs


def kai_queue(name: str, parent: str | None, quota_cpu: int, limit_cpu: int | None) -> dict[str, Any]:
    """A KAI Queue (cpu in millicores as KAI reads it): a ClusterQueue's nominal quota as its quota and nominal
    plus borrowing limit as its limit; a cohort as the parent queue."""
    unlimited = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
    cpu = {"quota": quota_cpu * 1000, "limit": -1 if limit_cpu is None else limit_cpu * 1000, "overQuotaWeight": 1}
    spec: dict[str, Any] = {"resources": {"cpu": cpu, "memory": unlimited, "gpu": dict(unlimited, quota=0)}}
    if parent is not None:
        spec["parentQueue"] = parent
    return {"apiVersion": KAI, "kind": "Queue", "metadata": {"name": name}, "spec": spec}


def yunikorn_configs() -> dict[str, Any]:
    """YuniKorn's queues.yaml: a parent queue per cohort, a leaf per ClusterQueue guaranteed its nominal quota
    with nominal plus borrowing limit as its max; the `provided` rule places each Job by its `queue` label."""
    cohorts = [{"name": f"cohort-{c}", "queues": [
        {"name": cluster_queue_name(c, q), "resources": {
            "guaranteed": {"vcore": str(NOMINAL_CPU)}, "max": {"vcore": str(NOMINAL_CPU + BORROWING_LIMIT_CPU)}}}
        for q in range(QUEUES_PER_COHORT)]} for c in range(COHORTS)]
    conf = {"partitions": [{"name": "default", "placementrules": [{"name": "provided"}],
                            "queues": [{"name": "root", "submitacl": "*", "queues": cohorts}]}]}
    # One line of flow YAML: a block scalar in the List would send the whole file to PyYAML's slow path.
    text = yaml.dump(conf, Dumper=_Dumper, sort_keys=False, default_flow_style=True, width=1 << 30).strip()
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "yunikorn-configs", "namespace": "yunikorn"},
            "data": {"queues.yaml": text}}


def _cohort_of(queue: str) -> str:
    return f"cohort-{queue.split('-')[1]}"


def cluster_queue_name(cohort: int, queue: int) -> str:
    return f"cq-{cohort}-{queue}"


def priority_classes() -> list[dict[str, Any]]:
    return [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": c.name},
             "preemptionPolicy": "PreemptLowerPriority", "value": c.priority} for c in CLASSES]


def job_manifest(queue: str, cls: WorkloadClass, index: int, arrival: float) -> dict[str, Any]:
    """One workload: a one-pod Job in the LocalQueue's namespace, queued for both Kueue and Volcano."""
    cpu = str(cls.cpu)
    return {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {
            "name": f"{cls.name}-{index:04d}", "namespace": queue,
            "labels": {"kueue.x-k8s.io/queue-name": queue, "kai.scheduler/queue": queue, "app": "queueing-bench",
                       "class": cls.name},
            "annotations": {"scheduling.volcano.sh/queue-name": queue, "phalanx.dev/arrival": _seconds(arrival),
                            "phalanx.dev/duration": _seconds(cls.runtime)},
        },
        "spec": {"parallelism": 1, "completions": 1, "backoffLimit": 0, "template": {
            # YuniKorn reads its queue and application from the pods
            "metadata": {"labels": {"app": "queueing-bench", "class": cls.name,
                                    "queue": f"root.{_cohort_of(queue)}.{queue}",
                                    "applicationId": f"{queue}-{cls.name}-{index:04d}"}},
            "spec": {"priorityClassName": cls.name, "restartPolicy": "Never", "containers": [{
                "name": "work", "image": "registry.k8s.io/pause:3.10.1",
                "resources": {"requests": {"cpu": cpu}, "limits": {"cpu": cpu}}}]},
        }},
    }


def nodes(count: int) -> list[dict[str, Any]]:
    out = []
    for i in range(count):
        node = node_manifest(i)
        for key in ("allocatable", "capacity"):
            node["status"][key].update({"cpu": NODE_CPU, "memory": NODE_MEMORY})
        node["metadata"]["labels"]["node.kubernetes.io/instance-type"] = "m5.8xlarge"
        out.append(node)
    return out


def jobs(workloads: int) -> list[dict[str, Any]]:
    """The workloads' Jobs, in arrival order; each class's count per ClusterQueue scaled to `workloads`."""
    scale = workloads / FULL_WORKLOADS
    timed: list[tuple[float, int, dict[str, Any]]] = []
    serial = 0
    for c in range(COHORTS):
        for q in range(QUEUES_PER_COHORT):
            queue = cluster_queue_name(c, q)
            for cls in CLASSES:
                for i in range(max(1, round(cls.count * scale))):
                    arrival = (i + 1) * cls.interval
                    timed.append((arrival, serial, job_manifest(queue, cls, i, arrival)))
                    serial += 1
    timed.sort(key=lambda t: (t[0], t[1]))
    return [doc for _, _, doc in timed]


def manifests(workloads: int, node_count: int) -> list[dict[str, Any]]:
    """The List's items: nodes, PriorityClasses, queueing objects, then the Jobs in arrival order."""
    return [*nodes(node_count), *priority_classes(), *queue_objects(), *jobs(workloads)]


def write(path: str, items: list[dict[str, Any]]) -> int:
    document = {"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": ""}}
    with open(path, "w", encoding="utf-8") as handle:
        yaml.dump(document, handle, Dumper=_Dumper, default_flow_style=False, sort_keys=True, width=1 << 30)
    return os.path.getsize(path)


@dataclass(slots=True)
class Run:
    """One profile's whole run."""

    profile: str
    wall: float
    cpu: float
    admitted: int | None
    evicted: int | None  # workloads evicted by the admission policy
    cycle_seconds: float | None  # inside the policy's cycle calls
    cycle_calls: int | None
    bound: int
    pod_evictions: int
    preemptions: int
    end_time: float

    @property
    def decisions(self) -> int | None:
        return None if self.admitted is None or self.evicted is None else self.admitted + self.evicted

    @property
    def decisions_per_cycle_second(self) -> float | None:
        if self.decisions is None or not self.cycle_seconds:
            return None
        return self.decisions / self.cycle_seconds

    @property
    def decisions_per_wall_second(self) -> float | None:
        return None if self.decisions is None else self.decisions / self.wall

    def as_json(self) -> dict[str, Any]:
        def rounded(value: float | None, digits: int = 4) -> float | None:
            return None if value is None else round(value, digits)

        return {"profile": self.profile, "wallSeconds": rounded(self.wall), "cpuSeconds": rounded(self.cpu),
                "admitted": self.admitted, "evicted": self.evicted, "decisions": self.decisions,
                "cycleSeconds": rounded(self.cycle_seconds), "cycleCalls": self.cycle_calls,
                "decisionsPerCycleSecond": rounded(self.decisions_per_cycle_second, 1),
                "decisionsPerWallSecond": rounded(self.decisions_per_wall_second, 1),
                "podsBound": self.bound, "podEvictions": self.pod_evictions, "preemptions": self.preemptions,
                "simulatedSeconds": rounded(self.end_time), "meetsTarget": self.wall < TARGET_SECONDS}


def run(inputs: Inputs, profile: str) -> Run:
    """`simulate(inputs, builtin(profile), scenario=scenario_for(profile))`, timed, with a timer around the
    policy's cycle."""
    spent = [0.0, 0]

    def time_cycles(sim: Simulation) -> None:
        if sim.gate is None:
            return
        cycle: Callable[[float], Any] = sim.gate.policy.cycle

        def timed_cycle(now: float) -> Any:
            began = time.perf_counter()
            try:
                return cycle(now)
            finally:
                spent[0] += time.perf_counter() - began
                spent[1] += 1

        sim.gate.policy.cycle = timed_cycle  # type: ignore[method-assign]

    started, cpu = time.perf_counter(), time.process_time()
    sim = simulate(inputs, builtin(profile), scenario=scenario_for(profile), setup=[time_cycles]).sim
    gate = sim.gate
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    return Run(profile, wall, cpu,
               admitted=None if gate is None else gate.admitted, evicted=None if gate is None else gate.evicted,
               cycle_seconds=None if gate is None else spent[0],
               cycle_calls=None if gate is None else int(spent[1]),
               bound=sim.binds, pod_evictions=sim.evictions, preemptions=sim.preemptions, end_time=sim.end_time)


def _fmt(value: float | int | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.queueing", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a tenth of the size")
    parser.add_argument("--workloads", type=int, default=FULL_WORKLOADS, help="workloads in all (default 15,000)")
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--profiles", default=",".join(PROFILES),
                        help="comma-separated (default: kueue,gang,volcano,kai,yunikorn)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON too")
    parser.add_argument("--profile", metavar="PROFILE", choices=PROFILES,
                        help="also print a cProfile of one more run under PROFILE (top functions)")
    args = parser.parse_args(argv)
    workloads, node_count = ((args.workloads // 10, args.nodes // 10) if args.quick
                             else (args.workloads, args.nodes))
    items = manifests(workloads, node_count)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "queueing.yaml")
        size = write(path, items)
        started, cpu = time.perf_counter(), time.process_time()
        inputs = load_paths([path])
        load_wall, load_cpu = time.perf_counter() - started, time.process_time() - cpu
    runs = [run(inputs, p.strip()) for p in args.profiles.split(",") if p.strip()]

    print(f"# {platform.python_implementation()} {platform.python_version()}, {platform.machine()}, "
          f"{os.cpu_count()} cpu, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"# {len(inputs.jobs)} workloads (Jobs) in {COHORTS} cohorts x {QUEUES_PER_COHORT} ClusterQueues, "
          f"{len(inputs.nodes)} nodes, {len(inputs.queue_docs)} queueing objects; YAML {size / 2**20:.1f} MiB")
    print(f"load_paths: {load_wall:.2f} s wall, {load_cpu:.2f} s CPU")
    header = (f"{'profile':<8} {'wall s':>7} {'CPU s':>7} {'admitted':>8} {'evicted':>7} {'cycle s':>7} "
              f"{'dec/s (cycle)':>13} {'dec/s (wall)':>12} {'bound':>6} {'pod evict':>9} {'sim s':>7}  target")
    print(header)
    for r in runs:
        verdict = "meets" if r.wall < TARGET_SECONDS else "MISSES"
        print(f"{r.profile:<8} {r.wall:7.2f} {r.cpu:7.2f} {_fmt(r.admitted, 'd'):>8} {_fmt(r.evicted, 'd'):>7} "
              f"{_fmt(r.cycle_seconds, '.2f'):>7} {_fmt(r.decisions_per_cycle_second, ',.0f'):>13} "
              f"{_fmt(r.decisions_per_wall_second, ',.0f'):>12} {r.bound:>6} {r.pod_evictions:>9} "
              f"{r.end_time:7.1f}  {verdict} (< {TARGET_SECONDS:.0f} s)")
    if args.profile:
        profiler = cProfile.Profile()
        profiler.runcall(run, inputs, args.profile)
        stats = pstats.Stats(profiler)
        stats.sort_stats("tottime").print_stats(20)
        stats.sort_stats("cumulative").print_stats(30)
    if args.json:
        print(json.dumps({"workloads": len(inputs.jobs), "nodes": len(inputs.nodes), "yamlBytes": size,
                          "load": {"wallSeconds": round(load_wall, 4), "cpuSeconds": round(load_cpu, 4)},
                          "targetSeconds": TARGET_SECONDS, "runs": [r.as_json() for r in runs]}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
