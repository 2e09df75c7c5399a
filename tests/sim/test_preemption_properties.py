"""Preemption properties over random clusters, workloads and both profiles, through the simulator:

- no pod is ever preempted for a preemptor of lower or equal priority (DESIGN invariant 4);
- with `disruptionMode: all` (GenericWorkload on), a group's running members are evicted together or not
  at all (invariant 3);
- no node is ever over-committed (invariant 1), checked after every scheduling step and every preemption.

Every PostFilter and PodGroupPostFilter call is watched as it returns, so the check sees exactly the
cluster the preemption saw.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from phalanx.api.objects import Pod, PodGroup
from phalanx.scheduler.decisions import Decision, Evict, Preemption
from phalanx.scheduler.preemption import Outcome
from phalanx.scheduler.profiles import builtin
from phalanx.sim.simulation import Simulation
from tests.builders import Buildable, MakeNode, MakePod, MakePodGroup, inputs_of

SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
PRIORITIES = st.sampled_from([0, 1, 5, 5, 10, 100])
HIGH = st.sampled_from([1, 5, 10, 100, 100])
CPUS = st.sampled_from(["500m", "1", "2", "2", "4"])


def _group(name: str, size: int, priority: int, mode: str) -> MakePodGroup:
    group = MakePodGroup(name).gang(size).priority(priority)
    group.doc["spec"]["disruptionMode"] = {mode: {}}
    return group


@st.composite
def clusters(draw: st.DrawFn) -> tuple[list[Buildable], str]:
    """Nodes filled with running pods (alone or in groups), then arriving pods and gangs of any priority."""
    items: list[Buildable] = []
    count = draw(st.integers(1, 5))
    for i in range(count):
        items.append(MakeNode(f"node-{i}").alloc(cpu=draw(st.sampled_from(["2", "4", "8"])), memory="64Gi"))
    for g in range(draw(st.integers(0, 2))):  # running groups, one member per node at most
        size = draw(st.integers(1, count))
        mode = draw(st.sampled_from(["all", "all", "single"]))
        items.append(_group(f"run-{g}", size, draw(PRIORITIES), mode))
        for m in range(size):
            items.append(MakePod(f"run-{g}-{m}").req(cpu="500m", memory="1Gi").group(f"run-{g}")
                         .priority(draw(PRIORITIES)).node(f"node-{m}").duration(draw(st.sampled_from(["1h", "3h"]))))
    for i in range(count):  # fill the nodes (a pod that does not fit its node any more fails on arrival)
        for j in range(draw(st.integers(0, 8))):
            pod = MakePod(f"solo-{i}-{j}").req(cpu=draw(st.sampled_from(["500m", "1"])), memory="1Gi")
            pod.priority(draw(PRIORITIES)).node(f"node-{i}")
            if draw(st.booleans()):
                pod.duration(draw(st.sampled_from(["30m", "2h"])))
            items.append(pod)
    for k in range(draw(st.integers(1, 6))):  # arriving pods
        pod = MakePod(f"new-{k}").req(cpu=draw(CPUS), memory="1Gi").priority(draw(HIGH))
        pod.arrival(draw(st.sampled_from([0, 60, 600, 1800]))).duration(draw(st.sampled_from(["20m", "1h"])))
        items.append(pod)
    for g in range(draw(st.integers(0, 2))):  # arriving gangs
        size = draw(st.integers(1, 3))
        at = draw(st.sampled_from([0, 300, 1200]))
        items.append(_group(f"gang-{g}", size, draw(HIGH), draw(st.sampled_from(["all", "single"])))
                     .arrival(at))
        for m in range(size):
            items.append(MakePod(f"gang-{g}-{m}").req(cpu=draw(CPUS), memory="1Gi").group(f"gang-{g}")
                         .arrival(at).duration("1h"))
    return items, draw(st.sampled_from(["default", "gang"]))


class Watch:
    """Checks preemption decisions the moment they are made."""

    def __init__(self, sim: Simulation) -> None:
        self.sim = sim
        self.scheduler = sim.scheduler
        self.preemptions = 0
        self.evictions = 0
        machine = self.scheduler.preemptor
        for_pod, for_group, schedule = machine.for_pod, machine.for_group, self.scheduler.schedule

        def watched_pod(pod: Pod, priority: int, *rest: Any) -> Outcome | None:
            assert priority == self.scheduler.priority_of(pod)
            return self.check(for_pod(pod, priority, *rest), priority)

        def watched_group(group: PodGroup, priority: int, *rest: Any) -> Outcome | None:
            if group.priority is not None:
                assert priority == group.priority
            return self.check(for_group(group, priority, *rest), priority)

        def watched_schedule(now: float) -> list[Decision]:
            decisions = schedule(now)
            self.check_decisions(decisions)
            assert not self.scheduler.cluster.overcommitted().any(), f"over-committed at {now}"
            return decisions

        machine.for_pod = watched_pod  # type: ignore[method-assign]
        machine.for_group = watched_group  # type: ignore[method-assign]
        self.scheduler.schedule = watched_schedule  # type: ignore[method-assign]

    def check(self, outcome: Outcome | None, priority: int) -> Outcome | None:
        scheduler = self.scheduler
        running = scheduler.running
        assert not scheduler.cluster.overcommitted().any()
        if outcome is None:
            return None
        victims = set(outcome.victims)
        for key in victims:
            assert key in running.node_of and key not in running.terminating
            assert running.priority[key] < priority, (key, running.priority[key], priority)
        if scheduler.profile.gang:  # disruptionMode: all — every running member goes, or none
            for key in victims:
                group_key = scheduler.pods[key].group_key
                group = scheduler.groups.get(group_key or "")
                if group is not None and group.disruption_mode == "all":
                    members = {k for k in scheduler.members[group.key]
                               if k in running.node_of and k not in running.terminating}
                    assert members <= victims, (group.key, members - victims)
                    if len(members) > 1:
                        event("an all group with several running members was preempted")
        return outcome

    def check_decisions(self, decisions: list[Decision]) -> None:
        for decision in decisions:
            if isinstance(decision, Preemption):
                self.preemptions += 1
            elif isinstance(decision, Evict):
                self.evictions += 1
                preemptor = decision.preemptor
                pods, groups = self.scheduler.pods, self.scheduler.groups
                victim = self.scheduler.running.priority[decision.pod.key]
                if preemptor in groups and groups[preemptor].priority is not None:
                    assert victim < (groups[preemptor].priority or 0)
                elif preemptor in pods:
                    assert victim < self.scheduler.priority_of(pods[preemptor])


@SETTINGS
@given(clusters())
def test_preemption_never_evicts_up_splits_an_all_group_or_overcommits(case: tuple[list[Buildable], str]) -> None:
    items, profile = case
    sim = Simulation(inputs_of(*items), builtin(profile), until=4 * 3600.0)
    watch = Watch(sim)
    sim.run()
    event(f"{profile}: preemptions {'yes' if watch.preemptions else 'no'}")
    assert watch.evictions == sim.evictions
    for record in sim.pods.values():  # every eviction in the report names a preemptor of higher priority
        for entry in record.preempted_by:
            preemptor = entry["preemptor"]
            assert preemptor in sim.pods or preemptor in sim.groups
