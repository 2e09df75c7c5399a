"""The FGD paper's fragmentation protocol (FGD-PROTOCOL §2–§3), driving the ordinary scheduling engine.

One replay for one seed: the trace's pods in a seeded random order, resampled with replacement (or
thinned at random) until the GPU milli they request reaches `load` × the cluster's GPU capacity; nodes
ordered by a seeded random name prefix (which breaks score ties); then each pod gets exactly one
scheduling attempt through the engine's `SingleAttempts` (scheduler/attempt.py: Filter → Score → select →
Reserve, the pod cycle the simulator and the live driver run). Nothing departs and nothing retries.

After every attempt the driver records the arrived GPU milli (every attempted pod, failed ones too) and
the allocated GPU milli. As the paper's analysis scripts do, `arrive% = round(arrived / (GPUs·10))` and
`alloc% = round(allocated / (GPUs·10), 2)`; the allocation curve at k is the mean alloc% over the
attempts with arrive% = k (or within ±1 when none is exactly k).

Random numbers come from NumPy's Generator seeded with the seed: the paper's simulator draws from Go's
`math/rand`, whose stream cannot be reproduced here, so a seed names a different (equally random) run.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from phalanx.api.objects import Node, Pod
from phalanx.cluster.gpus import MILLI, Fragmentation, TargetWorkload, device_table
from phalanx.cluster.state import ClusterState
from phalanx.errors import InputError
from phalanx.scheduler.attempt import SingleAttempts
from phalanx.scheduler.plugins.gpu_share.stranding import memory_per_gpu
from phalanx.scheduler.profiles import Profile, for_gpu_sharing

FloatArray = npt.NDArray[np.float64]
MAX_K = 130
FULL_LOAD = 100
SEEDED_PLUGINS = ("RandomScore", "GpuShare")
WORKLOAD_PLUGINS = ("FGDScore", "GpuShare", "StrandingScore")


def gpu_milli_of(pod: Pod) -> int:
    """count × milli: what a pod adds to the arrived (and, once bound, the allocated) GPU milli."""
    return 0 if pod.gpu is None else pod.gpu.count * pod.gpu.milli


def per_gpu_milli(pod: Pod) -> int:
    return 0 if pod.gpu is None else pod.gpu.milli


def tune(pods: Sequence[Pod], load: float, capacity_milli: int, rng: np.random.Generator) -> list[Pod]:
    """Shuffle, then resample (with replacement, clones appended) or thin until load × capacity (§2.4–5)."""
    by_name = sorted(pods, key=lambda p: p.name)
    order = rng.permutation(len(by_name))
    out = [by_name[i] for i in order]
    target = load * capacity_milli
    requested = sum(gpu_milli_of(p) for p in out)
    if requested < target and by_name:
        clones = 0
        while True:
            pick = by_name[int(rng.integers(len(by_name)))]
            if requested + per_gpu_milli(pick) > target:
                break
            clones += 1
            out.append(dataclasses.replace(pick, name=f"{pick.name}-tuned-{clones}", source=None))
            requested += gpu_milli_of(pick)
    else:
        while requested > target and out:
            gone = out.pop(int(rng.integers(len(out))))
            requested -= gpu_milli_of(gone)
    return out


def prefixed_nodes(nodes: Sequence[Node], rng: np.random.Generator) -> list[Node]:
    """Nodes sorted by name get the random prefix perm[i] (`0457-…`); returned in prefix order, so the
    lowest node index (the "first" tie-break) is the smallest name, as in the paper's simulator."""
    by_name = sorted(nodes, key=lambda n: n.name)
    perm = rng.permutation(len(by_name))
    width = max(4, len(str(max(len(by_name) - 1, 0))))
    renamed = [dataclasses.replace(node, name=f"{int(p):0{width}d}-{node.name}")
               for node, p in zip(by_name, perm, strict=True)]
    return sorted(renamed, key=lambda n: n.name)


