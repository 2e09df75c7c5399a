"""Parsing Kueue's objects (kueue.x-k8s.io v1beta1 and v1beta2): the fields admission uses, the defaults
the CRDs set, and the errors Kueue's CRD schema and webhooks (pkg/webhooks/clusterqueue_webhook.go,
cohort_webhook.go, common.go, resourceflavor_webhook.go) would raise — restated from their tests."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from phalanx.admission.kueue import load_kueue
from phalanx.admission.kueue_objects import (
    ClusterQueue,
    Cohort,
    LocalQueue,
    ResourceFlavor,
    WorkloadPriorityClass,
    is_kueue_object,
    parse_kueue_object,
)
from phalanx.api.objects import Source
from phalanx.errors import InputError
from tests.admission.kueue_helpers import cluster_queue, cpu_cq, flavor, local_queue, quotas

SRC = Source("kueue.yaml", 0)


def parse(doc: dict[str, Any]) -> Any:
    return parse_kueue_object(doc, SRC)


def error(doc: dict[str, Any]) -> str:
    with pytest.raises(InputError) as info:
        parse(doc)
    message = str(info.value)
    assert "\n" not in message
    return message


def test_cluster_queue_v1beta2_fields_and_defaults() -> None:
    """The docs' ClusterQueue (concepts/cluster_queue.md) in v1beta2: cohortName, quotas in Kubernetes
    quantities, defaults BestEffortFIFO, preemption Never, fungibility MayStopSearch/TryNextFlavor."""
    doc = cluster_queue("cluster-queue", [quotas(["cpu", "memory", "pods"],
                                                 [("default-flavor", [(9, None, None), ("36Gi", None, None),
                                                                      (5, None, None)])])], "team-ab")
    cq = parse(doc)
    assert isinstance(cq, ClusterQueue)
    assert cq.cohort == "team-ab" and cq.queueing_strategy == "BestEffortFIFO"
    assert cq.resource_groups[0].covered == ("cpu", "memory", "pods")
    assert [r.nominal for r in cq.resource_groups[0].flavors[0].resources] == [9000, 36 * 2**30, 5]
    assert cq.preemption.within_cluster_queue == "Never" and cq.preemption.reclaim_within_cohort == "Never"
    assert cq.flavor_fungibility.when_can_borrow == "MayStopSearch"
    assert cq.flavor_fungibility.when_can_preempt == "TryNextFlavor"
    assert cq.namespace_selector is not None and cq.namespace_selector.matches({})


def test_cluster_queue_v1beta1_cohort_and_old_fungibility_names() -> None:
    """v1beta1 names the cohort `spec.cohort` and takes the deprecated Borrow/Preempt (= MayStopSearch)."""
    doc = cpu_cq("cq", "500m")
    doc["apiVersion"] = "kueue.x-k8s.io/v1beta1"
    doc["spec"]["cohort"] = "c"
    doc["spec"]["flavorFungibility"] = {"whenCanBorrow": "Borrow", "whenCanPreempt": "Preempt"}
    cq = parse(doc)
    assert cq.cohort == "c" and cq.resource_groups[0].flavors[0].resources[0].nominal == 500
    assert cq.flavor_fungibility.when_can_borrow == "MayStopSearch"
    assert cq.flavor_fungibility.when_can_preempt == "MayStopSearch"
    v2 = cpu_cq("cq", 1, flavorFungibility={"whenCanBorrow": "Borrow"})
    assert "whenCanBorrow" in error(v2)
    wrong = cpu_cq("cq", 1)
    wrong["spec"]["cohort"] = "c"
    assert "spec.cohort" in error(wrong)


def test_resource_flavor() -> None:
    """The docs' ResourceFlavor (concepts/resource_flavor.md): nodeLabels, nodeTaints, tolerations."""
    rf = parse(flavor("spot", nodeLabels={"instance-type": "spot"},
                      nodeTaints=[{"key": "spot", "value": "true", "effect": "NoSchedule"}],
                      tolerations=[{"key": "spot-taint", "operator": "Exists", "effect": "NoSchedule"}]))
    assert isinstance(rf, ResourceFlavor)
    assert rf.node_labels == {"instance-type": "spot"} and rf.node_taints[0].key == "spot"
    assert rf.raw_tolerations == ({"key": "spot-taint", "operator": "Exists", "effect": "NoSchedule"},)


