"""Upstream `podgroup/cpg_test.go` (kube-scheduler v1.37.2 integration tests), restated as Phalanx inputs.

`TestCPGScheduling` builds CompositePodGroup trees on one node and checks which leaves' pods bind and which
stay unschedulable; `TestPodGroupDependentRequiredValidation` checks that the API server takes a PodGroup with a
parent and a workloadRef and refuses one with a parent but no workloadRef. The latter is restated as: Phalanx
reads the first and refuses the second with an InputError naming `spec.workloadRef`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import pytest

from phalanx.errors import InputError
from phalanx.scheduler.scheduler import Scheduler
from tests.builders import Buildable, MakeCompositePodGroup, MakeNode, MakePod, MakePodGroup, inputs_of
from tests.upstream.kubernetes.restated import Case, Outcome, Unexpressed, names, params, run

FILE = "podgroup/cpg_test.go"
SCHEDULING = "TestCPGScheduling"
VALIDATION = "TestPodGroupDependentRequiredValidation"
# The gates both upstream functions turn on (GenericWorkload is on in the `gang` profile already).
GATES = {"GenericWorkload": True, "TopologyAwareWorkloadScheduling": True, "CompositePodGroup": True}
PRIORITY = 100


# --- the objects, as the upstream helpers make them ------------------------------------------------------

def node(name: str = "node1", cpu: str = "20") -> MakeNode:
    """st.MakeNode().Capacity({cpu}): capacity and allocatable, with the wrapper's 32 pods."""
    return MakeNode(name).alloc(cpu=cpu, pods="32").capacity(cpu=cpu, pods="32")


def pods(group: str, *cpus: str, at: int = 0) -> list[MakePod]:
    """makeTestPods: `<group>-pod-<i>`, one container requesting `cpus[i]` CPU, priority 100."""
    out = []
    for i, cpu in enumerate(cpus):
        pod = MakePod(f"{group}-pod-{i}").group(group).priority(PRIORITY).req(cpu=cpu)
        out.append(pod.arrival(at) if at else pod)
    return out


def pod_names(group: str, count: int) -> list[str]:
    return [f"{group}-pod-{i}" for i in range(count)]


def group_template(name: str, min_count: int | None) -> dict[str, Any]:
    """st.MakePodGroupTemplate(): gang of `min_count`, or basic when None; priority 100."""
    policy: dict[str, Any] = {"basic": {}} if min_count is None else {"gang": {"minCount": min_count}}
    return {"name": name, "schedulingPolicy": policy, "priority": PRIORITY}


def composite_template(name: str, min_group_count: int | None, *children: dict[str, Any]) -> dict[str, Any]:
    """st.MakeCompositePodGroupTemplate(): gang of `min_group_count` children, or basic when None."""
    policy: dict[str, Any] = {"basic": {}} if min_group_count is None else {"gang": {"minGroupCount": min_group_count}}
    template: dict[str, Any] = {"name": name, "schedulingPolicy": policy, "priority": PRIORITY}
    groups = [c for c in children if not _is_composite(c)]
    composites = [c for c in children if _is_composite(c)]
    if groups:
        template["podGroupTemplates"] = groups
    if composites:
        template["compositePodGroupTemplates"] = composites
    return template


def _is_composite(template: dict[str, Any]) -> bool:
    return "podGroupTemplates" in template or "compositePodGroupTemplates" in template


def workload(name: str, *composites: dict[str, Any]) -> dict[str, Any]:
    """A Workload whose spec holds the composite templates (st.MakeWorkload().Children(...))."""
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "Workload",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"compositePodGroupTemplates": list(composites)}}


def cpg(name: str, wl: str, template: str, min_group_count: int | None, parent: str | None = None,
        at: int = 0) -> MakeCompositePodGroup:
    builder = MakeCompositePodGroup(name).workload(wl, template).priority(PRIORITY)
    if min_group_count is not None:
        builder.gang(min_group_count)
    if parent is not None:
        builder.parent(parent)
    return builder.arrival(at) if at else builder


def pg(name: str, wl: str, template: str, parent: str, min_count: int | None, at: int = 0) -> MakePodGroup:
    builder = MakePodGroup(name).workload(wl, template).policy(min_count, PRIORITY).parent(parent)
    return builder.arrival(at) if at else builder


