"""KAI Scheduler's GPU-sharing annotations on a pod: `gpu-fraction` (a portion of one GPU's memory, 0 < f < 1),
`gpu-memory` (MiB of one GPU), `gpu-fraction-num-devices` (that portion on each of N GPUs), read as KAI's
binder validates them (pkg/binder/plugins/gpusharing/gpu-request/gpu_request_validator.go), into the GPU-share
request the GpuShare plugin places (`GpuRequest`).

A gpu-memory ask becomes a share only on a node: KAI divides it by the memory of the node's GPUs (label
`nvidia.com/gpu.memory`), so `GpuRequest.memory` carries it and the device table converts it per node.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from phalanx.api.fields import fail
from phalanx.api.objects import GpuRequest

GPU_FRACTION = "gpu-fraction"
GPU_MEMORY = "gpu-memory"
GPU_FRACTION_DEVICES = "gpu-fraction-num-devices"
NVIDIA_GPU = "nvidia.com/gpu"
MILLI = 1000
CAP = 1 << 40


def kai_gpu_request(annotations: Mapping[str, str], spec: Mapping[str, Any], field: str) -> GpuRequest | None:
    """The GPU share a pod's KAI annotations ask for; None when it names none. A pod asking for a share and for
    whole GPUs (`nvidia.com/gpu` in a limit), or for both a fraction and memory, is refused as KAI refuses it."""
    where = f"{field.rsplit('spec', 1)[0]}metadata.annotations"  # a template's beside its spec
    fraction_text = annotations.get(GPU_FRACTION)
    memory_text = annotations.get(GPU_MEMORY)
    devices_text = annotations.get(GPU_FRACTION_DEVICES)
    if fraction_text is None and memory_text is None:
        if devices_text is not None:
            raise fail(f"{where}[{GPU_FRACTION_DEVICES}]", "cannot request multiple fractional devices without "
                       f"specifying fraction portion ({GPU_FRACTION}) or {GPU_MEMORY}")
        return None
    whole = _whole_gpu_limit(spec)
    if fraction_text is not None and whole:
        raise fail(f"{where}[{GPU_FRACTION}]", f"cannot have both GPU fraction request and whole GPU resource "
                   f"request/limit ({NVIDIA_GPU} in {whole})")
    if memory_text is not None and (fraction_text is not None or whole):
        raise fail(f"{where}[{GPU_MEMORY}]", "cannot request both GPU and GPU memory")
    count = 1
    if devices_text is not None:
        count = _positive_int(devices_text, f"{where}[{GPU_FRACTION_DEVICES}]",
                              "fraction count annotation value must be a positive integer greater than 0")
    if memory_text is not None:
        memory = _positive_int(memory_text, f"{where}[{GPU_MEMORY}]",
                               "gpu-memory annotation value must be a positive integer greater than 0")
        return GpuRequest(count, 0, memory=memory)
    assert fraction_text is not None
    try:
        fraction = float(fraction_text)
    except ValueError:
        fraction = math.nan
    if not 0 < fraction < 1:
        raise fail(f"{where}[{GPU_FRACTION}]",
                   f"gpu-fraction annotation value must be a positive number smaller than 1.0, got {fraction_text!r}")
    return GpuRequest(count, max(1, round(fraction * MILLI)))


def _whole_gpu_limit(spec: Mapping[str, Any]) -> str:
    """The first container (or init container) with an `nvidia.com/gpu` limit or request, as `containers[i]`."""
    for kind in ("containers", "initContainers"):
        for i, container in enumerate(spec.get(kind) or ()):
            resources = (container or {}).get("resources") or {} if isinstance(container, Mapping) else {}
            if any(NVIDIA_GPU in ((resources.get(part) or {}) if isinstance(resources, Mapping) else {})
                   for part in ("limits", "requests")):
                return f"{kind}[{i}]"
    return ""


def _positive_int(value: str, where: str, message: str) -> int:
    text = str(value).strip()
    if not text.isascii() or not text.isdigit() or int(text) == 0:
        raise fail(where, f"{message}, got {value!r}")
    # KAI reads a uint64; past any node's GPUs (or their memory) every larger ask fits nowhere alike
    return min(int(text), CAP)
