"""Loading manifests from disk: multi-document YAML, `kind: List`, directories, cross-object resolution."""

from pathlib import Path

import pytest

from phalanx import InputError, load_paths
from tests.builders import (
    MakeJob,
    MakeNode,
    MakePod,
    MakePodGroup,
    MakePriorityClass,
    MakeWorkload,
    inputs_of,
    write_manifests,
)


def test_multi_document_file(tmp_path: Path) -> None:
    path = write_manifests(tmp_path / "all.yaml", MakeNode("a").alloc(cpu="4"), MakePod("p").req(cpu="1"),
                           MakePodGroup("g").gang(2))
    inputs = load_paths([str(path)])
    assert [n.name for n in inputs.nodes] == ["a"]
    assert [p.key for p in inputs.pods] == ["default/p"]
    assert [g.key for g in inputs.pod_groups] == ["default/g"]


def test_kind_list_and_empty_documents(tmp_path: Path) -> None:
    (tmp_path / "list.yaml").write_text("""\
---
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {name: a}
  status: {allocatable: {cpu: "4"}}
- apiVersion: v1
  kind: Node
  metadata: {name: b}
  status: {allocatable: {cpu: "8"}}
---
---
apiVersion: v1
kind: NodeList
items:
- apiVersion: v1
  kind: Node
  metadata: {name: c}
  status: {allocatable: {cpu: "2"}}
""")
    inputs = load_paths([str(tmp_path / "list.yaml")])
    assert [n.name for n in inputs.nodes] == ["a", "b", "c"]


