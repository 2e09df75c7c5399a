"""What the benchmarks measure, as plain functions (the pytest files and `benchmarks.profile` share them).

Engine throughput is pods bound per second of time spent inside `Scheduler.schedule` (the simulation's
`stats.schedulingSeconds`); the whole run adds building the Scheduler, the event queue and the
simulator's own bookkeeping. Memory is measured with tracemalloc (Python objects and NumPy buffers
alike, as NumPy reports its allocations to tracemalloc): bytes still allocated after building a thing,
divided by how many nodes or pods it holds.
"""

from __future__ import annotations

import gc
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from benchmarks.synthetic import Shape, node_manifest, pod_manifest
from phalanx.api.objects import Source
from phalanx.api.parse import parse_node, parse_pod
from phalanx.inputs.load import Inputs
from phalanx.scheduler.profiles import builtin
from phalanx.scheduler.scheduler import Scheduler
from phalanx.sim.run import simulate
from phalanx.sim.simulation import Simulation


@dataclass(frozen=True, slots=True)
class EngineRun:
    pods: int  # pods bound
    scheduling_seconds: float  # inside Scheduler.schedule
    whole_seconds: float  # simulate(...): building and running, the whole run

    @property
    def engine_pods_per_second(self) -> float:
        return self.pods / self.scheduling_seconds if self.scheduling_seconds else 0.0

    @property
    def whole_pods_per_second(self) -> float:
        return self.pods / self.whole_seconds if self.whole_seconds else 0.0


def run_engine(shape: Shape, objects: Inputs) -> EngineRun:
    """One simulation of the shape under its profile; every pod fits, so every pod binds."""
    started = time.perf_counter()
    sim = simulate(objects, builtin(shape.profile)).sim
    whole = time.perf_counter() - started
    if sim.binds != shape.pod_count:
        raise AssertionError(f"{shape.name}: {sim.binds} of {shape.pod_count} pods bound")
    return EngineRun(sim.binds, sim.scheduling_seconds, whole)


def _retained(build: Callable[[], Any]) -> tuple[Any, int]:
    """What `build` returns, and the bytes it keeps allocated (tracemalloc) while it is alive."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        value = build()
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    return value, after - before


@dataclass(frozen=True, slots=True)
class Memory:
    node_object: float  # a parsed Node (phalanx.api.objects.Node), bytes
    node_engine: float  # what a Scheduler keeps per node (ClusterState arrays, labels, names), bytes
    pod_object: float  # a parsed Pod, bytes
    pod_engine: float  # what a simulation keeps per bound pod (scheduler, cluster, simulator records), bytes


def memory(shape: Shape) -> Memory:
    """Bytes per node and per pod for the shape (tracemalloc, retained sizes)."""
    nodes, node_bytes = _retained(lambda: [parse_node(node_manifest(i), Source("m", i)) for i in range(shape.nodes)])
    pods, pod_bytes = _retained(lambda: [parse_pod(pod_manifest(i), Source("m", i)) for i in range(shape.pods)])
    profile = builtin(shape.profile)
    _, scheduler_bytes = _retained(lambda: Scheduler(profile, nodes))
    objects = Inputs(nodes=nodes, pods=[p for p in pods if p is not None])

    def simulated() -> Simulation:
        return simulate(objects, profile).sim

    sim, sim_bytes = _retained(simulated)
    if sim.binds != len(objects.pods):
        raise AssertionError(f"{sim.binds} of {len(objects.pods)} pods bound")
    return Memory(node_object=node_bytes / shape.nodes, node_engine=scheduler_bytes / shape.nodes,
                  pod_object=pod_bytes / len(objects.pods),
                  pod_engine=(sim_bytes - scheduler_bytes) / len(objects.pods))
