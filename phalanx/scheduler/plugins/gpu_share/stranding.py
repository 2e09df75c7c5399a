"""StrandingScore: FGD's fragmentation gradient plus a stranding term (docs/fragmentation.md, *Stranding*).

FGD judges a node by which typical pod shapes still fit it; it does not see memory at all, and it counts a
node's idle GPUs as usable as long as the smallest typical pods fit, even when the node's CPU or memory
left could feed only a few of them. The stranding term charges a placement for the GPU milli it leaves
without the CPU or memory to use it, judged against the target workload's own ratios:

    usable_n  = min(cpu_n / r_cpu, mem_n / r_mem) · 1000   (milli; r: a share of the CPU and memory
                                                            per whole GPU of the workload)
    S_n       = max(idle_n − usable_n, 0)                  (stranded idle GPU milli)
    score     = int(100 · σ(((F_before − F_after) − w · (S_after − S_before)) / 1000))

F is FGD's measure under the target workload (`phalanx.cluster.gpus.Fragmentation`); r_cpu is
`ratioScale` × the mean CPU per GPU of its GPU shapes (popularity-weighted) and r_mem `ratioScale` × the
`memoryPerGpu` argument (the trace replay passes the mean memory per GPU of the trace's typical GPU pods,
`memory_per_gpu`; without it memory is not judged). `strandingWeight` w is 2 and `ratioScale` 0.75 unless
set (tuned on the openb traces, docs/fragmentation.md): the mean per GPU is pulled up by CPU-heavy
whole-GPU pods, and most shares need far less.

A sharing pod tries every GPU with room as FGD does; S does not depend on which GPU, so the GPU it
reserves is FGD's choice. The integer truncation stays, for the same reason as FGD's.

Pods without GPUs get FGD's score alone. They need CPU wherever they go and FGD already steers them off
the CPU that typical GPU pods need; charging them for stranding as well sent them onto nodes whose CPU
the next GPU pods needed (on the cpu250 trace, 2.5 times the CPU-only pods, w = 2, full ratios, two
seeds: 427 unallocated GPUs against FGD's 411, and 301 with the term for GPU pods only).

Scores are cached per (pod shape and memory request, node) and refreshed for nodes whose devices, free
CPU or free memory changed, as `FgdEngine` does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from phalanx.api.objects import Pod
from phalanx.cluster.gpus import MILLI, Fragmentation, GpuTable, PodShape, TargetWorkload, device_table, pod_shape
from phalanx.cluster.state import ClusterState
from phalanx.errors import InputError
from phalanx.scheduler.framework import CycleState, IntArray
from phalanx.scheduler.plugins.gpu_share.common import cpu_free, workload_arg
from phalanx.scheduler.plugins.gpu_share.fgd import FloatArray, ScoreCache, fgd_score, fragmentation_gain

DEFAULT_WEIGHT = 2.0
DEFAULT_RATIO_SCALE = 0.75
_DEDUPE_FROM = 48  # evaluate distinct node states once when this many nodes are stale


def cpu_per_gpu(workload: TargetWorkload) -> float | None:
    """Mean mCPU per whole GPU of the workload's GPU shapes, weighted by popularity (None: no GPU shape)."""
    cpu = gpus = 0.0
    for shape, p in zip(workload.shapes, workload.popularity, strict=True):
        if shape.count > 0 and shape.milli > 0:
            cpu += p * shape.cpu
            gpus += p * shape.count * shape.milli / MILLI
    return cpu / gpus if gpus > 0 else None


def memory_per_gpu(pods: Iterable[Pod], workload: TargetWorkload) -> float | None:
    """Mean memory (bytes) per whole GPU of the GPU pods whose shape is typical in `workload` (the target
    workload keeps no memory, so it is read from the pods themselves). None: no such pod."""
    typical = {s for s in workload.shapes if s.count > 0 and s.milli > 0}
    memory = gpus = 0.0
    for pod in pods:
        shape = pod_shape(pod)
        if shape in typical:
            memory += float(pod.requests.get("memory", 0))
            gpus += shape.count * shape.milli / MILLI
    return memory / gpus if gpus > 0 else None


