"""Nodes, pods, PodGroups, Workloads and Jobs parsed from the shapes `kubectl get -o yaml` prints."""

from collections.abc import Callable

import pytest

from phalanx.api.jobs import job_pod, job_pod_group
from phalanx.api.objects import GroupPolicy, Requirement, Source, Taint, Toleration
from phalanx.api.parse import parse_node, parse_pod
from phalanx.errors import InputError
from tests.builders import MakeJob, MakeNode, MakePod, MakePodGroup, MakeWorkload, expr

GI = 2**30


# --- Node ---

def test_node_allocatable_labels_and_taints() -> None:
    node = (MakeNode("gpu-1").alloc({"nvidia.com/gpu": "8"}, cpu="64", memory="512Gi", pods="250")
            .label("topology.kubernetes.io/zone", "eu-1a")
            .taint("nvidia.com/gpu", "present").taint("maintenance", effect="PreferNoSchedule").obj())
    assert node.name == "gpu-1"
    assert node.allocatable == {"cpu": 64000, "memory": 512 * GI, "pods": 250, "nvidia.com/gpu": 8}
    assert node.labels == {"topology.kubernetes.io/zone": "eu-1a"}
    assert node.taints == (Taint("nvidia.com/gpu", "present", "NoSchedule"),
                           Taint("maintenance", "", "PreferNoSchedule"))
    assert not node.unschedulable


def test_node_pods_default_to_110() -> None:
    assert MakeNode().alloc(cpu="4").obj().allocatable["pods"] == 110


def test_node_falls_back_to_capacity() -> None:
    doc = MakeNode("n").manifest()
    doc["status"] = {"capacity": {"cpu": "8", "memory": "32Gi"}}
    assert parse_node(doc, Source("f", 1)).allocatable["cpu"] == 8000


def test_cordoned_node() -> None:
    assert MakeNode().alloc(cpu="4").unschedulable().obj().unschedulable


def test_node_arrival_annotation() -> None:
    assert MakeNode().alloc(cpu="1").arrival("1h30m").obj().arrival == 5400.0


def test_node_taint_with_unknown_effect_is_rejected() -> None:
    with pytest.raises(InputError) as err:
        MakeNode().alloc(cpu="1").taint("a", effect="NoRun").obj()
    assert err.value.field == "spec.taints[0].effect"


def test_node_name_is_required() -> None:
    doc = MakeNode().manifest()
    del doc["metadata"]["name"]
    with pytest.raises(InputError) as err:
        parse_node(doc, Source("f", 1))
    assert err.value.field == "metadata.name"


# --- Pod ---

def test_pod_namespace_defaults_to_default() -> None:
    doc = MakePod("web").req(cpu="1").manifest()
    del doc["metadata"]["namespace"]
    pod = parse_pod(doc, Source("f", 1))
    assert pod is not None and pod.key == "default/web"


def test_pod_scheduling_fields() -> None:
    pod = (MakePod("w", "batch").req(cpu="1").group("trainers").priority(1000)
           .toleration("gpu", "true", "NoSchedule").toleration(operator="Exists")
           .node_selector({"disk": "ssd"})
           .required_term(expr("zone", "In", "a", "b"), expr("arch", "NotIn", "arm64"))
           .preferred(20, expr("rack", "Exists"))
           .arrival("10m").duration("2h").obj())
    assert pod.group_key == "batch/trainers"
    assert pod.priority == 1000
    assert pod.arrival == 600.0 and pod.duration == 7200.0
    placement = pod.placement
    assert placement.tolerations == (Toleration("gpu", "Equal", "true", "NoSchedule"), Toleration(operator="Exists"))
    assert placement.node_selector == (("disk", "ssd"),)
    assert placement.required_terms is not None and len(placement.required_terms) == 1
    assert placement.required_terms[0].expressions == (Requirement("zone", "In", ("a", "b")),
                                                       Requirement("arch", "NotIn", ("arm64",)))
    assert placement.preferred_terms[0].weight == 20


def test_pods_from_one_template_share_a_placement() -> None:
    a = MakePod("a").req(cpu="1").toleration("gpu", operator="Exists").obj()
    b = MakePod("b").req(cpu="2").toleration("gpu", operator="Exists").obj()
    assert a.placement == b.placement and hash(a.placement) == hash(b.placement)


def test_terminated_pods_are_dropped() -> None:
    doc = MakePod().req(cpu="1").node("n").manifest()
    doc["status"] = {"phase": "Succeeded"}
    assert parse_pod(doc, Source("f", 1)) is None


