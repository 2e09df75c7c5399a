"""FGDScore: fragmentation gradient descent (FGD-PROTOCOL §4). Place the pod where the node's expected
fragmentation under the target workload grows least: score = int(100·σ((F_before − F_after)/1000)).

A sharing pod (one GPU, less than 1000 milli) tries every GPU with room and keeps the best (the first
one on ties), which is also the GPU it reserves; other pods take the lowest-free fitting GPUs. A CPU-only
pod only lowers the node's free CPU. The integer truncation stays: it creates ties that the node order
breaks, and the paper's numbers depend on it.

Speed: a node's score for a pod shape depends only on that node's free CPU and GPUs, and one placement
changes one node, so scores are cached per (shape, node) and recomputed only for nodes whose state
changed since (stamped by the GPU table's per-node version and the free CPU). Nodes in equal states
are evaluated once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import numpy as np

from phalanx.cluster.gpus import MILLI, Fragmentation, GpuTable, PodShape, TargetWorkload, device_table, pod_shape
from phalanx.cluster.state import ClusterState
from phalanx.scheduler.framework import CycleState, IntArray
from phalanx.scheduler.plugins.gpu_share.common import cpu_free, workload_arg

FloatArray = np.ndarray[Any, np.dtype[np.float64]]
K = TypeVar("K")
E = TypeVar("E")
_DEDUPE_FROM = 48  # evaluate distinct node states once when this many nodes are stale


def fgd_score(delta: FloatArray) -> IntArray:
    """int(100·σ(ΔF/1000)), truncated as Go's int64() does."""
    with np.errstate(over="ignore"):
        sigma = 1.0 / (1.0 + np.exp(-(delta / 1000.0)))
    return np.asarray(np.trunc(sigma * 100.0), dtype=np.int64)


def fragmentation_gain(frag: Fragmentation, shape: PodShape, cpu: IntArray, free: IntArray,
                       model: np.ndarray[Any, np.dtype[np.int32]]) -> tuple[IntArray, IntArray | None, FloatArray]:
    """F_before − F_after of placing `shape` on nodes in the given states: for a sharing pod one entry per
    (node, GPU) with room (the candidates' node rows and GPU columns), otherwise one per node (GPUs taken
    least free first; the columns are None)."""
    rows = cpu.shape[0]
    cand_i: IntArray | None = None
    if shape.sharing:
        cand_r, cand_i = np.nonzero(free >= shape.milli)
        after_free = free[cand_r]
        after_free[np.arange(cand_r.size), cand_i] -= shape.milli
        after_cpu = cpu[cand_r] - shape.cpu
        after_model = model[cand_r]
    else:
        cand_r = np.arange(rows)
        after_free = free.copy()
        if shape.count > 0 and shape.milli > 0:
            key = np.where(free >= shape.milli, free, MILLI + 1)
            order = np.argsort(key, axis=1, kind="stable")[:, : shape.count]
            after_free[cand_r[:, None], order] -= shape.milli
        after_cpu = cpu - shape.cpu
        after_model = model
    # One pass over the states before and after placement.
    both = frag.amount(np.concatenate([cpu, after_cpu]), np.concatenate([free, after_free]),
                       np.concatenate([model, after_model]))
    return cand_r, cand_i, np.asarray(both[:rows][cand_r] - both[rows:], dtype=np.float64)


def evaluate(frag: Fragmentation, shape: PodShape, cpu: IntArray, free: IntArray,
             model: np.ndarray[Any, np.dtype[np.int32]]) -> tuple[IntArray, IntArray]:
    """Scores and reserved GPU (-1 unless sharing) of placing `shape` on nodes in the given states."""
    rows = cpu.shape[0]
    cand_r, cand_i, gain = fragmentation_gain(frag, shape, cpu, free, model)
    score = fgd_score(gain)
    if cand_i is None:
        return score, np.full(rows, -1, dtype=np.int64)
    grid = np.full(free.shape, -1, dtype=np.int64)
    grid[cand_r, cand_i] = score
    best = np.asarray(grid.argmax(axis=1), dtype=np.int64)
    return np.maximum(grid[np.arange(rows), best], 0), best