def seeded_profile(profile: Profile, seed: int, workload: TargetWorkload,
                   pods: Sequence[Pod] = ()) -> Profile:
    """A copy of the profile (its GPU-sharing form, `for_gpu_sharing`) whose random plugins use this seed
    and whose FGD parts use the trace's target workload, and StrandingScore the memory per GPU of the
    trace's typical pods (arguments a profile file sets itself are kept)."""
    profile = for_gpu_sharing(profile)
    args = {name: dict(values) for name, values in profile.plugin_args.items()}
    used = {*profile.filters, *profile.scores, *profile.reserve}
    for name in used:
        if name in SEEDED_PLUGINS:
            args.setdefault(name, {}).setdefault("seed", seed)
        if name in WORKLOAD_PLUGINS:
            args.setdefault(name, {}).setdefault("targetWorkload", workload)
    if "StrandingScore" in used and "memoryPerGpu" not in args.get("StrandingScore", {}):
        args.setdefault("StrandingScore", {})["memoryPerGpu"] = memory_per_gpu(pods, workload)
    return dataclasses.replace(profile, plugin_args=args, filters=list(profile.filters),
                               scores=dict(profile.scores), reserve=list(profile.reserve),
                               feature_gates=dict(profile.feature_gates))


def allocation_curve(arrived: npt.NDArray[np.int64], allocated: npt.NDArray[np.int64], gpus: int,
                     max_k: int = MAX_K) -> list[float | None]:
    """alloc% at arrive% = k for k = 0..max_k (merge_alloc_discrete.py), None where no attempt is near."""
    arrive_pct = np.round(arrived / (gpus * 10.0))
    alloc_pct = np.round(allocated / (gpus * 10.0), 2)
    curve: list[float | None] = []
    for k in range(max_k + 1):
        chosen = arrive_pct == k
        if not chosen.any():
            chosen = np.abs(arrive_pct - k) <= 1
        curve.append(float(alloc_pct[chosen].mean()) if chosen.any() else None)
    return curve


@dataclass(slots=True)
class ReplayResult:
    seed: int
    gpus: int
    capacity_milli: int
    pods: int
    bound: int
    failed_by_kind: dict[str, int]
    arrived: npt.NDArray[np.int64]  # after 0, 1, … attempts
    allocated: npt.NDArray[np.int64]
    allocated_fraction: dict[str, float]
    seconds: float  # wall clock, tuning and metrics included
    cpu_seconds: float  # this process's CPU time (what a busy shared machine does not inflate)
    load: float
    fragmentation: dict[str, float | None] = field(default_factory=dict)
    curve: list[float | None] = field(default_factory=list)

    @property
    def end_k(self) -> int:
        return round(self.load * 100)

    def alloc_pct_at(self, k: int) -> float | None:
        return self.curve[k] if 0 <= k < len(self.curve) else None

    @property
    def unallocated_gpus(self) -> float:
        """GPUs left unallocated at the end of the run (alloc% at k = 100·load, as the paper reads it)."""
        pct = self.alloc_pct_at(self.end_k)
        if pct is None:
            return (self.capacity_milli - int(self.allocated[-1])) / MILLI
        return self.gpus * (100.0 - pct) / 100.0

    @property
    def allocation_at_full_load(self) -> float | None:
        """GPU allocation ratio (0..1) when arrived requests reach 100 % of capacity."""
        pct = self.alloc_pct_at(FULL_LOAD)
        return None if pct is None else pct / 100.0

    def describe(self) -> dict[str, Any]:
        at_full = self.allocation_at_full_load
        return {
            "seed": self.seed,
            "unallocatedGpus": round(self.unallocated_gpus, 4),
            "gpuAllocationAtFullLoad": None if at_full is None else round(at_full, 6),
            "unallocatedGpusAtFullLoad": None if at_full is None else round(self.gpus * (1 - at_full), 4),
            "unallocatedGpusFinal": (self.capacity_milli - int(self.allocated[-1])) / MILLI,
            "pods": {"total": self.pods, "running": self.bound, "pending": 0, "succeeded": 0,
                     "failed": self.pods - self.bound, "failedByKind": dict(self.failed_by_kind)},
            "arrivedGpuMilli": int(self.arrived[-1]),
            "allocatedGpuMilli": int(self.allocated[-1]),
            "allocated": dict(self.allocated_fraction),
            "fragmentationPercent": dict(self.fragmentation),
            "replaySeconds": round(self.seconds, 4),
            "replayCpuSeconds": round(self.cpu_seconds, 4),
            "allocationCurve": self.curve,
        }