@pytest.mark.parametrize(("build", "field"), [
    (lambda: MakePod().obj(), "spec.containers"),
    (lambda: MakePod().req(cpu="1").required_term(expr("zone", "In")).obj(),
     "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
     ".matchExpressions[0].values"),
    (lambda: MakePod().req(cpu="1").required_term(expr("zone", "Near", "a")).obj(),
     "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
     ".matchExpressions[0].operator"),
    (lambda: MakePod().req(cpu="1").required_term(expr("cores", "Gt", "many")).obj(),
     "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
     ".matchExpressions[0].values[0]"),
    (lambda: MakePod().req(cpu="1").required_term(fields=[expr("metadata.name", "DoesNotExist")]).obj(),
     "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
     ".matchFields[0].operator"),
    (lambda: MakePod().req(cpu="1").preferred(101, expr("a", "Exists")).obj(),
     "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight"),
    (lambda: MakePod().req(cpu="1").toleration(value="x").obj(), "spec.tolerations[0].operator"),
    (lambda: MakePod().req(cpu="1").toleration("k", "v", operator="Exists").obj(), "spec.tolerations[0].value"),
    (lambda: MakePod().req(cpu="1").toleration("k", "v", operator="Like").obj(), "spec.tolerations[0].operator"),
    (lambda: MakePod().req(cpu="1").toleration("k", effect="Sometimes").obj(), "spec.tolerations[0].effect"),
    (lambda: MakePod().req(cpu="1").duration("forever").obj(), "metadata.annotations[phalanx.dev/duration]"),
    (lambda: MakePod().req(cpu="1").arrival("-5").obj(), "metadata.annotations[phalanx.dev/arrival]"),
    (lambda: MakePod().req(cpu="lots").obj(), "spec.containers[0].resources.requests.cpu"),
    (lambda: MakePod().req(cpu="1").init_container({"memory": "-1Gi"}).obj(),
     "spec.initContainers[0].resources.requests.memory"),
    (lambda: MakePod().req(cpu="1").overhead(cpu="x").obj(), "spec.overhead.cpu"),
])
def test_bad_pod_fields_are_named(build: Callable[[], object], field: str) -> None:
    with pytest.raises(InputError) as err:
        build()
    assert err.value.field == field


def test_v135_workload_ref_is_rejected_with_a_pointer_to_the_v137_field() -> None:
    doc = MakePod().req(cpu="1").manifest()
    doc["spec"]["workloadRef"] = {"name": "w", "podGroup": "g"}
    with pytest.raises(InputError, match=r"schedulingGroup\.podGroupName") as err:
        parse_pod(doc, Source("f", 1))
    assert err.value.field == "spec.workloadRef"


# --- PodGroup and Workload ---

def test_gang_pod_group() -> None:
    group = MakePodGroup("workers", "batch").gang(4).obj()
    assert group.key == "batch/workers"
    assert group.policy == GroupPolicy("gang", 4)
    assert group.is_gang and group.min_count == 4
    assert group.disruption_mode == "single"  # unset: single (the PodGroup's own spec, never the template's)


def test_basic_pod_group_has_no_gang_requirement() -> None:
    group = MakePodGroup().basic().obj()
    assert not group.is_gang and group.min_count == 1


@pytest.mark.parametrize("min_count", [0, -1])
def test_min_count_below_one_is_rejected(min_count: int) -> None:
    with pytest.raises(InputError) as err:
        MakePodGroup().gang(min_count).obj()
    assert err.value.field == "spec.schedulingPolicy.gang.minCount"


def test_both_policies_at_once_are_rejected() -> None:
    builder = MakePodGroup().gang(2)
    builder.doc["spec"]["schedulingPolicy"]["basic"] = {}
    with pytest.raises(InputError, match="exactly one of basic, gang") as err:
        builder.obj()
    assert err.value.field == "spec.schedulingPolicy"


def test_disruption_mode_union_and_v136_enum() -> None:
    builder = MakePodGroup().gang(2)
    builder.doc["spec"]["disruptionMode"] = {"all": {}}
    assert builder.obj().disruption_mode == "all"
    builder.doc["spec"]["disruptionMode"] = "PodGroup"
    assert builder.obj().disruption_mode == "all"
    builder.doc["spec"]["disruptionMode"] = "Pod"
    assert builder.obj().disruption_mode == "single"


def test_v1alpha2_template_ref_is_rejected() -> None:
    builder = MakePodGroup().gang(2)
    builder.doc["spec"]["podGroupTemplateRef"] = {"workload": {"workloadName": "w", "podGroupTemplateName": "t"}}
    with pytest.raises(InputError) as err:
        builder.obj()
    assert err.value.field == "spec.podGroupTemplateRef"


