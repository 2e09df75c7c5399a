"""Small random queueing cases for the Kueue differential suite: seeded, so a failing case is one number to rerun. Each
case is a list of ordinary manifests: three nodes (two pools when the case has two ResourceFlavors), two
PriorityClasses, one or two ClusterQueues (two share a cohort, with borrowing and lending limits on some), their
preemption policies and queueing strategy, a LocalQueue each, and two to five Jobs naming a LocalQueue, some with a
priority, some open to partial admission (`kueue.x-k8s.io/job-min-parallelism`), arriving over a few minutes; with
PHALANX_KUEUE_PODS=1, in about a third of the cases a plain pod or a pod group of two with the label too (Kueue's
pod integration); in some cases with a cohort, Kueue's fair sharing on (its Configuration, bare or in its ConfigMap,
one of the strategy lists, fair weights on some ClusterQueues) with a third ClusterQueue that reclaims and more
Jobs, arriving over three minutes, so that the queues borrow from each other and their shares decide. Quota, not
nodes, is what runs short: the nodes hold every Job at once, so what the real Kueue decides is what is compared, not
which pods a full node turns away.
"""

from __future__ import annotations

import os
import random
from typing import Any

import yaml

Doc = dict[str, Any]
PRIORITIES = {"low": 100, "high": 1000}
FAIR_SHARING = 0.4  # of the cases with a cohort: Kueue's fair sharing on
# Of the cases: plain pods or a pod group beside the Jobs (Kueue's pod integration), when PHALANX_KUEUE_PODS=1.
# Off by default, so CI's cases are Jobs only: an evicted pod group waits on the real Kueue for replacement pods
# that nothing makes, where Phalanx makes its members again (docs/fidelity.md, "Kueue").
PODS = 0.35 if os.environ.get("PHALANX_KUEUE_PODS") == "1" else 0.0
GROUP = "kueue.x-k8s.io/v1beta2"


def generate_kueue_case(seed: int) -> list[Doc]:
    rng = random.Random(seed)
    pools = ("a", "b") if rng.random() < 0.3 else ()
    docs: list[Doc] = [_node(f"node-{i}", pools[min(i, 1)] if pools else None) for i in range(3)]
    docs += [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
              "value": value} for name, value in PRIORITIES.items()]
    flavors = [f"pool-{p}" for p in pools] or ["default-flavor"]
    for name, pool in zip(flavors, pools or (None,), strict=True):
        spec = {"nodeLabels": {"pool": pool}} if pool else {}
        docs.append({"apiVersion": GROUP, "kind": "ResourceFlavor", "metadata": {"name": name}, "spec": spec})
    queues = ["team-a", "team-b"][:rng.choice((1, 2, 2))]
    cohort = len(queues) > 1
    for name in queues:
        docs.append(_cluster_queue(rng, name, flavors, cohort))
        docs.append({"apiVersion": GROUP, "kind": "LocalQueue", "metadata": {"name": name, "namespace": "default"},
                     "spec": {"clusterQueue": name}})
    jobs = [_job(rng, i, rng.choice(queues)) for i in range(rng.randint(2, 5))]
    # Drawn after everything else, so that a seed's case is the one it was before partial admission was drawn.
    for job in jobs:
        pods = job["spec"]["parallelism"]
        if pods > 1 and rng.random() < 0.4:
            job["metadata"]["annotations"]["kueue.x-k8s.io/job-min-parallelism"] = str(rng.randint(1, pods - 1))
    if cohort and rng.random() < FAIR_SHARING:
        docs.append(_fair_sharing(rng, [d for d in docs if d["kind"] == "ClusterQueue"]))
        # A third queue and more work, staggered, so that queues borrow from each other and shares decide.
        docs.append(_cluster_queue(rng, "team-c", flavors, True))
        docs[-1]["spec"]["preemption"] = {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"}
        docs.append({"apiVersion": GROUP, "kind": "LocalQueue", "metadata": {"name": "team-c", "namespace": "default"},
                     "spec": {"clusterQueue": "team-c"}})
        for i in range(len(jobs), len(jobs) + rng.randint(3, 5)):
            job = _job(rng, i, rng.choice((*queues, "team-c")))
            job["metadata"]["annotations"]["phalanx.dev/arrival"] = f"{rng.choice((0, 60, 120, 180)) + i}s"
            job["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = \
                rng.choice(("1", "2", "3"))
            jobs.append(job)
    # Kueue's pod integration, drawn last for the same reason: plain pods and pod groups with the label.
    if rng.random() < PODS:
        for i in range(len(jobs), len(jobs) + rng.randint(1, 2)):
            jobs += _pods(rng, i, rng.choice(queues))
    return docs + jobs


def _fair_sharing(rng: random.Random, queues: list[Doc]) -> Doc:
    """Kueue's Configuration with fairSharing on (one of the three strategy lists Kueue accepts), as the bare file
    or its ConfigMap; some ClusterQueues get a fairSharing.weight. Drawn last, as the case's other draws were."""
    strategies = rng.choice((["LessThanOrEqualToFinalShare", "LessThanInitialShare"],
                             ["LessThanOrEqualToFinalShare"], ["LessThanInitialShare"]))
    for cq in queues:
        if rng.random() < 0.4:
            cq["spec"]["fairSharing"] = {"weight": rng.choice(("0", "500m", "2", "3"))}
        if rng.random() < 0.6:
            cq["spec"]["preemption"]["reclaimWithinCohort"] = "Any"
    config: Doc = {"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
                   "fairSharing": {"preemptionStrategies": strategies}}
    if rng.random() < 0.5:
        return config
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kueue-manager-config",
                                                                  "namespace": "kueue-system"},
            "data": {"controller_manager_config.yaml": yaml.safe_dump(config, sort_keys=False)}}