def _kind(pod: Pod) -> str:
    if pod.gpu is None or pod.gpu.count == 0:
        return "cpuOnly"
    if pod.gpu.count == 1 and pod.gpu.milli < MILLI:
        return "sharedGpu"
    return "wholeGpu"


def replay_fragmentation(nodes: Sequence[Node], pods: Sequence[Pod], profile: Profile, seed: int,
                         load: float = 1.3, workload: TargetWorkload | None = None) -> ReplayResult:
    """One replay of the protocol (GPU nodes only: pass `OpenbTrace.gpu_nodes`)."""
    if load <= 0:
        raise InputError("must be positive", field="--load")
    started = time.perf_counter()
    cpu_started = time.process_time()
    if workload is None:
        workload = TargetWorkload.from_pods(pods)
    rng = np.random.default_rng(seed)
    gpus = sum(n.allocatable.get("alibabacloud.com/gpu-count", 0) for n in nodes)
    capacity = gpus * MILLI
    if capacity == 0:
        raise InputError("the cluster has no GPU: the fragmentation protocol needs GPU nodes", field="--nodes")
    queue = tune(pods, load, capacity, rng)
    cluster = ClusterState(prefixed_nodes(nodes, rng))
    table = device_table(cluster)
    attempts = SingleAttempts(seeded_profile(profile, seed, workload, pods), cluster, seed)
    frag = Fragmentation(workload, table)
    arrived = np.zeros(len(queue) + 1, dtype=np.int64)
    allocated = np.zeros(len(queue) + 1, dtype=np.int64)
    failed = {"cpuOnly": 0, "sharedGpu": 0, "wholeGpu": 0}
    a = u = bound = 0
    full_load_frag: float | None = None
    full_threshold = (FULL_LOAD - 0.5) * gpus * 10.0
    for i, pod in enumerate(queue, start=1):
        need = gpu_milli_of(pod)
        a += need
        if attempts.place(pod) is None:
            failed[_kind(pod)] += 1
        else:
            u += need
            bound += 1
        arrived[i] = a
        allocated[i] = u
        if full_load_frag is None and a >= full_threshold:
            full_load_frag = 100.0 * float(frag.of_nodes(cluster, table).sum()) / capacity
    seconds = time.perf_counter() - started
    cpu_seconds = time.process_time() - cpu_started
    end_frag = 100.0 * float(frag.of_nodes(cluster, table).sum()) / capacity
    fractions: dict[str, float] = {}
    for name in ("cpu", "memory"):
        col = cluster.column[name]
        total = int(cluster.allocatable[:, col].sum())
        fractions[name] = round(int(cluster.requested[:, col].sum()) / total, 6) if total else 0.0
    fractions["gpu"] = round(u / capacity, 6)
    result = ReplayResult(seed=seed, gpus=gpus, capacity_milli=capacity, pods=len(queue), bound=bound,
                          failed_by_kind=failed, arrived=arrived, allocated=allocated,
                          allocated_fraction=fractions, seconds=seconds, cpu_seconds=cpu_seconds, load=load,
                          fragmentation={"atFullLoad": None if full_load_frag is None else round(full_load_frag, 4),
                                         "atEnd": round(end_frag, 4)})
    result.curve = allocation_curve(arrived, allocated, gpus, max(MAX_K, result.end_k))
    return result
