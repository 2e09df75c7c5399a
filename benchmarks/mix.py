"""Engine throughput on a realistic mix of pods: many request shapes, some pods with spread or anti-affinity.

    python -m benchmarks.mix                    # both mixes, 3 rounds each, median and best
    python -m benchmarks.mix --rounds 5 --only mix-constrained
    python -m benchmarks.mix --profile mix-shapes   # cProfile over one run, top entries

Two shapes, 5,000 nodes as `benchmarks.synthetic` builds them (scheduler_perf's `node-default.yaml`,
three zones) and 10,000 pending pods under the `default` profile:

- `mix-shapes`: 24 distinct cpu/memory request shapes (100m..1 cpu, 128Mi..2Gi), drawn at random (seeded)
  with uneven frequencies, pods spread over 40 apps (`app: web-NN`), no constraints between pods.
- `mix-constrained`: the same request shapes, and 20% of the pods carry one constraint selecting their own
  `app` label: a topology spread constraint (maxSkew 1, on topology.kubernetes.io/zone or
  kubernetes.io/hostname, DoNotSchedule or ScheduleAnyway) or a pod anti-affinity (required or preferred,
  on kubernetes.io/hostname). Each kind has its own apps (10 apps of about 33 pods per kind).

Everything is deterministic (NumPy's generator with a fixed seed); every pod fits, so every pod binds.
Engine pods/s is pods bound per second inside `Scheduler.schedule` (`benchmarks.measure`), CPU time of the
process (`time.process_time`) is reported beside it, as the machine may be shared.
"""

from __future__ import annotations

import argparse
import cProfile
import platform
import pstats
import statistics
import sys
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from benchmarks.synthetic import NAMESPACE, Shape, node_manifest, pod_manifest
from phalanx.api.objects import Source
from phalanx.api.parse import parse_node, parse_pod
from phalanx.api.resolve import resolve
from phalanx.inputs.load import Inputs
from phalanx.scheduler.profiles import builtin
from phalanx.sim.run import simulate

SEED = 20260501
NODES = 5000
PODS = 10_000
CPU_MILLIS = (100, 150, 200, 250, 300, 400, 500, 750, 1000)
MEMORY_MI = (128, 256, 384, 512, 768, 1024, 1536, 2048)
SHAPE_COUNT = 24
PLAIN_APPS = 40
CONSTRAINED_FRACTION = 0.2
# The constraint kinds of `mix-constrained`, each with its own apps.
KINDS = ("spread-zone-hard", "spread-zone-soft", "spread-host-hard", "spread-host-soft",
         "anti-required", "anti-preferred")
APPS_PER_KIND = 10


@dataclass(frozen=True, slots=True)
class MixShape:
    name: str
    constrained: bool
    nodes: int = NODES
    pods: int = PODS
    profile: str = "default"

    def as_shape(self) -> Shape:
        return Shape(self.name, self.nodes, self.pods, None, self.profile)


MIXES: dict[str, MixShape] = {
    "mix-shapes": MixShape("mix-shapes", constrained=False),
    "mix-constrained": MixShape("mix-constrained", constrained=True),
}


def request_shapes(rng: np.random.Generator) -> list[tuple[int, int]]:
    """SHAPE_COUNT distinct (millicores, MiB) pairs."""
    pairs = [(c, m) for c in CPU_MILLIS for m in MEMORY_MI]
    chosen = rng.choice(len(pairs), size=SHAPE_COUNT, replace=False)
    return [pairs[int(i)] for i in sorted(chosen)]