def test_directories_are_read_recursively_in_name_order(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    write_manifests(tmp_path / "b-pods.yaml", MakePod("second").req(cpu="1"))
    write_manifests(tmp_path / "a-pods.yml", MakePod("first").req(cpu="1"))
    write_manifests(tmp_path / "sub" / "nodes.yaml", MakeNode("n").alloc(cpu="1"))
    (tmp_path / "README.md").write_text("not a manifest")
    inputs = load_paths([str(tmp_path)])
    assert [p.name for p in inputs.pods] == ["first", "second"]
    assert [n.name for n in inputs.nodes] == ["n"]


def test_objects_come_back_in_document_order(tmp_path: Path) -> None:
    path = write_manifests(tmp_path / "x.yaml", MakePod("p1").req(cpu="1"), MakeNode("n").alloc(cpu="1"),
                           MakePodGroup("g").gang(1), MakePod("p2").req(cpu="1"))
    names = [getattr(o, "name", None) for o in load_paths([str(path)]).objects()]
    assert names == ["p1", "n", "g", "p2"]


def test_json_manifests(tmp_path: Path) -> None:
    (tmp_path / "node.json").write_text('{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "j"},'
                                        ' "status": {"allocatable": {"cpu": "2"}}}')
    assert load_paths([str(tmp_path / "node.json")]).nodes[0].allocatable["cpu"] == 2000


def test_unrelated_kinds_are_counted_not_loaded(tmp_path: Path) -> None:
    path = write_manifests(tmp_path / "x.yaml",
                           {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}},
                           {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c1"}},
                           {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c2"}},
                           {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "r"}},
                           MakeNode("n").alloc(cpu="1"))
    inputs = load_paths([str(path)])
    assert dict(inputs.skipped) == {"Service": 1, "ConfigMap": 2, "RayCluster": 1}
    assert len(inputs.nodes) == 1


def test_terminated_snapshot_pods_are_counted(tmp_path: Path) -> None:
    done = MakePod("done").req(cpu="1").node("n").manifest()
    done["status"] = {"phase": "Succeeded"}
    path = write_manifests(tmp_path / "x.yaml", MakeNode("n").alloc(cpu="1"), done)
    inputs = load_paths([str(path)])
    assert inputs.pods == [] and inputs.terminated_pods == 1


def test_same_name_in_different_namespaces_is_fine(tmp_path: Path) -> None:
    path = write_manifests(tmp_path / "x.yaml", MakePod("w", "a").req(cpu="1"), MakePod("w", "b").req(cpu="1"),
                           MakePodGroup("w", "a").gang(1))
    assert len(load_paths([str(path)]).pods) == 2


def test_duplicates_across_files(tmp_path: Path) -> None:
    write_manifests(tmp_path / "1.yaml", MakeNode("n").alloc(cpu="1"))
    write_manifests(tmp_path / "2.yaml", MakeNode("n").alloc(cpu="2"))
    with pytest.raises(InputError, match="duplicate Node") as err:
        load_paths([str(tmp_path)])
    assert err.value.file == str(tmp_path / "2.yaml")
    assert err.value.obj == "Node n"
    assert err.value.field == "metadata.name"


# --- priority (Priority admission) ---

def test_priority_comes_from_the_priority_class() -> None:
    inputs = inputs_of(MakePriorityClass("high", 1000).preemption_policy("Never"),
                       MakePod("p").req(cpu="1").priority_class("high"))
    pod = inputs.pods[0]
    assert pod.priority == 1000
    assert pod.preemption_policy == "Never"


def test_global_default_priority_class_applies_to_pods_without_a_class() -> None:
    inputs = inputs_of(MakePriorityClass("low", 10), MakePriorityClass("normal", 500).global_default(),
                       MakePod("plain").req(cpu="1"), MakePod("low").req(cpu="1").priority_class("low"),
                       MakePod("explicit").req(cpu="1").priority(7))
    priorities = {p.name: p.priority for p in inputs.pods}
    assert priorities == {"plain": 500, "low": 10, "explicit": 7}


def test_without_a_global_default_priority_is_zero() -> None:
    inputs = inputs_of(MakePriorityClass("high", 1000), MakePod("plain").req(cpu="1"))
    assert inputs.pods[0].priority == 0


def test_priority_class_may_come_after_the_pod_in_the_documents() -> None:
    inputs = inputs_of(MakePod("p").req(cpu="1").priority_class("high"), MakePriorityClass("high", 1000))
    assert inputs.pods[0].priority == 1000


def test_job_pods_get_the_class_priority() -> None:
    builder = MakeJob("j").req(cpu="1")
    builder.doc["spec"]["template"]["spec"]["priorityClassName"] = "batch"
    inputs = inputs_of(MakePriorityClass("batch", 100), builder)
    assert inputs.jobs[0].template.priority == 100


def test_unknown_priority_class_names_the_pod_and_field() -> None:
    with pytest.raises(InputError, match="no PriorityClass named 'missing'") as err:
        inputs_of(MakePod("p", "team").req(cpu="1").priority_class("missing"))
    assert err.value.obj == "Pod team/p"
    assert err.value.field == "spec.priorityClassName"


def test_pod_group_priority_from_its_class() -> None:
    inputs = inputs_of(MakePriorityClass("batch", 100), MakePodGroup("g").gang(2).priority_class("batch"))
    assert inputs.pod_groups[0].priority == 100
    with pytest.raises(InputError) as err:
        inputs_of(MakePodGroup("g").gang(2).priority_class("nope"))
    assert err.value.field == "spec.priorityClassName" and err.value.obj == "PodGroup default/g"


# --- Workload templates ---

def test_pod_group_reads_nothing_from_the_workload_template() -> None:
    # The scheduler reads the PodGroup only (controllers copy template fields when they create one): the
    # template's priority class is not the PodGroup's, which Priority admission gives priority 0.
    inputs = inputs_of(MakePriorityClass("batch", 100),
                       MakeWorkload("training").template("workers", gang=4, priority_class="batch"),
                       MakePodGroup("training-workers").workload("training", "workers").gang(4))
    group = inputs.pod_groups[0]
    assert group.is_gang and group.min_count == 4
    assert group.priority_class_name is None and group.priority == 0
    assert group.preemption_policy == "PreemptLowerPriority"


def test_pod_group_without_its_own_policy_is_rejected_as_the_api_server_does() -> None:
    # The real v1.37.2 API server: "spec.schedulingPolicy: Invalid value: "": must specify one of: `basic`,
    # `gang`", also when the Workload template has one.
    with pytest.raises(InputError) as err:
        inputs_of(MakeWorkload("training").template("workers", gang=4),
                  MakePodGroup("training-workers").workload("training", "workers"))
    assert err.value.field == "spec.schedulingPolicy"


def test_pod_group_reads_only_its_own_disruption_mode_which_defaults_to_single() -> None:
    """K-b1 PodGroupSpec.disruptionMode defaults to single; the scheduler never reads the Workload template
    (it was inherited from the template before, commit 531adde)."""
    inputs = inputs_of(MakeWorkload("training").template("workers", gang=4, disruption="all"),
                       MakePodGroup("from-template").workload("training", "workers").gang(4),
                       MakePodGroup("standalone").gang(2))
    modes = {g.name: g.disruption_mode for g in inputs.pod_groups}
    assert modes == {"from-template": "single", "standalone": "single"}


def test_pod_group_priority_and_policy_are_filled_as_priority_admission_does() -> None:
    """Priority admission: priority (and an unstated preemptionPolicy) from the PodGroup's own priorityClassName,
    else the global default class, else 0 and PreemptLowerPriority."""
    inputs = inputs_of(MakePriorityClass("busy", 50), MakePodGroup("own").gang(2).priority_class("busy"),
                       MakePodGroup("bare").gang(2))
    got = {g.name: (g.priority, g.preemption_policy) for g in inputs.pod_groups}
    assert got == {"own": (50, "PreemptLowerPriority"), "bare": (0, "PreemptLowerPriority")}
    inputs = inputs_of(MakePriorityClass("base", 7).global_default(), MakePodGroup("bare").gang(2))
    assert inputs.pod_groups[0].priority == 7


def test_what_priority_admission_refuses_of_a_pod_group_is_refused_in_its_words() -> None:
    """Checked on the real v1.37.2 API server: a PodGroup stating a preemptionPolicy or a priority other than its
    class's is refused, and so is a pod's priority; a group that states none takes its class's."""
    quiet = MakePriorityClass("quiet", 50).preemption_policy("Never")
    stated = MakePodGroup("own").gang(2).priority_class("quiet")
    stated.doc["spec"]["preemptionPolicy"] = "PreemptLowerPriority"
    with pytest.raises(InputError, match=r"the string value of PreemptionPolicy \(PreemptLowerPriority\) must not be "
                                         r"provided in pod group spec; priority admission controller computed Never") \
            as err:
        inputs_of(quiet, stated)
    assert err.value.field == "spec.preemptionPolicy" and err.value.obj == "PodGroup default/own"
    unstated = inputs_of(quiet, MakePodGroup("own").gang(2).priority_class("quiet"))
    assert unstated.pod_groups[0].preemption_policy == "Never"
    with pytest.raises(InputError, match=r"priority set in the pod group \(10\) must match the priority computed "
                                         r"\(50\)") as err:
        inputs_of(MakePriorityClass("busy", 50), MakePodGroup("own").gang(2).priority_class("busy").priority(10))
    assert err.value.field == "spec.priority"
    with pytest.raises(InputError, match=r"the integer value of priority \(10\) must not be provided in pod spec; "
                                         r"priority admission controller computed 50") as err:
        inputs_of(MakePriorityClass("busy", 50), MakePod("p").req(cpu="1").priority_class("busy").priority(10))
    assert err.value.field == "spec.priority"


def test_the_pod_group_own_policy_wins_over_the_template() -> None:
    inputs = inputs_of(MakeWorkload("training").template("workers", gang=4),
                       MakePodGroup("pg").workload("training", "workers").gang(2))
    assert inputs.pod_groups[0].min_count == 2


def test_a_pod_group_without_a_policy_needs_a_template() -> None:
    with pytest.raises(InputError, match="is required") as err:
        inputs_of(MakePodGroup("orphan"))
    assert err.value.field == "spec.schedulingPolicy"
    with pytest.raises(InputError) as err:
        inputs_of(MakeWorkload("training").template("workers", gang=4),
                  MakePodGroup("pg").workload("training", "drivers"))
    assert err.value.field == "spec.workloadRef.templateName"
