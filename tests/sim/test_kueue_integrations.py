"""Kueue admits what Kueue integrates (phalanx.sim.admission_gate): a JobSet and the Kubeflow jobs whole, held
until admitted as Kueue suspends them, and a LeaderWorkerSet one workload per group. Kueue's published samples
(tests/upstream/kueue, unchanged) run within their ClusterQueue's quota."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

import yaml

from phalanx.inputs.load import load_paths
from phalanx.scheduler.profiles import builtin
from phalanx.sim.durations import DEFAULT_DURATIONS
from phalanx.sim.report import build_report
from phalanx.sim.scenario import scenario_for
from phalanx.sim.simulation import Simulation

KUEUE = Path(__file__).resolve().parents[1] / "upstream" / "kueue"
SAMPLES = ["sample-jobset.yaml", "sample-pytorchjob.yaml", "sample-tfjob.yaml", "sample-mpijob.yaml",
           "sample-leaderworkerset.yaml", "sample-job.yaml", "sample-deployment.yaml"]
Doc = dict[str, Any]


def node(name: str, cpu: str, **labels: str) -> Doc:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
            "status": {"allocatable": {"cpu": cpu, "memory": "64Gi", "pods": "110"}}}


def queues(cpu: str, flavors: tuple[tuple[str, dict[str, str]], ...] = (("default", {}),)) -> list[Doc]:
    out: list[Doc] = [{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": name},
                       "spec": {"nodeLabels": labels} if labels else {}} for name, labels in flavors]
    out.append({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "cq"},
                "spec": {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                    {"name": name, "resources": [{"name": "cpu", "nominalQuota": cpu}]} for name, _ in flavors]}]}})
    out.append({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
                "metadata": {"name": "q", "namespace": "default"}, "spec": {"clusterQueue": "cq"}})
    return out


def container(cpu: str) -> list[Doc]:
    return [{"name": "main", "image": "trainer:v1", "resources": {"requests": {"cpu": cpu}}}]


def job_set(name: str, *replicated: tuple[str, int, int, int], duration: str = "1h", arrival: str = "0s") -> Doc:
    """A JobSet naming LocalQueue q: (name, replicas, parallelism, completions) per replicated job, 1 cpu a pod."""
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": name, "labels": {"kueue.x-k8s.io/queue-name": "q"},
                         "annotations": {"phalanx.dev/duration": duration, "phalanx.dev/arrival": arrival}},
            "spec": {"replicatedJobs": [
                {"name": rj, "replicas": replicas, "template": {"spec": {
                    "parallelism": parallelism, "completions": completions, "template": {"spec": {
                        "restartPolicy": "Never", "containers": container("1")}}}}}
                for rj, replicas, parallelism, completions in replicated]}}


def simulate(tmp_path: Path, docs: list[Doc], profile: str = "kueue", *files: Path) -> Any:
    path = tmp_path / "input.yaml"
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False), encoding="utf-8")
    inputs = load_paths([str(path), *(str(f) for f in files)])
    # As the CLI runs them: batch pods without a duration run an hour (phalanx.sim.durations).
    scenario = dataclasses.replace(scenario_for(profile), durations=DEFAULT_DURATIONS)
    return build_report(Simulation(inputs, builtin(profile), scenario=scenario).run())


def workloads(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {w["name"]: w for w in report["admission"]["workloads"]}


def cpu_at(report: dict[str, Any], t: float) -> float:
    """CPUs requested by the pods running at time t (every pod of these tests asks 1 cpu unless the samples)."""
    running = [p for p in report["pods"] if p["boundAt"] is not None and p["boundAt"] <= t
               and (p["finishedAt"] is None or p["finishedAt"] > t)]
    return float(len(running))


def test_kueues_samples_run_within_the_cluster_queues_quota(tmp_path: Path) -> None:
    """Kueue's single-ClusterQueue setup (9 cpu) with its JobSet, PyTorchJob, TFJob, MPIJob, LeaderWorkerSet, Job
    and Deployment samples, unchanged, on a 16-cpu node: at most 9 cpu run at once under kueue, none is "not modelled",
    and every workload runs in the end; under gang everything starts at once."""
    files = [KUEUE / "single-clusterqueue-setup.yaml", *(KUEUE / f for f in SAMPLES)]
    kueue = simulate(tmp_path, [node("big", "16")], "kueue", *files)
    gang = simulate(tmp_path, [node("big", "16")], "gang", *files)
    assert kueue["admission"]["notModelled"] == []
    rows = workloads(kueue)
    assert {name.split(" ")[0] for name in rows} == {"Job", "JobSet", "PyTorchJob", "TFJob", "MPIJob", "PodGroup",
                                                     "Pod"}
    assert all(row["admitted"] for row in rows.values())
    first = sorted(re.sub(r"(sleep-job|sample-job)-[a-z0-9]{5}$", r"\1-", name) for name, row in rows.items()
                   if row["admissionWaits"] == [0.0])  # generateName's suffix dropped
    # In the order the files were given, as long as they fit: 3 + 2 + 3 + 2 x 0.5 cpu
    assert first == ["JobSet default/sleep-job-", "PodGroup default/nginx-leaderworkerset-0",
                     "PodGroup default/nginx-leaderworkerset-1", "PyTorchJob default/pytorch-simple",
                     "TFJob default/tensorflow-dist-mnist"]
    started = {p["name"] for p in kueue["pods"] if p["boundAt"] == 0.0}
    assert not any(name.startswith(("default/pi-", "default/sample-job", "default/nginx-deployment"))
                   for name in started)
    assert all(p["boundAt"] == 0.0 for p in gang["pods"])
    # The held ones' pods count their wait from their owner's creation, as a Job's do.
    mpi = next(w for w in kueue["workloads"] if w["name"] == "default/pi")
    assert mpi["waitSeconds"]["max"] == 3600.0


def test_a_job_sets_pod_sets_count_replicas_times_its_jobs_pods(tmp_path: Path) -> None:
    """Restates Kueue's TestPodSets "no annotations" (pkg/controller/jobs/jobset/jobset_controller_test.go): job1
    with 2 replicas of parallelism 1 and job2 with 3 replicas of parallelism 2, completions 3, make pod sets of 2
    and 6: 8 cpu is admitted by a quota of 8, held by a quota of 7 with every pod not created."""
    spec = job_set("js", ("job1", 2, 1, 1), ("job2", 3, 2, 3))
    admitted = simulate(tmp_path, [node("n", "16"), *queues("8"), spec])
    assert workloads(admitted)["JobSet default/js"]["admissionWaits"] == [0.0]
    held = simulate(tmp_path, [node("n", "16"), *queues("7"), spec])
    assert workloads(held)["JobSet default/js"]["admitted"] is False
    assert held["pods"] == []
    assert held["summary"]["notAdmitted"] == {"workloads": 1, "podsNotCreated": 2 + 9}
    row = next(w for w in held["workloads"] if w["name"] == "default/js")
    assert row["kind"] == "JobSet" and row["podsNotCreated"] == 11 and row["held"]


def test_a_job_sets_quota_returns_when_all_its_jobs_complete(tmp_path: Path) -> None:
    """A JobSet whose Job runs 4 completions 2 at a time holds its 2 cpu until the last completion ends (2 h):
    the next JobSet, for which the quota has no room before, is admitted then, not after the first wave."""
    first = job_set("first", ("work", 1, 2, 4))
    second = job_set("second", ("work", 1, 2, 2), arrival="1m")
    report = simulate(tmp_path, [node("n", "16"), *queues("2"), first, second])
    assert workloads(report)["JobSet default/second"]["admissionWaits"] == [7140.0]
    assert cpu_at(report, 3600.0) == 2.0


def test_a_flavors_node_labels_reach_the_job_sets_pods(tmp_path: Path) -> None:
    """The flavor Kueue assigns puts its nodeLabels on the pods the JobSet's Jobs make."""
    flavors = (("on-demand", {"pool": "on-demand"}), ("spot", {"pool": "spot"}))
    docs = [node("od", "16", pool="on-demand"), node("spot", "16", pool="spot"), *queues("2", flavors),
            job_set("a", ("work", 1, 2, 2)), job_set("b", ("work", 1, 2, 2))]
    report = simulate(tmp_path, docs)
    nodes = {p["name"]: p["node"] for p in report["pods"]}
    assert {nodes["default/a-work-0-0"], nodes["default/a-work-0-1"]} == {"od"}
    assert {nodes["default/b-work-0-0"], nodes["default/b-work-0-1"]} == {"spot"}


