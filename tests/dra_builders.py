"""Manifests for DRA tests (ResourceSlices, DeviceClasses, claims, templates, taint rules) and a loader."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from phalanx.inputs.load import Inputs, load_paths

Doc = dict[str, Any]
DRIVER = "gpu.example.com"


def node(name: str, cpu: str = "64", memory: str = "256Gi", labels: dict[str, str] | None = None) -> Doc:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels or {}},
            "status": {"allocatable": {"cpu": cpu, "memory": memory}}}


def gpu(name: str, *, index: int = 0, model: str = "H100", numa: int = 0, taints: list[Doc] | None = None,
        shared: bool = False, compute: str | None = None, network: Doc | None = None) -> Doc:
    device: Doc = {"name": name, "attributes": {"model": {"string": model}, "index": {"int": index},
                                                "numa": {"int": numa}},
                   "capacity": {"memory": {"value": "80Gi"}}}
    if taints:
        device["taints"] = taints
    if shared:
        device["allowMultipleAllocations"] = True
    if compute is not None:
        device["capacity"]["compute"] = {"value": compute}
    if network is not None:
        device["networkData"] = network
    return device


def gpu_slice(node_name: str, devices: list[Doc], *, pool: str | None = None, version: str = "v1") -> Doc:
    return {"apiVersion": f"resource.k8s.io/{version}", "kind": "ResourceSlice",
            "metadata": {"name": f"{node_name}-{pool or 'gpus'}"},
            "spec": {"driver": DRIVER, "pool": {"name": pool or node_name, "generation": 1, "resourceSliceCount": 1},
                     "nodeName": node_name, "devices": devices}}


def gpus(node_name: str, count: int = 8, **kwargs: Any) -> Doc:
    return gpu_slice(node_name, [gpu(f"gpu-{i}", index=i, numa=i // 4, **kwargs) for i in range(count)])


def device_class(name: str = DRIVER, expression: str = f'device.driver == "{DRIVER}"',
                 extended: str | None = None) -> Doc:
    spec: Doc = {"selectors": [{"cel": {"expression": expression}}]}
    if extended:
        spec["extendedResourceName"] = extended
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name}, "spec": spec}


def exactly(count: int | None = 1, *, mode: str | None = None, selectors: list[str] | None = None,
            tolerations: list[Doc] | None = None, capacity: dict[str, str] | None = None,
            device_class_name: str = DRIVER) -> Doc:
    out: Doc = {"deviceClassName": device_class_name}
    if mode is not None:
        out["allocationMode"] = mode
    elif count is not None:
        out["count"] = count
    if selectors:
        out["selectors"] = [{"cel": {"expression": s}} for s in selectors]
    if tolerations:
        out["tolerations"] = tolerations
    if capacity:
        out["capacity"] = {"requests": capacity}
    return out


def claim_spec(*requests: Doc, constraints: list[Doc] | None = None) -> Doc:
    devices: Doc = {"requests": list(requests)}
    if constraints:
        devices["constraints"] = constraints
    return {"devices": devices}


def request(name: str, exact: Doc | None = None, first_available: list[Doc] | None = None) -> Doc:
    out: Doc = {"name": name}
    if exact is not None:
        out["exactly"] = exact
    if first_available is not None:
        out["firstAvailable"] = first_available
    return out


def template(name: str, spec: Doc, namespace: str = "default") -> Doc:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": namespace}, "spec": {"spec": spec}}


def claim(name: str, spec: Doc, namespace: str = "default") -> Doc:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": namespace}, "spec": spec}


def pod(name: str, *, template_name: str | None = None, claim_name: str | None = None, cpu: str = "1",
        group: str | None = None, duration: str | None = None, arrival: str | None = None,
        requests: dict[str, Any] | None = None, node_name: str | None = None, namespace: str = "default",
        controller: bool = False, claims: list[Doc] | None = None) -> Doc:
    resources: Doc = {"requests": {"cpu": cpu, **(requests or {})}}
    if requests:  # extended resources: a limit equal to the request, as the API server requires
        resources["limits"] = dict(requests)
    spec: Doc = {"containers": [{"name": "main", "image": "img", "resources": resources}]}
    refs = []
    if template_name:
        refs.append({"name": "gpus", "resourceClaimTemplateName": template_name})
    if claim_name:
        refs.append({"name": "shared", "resourceClaimName": claim_name})
    refs.extend(claims or ())
    if refs:
        spec["resourceClaims"] = refs
    if group:
        spec["schedulingGroup"] = {"podGroupName": group}
    if node_name:
        spec["nodeName"] = node_name
    meta: Doc = {"name": name, "namespace": namespace, "annotations": {}}
    if duration:
        meta["annotations"]["phalanx.dev/duration"] = duration
    if arrival:
        meta["annotations"]["phalanx.dev/arrival"] = arrival
    if controller:
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u",
                                    "controller": True}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def pod_group(name: str, min_count: int, namespace: str = "default", claims: list[Doc] | None = None) -> Doc:
    spec: Doc = {"schedulingPolicy": {"gang": {"minCount": min_count}}}
    if claims:
        spec["resourceClaims"] = claims
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": namespace}, "spec": spec}


def taint_rule(name: str, key: str, effect: str, *, pool: str | None = None, device: str | None = None,
               arrival: str | None = None, version: str = "v1beta2") -> Doc:
    selector: Doc = {"driver": DRIVER}
    if pool:
        selector["pool"] = pool
    if device:
        selector["device"] = device
    meta: Doc = {"name": name}
    if arrival:
        meta["annotations"] = {"phalanx.dev/arrival": arrival}
    return {"apiVersion": f"resource.k8s.io/{version}", "kind": "DeviceTaintRule", "metadata": meta,
            "spec": {"deviceSelector": selector, "taint": {"key": key, "effect": effect}}}


def load(tmp_path: Path, *docs: Doc, name: str = "input.yaml") -> Inputs:
    path = tmp_path / name
    path.write_text(yaml.safe_dump_all(list(docs), sort_keys=False), encoding="utf-8")
    return load_paths([str(path)])
