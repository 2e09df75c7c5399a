"""The cycle boundary of the Scheduler: whatever one pod's, PodGroup's or tree's cycle raises (a Filter, the
placement, a preemption dry run, device allocation, a decision being recorded), that entry alone fails, as
kube-scheduler fails a cycle with an error: the books are as before the cycle, its pods get PodScheduled=False
with reason SchedulerError, its PodGroups PodGroupInitiallyScheduled=False/SchedulerError, the error is logged
once, the entry retries after the error backoff, and the next entries are scheduled. A broken invariant of the
books (StateCorrupted) is never swallowed."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence

import numpy as np
import pytest

from phalanx.api.objects import Pod
from phalanx.cluster.state import StateCorrupted
from phalanx.scheduler.cycle import PodCycle, Result
from phalanx.scheduler.decisions import Bind, Decision, GroupCondition, Unschedulable
from phalanx.scheduler.framework import BoolArray, CycleState
from phalanx.scheduler.group_cycle import GroupCycles
from phalanx.scheduler.plugins.node_resources import NodeResourcesFit
from phalanx.scheduler.preemption import Preemptor
from phalanx.scheduler.profiles import builtin
from phalanx.scheduler.scheduler import Scheduler
from tests.builders import MakeCompositePodGroup, MakeNode, MakePod, MakePodGroup
from tests.cluster.test_trial import fingerprint

POISON = "poison"


@pytest.fixture
def poisoned(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every Filter pass over pod `poison` (or a pod named `poison-…`) raises."""
    feasible = PodCycle.feasible

    def raising(self: PodCycle, state: CycleState) -> BoolArray:
        if state.pod.name.split("-")[0] == POISON:
            raise RuntimeError("a filter broke")
        return feasible(self, state)

    monkeypatch.setattr(PodCycle, "feasible", raising)
    yield


def scheduler(profile: str = "default", cpu: str = "8") -> Scheduler:
    return Scheduler(builtin(profile), [MakeNode("n1").alloc(cpu=cpu, memory="32Gi").obj()])


def pod(name: str, cpu: str = "1", group: str | None = None, priority: int = 0) -> Pod:
    builder = MakePod(name).req(cpu=cpu, memory="1Gi").priority(priority)
    if group is not None:
        builder.group(group)
    return builder.obj()


def binds(decisions: Sequence[Decision]) -> dict[str, str]:
    return {d.pod.name: d.node for d in decisions if isinstance(d, Bind)}


def failures(decisions: Sequence[Decision]) -> dict[str, tuple[str, str]]:
    return {d.pod.name: (d.reason, d.message) for d in decisions if isinstance(d, Unschedulable)}


def conditions(decisions: Sequence[Decision]) -> dict[str, tuple[bool, str, str]]:
    return {d.group.name: (d.status, d.reason, d.message) for d in decisions if isinstance(d, GroupCondition)}


def test_a_pod_whose_filter_raises_fails_alone_with_a_scheduler_error(
        poisoned: None, caplog: pytest.LogCaptureFixture) -> None:
    s = scheduler()
    for item in (pod("a"), pod(POISON), pod("b")):
        s.add_pod(item, 0.0)
    with caplog.at_level(logging.ERROR, logger="phalanx.scheduler.cycle_errors"):
        decisions = s.schedule(0.0)
        assert binds(decisions) == {"a": "n1", "b": "n1"}
        assert failures(decisions) == {POISON: ("SchedulerError", "RuntimeError: a filter broke")}
        assert s.pod_message("default/poison") == "RuntimeError: a filter broke"
        # Nothing changed: the same state would fail the same way, so the retry sleeps until an event …
        assert s.next_retry() is None
        s.add_nodes([MakeNode("n2").alloc(cpu="8", memory="32Gi").obj()], 0.5)
        retry = s.next_retry()  # … and then comes after the error backoff, not at once
        assert retry is not None and retry > 0.5
        assert s.schedule(0.5) == []
        assert failures(s.schedule(retry)) == {POISON: ("SchedulerError", "RuntimeError: a filter broke")}
    logged = [r for r in caplog.records if "default/poison" in r.getMessage()]
    assert len(logged) == 1 and logged[0].exc_info is not None


def test_a_gang_cycle_that_raises_halfway_leaves_the_books_as_they_were(poisoned: None) -> None:
    s = scheduler("gang")
    s.add_pod_group(MakePodGroup("g").gang(3).obj(), 0.0)
    s.add_pod(pod("solo", cpu="2"), 0.0)
    before = fingerprint(s.cluster)
    for name in ("g-0", "g-1", "poison-2"):  # the third member raises after two were placed in the trial
        s.add_pod(pod(name, cpu="2", group="g"), 0.0)
    decisions = s.schedule(0.0)
    assert binds(decisions) == {"solo": "n1"}
    assert {name for name, (reason, _) in failures(decisions).items() if reason == "SchedulerError"} == \
        {"g-0", "g-1", "poison-2"}
    assert conditions(decisions) == {"g": (False, "SchedulerError", "RuntimeError: a filter broke")}
    s.delete_pod("default/solo", 1.0)
    assert fingerprint(s.cluster) == before
    assert list(s.assumed) == ["default/solo"]  # the driver was told to bind it only


