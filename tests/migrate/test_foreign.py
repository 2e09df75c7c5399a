"""Other schedulers' gang objects, read as v1.37 native gangs: the translation, the pods that join, what is
warned about, and that the migrated manifests load and schedule the same gangs."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from phalanx.api.kai_peer import QUEUE
from phalanx.api.sets import JobSet
from phalanx.cli import main
from phalanx.inputs.load import load_paths
from phalanx.scheduler.profiles import builtin
from phalanx.sim.simulation import Simulation
from tests.peer_manifests import NODES, STRANGER


def pods(n: int, *, cpu: str = "2", annotations: str = "{}", labels: str = "{}", scheduler: str = "volcano",
         prefix: str = "w") -> str:
    return "".join(f"""
---
apiVersion: v1
kind: Pod
metadata: {{name: {prefix}-{i}, namespace: ml, annotations: {annotations}, labels: {labels}}}
spec:
  schedulerName: {scheduler}
  containers: [{{name: c, image: img, resources: {{requests: {{cpu: "{cpu}"}}}}}}]
""" for i in range(n))


VOLCANO = """
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: train, namespace: ml}
spec:
  minMember: 4
  queue: research
  minResources: {cpu: "8"}
""" + pods(4, annotations="{scheduling.k8s.io/group-name: train}")

COSCHEDULING = """
---
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata: {name: train, namespace: ml}
spec: {minMember: 4, scheduleTimeoutSeconds: 60}
""" + pods(4, labels="{scheduling.x-k8s.io/pod-group: train}", scheduler="scheduler-plugins-scheduler")

KAI = """
---
apiVersion: scheduling.run.ai/v2alpha2
kind: PodGroup
metadata: {name: train, namespace: ml}
spec: {minMember: 4, queue: team-a}
""" + pods(4, annotations="{pod-group-name: train}", scheduler="kai-scheduler")

KUEUE = pods(4, labels="{kueue.x-k8s.io/pod-group-name: train, kueue.x-k8s.io/queue-name: user-queue}",
             annotations="{kueue.x-k8s.io/pod-group-total-count: '4'}", scheduler="default-scheduler")

VCJOB = """
---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: train, namespace: ml}
spec:
  minAvailable: 4
  schedulerName: volcano
  queue: research
  tasks:
  - name: ps
    replicas: 1
    template:
      spec:
        containers: [{name: c, image: img, resources: {requests: {cpu: "2"}}}]
  - name: worker
    replicas: 3
    template:
      spec:
        containers: [{name: c, image: img, resources: {requests: {cpu: "2"}}}]
