"""Kubeflow training jobs (PyTorchJob, TFJob, MPIJob): pods `<job>-<replica type>-<index>` with the training
operator's labels, one gang PodGroup (minAvailable, default every pod), completion, recreation under the same
name after an eviction, snapshot adoption, bad input, and a CLI run on a folder."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from phalanx.cli import main
from phalanx.inputs.load import load_paths
from phalanx.scheduler.profiles import load_profile
from phalanx.sim.report import build_report
from phalanx.sim.simulation import Simulation
from tests.builders import MakeNode, MakePod, write_manifests
from tests.controllers.set_manifests import pytorch_job, replica, training_job
from tests.test_cli_errors import fails_with

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "training-mix"


def _simulate(tmp_path: Path, *docs: Any, until: float | None = None, profile: str = "gang") -> Simulation:
    path = write_manifests(tmp_path / "input.yaml", *docs)
    return Simulation(load_paths([str(path)]), load_profile(profile), until=until).run()


def _node(name: str = "node-a", cpu: str = "8") -> MakeNode:
    return MakeNode(name).alloc(cpu=cpu, memory="32Gi").label("kubernetes.io/hostname", name)


def test_a_pytorch_job_runs_as_one_gang_and_completes(tmp_path: Path) -> None:
    sim = _simulate(tmp_path, _node(), pytorch_job("bert", workers=3, duration="10m"))
    assert sorted(sim.pods) == ["default/bert-master-0", "default/bert-worker-0", "default/bert-worker-1",
                                "default/bert-worker-2"]
    worker = sim.pods["default/bert-worker-2"].pod
    assert {k: v for k, v in worker.labels.items() if k.startswith("training.kubeflow.org/")} == {
        "training.kubeflow.org/job-name": "bert", "training.kubeflow.org/replica-type": "worker",
        "training.kubeflow.org/replica-index": "2"}
    assert sim.pods["default/bert-master-0"].pod.labels["training.kubeflow.org/job-role"] == "master"
    assert worker.owner == "default/bert" and worker.controller == "PyTorchJob" and worker.pod_group == "bert"
    assert sim.groups["default/bert"].group.min_count == 4
    assert all(r.phase == "Succeeded" and r.finished_at == 600.0 for r in sim.pods.values())
    row = next(w for w in build_report(sim)["workloads"] if w["kind"] == "PyTorchJob")
    assert (row["name"], row["pods"], row["succeeded"], row["completedAt"]) == ("default/bert", 4, 4, 600.0)


def test_a_job_that_does_not_fit_whole_stays_pending_and_min_available_lowers_the_bar(tmp_path: Path) -> None:
    sim = _simulate(tmp_path, _node(cpu="3"), pytorch_job("bert", workers=3), until=60)
    assert [r.phase for r in sim.pods.values()] == ["Pending"] * 4
    sim = _simulate(tmp_path, _node(cpu="3"), pytorch_job("bert", workers=3, min_available=3), until=60)
    assert sorted(r.phase for r in sim.pods.values()) == ["Pending", "Running", "Running", "Running"]


def test_tf_and_mpi_jobs_name_their_pods_by_replica_type(tmp_path: Path) -> None:
    tf = training_job("TFJob", "tf", {"Worker": replica(2), "PS": replica(1), "Chief": replica(1)})
    mpi = training_job("MPIJob", "mpi", {"Launcher": replica(1, restart_policy="Never"), "Worker": replica(2)})
    sim = _simulate(tmp_path, _node(cpu="16"), tf, mpi)
    assert sorted(sim.pods) == ["default/mpi-launcher", "default/mpi-worker-0", "default/mpi-worker-1",
                                "default/tf-chief-0", "default/tf-ps-0", "default/tf-worker-0", "default/tf-worker-1"]
    assert sim.pods["default/tf-ps-0"].pod.labels["training.kubeflow.org/replica-type"] == "ps"
    assert sim.pods["default/mpi-launcher"].pod.labels["training.kubeflow.org/job-role"] == "launcher"
    assert {k: g.group.min_count for k, g in sim.groups.items()} == {"default/mpi": 3, "default/tf": 4}


def test_an_evicted_pod_comes_back_under_its_name(tmp_path: Path) -> None:
    urgent = MakePod("urgent").req(cpu="1").arrival("60s").manifest()
    urgent["spec"]["priority"] = 1000
    sim = _simulate(tmp_path, _node(cpu="2"), pytorch_job("bert", workers=1, duration="10m"), urgent, until=3600,
                    profile="default")
    assert sim.preemptions == 1
    evicted = [r for k, r in sim.pods.items() if k.startswith("default/bert") and r.preempted_count]
    assert len(evicted) == 1 and evicted[0].pod.arrival == 90.0  # back after its 30s grace, same name
    assert sorted(sim.pods) == ["default/bert-master-0", "default/bert-worker-0", "default/urgent"]


def test_snapshot_pods_are_adopted_by_name(tmp_path: Path) -> None:
    running = MakePod("bert-master-0").req(cpu="1").manifest()
    running["metadata"]["ownerReferences"] = [{"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "name": "bert",
                                               "uid": "1", "controller": True}]
    running["spec"]["nodeName"] = "node-a"
    sim = _simulate(tmp_path, _node(), running, pytorch_job("bert", workers=1), until=60)
    assert sorted(sim.pods) == ["default/bert-master-0", "default/bert-worker-0"]
    assert sim.pods["default/bert-master-0"].created == 0.0 and not sim.groups


def _write(tmp_path: Path, doc: dict[str, Any]) -> str:
    return str(write_manifests(tmp_path / "input.yaml", _node(), doc))


def test_an_unknown_replica_type(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, training_job("PyTorchJob", "bert", {"Chief": replica(1)}))
    fails_with(capsys, ["simulate", path], path, "PyTorchJob default/bert", "spec.pytorchReplicaSpecs.Chief",
               "unknown replica type")


def test_two_masters(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, training_job("PyTorchJob", "bert", {"Master": replica(2)}))
    fails_with(capsys, ["validate", path], path, "PyTorchJob default/bert", "spec.pytorchReplicaSpecs.Master.replicas",
               "at most 1")


def test_a_bad_restart_policy(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, training_job("TFJob", "tf", {"Worker": replica(1, restart_policy="Sometimes")}))
    fails_with(capsys, ["validate", path], path, "TFJob default/tf", "spec.tfReplicaSpecs.Worker.restartPolicy",
               "'Sometimes'")


def test_min_available_above_the_pods(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, pytorch_job("bert", workers=1, min_available=5))
    fails_with(capsys, ["simulate", path], path, "PyTorchJob default/bert",
               "spec.runPolicy.schedulingPolicy.minAvailable", "more than the job's 2 pods")


def test_an_mpi_job_without_a_launcher(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, training_job("MPIJob", "mpi", {"Worker": replica(2)}))
    fails_with(capsys, ["validate", path], path, "MPIJob default/mpi", "spec.mpiReplicaSpecs.Launcher", "is required")


def test_a_missing_priority_class_in_a_replica_template(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = pytorch_job("bert")
    doc["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["priorityClassName"] = "gold"
    path = _write(tmp_path, doc)
    fails_with(capsys, ["simulate", path], path, "PyTorchJob default/bert",
               "spec.pytorchReplicaSpecs.Worker.template.spec.priorityClassName", "no PriorityClass named 'gold'")


def test_phalanx_simulate_on_the_training_mix_example(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "training-mix"
    shutil.copytree(EXAMPLE, folder)
    assert main(["simulate", str(folder), "--profile", "gang", "-o", "json"]) == 0
    out, err = capsys.readouterr()
    assert "skipped" not in err
    report = json.loads(out)
    kinds = {w["kind"] for w in report["workloads"]}
    assert {"JobSet", "LeaderWorkerSet", "PyTorchJob", "Job"} <= kinds
    rows = {w["name"]: w for w in report["workloads"]}
    assert rows["serving/llm"]["running"] == 4
    assert rows["research/finetune"]["succeeded"] == 4 and rows["research/sweep"]["succeeded"] == 5