# --- what upstream's steps assert --------------------------------------------------------------------------

def scheduled(out: Outcome, names_: Sequence[str]) -> None:
    """WaitForPodsScheduled: each pod is bound to a node."""
    for name in names_:
        assert out.bound(name), f"{name} is not bound: {out.message(name)}"


def _tried(out: Outcome, name: str) -> str | None:
    """Why the pending pod's group is not bound, if it was tried: PodScheduled=False with a reason (the
    PodGroupInitiallyScheduled reason of its leaf while that was never True). None when no cycle tried it (a
    pod PreEnqueue holds gets no condition upstream)."""
    scheduler = out.sim.scheduler
    assert isinstance(scheduler, Scheduler)
    pod = out.record(name).pod
    group = pod.group_key
    if group is None or group in scheduler.gated or pod.key not in scheduler.messages:
        return None
    condition = out.sim.groups[group].conditions.get("PodGroupInitiallyScheduled") or {}
    return "Unschedulable" if condition.get("status") == "True" else condition.get("reason")


def unschedulable(out: Outcome, names_: Sequence[str]) -> None:
    """WaitForPodsUnschedulable: each pod is unbound with PodScheduled=False/Unschedulable: a cycle tried it
    and it did not fit."""
    for name in names_:
        assert out.pending(name), f"{name} is not pending (node {out.node(name)})"
        assert _tried(out, name) == "Unschedulable", f"{name}: {_tried(out, name)} ({out.message(name)})"


def scheduling_error(out: Outcome, names_: Sequence[str]) -> None:
    """WaitForPodsSchedulingError: each pod is unbound with PodScheduled=False for a reason other than
    Unschedulable (its leaf's PodGroupInitiallyScheduled False/SchedulerError)."""
    for name in names_:
        assert out.pending(name), f"{name} is not pending (node {out.node(name)})"
        reason = _tried(out, name)
        assert reason is not None and reason != "Unschedulable", f"{name}: {reason} ({out.message(name)})"


def expect(ok: Sequence[str], failing: Sequence[str] = ()) -> Callable[[Outcome], None]:
    def check(out: Outcome) -> None:
        scheduled(out, ok)
        unschedulable(out, failing)
    return check


def case(name: str, objects: list[Buildable], check: Callable[[Outcome], None], **kwargs: Any) -> Case:
    return Case(FILE, SCHEDULING, name, tuple(objects), check, gates=GATES, **kwargs)


# --- TestCPGScheduling --------------------------------------------------------------------------------------

def _hierarchical() -> Case:
    wl = "workload-cpg"
    objects: list[Buildable] = [
        node(),
        workload(wl, composite_template(
            "root-t", 2,
            composite_template("sub1-3-t", 2, group_template("gang-t1", 3)),
            composite_template("sub2-t", None, group_template("basic-t", None), group_template("gang-t2", 3)))),
        cpg("cpg-root", wl, "root-t", 2),
        cpg("cpg-sub1", wl, "sub1-3-t", 2, "cpg-root"),
        cpg("cpg-sub2", wl, "sub2-t", None, "cpg-root"),
        cpg("cpg-sub3", wl, "sub1-3-t", 2, "cpg-root"),
        pg("pg1", wl, "gang-t1", "cpg-sub1", 3),
        pg("pg2", wl, "gang-t1", "cpg-sub1", 3),
        pg("pg3", wl, "gang-t1", "cpg-sub1", 3),
        pg("pg4", wl, "basic-t", "cpg-sub2", None),
        pg("pg5", wl, "gang-t2", "cpg-sub2", 3),
        pg("pg6", wl, "gang-t1", "cpg-sub3", 3),
        pg("pg7", wl, "gang-t1", "cpg-sub3", 3),
        *pods("pg1", "1", "1", "1"),
        *pods("pg2", "1", "1", "1"),
        *pods("pg3", "100", "100", "100"),
        *pods("pg4", "1", "1", "1"),
        *pods("pg5", "1", "1", "1"),
        *pods("pg6", "1", "1", "1"),
        *pods("pg7", "100", "100", "100"),
    ]
    ok = [p for g in ("pg1", "pg2", "pg4", "pg5") for p in pod_names(g, 3)]
    failing = [p for g in ("pg3", "pg6", "pg7") for p in pod_names(g, 3)]
    return case("TestCPGHierarchicalScheduling", objects, expect(ok, failing))