"""

CASES = {"volcano": VOLCANO, "coscheduling": COSCHEDULING, "kai": KAI, "kueue": KUEUE, "vcjob": VCJOB}


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "in.yaml"
    path.write_text(NODES + text, encoding="utf-8")
    return path


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_foreign_gang_is_read_as_a_native_gang_of_its_minimum(tmp_path: Path, case: str) -> None:
    inputs = load_paths([str(write(tmp_path, CASES[case]))])
    groups = {g.key: g for g in inputs.pod_groups}
    assert list(groups) == ["ml/train"]
    assert groups["ml/train"].is_gang and groups["ml/train"].min_count == 4
    if case == "vcjob":  # a JobSet, a replicated job per task, every template in the gang
        [job_set] = inputs.of(JobSet)
        jobs = [rj.job for rj in job_set.replicated_jobs]
        assert sum(j.parallelism for j in jobs) == 4 and all(j.template.pod_group == "train" for j in jobs)
    else:
        assert len(inputs.pods) == 4 and all(p.group_key == "ml/train" for p in inputs.pods)
    assert [w.key for w in inputs.workloads] == ["ml/train"]
    assert inputs.translated and not inputs.skipped


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_gang_of_four_does_not_fit_on_two_nodes_of_four_cpus_with_one_pod_more(tmp_path: Path,
                                                                                     case: str) -> None:
    # 4 pods of 2 cpu fit on 2 nodes of 4 cpu exactly; with a stranger taking 1 cpu the gang must wait whole.
    for extra, bound in (("", 4), (STRANGER, 0)):
        inputs = load_paths([str(write(tmp_path, CASES[case] + extra))])
        sim = Simulation(inputs, builtin("gang")).run()
        assert sum(1 for key in sim.pods if key.startswith("ml/") and key != "ml/stranger"
                   and sim.scheduler.cluster.bound.get(key)) == bound


def test_warnings_name_what_has_no_native_equivalent(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, VOLCANO + COSCHEDULING.replace("name: train", "name: other")
                 .replace("pod-group: train", "pod-group: other").replace("w-", "x-"))
    assert main(["validate", str(path)]) == 0
    err = capsys.readouterr().err
    assert "read 10 object(s) as v1.37 native gangs" in err
    assert "queue 'research' has no native equivalent" in err
    assert "minResources has no native equivalent" in err
    assert "scheduleTimeoutSeconds has no native equivalent" in err


def test_a_volcano_groups_per_task_minimums_are_named_not_dropped_silently(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, VOLCANO.replace("  minResources:", "  minTaskMember: {ps: 1, worker: 3}\n  minResources:"))
    assert main(["validate", str(path)]) == 0
    assert "minTaskMember has no native equivalent" in capsys.readouterr().err


def test_migrate_prints_the_rewrite_with_comments_and_it_round_trips(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, VOLCANO)
    assert main(["migrate", str(path)]) == 0
    out, err = capsys.readouterr()
    assert "# phalanx migrate: Volcano PodGroup ml/train (scheduling.volcano.sh/v1beta1)" in out
    assert "#   minMember 4 -> Workload and PodGroup train with gang.minCount 4" in out
    assert "#   schedulerName volcano dropped" in out
    assert "phalanx: warning: Volcano PodGroup ml/train" in err
    docs = [d for d in yaml.safe_load_all(out) if d]
    kinds = [(d["apiVersion"], d["kind"]) for d in docs]
    assert ("scheduling.volcano.sh/v1beta1", "PodGroup") not in kinds
    assert kinds.count(("scheduling.k8s.io/v1beta1", "PodGroup")) == 1
    group = next(d for d in docs if d["kind"] == "PodGroup")
    assert group["spec"] == {"workloadRef": {"workloadName": "train", "templateName": "workers"},
                             "schedulingPolicy": {"gang": {"minCount": 4}}}
    pod = next(d for d in docs if d["kind"] == "Pod")
    assert pod["spec"]["schedulingGroup"] == {"podGroupName": "train"} and "schedulerName" not in pod["spec"]
    migrated = tmp_path / "migrated"
    migrated.mkdir()
    (migrated / "out.yaml").write_text(out, encoding="utf-8")
    again = load_paths([str(migrated)])
    original = load_paths([str(path)])
    assert not again.translated  # already native
    assert [(g.key, g.min_count) for g in again.pod_groups] == [(g.key, g.min_count) for g in original.pod_groups]
    first = Simulation(original, builtin("gang")).run()
    second = Simulation(again, builtin("gang")).run()
    assert first.scheduler.cluster.bound.keys() == second.scheduler.cluster.bound.keys()


def test_migrate_json_is_a_list_and_the_notes_go_to_stderr(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["migrate", "-o", "json", str(write(tmp_path, KAI))]) == 0
    out, err = capsys.readouterr()
    import json
    listing = json.loads(out)
    assert listing["kind"] == "List" and any(i["kind"] == "PodGroup" for i in listing["items"])
    assert "phalanx: KAI PodGroup ml/train (scheduling.run.ai/v2alpha2): minMember 4" in err
    assert "queue 'team-a' has no native equivalent" in err


def test_a_native_group_of_the_same_name_wins_and_the_translation_is_left_out(tmp_path: Path) -> None:
    native = """
---
apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata: {name: train, namespace: ml}
spec: {schedulingPolicy: {gang: {minCount: 2}}}
"""
    inputs = load_paths([str(write(tmp_path, native + VOLCANO))])
    assert [(g.key, g.min_count) for g in inputs.pod_groups] == [("ml/train", 2)]
    assert any("exists already" in w for c in inputs.migration for w in c.warnings)


def test_other_projects_kinds_of_a_native_name_are_skipped_and_counted(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    other = """
---
apiVersion: scheduling.koordinator.sh/v1alpha1
kind: PodGroup
metadata: {name: x, namespace: ml}
spec: {minMember: 2}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: research}
spec: {weight: 1}
"""
    path = write(tmp_path, other)
    assert main(["validate", str(path)]) == 0
    err = capsys.readouterr().err
    assert "PodGroup (scheduling.koordinator.sh/v1alpha1): 1" in err and "Queue: 1" in err


def test_a_kueue_workload_object_sets_the_group_size(tmp_path: Path) -> None:
    workload = """
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: Workload
metadata: {name: train, namespace: ml}
spec:
  queueName: user-queue
  podSets:
  - {name: main, count: 4, minCount: 3, template: {spec: {containers: [{name: c, image: img}]}}}
