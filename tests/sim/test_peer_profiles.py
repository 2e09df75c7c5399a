"""The kai and yunikorn profiles in the simulator: the peers' queue objects (KAI's Queues, YuniKorn's
queues.yaml) read from the inputs, the workloads held until the policy admits them, whole workloads evicted,
and what is not modelled named on stderr."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from phalanx.cli import main
from phalanx.inputs.load import load_paths
from phalanx.scheduler.profiles import builtin
from phalanx.sim.report import build_report
from phalanx.sim.scenario import scenario_for
from phalanx.sim.simulation import Simulation

Doc = dict[str, Any]
KAI_DATA = Path(__file__).parents[1] / "admission" / "data" / "kai"


def _run(paths: list[str], profile: str) -> dict[str, Any]:
    return build_report(Simulation(load_paths(paths), builtin(profile), scenario=scenario_for(profile)).run())


def _waits(report: dict[str, Any]) -> dict[str, float]:
    return {w["name"]: w["waitSeconds"]["max"] for w in report["workloads"]}


def test_kai_keeps_non_preemptible_work_within_quota_on_examples_peers() -> None:
    """examples/peers under kai: both PriorityClasses (100, 1000) are at least KAI's 100, so every Job is
    non-preemptible and may not take its queue past its quota (16 GPUs: one research sweep, and production's
    retrain before its eval); nothing is reclaimed."""
    report = _run(["examples/peers"], "kai")
    waits = _waits(report)
    assert waits["research/sweep-a"] == 0 and waits["research/sweep-b"] == 7200 and waits["research/sweep-c"] == 13800
    assert waits["production/retrain"] == 0 and waits["production/eval"] == 3000  # after retrain ends at 01:30
    assert report["summary"]["evictions"] == 0
    assert report["endTime"] == 6 * 3600  # half the fleet idles while research waits
    rows = {q["name"]: q for q in report["queues"]}
    assert rows["research"]["admitted"] == 3 and rows["production"]["admitted"] == 2


def test_kai_reclaims_over_quota_preemptible_work(tmp_path: Path) -> None:
    """With research's PriorityClass below 100 (preemptible, as KAI's `train`), research borrows the idle half
    of the fleet and production reclaims it when its retraining arrives."""
    docs = list(yaml.safe_load_all(Path("examples/peers/04-jobs.yaml").read_text()))
    fleet = yaml.safe_load(Path("examples/peers/01-fleet.yaml").read_text())
    for item in fleet["items"]:
        if item["kind"] == "PriorityClass" and item["metadata"]["name"] == "research":
            item["value"] = 50
    (tmp_path / "fleet.yaml").write_text(yaml.safe_dump(fleet))
    (tmp_path / "jobs.yaml").write_text(yaml.safe_dump_all(docs))
    report = _run([str(tmp_path / "fleet.yaml"), str(tmp_path / "jobs.yaml"), "examples/peers/05-kai.yaml"], "kai")
    waits = _waits(report)
    assert waits["research/sweep-b"] == 0  # over quota, on GPUs production leaves idle
    assert report["admission"]["evicted"] == 1
    rows = {q["name"]: q for q in report["queues"]}
    assert rows["research"]["reclaimed"] == 1 and rows["research"]["admitted"] == 4


def test_kai_limit_holds_kais_own_example(tmp_path: Path) -> None:
    """KAI's docs/priority/example/limited-queue.yaml, unchanged: queue `test` may use 1 GPU (limit 1), so of two
    1-GPU Jobs one waits, in KAI's words."""
    nodes = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gpu-0"},
             "status": {"allocatable": {"cpu": "16", "memory": "64Gi", "nvidia.com/gpu": "4", "pods": "110"}}}
    jobs = [{"apiVersion": "batch/v1", "kind": "Job",
             "metadata": {"name": f"j{i}", "namespace": "default", "labels": {"kai.scheduler/queue": "test"},
                          "annotations": {"phalanx.dev/duration": "1h"}},
             "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{
                 "name": "c", "image": "x", "resources": {"requests": {"cpu": "1", "nvidia.com/gpu": "1"},
                                                          "limits": {"nvidia.com/gpu": "1"}}}]}}}}
            for i in range(2)]
    (tmp_path / "work.yaml").write_text(yaml.safe_dump_all([nodes, *jobs]))
    report = _run([str(tmp_path / "work.yaml"), str(KAI_DATA / "limited-queue.yaml")], "kai")
    assert sorted(_waits(report).values()) == [0, 3600]
    rows = {q["name"]: q for q in report["queues"]}
    assert rows["test"]["admitted"] == 2