def _min_group_count() -> Case:
    wl = "workload-cpg-min"
    objects: list[Buildable] = [
        node(),
        workload(wl, composite_template("root-t", 2, group_template("gang-t", 3))),
        cpg("cpg-root", wl, "root-t", 2),
        pg("pg1", wl, "gang-t", "cpg-root", 3),
        pg("pg2", wl, "gang-t", "cpg-root", 3),
        pg("pg3", wl, "gang-t", "cpg-root", 3),
        *pods("pg1", "1", "1", "1"),
        *pods("pg2", "1", "1", "1"),
        *pods("pg3", "100", "1", "1"),
    ]
    return case("TestCPGMinGroupCount", objects,
                expect(pod_names("pg1", 3) + pod_names("pg2", 3), pod_names("pg3", 3)))


def _basic_with_gang_children() -> Case:
    wl = "workload-cpg-basic"
    objects: list[Buildable] = [
        node(),
        workload(wl, composite_template("root-t", None, group_template("gang-t", 3))),
        cpg("cpg-root", wl, "root-t", None),
        pg("pg1", wl, "gang-t", "cpg-root", 3),
        pg("pg2", wl, "gang-t", "cpg-root", 3),
        *pods("pg1", "1", "1", "1"),
        *pods("pg2", "100", "1", "1"),
    ]
    return case("TestCPGBasicWithGangChildren", objects, expect(pod_names("pg1", 3), pod_names("pg2", 3)))


def _basic_with_basic_children() -> Case:
    wl = "workload-cpg-basic-basic"
    objects: list[Buildable] = [
        node(),
        workload(wl, composite_template("root-t", None, group_template("basic-t", None))),
        cpg("cpg-root", wl, "root-t", None),
        pg("pg1", wl, "basic-t", "cpg-root", None),
        pg("pg2", wl, "basic-t", "cpg-root", None),
        *pods("pg1", "1", "1"),
        *pods("pg2", "1", "1"),
    ]
    return case("TestCPGBasicWithBasicChildren", objects, expect(pod_names("pg1", 2) + pod_names("pg2", 2)))


def _gang_with_basic_children() -> Case:
    wl = "workload-cpg-gang-basic"
    objects: list[Buildable] = [
        node(cpu="8"),
        workload(wl, composite_template("root-t", 2, group_template("basic-t", None))),
        cpg("cpg-root", wl, "root-t", 2),
        pg("pg1", wl, "basic-t", "cpg-root", None),
        pg("pg2", wl, "basic-t", "cpg-root", None),
        pg("pg3", wl, "basic-t", "cpg-root", None),
        *pods("pg1", "1", "1", "1"),
        *pods("pg2", "1", "1", "1"),
        *pods("pg3", "10", "10", "10"),
    ]
    return case("TestCPGGangWithBasicChildren", objects,
                expect(pod_names("pg1", 3) + pod_names("pg2", 3), pod_names("pg3", 3)))


def _basic_with_unschedulable_basic_children() -> Case:
    wl = "workload-cpg-basic-unschedulable"
    objects: list[Buildable] = [
        node(),
        workload(wl, composite_template("root-t", None, group_template("basic-t", None))),
        cpg("cpg-root", wl, "root-t", None),
        pg("pg1", wl, "basic-t", "cpg-root", None),
        pg("pg2", wl, "basic-t", "cpg-root", None),
        *pods("pg1", "50", "50"),
        *pods("pg2", "50", "50"),
    ]
    return case("TestCPGBasicWithUnschedulableBasicChildren", objects,
                expect([], pod_names("pg1", 2) + pod_names("pg2", 2)))


