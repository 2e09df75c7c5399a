"""`verify` on workload controllers (issue 24): the oracle runs the real ReplicaSet, Deployment, StatefulSet and
DaemonSet controllers, and their pods, named at random there, take the keys Phalanx's controllers gave theirs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from phalanx.scheduler.profiles import builtin
from phalanx.verify.compare import verify
from phalanx.verify.controller_pods import ControllerPods, MadePod
from phalanx.verify.oracle import Oracle
from tests.builders import MakeNode, MakePod


def _template(app: str, cpu: str) -> dict[str, Any]:
    pod = MakePod(app).req(cpu=cpu).manifest()
    return {"metadata": {"labels": {"app": app}}, "spec": pod["spec"]}


def _apps(kind: str, name: str, cpu: str, replicas: int | None = None, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"selector": {"matchLabels": {"app": name}}, "template": _template(name, cpu), **spec}
    if replicas is not None:
        body["replicas"] = replicas
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name, "namespace": "default"}, "spec": body}


def _real_pod(name: str, kind: str, owner: str, labels: dict[str, str] | None = None,
              node: str | None = None) -> dict[str, Any]:
    pod: dict[str, Any] = {"metadata": {"name": name, "namespace": "default", "labels": labels or {},
                                        "ownerReferences": [{"kind": kind, "name": owner, "controller": True}]},
                           "spec": {}}
    if node is not None:
        pod["spec"]["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]}}}
    return pod


def test_real_pods_take_the_keys_phalanx_gave_its_own() -> None:
    pods = ControllerPods(made={
        "Deployment default/web": [MadePod("default/web-abc12-x1", 0.0), MadePod("default/web-abc12-x2", 0.0)],
        "DaemonSet default/agent": [MadePod("default/agent-a", 0.0, "n1"), MadePod("default/agent-b", 0.0, "n2")],
        "StatefulSet default/db": [MadePod("default/db-0", 0.0)],
    }, deployments=frozenset({"default/web"}))
    assert pods.controllers() == ["daemonset-controller", "deployment-controller", "replicaset-controller",
                                  "statefulset-controller"]
    # The real Deployment's ReplicaSet has another hash: filed under the Deployment by its pods' label.
    hashed = {"pod-template-hash": "7f9c"}
    assert pods.key(_real_pod("web-7f9c-qq", "ReplicaSet", "web-7f9c", hashed)) == "default/web-abc12-x1"
    assert pods.key(_real_pod("agent-zz", "DaemonSet", "agent", node="n2")) == "default/agent-b"
    assert pods.key(_real_pod("web-7f9c-rr", "ReplicaSet", "web-7f9c", hashed)) == "default/web-abc12-x2"
    # A third pod Phalanx never made keeps its own name; a StatefulSet's names are the same on both sides.
    assert pods.key(_real_pod("web-7f9c-ss", "ReplicaSet", "web-7f9c", hashed)) is None
    assert pods.key(_real_pod("db-0", "StatefulSet", "db")) is None
    assert pods.key(_real_pod("agent-yy", "DaemonSet", "agent", node="n3")) is None
    assert pods.interchangeable() == {"Deployment default/web": ["default/web-abc12-x1", "default/web-abc12-x2"]}
    assert pods.made_at("Deployment default/web", 0.0) == 2 and pods.made_at("Deployment default/web", 1.0) == 0
    pods.reset()
    assert pods.key(_real_pod("web-7f9c-tt", "ReplicaSet", "web-7f9c", hashed)) == "default/web-abc12-x1"


def test_a_replica_set_not_named_for_its_deployment_is_its_own_owner() -> None:
    pods = ControllerPods(made={"ReplicaSet default/web-x": [MadePod("default/web-x-1", 0.0)]},
                          deployments=frozenset({"default/web"}))
    assert pods.owner(_real_pod("web-x-q", "ReplicaSet", "web-x", {"pod-template-hash": "y"})) == \
        "ReplicaSet default/web-x"
    assert pods.owner({"metadata": {"name": "bare"}}) is None


@pytest.mark.kube
def test_controller_made_pods_agree_with_kube_scheduler(tmp_path: Path, oracle: Oracle) -> None:
    nodes = [MakeNode(f"n{i}").alloc(cpu="4", memory="8Gi").manifest() for i in range(1, 4)]
    docs = [*nodes,
            _apps("DaemonSet", "agent", "500m"),
            _apps("Deployment", "web", "1500m", replicas=3),
            _apps("StatefulSet", "db", "2", replicas=2, serviceName="db"),
            MakePod("big").req(cpu="3").manifest()]
    path = tmp_path / "apps.yaml"
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    verdict = verify([str(path)], builtin("default"), oracle)
    assert verdict.agrees, verdict.differences
    # 3 daemon pods, 3 of the Deployment's, 2 of the StatefulSet's and the bare pod, each compared.
    assert verdict.total["outcome"] == 9
    names = {entry["name"] for entry in verdict.pods}
    assert {"default/db-0", "default/db-1", "default/big"} <= names
    assert sum(1 for entry in verdict.pods if entry["kubeScheduler"]["state"] == "bound") == 8


@pytest.mark.kube
def test_a_cron_jobs_runs_are_replayed_as_its_schedule_made_them(tmp_path: Path, oracle: Oracle) -> None:
    """Every six hours a 3-cpu Job of one hour; a 2-cpu pod arriving at 5h59m blocks the 6h run on a 4-cpu node
    until it ends at 7h: the real Job controller's pods wait as Phalanx's do."""
    template = MakePod("t").req(cpu="3").manifest()["spec"]
    template["restartPolicy"] = "Never"
    cron = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "report", "namespace": "default"},
            "spec": {"schedule": "0 */6 * * *", "jobTemplate": {
                "metadata": {"annotations": {"phalanx.dev/duration": "1h"}},
                "spec": {"template": {"spec": template}}}}}
    blocker = MakePod("blocker").req(cpu="2").manifest()
    blocker["metadata"]["annotations"] = {"phalanx.dev/arrival": "5h59m", "phalanx.dev/duration": "61m"}
    path = tmp_path / "cron.yaml"
    path.write_text(yaml.safe_dump_all([MakeNode("n1").alloc(cpu="4", memory="8Gi").manifest(), cron, blocker],
                                       sort_keys=False))
    verdict = verify([str(path)], builtin("default"), oracle)
    assert verdict.agrees, verdict.differences
    assert any(note.startswith("CronJob default/report: its 4 Job(s) created at the times its schedule gave them")
               for note in verdict.notes), verdict.notes
    assert verdict.total["outcome"] == 5 and verdict.total["boundAt"] == 5