def test_yunikorn_preempts_toward_the_guarantee_after_its_delay() -> None:
    """examples/peers under yunikorn: the two sweeps run at once (root's max is the fleet); production's retrain
    preempts one after YuniKorn's default preemption.delay (30 s), starts after the victim's 30 s grace and its
    backoff; the preempted sweep runs again later."""
    report = _run(["examples/peers"], "yunikorn")
    waits = _waits(report)
    assert waits["research/sweep-a"] == 0 and waits["research/sweep-b"] == 0
    assert waits["production/retrain"] == 66 and round(waits["production/eval"] / 60) == 51
    assert round(report["summary"]["lostResourceHours"]["nvidia.com/gpu"], 1) == 8.1
    assert report["endTime"] == 4 * 3600 + 66
    assert report["admission"]["evicted"] == 1 and report["summary"]["evictions"] == 4
    rows = {q["name"]: q for q in report["queues"]}
    assert rows["root.research"]["preempted"] == 1 and rows["root.production"]["admitted"] == 2


def test_compare_runs_all_five_profiles_and_names_what_is_not_modelled(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", "examples/peers", "--profiles", "gang,kueue,volcano,kai,yunikorn", "-o", "json"]) == 0
    out, err = capsys.readouterr()
    profiles = [r["profile"] for r in json.loads(out)["results"]]
    assert profiles == ["gang", "kueue", "volcano", "kai", "yunikorn"]
    assert "phalanx: kai: not modelled: consolidation" in err
    assert "phalanx: yunikorn: not modelled: a v1.37 gang (a PodGroup with minCount) is admitted whole" in err


def test_yunikorn_task_groups_the_k8shim_cannot_read_are_named_and_leave_no_gang(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """k8shim GetTaskGroupsFromAnnotation refuses a group without minResource; the shim warns (TaskGroupsError)
    and schedules the application without a gang: the pod runs at once, and stderr names why."""
    nodes = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n0"},
             "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}}}
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "p0", "namespace": "default",
                        "annotations": {"yunikorn.apache.org/task-groups": '[{"name": "g", "minMember": 2}]',
                                        "yunikorn.apache.org/task-group-name": "g"}},
           "spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}]}}
    (tmp_path / "in.yaml").write_text(yaml.safe_dump_all([nodes, pod]))
    assert main(["simulate", str(tmp_path / "in.yaml"), "--profile", "yunikorn", "-o", "json"]) == 0
    out, err = capsys.readouterr()
    assert ("Pod default/p0: yunikorn.apache.org/task-groups: unable to get taskGroups for pod, reason: can't get "
            "taskGroup MinResource from pod annotation") in err
    report = json.loads(out)
    assert report["summary"]["pods"]["running"] == 1 and "placeholders" not in report["admission"]


@pytest.mark.parametrize(("text", "field"), [
    ("apiVersion: scheduling.run.ai/v2\nkind: Queue\nmetadata: {name: q}\nspec:\n  parentQueue: missing\n"
     "  resources: {gpu: {quota: 1, limit: 1, overQuotaWeight: 1}}\n", "spec.parentQueue"),
    ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: yunikorn-configs}\ndata:\n  queues.yaml: |\n"
     "    partitions:\n    - name: default\n      queues:\n      - name: root\n        queues:\n"
     "        - name: a\n          resources: {max: {vcore: -1}}\n", "vcore"),
])
def test_bad_peer_queue_objects_exit_2_naming_file_and_field(tmp_path: Path, text: str, field: str,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "queues.yaml"
    path.write_text(text)
    profile = "kai" if "run.ai" in text else "yunikorn"
    assert main(["simulate", "examples/peers/01-fleet.yaml", str(path), "--profile", profile]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(path) in err[0] and field in err[0] and "Traceback" not in err[0], err


def test_yunikorn_max_holds_from_a_bare_queues_yaml(tmp_path: Path) -> None:
    """queues.yaml as YuniKorn's docs write it (no ConfigMap): research's max of 8 GPUs admits none of its
    16-GPU sweeps, in YuniKorn's words, while production runs."""
    (tmp_path / "queues.yaml").write_text(
        "partitions:\n  - name: default\n    placementrules:\n      - name: provided\n    queues:\n"
        "      - name: root\n        submitacl: '*'\n        queues:\n          - name: research\n"
        "            resources:\n              max: {nvidia.com/gpu: 8}\n          - name: production\n")
    report = _run(["examples/peers/01-fleet.yaml", "examples/peers/04-jobs.yaml", str(tmp_path / "queues.yaml")],
                  "yunikorn")
    rows = {q["name"]: q for q in report["queues"]}
    assert rows["root.research"]["admitted"] == 0 and rows["root.research"]["pending"] == 3
    assert rows["root.production"]["admitted"] == 2
    held = [w for w in report["admission"]["workloads"] if w["queue"] == "root.research"]
    assert len(held) == 3 and not any(w["admitted"] for w in held)
    assert {w["reason"] for w in held} == {"Not enough queue quota: its request does not fit the headroom of queue "
                                           "root.research"}


YUNIKORN_DATA = Path(__file__).parents[1] / "admission" / "data" / "yunikorn"


def _running_by_job(tmp_path: Path, until: float) -> Counter[str]:
    """The k8shim's preemption example (deployments/examples/preemption, its Jobs and yunikorn-configs.yaml
    unchanged) on one node, its README's kubectl steps as arrivals: the two low-priority Jobs at 0 s, the
    normal-priority Job at 60 s, the high-priority one at 600 s; "remove low-priority job" as the low Job's pods
    ending at 300 s. The running pods of each Job at `until`."""
    steps = {"low-priority-job-outside-fence": ("0s", "2h"), "low-priority-job": ("0s", "300s"),
             "normal-priority-job": ("60s", "2h"), "high-priority-job": ("600s", "2h")}
    docs: list[Doc] = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n0"},
                        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}]
    for name, (arrival, duration) in steps.items():
        job = yaml.safe_load((YUNIKORN_DATA / "preemption" / f"{name}.yaml").read_text())
        job["metadata"]["namespace"] = "default"
        job["metadata"]["annotations"] = {"phalanx.dev/arrival": arrival, "phalanx.dev/duration": duration}
        docs.append(job)
    (tmp_path / "jobs.yaml").write_text(yaml.safe_dump_all(docs))
    inputs = load_paths([str(tmp_path / "jobs.yaml"), str(YUNIKORN_DATA / "preemption-yunikorn-configs.yaml")])
    sim = Simulation(inputs, builtin("yunikorn"), scenario=scenario_for("yunikorn"), until=until).run()
    return Counter(str(record.pod.owner).split("/", 1)[1] for record in sim.pods.values() if record.phase == "Running"
                   and not record.terminating)