def _dynamic_child_addition() -> Case:
    """Four stages, each created once the one before settled (1 s apart): pg1, then pg2, then cpg-sub with
    sub-pg1 (unschedulable: cpg-sub needs two children), then sub-pg2, after which both sub-groups bind."""
    wl = "workload-cpg-dynamic"
    objects: list[Buildable] = [
        node(),
        workload(wl, composite_template(
            "root-t", None, group_template("basic-t", None),
            composite_template("sub-cpg-t", 2, group_template("sub-pg-t", None)))),
        cpg("cpg-root", wl, "root-t", None),
        pg("pg1", wl, "basic-t", "cpg-root", None),
        *pods("pg1", "1", "1"),
        pg("pg2", wl, "basic-t", "cpg-root", None, at=1),
        *pods("pg2", "1", "1", at=1),
        cpg("cpg-sub", wl, "sub-cpg-t", 2, "cpg-root", at=2),
        pg("sub-pg1", wl, "sub-pg-t", "cpg-sub", None, at=2),
        *pods("sub-pg1", "1", "1", at=2),
        pg("sub-pg2", wl, "sub-pg-t", "cpg-sub", None, at=3),
        *pods("sub-pg2", "1", "1", at=3),
    ]

    def check(out: Outcome) -> None:
        for name in pod_names("pg1", 2):  # stage 1: bound before pg2 exists
            assert out.bound(name) and (out.bound_at(name) or 0.0) < 1, f"{name} at {out.bound_at(name)}"
        for name in pod_names("pg2", 2):  # stage 2: bound before cpg-sub exists
            assert out.bound(name) and 1 <= (out.bound_at(name) or 0.0) < 2, f"{name} at {out.bound_at(name)}"
        # Stage 3, read on the run cut before sub-pg2 arrives: sub-pg1's pods unschedulable (quorum not met).
        unschedulable(run(replace(restated, until=2.5)), pod_names("sub-pg1", 2))
        # Stage 4: both sub-groups bound, sub-pg1's only once sub-pg2 came.
        for name in pod_names("sub-pg1", 2) + pod_names("sub-pg2", 2):
            assert out.bound(name) and (out.bound_at(name) or 0.0) >= 3, f"{name} at {out.bound_at(name)}"

    restated = case("TestCPGDynamicChildAddition", objects, check)
    return restated


# --- TestPodGroupDependentRequiredValidation -----------------------------------------------------------------

def _pod_group(name: str, parent: str | None, workload_ref: tuple[str, str] | None) -> MakePodGroup:
    builder = MakePodGroup(name).basic()
    if workload_ref is not None:
        builder.workload(*workload_ref)
    if parent is not None:
        builder.doc["spec"]["parentCompositePodGroupName"] = parent
    return builder


def _validation() -> Case:
    """The function has no subtests: its two creates are one case. pg-pass (parent and workloadRef) is taken
    (the run reads it); pg-fail (parent, no workloadRef) is refused with an InputError on spec.workloadRef."""
    passing = _pod_group("pg-pass", "some-cpg", ("some-workload", "some-template"))
    failing = _pod_group("pg-fail", "some-cpg", None)

    def check(out: Outcome) -> None:
        assert "default/pg-pass" in out.sim.groups
        with pytest.raises(InputError) as refused:
            inputs_of(failing)
        assert "spec.workloadRef" in str(refused.value)

    return Case(FILE, VALIDATION, VALIDATION, (passing,), check, gates=GATES)


CASES: list[Case] = [
    _hierarchical(),
    _min_group_count(),
    _basic_with_gang_children(),
    _basic_with_basic_children(),
    _gang_with_basic_children(),
    _basic_with_unschedulable_basic_children(),
    _dynamic_child_addition(),
    _validation(),
]

UNEXPRESSED: list[Unexpressed] = []


@pytest.mark.parametrize("case", params(CASES))
def test_upstream_case(case: Case) -> None:
    case.check(run(case))


UPSTREAM_NAMES = (
    (SCHEDULING, "TestCPGHierarchicalScheduling"),
    (SCHEDULING, "TestCPGMinGroupCount"),
    (SCHEDULING, "TestCPGBasicWithGangChildren"),
    (SCHEDULING, "TestCPGBasicWithBasicChildren"),
    (SCHEDULING, "TestCPGGangWithBasicChildren"),
    (SCHEDULING, "TestCPGBasicWithUnschedulableBasicChildren"),
    (SCHEDULING, "TestCPGDynamicChildAddition"),
    (VALIDATION, VALIDATION),
)


def test_every_upstream_case_is_named_once() -> None:
    named = names([*CASES, *UNEXPRESSED])
    assert sorted(named) == sorted(UPSTREAM_NAMES)
    assert len(set(named)) == len(named)
    everything: list[Case | Unexpressed] = [*CASES, *UNEXPRESSED]
    assert all(c.file == FILE for c in everything)
