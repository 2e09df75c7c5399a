"""GpuShare: the Filter and Reserve of shared and whole GPUs (KSS Open-Gpu-Share).

Filter: a pod without a GPU request passes everywhere. A GPU pod needs a node whose GPU model is one of
its allowed models (any GPU node when it names none) with `count` GPUs of at least `milli` free each.
Reserve picks the devices (FGD-PROTOCOL §4): whole-GPU pods take the lowest-index fully free GPUs;
a sharing pod takes, by `deviceSelection`, the fitting GPU with the least free milli (`best`, ties to the
lowest index), a uniformly random fitting GPU (`random`, seeded by `seed`) or the GPU FGD scores best
(`fgd`, under `targetWorkload`). Unreserve gives the devices back.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

import numpy as np

from phalanx.api.objects import GpuRequest, Pod
from phalanx.cluster.gpus import MILLI, Assignment, device_table, pod_shape, pod_tag
from phalanx.cluster.state import ClusterState
from phalanx.errors import InputError
from phalanx.scheduler.framework import BoolArray, Code, CycleState
from phalanx.scheduler.plugins.gpu_share.common import seed_arg, workload_arg
from phalanx.scheduler.plugins.gpu_share.fgd import FgdEngine

SELECTIONS = ("best", "random", "fgd")


class GpuShare:
    name = "GpuShare"
    static = False
    node_static = False
    code = Code.UNSCHEDULABLE

    def __init__(self, args: Mapping[str, Any] | None = None) -> None:
        selection = str((args or {}).get("deviceSelection", "best"))
        if selection not in SELECTIONS:
            raise InputError(f"unknown device selection {selection!r} (known: {', '.join(SELECTIONS)})",
                             field="pluginConfig[GpuShare].args.deviceSelection")
        self.selection = selection
        # A resource whose whole-device requests hold GPUs of the table too (KAI: `nvidia.com/gpu`), so that a
        # share never lands on a GPU a whole-GPU pod holds; unset: only pods with a GPU request hold GPUs.
        self.whole_resource = str((args or {}).get("wholeGpuResource") or "")
        self.rng = np.random.default_rng([seed_arg(args, self.name), 2])
        self.fgd = FgdEngine(workload_arg(args, self.name)) if selection == "fgd" else None
        self._everywhere: BoolArray = np.ones(0, dtype=bool)

    # --- Filter ---

    def ask(self, pod: Pod) -> GpuRequest | None:
        """The pod's GPU request: its own, or whole GPUs of `wholeGpuResource` it requests."""
        if pod.gpu is not None or not self.whole_resource:
            return pod.gpu
        whole = int(pod.requests.get(self.whole_resource, 0))
        return GpuRequest(whole, MILLI) if whole > 0 else None

    def filter(self, state: CycleState, cluster: ClusterState) -> BoolArray:
        gpu = self.ask(state.pod)
        if gpu is None or gpu.count <= 0:
            if self._everywhere.shape[0] != len(cluster):
                self._everywhere = np.ones(len(cluster), dtype=bool)
                self._everywhere.flags.writeable = False
            return self._everywhere
        return device_table(cluster).fits_request(gpu)

    def reasons(self, state: CycleState, cluster: ClusterState, failed: BoolArray) -> Counter[str]:
        gpu = self.ask(state.pod)
        out: Counter[str] = Counter()
        if gpu is None:
            return out
        table = device_table(cluster)
        no_gpu = failed & (table.count == 0)
        wrong_model = failed & ~no_gpu & ~table.model_mask(gpu.models)
        short = failed & ~no_gpu & ~wrong_model
        for reason, mask in (("node(s) had no GPU", no_gpu), ("node(s) didn't match the requested GPU model",
                                                             wrong_model), ("Insufficient GPU share", short)):
            count = int(mask.sum())
            if count:
                out[reason] += count
        return out

    # --- Reserve ---

    def reserve(self, state: CycleState, cluster: ClusterState, node: int) -> None:
        pod = state.pod
        gpu = self.ask(pod)
        if gpu is None or gpu.count <= 0:
            return
        table = device_table(cluster)
        shape = pod_shape(pod)
        if gpu.memory > 0:  # KAI's gpu-memory: its share of this node's GPUs, on the most used that fit (gpupack)
            milli = int(table.milli_on(gpu.memory)[node])
            table.allocate(pod.key, node, table.best(node, gpu.count, milli), milli, pod_tag(gpu.count, milli))
            return
        if gpu.milli >= MILLI:
            devices = table.exclusive(node, gpu.count)
        elif shape.sharing and self.selection == "random":
            fitting = table.fitting(node, gpu.milli)
            devices = (int(fitting[int(self.rng.integers(fitting.size))]),)
        elif shape.sharing and self.fgd is not None:
            devices = (self.fgd.best_gpu(cluster, table, shape, node),)
        else:
            devices = table.best(node, gpu.count, gpu.milli)
        table.allocate(pod.key, node, devices, min(gpu.milli, MILLI), pod_tag(gpu.count, gpu.milli))

    def unreserve(self, pod: Pod, cluster: ClusterState, node: int) -> None:
        device_table(cluster).release(pod.key)

    def held(self, pod: Pod, cluster: ClusterState) -> object:
        return device_table(cluster).assigned.get(pod.key)

    def restore(self, pod: Pod, cluster: ClusterState, node: int, held: object) -> bool:
        if not isinstance(held, Assignment):
            return True
        table = device_table(cluster)
        if any(table.free[held.node, gpu] < held.milli for gpu in held.gpus):
            return False
        table.allocate(pod.key, held.node, held.gpus, held.milli, held.tag)
        return True
