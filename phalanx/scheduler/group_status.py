"""A failed PodGroup cycle in kube-scheduler v1.37.2's own words: the group's status and each member's message.

The group algorithm (podGroupSchedulingDefaultAlgorithm) tries members in order and, after each, asks
GangScheduling.PlacementFeasible whether minCount (1 for a basic group) can still be met: `minCount (N) cannot
be satisfied: S scheduled, R remaining` stops the cycle there; `is not yet satisfied` goes on. A cycle that
ends waiting, or succeeds without placing a pod, is `pod group is unschedulable` (errPodGroupUnschedulable,
which leads the message). The PodGroupPostFilter plugins' status (workload-aware preemption, `pod group
preemption: …`) is then appended to the group's status, which the PodGroup's `PodGroupInitiallyScheduled`
condition carries (applyPodGroupPostFilterResult).

Each pending member's FailedScheduling message (submitPodGroupAlgorithmResult):
- a member tried that fitted nowhere keeps its own fit error;
- a member tried that fitted, in a group that failed, gets `pod group is unschedulable, ` and the group's
  message (the group's message alone while it waits on its preemption);
- a member never tried (after the cycle stopped) gets the group's status as it was before the post filter
  (completePodGroupAlgorithmResult cloned it then).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

UNSCHEDULABLE = "pod group is unschedulable"  # errPodGroupUnschedulable


@dataclass(frozen=True, slots=True)
class GroupStatus:
    """A group cycle's status as fwk.Status holds it: its reasons, and whether it carries
    errPodGroupUnschedulable (Message() then starts with it; AsError() is it alone)."""

    reasons: tuple[str, ...] = ()
    unschedulable: bool = False

    @property
    def message(self) -> str:
        return ", ".join(((UNSCHEDULABLE,) if self.unschedulable else ()) + self.reasons)

    def as_error(self) -> str:
        return UNSCHEDULABLE if self.unschedulable else self.message

    def appended(self, reason: str) -> GroupStatus:
        return replace(self, reasons=(*self.reasons, reason))


def placement_feasible(min_count: int, scheduled: int, remaining: int) -> tuple[str, str] | None:
    """GangScheduling.PlacementFeasible: ("unschedulable" | "wait", its reason), or None once minCount is met."""
    counts = f"{scheduled} scheduled, {remaining} remaining"
    if remaining + scheduled < min_count:
        return "unschedulable", f"minCount ({min_count}) cannot be satisfied: {counts}"
    if scheduled < min_count:
        return "wait", f"minCount ({min_count}) is not yet satisfied: {counts}"
    return None


@dataclass(slots=True)
class Trace:
    """The group algorithm's walk over the members, in order: where PlacementFeasible stopped it, which members
    it tried and fitted, and its status when it ends without success."""

    min_count: int
    scheduled: int
    remaining: int
    status: GroupStatus | None = None  # None: minCount met so far
    stopped: bool = False
    fitted: list[str] | None = None
    untried: list[str] | None = None

    @classmethod
    def start(cls, min_count: int, running: int, pending: Sequence[str]) -> Trace:
        trace = cls(min_count, running, len(pending), fitted=[], untried=[])
        verdict = placement_feasible(min_count, running, len(pending))
        if verdict is not None and verdict[0] == "unschedulable":
            # Exit before any member is tried: the status carries errPodGroupUnschedulable.
            trace.status, trace.stopped = GroupStatus((verdict[1],), unschedulable=True), True
        elif verdict is not None:
            trace.status = GroupStatus((verdict[1],))
        return trace

    def tried(self, pod_key: str, fitted: bool) -> None:
        """One member tried (fitted, or failed with its own fit error); after a stop, the member is untried."""
        assert self.fitted is not None and self.untried is not None
        if self.stopped:
            self.untried.append(pod_key)
            return
        self.remaining -= 1
        if fitted:
            self.scheduled += 1
            self.fitted.append(pod_key)
        verdict = placement_feasible(self.min_count, self.scheduled, self.remaining)
        self.status = None if verdict is None else GroupStatus((verdict[1],))
        self.stopped = verdict is not None and verdict[0] == "unschedulable"

    def final(self) -> GroupStatus:
        """The failed cycle's status: waiting at the end, or minCount met without a pod placed, is
        `pod group is unschedulable`."""
        if self.status is None:
            return GroupStatus(unschedulable=True)
        if not self.stopped:  # Wait -> Unschedulable with errPodGroupUnschedulable
            return GroupStatus(self.status.reasons, unschedulable=True)
        return self.status


def placements_failed(count: int, first: GroupStatus) -> GroupStatus:
    """podGroupSchedulingPlacementAlgorithm with no feasible placement: the first placement's result, reported."""
    return GroupStatus((f"0/{count} placements are available, first placement status: {first.as_error()}",),
                       unschedulable=True)


def post_filter_reason(*, enabled: bool, dra: str | None, preemption: str | None, resolvable: bool = True,
                       success: bool = False) -> str:
    """RunPodGroupPostFilterPlugins' status as the message gets it (DynamicResources, then DefaultPreemption):
    `dra` the DynamicResources reason when it released a claim; `preemption` DefaultPreemption's message (None
    when the profile runs no preemption). A success or an unresolvable refusal ends the run with its own status;
    otherwise the reasons join."""
    said = f"pod group preemption: {preemption}" if enabled and preemption else None
    if said is not None and (success or not resolvable):
        return said
    return ", ".join(reason for reason in (dra, said) if reason)


def member_messages(status: GroupStatus, tail: str | None, own: Mapping[str, str], fitted: Sequence[str],
                    untried: Sequence[str], *, waiting_on_preemption: bool = False) -> tuple[str, dict[str, str]]:
    """The group's condition message and each member's FailedScheduling message after a failed cycle: `own` the
    fit errors of the members tried that fit nowhere, `tail` the PodGroupPostFilter's reason (None when it did
    not run: a leaf that failed in a tree whose root succeeded)."""
    final = status if tail is None else status.appended(tail)
    messages = dict(own)
    for key in fitted:
        messages[key] = final.message if waiting_on_preemption else f"{UNSCHEDULABLE}, {final.message}"
    for key in untried:
        messages[key] = status.message
    return final.message, messages


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why workload-aware preemption found nothing for a group, in PodGroupEvaluator.Preempt's words;
    `resolvable` False for UnschedulableAndUnresolvable, which ends the PodGroupPostFilter run."""

    message: str
    resolvable: bool = True


NO_VICTIMS = Refusal("No preemption victims found for incoming preemptor", resolvable=False)
NOT_ELIGIBLE = Refusal("not eligible due to preemptionPolicy=Never.")
ONGOING = "ongoing preemption on nominated nodes"


def preempting(victims: int) -> str:
    return f"found a placement for podgroup, preempting {victims} victims"


DRA_RELEASED = "deallocation and deletion of ResourceClaims completed"  # DynamicResources.PodGroupPostFilter
