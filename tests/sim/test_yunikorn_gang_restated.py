"""YuniKorn's gang scheduling (k8shim task groups and placeholders) as k8shim's own end-to-end tests expect it,
restated from apache/yunikorn-k8shim test/e2e/gang_scheduling/gang_scheduling_test.go (23b6b47f): the placeholders
(phalanx/admission/yunikorn_placeholders.py) decide both; without them each does what native scheduling does, and fails.

Each case runs the test's Job (`createJob`: the pods labelled with the application, the task groups and the
scheduling policy in their annotations) on a node with room for it, under `yunikorn`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from phalanx.inputs.load import load_paths
from phalanx.scheduler.profiles import builtin
from phalanx.sim.report import build_report
from phalanx.sim.scenario import scenario_for
from phalanx.sim.simulation import Simulation

MIN_RESOURCE = {"cpu": "10m", "memory": "10M"}  # the test's minResource
UNSATISFIABLE = {"kubernetes.io/hostname": "unsatisfiable_node"}


def _gang_job(groups: list[dict[str, Any]], parallelism: int, policy: str, group: str | None = None) -> dict[str, Any]:
    annotations = {"yunikorn.apache.org/task-groups": json.dumps(groups),
                   "yunikorn.apache.org/schedulingPolicyParameters": policy}
    if group is not None:
        annotations["yunikorn.apache.org/task-group-name"] = group
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "gangjob", "namespace": "default", "annotations": {"phalanx.dev/duration": "300s"}},
            "spec": {"parallelism": parallelism, "completions": parallelism, "template": {
                "metadata": {"labels": {"applicationId": "app-gang"}, "annotations": annotations},
                "spec": {"schedulerName": "yunikorn", "restartPolicy": "Never", "containers": [
                    {"name": "sleep", "image": "alpine", "resources": {"requests": MIN_RESOURCE}}]}}}}


def _pods(tmp_path: Path, job: dict[str, Any]) -> list[dict[str, Any]]:
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n0", "labels": {"kubernetes.io/hostname": "n0"}},
            "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}}}
    path = tmp_path / "gang.yaml"
    path.write_text(yaml.safe_dump_all([node, job]))
    sim = Simulation(load_paths([str(path)]), builtin("yunikorn"), scenario=scenario_for("yunikorn"), until=120.0)
    return [p for p in build_report(sim.run())["pods"] if p["name"].startswith("default/gangjob")]


def test_verify_hard_gs_failed_state(tmp_path: Path) -> None:
    """Verify_Hard_GS_Failed_State: task group A's 3 placeholders cannot be placed (a node selector no node
    matches), B's 3 can; Hard style, placeholder timeout 20 s: the application fails at the timeout, and its
    pod never runs."""
    job = _gang_job([{"name": "groupa", "minMember": 3, "minResource": MIN_RESOURCE, "nodeSelector": UNSATISFIABLE},
                     {"name": "groupb", "minMember": 3, "minResource": MIN_RESOURCE}], 1,
                    "placeholderTimeoutInSeconds=20 gangSchedulingStyle=Hard")
    pods = _pods(tmp_path, job)
    assert pods and all(p["boundAt"] is None for p in pods)


def test_verify_default_gs_style(tmp_path: Path) -> None:
    """Verify_Default_GS_Style: group A (3) fits, group B's one placeholder cannot; Soft style (the default),
    timeout 20 s: the placeholders time out and the 3 real pods are then scheduled as ordinary pods, not before."""
    job = _gang_job([{"name": "groupa", "minMember": 3, "minResource": MIN_RESOURCE},
                     {"name": "groupb", "minMember": 1, "minResource": MIN_RESOURCE, "nodeSelector": UNSATISFIABLE}],
                    3, "placeholderTimeoutInSeconds=20")
    pods = _pods(tmp_path, job)
    assert len(pods) == 3 and all(p["boundAt"] is not None and p["boundAt"] >= 20 for p in pods)
