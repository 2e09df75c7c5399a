"""Gang placement on tight, fragmented clusters: v1.37's greedy group cycle (`gang`) against exact placement
(`phalanx`), for heterogeneous gangs that are known to fit.

Run from the repository root:

    python -m benchmarks.gang_placement              # 5,000 nodes, 10,000 gangs (about a minute)
    python -m benchmarks.gang_placement --quick      # 1,000 nodes, 60 gangs (a smoke run)
    python -m benchmarks.gang_placement --gangs 500 --seed 3 --members-per-size 12 --fragment-cpu 16 --json

The cluster: 5,000 nodes of 64 cpu, 256Gi and 110 pods, each already running one pod that leaves a fragment
free: 0–7 cpu and 0–31Gi (uniform, independent; `--fragment-cpu F` makes it 0..F−1 cpu and 0..4F−1 Gi), so
what is left is scattered in small pieces. A gang has members of 2–5 different sizes (cpu drawn from 1, 2,
3, 4, 6, 8, 12, 16, 24 and 32, with 2, 4 or 8 Gi of memory per cpu), 1–4 members of each size
(`--members-per-size`), under a PodGroup with minCount = all of them, members named
in a shuffled order (the group cycle takes them by name). Its placement is made first: the members, largest
first, are packed into host nodes (first fit, a node holding up to 64 cpu and 256Gi of members), and each
host node's running pod is then resized so that its free room is exactly the load of the members planned
for it. Every gang is therefore placeable, and only just: no host node has room to spare, and no fragment
fits a member of more than 7 cpu (by default). Each gang is tried on its own (its host nodes set up, the group cycle
run inside a trial that is then undone, the host nodes restored), with a different random set of host
nodes each time.

Measured per profile: the share of gangs placed, the share left undecided (exact placement's budget ran
out; `phalanx` only), and the decision time per gang, i.e. the wall time of `schedule_group` (the v1.37
group cycle and, for `phalanx` when that fails, exact placement with the Filter checks and Reserve of the
members). Every placement is checked for over-committed nodes. Targets for `phalanx`: 100% placed, at most
0.5% undecided, median at most 20 ms, p99 at most 150 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from phalanx.api.objects import Node, Pod, PodGroup, Source
from phalanx.api.parse import parse_node, parse_pod, parse_pod_group
from phalanx.cluster.state import ClusterState
from phalanx.scheduler.cycle import PodCycle
from phalanx.scheduler.gang import schedule_group
from phalanx.scheduler.profiles import builtin

PROFILES = ("gang", "phalanx")
NODE_CPU, NODE_GIB, NODE_PODS = 64, 256, 110
FRAGMENT_CPU = 8  # a fragment has 0..FRAGMENT_CPU-1 cpu and 0..4·FRAGMENT_CPU-1 Gi free
MEMBERS_PER_SIZE = 4
SIZES = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32)  # member cpu
GIB_PER_CPU = (2, 4, 8)
GIB = 2**30
NAMESPACE = "bench"
SOURCE = Source("benchmarks/gang_placement", 0)
TARGETS = {"placed": 1.0, "undecided": 0.005, "p50": 0.020, "p99": 0.150}


def node(i: int) -> Node:
    return parse_node({"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"node-{i:05d}"},
                       "status": {"allocatable": {"cpu": str(NODE_CPU), "memory": f"{NODE_GIB}Gi",
                                                  "pods": str(NODE_PODS)}}}, SOURCE)


def pod(name: str, cpu_m: int, memory: int, group: str | None = None) -> Pod:
    spec: dict[str, Any] = {"containers": [{"name": "main", "image": "registry.example.com/train:v1",
                                            "resources": {"requests": {"cpu": f"{cpu_m}m", "memory": str(memory)}}}]}
    if group is not None:
        spec["schedulingGroup"] = {"podGroupName": group}
    parsed = parse_pod({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NAMESPACE},
                        "spec": spec}, SOURCE)
    assert parsed is not None
    return parsed


@dataclass(slots=True)
class Gang:
    group: PodGroup
    members: list[Pod]
    hosts: dict[int, tuple[int, int]]  # host node -> (cpu millicores, memory bytes) of its planned members


def make_gang(rng: np.random.Generator, index: int, nodes: int, per_size: int) -> Gang:
    kinds = int(rng.integers(2, 6))
    cpus = sorted((int(c) for c in rng.choice(SIZES, size=kinds, replace=False)), reverse=True)
    shapes = [(c * 1000, c * int(rng.choice(GIB_PER_CPU)) * GIB) for c in cpus]
    planned = [shape for shape in shapes for _ in range(int(rng.integers(1, per_size + 1)))]
    # The known placement: first fit, largest first, into host nodes of a node's whole capacity.
    loads: list[list[int]] = []
    for cpu_m, memory in planned:
        for load in loads:
            if load[0] + cpu_m <= NODE_CPU * 1000 and load[1] + memory <= NODE_GIB * GIB and load[2] < NODE_PODS - 1:
                load[0], load[1], load[2] = load[0] + cpu_m, load[1] + memory, load[2] + 1
                break
        else:
            loads.append([cpu_m, memory, 1])
    hosts = rng.choice(nodes, size=len(loads), replace=False)
    name = f"gang-{index:05d}"
    group = parse_pod_group({"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
                             "metadata": {"name": name, "namespace": NAMESPACE},
                             "spec": {"schedulingPolicy": {"gang": {"minCount": len(planned)}}}}, SOURCE)
    order = rng.permutation(len(planned))
    members = [pod(f"{name}-{int(rank):02d}", *planned[i], group=name) for rank, i in zip(order, range(len(planned)),
                                                                                          strict=True)]
    members.sort(key=lambda p: p.key)  # the group cycle's order for members of one priority and arrival
    return Gang(group, members, {int(h): (load[0], load[1]) for h, load in zip(hosts, loads, strict=True)})


@dataclass(slots=True)
class Bench:
    """The fragmented cluster: one running pod per node (the `filler`), resized on a gang's host nodes."""

    cluster: ClusterState
    fillers: list[Pod]
    cycles: dict[str, PodCycle]

    @classmethod
    def build(cls, nodes: int, rng: np.random.Generator, fragment_cpu: int) -> Bench:
        cluster = ClusterState([node(i) for i in range(nodes)])
        free_cpu = rng.integers(0, fragment_cpu, size=nodes) * 1000
        free_gib = rng.integers(0, 4 * fragment_cpu, size=nodes)
        fillers = []
        for i in range(nodes):
            filler = pod(f"filler-{i:05d}", NODE_CPU * 1000 - int(free_cpu[i]), (NODE_GIB - int(free_gib[i])) * GIB)
            cluster.assume(filler, i)
            fillers.append(filler)
        cycles = {name: PodCycle(builtin(name), cluster, seed=0) for name in PROFILES}
        return cls(cluster, fillers, cycles)

    def host(self, gang: Gang) -> dict[int, Pod]:
        """Resize the host nodes' fillers so each has exactly its planned members' room; returns the originals."""
        saved = {}
        for n, (cpu_m, memory) in gang.hosts.items():
            saved[n] = self.fillers[n]
            self.cluster.forget(self.fillers[n].key)
            filler = pod(f"filler-{n:05d}", NODE_CPU * 1000 - cpu_m, NODE_GIB * GIB - memory)
            self.cluster.assume(filler, n)
            self.fillers[n] = filler
        return saved

    def restore(self, saved: dict[int, Pod]) -> None:
        for n, filler in saved.items():
            self.cluster.forget(self.fillers[n].key)
            self.cluster.assume(filler, n)
            self.fillers[n] = filler


