"""A `kubectl get nodes,pods,podgroups,workloads,priorityclasses,resourceslices -A -o yaml` snapshot as the
starting state (examples/snapshot/cluster.yaml)."""

from __future__ import annotations

from typing import Any

import pytest

from phalanx.cli import main
from phalanx.inputs.load import load_paths
from phalanx.scheduler.profiles import load_profile
from phalanx.sim.report import build_report
from phalanx.sim.simulation import Simulation

SNAPSHOT = "examples/snapshot/cluster.yaml"


def _report(profile: str) -> dict[str, Any]:
    return build_report(Simulation(load_paths([SNAPSHOT]), load_profile(profile)).run())


def test_snapshot_loads_as_starting_state() -> None:
    inputs = load_paths([SNAPSHOT])
    assert [n.name for n in inputs.nodes] == ["cp-1", "worker-a", "worker-b", "gpu-a"]
    assert len(inputs.pods) == 19
    assert inputs.terminated_pods == 2  # the Succeeded CronJob pod and the Evicted (Failed) web pod
    assert {p.name for p in inputs.pods if p.node_name is None} == {"eval-sweep-0", "eval-sweep-1", "eval-sweep-2",
                                                                     "search-reindex"}
    assert [pc.value for pc in inputs.priority_classes] == [2000000000, 2000001000, 1000, 100]
    pods = {p.key: p for p in inputs.pods}
    assert pods["kube-system/etcd-cp-1"].priority == 2000001000
    assert pods["kube-system/coredns-7db6d8ff4d-h7m4p"].priority == 2000000000  # from its priorityClassName
    assert pods["ml/llm-finetune-trainer-0"].start_time == 0.0  # the latest start is time 0
    assert pods["kube-system/etcd-cp-1"].start_time is not None and pods["kube-system/etcd-cp-1"].start_time < 0
    # ResourceSlice: skipped with a count where Phalanx does not read DRA objects, read where it does.
    read = len(getattr(inputs, "resource_slices", []))
    assert inputs.skipped.get("ResourceSlice", 0) + read == 1


@pytest.mark.parametrize("profile", ["default", "gang"])
def test_running_pods_keep_their_nodes_and_pending_pods_queue(profile: str) -> None:
    report = _report(profile)
    pods = {p["name"]: p for p in report["pods"]}
    assert pods["kube-system/etcd-cp-1"]["node"] == "cp-1"
    assert pods["ml/llm-finetune-trainer-1"]["node"] == "gpu-a"
    assert pods["shop/web-6f7c9d8b5-v7k3m"]["node"] == "worker-b"
    assert report["summary"]["pods"] == {"total": 19, "running": 15, "pending": 4, "succeeded": 0, "failed": 0}
    assert report["summary"]["allocated"]["nvidia.com/gpu"] == 1.0
    assert "Insufficient cpu" in pods["batch/search-reindex"]["message"]
    groups = {g["name"]: g for g in report["podGroups"]}
    # The running gang (its pods listed before its PodGroup, as kubectl prints them) counts as scheduled.
    assert groups["ml/llm-finetune-trainer"]["scheduled"] and groups["ml/llm-finetune-trainer"]["running"] == 2
    assert not groups["ml/eval-sweep"]["scheduled"]
    assert report["summary"]["groupWaitSeconds"]["count"] == 0
    assert report["summary"]["stranded"]["nvidia.com/gpu"] == 0.0


def test_cli_counts_skipped_kinds(capsys: pytest.CaptureFixture[str], tmp_path: Any) -> None:
    extra = tmp_path / "more.yaml"
    extra.write_text("apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Service, metadata: {name: s}}\n"
                     "- {apiVersion: v1, kind: ConfigMap, metadata: {name: c}}\n")
    assert main(["validate", SNAPSHOT, str(extra)]) == 0
    captured = capsys.readouterr()
    assert "valid: 4 node(s), 19 pod(s), 2 pod group(s), 1 workload(s)" in captured.out
    assert "ConfigMap: 1" in captured.err and "Service: 1" in captured.err


def test_a_snapshot_pod_group_keeps_the_conditions_it_carries() -> None:
    """PodGroupInitiallyScheduled is final once True: the fine-tuning group's True condition from the snapshot
    stands (it is not re-evaluated as initially unscheduled), and eval-sweep's False one is the scheduler's
    to update."""
    sim = Simulation(load_paths([SNAPSHOT]), load_profile("gang"), until=60.0).run()
    trainer = sim.groups["ml/llm-finetune-trainer"].conditions["PodGroupInitiallyScheduled"]
    assert (trainer["status"], trainer["reason"]) == ("True", "Scheduled")
    assert "ml/llm-finetune-trainer" in sim.scheduler.initially_scheduled
    sweep = sim.groups["ml/eval-sweep"].conditions["PodGroupInitiallyScheduled"]
    assert (sweep["status"], sweep["reason"]) == ("False", "Unschedulable")