def _number(args: Mapping[str, Any], key: str, plugin: str, default: float | None) -> float | None:
    value = args.get(key, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise InputError("must be a number, 0 or more", field=f"pluginConfig[{plugin}].args.{key}")
    return float(value)


def stranded(cpu: IntArray, memory: IntArray, idle: IntArray, cpu_ratio: float | None,
             memory_ratio: float | None) -> FloatArray:
    """Idle GPU milli the node's free CPU and memory cannot feed at the workload's ratios."""
    usable = np.full(idle.shape, np.inf)
    if cpu_ratio:
        usable = np.minimum(usable, np.maximum(cpu, 0) * (MILLI / cpu_ratio))
    if memory_ratio:
        usable = np.minimum(usable, np.maximum(memory, 0) * (MILLI / memory_ratio))
    return np.asarray(np.maximum(idle - usable, 0.0), dtype=np.float64)


def frag_gain(frag: Fragmentation, shape: PodShape, cpu: IntArray, free: IntArray,
              model: np.ndarray[Any, np.dtype[np.int32]]) -> FloatArray:
    """F_before − F_after of placing `shape` on nodes in the given states; for a sharing pod the best over
    its fitting GPUs (−inf where none fits), as FGD scores it."""
    rows = cpu.shape[0]
    cand_r, _, gain = fragmentation_gain(frag, shape, cpu, free, model)
    if not shape.sharing:
        return gain
    best = np.full(rows, -np.inf)
    np.maximum.at(best, cand_r, gain)
    return best


@dataclass(slots=True)
class _Entry:
    score: IntArray
    version: IntArray
    cpu: IntArray
    memory: IntArray


class StrandingEngine(ScoreCache[tuple[PodShape, int], _Entry]):
    """Stranding-aware FGD scores per (pod shape, node), cached and refreshed for changed nodes only."""

    def __init__(self, workload: TargetWorkload | None, weight: float = DEFAULT_WEIGHT,
                 cpu_ratio: float | None = None, memory_ratio: float | None = None,
                 scale: float = DEFAULT_RATIO_SCALE) -> None:
        """`cpu_ratio` (mCPU) and `memory_ratio` (bytes) per whole GPU, before `scale`; without `cpu_ratio`,
        the target workload's (or, without one, each pod's own shape's)."""
        super().__init__(workload)
        self.weight = weight
        self.scale = scale
        if cpu_ratio is None and workload is not None:
            cpu_ratio = cpu_per_gpu(workload)
        self.cpu_ratio = None if cpu_ratio is None else cpu_ratio * scale
        self.memory_ratio = None if memory_ratio is None else memory_ratio * scale

    def evaluate(self, frag: Fragmentation, shape: PodShape, memory_request: int, cpu: IntArray,
                 memory: IntArray, free: IntArray, model: np.ndarray[Any, np.dtype[np.int32]]) -> IntArray:
        """Scores of placing a pod (`shape`, `memory_request` bytes) on nodes in the given states."""
        gain = frag_gain(frag, shape, cpu, free, model)
        if shape.count == 0 or shape.milli == 0:
            return fgd_score(gain)
        cpu_ratio = self.cpu_ratio
        if cpu_ratio is None:
            own = cpu_per_gpu(frag.workload)
            cpu_ratio = None if own is None else own * self.scale
        idle = free.sum(axis=1)
        before = stranded(cpu, memory, idle, cpu_ratio, self.memory_ratio)
        after = stranded(cpu - shape.cpu, memory - memory_request, idle - shape.count * shape.milli, cpu_ratio,
                         self.memory_ratio)
        with np.errstate(invalid="ignore"):
            delta = gain - self.weight * (after - before)
        return np.where(np.isfinite(delta), fgd_score(np.nan_to_num(delta, neginf=0.0)), 0)

    def scores(self, cluster: ClusterState, table: GpuTable, pod: Pod, nodes: IntArray) -> IntArray:
        shape = pod_shape(pod)
        memory_request = int(pod.requests.get("memory", 0))
        key = (shape, memory_request)
        frag = self.fragmentation(table, shape)
        entry = self._entries.get(key)
        if entry is None:
            n = len(table)
            entry = _Entry(np.zeros(n, dtype=np.int64), np.full(n, -1, dtype=np.int64), np.zeros(n, dtype=np.int64),
                           np.zeros(n, dtype=np.int64))
            self._entries[key] = entry
        version = table.version[nodes]
        cpu = cpu_free(cluster, nodes)
        mem_col = cluster.column["memory"]
        memory = np.asarray(cluster.allocatable[nodes, mem_col] - cluster.requested[nodes, mem_col])
        stale = (entry.version[nodes] != version) | (entry.cpu[nodes] != cpu) | (entry.memory[nodes] != memory)
        if stale.any():
            idx = nodes[stale]
            entry.score[idx] = self._evaluate(frag, shape, memory_request, cpu[stale], memory[stale], table, idx)
            entry.version[idx] = version[stale]
            entry.cpu[idx] = cpu[stale]
            entry.memory[idx] = memory[stale]
        return np.asarray(entry.score[nodes], dtype=np.int64)

    def _evaluate(self, frag: Fragmentation, shape: PodShape, memory_request: int, cpu: IntArray,
                  memory: IntArray, table: GpuTable, idx: IntArray) -> IntArray:
        free = table.free[idx]
        model = table.model[idx]
        if idx.size < _DEDUPE_FROM:
            return self.evaluate(frag, shape, memory_request, cpu, memory, free, model)
        states = np.column_stack([model.astype(np.int64), cpu, memory, free])
        unique, inverse = np.unique(states, axis=0, return_inverse=True)
        score = self.evaluate(frag, shape, memory_request, unique[:, 1], unique[:, 2], unique[:, 3:],
                              unique[:, 0].astype(np.int32))
        return np.asarray(score[inverse.reshape(-1)], dtype=np.int64)


class StrandingScore:
    name = "StrandingScore"

    def __init__(self, args: Mapping[str, Any] | None = None) -> None:
        values = args or {}
        weight = _number(values, "strandingWeight", self.name, DEFAULT_WEIGHT)
        scale = _number(values, "ratioScale", self.name, DEFAULT_RATIO_SCALE)
        self.engine = StrandingEngine(workload_arg(args, self.name),
                                      DEFAULT_WEIGHT if weight is None else weight,
                                      _number(values, "cpuPerGpu", self.name, None),
                                      _number(values, "memoryPerGpu", self.name, None),
                                      DEFAULT_RATIO_SCALE if scale is None else scale)

    def score(self, state: CycleState, cluster: ClusterState, nodes: IntArray) -> IntArray:
        return self.engine.scores(cluster, device_table(cluster), state.pod, nodes)
