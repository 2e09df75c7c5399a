"""The PodGroup scheduling cycle (KEP-4671): place a group's pending members on one snapshot, all or none.

Members are tried in priority-then-age order with the normal pod algorithm, each assumed on its node so
that later members see it. A member whose shape (requests and placement) already failed in this cycle
fails at once, as the snapshot only fills up. The whole attempt is a ClusterState trial: if at least
`minCount` members are then running or placed, and at least one member was placed, the trial is kept and
every placed member binds; otherwise the trial is abandoned (every assumption, device and GPU share undone)
and the group waits as one unit. As in kube-scheduler's RunRootSchedulingAlgorithm, a group that places
nothing is unschedulable even when it needs nothing more: a basic group none of whose pods fit, or a gang
already running minCount members none of whose other members fit (both then go to preemption). A failed
cycle of a PodGroup with `spec.resourceClaims` then runs DynamicResources' PodGroupPostFilter
(`plugins/dra/post_filter.py`).

With a profile's exact placement on (the `phalanx` profile), a gang this cycle leaves short of minCount gets a
second, exact attempt on the same snapshot (placement/exact.py): its members then go through the ordinary
Filter checks and Reserve on the nodes found, or, if one fails there, the attempt is dropped as well. The
outcome says what exact placement decided (placed, proven infeasible, or undecided in its budget).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from phalanx.api.objects import Pod, PodGroup
from phalanx.cluster.devices import DeviceState
from phalanx.scheduler.cycle import PodCycle
from phalanx.scheduler.group_status import GroupStatus, Trace
from phalanx.scheduler.member_shape import MemberShape, member_shape
from phalanx.scheduler.placement import exact
from phalanx.scheduler.plugins.dra.post_filter import pod_group_post_filter
from phalanx.scheduler.plugins.gang.gang_scheduling import GANG_SCHEDULING
from phalanx.scheduler.profiles import ExactPlacement


@dataclass(slots=True)
class GroupOutcome:
    placed: list[tuple[Pod, int]] = field(default_factory=list)
    failures: dict[str, str] = field(default_factory=dict)  # pod key -> why it could not be placed
    # pod key -> the Filter plugins that rejected it (UnschedulablePlugins), for the queueing hints
    rejectors: dict[str, frozenset[str]] = field(default_factory=dict)
    success: bool = False
    message: str | None = None
    exact: exact.Verdict | None = None  # what exact placement decided, when it ran
    exact_method: str | None = None  # what decided it: "bounds", "greedy", "cp-sat", "budget"
    # A failed cycle in kube-scheduler's words (group_status.py): the group's status, the members the algorithm
    # tried that fitted, and those it never tried (PlacementFeasible stopped it first).
    status: GroupStatus | None = None
    fitted: list[str] = field(default_factory=list)
    untried: list[str] = field(default_factory=list)
    note: str | None = None  # exact placement's verdict on a gang it could not place, in Phalanx's words


def schedule_group(cycle: PodCycle, group: PodGroup, pending: Sequence[Pod], running: int, *,
                   inner: bool = False) -> GroupOutcome:
    """Try to place `pending` members of `group` (in the given order) with `running` members bound; the
    placed members stay reserved only when the outcome is a success.

    `inner`: the group is a child in a CompositePodGroup tree (plugins/composite/). There, as
    podGroupSchedulingDefaultAlgorithm decides, it succeeds once `running` + placed reach minCount (1 for
    basic) even when it places nothing; only the tree's root must place a pod."""
    dry_run = cycle.cluster.journaling  # inside another trial: a preemption dry run, a topology placement tried
    devices = cycle.cluster.extension(DeviceState)
    if not dry_run and devices is not None:
        devices.post_filtered = None  # a new cycle: the claim cache has caught up with the last PostFilter
    with cycle.cluster.trial() as trial:
        outcome = _place(cycle, group, pending, running, inner)
        if outcome.success:
            trial.keep()
    settings = cycle.profile.exact_placement
    # A gang already running minCount members placed none of the others: each fits nowhere even alone.
    if (settings is None or outcome.success or GANG_SCHEDULING.quorum(group, running)
            or not exact.applicable(pending)):
        if not dry_run and not inner and not outcome.success:
            pod_group_post_filter(cycle, group, pending)
        return outcome
    start = time.perf_counter()
    found = _place_exact(cycle, group, pending, running, settings, outcome)
    if not dry_run and found.exact is not None:
        exact.decisions(cycle.cluster).add(group.key, found.exact, time.perf_counter() - start)
    if not dry_run and not inner and not found.success:
        pod_group_post_filter(cycle, group, pending)
    return found