"""
    inputs = load_paths([str(write(tmp_path, workload + KUEUE))])
    assert [(g.key, g.min_count) for g in inputs.pod_groups] == [("ml/train", 3)]


def test_migrate_of_a_missing_file_is_a_one_line_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["migrate", str(tmp_path / "nope.yaml")]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.strip().endswith("no such file or directory") and len(err.splitlines()) == 1


# --- counts, as the other projects' API servers and webhooks read them (issue 28) ------------------------------

def _migrate_error(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]) -> str:
    path = write(tmp_path, text)
    assert main(["migrate", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1
    prefix = f"phalanx: error: {path}: "
    assert err.startswith(prefix)
    return err.strip()[len(prefix):]


def _volcano_group(min_member: str, api: str = "scheduling.volcano.sh/v1beta1") -> str:
    return f"""
---
apiVersion: {api}
kind: PodGroup
metadata: {{name: train, namespace: ml}}
spec: {{minMember: {min_member}}}
""" + pods(4, annotations="{scheduling.k8s.io/group-name: train}", labels="{scheduling.x-k8s.io/pod-group: train}")


@pytest.mark.parametrize(("value", "problem"), [
    ('"4"', 'must be of type integer, got string \'4\''),
    ("4.5", "must be of type integer, got number 4.5"),
    ("true", "must be of type integer, got boolean true"),
    ("2147483648", "must fit in a 32-bit integer"),
    (".nan", "must be of type integer"),
])
def test_a_volcano_min_member_the_api_server_refuses_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                 value: str, problem: str) -> None:
    """Issue 28: minMember "4" (a string) silently became minCount 1 and 2 of 4 members bound. The CRD types it
    `integer, format: int32`: kube-apiserver refuses a string, a fraction or a boolean."""
    error = _migrate_error(tmp_path, _volcano_group(value), capsys)
    assert error.startswith(f"PodGroup ml/train: spec.minMember: {problem}")


def test_an_integral_min_member_is_read_as_its_integer(tmp_path: Path) -> None:
    """kube-openapi's type validator takes 4.0 for `type: integer` (it is stored as 4): a gang of four."""
    inputs = load_paths([str(write(tmp_path, _volcano_group("4.0")))])
    [group] = inputs.pod_groups
    assert group.min_count == 4