def test_a_leader_worker_set_is_a_workload_per_group(tmp_path: Path) -> None:
    """Kueue makes a workload per LeaderWorkerSet group: with quota for one group of 3 pods, the first group
    runs and the second waits for it, whole (never some of its pods)."""
    lws = {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
           "metadata": {"name": "serve", "labels": {"kueue.x-k8s.io/queue-name": "q"}},
           "spec": {"replicas": 2, "leaderWorkerTemplate": {"size": 3, "workerTemplate": {"spec": {
               "containers": container("1")}}}}}
    report = simulate(tmp_path, [node("n", "16"), *queues("3"), lws])
    rows = workloads(report)
    assert set(rows) == {"PodGroup default/serve-0", "PodGroup default/serve-1"}
    assert rows["PodGroup default/serve-0"]["admitted"] and not rows["PodGroup default/serve-1"]["admitted"]
    bound = sorted(p["name"] for p in report["pods"] if p["boundAt"] is not None)
    assert bound == ["default/serve-0", "default/serve-0-1", "default/serve-0-2"]


def test_without_a_queue_label_kueue_leaves_them_alone(tmp_path: Path) -> None:
    spec = job_set("free", ("work", 1, 4, 4))
    del spec["metadata"]["labels"]
    report = simulate(tmp_path, [node("n", "16"), *queues("1"), spec])
    assert report["admission"]["workloads"] == []
    assert cpu_at(report, 0.0) == 4.0


