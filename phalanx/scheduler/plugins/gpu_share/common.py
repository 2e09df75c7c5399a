"""Helpers the GPU-share plugins share: the node view KSS scorers read (free CPU, free GPU milli) and
constants (MaxSpecCpu, MaxSpecGpu)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from phalanx.cluster.gpus import GpuTable, TargetWorkload
from phalanx.cluster.state import ClusterState
from phalanx.errors import InputError
from phalanx.scheduler.framework import IntArray

MAX_SPEC_CPU = 128000  # mCPU of the largest node type (KSS MaxSpecCpu)
MAX_SPEC_GPU = 8000  # milli of the largest node type (KSS MaxSpecGpu)


def cpu_free(cluster: ClusterState, nodes: IntArray) -> IntArray:
    col = cluster.column["cpu"]
    return np.asarray(cluster.allocatable[nodes, col] - cluster.requested[nodes, col])


def gpu_free(table: GpuTable, nodes: IntArray) -> IntArray:
    return np.asarray(table.idle[nodes])


def seed_arg(args: Mapping[str, Any] | None, plugin: str) -> int:
    value = (args or {}).get("seed", 0)
    if not isinstance(value, int):
        raise InputError("must be an integer", field=f"pluginConfig[{plugin}].args.seed")
    return value


def workload_arg(args: Mapping[str, Any] | None, plugin: str) -> TargetWorkload | None:
    value = (args or {}).get("targetWorkload")
    if value is None:
        return None
    try:
        return TargetWorkload.parse(value)
    except (ValueError, KeyError, TypeError) as exc:
        raise InputError(str(exc), field=f"pluginConfig[{plugin}].args.targetWorkload") from None