def _node(name: str, pool: str | None) -> Doc:
    labels = {"kubernetes.io/hostname": name, **({"pool": pool} if pool else {})}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
            "status": {"allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110"}}}


def _cluster_queue(rng: random.Random, name: str, flavors: list[str], cohort: bool) -> Doc:
    resources = []
    for flavor in flavors:
        cpu: Doc = {"name": "cpu", "nominalQuota": rng.choice((2, 3, 4, 6))}
        if cohort and rng.random() < 0.3:
            cpu["borrowingLimit"] = rng.choice((0, 1, 2))
        if cohort and rng.random() < 0.3:
            cpu["lendingLimit"] = rng.choice((0, 1, 2))
        resources.append({"name": flavor, "resources": [cpu, {"name": "memory", "nominalQuota": "64Gi"}]})
    preemption: Doc = {"withinClusterQueue": rng.choice(("Never", "LowerPriority"))}
    if cohort:
        preemption["reclaimWithinCohort"] = rng.choice(("Never", "Any", "LowerPriority"))
    spec: Doc = {"namespaceSelector": {}, "queueingStrategy": rng.choice(("BestEffortFIFO", "StrictFIFO")),
                 "preemption": preemption,
                 "resourceGroups": [{"coveredResources": ["cpu", "memory"], "flavors": resources}]}
    if cohort:
        spec["cohortName"] = "org"
    return {"apiVersion": GROUP, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": spec}


def _pods(rng: random.Random, i: int, queue: str) -> list[Doc]:
    """A plain pod (`pod-<i>`) or a pod group of two (`group-<i>-0`, `-1`, total count 2) with the queue label,
    Kueue's pod integration gating them until it admits their workload."""
    members = rng.choice((1, 2))
    labels = {"kueue.x-k8s.io/queue-name": queue}
    annotations = {"phalanx.dev/arrival": f"{rng.choice((0, 30, 90)) + i}s", "phalanx.dev/duration": f"{641 + 97 * i}s"}
    if members > 1:
        labels["kueue.x-k8s.io/pod-group-name"] = f"group-{i}"
        annotations["kueue.x-k8s.io/pod-group-total-count"] = str(members)
    spec: Doc = {"restartPolicy": "Never", "containers": [{"name": "main", "image": "server:v1", "resources": {
        "requests": {"cpu": rng.choice(("500m", "1", "2")), "memory": "1Gi"}}}]}
    if rng.random() < 0.4:
        spec["priorityClassName"] = rng.choice(tuple(PRIORITIES))
    names = [f"group-{i}-{k}" for k in range(members)] if members > 1 else [f"pod-{i}"]
    return [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default",
                                                             "labels": dict(labels), "annotations": dict(annotations)},
             "spec": spec} for name in names]


def _job(rng: random.Random, i: int, queue: str) -> Doc:
    pods = rng.choice((1, 1, 2, 3))
    template: Doc = {"restartPolicy": "Never", "containers": [{"name": "main", "image": "trainer:v1", "resources": {
        "requests": {"cpu": rng.choice(("500m", "1", "1", "2")), "memory": "1Gi"}}}]}
    if rng.random() < 0.4:
        template["priorityClassName"] = rng.choice(tuple(PRIORITIES))
    # Distinct run times: no two Jobs end in one instant (the oracle's kubelet would end them one at a time).
    annotations = {"phalanx.dev/arrival": f"{rng.choice((0, 0, 30, 90)) + i}s",
                   "phalanx.dev/duration": f"{600 + 97 * i}s"}
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": f"job-{i}", "namespace": "default", "labels": {"kueue.x-k8s.io/queue-name": queue},
                         "annotations": annotations},
            "spec": {"parallelism": pods, "completions": pods, "template": {"spec": template}}}