def test_a_deployments_pods_are_each_a_workload(tmp_path: Path) -> None:
    """Kueue's Deployment webhook copies the LocalQueue label to the pod template (deployment_webhook.go), and
    the pod integration makes each pod a workload: with quota for 2 of 3 one-cpu pods, the third waits."""
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment",
                  "metadata": {"name": "web", "labels": {"kueue.x-k8s.io/queue-name": "q"}},
                  "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}}, "template": {
                      "metadata": {"labels": {"app": "web"}}, "spec": {"containers": container("1")}}}}
    report = simulate(tmp_path, [node("n", "16"), *queues("2"), deployment])
    rows = list(workloads(report).values())
    assert len(rows) == 3 and all(row["name"].startswith("Pod default/web-") for row in rows)
    assert sum(row["admitted"] for row in rows) == 2
    assert cpu_at(report, 0.0) == 2.0


def _stateful_set(name: str, replicas: int) -> Doc:
    return {"apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": name, "labels": {"kueue.x-k8s.io/queue-name": "q"}},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}}, "template": {
                "metadata": {"labels": {"app": name}}, "spec": {"containers": container("1")}}}}


def test_a_stateful_set_is_one_workload_of_every_replica(tmp_path: Path) -> None:
    """Kueue's StatefulSet integration (statefulset_reconciler.go constructWorkload): one workload, one pod set of
    `replicas` pods; its pods wait (gated) until it is admitted whole. In 3 cpu the first StatefulSet's 2 pods
    run; the second's 2 would need 4: held, its pods never created, and it is never "not modelled"."""
    report = simulate(tmp_path, [node("n", "16"), *queues("3"), _stateful_set("db", 2), _stateful_set("cache", 2)])
    assert report["admission"]["notModelled"] == []
    rows = workloads(report)
    assert rows["StatefulSet default/db"]["admitted"]
    assert not rows["StatefulSet default/cache"]["admitted"]
    assert sorted(p["name"] for p in report["pods"] if p["node"] is not None) == ["default/db-0", "default/db-1"]
    assert not [p for p in report["pods"] if p["name"].startswith("default/cache")]


def test_kueues_partial_admission_sample_runs_as_many_pods_as_the_quota_holds(tmp_path: Path) -> None:
    """Kueue's sample-job-partial-admission.yaml, unchanged (20 pods of 1 cpu, job-min-parallelism 5), behind its
    single-ClusterQueue setup (9 cpu): Kueue admits it at once with parallelism 9 (PodSetReducer: the largest
    count between 5 and 20 that fits), never "not modelled"; its 20 completions then run 9 at a time."""
    files = [KUEUE / "single-clusterqueue-setup.yaml", KUEUE / "sample-job-partial-admission.yaml"]
    report = simulate(tmp_path, [node("big", "16")], "kueue", *files)
    assert report["admission"]["notModelled"] == []
    row = workloads(report)["Job default/sample-job-partial-admission"]
    assert row["admitted"] and row["admissionWaits"] == [0.0]
    assert cpu_at(report, 0.0) == 9
    assert max(cpu_at(report, t) for t in (0.0, 3600.0, 7200.0)) == 9
    assert len([p for p in report["pods"] if p["phase"] == "Succeeded"]) == 20


def test_a_job_whose_completions_follow_is_admitted_with_fewer_completions(tmp_path: Path) -> None:
    """`kueue.x-k8s.io/job-completions-equal-parallelism: "true"` (an Indexed Job, parallelism = completions): the
    admitted count becomes its completions too (RunWithPodSetsInfo), so only 4 pods ever run in 4 cpu."""
    job = {"apiVersion": "batch/v1", "kind": "Job",
           "metadata": {"name": "sync", "labels": {"kueue.x-k8s.io/queue-name": "q"},
                        "annotations": {"kueue.x-k8s.io/job-min-parallelism": "2",
                                        "kueue.x-k8s.io/job-completions-equal-parallelism": "true"}},
           "spec": {"parallelism": 6, "completions": 6, "completionMode": "Indexed", "template": {"spec": {
               "restartPolicy": "Never", "containers": container("1")}}}}
    report = simulate(tmp_path, [node("big", "16"), *queues("4"), job])
    assert len(report["pods"]) == 4 and all(p["phase"] == "Succeeded" for p in report["pods"])
