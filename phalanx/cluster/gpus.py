"""Shared-GPU device state: per node, per GPU, the free thousandths of a GPU (milli), as one NumPy table.

kube-scheduler counts `nvidia.com/gpu`-like extended resources per node; sharing a GPU between pods needs
the state of each device. `GpuTable` keeps it as a `nodes × max GPUs` integer table (1000 = a free GPU;
slots past a node's GPU count stay 0) plus a few per-node summaries kept in step with it (fully free GPUs,
the largest free share, idle milli, GPU-pod tags, a change counter), so a GPU filter is one or two vector
comparisons. The GPU plugins create the table on first use and attach it to the ClusterState as a typed
extension (`ClusterState.extension(GpuTable)`); nothing else in ClusterState reads or changes it.

The module also holds the fragmentation measure of FGD (Weng et al., USENIX ATC '23): how much of a
node's idle GPU milli a *target workload* of typical pods could not use. See `Fragmentation`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from phalanx.api.objects import GpuRequest, Pod
from phalanx.cluster.state import ClusterState, StateCorrupted

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
FloatArray = npt.NDArray[np.float64]

MILLI = 1000  # one whole GPU
GPU_COUNT = "alibabacloud.com/gpu-count"
GPU_MILLI = "alibabacloud.com/gpu-milli"
GPU_MODEL_LABEL = "alibabacloud.com/gpu-card-model"
# A node's GPUs as the NVIDIA device plugin and GPU feature discovery publish them (KAI's GPU sharing): the
# count where the openb trace's column is missing, and each GPU's memory (MiB) for `gpu-memory` asks.
NVIDIA_GPU = "nvidia.com/gpu"
GPU_MEMORY_LABEL = "nvidia.com/gpu.memory"
DEFAULT_GPU_MEMORY = 100  # KAI's node_info.DefaultGpuMemory (MiB) for a node without the label
TIB_IN_MIB = 1024 * 1024
SHARE_TAG = 0  # tag column of pods holding a share of one GPU; column k: pods holding k whole GPUs


@dataclass(frozen=True, slots=True)
class Assignment:
    node: int
    gpus: tuple[int, ...]
    milli: int
    tag: int  # -1: untagged


def pod_tag(count: int, milli: int) -> int:
    """GpuClustering's affinity tag: share-gpu (0), k-gpu (k) or none (-1)."""
    if count == 1 and 0 < milli < MILLI:
        return SHARE_TAG
    if count >= 1 and milli == MILLI:
        return count
    return -1


