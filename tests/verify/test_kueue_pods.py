"""`verify --profile kueue` with Kueue's pod integration: plain pods, pod groups, a Deployment and StatefulSets
with the queue-name label, through the real Kueue v0.17.0 (its pod, deployment and statefulset integrations,
their webhooks installed for the run) in front of the real kube-scheduler. Kueue gates such pods
(`kueue.x-k8s.io/admission`) until it admits their workload; Phalanx's kueue profile holds them as workloads of
their own (a pod, a pod group, each pod of a Deployment, a StatefulSet whole).

Kueue's published samples (tests/upstream/kueue/pods/, from site/static/examples/pods-kueue/, and
sample-deployment.yaml) run unchanged. Skipped without the Kueue build unless PHALANX_REQUIRE_KUBE=1."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from phalanx.verify.kueue_plane import find_kueue
from phalanx.verify.oracle import Oracle
from tests.kube import require
from tests.verify.test_kueue import FLAVOR, KUEUE, assert_agrees, cluster_queue, job, local_queue, node, run

pytestmark = pytest.mark.kube

PODS = KUEUE / "pods"
SETUP = KUEUE / "single-clusterqueue-setup.yaml"
GATED = "Scheduling is blocked due to non-empty scheduling gates"
Doc = dict[str, Any]


@pytest.fixture(autouse=True)
def _kueue_built() -> None:
    require(find_kueue)


def _states(verdict: Any) -> dict[str, tuple[str, float | None]]:
    return {p["name"]: (p["kubeScheduler"]["state"], p["kubeScheduler"]["boundAt"]) for p in verdict.pods}


def _bound_at(verdict: Any, prefix: str) -> list[float]:
    """When the real scheduler bound the pods whose names start with `prefix` (every one of them bound)."""
    times = [at for name, (_, at) in _states(verdict).items() if name.startswith(prefix)]
    assert all(at is not None for at in times), times
    return sorted(at for at in times if at is not None)


def test_kueues_priority_pod_samples_admit_the_high_one(tmp_path: Path, oracle: Oracle) -> None:
    """prios.yaml, low-prio-pod.yaml and high-prio-pod.yaml (9 cpu each) in the 9-cpu ClusterQueue: Kueue orders
    the two workloads by priority, admits the high one and gates the low one (no preemption in the setup), on
    both, with kube-scheduler's message for a gated pod on both."""
    verdict = run(tmp_path, oracle, [node()], SETUP, PODS / "prios.yaml", PODS / "low-prio-pod.yaml",
                  PODS / "high-prio-pod.yaml")
    assert_agrees(verdict)
    assert verdict.total["admission"] == 2 and verdict.agree["messages"] == verdict.total["messages"] == 1
    assert _states(verdict) == {"default/high-prio-1m-sleep": ("bound", 0.0),
                                "default/low-prio-1m-sleep": ("pending", None)}
    [low] = [p for p in verdict.pods if p["name"] == "default/low-prio-1m-sleep"]
    assert low["kubeScheduler"]["message"] == low["phalanx"]["message"] == GATED


def test_kueues_pod_and_pod_group_samples_wait_for_quota(tmp_path: Path, oracle: Oracle) -> None:
    """kueue-pod-group.yaml (two 3-cpu pods, total count 2) and kueue-pod.yaml (3 cpu) behind a 3-cpu Job of 10
    minutes: the Job and the group fill the 9 cpu at once, the pod is admitted when the Job ends, on both."""
    docs = [node(), job("first", "user-queue", 1, "3", duration="10m")]
    verdict = run(tmp_path, oracle, docs, SETUP, PODS / "kueue-pod-group.yaml", PODS / "kueue-pod.yaml")
    assert_agrees(verdict)
    assert verdict.total["admission"] == 3 and verdict.total["podGroups"] == 1
    assert _bound_at(verdict, "default/sample-pod-") == [0.0, 0.0]
    assert _bound_at(verdict, "default/kueue-sleep-") == [600.0]


def test_kueues_sample_deployment_is_gated_behind_a_full_queue(tmp_path: Path, oracle: Oracle) -> None:
    """sample-deployment.yaml (3 pods of 100m) behind a 9-cpu Job of 10 minutes: Kueue's Deployment webhook
    copies the queue label to the pods, which wait gated until the Job ends, on both."""
    docs = [node(), job("big", "user-queue", 1, "9", duration="10m")]
    verdict = run(tmp_path, oracle, docs, SETUP, KUEUE / "sample-deployment.yaml")
    assert_agrees(verdict)
    assert _bound_at(verdict, "default/nginx-deployment-") == [600.0] * 3


def _stateful_set(name: str, replicas: int, arrival: str) -> Doc:
    return {"apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": name, "labels": {"kueue.x-k8s.io/queue-name": "lq"},
                         "annotations": {"phalanx.dev/arrival": arrival}},
            "spec": {"replicas": replicas, "serviceName": name, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [
                         {"name": "c", "image": "x", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}}}}


def test_a_stateful_set_is_admitted_whole_or_held(tmp_path: Path, oracle: Oracle) -> None:
    """A 4-cpu ClusterQueue: two 1-cpu plain pods, then a StatefulSet of two replicas (admitted whole at 10 s),
    then one of one replica (held: no quota left), on both."""
    pods = [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}", "labels": {
        "kueue.x-k8s.io/queue-name": "lq"}}, "spec": {"containers": [
            {"name": "c", "image": "x", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}} for i in range(2)]
    docs = [node(), FLAVOR, cluster_queue("cq", "4"), local_queue("lq", "cq"), *pods,
            _stateful_set("db", 2, "10s"), _stateful_set("cache", 1, "20s")]
    verdict = run(tmp_path, oracle, docs)
    assert_agrees(verdict)
    assert verdict.total["admission"] == 4
    assert {name: state for name, state in _states(verdict).items() if name.startswith("default/db-")} == {
        "default/db-0": ("bound", 10.0), "default/db-1": ("bound", 10.0)}
