"""`migrate` writes what one would deploy (issue 24): a Volcano Job becomes a batch/v1 Job with v1.37
`spec.scheduling` (one task) or a JobSet whose templates name a Workload's PodGroup (several tasks), never bare
Pods; what v1.37 alone does not act on (a peer's schedulerName, the peers' queue labels and annotations, their
queue objects) is a warning. What `migrate` writes loads, validates and simulates to the same answer as the
original."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.migrate.test_foreign import VCJOB
from tests.peer_manifests import HIGH, NODES, ONE_TASK, STRANGER
from tests.test_cli_errors import run

RESEARCH = """
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: research}
spec: {weight: 1}
"""
CASES = {"one task": HIGH + ONE_TASK, "two tasks": VCJOB}


def migrated(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str) -> tuple[list[dict[str, Any]], str]:
    path = tmp_path / "vcjob.yaml"
    path.write_text(text)
    status, out, err = run(capsys, "migrate", str(path))
    assert status == 0, err
    (tmp_path / "migrated.yaml").write_text(out)
    return [d for d in yaml.safe_load_all(out) if d is not None], err


def test_one_task_is_a_batch_job_with_native_gang_scheduling(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    docs, err = migrated(tmp_path, capsys, ONE_TASK)
    [job] = docs
    assert (job["apiVersion"], job["kind"], job["metadata"]["name"]) == ("batch/v1", "Job", "train")
    assert job["spec"]["parallelism"] == job["spec"]["completions"] == 4
    assert job["spec"]["completionMode"] == "Indexed"  # pods train-0..3, as the simulator names them
    assert job["spec"]["scheduling"] == {"schedulingPolicy": {"gang": {"minCount": 3}}}
    assert job["metadata"]["annotations"] == {"scheduling.volcano.sh/queue-name": "research"}
    pod = job["spec"]["template"]["spec"]
    assert "schedulerName" not in pod and "schedulingGroup" not in pod
    assert pod["restartPolicy"] == "OnFailure" and pod["priorityClassName"] == "high"
    assert "queue 'research' has no native equivalent" in err


def test_several_tasks_are_one_jobset_in_one_gang(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    docs, _ = migrated(tmp_path, capsys, VCJOB)
    assert [(d["kind"], d["metadata"]["name"]) for d in docs] == [("Workload", "train"), ("PodGroup", "train"),
                                                                  ("JobSet", "train")]
    assert docs[1]["spec"]["schedulingPolicy"] == {"gang": {"minCount": 4}}
    replicated = docs[2]["spec"]["replicatedJobs"]
    assert [(r["name"], r["replicas"], r["template"]["spec"]["parallelism"]) for r in replicated] == [
        ("ps", 1, 1), ("worker", 1, 3)]
    for r in replicated:
        pod = r["template"]["spec"]["template"]["spec"]
        assert pod["schedulingGroup"] == {"podGroupName": "train"}
        assert pod["restartPolicy"] == "Never"  # unset (Always) is refused in a Job's template
        assert "schedulerName" not in pod


def summary(capsys: pytest.CaptureFixture[str], profile: str, *files: Path) -> dict[str, Any]:
    status, out, err = run(capsys, "simulate", "--profile", profile, *map(str, files), "-o", "json")
    assert status == 0, err
    report = json.loads(out)
    return {"summary": report["summary"], "pods": sorted((p["name"], p.get("node")) for p in report["pods"])}


@pytest.mark.parametrize("profile", ["gang", "volcano"])
@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("stranger", [False, True])  # with 1 cpu taken, the gang of 4 (2 cpu each) cannot fit
def test_what_migrate_writes_validates_and_simulates_as_the_original(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], profile: str, case: str, stranger: bool) -> None:
    nodes = tmp_path / "nodes.yaml"
    nodes.write_text(NODES + RESEARCH + (STRANGER if stranger else ""))
    migrated(tmp_path, capsys, CASES[case])
    status, _, err = run(capsys, "validate", str(nodes), str(tmp_path / "migrated.yaml"))
    assert status == 0, err
    assert "native gangs" not in err  # nothing left to translate
    original = summary(capsys, profile, nodes, tmp_path / "vcjob.yaml")
    assert summary(capsys, profile, nodes, tmp_path / "migrated.yaml") == original
    if profile == "gang":  # (the volcano profile's queue may hold the Job as well)
        ran = sum(1 for _, node in original["pods"] if node) - stranger
        assert ran == ({"one task": 3, "two tasks": 0}[case] if stranger else 4)  # gangs of 3 and of 4


@pytest.mark.parametrize(("doc", "warning"), [
    ("apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ml}\nspec: {schedulerName: volcano, containers: []}",
     "Pod ml/p: spec.schedulerName volcano: Volcano's scheduler; without it the pods stay Pending"),
    ("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {schedulerName: yunikorn, containers: []}",
     "Pod p: spec.schedulerName yunikorn: YuniKorn's scheduler"),
    ("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  template:\n"
     "    spec: {schedulerName: kai-scheduler, containers: []}",
     "Deployment d: spec.template.spec.schedulerName kai-scheduler: KAI's scheduler"),
    ("apiVersion: batch/v1\nkind: Job\nmetadata: {name: j, labels: {kueue.x-k8s.io/queue-name: user-queue}}\n"
     "spec: {template: {spec: {containers: []}}}",
     "Job j: metadata.labels[kueue.x-k8s.io/queue-name] user-queue: Kueue's queue; v1.37 has no native equivalent"),
    ("apiVersion: v1\nkind: Pod\nmetadata: {name: p, annotations: {scheduling.volcano.sh/queue-name: q}}\n"
     "spec: {containers: []}",
     "Pod p: metadata.annotations[scheduling.volcano.sh/queue-name] q: Volcano's queue"),
    ("apiVersion: v1\nkind: Pod\nmetadata: {name: p, labels: {kai.scheduler/queue: team-a}}\nspec: {containers: []}",
     "Pod p: metadata.labels[kai.scheduler/queue] team-a: KAI's queue"),
    ("apiVersion: v1\nkind: Pod\nmetadata: {name: p, labels: {runai/queue: team-a}}\nspec: {containers: []}",
     "Pod p: metadata.labels[runai/queue] team-a: KAI's queue"),
    ("apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: s}\nspec:\n  template:\n"
     "    metadata: {labels: {queue: root.sandbox}}\n    spec: {containers: []}",
     "StatefulSet s: spec.template.metadata.labels[queue] root.sandbox: YuniKorn's queue"),
    ("apiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata: {name: cq}\nspec: {}",
     "ClusterQueue cq: a Kueue queue object: v1.37 has no native equivalent"),
    ("apiVersion: kueue.x-k8s.io/v1beta1\nkind: LocalQueue\nmetadata: {name: lq, namespace: ml}\nspec: {}",
     "LocalQueue ml/lq: a Kueue queue object"),
    ("apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: research}\nspec: {weight: 1}",
     "Queue research: a Volcano queue object"),
    ("apiVersion: scheduling.run.ai/v2\nkind: Queue\nmetadata: {name: team-a}\nspec: {}",
     "Queue team-a: a KAI queue object"),
    ('actions: "enqueue, allocate"\ntiers: []', "volcano-scheduler.conf: Volcano's scheduler configuration"),
    ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: yunikorn-configs, namespace: yunikorn}\n"
     "data: {queues.yaml: 'partitions: [{name: default}]'}",
     "ConfigMap yunikorn/yunikorn-configs: YuniKorn's queues.yaml: v1.37 has no native equivalent"),
    ("apiVersion: v1\nkind: Pod\nmetadata: {name: p, annotations: {yunikorn.apache.org/queue: root.a}}\n"
     "spec: {containers: []}",
     "Pod p: metadata.annotations[yunikorn.apache.org/queue] root.a: YuniKorn's queue"),
    ("apiVersion: v1\nkind: Pod\nmetadata: {name: p, annotations: {gpu-fraction: '0.5'}}\nspec: {containers: []}",
     "Pod p: metadata.annotations[gpu-fraction]: KAI's GPU sharing; kube-scheduler ignores it and the pod gets no GPU"),
    ("apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec:\n  template:\n"
     "    metadata: {annotations: {gpu-memory: '2000'}}\n    spec: {containers: []}",
     "Job j: spec.template.metadata.annotations[gpu-memory]: KAI's GPU sharing"),
    ("apiVersion: v1\nkind: Pod\nmetadata: {name: p, annotations: {yunikorn.apache.org/task-groups: '[]'}}\n"
     "spec: {containers: []}",
     "Pod p: metadata.annotations[yunikorn.apache.org/task-groups]: YuniKorn's gang (placeholders)"),
])
def test_what_v137_alone_does_not_act_on_is_a_warning(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                      doc: str, warning: str) -> None:
    path = tmp_path / "in.yaml"
    path.write_text(doc + "\n")
    status, out, err = run(capsys, "migrate", str(path))
    assert status == 0, err
    assert err.startswith(f"phalanx: warning: {warning}"), err
    assert len(err.splitlines()) == 1
    assert "#   warning: " + warning.split(": ", 1)[1] in out  # and a comment above the document


def test_plain_objects_have_no_warning(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "in.yaml"
    path.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: p, labels: {app: web}}\n"
                    "spec: {schedulerName: default-scheduler, containers: []}\n")
    status, out, err = run(capsys, "migrate", str(path))
    assert (status, err) == (0, "")
    assert "phalanx migrate" not in out


def test_a_translated_queue_is_warned_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, err = migrated(tmp_path, capsys, ONE_TASK)
    assert err.count("research") == 1, err