@dataclass(slots=True)
class Tally:
    placed: int = 0
    undecided: int = 0
    infeasible: int = 0
    seconds: list[float] = field(default_factory=list)
    hard_seconds: list[float] = field(default_factory=list)  # gangs the v1.37 cycle failed
    cpu_seconds: list[float] = field(default_factory=list)
    methods: dict[str, int] = field(default_factory=dict)

    def summary(self, gangs: int) -> dict[str, Any]:
        times = np.asarray(self.seconds)
        hard = np.asarray(self.hard_seconds) if self.hard_seconds else np.zeros(1)
        return {"gangs": gangs, "placed": self.placed, "placedShare": round(self.placed / gangs, 4),
                "undecided": self.undecided, "undecidedShare": round(self.undecided / gangs, 4),
                "provenInfeasible": self.infeasible,
                "p50Ms": round(float(np.percentile(times, 50)) * 1000, 2),
                "p99Ms": round(float(np.percentile(times, 99)) * 1000, 2),
                "maxMs": round(float(times.max()) * 1000, 2),
                "hardGangs": len(self.hard_seconds),
                "hardP50Ms": round(float(np.percentile(hard, 50)) * 1000, 2),
                "hardP99Ms": round(float(np.percentile(hard, 99)) * 1000, 2),
                "meanCpuMs": round(float(np.mean(self.cpu_seconds)) * 1000, 2)}