def test_bindings_decided_before_the_error_are_taken_back(monkeypatch: pytest.MonkeyPatch) -> None:
    # The gang is placed and its Bind decisions are made; then writing its condition raises.
    s = scheduler("gang")
    s.add_pod_group(MakePodGroup("g").gang(2).obj(), 0.0)
    before = fingerprint(s.cluster)
    condition = Scheduler.condition

    def raising(self: Scheduler, group: object, status: bool, reason: str, message: str) -> None:
        if status:
            raise KeyError("status")
        condition(self, group, status, reason, message)  # type: ignore[arg-type]

    monkeypatch.setattr(Scheduler, "condition", raising)
    for name in ("g-0", "g-1"):
        s.add_pod(pod(name, cpu="2", group="g"), 0.0)
    decisions = s.schedule(0.0)
    assert binds(decisions) == {}
    assert conditions(decisions) == {"g": (False, "SchedulerError", "KeyError: 'status'")}
    assert fingerprint(s.cluster) == before and s.assumed == {} and not s.running.node_of
    monkeypatch.setattr(Scheduler, "condition", condition)
    s.add_nodes([MakeNode("n2").alloc(cpu="8", memory="32Gi").obj()], 1.0)  # an event: the retry is due
    retry = s.next_retry()
    assert retry is not None
    assert sorted(binds(s.schedule(retry))) == ["g-0", "g-1"]


def test_a_preemption_dry_run_that_raises_fails_the_preemptor_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    def raising(self: Preemptor, *args: object) -> None:
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(Preemptor, "for_pod", raising)
    s = scheduler(cpu="2")
    s.add_pod(pod("low", cpu="2"), 0.0, node="n1")
    s.add_pod(pod("high", cpu="2", priority=100), 0.0)
    decisions = s.schedule(0.0)
    assert failures(decisions) == {"high": ("SchedulerError", "ZeroDivisionError: division by zero")}
    assert "default/low" in s.cluster.bound and not s.running.terminating


def test_a_tree_whose_cycle_raises_fails_every_leaf(poisoned: None) -> None:
    gates = {"TopologyAwareWorkloadScheduling": True, "CompositePodGroup": True}
    profile = builtin("gang")
    s = Scheduler(type(profile)(profile.name, feature_gates={**profile.feature_gates, **gates}),
                  [MakeNode("n1").alloc(cpu="8", memory="32Gi").obj()])
    s.add_composite_pod_group(MakeCompositePodGroup("root").gang(2).obj(), 0.0)
    for name in ("a", "b"):
        s.add_pod_group(MakePodGroup(name).gang(1).parent("root").obj(), 0.0)
    s.add_pod(pod("a-0", group="a"), 0.0)
    s.add_pod(pod("poison-0", group="b"), 0.0)
    s.add_pod(pod("plain"), 0.0)
    decisions = s.schedule(0.0)
    assert binds(decisions) == {"plain": "n1"}
    assert {name: (status, reason) for name, (status, reason, _) in conditions(decisions).items()} == \
        {"a": (False, "SchedulerError"), "b": (False, "SchedulerError")}


def test_an_error_in_pre_enqueue_holds_the_group_and_nothing_else(monkeypatch: pytest.MonkeyPatch) -> None:
    def raising(self: GroupCycles, group_key: str) -> str | None:
        raise RuntimeError("pre-enqueue broke")

    monkeypatch.setattr(GroupCycles, "gate_message", raising)
    s = scheduler("gang")
    s.add_pod_group(MakePodGroup("g").gang(1).obj(), 0.0)
    s.add_pod(pod("g-0", group="g"), 0.0)
    s.add_pod(pod("plain"), 0.0)
    assert binds(s.schedule(0.0)) == {"plain": "n1"}
    assert s.pod_message("default/g-0") == "RuntimeError: pre-enqueue broke"


def test_a_broken_invariant_is_not_swallowed(monkeypatch: pytest.MonkeyPatch) -> None:
    # A fit filter that lets everything through makes the engine bind past allocatable: its books are wrong,
    # and scheduling stops there instead of going on.
    def everywhere(self: NodeResourcesFit, state: CycleState, cluster: object) -> BoolArray:
        return np.ones(len(cluster), dtype=bool)  # type: ignore[arg-type]

    monkeypatch.setattr(NodeResourcesFit, "filter", everywhere)
    monkeypatch.setattr(NodeResourcesFit, "filter_range",
                        lambda self, state, cluster, lo, hi: np.ones(hi - lo, dtype=bool))
    s = scheduler(cpu="1")
    s.add_pod(pod("big", cpu="4"), 0.0)
    with pytest.raises(StateCorrupted, match="over-committed in cpu"):
        s.schedule(0.0)


def test_a_pod_bound_twice_is_state_corruption_not_a_pod_error(monkeypatch: pytest.MonkeyPatch) -> None:
    schedule = PodCycle.schedule

    def bound_already(self: PodCycle, target: Pod) -> Result:
        result = schedule(self, target)
        if result.node is not None:
            self.cluster.assume(target, result.node)  # the bug: the pod is in the books before Reserve
        return result

    monkeypatch.setattr(PodCycle, "schedule", bound_already)
    s = scheduler()
    s.add_pod(pod("a"), 0.0)
    with pytest.raises(StateCorrupted, match="already bound"):
        s.schedule(0.0)
