"""Other schedulers' gang objects, read as v1.37 native gangs: the translation, the pods that join, what is
warned about, and that the migrated manifests load and schedule the same gangs."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from phalanx.api.load import load_paths
from phalanx.cli import main
from phalanx.scheduler.profiles import builtin
from phalanx.sim.simulation import Simulation

NODES = """
apiVersion: v1
kind: Node
metadata: {name: node-a}
status: {allocatable: {cpu: "4", memory: 16Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: node-b}
status: {allocatable: {cpu: "4", memory: 16Gi, pods: "110"}}
"""


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
    assert len(inputs.pods) == 4 and all(p.group_key == "ml/train" for p in inputs.pods)
    assert [w.key for w in inputs.workloads] == ["ml/train"]
    assert inputs.translated and not inputs.skipped


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_gang_of_four_does_not_fit_on_two_nodes_of_four_cpus_with_one_pod_more(tmp_path: Path,
                                                                                     case: str) -> None:
    # 4 pods of 2 cpu fit on 2 nodes of 4 cpu exactly; with a stranger taking 1 cpu the gang must wait whole.
    stranger = """
---
apiVersion: v1
kind: Pod
metadata: {name: stranger, namespace: ml}
spec:
  nodeName: node-a
  containers: [{name: c, image: img, resources: {requests: {cpu: "1"}}}]
"""
    for extra, bound in (("", 4), (stranger, 0)):
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