def run(nodes: int, gangs: int, seed: int, budget: float | None = None, per_size: int = MEMBERS_PER_SIZE,
        fragment_cpu: int = FRAGMENT_CPU) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    import ortools.sat.python.cp_model  # noqa: F401  (imported once per process; not part of a decision)

    started = time.perf_counter()
    bench = Bench.build(nodes, rng, fragment_cpu)
    if budget is not None:
        settings = bench.cycles["phalanx"].profile.exact_placement
        assert settings is not None
        bench.cycles["phalanx"].profile.exact_placement = type(settings)(budget, settings.seed)
    built = time.perf_counter() - started
    tallies = {name: Tally() for name in PROFILES}
    sizes: list[int] = []
    for g in range(gangs):
        gang = make_gang(rng, g, nodes, per_size)
        sizes.append(len(gang.members))
        saved = bench.host(gang)
        for name in PROFILES:
            tally = tallies[name]
            with bench.cluster.trial():  # never kept: the next profile and gang see the same cluster
                wall, cpu = time.perf_counter(), time.process_time()
                outcome = schedule_group(bench.cycles[name], gang.group, gang.members, 0)
                tally.seconds.append(time.perf_counter() - wall)
                if outcome.exact is not None or not outcome.success:
                    tally.hard_seconds.append(tally.seconds[-1])
                tally.cpu_seconds.append(time.process_time() - cpu)
                if outcome.success:
                    assert len(outcome.placed) == len(gang.members)
                    assert not bench.cluster.overcommitted().any(), f"{name} over-committed a node for {gang.group.key}"
                    tally.placed += 1
                how = f"{outcome.exact} by {outcome.exact_method}" if outcome.exact else \
                    "v1.37 cycle" if outcome.success else "failed"
                tally.methods[how] = tally.methods.get(how, 0) + 1
                tally.undecided += outcome.exact == "undecided"
                tally.infeasible += outcome.exact == "infeasible"
        bench.restore(saved)
    return {"nodes": nodes, "gangs": gangs, "seed": seed, "membersPerSize": per_size, "fragmentCpu": fragment_cpu,
            "buildSeconds": round(built, 2),
            "membersMedian": float(np.median(sizes)), "membersMax": int(max(sizes)),
            "seconds": round(time.perf_counter() - started, 1),
            "profiles": {name: {**tallies[name].summary(gangs), "outcomes": tallies[name].methods}
                         for name in PROFILES},
            "python": platform.python_version(), "cpus": os.cpu_count(), "loadAverage": os.getloadavg()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.gang_placement", description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--gangs", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--budget", type=float, default=None, help="exact placement's budget in seconds")
    parser.add_argument("--members-per-size", type=int, default=MEMBERS_PER_SIZE,
                        help="a gang has 1 to this many members of each size")
    parser.add_argument("--fragment-cpu", type=int, default=FRAGMENT_CPU,
                        help="fragments have 0 to this many cpu (exclusive) free")
    parser.add_argument("--quick", action="store_true", help="1,000 nodes and 60 gangs")
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON")
    args = parser.parse_args(argv)
    nodes, gangs = (1000, 60) if args.quick else (args.nodes, args.gangs)
    load_before = os.getloadavg()
    result = run(nodes, gangs, args.seed, args.budget, args.members_per_size, args.fragment_cpu)
    result["loadAverageBefore"] = load_before
    print(f"{gangs} placeable gangs ({result['membersMedian']:g} members median, {result['membersMax']} max) on "
          f"{nodes} fragmented nodes, seed {args.seed}; {result['seconds']} s in all, load average "
          f"{load_before[0]:.1f} before and {result['loadAverage'][0]:.1f} after on {result['cpus']} cpus")
    for name, r in result["profiles"].items():
        print(f"  {name:8} placed {100 * r['placedShare']:5.1f}%  undecided {100 * r['undecidedShare']:4.1f}%  "
              f"decision p50 {r['p50Ms']:.2f} ms  p99 {r['p99Ms']:.2f} ms  max {r['maxMs']:.2f} ms")
        print(f"           the {r['hardGangs']} gangs the v1.37 cycle failed: p50 {r['hardP50Ms']:.2f} ms  "
              f"p99 {r['hardP99Ms']:.2f} ms  ({', '.join(f'{k}: {v}' for k, v in sorted(r['outcomes'].items()))})")
    ours = result["profiles"]["phalanx"]
    met = (ours["placedShare"] >= TARGETS["placed"] and ours["undecidedShare"] <= TARGETS["undecided"]
           and ours["p50Ms"] <= TARGETS["p50"] * 1000 and ours["p99Ms"] <= TARGETS["p99"] * 1000)
    print(f"  phalanx targets (100% placed, <= 0.5% undecided, p50 <= 20 ms, p99 <= 150 ms): "
          f"{'met' if met else 'missed'}")
    if args.json:
        print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