def test_cohort_local_queue_priority_class() -> None:
    """Cohort (parentName; v1alpha1's parent), LocalQueue, WorkloadPriorityClass."""
    c = parse({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort", "metadata": {"name": "child"},
               "spec": {"parentName": "root", "resourceGroups": [quotas(["cpu"], [("default", [(4, 2, 1)])])]}})
    assert isinstance(c, Cohort) and c.parent == "root"
    assert c.resource_groups[0].flavors[0].resources[0].lending_limit == 1000
    old = parse({"apiVersion": "kueue.x-k8s.io/v1alpha1", "kind": "Cohort", "metadata": {"name": "x"},
                 "spec": {"parent": "root"}})
    assert old.parent == "root"
    lq = parse(local_queue("user-queue", "cluster-queue", "team-a"))
    assert isinstance(lq, LocalQueue) and lq.key == "team-a/user-queue" and lq.cluster_queue == "cluster-queue"
    pc = parse({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass",
                "metadata": {"name": "p"}, "value": 100})
    assert isinstance(pc, WorkloadPriorityClass) and pc.value == 100
    assert is_kueue_object(local_queue("a", "b")) and not is_kueue_object({"apiVersion": "v1", "kind": "Pod"})


def _mutate(path: list[Any], value: Any, base: dict[str, Any] | None = None) -> dict[str, Any]:
    doc = copy.deepcopy(base or cpu_cq("cq", 4, "c", borrow=1, lend=2))
    target: Any = doc
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return doc


RG = ["spec", "resourceGroups", 0]
RQ = [*RG, "flavors", 0, "resources", 0]


@pytest.mark.parametrize(("doc", "field", "words"), [
    # clusterqueue_webhook_test.go 'should not allow negative quota' (nominalQuota, borrowingLimit, lendingLimit)
    (_mutate([*RQ, "nominalQuota"], "-1"), "nominalQuota", "greater than or equal to 0"),
    (_mutate([*RQ, "borrowingLimit"], "-1"), "borrowingLimit", "greater than or equal to 0"),
    (_mutate([*RQ, "lendingLimit"], "-1"), "lendingLimit", "greater than or equal to 0"),
    # 'lendingLimit should be less than or equal to nominalQuota'
    (_mutate([*RQ, "lendingLimit"], 5), "lendingLimit", "less than or equal to the nominalQuota"),
    # 'should not allow borrowingLimit/lendingLimit without a cohort'
    (_mutate(["spec", "cohortName"], ""), "borrowingLimit", "nil when cohort is empty"),
    # CRD enums
    (_mutate(["spec", "queueingStrategy"], "LIFO"), "spec.queueingStrategy", "StrictFIFO"),
    (_mutate(["spec", "stopPolicy"], "Pause"), "spec.stopPolicy", "HoldAndDrain"),
    (_mutate(["spec", "preemption"], {"withinClusterQueue": "Any"}), "withinClusterQueue", "LowerPriority"),
    (_mutate(["spec", "preemption"], {"reclaimWithinCohort": "Sometimes"}), "reclaimWithinCohort", "Any"),
    # CEL rule 'reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never'
    (_mutate(["spec", "preemption"], {"borrowWithinCohort": {"policy": "LowerPriority"}}), "spec.preemption",
     "reclaimWithinCohort=Never"),
    # validateFlavorFungibility: preference needs both TryNextFlavor
    (_mutate(["spec", "flavorFungibility"], {"preference": "PreemptionOverBorrowing"}), "preference",
     "TryNextFlavor"),
    # CEL: flavors must have the same number of resources as coveredResources
    (_mutate([*RG, "coveredResources"], ["cpu", "memory"]), "resources", "same number"),
    # 'resource names must match coveredResources'
    (_mutate([*RQ, "name"], "memory"), "resources[0].name", "must match"),
    # the CRD's required fields
    (_mutate([*RQ, "nominalQuota"], None), "nominalQuota", "required"),
    (_mutate([*RG, "flavors"], []), "flavors", "at least 1"),
    # quantities as Kubernetes writes them
    (_mutate([*RQ, "nominalQuota"], "4 cores"), "nominalQuota", "invalid quantity"),
    # validateFairSharing
    (_mutate(["spec", "fairSharing"], {"weight": "-1"}), "fairSharing.weight", "greater than or equal to 0"),
    (_mutate(["spec", "fairSharing"], {"weight": "0.5n"}), "fairSharing.weight", "1n"),
    # names are DNS subdomains
    (_mutate(["spec", "cohortName"], "Team_A"), "spec.cohortName", "DNS subdomain"),
    (_mutate(["apiVersion"], "kueue.x-k8s.io/v1"), "apiVersion", "v1beta2"),
])
def test_cluster_queue_rejected(doc: dict[str, Any], field: str, words: str) -> None:
    message = error(doc)
    assert field in message and words in message
    assert message.startswith("kueue.yaml: ClusterQueue cq: ")


