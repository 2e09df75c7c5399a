"""The v1beta1 shapes a migration writes: a Workload with one PodGroup template, its PodGroup, and the
pod-side link (`spec.schedulingGroup.podGroupName`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from phalanx.api.fields import mapping

Doc = dict[str, Any]
V1BETA1 = "scheduling.k8s.io/v1beta1"


def policy(min_count: int) -> Doc:
    """A gang of `min_count` (a group of one is still a gang: it binds its member or none)."""
    return {"gang": {"minCount": max(1, min_count)}}


def workload(namespace: str, name: str, template: Doc) -> Doc:
    return {"apiVersion": V1BETA1, "kind": "Workload", "metadata": {"name": name, "namespace": namespace},
            "spec": {"podGroupTemplates": [template]}}


def pod_group(namespace: str, name: str, template: Doc, workload_name: str | None = None) -> Doc:
    """A PodGroup carrying the template's policy fields (as v1.37 controllers copy them)."""
    spec: Doc = {key: value for key, value in template.items() if key != "name"}
    if workload_name is not None:
        spec = {"workloadRef": {"workloadName": workload_name, "templateName": template["name"]}, **spec}
    return {"apiVersion": V1BETA1, "kind": "PodGroup", "metadata": {"name": name, "namespace": namespace},
            "spec": spec}


def gang(namespace: str, name: str, min_count: int, priority_class: str | None = None) -> list[Doc]:
    """A Workload and its PodGroup, both named `name`, for a gang of `min_count`."""
    template: Doc = {"name": "workers", "schedulingPolicy": policy(min_count)}
    if priority_class:
        template["priorityClassName"] = priority_class
    return [workload(namespace, name, template), pod_group(namespace, name, template, name)]


def join(pod: Mapping[str, Any], group: str) -> Doc:
    """The pod linked to its PodGroup (a copy; the input is not changed). InputError if its spec is no object."""
    spec = dict(mapping(pod.get("spec"), "spec"))
    spec["schedulingGroup"] = {"podGroupName": group}
    return {**pod, "spec": spec}
