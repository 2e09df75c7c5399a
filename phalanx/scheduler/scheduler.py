"""The Scheduler: informer-style inputs in, decisions out. It never knows which driver runs it.

A driver (the simulator's clock or a live API server) reports nodes, pods and PodGroups as they appear
and go, and calls `schedule(now)`; the Scheduler runs pod or PodGroup cycles for whatever the queue holds
and returns decisions (phalanx/scheduler/decisions.py) for the driver to carry out. Bound pods are
assumed in the Scheduler's ClusterState at once, as kube-scheduler's cache does.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import assert_never

from phalanx.api.dra import DeviceClass, DeviceTaintRule, ResourceClaim, ResourceClaimTemplate, ResourceSlice
from phalanx.api.objects import CompositePodGroup, Node, Pod, PodDisruptionBudget, PodGroup
from phalanx.cluster.devices import DeviceState, device_state
from phalanx.cluster.state import ClusterState, IntArray, StateCorrupted
from phalanx.scheduler.cycle import PodCycle, Result
from phalanx.scheduler.decisions import (
    Bind,
    Decision,
    DeviceTaintEviction,
    Evict,
    GroupCondition,
    Nominate,
    Preemption,
    PreemptorKind,
    Unschedulable,
)
from phalanx.scheduler.failures import FailedPods
from phalanx.scheduler.framework import AssignedPodHintPlugin, PluginError
from phalanx.scheduler.gang import GroupOutcome, schedule_group
from phalanx.scheduler.placement.composite import COMPOSITE, CompositeCycles
from phalanx.scheduler.placement.exact import decisions as exact_decisions
from phalanx.scheduler.placement.topology import TopologyPlacer
from phalanx.scheduler.plugins.device_allocation import device_allocator
from phalanx.scheduler.plugins.dynamic_resources import NAME as DYNAMIC_RESOURCES
from phalanx.scheduler.plugins.dynamic_resources import extended_resources
from phalanx.scheduler.preemption import Outcome, Preemptor
from phalanx.scheduler.profiles import Profile
from phalanx.scheduler.queue import SchedulingQueue
from phalanx.scheduler.running import RunningPods

LOG = logging.getLogger(__name__)
POD = "pod:"
GROUP = "group:"
FIT = "NodeResourcesFit"
INITIALLY_SCHEDULED = "PodGroupInitiallyScheduled"


class Scheduler:
    def __init__(self, profile: Profile, nodes: Sequence[Node] = (), seed: int = 0) -> None:
        self.profile = profile
        self.cluster = ClusterState(nodes)
        self.cycle = PodCycle(profile, self.cluster, seed)
        self.queue = SchedulingQueue()
        self.pods: dict[str, Pod] = {}
        self.groups: dict[str, PodGroup] = {}
        self.members: dict[str, set[str]] = defaultdict(set)
        self.messages: dict[str, str] = {}
        # Queue entries (a pod's, a PodGroup's) whose last cycle left pods rejected by a plugin with a hint for an
        # added assigned pod: per such pod, those plugins (of its UnschedulablePlugins). Entries whose pods were
        # rejected only by other plugins are not kept here.
        self.rejectors: dict[str, dict[str, list[AssignedPodHintPlugin]]] = {}
        self.gated: dict[str, str] = {}  # group key -> why PreEnqueue holds its members
        self.initially_scheduled: set[str] = set()
        self.running = RunningPods(self.cluster)
        self.pdbs: dict[str, PodDisruptionBudget] = {}
        self.nominated: dict[str, str] = {}
        self.preemptor = Preemptor(self.cycle, self.running, self.pods, self.groups, self.members, profile.gang,
                                   lambda: list(self.pdbs.values()), seed)
        self.cycle.nominated_room = self._nominated_room
        self.cycle.nominated_node = self._nominated_node
        # KEP-5732's placement phase for groups with schedulingConstraints.topology (gate on).
        self.placer = TopologyPlacer(profile.plugin_args, profile.placement_scores) \
            if profile.topology_aware else None
        # KEP-6012's trees of groups (gate CompositePodGroup on): PreEnqueue and one cycle per root.
        self.composite = CompositeCycles(self) if profile.composite else None
        self.composite_pod_groups: dict[str, CompositePodGroup] = {}  # every one seen, for reports
        self._out: list[Decision] = []
        # Pods bound by a decision the driver has not confirmed yet (assume, then bind): pod key -> its
        # PodGroup key ("" for none). The simulator confirms each Bind at once; a live driver after the API call.
        self.assumed: dict[str, str] = {}
        # DRA devices and claims, when the profile runs the DynamicResources plugin.
        self.devices: DeviceState | None = device_state(self.cluster) \
            if DYNAMIC_RESOURCES in profile.filters else None
        self._extended = extended_resources(profile.plugin_args.get(DYNAMIC_RESOURCES))
        self._errors: dict[str, str] = {}  # queue entry -> the error its last cycle failed with (logged once)
        self._failures = FailedPods(self)
        self._fit_checked = FIT in profile.filters

    # --- events from the driver ------------------------------------------------------------------------

    def add_nodes(self, nodes: Sequence[Node], now: float) -> None:
        self.cluster.add_nodes(nodes)
        self.queue.move_all(now)

    def add_pod(self, pod: Pod, now: float, node: str | None = None) -> None:
        """A new pod: pending (queued, or gated behind its PodGroup) or already bound to `node`."""
        if self.devices is not None:  # extended resources served by devices become a claim (KEP-5004)
            pod = self.devices.translate(pod, self._extended)
        self.pods[pod.key] = pod
        group_key = pod.group_key if self.profile.gang else None
        if group_key is not None:
            self.members[group_key].add(pod.key)
        if node is not None:
            self._bound(pod, self.cluster.index[node], pod.start_time if pod.start_time is not None else now,
                        reserve=True)
            return
        if group_key is None:
            self.queue.add(POD + pod.key, self.priority_of(pod), pod.arrival)
        else:
            # GangScheduling's EventsToRegister: an unscheduled member appearing requeues its group, also one
            # already waiting as unschedulable (the new member may be what it was missing).
            self._pre_enqueue(group_key, now)
            self.queue.move(self._entry(group_key), now)

    def delete_pod(self, key: str, now: float) -> None:
        """A pod finished or was deleted: free its node and let waiting entries retry."""
        pod = self.pods.pop(key, None)
        if pod is None:
            return
        self.messages.pop(key, None)
        group_key = pod.group_key if self.profile.gang else None
        if group_key is not None:
            self.members[group_key].discard(key)
        self.nominated.pop(key, None)
        self.rejectors.pop(POD + key, None)
        self._errors.pop(POD + key, None)
        self._failures.forget(key)
        self.running.clear_nomination(key)
        if key in self.cluster.bound:
            self.running.remove(key)
            self.cycle.unreserve(key, pod)
            self.queue.move_all(now)
        else:
            self.queue.done(POD + key)
        if self.devices is not None:
            self.devices.forget_pod(pod)

    def confirm_bind(self, key: str) -> None:
        """The driver bound the pod (the Binding call succeeded): it is no longer only assumed."""
        self.assumed.pop(key, None)

    def bind_failed(self, key: str, now: float) -> list[str]:
        """The driver could not bind an assumed pod (handleBindingCycleError): unreserve it, forget it and queue
        it again through backoff. When it leaves its gang below minCount, the gang's other members that are
        still only assumed are rolled back with it (the driver must not bind them). Returns every pod rolled
        back, `key` first; empty when `key` was not assumed."""
        if key not in self.assumed:
            return []
        group_key = self.assumed.pop(key) or None
        rolled = [key]
        self._unassume(key)
        if group_key is not None:
            group = self.groups.get(group_key)
            if group is not None and group.is_gang and self.running_members(group_key) < group.min_count:
                for other in [k for k, g in self.assumed.items() if g == group_key]:
                    del self.assumed[other]
                    self._unassume(other)
                    rolled.append(other)
            self.queue.backoff(self._entry(group_key), self._group_priority(group_key) if group is not None else 0,
                               group.arrival if group is not None else now, now)
        else:
            pod = self.pods.get(key)
            if pod is not None:
                self.queue.backoff(POD + key, self.priority_of(pod), pod.arrival, now)
        self.queue.move_all(now)  # room came back
        return rolled

    def _unassume(self, key: str) -> None:
        pod = self.pods.get(key)
        if pod is None or key not in self.cluster.bound:
            return
        self.running.remove(key)
        self.cycle.unreserve(key, pod)
        if self.devices is not None:
            self.devices.forget_pod(pod)

    def update_nodes(self, nodes: Sequence[Node], now: float) -> None:
        """Nodes appear or change: a new node is added; a known one takes its new labels, taints, cordon and
        allocatable."""
        known = [n for n in nodes if n.name in self.cluster.index]
        new = [n for n in nodes if n.name not in self.cluster.index]
        if new:
            self.cluster.add_nodes(new)
        relabelled = False
        for node in known:
            index = self.cluster.index[node.name]
            relabelled |= self.cluster.set_labels(index, node.labels)
            self.cluster.set_taints(index, node.taints)
            self.cluster.set_unschedulable(index, node.unschedulable)
            self.cluster.set_allocatable(index, node.allocatable)
        if relabelled and self.devices is not None:
            self.devices.nodes_changed()
        self.queue.move_all(now)

    def delete_node(self, name: str, now: float) -> None:
        """A node is gone: it keeps its row (indices stay) with no room and cordoned, so nothing lands there.
        Pods still bound to it leave through their own delete events."""
        index = self.cluster.index.get(name)
        if index is None:
            return
        self.cluster.set_unschedulable(index, True)
        self.cluster.set_allocatable(index, {})
        self.queue.move_all(now)

    def pod_terminating(self, key: str, now: float) -> None:
        """A bound pod got a deletionTimestamp (evicted or deleted by someone): it keeps its node until it is
        gone, and no longer counts toward its gang's minCount."""
        if key in self.cluster.bound and key not in self.running.terminating:
            self.running.mark_terminating(key, "")

    def delete_pod_group(self, key: str, now: float) -> None:
        """A PodGroup is deleted: its pending members wait behind PreEnqueue again."""
        group = self.groups.pop(key, None)
        if group is None:
            return
        if self.devices is not None:
            self.devices.delete_pod_group(key)
        if self.composite is not None:
            self.composite.forest.remove_group(group)
        if self.profile.gang:
            self._pre_enqueue(key, now)
            self.queue.done(GROUP + key)

    def add_pod_group(self, group: PodGroup, now: float) -> None:
        """A PodGroup appears or changes (e.g. its minCount): its members pass PreEnqueue again. One whose
        status already says PodGroupInitiallyScheduled=True (a snapshot's) keeps that condition for good."""
        self.groups[group.key] = group
        if self.devices is not None and self.profile.workload_claims:
            self.devices.add_pod_group(group)  # its claims from templates, one per PodGroup
        if group.initially_scheduled:
            self.initially_scheduled.add(group.key)
        if self.composite is not None:
            self.composite.forest.add_group(group)
        if self.profile.gang:
            self._pre_enqueue(group.key, now)
            self.queue.move(self._entry(group.key), now)

    def add_composite_pod_group(self, composite: CompositePodGroup, now: float) -> None:
        """A CompositePodGroup appears (ignored with the CompositePodGroup gate off, as the API server drops
        the PodGroups' parent link then): its tree's members pass PreEnqueue again."""
        self.composite_pod_groups[composite.key] = composite
        if self.composite is not None:
            try:
                self.composite.add(composite, now)
            except StateCorrupted:
                raise
            except Exception as exc:  # as in `_pre_enqueue`: the tree's members wait, nothing else is held up
                self._log_error(COMPOSITE + composite.key, _error_message(exc), exc)

    def delete_composite_pod_group(self, key: str, now: float) -> None:
        self.composite_pod_groups.pop(key, None)
        if self.composite is not None:
            self.composite.delete(key, now)

    def _in_tree(self, group_key: str) -> PodGroup | None:
        """The PodGroup when it hangs under a CompositePodGroup and the profile schedules trees."""
        group = self.groups.get(group_key)
        return group if self.composite is not None and group is not None and group.parent is not None else None

    def _entry(self, group_key: str) -> str:
        """The queue entry a PodGroup's members are scheduled in: its own, or its tree root's."""
        if self.composite is not None and self._in_tree(group_key) is not None:
            return self.composite.entry(group_key) or GROUP + group_key
        return GROUP + group_key

    def add_pdb(self, pdb: PodDisruptionBudget) -> None:
        """A PodDisruptionBudget appears or changes."""
        self.pdbs[pdb.key] = pdb

    def delete_pdb(self, key: str) -> None:
        self.pdbs.pop(key, None)

    def priority_of(self, pod: Pod) -> int:
        """With GenericWorkload on, a PodGroup's priority overrides its pods' (KEP-5710): its spec.priority,
        0 when unset (kube-scheduler's PodGroupPriority)."""
        if self.profile.gang and pod.group_key is not None:
            group = self.groups.get(pod.group_key)
            if group is not None:
                return group_priority(group)
        return pod.priority

    def _bound(self, pod: Pod, node: int, now: float, *, reserve: bool) -> None:
        if reserve:
            self.cycle.reserve(pod, node)
        self.nominated.pop(pod.key, None)
        self.running.clear_nomination(pod.key)
        self.running.add(pod.key, node, self.priority_of(pod), now,
                         member=self.profile.gang and pod.pod_group is not None)
        self.rejectors.pop(POD + pod.key, None)
        self._assigned_pod_added(pod, now)

    def _assigned_pod_added(self, added: Pod, now: float) -> None:
        """The AssignedPod/Add event: an unschedulable pod goes to backoffQ or activeQ when a plugin that
        rejected it gives the Queue hint for `added` (isSchedulableAfterAssignedPodChange of InterPodAffinity
        and PodTopologySpread); NodeResourcesFit and the others skip an added pod, which frees nothing."""
        for entry, rejected in self.rejectors.items():
            if any((pending := self.pods.get(key)) is not None and key not in self.cluster.bound
                   and any(h.requeue_after_assigned_pod_add(pending, added) for h in hints)
                   for key, hints in rejected.items()):
                self.queue.move(entry, now)

    def _rejected(self, entry: str, rejectors: dict[str, frozenset[str]]) -> None:
        """Remember the pods of `entry` that its last cycle left rejected by plugins with queueing hints."""
        by_pod = {key: hinted for key, names in rejectors.items()
                  if (hinted := [h for h in self.cycle.assigned_pod_hints if h.name in names])}
        if by_pod:
            self.rejectors[entry] = by_pod
        else:
            self.rejectors.pop(entry, None)

    # --- PreEnqueue -----------------------------------------------------------------------------------

    def pending_members(self, group_key: str) -> list[Pod]:
        pods = [self.pods[k] for k in self.members[group_key] if k not in self.cluster.bound]
        pods.sort(key=lambda p: (-p.priority, p.arrival, p.source.index if p.source else 0, p.key))
        return pods

    def running_members(self, group_key: str) -> int:
        """Bound members that count toward minCount: a terminating one (evicted, in its grace period) does not,
        so a later member never binds alone while the members it would join are going away."""
        terminating = self.running.terminating
        return sum(1 for k in self.members[group_key] if k in self.cluster.bound and k not in terminating)

    def _gate_message(self, group_key: str) -> str | None:
        group = self.groups.get(group_key)
        if group is None:
            return f"waiting for PodGroup {group_key} to be created"
        have = len(self.members[group_key])
        if group.is_gang and have < group.min_count:
            return (f"waiting for pod group {group_key}: {have} of the {group.min_count} pods (minCount) "
                    "exist")
        return None

    def _group_priority(self, group_key: str) -> int:
        return group_priority(self.groups[group_key])

    def running_pods(self, group_key: str) -> list[Pod]:
        return [self.pods[k] for k in sorted(self.members[group_key]) if k in self.cluster.bound]

    def _validate(self, group: PodGroup, pending: Sequence[Pod]) -> str | None:
        """schedule_one_podgroup.go validatePodGroup: every member, pending or bound, has the group's priority
        (spec.priority, 0 when unset), one schedulerName, and one preemption policy (the PodGroup's with the
        PodGroupPreemptionPolicy gate on, else the first pending member's). Returns why not, or None."""
        priority = group_priority(group)
        gate = self.profile.feature_gates.get("PodGroupPreemptionPolicy", False)
        first = pending[0]
        policy = (group.preemption_policy or PREEMPT_LOWER) if gate else first.preemption_policy
        for pod in (*pending, *self.running_pods(group.key)):
            if pod.scheduler_name != first.scheduler_name:
                return (f"pods of pod group {group.key} name different schedulers: {pod.scheduler_name!r} "
                        f"({pod.name}) and {first.scheduler_name!r} ({first.name})")
            if pod.priority != priority:
                return (f"pod {pod.name} has priority {pod.priority}, its pod group {group.key} has {priority}: "
                        "every pod of a pod group must have the group's priority")
            if pod.preemption_policy != policy:
                whose = f"pod group {group.key}" if gate else f"pod {first.name}"
                return (f"pod {pod.name} has preemptionPolicy {pod.preemption_policy}, {whose} has {policy}: "
                        "every pod of a pod group must have the same preemption policy")
        return None

    def _pre_enqueue(self, group_key: str, now: float) -> None:
        """Gate the group (PodGroup missing, fewer than minCount members) or queue it as one entry.

        O(1) per arriving member while gated: members read the gate's message through `pod_message`. An error
        gates the members with it (a PreEnqueue plugin's Error status: the pods stay gated and it is logged)
        until the group's next event."""
        try:
            self._run_pre_enqueue(group_key, now)
        except StateCorrupted:
            raise
        except Exception as exc:  # the group's members wait; nothing else is held up
            message = _error_message(exc)
            self._log_error(GROUP + group_key, message, exc)
            self.gated[group_key] = self.messages[GROUP + group_key] = message
            self.queue.done(GROUP + group_key)

    def _run_pre_enqueue(self, group_key: str, now: float) -> None:
        tree_group = self._in_tree(group_key)
        if tree_group is not None and self.composite is not None:
            self.composite.pre_enqueue_group(tree_group, now)
            return
        gate = self._gate_message(group_key)
        if gate is not None:
            self.gated[group_key] = gate
            self.messages[GROUP + group_key] = gate
            self.queue.done(GROUP + group_key)
            return
        if self.gated.pop(group_key, None) is not None:
            self.messages.pop(GROUP + group_key, None)
        if GROUP + group_key in self.queue:
            return
        pending = [self.pods[k] for k in self.members[group_key] if k not in self.cluster.bound]
        if pending:
            group = self.groups[group_key]
            self.queue.add(GROUP + group_key, self._group_priority(group_key),
                           min(group.arrival, *(p.arrival for p in pending)))

    def pod_message(self, key: str) -> str | None:
        """Why a pending pod is not running yet, in kube-scheduler's words (None once bound or unknown)."""
        pod = self.pods.get(key)
        if pod is None or key in self.cluster.bound:
            return self.messages.get(key)
        group_key = pod.group_key if self.profile.gang else None
        if group_key is not None and group_key in self.gated:
            return self.gated[group_key]
        return self.messages.get(key)

    # --- cycles ---------------------------------------------------------------------------------------

    def schedule(self, now: float) -> list[Decision]:
        """Run cycles for every active entry at time `now`; return what the driver must carry out.

        A cycle that raises fails alone (`_cycle_failed`), whatever it was doing; only a broken invariant of
        the books (StateCorrupted) goes on up."""
        self._out = list(self._device_evictions(now))
        self._failures.clear()  # events came in since the last round
        while (key := self.queue.pop(now)) is not None:
            mark = len(self._out)
            try:
                self._cycle(key, now)
            except StateCorrupted:
                raise
            except Exception as exc:  # one entry's failure, whatever it is, fails that entry alone
                self._cycle_failed(key, exc, mark, now)
            else:
                self._errors.pop(key, None)
        return self._out

    def _cycle(self, key: str, now: float) -> None:
        if key.startswith(GROUP):
            self._group_cycle(key[len(GROUP):], key, now)
        elif key.startswith(COMPOSITE) and self.composite is not None:
            self.composite.cycle(key[len(COMPOSITE):], key, now)
        else:
            self._pod_cycle(key[len(POD):], key, now)

    # --- a cycle that failed ----------------------------------------------------------------------------

    def _cycle_failed(self, entry: str, exc: Exception, mark: int, now: float) -> None:
        """kube-scheduler's handling of a cycle that ends in an error (a plugin's Error status, or here any
        exception): what the cycle changed is undone (its trials already were, as they ended; the bindings it
        decided are taken back here), its pods get PodScheduled=False with reason SchedulerError and its
        PodGroups PodGroupInitiallyScheduled=False/SchedulerError, and the entry retries after the error
        backoff, which no event cuts short (`SchedulingQueue.errored`: asleep while nothing changes, as the same
        books fail the same way). The error is logged once per entry and message."""
        message = _error_message(exc)
        self._log_error(entry, message, exc)
        pods, groups = self._entry_objects(entry)
        undone = self._undo_bindings(pods, mark)
        own = {pod.key for pod in pods} | {GROUP + group.key for group in groups}
        self._out[mark:] = [d for d in self._out[mark:] if not self._superseded(d, undone, own)]
        pending = [pod for pod in pods if pod.key not in self.cluster.bound]
        for pod in pending:
            self.messages[pod.key] = message
            self._out.append(Unschedulable(pod, message, "SchedulerError"))
        for group in groups:
            self.messages[GROUP + group.key] = message
            self.condition(group, False, "SchedulerError", message)
        if pending:
            self.queue.errored(entry, self.priority_of(pending[0]), min(p.arrival for p in pending), now,
                               size=len(pending))
        else:
            self.queue.done(entry)

    def _log_error(self, entry: str, message: str, exc: Exception) -> None:
        """Log an entry's error once (again only when it changes)."""
        if self._errors.get(entry) == message:
            return
        self._errors[entry] = message
        if isinstance(exc, PluginError):  # what the input asks for cannot be done: its message says why
            LOG.warning("scheduling %s failed: %s", entry, message)
        else:  # a fault of the engine's own: the traceback is what fixing it needs
            LOG.error("scheduling %s failed: %s", entry, message, exc_info=exc)

    def _entry_objects(self, entry: str) -> tuple[list[Pod], list[PodGroup]]:
        """The pods a queue entry schedules (pending or bound), and its PodGroups (a tree's leaves)."""
        if entry.startswith(GROUP):
            group = self.groups.get(entry[len(GROUP):])
            keys = sorted(self.members.get(entry[len(GROUP):], ()))
            return [self.pods[k] for k in keys if k in self.pods], [group] if group is not None else []
        if entry.startswith(COMPOSITE):
            root = entry[len(COMPOSITE):]
            composite = self.composite
            if composite is None or root not in composite.forest.composites:
                return [], []
            leaves = list(composite.forest.tree(root).leaves())
            keys = sorted(k for leaf in leaves for k in self.members.get(leaf.key, ()))
            return [self.pods[k] for k in keys if k in self.pods], leaves
        pod = self.pods.get(entry[len(POD):])
        return [pod] if pod is not None else [], []

    def _undo_bindings(self, pods: Sequence[Pod], mark: int) -> set[str]:
        """Take back the bindings of the entry's pods that its failed cycle decided (a Bind since `mark`) or
        had only half made (on a node in the books, not yet running): they wait for the retry."""
        decided = {d.pod.key for d in self._out[mark:] if isinstance(d, Bind)}
        undone: set[str] = set()
        for pod in pods:
            key = pod.key
            if key in decided or (key in self.cluster.bound and key not in self.running.node_of):
                self.assumed.pop(key, None)
                if key in self.running.node_of:
                    self.running.remove(key)
                if key in self.cluster.bound:
                    self.cycle.unreserve(key, pod)
                undone.add(key)
        return undone

    def _superseded(self, decision: Decision, undone: set[str], own: set[str]) -> bool:
        """A decision of the failed cycle that its error replaces: the bindings taken back, the outcomes of the
        entry's own pods and PodGroups (`own`: pod keys, GROUP + PodGroup keys; a condition True is forgotten
        with them). Evictions and nominations stay: they were carried out in the books already, and the
        victims go either way."""
        match decision:
            case Bind():
                return decision.pod.key in undone
            case Unschedulable():
                return decision.pod.key in own
            case GroupCondition():
                if GROUP + decision.group.key not in own:
                    return False
                if decision.status:
                    self.initially_scheduled.discard(decision.group.key)
                return True
            case Evict() | Nominate() | Preemption() | DeviceTaintEviction():
                return False
            case _:
                assert_never(decision)

    def next_retry(self) -> float | None:
        """When the scheduler next has work without a new event: a backoff ending, a device toleration running
        out (tolerationSeconds of a NoExecute device taint)."""
        due = [t for t in (self.queue.next_backoff(),
                           self.devices.next_eviction(float("-inf")) if self.devices is not None else None)
               if t is not None]
        return min(due, default=None)

    # --- devices (DRA) --------------------------------------------------------------------------------

    def add_device_objects(self, now: float, *, slices: Sequence[ResourceSlice] = (),
                           classes: Sequence[DeviceClass] = (), claims: Sequence[ResourceClaim] = (),
                           templates: Sequence[ResourceClaimTemplate] = ()) -> None:
        """ResourceSlices, DeviceClasses, ResourceClaims and templates appear or change: an object whose name
        is known replaces the earlier one (ignored without DynamicResources)."""
        if self.devices is None:
            return
        self.devices.add_classes(classes)
        self.devices.add_templates(templates)
        self.devices.add_claims(claims)
        self.devices.add_slices(slices)
        if slices or claims:
            self._pin_allocated()
        if slices or classes or claims or templates:
            self.queue.move_all(now)

    def _pin_allocated(self) -> None:
        """A claim the API shows allocated and reserved for pods (bound by any scheduler, or mid-binding)
        holds its devices here too, before its pods are known: they are never handed to another claim."""
        assert self.devices is not None
        allocator = device_allocator(self.cluster)
        for state in self.devices.claims.values():
            if state.allocation is None and state.claim.allocated and state.claim.reserved:
                choices = allocator.pinned(state)
                if choices is not None:
                    self.devices.pin(state, choices)

    def delete_device_objects(self, now: float, *, slices: Sequence[str] = (), classes: Sequence[str] = (),
                              claims: Sequence[str] = (), templates: Sequence[str] = ()) -> None:
        """ResourceSlices and DeviceClasses (by name), ResourceClaims and templates (`namespace/name`) deleted.
        A retired device stays with the claim that holds it until that claim's pods are gone."""
        if self.devices is None:
            return
        for name in slices:
            self.devices.delete_slice(name)
        for name in classes:
            self.devices.delete_class(name)
        for key in claims:
            self.devices.delete_claim(key)
        for key in templates:
            self.devices.delete_template(key)

    def add_device_taint_rule(self, rule: DeviceTaintRule, now: float) -> list[DeviceTaintEviction]:
        """A DeviceTaintRule appears: its taint joins the selected devices' taints. Returns the evictions it
        causes now (pods whose claims do not tolerate a NoExecute taint); later ones, after tolerationSeconds,
        come out of `schedule`."""
        if self.devices is None:
            return []
        self.devices.add_taint_rule(rule)
        return self._device_evictions(now)

    def pod_devices(self, key: str) -> list[str]:
        """The devices (`driver/pool/device`) a pod's claims hold, for reports."""
        pod = self.pods.get(key)
        if self.devices is None or pod is None or not pod.resource_claims:
            return []
        return self.devices.pod_devices(pod)

    def _bind_decision(self, pod: Pod, node: int) -> Bind:
        if self._fit_checked:
            self.cluster.check_fits(pod.key)  # the engine never binds past allocatable: if it did, its books are wrong
        claims: list[tuple[str, dict[str, object]]] = []
        if self.devices is not None and pod.resource_claims:
            for state in self.devices.pod_claims(pod):
                allocation = self.devices.allocation(state.key)
                if allocation is not None:
                    claims.append((state.key, allocation))
        return Bind(pod, self.cluster.names[node], tuple(claims))

    def _device_evictions(self, now: float) -> list[DeviceTaintEviction]:
        if self.devices is None:
            return []
        out: list[DeviceTaintEviction] = []
        for eviction in self.devices.evictions(now):
            who = f"DeviceTaintRule {eviction.rule}" if eviction.rule else "a ResourceSlice device taint"
            for key in eviction.pods:
                pod = self.pods.get(key)
                node = self.running.node_of.get(key)
                if pod is None or node is None or key in self.running.terminating:
                    continue
                self.running.mark_terminating(key, who)
                tolerated = "not tolerated" if eviction.tolerated_for is None else \
                    f"tolerated for {eviction.tolerated_for:g}s only"
                message = (f"Evicted by {who}: device {eviction.device} has taint {eviction.taint.describe()}, "
                           f"{tolerated} by claim {eviction.claim}")
                out.append(DeviceTaintEviction(pod, self.cluster.names[node], eviction.claim, eviction.rule,
                                               message))
        return out

    def _pod_cycle(self, pod_key: str, entry: str, now: float) -> None:
        pod = self.pods.get(pod_key)
        if pod is None or pod_key in self.cluster.bound:
            self.queue.done(entry)
            return
        like = self._failures.like(pod, self._books())
        result = like or self.cycle.schedule(pod)
        if result.node is None:
            self._pod_failed(pod, entry, result, now, known=like is not None)
            return
        self._bound(pod, result.node, now, reserve=True)
        self.messages.pop(pod_key, None)
        self.queue.done(entry)
        self.assumed[pod_key] = ""
        self._out.append(self._bind_decision(pod, result.node))

    def _pod_failed(self, pod: Pod, entry: str, result: Result, now: float, *, known: bool) -> None:
        """A pod fits nowhere: it waits with the Filter's reasons, and preempts if it may. `known`: the result is
        an equivalent pod's at these very books (`FailedPods`), so preemption would find no candidate either
        (only its random start is drawn, as the run would)."""
        pod_key = pod.key
        message = result.message or "no node fits"
        self.messages[pod_key] = message
        self._rejected(entry, {pod_key: result.rejectors})
        self.queue.failed(entry, now)
        self._out.append(Unschedulable(pod, message))
        priority = self.priority_of(pod)
        if self.preemptor.eligible(pod, priority, self.nominated.get(pod_key), result.unresolvable):
            if known:
                self.preemptor.offset(result.unresolvable)
                outcome = None
            else:
                outcome = self.preemptor.for_pod(pod, priority, result.unresolvable)
            if outcome is not None:
                self.preempt(pod_key, False, outcome, f"pod {pod_key}")
                return
            self.clear_nominations([pod])  # preemption.go Preempt: no candidate clears its nominatedNodeName
        if not known:
            self._failures.remember(pod, self._books(), result)

    def _books(self) -> tuple[int, ...]:
        """Changes every time something a pod's Filter or preemption reads changes: resources, labels and
        taints, running, terminating and nominated pods, devices."""
        devices = self.devices.version if self.devices is not None else 0
        return self.cluster.generation, self.cluster.version, self.running.version, devices

    def _group_cycle(self, group_key: str, entry: str, now: float) -> None:
        group = self.groups.get(group_key)
        pending = self.pending_members(group_key)
        if group is None or not pending or self._gate_message(group_key) is not None:
            self.queue.done(entry)
            if group is not None:
                self._pre_enqueue(group_key, now)
            return
        invalid = self._validate(group, pending)
        if invalid is not None:  # handlePodGroupFailureBeforeScheduling: nothing binds, nothing preempts
            self._group_failed(group, pending, invalid, "SchedulerError", entry, now)
            return
        outcome, error = self._place_group(group, pending)
        if error is not None:  # the placement phase failed (bound members in no single domain): SchedulerError
            self._group_failed(group, pending, outcome.message or error, "SchedulerError", entry, now)
            self.clear_nominations(pending)
            return
        for pod, node in outcome.placed:
            self.bind_member(pod, node, group_key, now)
        if outcome.success:
            for pod_key, why in outcome.failures.items():
                self.unschedulable(self.pods[pod_key], why)
            self.messages.pop(GROUP + group_key, None)
            self._rejected(entry, outcome.rejectors)
            if outcome.failures:
                self.messages[GROUP + group_key] = outcome.message or ""
                self.queue.requeue(entry)
            else:
                self.queue.done(entry)
            self.condition(group, True, "Scheduled", f"{len(outcome.placed)} pod(s) bound")
            return
        # Unschedulable (RunRootSchedulingAlgorithm): a gang short of minCount, a basic group with nothing placed,
        # or a gang already at minCount none of whose other members fit. All go to workload-aware preemption.
        message = outcome.message or "pod group could not be placed"
        # submitPodGroupAlgorithmResult: a member that failed on its own keeps its own fit error; the group's
        # message goes to the members that fitted in a group that was not placed (a gang short of minCount).
        own = outcome.failures if not outcome.placed and (not group.is_gang or
                                                          self.running_members(group_key) >= group.min_count) \
            else {}
        self._group_failed(group, pending, message, "Unschedulable", entry, now, own)
        self._rejected(entry, outcome.rejectors)
        gate = self.profile.feature_gates.get("PodGroupPreemptionPolicy", False)
        preempted = None
        if self.preemptor.group_eligible(group, pending, gate):
            preempted = self._preempt_group(group, pending)
        if preempted is not None:
            self.preempt(group_key, True, preempted, f"pod group {group_key}")
        else:  # submitPodGroupResult: a rejected group not waiting on preemption clears its pods' nominations
            self.clear_nominations(pending)
        released = self.devices.post_filtered if self.devices is not None else None
        if released is not None and released[0] == group_key:
            # The PostFilter's claim update is a ResourceClaim event (isSchedulableAfterClaimChange: Queue for
            # every pod waiting on claims), so the group retries after its backoff rather than on the next event.
            self.queue.move_all(now)

    def scheduled_members(self, group_key: str) -> list[tuple[str, int]]:
        """Bound members (terminating ones too) and their nodes: where a topology-constrained group already is."""
        bound = self.cluster.bound
        return [(k, bound[k][0]) for k in sorted(self.members[group_key]) if k in bound]

    def _place_group(self, group: PodGroup, pending: Sequence[Pod]) -> tuple[GroupOutcome, str | None]:
        """The group algorithm, through the topology placement search when the group asks for one and the
        profile runs it; the outcome, and a scheduler error (nothing binds, nothing is preempted) or None."""
        running = self.running_members(group.key)
        if self.placer is None or group.topology_key is None:
            return schedule_group(self.cycle, group, pending, running), None
        start = time.perf_counter()
        result = self.placer.schedule(self.cycle, group, pending, running, self.scheduled_members(group.key))
        # Each placement tried ran the group algorithm in a trial, where exact placement records nothing: the
        # verdict of the placement chosen (or of the first, when none was feasible) counts once per cycle.
        if result.outcome.exact is not None and not self.cluster.journaling:
            exact_decisions(self.cluster).add(group.key, result.outcome.exact, time.perf_counter() - start)
        return result.outcome, result.error

    def _preempt_group(self, group: PodGroup, pending: Sequence[Pod]) -> Outcome | None:
        """Workload-aware preemption. For a topology-constrained group, as the PodGroupSchedulingFunc that
        kube-scheduler's preemption calls runs the placement search with every possible victim removed, the
        search runs here on a trial without them, and victims are chosen and reprieved inside its best
        placement."""
        priority, running = self._group_priority(group.key), self.running_members(group.key)
        if self.placer is None or group.topology_key is None:
            return self.preemptor.for_group(group, priority, pending, running)
        units = self.preemptor.units(list(self.running.node_of), priority)
        if not units:
            return None
        with self.cluster.trial():  # never kept: the victims stay where they are
            for unit in units:
                for key in unit.pods:
                    self.cycle.lift(key, self.pods[key])
            best = self.placer.schedule(self.cycle, group, pending, running, self.scheduled_members(group.key),
                                        commit=False)
        if best.placement is None:
            return None
        with self.cycle.confined(best.placement.nodes):
            return self.preemptor.for_group(group, priority, pending, running)

    def _group_failed(self, group: PodGroup, pending: Sequence[Pod], message: str, reason: str, entry: str,
                      now: float, own: Mapping[str, str] | None = None) -> None:
        """Nothing of the group binds this cycle: every pending member waits with the group's message (or its
        `own` fit error). With the profile's `group_retry` "backoff", as v1.37.2, the group is tried again when its
        backoff ends, whatever the events: v1.37.2 records no rejecting plugin for a failed group cycle (the
        DynamicResources PodGroupPostFilter rewrites its status), so requeuePodGroup sends it to the error
        backoffQ rather than to wait for an event. With "event" it waits for an event, as a pod does."""
        self.messages[GROUP + group.key] = message
        for pod in pending:
            self.unschedulable(pod, (own or {}).get(pod.key, message))
        self.queue.failed(entry, now, size=len(pending), timed=self.profile.group_retry == "backoff")
        self.condition(group, False, reason, message)

    def bind_member(self, pod: Pod, node: int, group_key: str, now: float) -> None:
        """A member of PodGroup `group_key` placed by its group's cycle (its node reserved there): assume it and
        emit its Bind."""
        self._bound(pod, node, now, reserve=False)
        self.messages.pop(pod.key, None)
        self.assumed[pod.key] = group_key
        self._out.append(self._bind_decision(pod, node))

    def unschedulable(self, pod: Pod, message: str) -> None:
        """The pod waits with `message` (PodScheduled=False, Unschedulable)."""
        self.messages[pod.key] = message
        self._out.append(Unschedulable(pod, message))

    def condition(self, group: PodGroup, status: bool, reason: str, message: str) -> None:
        """Write PodGroupInitiallyScheduled: True once, then final (updatePodGroupCondition never regresses
        it to False); False (Unschedulable, SchedulerError) while it was never True."""
        if group.key in self.initially_scheduled:
            return
        if status:
            self.initially_scheduled.add(group.key)
        self._out.append(GroupCondition(group, INITIALLY_SCHEDULED, status, reason, message))

    def clear_nominations(self, pods: Sequence[Pod]) -> None:
        for pod in pods:
            if self.nominated.pop(pod.key, None) is not None:
                self.running.clear_nomination(pod.key)
                self._out.append(Nominate(pod, ""))

    # --- nominated pods in the Filter (schedule_one.go) ------------------------------------------------

    def _nominated_room(self, pod: Pod) -> IntArray | None:
        """The room of pods nominated at the pod's priority or higher, which the Filter counts as taken on
        their nodes (addGENominatedPods); the pod itself and, in a PodGroup cycle, its fellow members (of the
        whole tree under a CompositePodGroup) are left out. None when nothing is nominated."""
        if not self.nominated:
            return None
        exclude: Iterable[str] = (pod.key,)
        if self.profile.gang and pod.group_key is not None:
            tree = self.composite.tree_members(pod.group_key) if self.composite is not None else None
            exclude = {pod.key, *(tree if tree is not None else self.members.get(pod.group_key, ()))}  # once each
        return self.running.held_for(self.priority_of(pod), exclude)

    def _nominated_node(self, pod: Pod) -> int | None:
        """The pod's own status.nominatedNodeName, tried before every other node (evaluateNominatedNode)."""
        name = self.nominated.get(pod.key)
        return self.cluster.index.get(name) if name else None

    def preempt(self, preemptor: str, group: bool, outcome: Outcome, who: str,
                kind: PreemptorKind | None = None) -> None:
        """Carry out a preemption decision: evict the victims, nominate the preemptor's nodes. `kind` defaults to
        a PodGroup's when `group`, else a pod's."""
        kind = kind or ("podgroup" if group else "pod")
        if outcome.victims:
            self._out.append(Preemption(preemptor, group, tuple(outcome.victims)))
        for key in outcome.victims:
            node = self.cluster.names[self.running.node_of[key]]
            self.running.mark_terminating(key, preemptor)
            self._out.append(Evict(self.pods[key], preemptor, node, f"Preempted by {who} on node {node}", kind))
        for key, node in outcome.nominations.items():
            self.nominated[key] = node
            self.running.nominate(key, self.cluster.index[node], self.cluster.demand(self.pods[key]).requests,
                                  outcome.priority)
            self._out.append(Nominate(self.pods[key], node))


PREEMPT_LOWER = "PreemptLowerPriority"
MAX_ERROR_MESSAGE = 1024


def _error_message(exc: Exception) -> str:
    """What a failed cycle's pods are told: a plugin's error as it words it, anything else by its type."""
    text = str(exc) if isinstance(exc, PluginError) else f"{type(exc).__name__}: {exc}"
    return text if len(text) <= MAX_ERROR_MESSAGE else text[:MAX_ERROR_MESSAGE - 1] + "…"


def group_priority(group: PodGroup) -> int:
    """A PodGroup's priority as kube-scheduler reads it: spec.priority, 0 when unset."""
    return group.priority if group.priority is not None else 0
