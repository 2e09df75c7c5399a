"""JobSet: child Jobs `<jobset>-<replicatedJob>-<index>` run by the Job controller, JobSet's labels on their pods,
InOrder startup, a gang through a PodGroup the pods name, a template's spec.scheduling dropped, bad input."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from phalanx.api.objects import Source
from phalanx.api.sets import parse_job_set
from phalanx.cli import main
from phalanx.controllers.jobset import JobSetController
from phalanx.inputs.load import load_paths
from phalanx.scheduler.profiles import load_profile
from phalanx.sim.report import build_report
from phalanx.sim.simulation import Simulation
from tests.builders import MakeNode, MakePod, write_manifests
from tests.controllers.set_manifests import job_set, replicated_job
from tests.test_cli_errors import fails_with

SOURCE = Source("<test>", 0)


def _simulate(tmp_path: Path, *docs: Any, until: float | None = None, profile: str = "default") -> Simulation:
    path = write_manifests(tmp_path / "input.yaml", *docs)
    return Simulation(load_paths([str(path)]), load_profile(profile), until=until).run()


def _node(cpu: str = "8") -> MakeNode:
    return MakeNode("node-a").alloc(cpu=cpu, memory="32Gi")


def test_child_jobs_and_their_pods_are_named_and_labelled_as_jobset_does(tmp_path: Path) -> None:
    doc = job_set("train", replicated_job("driver"), replicated_job("workers", replicas=2, parallelism=2))
    sim = _simulate(tmp_path, _node(), doc)
    assert sorted(sim.pods) == ["default/train-driver-0-0", "default/train-workers-0-0", "default/train-workers-0-1",
                                "default/train-workers-1-0", "default/train-workers-1-1"]
    pod = sim.pods["default/train-workers-1-0"].pod
    assert pod.owner == "default/train-workers-1" and pod.controller == "Job"
    assert {k: v for k, v in pod.labels.items() if k.startswith("jobset.sigs.k8s.io/")} == {
        "jobset.sigs.k8s.io/jobset-name": "train", "jobset.sigs.k8s.io/replicatedjob-name": "workers",
        "jobset.sigs.k8s.io/replicatedjob-replicas": "2", "jobset.sigs.k8s.io/job-index": "1",
        "jobset.sigs.k8s.io/job-global-index": "2"}
    assert pod.labels["batch.kubernetes.io/job-completion-index"] == "0"
    assert all(r.phase == "Succeeded" for r in sim.pods.values())
    rows = {(w["kind"], w["name"]): w for w in build_report(sim)["workloads"]}
    assert rows[("JobSet", "default/train")]["pods"] == 5 and rows[("JobSet", "default/train")]["succeeded"] == 5
    assert rows[("Job", "default/train-workers-0")]["pods"] == 2


def test_in_order_starts_the_workers_once_the_driver_runs(tmp_path: Path) -> None:
    busy = MakePod("busy").req(cpu="7").annotation("phalanx.dev/duration", "60s")
    doc = job_set("train", replicated_job("driver", cpu="2"), replicated_job("workers", parallelism=2), order="InOrder")
    sim = _simulate(tmp_path, _node(), busy, doc)
    assert sim.pods["default/train-driver-0-0"].bound_at == 60.0
    assert {sim.pods[k].created for k in ("default/train-workers-0-0", "default/train-workers-0-1")} == {60.0}


def test_any_order_starts_every_job_at_once(tmp_path: Path) -> None:
    busy = MakePod("busy").req(cpu="7").annotation("phalanx.dev/duration", "60s")
    doc = job_set("train", replicated_job("driver", cpu="2"), replicated_job("workers", parallelism=2))
    sim = _simulate(tmp_path, _node(), busy, doc)
    assert {r.created for k, r in sim.pods.items() if k.startswith("default/train-")} == {0.0}


def test_in_order_controller_waits_for_every_job_of_the_replicated_job() -> None:
    js = parse_job_set(job_set("t", replicated_job("a", replicas=2), replicated_job("b"), order="InOrder"), SOURCE)
    controller = JobSetController()
    first = controller.start(js, 0.0)
    assert [j.name for j in first] == ["t-a-0", "t-a-1"]
    pod = MakePod("t-a-0-0").req(cpu="1").obj()
    pod.owner, pod.controller = "default/t-a-0", "Job"
    assert controller.bound(pod, 5.0) == [] and controller.bound(pod, 6.0) == []  # the same pod again
    pod.name, pod.owner = "t-a-1-0", "default/t-a-1"
    assert [j.name for j in controller.bound(pod, 7.0)] == ["t-b-0"]


def _gang_docs(minimum: int) -> list[Any]:
    group = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
             "metadata": {"name": "train-gang", "namespace": "default"},
             "spec": {"schedulingPolicy": {"gang": {"minCount": minimum}}}}
    doc = job_set("train", replicated_job("workers", replicas=2, parallelism=2, cpu="3",
                                          schedulingGroup={"podGroupName": "train-gang"}))
    return [group, doc]


def test_a_jobset_whose_pods_name_one_pod_group_runs_as_one_gang(tmp_path: Path) -> None:
    sim = _simulate(tmp_path, _node("10"), *_gang_docs(4), until=60, profile="gang")
    assert [r.phase for r in sim.pods.values()] == ["Pending"] * 4  # room for 3 of 4: none binds
    sim = _simulate(tmp_path, _node("12"), *_gang_docs(4), until=60, profile="gang")
    assert [r.phase for r in sim.pods.values()] == ["Running"] * 4


def test_a_job_templates_scheduling_is_dropped_with_a_notice(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    doc = job_set("train", replicated_job("workers", parallelism=4, cpu="3"))
    doc["spec"]["replicatedJobs"][0]["template"]["spec"]["scheduling"] = {"schedulingPolicy": {"gang": {}}}
    path = write_manifests(tmp_path / "input.yaml", _node("10"), doc)
    assert main(["simulate", str(path), "--until", "60"]) == 0
    err = capsys.readouterr().err
    assert "spec.scheduling has no effect" in err and "default/train (spec.replicatedJobs[0].template" in err
    sim = _simulate(tmp_path, _node("10"), doc, until=60, profile="gang")
    assert sorted(r.phase for r in sim.pods.values()) == ["Pending", "Running", "Running", "Running"]
    assert not sim.groups


def _write(tmp_path: Path, doc: dict[str, Any]) -> str:
    return str(write_manifests(tmp_path / "input.yaml", _node(), doc))


def test_a_duplicate_replicated_job_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, job_set("train", replicated_job("w"), replicated_job("w")))
    fails_with(capsys, ["simulate", path], path, "JobSet default/train", "spec.replicatedJobs[1].name", "duplicate")


def test_no_replicated_jobs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, job_set("train"))
    fails_with(capsys, ["validate", path], path, "JobSet default/train", "spec.replicatedJobs", "is required")


def test_a_bad_job_template_names_the_jobset_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = job_set("train", replicated_job("w"))
    doc["spec"]["replicatedJobs"][0]["template"]["spec"]["parallelism"] = -1
    path = _write(tmp_path, doc)
    fails_with(capsys, ["simulate", path], path, "JobSet default/train",
               "spec.replicatedJobs[0].template.spec.parallelism", "at least 0")


def test_a_bad_startup_policy(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, job_set("train", replicated_job("w"), order="Sequential"))
    fails_with(capsys, ["validate", path], path, "JobSet default/train", "spec.startupPolicy.startupPolicyOrder",
               "'Sequential'")


def test_another_jobset_api_version_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = job_set("train", replicated_job("w"))
    doc["apiVersion"] = "jobset.x-k8s.io/v1alpha1"
    path = _write(tmp_path, doc)
    fails_with(capsys, ["validate", path], path, "JobSet default/train", "apiVersion", "jobset.x-k8s.io/v1alpha2")