class GpuTable:
    """Free GPU milli per node and device, with per-node summaries kept in step."""

    def __init__(self, counts: Sequence[int], models: Sequence[str | None],
                 record: Callable[[Callable[[], object]], None] | None = None,
                 memory: Sequence[int] | None = None) -> None:
        self.record = record  # journals a change's inverse while a ClusterState trial is open
        self.model_names: list[str] = []
        self._model_ids: dict[str, int] = {}
        self.count: IntArray = np.zeros(0, dtype=np.int64)
        self.model: npt.NDArray[np.int32] = np.zeros(0, dtype=np.int32)
        self.free: IntArray = np.zeros((0, 1), dtype=np.int64)
        self.full: IntArray = np.zeros(0, dtype=np.int64)
        self.max_free: IntArray = np.zeros(0, dtype=np.int64)
        self.idle: IntArray = np.zeros(0, dtype=np.int64)
        self.tags: IntArray = np.zeros((0, 2), dtype=np.int64)
        self.version: IntArray = np.zeros(0, dtype=np.int64)
        self.assigned: dict[str, Assignment] = {}
        self._model_masks: dict[tuple[str, ...], BoolArray] = {}
        self.memory: IntArray = np.zeros(0, dtype=np.int64)  # MiB of each of the node's GPUs
        self.extend(counts, models, memory)

    def __len__(self) -> int:
        return int(self.count.shape[0])

    @property
    def width(self) -> int:
        return int(self.free.shape[1])

    def extend(self, counts: Sequence[int], models: Sequence[str | None], memory: Sequence[int] | None = None) -> None:
        """Append nodes (all GPUs free)."""
        new_counts = np.asarray(list(counts), dtype=np.int64).reshape(-1)
        self.memory = np.concatenate([self.memory, np.asarray(
            list(memory) if memory is not None else [DEFAULT_GPU_MEMORY] * new_counts.size, dtype=np.int64)])
        ids = np.array([self._model_ids.setdefault(m, len(self._model_ids)) if m else -1 for m in models],
                       dtype=np.int32)
        self.model_names = list(self._model_ids)
        width = max(self.width, int(new_counts.max()) if new_counts.size else 1, 1)
        if width > self.width:
            pad = width - self.width
            self.free = np.hstack([self.free, np.zeros((len(self), pad), dtype=np.int64)])
            self.tags = np.hstack([self.tags, np.zeros((len(self), pad), dtype=np.int64)])
        rows = np.where(np.arange(width)[None, :] < new_counts[:, None], MILLI, 0).astype(np.int64)
        self.free = np.vstack([self.free, rows])
        self.tags = np.vstack([self.tags, np.zeros((new_counts.size, width + 1), dtype=np.int64)])
        self.count = np.concatenate([self.count, new_counts])
        self.model = np.concatenate([self.model, ids])
        self.full = np.concatenate([self.full, new_counts])
        self.max_free = np.concatenate([self.max_free, np.where(new_counts > 0, MILLI, 0)])
        self.idle = np.concatenate([self.idle, new_counts * MILLI])
        self.version = np.concatenate([self.version, np.zeros(new_counts.size, dtype=np.int64)])
        self._model_masks.clear()

    # --- queries --------------------------------------------------------------------------------------

    def model_mask(self, models: tuple[str, ...]) -> BoolArray:
        """GPU nodes whose model is one of `models` (any GPU node when empty)."""
        mask = self._model_masks.get(models)
        if mask is None:
            if models:
                wanted = [self._model_ids[m] for m in models if m in self._model_ids]
                mask = np.isin(self.model, wanted) & (self.count > 0)
            else:
                mask = self.count > 0
            mask.flags.writeable = False
            self._model_masks[models] = mask
        return mask

    def device_mask(self, count: int, milli: int) -> BoolArray:
        """Nodes with at least `count` GPUs that each have `milli` free."""
        if milli >= MILLI:
            return np.asarray(self.full >= count)
        if milli <= 0:
            return np.asarray(self.count >= count)
        if count == 1:
            return np.asarray(self.max_free >= milli)
        return np.asarray(((self.free >= milli) & (np.arange(self.width) < self.count[:, None])).sum(axis=1)
                          >= count)

    def fits(self, count: int, milli: int, models: tuple[str, ...]) -> BoolArray:
        return self.model_mask(models) & self.device_mask(count, milli)

    def milli_on(self, memory: int) -> IntArray:
        """Per node, the thousandths of one of its GPUs that `memory` MiB take (KAI's gpu-memory ask); more than
        a GPU where the node's GPUs have less memory."""
        return np.asarray(-(-memory * MILLI // np.maximum(self.memory, 1)), dtype=np.int64)

    def fits_request(self, gpu: GpuRequest) -> BoolArray:
        """`fits` for a pod's request; a gpu-memory ask converted on each node by its GPUs' memory."""
        if gpu.memory <= 0:
            return self.fits(gpu.count, gpu.milli, gpu.models)
        milli = self.milli_on(gpu.memory)
        enough = ((self.free >= milli[:, None]) & (np.arange(self.width) < self.count[:, None])).sum(axis=1)
        return np.asarray(self.model_mask(gpu.models) & (milli <= MILLI) & (enough >= gpu.count), dtype=bool)

    # --- device choice --------------------------------------------------------------------------------

    def fitting(self, node: int, milli: int) -> IntArray:
        """Indices of the node's GPUs with at least `milli` free, in index order."""
        n = int(self.count[node])
        return np.flatnonzero(self.free[node, :n] >= milli)

    def exclusive(self, node: int, count: int) -> tuple[int, ...]:
        """The lowest-index fully free GPUs (KSS AllocateExclusiveGpuId)."""
        return tuple(int(i) for i in self.fitting(node, MILLI)[:count])

    def best(self, node: int, count: int, milli: int) -> tuple[int, ...]:
        """The fitting GPUs with the least free milli (ties: lowest index); fully free ones count too."""
        n = int(self.count[node])
        row = self.free[node, :n]
        key = np.where(row >= milli, row, MILLI + 1)
        order = np.argsort(key, kind="stable")[:count]
        return tuple(int(i) for i in order)

    # --- changes --------------------------------------------------------------------------------------

    def allocate(self, pod_key: str, node: int, gpus: Iterable[int], milli: int, tag: int = -1) -> None:
        gpus = tuple(gpus)
        if pod_key in self.assigned:
            raise StateCorrupted(f"pod {pod_key} already holds GPUs")
        for gpu in gpus:
            if not 0 <= gpu < self.count[node] or self.free[node, gpu] < milli:
                raise StateCorrupted(f"GPU {gpu} of node {node} has not {milli} milli free")
        for gpu in gpus:
            self.free[node, gpu] -= milli
        if tag >= 0:
            self.tags[node, tag] += 1
        self.assigned[pod_key] = Assignment(node, gpus, milli, tag)
        self._refresh(node)
        if self.record is not None:
            self.record(lambda: self.release(pod_key))

    def release(self, pod_key: str) -> Assignment | None:
        assignment = self.assigned.pop(pod_key, None)
        if assignment is None:
            return None
        for gpu in assignment.gpus:
            self.free[assignment.node, gpu] += assignment.milli
        if assignment.tag >= 0:
            self.tags[assignment.node, assignment.tag] -= 1
        self._refresh(assignment.node)
        if self.record is not None:
            self.record(lambda: self.allocate(pod_key, assignment.node, assignment.gpus, assignment.milli,
                                              assignment.tag))
        return assignment

    def _refresh(self, node: int) -> None:
        row = self.free[node, : int(self.count[node])].tolist()
        self.full[node] = row.count(MILLI)
        self.max_free[node] = max(row, default=0)
        self.idle[node] = sum(row)
        self.version[node] += 1

    def overallocated(self) -> bool:
        """Any device with negative or more than 1000 free milli (must never happen)."""
        return bool((self.free < 0).any() or (self.free > MILLI).any())


def device_table(cluster: ClusterState) -> GpuTable:
    """The cluster's GPU table, created from its nodes (GPU count column, model label) on first use."""
    table = cluster.extension(GpuTable)
    if table is not None and len(table) == len(cluster):
        return table
    start = 0 if table is None else len(table)
    col = cluster.column.get(GPU_COUNT)
    nvidia = cluster.column.get(NVIDIA_GPU)
    counts = [(0 if col is None else int(cluster.allocatable[i, col]))
              or (0 if nvidia is None else int(cluster.allocatable[i, nvidia])) for i in range(start, len(cluster))]
    models = [cluster.labels.labels(i).get(GPU_MODEL_LABEL) for i in range(start, len(cluster))]
    memory = [gpu_memory(cluster.labels.labels(i).get(GPU_MEMORY_LABEL)) for i in range(start, len(cluster))]
    if table is None:
        table = GpuTable(counts, models, cluster.record, memory)
        cluster.add_extension(table)
    else:
        table.extend(counts, models, memory)
    return table


def gpu_memory(label: str | None) -> int:
    """A node's GPU memory in MiB as KAI reads its `nvidia.com/gpu.memory` label (node_info.getNodeGpuMemory):
    100 without a readable one; a value of a TiB or more is bytes (a GPU feature discovery bug); floored to 100."""
    try:
        value = int(label) if label is not None else None
    except ValueError:
        value = None
    if value is None:
        return DEFAULT_GPU_MEMORY
    if value >= TIB_IN_MIB:
        value //= 1024 * 1024
    return value - value % 100


# --- the FGD fragmentation measure --------------------------------------------------------------------

@dataclass(frozen=True, slots=True, order=True)
class PodShape:
    """What the FGD scorers see of a pod (KSS PodResource): mCPU, per-GPU milli, GPU count, model list."""

    cpu: int
    milli: int
    count: int
    models: tuple[str, ...] = ()

    @property
    def type_string(self) -> str:
        return "|".join(self.models)

    @property
    def sharing(self) -> bool:
        return self.count == 1 and 0 < self.milli < MILLI


def pod_shape(pod: Pod) -> PodShape:
    cpu = int(pod.requests.get("cpu", 0))
    if pod.gpu is None or pod.gpu.count == 0:
        return PodShape(cpu, 0, 0, ())
    return PodShape(cpu, pod.gpu.milli, pod.gpu.count, pod.gpu.models)


@dataclass(frozen=True, slots=True)
class TargetWorkload:
    """Typical pod shapes and their popularity (summing to 1), most popular first."""

    shapes: tuple[PodShape, ...]
    popularity: tuple[float, ...]

    @classmethod
    def from_shapes(cls, shapes: Iterable[PodShape], threshold: int = 95) -> TargetWorkload:
        """KSS GetTypicalPods: count each shape once per pod, sort by count (ties: the larger shape
        first), keep the smallest prefix holding `threshold` % of the pods, renormalise."""
        counts: Counter[PodShape] = Counter(shapes)
        total = float(sum(counts.values()))
        if not counts:
            return cls((), ())
        ordered = sorted(counts.items(), key=lambda kv: (kv[1], kv[0].cpu, kv[0].milli, kv[0].count,
                                                          kv[0].type_string), reverse=True)
        expected = float(threshold) * total / 100.0
        cum = 0.0
        kept = 0
        while cum < expected and kept < len(ordered):
            cum += float(ordered[kept][1])
            kept += 1
        share = cum / total
        popularity = tuple((float(c) / total) / share for _, c in ordered[:kept])
        return cls(tuple(s for s, _ in ordered[:kept]), popularity)

    @classmethod
    def from_pods(cls, pods: Iterable[Pod], threshold: int = 95) -> TargetWorkload:
        return cls.from_shapes((pod_shape(p) for p in pods), threshold)

    def describe(self) -> list[dict[str, object]]:
        return [{"cpu": s.cpu, "milli": s.milli, "count": s.count, "models": list(s.models), "popularity": p}
                for s, p in zip(self.shapes, self.popularity, strict=True)]

    @classmethod
    def parse(cls, value: object) -> TargetWorkload:
        """A TargetWorkload, or its `describe()` form (a list of shape maps) from a profile file."""
        if isinstance(value, TargetWorkload):
            return value
        if not isinstance(value, list):
            raise ValueError("targetWorkload must be a list of {cpu, milli, count, models, popularity}")
        shapes: list[PodShape] = []
        popularity: list[float] = []
        for item in value:
            if not isinstance(item, Mapping):
                raise ValueError("targetWorkload entries must be maps")
            models = item.get("models") or ()
            shapes.append(PodShape(int(item.get("cpu", 0)), int(item.get("milli", 0)), int(item.get("count", 0)),
                                   tuple(str(m) for m in models)))
            popularity.append(float(item["popularity"]))
        return cls(tuple(shapes), tuple(popularity))


# Buckets of KSS FragAmount, in the order FragAmountSumExceptQ3 adds them (q3_satisfied, 2, is left out).
Q1_LACK_BOTH, Q2_LACK_GPU, Q3_SATISFIED, Q4_LACK_CPU, XL_SATISFIED, XR_LACK_CPU, NO_ACCESS = range(7)
_FRAGMENT_BUCKETS = (Q1_LACK_BOTH, Q2_LACK_GPU, Q4_LACK_CPU, XL_SATISFIED, XR_LACK_CPU, NO_ACCESS)


class Fragmentation:
    """F_n = Σ_m p_m · frag_n(m) over a target workload, for many node states at once.

    frag_n(m) is all of the node's idle GPU milli unless the node could host a pod of shape m (model,
    CPU, `count` GPUs with `milli` free each), in which case it is the idle milli on GPUs with less than
    `milli` free; a CPU-only shape leaves all idle milli as fragment. The sums follow KSS's order (each
    bucket summed over shapes in workload order, then buckets q1, q2, q4, xl, xr, no-access), so the
    floating-point values match the reference simulator's bit for bit on the same states.
    """

    def __init__(self, workload: TargetWorkload, table: GpuTable) -> None:
        self.workload = workload
        shapes = workload.shapes
        self.cpu = np.array([s.cpu for s in shapes], dtype=np.int64)
        self.milli = np.array([s.milli for s in shapes], dtype=np.int64)
        self.count = np.array([s.count for s in shapes], dtype=np.int64)
        self.p = np.array(workload.popularity, dtype=np.float64)
        self.is_gpu = self.milli > 0
        names = table.model_names
        # access[model id, shape]: the last row is for nodes without a model label (index -1).
        self.access = np.zeros((len(names) + 1, len(shapes)), dtype=bool)
        for j, shape in enumerate(shapes):
            for i, name in enumerate(names):
                self.access[i, j] = not shape.models or name in shape.models
            self.access[-1, j] = not shape.models
        self._gpu_code = np.where(self.is_gpu, 8, 0).astype(np.int64)
        self._millis, self._milli_of = np.unique(self.milli, return_inverse=True)
        self._milli_of = self._milli_of.reshape(-1)
        # code = 8·GPU shape + 4·access + 2·GPUs fit + CPU fits → bucket (KSS GetNodePodFrag)
        bucket_of = np.zeros(16, dtype=np.int64)
        for code in range(16):
            gpu_shape, access, gpus_fit, cpu_fits = code & 8, code & 4, code & 2, code & 1
            if not gpu_shape:
                bucket_of[code] = XL_SATISFIED if cpu_fits else XR_LACK_CPU
            elif not access:
                bucket_of[code] = NO_ACCESS
            elif gpus_fit:
                bucket_of[code] = Q3_SATISFIED if cpu_fits else Q4_LACK_CPU
            else:
                bucket_of[code] = Q2_LACK_GPU if cpu_fits else Q1_LACK_BOTH
        self._bucket_of = bucket_of
        self._buckets = np.array(_FRAGMENT_BUCKETS, dtype=np.int64)

    def amount(self, cpu_free: IntArray, free: IntArray, model: npt.NDArray[np.int32]) -> FloatArray:
        """F for each row: free CPU (mCPU), free milli per GPU (rows of the table), model id."""
        rows = cpu_free.shape[0]
        if rows == 0 or self.p.size == 0:
            return np.zeros(rows, dtype=np.float64)
        idle = free.sum(axis=1)
        # Per distinct milli (fewer than shapes): GPUs with that much free, and the milli on the others.
        ge = free[:, None, :] >= self._millis[None, :, None]
        fits = ge.sum(axis=2)[:, self._milli_of]
        below = (free[:, None, :] * ~ge).sum(axis=2)[:, self._milli_of]
        gpu_ok = fits >= self.count
        cpu_ok = cpu_free[:, None] >= self.cpu
        access = self.access[model]
        # Bucket of each (row, shape), through a lookup on (is GPU shape, access, GPU fits, CPU fits).
        bucket = self._bucket_of[self._gpu_code + access * 4 + gpu_ok * 2 + cpu_ok]
        q3 = bucket == Q3_SATISFIED
        frag = np.where(q3, below, idle[:, None])
        contrib = self.p * frag
        # q3 rows book their fragment under q2: per bucket, add the shapes left to right (cumsum is
        # sequential, the zeros it adds change nothing), then add the buckets in KSS's order.
        chosen = np.where(q3, Q2_LACK_GPU, bucket)[:, None, :] == self._buckets[None, :, None]
        per_bucket = np.cumsum(np.where(chosen, contrib[:, None, :], 0.0), axis=2)[:, :, -1]
        return np.asarray(np.cumsum(per_bucket, axis=1)[:, -1], dtype=np.float64)

    def of_nodes(self, cluster: ClusterState, table: GpuTable, nodes: IntArray | None = None) -> FloatArray:
        """F of the given nodes (all by default) in their current state."""
        idx = np.arange(len(table)) if nodes is None else nodes
        cpu = cluster.column["cpu"]
        cpu_free = cluster.allocatable[idx, cpu] - cluster.requested[idx, cpu]
        return self.amount(cpu_free, table.free[idx], table.model[idx])