def test_workload_ref_needs_both_names() -> None:
    builder = MakePodGroup().gang(2)
    builder.doc["spec"]["workloadRef"] = {"workloadName": "w"}
    with pytest.raises(InputError) as err:
        builder.obj()
    assert err.value.field == "spec.workloadRef"


def test_workload_templates() -> None:
    workload = MakeWorkload("training", "batch").template("workers", gang=4).template("driver", basic=True).obj()
    assert workload.key == "batch/training"
    assert workload.templates["workers"].policy == GroupPolicy("gang", 4)
    assert workload.templates["driver"].policy == GroupPolicy("basic")


def test_workload_rejects_duplicate_and_too_many_templates() -> None:
    with pytest.raises(InputError) as err:
        MakeWorkload().template("a", gang=1).template("a", gang=2).obj()
    assert err.value.field == "spec.podGroupTemplates[1].name"
    many = MakeWorkload()
    for i in range(9):
        many.template(f"t{i}", gang=1)
    with pytest.raises(InputError, match="at most 8") as err:
        many.obj()
    assert err.value.field == "spec.podGroupTemplates"


# --- Job ---

def test_job_with_gang_scheduling_stamps_its_pod_group_and_pods() -> None:
    job = MakeJob("train", "batch").parallelism(4).completions(8).gang().req(cpu="4").duration("1h").obj()
    assert job.policy == GroupPolicy("gang", 4)  # minCount defaults to parallelism
    group = job_pod_group(job)
    assert group is not None
    assert group.key == "batch/train" and group.min_count == 4
    pod = job_pod(job, 3, now=120.0)
    assert pod.key == "batch/train-3"
    assert pod.group_key == "batch/train"
    assert pod.requests == {"cpu": 4000}
    assert pod.arrival == 120.0 and pod.duration == 3600.0
    assert pod.labels["batch.kubernetes.io/job-completion-index"] == "3"
    assert pod.owner == "batch/train"


def test_job_gang_min_count_can_be_set() -> None:
    job = MakeJob().parallelism(8).gang(min_count=6).req(cpu="1").obj()
    assert job.policy == GroupPolicy("gang", 6)


def test_job_without_scheduling_stamps_no_pod_group() -> None:
    job = MakeJob("plain").parallelism(2).req(cpu="1").obj()
    assert job.policy is None and job_pod_group(job) is None
    assert job.completions == 2
    assert job_pod(job, 0, now=0.0).pod_group is None


def test_job_basic_scheduling() -> None:
    builder = MakeJob("b").parallelism(3).req(cpu="1")
    builder.doc["spec"]["scheduling"] = {"schedulingPolicy": {"basic": {}}}
    group = job_pod_group(builder.obj())
    assert group is not None and not group.is_gang


def test_job_gang_min_count_below_one_is_rejected() -> None:
    with pytest.raises(InputError) as err:
        MakeJob().parallelism(2).gang(min_count=0).req(cpu="1").obj()
    assert err.value.field == "spec.scheduling.schedulingPolicy.gang.minCount"


def test_job_scheduling_shorthand_is_not_a_v137_field() -> None:
    # batch/v1 JobSchedulingConfiguration has schedulingPolicy; the API server drops a bare `gang`.
    builder = MakeJob("old").parallelism(2).req(cpu="1")
    builder.doc["spec"]["scheduling"] = {"gang": {}}
    with pytest.raises(InputError) as err:
        builder.obj()
    assert err.value.field == "spec.scheduling.gang"
    assert "spec.scheduling.schedulingPolicy.gang" in str(err.value)


def test_job_template_errors_name_the_template_field() -> None:
    with pytest.raises(InputError) as err:
        MakeJob().req(cpu="-2").obj()
    assert err.value.field == "spec.template.spec.containers[0].resources.requests.cpu"


def test_toleration_seconds_need_the_no_execute_effect() -> None:
    pod = MakePod("p").req(cpu="1").toleration("node.kubernetes.io/unreachable", effect="NoExecute", seconds=300)
    assert pod.obj().placement.tolerations[0].toleration_seconds == 300
    with pytest.raises(InputError) as err:
        MakePod("q").req(cpu="1").toleration("gpu", effect="NoSchedule", seconds=300).obj()
    assert err.value.field == "spec.tolerations[0].tolerationSeconds"
    assert err.value.detail == "may only be set when effect is NoExecute"
