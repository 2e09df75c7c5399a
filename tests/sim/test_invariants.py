"""Property tests for DESIGN.md's invariants over random clusters and workloads, under the default, gang and kai
profiles:

1. no node is ever over-committed (checked around every scheduling step);
2. gang atomicity: with GenericWorkload on, a cycle binds at least minCount members of a group (counting
   running ones) or none, and a cycle never unbinds anything; pods leave their node only by finishing,
   being deleted or being evicted;
5. determinism: the same input and seed give the same report.

Plus the cheap ones that come along: every bind respects the pod's taints, selectors and cordons, and a
preemption never evicts a pod of equal or higher priority for the preemptor (invariant 4).
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from phalanx import build_report, builtin
from phalanx.api.objects import GroupPolicy
from phalanx.inputs.load import Inputs
from phalanx.scheduler.decisions import Bind, Decision, Evict
from phalanx.scheduler.plugins.node_affinity import NodeAffinity
from phalanx.scheduler.plugins.node_unschedulable import NodeUnschedulable
from phalanx.scheduler.plugins.taint_toleration import TaintToleration
from phalanx.scheduler.scheduler import Scheduler
from phalanx.sim.interleavings import AS_LISTED, INTERLEAVINGS, Interleaving
from phalanx.sim.simulation import Simulation
from tests.builders import Buildable, MakeJob, MakeNode, MakePod, MakePodGroup, cycle_state, inputs_of

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
PROFILES = st.sampled_from(["default", "gang", "kai"])  # kai: KAI's consolidation moves pods too
UNTIL = 6 * 3600.0

cpus = st.sampled_from(["250m", "500m", "1", "2", "3", "4", "6"])
durations = st.one_of(st.none(), st.sampled_from(["5m", "20m", "1h", "90m"]))
arrivals = st.sampled_from([0, 0, 0, 60, 600, 1800, 3600])
priorities = st.sampled_from([0, 0, 0, 1000])


@st.composite
def workloads(draw: st.DrawFn) -> list[Buildable]:
    """Nodes, a snapshot of running pods, single pods, gangs (PodGroups and gang Jobs) in document order."""
    items: list[Buildable] = []
    node_count = draw(st.integers(1, 5))
    present: list[str] = []
    for i in range(node_count):
        node = MakeNode(f"node-{i}").alloc(cpu=draw(st.sampled_from(["2", "4", "8", "16"])),
                                           memory=draw(st.sampled_from(["8Gi", "16Gi", "32Gi"])))
        node.label("zone", draw(st.sampled_from(["a", "b"])))
        if draw(st.integers(0, 4)) == 0:
            node.taint("gpu", "true")
        if draw(st.integers(0, 9)) == 0:
            node.unschedulable()
        if i > 0 and draw(st.integers(0, 4)) == 0:
            node.arrival(draw(st.sampled_from([600, 3600])))
        else:
            present.append(f"node-{i}")
        items.append(node)

    def pod(name: str, namespace: str) -> MakePod:
        p = MakePod(name, namespace).req(cpu=draw(cpus), memory=draw(st.sampled_from(["256Mi", "1Gi", "4Gi"])))
        if draw(st.integers(0, 3)) == 0:
            p.toleration("gpu", "true")
        if draw(st.integers(0, 5)) == 0:
            p.node_selector(zone=draw(st.sampled_from(["a", "b"])))
        if (duration := draw(durations)) is not None:
            p.duration(duration)
        return p

    for i in range(draw(st.integers(0, 3))):  # the existing load: pods already on a node at time 0
        items.append(pod(f"running-{i}", "snapshot").node(draw(st.sampled_from(present))))
    for i in range(draw(st.integers(0, 6))):
        items.append(pod(f"single-{i}", "apps").priority(draw(priorities)).arrival(draw(arrivals)))
    for g in range(draw(st.integers(0, 3))):
        min_count = draw(st.integers(1, 4))
        members = draw(st.integers(max(min_count - 1, 1), min_count + 2))
        group_arrival = draw(arrivals)
        items.append(MakePodGroup(f"gang-{g}", "ml").gang(min_count).arrival(group_arrival))
        priority = draw(priorities)
        for m in range(members):
            items.append(pod(f"gang-{g}-{m}", "ml").group(f"gang-{g}").priority(priority).arrival(draw(arrivals)))
    if draw(st.booleans()):
        parallelism = draw(st.integers(1, 3))
        job = (MakeJob("train", "batch").parallelism(parallelism).completions(parallelism * draw(st.integers(1, 2)))
               .gang().req(cpu=draw(cpus)).duration(draw(st.sampled_from(["10m", "1h"]))).arrival(draw(arrivals)))
        items.append(job)
    return items


class Watched:
    """Wraps a Simulation's scheduler to check the invariants around every scheduling step."""

    def __init__(self, sim: Simulation) -> None:
        self.sim = sim
        self.scheduler: Scheduler = sim.scheduler
        self._schedule = self.scheduler.schedule
        self.scheduler.schedule = self.schedule  # type: ignore[method-assign]
        self.last_bound: set[str] = set()
        self.steps = 0
        self.binds = 0

    def schedule(self, now: float) -> list[Decision]:
        scheduler, cluster = self.scheduler, self.scheduler.cluster
        before = set(cluster.bound)
        assert not cluster.overcommitted().any(), f"over-committed before the step at {now}"
        for key in self.last_bound - before:  # left its node between steps: finished, deleted or evicted
            record = self.sim.pods.get(key)
            assert record is not None
            assert record.phase in ("Succeeded", "Failed") or record.preempted_count > 0, (key, record.phase)
        running = {g: sum(1 for k in scheduler.members[g] if k in before) for g in scheduler.members}

        decisions = self._schedule(now)

        after = set(cluster.bound)
        self.steps += 1
        assert before <= after, f"a cycle unbound {before - after} at {now}"
        assert not cluster.overcommitted().any(), f"over-committed after the step at {now}"
        binds = [d for d in decisions if isinstance(d, Bind)]
        self.binds += len(binds)
        for bind in binds:
            node = cluster.index[bind.node]
            assert cluster.bound[bind.pod.key][0] == node
            state = cycle_state(bind.pod, cluster)
            for plugin in (NodeUnschedulable(), TaintToleration(), NodeAffinity()):
                assert plugin.filter(state, cluster)[node], f"{bind.pod.key} bound to {bind.node} despite {plugin.name}"
        if scheduler.profile.gang:
            per_group = Counter(d.pod.group_key for d in binds if d.pod.group_key is not None)
            for group_key, bound_now in per_group.items():
                group = scheduler.groups[group_key]
                if group.is_gang:
                    have = running.get(group_key, 0) + bound_now
                    assert have >= group.min_count, (
                        f"{group_key} bound {bound_now} with {running.get(group_key, 0)} running < minCount "
                        f"{group.min_count} at {now}")
        for evict in (d for d in decisions if isinstance(d, Evict)):
            if evict.message.startswith("Consolidated for"):  # KAI's consolidation moves, whatever the priority
                continue
            victim = scheduler.priority_of(evict.pod)
            preemptor = evict.preemptor
            if preemptor in scheduler.pods:
                mine = scheduler.priority_of(scheduler.pods[preemptor])
            else:
                group = scheduler.groups[preemptor]
                mine = group.priority if group.priority is not None else max(
                    (scheduler.pods[k].priority for k in scheduler.members[preemptor]), default=0)
            assert victim < mine, f"{evict.pod.key} (priority {victim}) evicted for {preemptor} ({mine})"
        self.last_bound = after
        return decisions