def test_a_negative_volcano_min_member_is_no_minimum_with_a_warning(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """Volcano's CRD sets no minimum on minMember and its gang plugin's readiness (ready ≥ minAvailable) holds
    for any count when it is negative: each member may run alone. Read so, and said so."""
    path = write(tmp_path, _volcano_group("-4"))
    assert main(["migrate", str(path)]) == 0
    out, err = capsys.readouterr()
    assert "minCount: 1" in out
    assert "minMember -4: Volcano's gang plugin then waits for no minimum" in err


@pytest.mark.parametrize("api", ["scheduling.x-k8s.io/v1alpha1", "scheduling.run.ai/v2alpha2"])
@pytest.mark.parametrize("value", ["0", "-4"])
def test_other_pod_groups_need_a_min_member_of_one(tmp_path: Path, capsys: pytest.CaptureFixture[str], api: str,
                                                   value: str) -> None:
    """scheduler-plugins' and KAI's PodGroup types carry `+kubebuilder:validation:Minimum=1` on minMember."""
    text = _volcano_group(value, api).replace("scheduling.k8s.io/group-name", "pod-group-name")
    error = _migrate_error(tmp_path, text, capsys)
    assert error.startswith("PodGroup ml/train: spec.minMember: should be greater than or equal to 1")


def _vcjob(spec: str) -> str:
    return f"""
---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {{name: train, namespace: ml}}
spec:
{spec}"""


TASK = "    template: {spec: {containers: [{name: c, image: img, resources: {requests: {cpu: '1'}}}]}}\n"


def test_a_billion_replicas_is_refused_before_any_pod_is_written(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 28: a Volcano Job task with replicas 1e9 took 6.5 GB in 44 s. A billion fits Volcano's int32, but
    Phalanx writes every replica out as a Pod: past the simulator's cap of 100,000 pods a Job is refused."""
    error = _migrate_error(tmp_path, _vcjob("  tasks:\n  - name: worker\n    replicas: 1000000000\n" + TASK), capsys)
    assert error.startswith("Job ml/train: spec.tasks[0].replicas: the Job's tasks ask for 1000000000 pods")
    many = "  tasks:\n" + "".join(f"  - name: t{i}\n    replicas: 40000\n" + TASK for i in range(3))
    assert _migrate_error(tmp_path, _vcjob(many), capsys).startswith("Job ml/train: spec.tasks[2].replicas: ")


@pytest.mark.parametrize(("spec", "error"), [
    ("  tasks:\n  - name: w\n    replicas: '3'\n" + TASK, "spec.tasks[0].replicas: must be of type integer"),
    ("  tasks:\n  - name: w\n    replicas: -1\n" + TASK, "spec.tasks[0].replicas: should be greater than or equal"),
    ("  minAvailable: -1\n  tasks:\n  - name: w\n    replicas: 2\n" + TASK, "spec.minAvailable: should be greater"),
    ("  minAvailable: 3\n  tasks:\n  - name: w\n    replicas: 2\n" + TASK,
     "spec.minAvailable: job 'minAvailable' (3) should not be greater than total replicas in tasks (2)"),
    ("  tasks: []\n", "spec.tasks: No task specified in job spec"),
    ("  tasks:\n  - name: w\n    replicas: 1\n" + TASK + "  - name: w\n    replicas: 1\n" + TASK,
     "spec.tasks[1].name: duplicated task name w"),
    ("  tasks:\n  - name: Big_Name\n    replicas: 1\n" + TASK, "spec.tasks[0].name: must be a DNS-1123 label"),
    ("  tasks:\n  - name: w\n    replicas: 2\n    minAvailable: 3\n" + TASK,
     "spec.tasks[0].minAvailable: should be less than or equal to 2"),
])
def test_a_volcano_job_the_webhook_refuses_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                      spec: str, error: str) -> None:
    """Volcano's job webhook (validateJobCreate) and CRD: replicas and minAvailable int32 ≥ 0, minAvailable at
    most the total, at least one task, task names distinct DNS-1123 labels."""
    assert _migrate_error(tmp_path, _vcjob(spec), capsys).startswith(f"Job ml/train: {error}")


def test_a_volcano_job_defaults_as_its_mutating_webhook(tmp_path: Path) -> None:
    """mutate_job.go: minAvailable 0 (or unset) is the sum of the tasks' minAvailable, each defaulting to the
    task's replicas; an unset replicas is 0; an unnamed task is `default<i>`."""
    spec = ("  minAvailable: 0\n  tasks:\n  - replicas: 2\n    minAvailable: 1\n" + TASK
            + "  - name: w\n    replicas: 3\n" + TASK + "  - name: idle\n" + TASK)
    inputs = load_paths([str(write(tmp_path, _vcjob(spec)))])
    [group] = inputs.pod_groups
    assert group.min_count == 4
    [job_set] = inputs.of(JobSet)
    assert [(rj.name, rj.replicas, rj.job.parallelism, rj.job.completions, rj.job.template.pod_group)
            for rj in job_set.replicated_jobs] == [("default0", 1, 2, 2, "train"), ("w", 1, 3, 3, "train"),
                                                   ("idle", 1, 0, 0, "train")]


@pytest.mark.parametrize(("pod_sets", "error"), [
    ("[{name: main, count: '2'}]", "spec.podSets[0].count: must be of type integer"),
    ("[{name: main, count: -1}]", "spec.podSets[0].count: should be greater than or equal to 0"),
    ("[{name: main, count: 2, minCount: 0}]", "spec.podSets[0].minCount: should be greater than or equal to 1"),
    ("[{name: main, count: 2, minCount: 3}]", "spec.podSets[0].minCount: should be less than or equal to 2"),
    ("[{name: a, count: 2147483647}, {name: b, count: 2147483647}]",
     "spec.podSets: adds up to 4294967294, more than a v1.37 gang's minCount"),
])
def test_a_kueue_workload_with_counts_kueue_refuses_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                pod_sets: str, error: str) -> None:
    """Kueue's PodSet: count int32 ≥ 0 (default 1), minCount 1..count (its CRD and CEL rule)."""
    text = f"""
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: Workload
metadata: {{name: train, namespace: ml}}
spec: {{podSets: {pod_sets}}}
"""
    assert _migrate_error(tmp_path, text, capsys).startswith(f"Workload ml/train: {error}")


def test_simulate_names_the_file_of_a_refused_count_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, _volcano_group('"4"'))
    assert main(["validate", str(path)]) == 2
    assert capsys.readouterr().err.startswith(f"phalanx: error: {path}: PodGroup ml/train: spec.minMember: ")


def test_a_kai_podgroups_queue_is_kept_for_the_kai_profile(tmp_path: Path) -> None:
    """KAI's PodGroup `spec.queue` stays on the translated PodGroup as the label KAI reads, so that the kai
    profile queues the gang in team-a (v1.37 ignores the label)."""
    inputs = load_paths([str(write(tmp_path, KAI))])
    (group,) = inputs.pod_groups
    assert group.queueing is not None and group.queueing.value(QUEUE) == "team-a"