def test_resource_group_limits() -> None:
    """CRD MaxItems: at most 16 resourceGroups and 64 flavors per group; a flavor or a resource in only one
    group (validateResourceGroups: Duplicate)."""
    group = quotas(["cpu"], [("default", [(1, None, None)])])
    many = cluster_queue("cq", [quotas([f"r{i}"], [(f"f{i}", [(1, None, None)])]) for i in range(17)])
    assert "at most 16" in error(many)
    flavors = cluster_queue("cq", [quotas(["cpu"], [(f"f{i}", [(1, None, None)]) for i in range(65)])])
    assert "at most 64" in error(flavors)
    dup_flavor = cluster_queue("cq", [group, quotas(["memory"], [("default", [(1, None, None)])])])
    assert "resourceGroups[1].flavors[0].name: duplicate" in error(dup_flavor)
    dup_resource = cluster_queue("cq", [group, quotas(["cpu"], [("other", [(1, None, None)])])])
    assert "resourceGroups[1].coveredResources[0]: duplicate" in error(dup_resource)


def test_resource_flavor_rejected() -> None:
    """resourceflavor CRD: at most 8 nodeLabels, taint effects, tolerations' CEL rules."""
    assert "at most 8" in error(flavor("f", nodeLabels={f"k{i}": "v" for i in range(9)}))
    assert "nodeTaints[0].effect" in error(flavor("f", nodeTaints=[{"key": "a", "effect": "Sometimes"}]))
    assert "tolerations[0].operator" in error(flavor("f", tolerations=[{"operator": "Equal"}]))
    assert "nodeLabels" in error(flavor("f", topologyName="default"))


def test_cohort_and_priority_class_rejected() -> None:
    """cohort_webhook_test.go: limits need a parent; a WorkloadPriorityClass needs an int32 value."""
    no_parent = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort", "metadata": {"name": "c"},
                 "spec": {"resourceGroups": [quotas(["cpu"], [("default", [(1, 1, None)])])]}}
    assert "nil when parent is empty" in error(no_parent)
    pc = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass", "metadata": {"name": "p"}}
    assert "value: is required" in error(pc)
    assert "value" in error({**pc, "value": 2**31})
    assert "value: must be of type integer, got string '7'" in error({**pc, "value": "7"})
    whole = parse({**pc, "value": 7.0})  # kube-apiserver reads an integral number as an integer
    assert isinstance(whole, WorkloadPriorityClass) and whole.value == 7


def test_load_rejects_duplicates() -> None:
    docs = [cpu_cq("cq", 1), cpu_cq("cq", 2)]
    with pytest.raises(InputError, match=r"ClusterQueue cq: metadata\.name: already defined"):
        load_kueue([(d, Source("a.yaml", i)) for i, d in enumerate(docs)])