def run_checked(inputs: Inputs, profile: str, seed: int = 0,
                interleaving: Interleaving = AS_LISTED) -> tuple[Simulation, Watched]:
    sim = Simulation(inputs, builtin(profile), seed=seed, until=UNTIL, interleaving=interleaving)
    watched = Watched(sim)
    sim.run()
    return sim, watched


@SETTINGS
@given(items=workloads(), profile=PROFILES, seed=st.integers(0, 3), interleaving=st.sampled_from(INTERLEAVINGS))
def test_no_over_commit_and_gang_atomicity(items: list[Buildable], profile: str, seed: int,
                                           interleaving: Interleaving) -> None:
    """Under every order of an instant's events (phalanx/sim/interleavings.py): the invariants are the engine's."""
    sim, watched = run_checked(inputs_of(*items), profile, seed, interleaving)
    assert watched.steps > 0 or not sim.pods
    # What the examples exercised (pytest --hypothesis-show-statistics).
    event(f"gang members bound: {any(r.phase != 'Pending' and r.pod.group_key for r in sim.pods.values())}")
    event(f"evictions: {sim.evictions > 0}")
    event(f"pods left pending: {any(r.phase == 'Pending' for r in sim.pods.values())}")
    # The books agree with the scheduler: what the report calls running is what the cluster holds.
    running = {k for k, r in sim.pods.items() if r.phase == "Running"}
    assert running <= set(sim.scheduler.cluster.bound)


def _report(items: list[Buildable], profile: str, seed: int, inputs: Inputs | None = None,
            interleaving: Interleaving = AS_LISTED) -> str:
    sim = Simulation(inputs or inputs_of(*items), builtin(profile), seed=seed, until=UNTIL,
                     interleaving=interleaving).run()
    report: dict[str, Any] = build_report(sim)
    report.pop("stats")  # wall-clock timings
    return json.dumps(report, sort_keys=True)


@SETTINGS
@given(items=workloads(), profile=PROFILES, seed=st.integers(0, 1000), interleaving=st.sampled_from(INTERLEAVINGS))
def test_same_input_and_seed_give_the_same_report(items: list[Buildable], profile: str, seed: int,
                                                  interleaving: Interleaving) -> None:
    first = _report(items, profile, seed)
    assert _report(items, profile, seed) == first
    # A shuffled order is drawn from its seed: it repeats too.
    assert _report(items, profile, seed, interleaving=interleaving) == \
        _report(items, profile, seed, interleaving=interleaving)
    # compare replays one loaded Inputs under several profiles: a run must not change it.
    shared = inputs_of(*items)
    _report(items, "gang" if profile == "default" else "default", seed, shared)
    assert _report(items, profile, seed, shared) == first


def test_the_watcher_can_fail() -> None:
    """The checks above are not vacuous: a scheduler that binds half a gang trips the atomicity check."""
    items: list[Buildable] = [MakeNode("n1").alloc(cpu="2", memory="8Gi"), MakeNode("n2").alloc(cpu="2", memory="8Gi"),
                              MakePodGroup("g", "ml").gang(2),
                              MakePod("a", "ml").req(cpu="2").group("g"), MakePod("b", "ml").req(cpu="2").group("g")]
    sim = Simulation(inputs_of(*items), builtin("gang"), until=UNTIL)
    watched = Watched(sim)
    group = sim.scheduler.groups
    original = watched._schedule

    def lower_min_count_behind_the_checks(now: float) -> list[Decision]:
        decisions = original(now)
        group["ml/g"].policy = GroupPolicy("gang", 3)
        return decisions

    watched._schedule = lower_min_count_behind_the_checks
    try:
        sim.run()
    except AssertionError as exc:
        assert "minCount" in str(exc)
    else:
        raise AssertionError("the atomicity check did not fire")
