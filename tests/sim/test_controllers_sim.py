"""Workload controllers in the simulator: manifests as a user writes them (a Deployment, a StatefulSet, a
DaemonSet, a CronJob) run through `phalanx simulate`, checked by the report's pod counts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from phalanx.cli import main
from phalanx.inputs.load import load_paths
from phalanx.scheduler.profiles import load_profile
from phalanx.sim.report import build_report
from phalanx.sim.simulation import Simulation
from tests.builders import MakeNode, MakePod, write_manifests
from tests.controllers.apps_manifests import cron_job, daemon_set, deployment, replica_set, stateful_set


def simulate(tmp_path: Path, capsys: pytest.CaptureFixture[str], *docs: Any,
             until: str | None = None) -> tuple[dict[str, Any], str]:
    path = write_manifests(tmp_path / "input.yaml", *docs)
    argv = ["simulate", str(path), "-o", "json", *(["--until", until] if until else [])]
    status = main(argv)
    out, err = capsys.readouterr()
    assert status == 0, err
    return json.loads(out), err


def pods_of(report: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    return [p for p in report["pods"] if p["name"].startswith(f"default/{prefix}")]


def test_a_deployment_of_three_replicas_on_two_nodes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report, err = simulate(tmp_path, capsys, MakeNode("node-a").alloc(cpu="2", memory="4Gi"),
                           MakeNode("node-b").alloc(cpu="1", memory="4Gi"), deployment("web", replicas=3))
    assert "skipped" not in err  # a Deployment is no longer a kind that "does not affect scheduling"
    assert report["summary"]["pods"] == {"total": 3, "running": 3, "pending": 0, "succeeded": 0, "failed": 0}
    web = pods_of(report, "web-")
    assert sorted(p["node"] for p in web) == ["node-a", "node-a", "node-b"]


def test_a_deployment_that_does_not_fit_leaves_pods_pending(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    report, _ = simulate(tmp_path, capsys, MakeNode("node-a").alloc(cpu="2", memory="4Gi"),
                         deployment("web", replicas=3, cpu="1500m"))
    assert report["summary"]["pods"]["running"] == 1 and report["summary"]["pods"]["pending"] == 2


def test_statefulset_ordered_ready_pod_1_waits_for_pod_0(tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    busy = MakePod("busy").req(cpu="3").annotation("phalanx.dev/duration", "60s")
    node = MakeNode("node-a").alloc(cpu="4", memory="8Gi")
    report, _ = simulate(tmp_path, capsys, node, busy, stateful_set("db", replicas=2, cpu="2"))
    db = {p["name"]: p for p in pods_of(report, "db-")}
    assert db["default/db-0"]["createdAt"] == 0.0 and db["default/db-0"]["boundAt"] == 60.0
    assert db["default/db-1"]["createdAt"] == 60.0  # created only once db-0 runs
    assert db["default/db-1"]["phase"] == "Running"


def test_statefulset_parallel_creates_both_at_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    busy = MakePod("busy").req(cpu="3").annotation("phalanx.dev/duration", "60s")
    node = MakeNode("node-a").alloc(cpu="4", memory="8Gi")
    report, _ = simulate(tmp_path, capsys, node, busy, stateful_set("db", replicas=2, cpu="2", policy="Parallel"))
    assert [p["createdAt"] for p in pods_of(report, "db-")] == [0.0, 0.0]


def test_a_daemonset_on_three_nodes_with_one_tainted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    nodes = [MakeNode("node-a").alloc(cpu="4", memory="8Gi"), MakeNode("node-b").alloc(cpu="4", memory="8Gi"),
             MakeNode("node-c").alloc(cpu="4", memory="8Gi").taint("dedicated", "gpu")]
    late = MakeNode("node-d").alloc(cpu="4", memory="8Gi").arrival("5m")
    report, _ = simulate(tmp_path, capsys, *nodes, late, daemon_set("agent"), until="10m")
    agents = pods_of(report, "agent-")
    assert sorted(p["node"] for p in agents) == ["node-a", "node-b", "node-d"]
    assert [p["createdAt"] for p in agents if p["node"] == "node-d"] == [300.0]


def test_a_cronjob_every_ten_minutes_over_an_hour(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report, _ = simulate(tmp_path, capsys, MakeNode("node-a").alloc(cpu="4", memory="8Gi"),
                         cron_job("report", "*/10 * * * *", duration="2m"), until="1h")
    runs = pods_of(report, "report-")
    assert [p["createdAt"] for p in runs] == [600.0, 1200.0, 1800.0, 2400.0, 3000.0, 3600.0]
    assert report["summary"]["pods"]["succeeded"] == 5 and report["summary"]["pods"]["running"] == 1


def test_a_forbid_cronjob_skips_runs_while_one_is_active(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    report, _ = simulate(tmp_path, capsys, MakeNode("node-a").alloc(cpu="4", memory="8Gi"),
                         cron_job("report", "*/10 * * * *", duration="25m", concurrencyPolicy="Forbid"), until="1h")
    assert [p["createdAt"] for p in pods_of(report, "report-")] == [600.0, 2400.0]


def test_a_preempted_replica_is_replaced_under_a_new_name(tmp_path: Path) -> None:
    urgent = MakePod("urgent").req(cpu="2").arrival("60s").manifest()
    urgent["spec"]["priority"] = 1000
    path = write_manifests(tmp_path / "input.yaml", MakeNode("node-a").alloc(cpu="3", memory="8Gi"),
                           deployment("web", replicas=3), urgent)
    sim = Simulation(load_paths([str(path)]), load_profile("default"), until=600).run()
    report = build_report(sim)
    web = pods_of(report, "web-")
    assert sim.preemptions == 1
    assert sorted(p["phase"] for p in web) == ["Failed", "Failed", "Pending", "Pending", "Running"]
    failed = [p for p in web if p["phase"] == "Failed"]
    assert all(p["preemptedCount"] == 1 for p in failed)
    assert {p["createdAt"] for p in web if p["phase"] == "Pending"} == {60.0}  # replaced at once on eviction


def test_snapshot_pods_of_a_replica_set_are_adopted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    existing = []
    for name in ("web-abcde", "web-fghij"):
        pod = MakePod(name).req(cpu="1").label("app", "web").manifest()
        pod["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web",
                                               "uid": "1", "controller": True}]
        pod["spec"]["nodeName"] = "node-a"
        existing.append(pod)
    report, _ = simulate(tmp_path, capsys, MakeNode("node-a").alloc(cpu="4", memory="8Gi"), *existing,
                         replica_set("web", replicas=3))
    assert report["summary"]["pods"]["total"] == 3 and report["summary"]["pods"]["running"] == 3


def test_the_chart_load_example(capsys: pytest.CaptureFixture[str]) -> None:
    """examples/chart-load: the chart's pods run; only two of the gang's three workers ever find room."""
    example = Path(__file__).resolve().parents[2] / "examples" / "chart-load"
    assert main(["simulate", str(example), "--until", "3h", "-o", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    phases = {p["name"]: p["phase"] for p in report["pods"]}
    assert sum(1 for name, phase in phases.items() if name.startswith("shop/web-") and phase == "Running") == 4
    assert [phases[f"shop/postgres-{i}"] for i in range(3)] == ["Running"] * 3
    assert sum(1 for name in phases if name.startswith("monitoring/node-exporter-")) == 3  # not on the GPU node
    assert sum(1 for name in phases if name.startswith("shop/sales-report-")) == 6
    assert sorted(phases[f"ml/train-{i}"] for i in range(3)) == ["Pending", "Running", "Running"]


def test_a_deployment_adopts_its_snapshot_pods(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`kubectl get deployments,pods -o yaml` without the ReplicaSets: the pods are not made twice."""
    existing = []
    for suffix in ("abcde", "fghij"):
        pod = MakePod(f"web-5d4f8c7b9-{suffix}").req(cpu="1").label("app", "web") \
            .label("pod-template-hash", "5d4f8c7b9").manifest()
        pod["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                               "name": "web-5d4f8c7b9", "uid": "1", "controller": True}]
        pod["spec"]["nodeName"] = "node-a"
        existing.append(pod)
    report, _ = simulate(tmp_path, capsys, MakeNode("node-a").alloc(cpu="4", memory="8Gi"), *existing,
                         deployment("web", replicas=3))
    assert report["summary"]["pods"]["total"] == 3 and report["summary"]["pods"]["running"] == 3


def test_a_replace_cronjob_deletes_the_running_job(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report, _ = simulate(tmp_path, capsys, MakeNode("node-a").alloc(cpu="4", memory="8Gi"),
                         cron_job("report", "*/10 * * * *", duration="25m", concurrencyPolicy="Replace"),
                         until="35m")
    runs = pods_of(report, "report-")
    assert [(p["createdAt"], p["finishedAt"]) for p in runs] == [(600.0, 1200.0), (1200.0, 1800.0), (1800.0, None)]
    assert report["summary"]["pods"]["running"] == 1


def test_a_job_adopts_its_snapshot_pods(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A snapshot's Job with two of its three pods running (kubectl get jobs,pods): the Job controller counts them
    as active and makes the third only; when the three succeed it makes none more."""
    existing = []
    for name in ("train-x7k2p", "train-q9m4z"):
        pod = MakePod(name).req(cpu="1").label("job-name", "train").manifest()
        pod["metadata"]["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "Job", "name": "train",
                                               "uid": "1", "controller": True}]
        pod["metadata"]["annotations"] = {"phalanx.dev/duration": "10m"}
        pod["spec"]["nodeName"] = "node-a"
        existing.append(pod)
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "train", "namespace": "default"},
           "spec": {"parallelism": 3, "completions": 3, "template": {
               "metadata": {"annotations": {"phalanx.dev/duration": "10m"}},
               "spec": {"restartPolicy": "Never", "containers": [
                   {"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}]}}}}
    report, _ = simulate(tmp_path, capsys, MakeNode("node-a").alloc(cpu="4", memory="8Gi"), *existing, job)
    assert report["summary"]["pods"]["total"] == 3 and report["summary"]["pods"]["succeeded"] == 3
    assert sorted(p["name"] for p in pods_of(report, "train-")) == [
        "default/train-2", "default/train-q9m4z", "default/train-x7k2p"]