def _place(cycle: PodCycle, group: PodGroup, pending: Sequence[Pod], running: int, inner: bool = False
           ) -> GroupOutcome:
    outcome = GroupOutcome()
    failed_shapes: dict[MemberShape, tuple[str, frozenset[str]]] = {}
    trace = Trace.start(group.min_count, running, [pod.key for pod in pending])
    for pod in pending:
        # A member with topology spread or pod (anti-)affinity depends on the members placed before it, so
        # its failure says nothing about the next one (upstream's pod signatures leave such pods out too).
        shape = None if pod.placement.spread or pod.placement.pod_affinity else member_shape(pod)
        if shape is not None and shape in failed_shapes:
            outcome.failures[pod.key], outcome.rejectors[pod.key] = failed_shapes[shape]
            trace.tried(pod.key, False)
            continue
        result = cycle.schedule(pod)
        if result.node is None:
            message = result.message or "no node fits"
            if shape is not None:
                failed_shapes[shape] = (message, result.rejectors)
            outcome.failures[pod.key] = message
            outcome.rejectors[pod.key] = result.rejectors
            trace.tried(pod.key, False)
            continue
        cycle.reserve(pod, result.node)
        outcome.placed.append((pod, result.node))
        trace.tried(pod.key, True)
    have = running + len(outcome.placed)
    if not GANG_SCHEDULING.quorum(group, have) or (not outcome.placed and (not inner or have < group.min_count)):
        # Short of minCount, or nothing placed ("no pods were schedulable"): kube-scheduler's status.
        outcome.status = trace.final()
        outcome.message = outcome.status.message
        outcome.fitted, outcome.untried = list(trace.fitted or ()), list(trace.untried or ())
        outcome.placed = []
        return outcome
    outcome.success = True
    if outcome.failures:
        why = next(iter(outcome.failures.values()))
        outcome.message = f"pod group {group.key}: {len(outcome.failures)} more pod(s) could not be placed; {why}"
    return outcome


def _place_exact(cycle: PodCycle, group: PodGroup, pending: Sequence[Pod], running: int, settings: ExactPlacement,
                 greedy: GroupOutcome) -> GroupOutcome:
    """The gang the cycle left short of minCount, placed exactly (at least minCount − running members, as many
    more as fit); the greedy outcome, its message extended with exact placement's verdict, when that fails."""
    need = group.min_count - running
    with cycle.cluster.trial() as trial:
        found = exact.plan(cycle, pending, need, settings)
        verdict = found.verdict
        why = ""
        if verdict == exact.PLACED:
            refused = exact.seat(cycle, found.assignment, exact.held_room(cycle, pending[0]))
            if refused is None:
                trial.keep()
                outcome = GroupOutcome(placed=list(found.assignment), success=True, exact=verdict,
                                       exact_method=found.method)
                seated = {pod.key for pod, _ in found.assignment}
                left_out = (f"exact placement found no room for it next to the {len(seated)} placed pod(s) of "
                            f"pod group {group.key}")
                outcome.failures = {pod.key: left_out for pod in pending if pod.key not in seated}
                if outcome.failures:
                    outcome.message = (f"pod group {group.key}: {len(outcome.failures)} more pod(s) could not be "
                                       f"placed; {next(iter(outcome.failures.values()))}")
                return outcome
            verdict, why = exact.UNDECIDED, f"its placement failed the filters ({refused})"
    if verdict == exact.INFEASIBLE:
        why = f"no placement of {need} more pod(s) exists on the nodes their filters allow"
    elif not why:
        why = f"no placement found within its budget of {settings.budget:g}s"
    note = f"Exact placement: {why}."
    return GroupOutcome(failures=dict(greedy.failures), rejectors=dict(greedy.rejectors),
                        message=with_note(greedy.message or f"pod group {group.key} could not be placed", note),
                        exact=verdict, exact_method=found.method, status=greedy.status, fitted=greedy.fitted,
                        untried=greedy.untried, note=note)


def with_note(message: str, note: str | None) -> str:
    """A message with exact placement's verdict after it."""
    if not note:
        return message
    return f"{message}{' ' if message.endswith('.') else '. '}{note}"