@pytest.mark.parametrize(("until", "expected"), [
    # "Should have 10 pods in Running. Expected: 5 outside fence, 5 low-priority."
    (50, {"low-priority-job-outside-fence": 5, "low-priority-job": 5}),
    # "Expected: 5 outside fence, 2 low-priority, 3 normal-priority." (a task cannot preempt outside its fence;
    # preemption brings the queue to its guarantee, 300m)
    (250, {"low-priority-job-outside-fence": 5, "low-priority-job": 2, "normal-priority-job": 3}),
    # after the low-priority Job goes: "Expected: 5 outside fence, 5 normal-priority."
    (500, {"low-priority-job-outside-fence": 5, "normal-priority-job": 5}),
    # "Preemption can never leave a queue lower than its guaranteed capacity ... Expected: 5 outside fence,
    # 3 normal-priority, 2 high-priority."
    (900, {"low-priority-job-outside-fence": 5, "normal-priority-job": 3, "high-priority-job": 2}),
])
def test_yunikorn_preemption_example_as_its_readme_expects(tmp_path: Path, until: float,
                                                           expected: dict[str, int]) -> None:
    assert _running_by_job(tmp_path, until) == Counter(expected)


@pytest.mark.parametrize("queue", ["test", "default-queue"])
def test_kai_priority_example(tmp_path: Path, queue: str) -> None:
    """KAI's docs/priority example: limited-queue.yaml's queue `test` may use 1 GPU; train-pod (label
    priorityClassName: train, 50: preemptible) runs, then build-pod (build, 100: non-preemptible) arrives and,
    as the README says, "the scheduler will preempt lower priority train-pod and schedule higher priority
    build-pod instead". The example's pods name `default-queue` while the README speaks of `test`: in `test`
    (relabelled) the README's outcome holds; as written, with KAI's quickstart default-queue (quota 0), the
    non-preemptible build-pod may not go over its queue's quota of 0 and waits, in KAI's words."""
    docs: list[Doc] = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gpu-0"},
                        "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "1",
                                                   "pods": "110"}}}]
    for name, arrival in (("train-priority-pod", "0s"), ("build-priority-pod", "60s")):
        pod = yaml.safe_load((KAI_DATA / "priority" / f"{name}.yaml").read_text())
        pod["metadata"]["labels"]["kai.scheduler/queue"] = queue
        pod["metadata"]["annotations"] = {"phalanx.dev/arrival": arrival}
        docs.append(pod)
    (tmp_path / "pods.yaml").write_text(yaml.safe_dump_all(docs))
    queues = [str(KAI_DATA / "limited-queue.yaml"), str(KAI_DATA / "default-queues.yaml")]
    report = _run([str(tmp_path / "pods.yaml"), *queues], "kai")
    pods = {p["name"]: p for p in report["pods"]}
    if queue == "test":
        assert pods["default/train-pod"]["preemptedCount"] == 1 and pods["default/build-pod"]["phase"] == "Running"
    else:
        assert pods["default/train-pod"]["phase"] == "Running" and pods["default/build-pod"]["phase"] == "Pending"
        held = {w["name"]: w["reason"] for w in report["admission"]["workloads"]}
        assert "Non-preemptible workload is over quota" in held["Pod default/build-pod"]
