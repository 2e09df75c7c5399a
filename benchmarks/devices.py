"""DRA benchmark: GPU pods and GPU gangs placed through ResourceSlices and ResourceClaims.

Run from the repository root:

    python -m benchmarks.devices            # full size
    python -m benchmarks.devices --quick    # a tenth of the size (a smoke run)

1,000 nodes (64 cpu, 512Gi, 110 pods), each publishing 8 GPUs in a `resource.k8s.io/v1` ResourceSlice
(driver `gpu.example.com`, attributes model/index, 80Gi of memory capacity), one DeviceClass with a CEL
selector, and one ResourceClaimTemplate asking for one GPU. The workload fills the fleet: 8,000
single-GPU pods (pod at a time) and 100 gangs of 8 single-GPU pods (`gang` profile, `minCount: 8`): 8,800
GPU pods for 8,000 GPUs, so the last 800 find no device and go through the failure path (diagnosis) too.
One GPU per 100 is tainted NoSchedule by a DeviceTaintRule. Timed: `Scheduler.schedule()` over
everything (every pod cycle and PodGroup cycle with Filter, Score and Reserve, and the decisions), not
the loading. Target: at least 2,000 pods/s. CPU time is printed beside wall time: on a shared machine it
is the steadier number.

Each run prints one line per measurement and, with `--json`, the numbers as JSON.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from typing import Any

from phalanx.api.dra import (
    parse_claim_template,
    parse_device_class,
    parse_device_taint_rule,
    parse_resource_slice,
)
from phalanx.api.objects import Source
from phalanx.api.parse import parse_node, parse_pod, parse_pod_group
from phalanx.scheduler.decisions import Bind
from phalanx.scheduler.profiles import builtin
from phalanx.scheduler.scheduler import Scheduler

NAMESPACE = "bench"
DRIVER = "gpu.example.com"
SOURCE = Source("benchmarks/devices", 0)


def node_doc(i: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": f"node-{i:04d}", "labels": {"kubernetes.io/hostname": f"node-{i:04d}"}},
            "status": {"allocatable": {"cpu": "64", "memory": "512Gi", "pods": "110"}}}


def slice_doc(i: int, gpus: int) -> dict[str, Any]:
    devices = [{"name": f"gpu-{g}", "attributes": {"model": {"string": "H100"}, "index": {"int": g}},
                "capacity": {"memory": {"value": "80Gi"}}} for g in range(gpus)]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"node-{i:04d}-gpus"},
            "spec": {"driver": DRIVER, "pool": {"name": f"node-{i:04d}", "generation": 1, "resourceSliceCount": 1},
                     "nodeName": f"node-{i:04d}", "devices": devices}}


def pod_doc(name: str, group: str | None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [{"name": "main", "image": "registry.example.com/train:v1",
                        "resources": {"requests": {"cpu": "4", "memory": "32Gi"}, "claims": [{"name": "gpu"}]}}],
        "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}],
    }
    if group is not None:
        spec["schedulingGroup"] = {"podGroupName": group}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NAMESPACE}, "spec": spec}


def build(nodes: int, gpus: int, singles: int, gangs: int, gang_size: int, profile: str) -> Scheduler:
    scheduler = Scheduler(builtin(profile), [parse_node(node_doc(i), SOURCE) for i in range(nodes)])
    device_class = parse_device_class({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                                       "metadata": {"name": DRIVER},
                                       "spec": {"selectors": [{"cel": {"expression":
                                                                       f'device.driver == "{DRIVER}"'}}]}}, SOURCE)
    template = parse_claim_template({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
        "metadata": {"name": "one-gpu", "namespace": NAMESPACE},
        "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
            "deviceClassName": DRIVER,
            "selectors": [{"cel": {"expression": f'device.attributes["{DRIVER}"].model == "H100"'}}]}}]}}},
    }, SOURCE)
    scheduler.add_device_objects(0.0, slices=[parse_resource_slice(slice_doc(i, gpus), SOURCE) for i in range(nodes)],
                                 classes=[device_class], templates=[template])
    for i in range(0, nodes, max(nodes // 10, 1)):  # one GPU per 100 (of 8 per node) out of service
        rule = parse_device_taint_rule({
            "apiVersion": "resource.k8s.io/v1beta2", "kind": "DeviceTaintRule", "metadata": {"name": f"ecc-{i}"},
            "spec": {"deviceSelector": {"driver": DRIVER, "pool": f"node-{i:04d}", "device": "gpu-0"},
                     "taint": {"key": f"{DRIVER}/ecc-errors", "effect": "NoSchedule"}}}, SOURCE)
        scheduler.add_device_taint_rule(rule, 0.0)
    for g in range(gangs):
        scheduler.add_pod_group(parse_pod_group({
            "apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
            "metadata": {"name": f"gang-{g:03d}", "namespace": NAMESPACE},
            "spec": {"schedulingPolicy": {"gang": {"minCount": gang_size}}}}, SOURCE), 0.0)
    for i in range(singles):
        pod = parse_pod(pod_doc(f"pod-{i:05d}", None), SOURCE)
        assert pod is not None
        scheduler.add_pod(pod, 0.0)
    for g in range(gangs):
        for m in range(gang_size):
            pod = parse_pod(pod_doc(f"gang-{g:03d}-{m}", f"gang-{g:03d}"), SOURCE)
            assert pod is not None
            scheduler.add_pod(pod, 0.0)
    return scheduler


def run(scale: float) -> dict[str, Any]:
    nodes, gpus = int(1000 * scale), 8
    singles, gangs, gang_size = int(8000 * scale), int(100 * scale), 8
    scheduler = build(nodes, gpus, singles, gangs, gang_size, "gang")
    started, cpu_started = time.perf_counter(), time.process_time()
    decisions = scheduler.schedule(0.0)
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    binds = sum(1 for d in decisions if isinstance(d, Bind))
    devices = scheduler.devices
    assert devices is not None and not devices.overallocated()
    pods = singles + gangs * gang_size
    return {"name": "gpu-pods-and-gangs", "nodes": nodes, "gpus": nodes * gpus, "pods": pods, "gangs": gangs,
            "bound": binds, "seconds": round(seconds, 3), "podsPerSecond": round(pods / seconds, 1),
            "cpuSeconds": round(cpu, 3), "podsPerCpuSecond": round(pods / cpu, 1),
            "python": platform.python_version()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.devices", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a tenth of the size")
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON")
    args = parser.parse_args(argv)
    result = run(0.1 if args.quick else 1.0)
    print(f"{result['name']}: {result['pods']} pods ({result['gangs']} gangs of 8) on {result['nodes']} nodes "
          f"with {result['gpus']} GPUs: {result['bound']} bound in {result['seconds']} s = "
          f"{result['podsPerSecond']} pods/s ({result['cpuSeconds']} s of CPU = {result['podsPerCpuSecond']} pods/s)")
    if args.json:
        print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
