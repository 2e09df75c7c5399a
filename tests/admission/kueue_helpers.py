"""Manifest builders for the Kueue admission tests: Kueue objects as a cluster would hold them."""

from __future__ import annotations

from typing import Any

from phalanx.admission.base import PodSet, QueuedWorkload
from phalanx.admission.kueue import KueueAdmission, load_kueue
from phalanx.api.objects import Source

V2 = "kueue.x-k8s.io/v1beta2"
Quota = tuple[Any, Any, Any]  # nominalQuota, borrowingLimit, lendingLimit (None: unset)


def flavor(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": V2, "kind": "ResourceFlavor", "metadata": {"name": name}, "spec": spec}


def quotas(covered: list[str], flavors: list[tuple[str, list[Quota]]]) -> dict[str, Any]:
    """One resourceGroup: `flavors` lists (flavor, [(nominal, borrowingLimit, lendingLimit) per covered])."""
    out = []
    for name, amounts in flavors:
        resources = []
        for resource, (nominal, borrow, lend) in zip(covered, amounts, strict=True):
            item: dict[str, Any] = {"name": resource, "nominalQuota": nominal}
            if borrow is not None:
                item["borrowingLimit"] = borrow
            if lend is not None:
                item["lendingLimit"] = lend
            resources.append(item)
        out.append({"name": name, "resources": resources})
    return {"coveredResources": covered, "flavors": out}


def cluster_queue(name: str, groups: list[dict[str, Any]], cohort: str = "", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"namespaceSelector": {}, "resourceGroups": groups, **spec}
    if cohort:
        body["cohortName"] = cohort
    return {"apiVersion": V2, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": body}


def cohort(name: str, parent: str = "", groups: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if parent:
        spec["parentName"] = parent
    if groups:
        spec["resourceGroups"] = groups
    return {"apiVersion": V2, "kind": "Cohort", "metadata": {"name": name}, "spec": spec}


def local_queue(name: str, cq: str, namespace: str = "default") -> dict[str, Any]:
    return {"apiVersion": V2, "kind": "LocalQueue", "metadata": {"name": name, "namespace": namespace},
            "spec": {"clusterQueue": cq}}


def cpu_cq(name: str, nominal: Any, cohort_name: str = "", borrow: Any = None, lend: Any = None,
           **spec: Any) -> dict[str, Any]:
    """A ClusterQueue covering cpu with one flavor, `default`."""
    return cluster_queue(name, [quotas(["cpu"], [("default", [(nominal, borrow, lend)])])], cohort_name, **spec)


def load(*docs: dict[str, Any], passes: int | None = None) -> KueueAdmission:
    """A policy over `docs`, with one LocalQueue `<cq>` in `default` per ClusterQueue unless docs hold some."""
    all_docs = list(docs)
    if not any(d["kind"] == "LocalQueue" for d in docs):
        all_docs += [local_queue(d["metadata"]["name"], d["metadata"]["name"]) for d in docs
                     if d["kind"] == "ClusterQueue"]
    if not any(d["kind"] == "ResourceFlavor" for d in docs):
        all_docs.append(flavor("default"))
    policy = load_kueue([(d, Source("kueue.yaml", i)) for i, d in enumerate(all_docs)])
    policy.passes_per_cycle = passes
    return policy


def workload(name: str, queue: str, cpu: int | str = 1, *, count: int = 1, priority: int = 0,
             created: float = 0.0, namespace: str = "default", **requests: int) -> QueuedWorkload:
    """A one-pod-set workload; `cpu` in cores (or a millicore string like '500m')."""
    milli = int(cpu[:-1]) if isinstance(cpu, str) else cpu * 1000
    reqs = {"cpu": milli, **requests}
    return QueuedWorkload(key=f"{namespace}/{name}", namespace=namespace, queue=queue, priority=priority,
                          created=created, pod_sets=(PodSet("main", count, reqs),))
