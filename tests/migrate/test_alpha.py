"""The v1.35 and v1.36 Workload shapes, read as v1beta1: podGroups and workloadRef (v1alpha1), the
podGroupTemplateRef and the disruptionMode enum (v1alpha2)."""

from __future__ import annotations

from pathlib import Path

import yaml

from phalanx.inputs.load import load_paths
from phalanx.migrate.output import migrate_paths, render_yaml
from tests.peer_manifests import NODES

V1ALPHA1 = """
---
apiVersion: scheduling.k8s.io/v1alpha1
kind: Workload
metadata: {name: job, namespace: ml}
spec:
  podGroups:
  - {name: workers, policy: {gang: {minCount: 2}}}
  - {name: driver, policy: {basic: {}}}
""" + "".join(f"""
---
apiVersion: v1
kind: Pod
metadata: {{name: w-{key}-{i}, namespace: ml}}
spec:
  workloadRef: {{name: job, podGroup: workers, podGroupReplicaKey: "{key}"}}
  containers: [{{name: c, image: img, resources: {{requests: {{cpu: "1"}}}}}}]
""" for key in ("a", "b") for i in range(2))

V1ALPHA2 = """
---
apiVersion: scheduling.k8s.io/v1alpha2
kind: Workload
metadata: {name: job, namespace: ml}
spec:
  podGroupTemplates:
  - {name: workers, schedulingPolicy: {gang: {minCount: 2}}, disruptionMode: PodGroup}
---
apiVersion: scheduling.k8s.io/v1alpha2
kind: PodGroup
metadata: {name: job-workers, namespace: ml}
spec:
  podGroupTemplateRef: {workload: {workloadName: job, podGroupTemplateName: workers}}
  schedulingPolicy: {gang: {minCount: 2}}
  disruptionMode: PodGroup
"""


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "in.yaml"
    path.write_text(NODES + text, encoding="utf-8")
    return str(path)


def test_v1alpha1_pods_get_one_group_per_replica_key(tmp_path: Path) -> None:
    inputs = load_paths([write(tmp_path, V1ALPHA1)])
    groups = {g.key: g for g in inputs.pod_groups}
    assert sorted(groups) == ["ml/job-driver", "ml/job-workers-a", "ml/job-workers-b"]
    assert groups["ml/job-workers-a"].min_count == 2 and not groups["ml/job-driver"].is_gang
    assert {p.name: p.group_key for p in inputs.pods} == {
        "w-a-0": "ml/job-workers-a", "w-a-1": "ml/job-workers-a", "w-b-0": "ml/job-workers-b",
        "w-b-1": "ml/job-workers-b"}
    assert [w.key for w in inputs.workloads] == ["ml/job"]


def test_v1alpha2_template_ref_and_disruption_mode(tmp_path: Path) -> None:
    pairs, changes = migrate_paths([write(tmp_path, V1ALPHA2)])
    docs = [yaml.safe_load(d) for d in render_yaml(pairs).split("---\n")]
    group = next(d for d in docs if d["kind"] == "PodGroup")
    assert group["apiVersion"] == "scheduling.k8s.io/v1beta1"
    assert group["spec"]["workloadRef"] == {"workloadName": "job", "templateName": "workers"}
    assert group["spec"]["disruptionMode"] == {"all": {}}
    workload = next(d for d in docs if d["kind"] == "Workload")
    assert workload["spec"]["podGroupTemplates"][0]["disruptionMode"] == {"all": {}}
    assert any("disruptionMode PodGroup -> all" in n for c in changes for n in c.notes)
    inputs = load_paths([write(tmp_path, V1ALPHA2)])
    assert [(g.key, g.min_count, g.disruption_mode) for g in inputs.pod_groups] == [("ml/job-workers", 2, "all")]


def test_v1alpha1_pods_of_a_workload_not_in_the_input_wait_with_a_warning(tmp_path: Path) -> None:
    pod_only = V1ALPHA1.split("---", 2)[2]
    inputs = load_paths([write(tmp_path, "---" + pod_only)])
    assert inputs.pod_groups == []
    assert any("is not in the input" in w for c in inputs.migration for w in c.warnings)