@dataclass(slots=True)
class _Entry:
    score: IntArray
    gpu: IntArray
    version: IntArray
    cpu: IntArray


class ScoreCache(Generic[K, E]):
    """Per-node score entries kept for one GPU table, and the fragmentation measure under the target workload;
    both start afresh when the table is another one or changes size."""

    def __init__(self, workload: TargetWorkload | None) -> None:
        self.workload = workload
        self._table: GpuTable | None = None
        self._size = -1
        self._width = -1
        self._frag: dict[PodShape | None, Fragmentation] = {}
        self._entries: dict[K, E] = {}

    def _sync(self, table: GpuTable) -> None:
        if table is not self._table or len(table) != self._size or table.width != self._width:
            self._table = table
            self._size = len(table)
            self._width = table.width
            self._frag.clear()
            self._entries.clear()

    def fragmentation(self, table: GpuTable, shape: PodShape) -> Fragmentation:
        """The measure under the target workload (or, without one, under this pod's own shape)."""
        self._sync(table)
        key = None if self.workload is not None else shape
        frag = self._frag.get(key)
        if frag is None:
            workload = self.workload if self.workload is not None else TargetWorkload((shape,), (1.0,))
            frag = Fragmentation(workload, table)
            self._frag[key] = frag
        return frag


class FgdEngine(ScoreCache[PodShape, _Entry]):
    """FGD scores per (pod shape, node), cached and refreshed for changed nodes only."""

    def scores(self, cluster: ClusterState, table: GpuTable, shape: PodShape,
               nodes: IntArray) -> tuple[IntArray, IntArray]:
        frag = self.fragmentation(table, shape)
        entry = self._entries.get(shape)
        if entry is None:
            n = len(table)
            entry = _Entry(np.zeros(n, dtype=np.int64), np.full(n, -1, dtype=np.int64),
                           np.full(n, -1, dtype=np.int64), np.zeros(n, dtype=np.int64))
            self._entries[shape] = entry
        version = table.version[nodes]
        cpu = cpu_free(cluster, nodes)
        stale = (entry.version[nodes] != version) | (entry.cpu[nodes] != cpu)
        if stale.any():
            idx = nodes[stale]
            score, gpu = self._evaluate(frag, shape, cpu[stale], table, idx)
            entry.score[idx] = score
            entry.gpu[idx] = gpu
            entry.version[idx] = version[stale]
            entry.cpu[idx] = cpu[stale]
        return entry.score[nodes], entry.gpu[nodes]

    @staticmethod
    def _evaluate(frag: Fragmentation, shape: PodShape, cpu: IntArray, table: GpuTable,
                  idx: IntArray) -> tuple[IntArray, IntArray]:
        free = table.free[idx]
        model = table.model[idx]
        if idx.size < _DEDUPE_FROM:
            return evaluate(frag, shape, cpu, free, model)
        states = np.column_stack([model.astype(np.int64), cpu, free])
        unique, inverse = np.unique(states, axis=0, return_inverse=True)
        inverse = inverse.reshape(-1)
        score, gpu = evaluate(frag, shape, unique[:, 1], unique[:, 2:], unique[:, 0].astype(np.int32))
        return score[inverse], gpu[inverse]

    def best_gpu(self, cluster: ClusterState, table: GpuTable, shape: PodShape, node: int,
                 cpu_already_taken: bool = True) -> int:
        """The GPU a sharing pod takes on `node`: the one FGD scored best (first on ties). Reserve runs
        after the pod's CPU was assumed on the node, so that CPU is given back for the comparison."""
        frag = self.fragmentation(table, shape)
        idx = np.array([node], dtype=np.int64)
        cpu = cpu_free(cluster, idx) + (shape.cpu if cpu_already_taken else 0)
        _, gpu = evaluate(frag, shape, cpu, table.free[idx], table.model[idx])
        return int(gpu[0])


class FGDScore:
    name = "FGDScore"

    def __init__(self, args: Mapping[str, Any] | None = None) -> None:
        self.engine = FgdEngine(workload_arg(args, self.name))

    def score(self, state: CycleState, cluster: ClusterState, nodes: IntArray) -> IntArray:
        table = device_table(cluster)
        return self.engine.scores(cluster, table, pod_shape(state.pod), nodes)[0]
