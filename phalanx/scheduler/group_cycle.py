"""The PodGroup side of the Scheduler (GenericWorkload on): PreEnqueue, which gates a group's members until its
PodGroup and minCount of them exist and then queues the group as one entry, and the PodGroup cycle
(schedule_one_podgroup.go): validation, the group algorithm (gang.py, through a placement plugin's search when
one applies to the group: group_framework.py), Bind for every placed member or the group's failure, and
workload-aware preemption. A PodGroup under a tree takes the tree plugin's PreEnqueue instead."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

from phalanx.api.objects import Pod, PodGroup
from phalanx.cluster.state import StateCorrupted
from phalanx.scheduler.consolidation import consolidate_group
from phalanx.scheduler.cycle_errors import error_message
from phalanx.scheduler.entries import GROUP, group_priority
from phalanx.scheduler.gang import GroupOutcome, schedule_group, with_note
from phalanx.scheduler.group_framework import PlacementPlugin
from phalanx.scheduler.group_status import (
    DRA_RELEASED,
    NO_VICTIMS,
    NOT_ELIGIBLE,
    ONGOING,
    UNSCHEDULABLE,
    GroupStatus,
    Refusal,
    member_messages,
    placements_failed,
    post_filter_reason,
    preempting,
)
from phalanx.scheduler.handle import Handle
from phalanx.scheduler.placement.exact import decisions as exact_decisions
from phalanx.scheduler.plugins.gang.gang_scheduling import GANG_SCHEDULING
from phalanx.scheduler.preemption import Outcome

PREEMPT_LOWER = "PreemptLowerPriority"


class GroupCycles:
    def __init__(self, scheduler: Handle) -> None:
        self.s = scheduler

    # --- PreEnqueue -----------------------------------------------------------------------------------

    def gate_message(self, group_key: str) -> str | None:
        gated = self.s.gated_member((group_key,))  # SchedulingGates runs before GangScheduling
        if gated is not None:
            return gated
        group = self.s.groups.get(group_key)
        if group is None:
            return f"waiting for PodGroup {group_key} to be created"
        return GANG_SCHEDULING.pre_enqueue(group, len(self.s.members[group_key]))

    def _validate(self, group: PodGroup, pending: Sequence[Pod]) -> str | None:
        """schedule_one_podgroup.go validatePodGroup: every member, pending or bound, has the group's priority
        (spec.priority, 0 when unset), one schedulerName, and one preemption policy (the PodGroup's with the
        PodGroupPreemptionPolicy gate on, else the first pending member's). Returns why not, in its words, or
        None."""
        priority = group_priority(group)
        gate = self.s.profile.feature_gates.get("PodGroupPreemptionPolicy", False)
        first = pending[0]
        policy = (group.preemption_policy or PREEMPT_LOWER) if gate else first.preemption_policy
        for pod in (*pending, *self.s.running_pods(group.key)):
            if pod.scheduler_name != first.scheduler_name:
                return ("all pods in a single pod group should have the same .spec.schedulerName set, got: "
                        f'"{pod.scheduler_name}" and "{first.scheduler_name}"')
            if pod.priority != priority:
                return ("all pods in a single pod group should have the same priority as the pod group's priority, "
                        f"got {pod.priority} and {priority}")
            if pod.preemption_policy != policy:
                whose = " as the pod group's preemption policy" if gate else ""
                return (f"all pods in a single pod group should have the same preemption policy{whose}, "
                        f"got {pod.preemption_policy} and {policy}")
        return None

    def pre_enqueue(self, group_key: str, now: float) -> None:
        """Gate the group (PodGroup missing, fewer than minCount members) or queue it as one entry.

        O(1) per arriving member while gated: members read the gate's message through `pod_message`. An error
        gates the members with it (a PreEnqueue plugin's Error status: the pods stay gated and it is logged)
        until the group's next event."""
        try:
            self._run_pre_enqueue(group_key, now)
        except StateCorrupted:
            raise
        except Exception as exc:  # the group's members wait; nothing else is held up
            message = error_message(exc)
            self.s.log_error(GROUP + group_key, message, exc)
            self.s.gated[group_key] = self.s.messages[GROUP + group_key] = message
            self.s.queue.done(GROUP + group_key)

    def _run_pre_enqueue(self, group_key: str, now: float) -> None:
        tree_group = self.s.in_tree(group_key)
        if tree_group is not None:
            self.s.trees.pre_enqueue_group(tree_group, now)
            return
        gate = self.gate_message(group_key)
        if gate is not None:
            self.s.gated[group_key] = gate
            self.s.messages[GROUP + group_key] = gate
            self.s.queue.done(GROUP + group_key)
            return
        if self.s.gated.pop(group_key, None) is not None:
            self.s.messages.pop(GROUP + group_key, None)
        if GROUP + group_key in self.s.queue:
            return
        pending = [self.s.pods[k] for k in self.s.members[group_key] if k not in self.s.cluster.bound]
        if pending:
            # The group queues by its first pending member's time (addPodGroupMember: the QueuedPodGroupInfo
            # takes the timestamp of the pod that made it), not by when the PodGroup object was created.
            self.s.queue.add(GROUP + group_key, self.s.group_priority(group_key), min(p.arrival for p in pending))

    # --- the PodGroup cycle -----------------------------------------------------------------------------

    def run(self, group_key: str, entry: str, now: float) -> None:
        group = self.s.groups.get(group_key)
        pending = self.s.pending_members(group_key)
        if group is None or not pending or self.gate_message(group_key) is not None:
            self.s.queue.done(entry)
            if group is not None:
                self.pre_enqueue(group_key, now)
            return
        invalid = self._validate(group, pending)
        if invalid is not None:  # handlePodGroupFailureBeforeScheduling: nothing binds, nothing preempts
            self._failed(group, pending, invalid, "SchedulerError", entry, now)
            return
        outcome, error = self._place(group, pending)
        if error is not None:  # the placement phase failed (bound members in no single domain): SchedulerError
            self._failed(group, pending, outcome.message or error, "SchedulerError", entry, now)
            self.s.clear_nominations(pending)
            return
        for pod, node in outcome.placed:
            self.s.bind_member(pod, node, group_key, now)
        if outcome.success:
            for pod_key, why in outcome.failures.items():
                self.s.unschedulable(self.s.pods[pod_key], why)
            self.s.messages.pop(GROUP + group_key, None)
            self.s.rejected(entry, outcome.rejectors)
            if outcome.failures:
                self.s.messages[GROUP + group_key] = outcome.message or ""
                self.s.queue.requeue(entry)
            else:
                self.s.queue.done(entry)
            self.s.condition(group, True, "Scheduled", f"{len(outcome.placed)} pod(s) bound")
            return
        # Unschedulable (RunRootSchedulingAlgorithm): a gang short of minCount, a basic group with nothing placed,
        # or a gang already at minCount none of whose other members fit. All go to workload-aware preemption
        # (the PodGroupPostFilter), whose verdict joins the group's status before any member hears of it.
        gate = self.s.profile.feature_gates.get("PodGroupPreemptionPolicy", False)
        eligible = self.s.preemptor.group_eligible(group, pending, gate)
        # PodGroupEvaluator.Preempt: an ongoing preemption succeeds with the nominations it made, which stay.
        ongoing = self.s.profile.preemption and eligible and self.s.preemptor.group_preempting(group)
        found: Outcome | Refusal | None = None
        moves = self._consolidate(group, pending) if not ongoing else None
        if moves is not None:
            found = moves
        elif self.s.profile.preemption and not ongoing:
            found = self._preempt(group, pending) if eligible else NOT_ELIGIBLE
        released = self.s.devices.post_filtered if self.s.devices is not None else None
        dra = DRA_RELEASED if released is not None and released[0] == group_key else None
        if ongoing or isinstance(found, Outcome):
            said = ONGOING if ongoing else preempting(len(found.victims) if isinstance(found, Outcome) else 0)
            tail = post_filter_reason(enabled=True, dra=dra, preemption=said, success=True)
        elif isinstance(found, Refusal):
            tail = post_filter_reason(enabled=True, dra=dra, preemption=found.message, resolvable=found.resolvable)
        else:
            tail = post_filter_reason(enabled=False, dra=dra, preemption=None)
        status = outcome.status or GroupStatus(unschedulable=True)
        message, messages = member_messages(status, tail, {k: v for k, v in outcome.failures.items()
                                                           if k not in outcome.untried},
                                            outcome.fitted, outcome.untried,
                                            waiting_on_preemption=ongoing or isinstance(found, Outcome))
        if outcome.note:  # Phalanx's exact placement adds its verdict where the group's words go
            message = with_note(message, outcome.note)
            for key in (*outcome.fitted, *outcome.untried):
                messages[key] = with_note(messages[key], outcome.note)
        self._failed(group, pending, message, "Unschedulable", entry, now, messages)
        self.s.rejected(entry, outcome.rejectors)
        if isinstance(found, Outcome):
            self.s.preempt(group_key, True, found, f"pod group {group_key}",
                           reason="Consolidated for" if found is moves else "Preempted by")
        elif not ongoing:  # submitPodGroupResult: a rejected group not waiting on preemption clears its nominations
            self.s.clear_nominations(pending)
        if dra is not None:
            # The PostFilter's claim update is a ResourceClaim event (isSchedulableAfterClaimChange: Queue for
            # every pod waiting on claims), so the group retries after its backoff rather than on the next event.
            self.s.queue.move_all(now)

    def _placement(self, group: PodGroup) -> PlacementPlugin | None:
        """The placement plugin that places the group (the first of the profile's that applies to it); None: the
        group has one placement, every node."""
        return next((plugin for plugin in self.s.placements if plugin.applies(group)), None)

    def _place(self, group: PodGroup, pending: Sequence[Pod]) -> tuple[GroupOutcome, str | None]:
        """The group algorithm, through a placement plugin's search when one applies to the group; the outcome,
        and a scheduler error (nothing binds, nothing is preempted) or None."""
        running = self.s.running_members(group.key)
        placement = self._placement(group)
        if placement is None:
            outcome = schedule_group(self.s.cycle, group, pending, running)
            if self.s.profile.topology_aware and outcome.status is not None:
                # With the gate on, every group goes through the placement algorithm: one placement, every node.
                outcome.status = placements_failed(1, outcome.status)
                outcome.message = outcome.status.message
            return outcome, None
        start = time.perf_counter()
        result = placement.schedule(self.s.cycle, group, pending, running, self.s.scheduled_members(group.key))
        # Each placement tried ran the group algorithm in a trial, where exact placement records nothing: the
        # verdict of the placement chosen (or of the first, when none was feasible) counts once per cycle.
        if result.outcome.exact is not None and not self.s.cluster.journaling:
            exact_decisions(self.s.cluster).add(group.key, result.outcome.exact, time.perf_counter() - start)
        return result.outcome, result.error

    def _consolidate(self, group: PodGroup, pending: Sequence[Pod]) -> Outcome | None:
        """KAI's consolidation (a profile's `consolidation`), before preemption, for a group no placement plugin
        places."""
        if not self.s.profile.consolidation or self._placement(group) is not None:
            return None
        return consolidate_group(self.s, group, self.s.group_priority(group.key), pending)

    def _preempt(self, group: PodGroup, pending: Sequence[Pod]) -> Outcome | Refusal:
        """Workload-aware preemption. For a group a placement plugin places, as the PodGroupSchedulingFunc that
        kube-scheduler's preemption calls runs the placement search with every possible victim removed, the
        search runs here on a trial without them, and victims are chosen and reprieved inside its best
        placement."""
        priority, running = self.s.group_priority(group.key), self.s.running_members(group.key)
        placement = self._placement(group)
        if placement is None:
            return self.s.preemptor.for_group(group, priority, pending, running)
        units = self.s.preemptor.units(list(self.s.running.node_of), priority)
        if not units:
            return NO_VICTIMS
        with self.s.cluster.trial():  # never kept: the victims stay where they are
            for unit in units:
                for key in unit.pods:
                    self.s.cycle.lift(key, self.s.pods[key])
            best = placement.schedule(self.s.cycle, group, pending, running,
                                          self.s.scheduled_members(group.key), commit=False)
        if best.placement is None:
            return Refusal(best.outcome.status.message if best.outcome.status is not None else UNSCHEDULABLE)
        with self.s.cycle.confined(best.placement.nodes):
            return self.s.preemptor.for_group(group, priority, pending, running)

    def _failed(self, group: PodGroup, pending: Sequence[Pod], message: str, reason: str, entry: str,
                now: float, own: Mapping[str, str] | None = None) -> None:
        """Nothing of the group binds this cycle: every pending member waits with the group's message (or its
        `own` fit error). With the profile's `group_retry` "backoff", as v1.37.2, the group is tried again when its
        backoff ends, whatever the events: v1.37.2 records no rejecting plugin for a failed group cycle (the
        DynamicResources PodGroupPostFilter rewrites its status), so requeuePodGroup sends it to the error
        backoffQ rather than to wait for an event. With "event" it waits for an event, as a pod does."""
        self.s.messages[GROUP + group.key] = message
        for pod in pending:
            self.s.unschedulable(pod, (own or {}).get(pod.key, message))
        self.s.queue.failed(entry, now, size=len(pending), timed=self.s.profile.group_retry == "backoff")
        self.s.condition(group, False, reason, message)