def _constraint(kind: str, app: str) -> dict[str, Any]:
    """The spec fields of one constraint kind selecting `app`."""
    selector = {"matchLabels": {"app": app}}
    if kind.startswith("spread-"):
        key = "topology.kubernetes.io/zone" if "-zone-" in kind else "kubernetes.io/hostname"
        when = "DoNotSchedule" if kind.endswith("-hard") else "ScheduleAnyway"
        return {"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": key, "whenUnsatisfiable": when,
                                               "labelSelector": selector}]}
    term = {"labelSelector": selector, "topologyKey": "kubernetes.io/hostname"}
    if kind == "anti-required":
        return {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}}
    return {"affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 100, "podAffinityTerm": term}]}}}


def pod_manifests(mix: MixShape, seed: int = SEED) -> list[dict[str, Any]]:
    """The mix's pending pods, in document (arrival) order."""
    rng = np.random.default_rng(seed)
    shapes = request_shapes(rng)
    weights = rng.uniform(0.2, 1.0, size=len(shapes))
    shape_of = rng.choice(len(shapes), size=mix.pods, p=weights / weights.sum())
    plain_app = rng.integers(PLAIN_APPS, size=mix.pods)
    constrained = rng.random(mix.pods) < CONSTRAINED_FRACTION if mix.constrained else np.zeros(mix.pods, bool)
    kind_of = rng.integers(len(KINDS), size=mix.pods)
    app_of = rng.integers(APPS_PER_KIND, size=mix.pods)
    out: list[dict[str, Any]] = []
    for i in range(mix.pods):
        doc = pod_manifest(i)
        cpu, mem = shapes[int(shape_of[i])]
        resources = {"cpu": f"{cpu}m", "memory": f"{mem}Mi"}
        container = doc["spec"]["containers"][0]
        container["resources"] = {"limits": dict(resources), "requests": dict(resources)}
        if constrained[i]:
            kind = KINDS[int(kind_of[i])]
            app = f"{kind}-{int(app_of[i]):02d}"
            doc["spec"].update(_constraint(kind, app))
        else:
            app = f"web-{int(plain_app[i]):02d}"
        doc["metadata"]["labels"] = {"app": app}
        out.append(doc)
    return out


def inputs(mix: MixShape, seed: int = SEED) -> Inputs:
    """The mix's nodes and pods built straight from the manifests (the parsers, no YAML text)."""
    out = Inputs()
    index = 0
    for i in range(mix.nodes):
        index += 1
        out.nodes.append(parse_node(node_manifest(i), Source(f"synthetic/{mix.name}", index)))
    for doc in pod_manifests(mix, seed):
        index += 1
        pod = parse_pod(doc, Source(f"synthetic/{mix.name}", index))
        assert pod is not None and pod.namespace == NAMESPACE
        out.pods.append(pod)
    resolve(out)
    return out


@dataclass(frozen=True, slots=True)
class MixRun:
    pods: int
    scheduling_seconds: float  # wall time inside Scheduler.schedule
    cpu_seconds: float  # process CPU time of the whole run (simulate(...): building and running)
    whole_seconds: float  # wall time of the whole run

    @property
    def engine_pods_per_second(self) -> float:
        return self.pods / self.scheduling_seconds if self.scheduling_seconds else 0.0


def run(mix: MixShape, objects: Inputs) -> MixRun:
    """One simulation of the mix under the default profile; every pod must bind."""
    started, cpu = time.perf_counter(), time.process_time()
    sim = simulate(objects, builtin(mix.profile)).sim
    whole, cpu_used = time.perf_counter() - started, time.process_time() - cpu
    if sim.binds != mix.pods:
        raise AssertionError(f"{mix.name}: {sim.binds} of {mix.pods} pods bound")
    return MixRun(sim.binds, sim.scheduling_seconds, cpu_used, whole)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.mix", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", choices=list(MIXES), action="append")
    parser.add_argument("--profile", choices=list(MIXES), help="cProfile one run of this mix instead")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--sort", default="tottime", choices=["tottime", "cumulative"])
    args = parser.parse_args(argv)
    if args.profile:
        mix = MIXES[args.profile]
        profiler = cProfile.Profile()
        sim = simulate(inputs(mix), builtin(mix.profile), around=profiler.runcall).sim
        print(f"{mix.name}: {sim.binds} pods bound, {sim.scheduling_seconds:.2f} s in Scheduler.schedule (profiled)")
        pstats.Stats(profiler, stream=sys.stdout).strip_dirs().sort_stats(args.sort).print_stats(args.top)
        return 0
    print(f"Python {platform.python_version()}, NumPy {np.__version__}")
    for name in args.only or list(MIXES):
        mix = MIXES[name]
        objects = inputs(mix)
        runs = [run(mix, objects) for _ in range(max(1, args.rounds))]
        rates = [r.engine_pods_per_second for r in runs]
        cpu_rates = [r.pods / r.cpu_seconds for r in runs]
        print(f"{name:<16} {runs[0].pods} pods  engine pods/s median {statistics.median(rates):,.0f} "
              f"best {max(rates):,.0f}  (rounds: {', '.join(f'{x:,.0f}' for x in rates)}); "
              f"whole run median {statistics.median(r.whole_seconds for r in runs):.2f} s wall, "
              f"{statistics.median(r.cpu_seconds for r in runs):.2f} s CPU ({statistics.median(cpu_rates):,.0f} "
              "pods/s CPU)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
