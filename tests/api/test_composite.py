"""CompositePodGroup (scheduling.k8s.io/v1alpha3), PodGroup.spec.parentCompositePodGroupName and
resourceClaims, and Workload.spec.compositePodGroupTemplates: parsed and rejected as the v1.37.2 API server
does (declarative validation, ValidatePodGroup, ValidateWorkloadSpec), each error naming file, object and
field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from phalanx import InputError, load_paths
from phalanx.api.objects import Source
from phalanx.api.parse import parse_composite_pod_group, parse_pod_group, parse_workload
from tests.builders import MakeCompositePodGroup, MakePodGroup, MakePriorityClass, MakeWorkload, inputs_of

SOURCE = Source("<test>", 1)


def test_a_composite_pod_group_is_read_with_every_field() -> None:
    doc = MakeCompositePodGroup("inner").gang(3).parent("outer").topology("topology.kubernetes.io/rack").manifest()
    doc["spec"].update(priorityClassName="batch", priority=7, preemptionPolicy="Never", disruptionMode={"all": {}})
    cpg = parse_composite_pod_group(doc, SOURCE)
    assert (cpg.key, cpg.parent, cpg.min_group_count, cpg.policy.kind) == ("default/inner", "outer", 3, "gang")
    assert (cpg.workload_name, cpg.template_name) == ("wl", "inner")
    assert (cpg.priority_class_name, cpg.priority, cpg.preemption_policy, cpg.disruption_mode) == \
        ("batch", 7, "Never", "all")
    assert cpg.topology_key == "topology.kubernetes.io/rack"
    assert parse_composite_pod_group(MakeCompositePodGroup("b").manifest(), SOURCE).min_group_count == 1


@pytest.mark.parametrize(("change", "field", "message"), [
    (lambda s: s.pop("workloadRef"), "spec.workloadRef", "Required value"),
    (lambda s: s.pop("schedulingPolicy"), "spec.schedulingPolicy", "is required"),
    (lambda s: s.update(schedulingPolicy={"basic": {}, "gang": {"minGroupCount": 1}}), "spec.schedulingPolicy",
     "exactly one of basic, gang"),
    (lambda s: s.update(schedulingPolicy={"gang": {}}), "spec.schedulingPolicy.gang.minGroupCount", "Required"),
    (lambda s: s.update(schedulingPolicy={"gang": {"minGroupCount": 0}}), "spec.schedulingPolicy.gang.minGroupCount",
     "at least 1|>= 1|must be"),
    (lambda s: s.update(parentCompositePodGroupName="Not_A_Name"), "spec.parentCompositePodGroupName",
     "Invalid value: \"Not_A_Name\": a lowercase RFC 1123 subdomain"),
    (lambda s: s.update(schedulingConstraints={"topology": [{"key": "a"}, {"key": "b"}]}),
     "spec.schedulingConstraints.topology", "at most 1 item"),
    (lambda s: s.update(disruptionMode={"single": {}, "all": {}}), "spec.disruptionMode", "exactly one of"),
])
def test_composite_pod_group_validation(change: Any, field: str, message: str) -> None:
    doc = MakeCompositePodGroup("c").manifest()
    change(doc["spec"])
    with pytest.raises(InputError, match=message) as err:
        parse_composite_pod_group(doc, SOURCE)
    assert err.value.field == field


def test_a_pod_group_names_its_parent_and_needs_a_workload_ref_then() -> None:
    group = MakePodGroup("g").gang(2).parent("c").obj()
    assert group.parent == "c"
    doc = MakePodGroup("g").gang(2).manifest()
    doc["spec"]["parentCompositePodGroupName"] = "c"
    with pytest.raises(InputError, match="must be set when parentCompositePodGroupName is set") as err:
        parse_pod_group(doc, SOURCE)
    assert err.value.field == "spec.workloadRef"


def test_pod_group_resource_claims_are_read_and_bounded() -> None:
    doc = MakePodGroup("g").gang(2).manifest()
    doc["spec"]["resourceClaims"] = [{"name": "net", "resourceClaimName": "fabric"},
                                     {"name": "gpu", "resourceClaimTemplateName": "gpus"}]
    group = parse_pod_group(doc, SOURCE)
    assert [(c.name, c.claim_name, c.template_name) for c in group.resource_claims] == \
        [("net", "fabric", None), ("gpu", None, "gpus")]
    doc["spec"]["resourceClaims"] = [{"name": f"c{i}", "resourceClaimName": "x"} for i in range(5)]
    with pytest.raises(InputError, match="at most 4 items") as err:
        parse_pod_group(doc, SOURCE)
    assert err.value.field == "spec.resourceClaims"
    doc["spec"]["resourceClaims"] = [{"name": "c", "resourceClaimName": "x", "resourceClaimTemplateName": "y"}]
    with pytest.raises(InputError, match="exactly one of") as err:
        parse_pod_group(doc, SOURCE)
    assert err.value.field == "spec.resourceClaims[0]"


# --- Workload.spec.compositePodGroupTemplates (ValidateWorkloadSpec) ----------------------------------------

def composite_template(name: str, *children: dict[str, Any], groups: tuple[str, ...] = ("workers",),
                       **extra: Any) -> dict[str, Any]:
    return {"name": name, "schedulingPolicy": {"gang": {"minGroupCount": 1}},
            "podGroupTemplates": [{"name": g, "schedulingPolicy": {"basic": {}}} for g in groups],
            "compositePodGroupTemplates": list(children), **extra}


def workload(*templates: dict[str, Any]) -> dict[str, Any]:
    doc = MakeWorkload("wl").manifest()
    doc["spec"] = {"compositePodGroupTemplates": list(templates)}
    return doc


def test_composite_templates_of_every_level_are_read() -> None:
    wl = parse_workload(workload(composite_template("top", composite_template("mid", groups=("leaf",)),
                                                    groups=("head",))), SOURCE)
    assert set(wl.composite_templates) == {"top", "mid"}
    assert set(wl.templates) == {"head", "leaf"}
    assert wl.composite_templates["top"].composite_children == ("mid",)
    assert wl.composite_templates["mid"].children == ("leaf",)


def test_three_composite_levels_are_the_most_a_workload_may_nest() -> None:
    def chain(levels: int) -> dict[str, Any]:
        node = composite_template(f"c{levels}", groups=(f"g{levels}",))
        for level in range(levels - 1, 0, -1):
            node = composite_template(f"c{level}", node, groups=(f"g{level}",))
        return node

    parse_workload(workload(chain(3)), SOURCE)
    with pytest.raises(InputError, match="maximum template hierarchy depth is 4") as err:
        parse_workload(workload(chain(4)), SOURCE)
    assert err.value.field == "spec.compositePodGroupTemplates[0]"


@pytest.mark.parametrize(("templates", "field", "message"), [
    ([composite_template("a", composite_template("b", groups=("x",)), groups=("x",))],
     "spec.compositePodGroupTemplates[0].compositePodGroupTemplates[0].podGroupTemplates[0].name", "Duplicate"),
    ([composite_template("a", groups=())], "spec.compositePodGroupTemplates[0]", "at least one child"),
    ([composite_template("a", priority=5), composite_template("b", groups=("y",))], "spec",
     "all priority and priorityClassName values must be identical"),
])
def test_composite_template_validation(templates: list[dict[str, Any]], field: str, message: str) -> None:
    with pytest.raises(InputError, match=message) as err:
        parse_workload(workload(*templates), SOURCE)
    assert err.value.field == field


def test_a_workload_sets_one_kind_of_templates() -> None:
    doc = workload(composite_template("a"))
    doc["spec"]["podGroupTemplates"] = [{"name": "solo", "schedulingPolicy": {"basic": {}}}]
    with pytest.raises(InputError, match="exactly one of podGroupTemplates, compositePodGroupTemplates") as err:
        parse_workload(doc, SOURCE)
    assert err.value.field == "spec"


# --- loading --------------------------------------------------------------------------------------------------

def test_composite_pod_groups_load_with_priority_admission_and_template_checks(tmp_path: Path) -> None:
    inputs = inputs_of(MakePriorityClass("batch", 100), MakeCompositePodGroup("c").gang(1),
                       MakeCompositePodGroup("d").parent("c"))
    assert [c.key for c in inputs.composite_pod_groups] == ["default/c", "default/d"]
    assert inputs.composite_pod_groups[0].priority == 0
    wl = workload(composite_template("top"))
    path = tmp_path / "in.yaml"
    cpg = MakeCompositePodGroup("c").manifest()
    cpg["spec"]["workloadRef"] = {"workloadName": "wl", "templateName": "nope"}
    path.write_text(yaml.safe_dump_all([wl, cpg]))
    with pytest.raises(InputError, match="has no compositePodGroupTemplate 'nope'") as err:
        load_paths([str(path)])
    assert (err.value.file, err.value.obj, err.value.field) == (str(path), "CompositePodGroup default/c",
                                                                "spec.workloadRef.templateName")


def test_another_api_version_of_the_kind_is_named(tmp_path: Path) -> None:
    doc = MakeCompositePodGroup("c").manifest()
    doc["apiVersion"] = "scheduling.k8s.io/v1beta1"
    path = tmp_path / "in.yaml"
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(InputError, match=r"scheduling\.k8s\.io/v1alpha3") as err:
        load_paths([str(path)])
    assert err.value.field == "apiVersion"
