"""The Scheduler: informer-style inputs in, decisions out. It never knows which driver runs it.

A driver (the simulator's clock or a live API server) reports nodes, pods and PodGroups as they appear
and go, and calls `schedule(now)`; the Scheduler runs pod or PodGroup cycles for whatever the queue holds
and returns decisions (phalanx/scheduler/decisions.py) for the driver to carry out. Bound pods are
assumed in the Scheduler's ClusterState at once, as kube-scheduler's cache does.

The Scheduler owns the state and is the Handle (handle.py) its parts work through: events.py takes the
driver's events in, pod_cycle.py and group_cycle.py run a pod's and a PodGroup's cycle (plugins/composite/
a CompositePodGroup tree's), cycle_errors.py fails a cycle that raised. What is left here answers the parts'
questions and records the decisions they make.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

from phalanx.api.dra import DeviceClass, DeviceTaintRule, ResourceClaim, ResourceClaimTemplate, ResourceSlice
from phalanx.api.objects import CompositePodGroup, Node, Pod, PodDisruptionBudget, PodGroup
from phalanx.cluster.devices import DeviceState, device_state
from phalanx.cluster.state import ClusterState, IntArray, StateCorrupted
from phalanx.scheduler.cycle import PodCycle, reads_other_pods, required_anti
from phalanx.scheduler.cycle_errors import CycleErrors
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
from phalanx.scheduler.entries import COMPOSITE, GROUP, POD, group_priority
from phalanx.scheduler.events import Events
from phalanx.scheduler.failures import FailedPods
from phalanx.scheduler.framework import AssignedPodHintPlugin
from phalanx.scheduler.group_cycle import GroupCycles
from phalanx.scheduler.hints import Hints
from phalanx.scheduler.placement.exact import ExactPlacementReport, ExactPlacementSeconds, decisions
from phalanx.scheduler.plugins.dra.dynamic_resources import NAME as DYNAMIC_RESOURCES
from phalanx.scheduler.plugins.dra.dynamic_resources import extended_resources
from phalanx.scheduler.plugins.dra.taint_eviction import evict, next_eviction
from phalanx.scheduler.plugins.group_registry import group_plugins
from phalanx.scheduler.pod_cycle import PodCycles
from phalanx.scheduler.preemption import Outcome, Preemptor
from phalanx.scheduler.profiles import Profile
from phalanx.scheduler.queue import SchedulingQueue, Where
from phalanx.scheduler.running import RunningPods

FIT = "NodeResourcesFit"
INITIALLY_SCHEDULED = "PodGroupInitiallyScheduled"


class Scheduler:
    def __init__(self, profile: Profile, nodes: Sequence[Node] = (), seed: int = 0, *, hints: Hints | None = None,
                 queue: SchedulingQueue | None = None) -> None:
        """`hints` and `queue` are verification's (`phalanx verify`): the real scheduler's choices, and a queue
        that records what it hands out."""
        self.profile = profile
        self.cluster = ClusterState(nodes)
        self.cycle = PodCycle(profile, self.cluster, seed)
        self.queue = queue if queue is not None else SchedulingQueue()
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
        if hints is not None:
            self.cycle.hints = hints.nodes
            self.preemptor.hints = hints.preemption_nodes
            self.preemptor.victim_hints = hints.victims
        self.cycle.nominated_room = self._nominated_room
        self.cycle.nominated_pods = self._nominated_pods
        self.cycle.nominated_node = self._nominated_node
        # The PodGroup cycle's plugins (group_framework.py): placement searches (KEP-5732's topology placements) and
        # groups of groups (KEP-6012's CompositePodGroup trees), as the profile's gates enable them.
        plugins = group_plugins(profile, self)
        self.placements, self.trees = plugins.placements, plugins.trees
        self.composite_pod_groups: dict[str, CompositePodGroup] = {}  # every one seen, for reports
        self.out: list[Decision] = []
        # Pods bound by a decision the driver has not confirmed yet (assume, then bind): pod key -> its
        # PodGroup key ("" for none). The simulator confirms each Bind at once; a live driver after the API call.
        self.assumed: dict[str, str] = {}
        # DRA devices and claims, when the profile runs the DynamicResources plugin.
        self.devices: DeviceState | None = device_state(self.cluster) \
            if DYNAMIC_RESOURCES in profile.filters else None
        self.extended = extended_resources(profile.plugin_args.get(DYNAMIC_RESOURCES))
        self.errors: dict[str, str] = {}  # queue entry -> the error its last cycle failed with (logged once)
        self.failures = FailedPods(self)
        self.fit_checked = FIT in profile.filters
        self._events = Events(self)
        self._pod_cycles = PodCycles(self)
        self._group_cycles = GroupCycles(self)
        self._cycle_errors = CycleErrors(self)

    # --- events from the driver (events.py) -----------------------------------------------------------------

    def add_nodes(self, nodes: Sequence[Node], now: float) -> None:
        self._events.add_nodes(nodes, now)

    def update_nodes(self, nodes: Sequence[Node], now: float) -> None:
        self._events.update_nodes(nodes, now)

    def delete_node(self, name: str, now: float) -> None:
        self._events.delete_node(name, now)

    def add_pod(self, pod: Pod, now: float, node: str | None = None) -> None:
        self._events.add_pod(pod, now, node)

    def update_pod(self, pod: Pod, now: float) -> None:
        self._events.update_pod(pod, now)

    def pod_terminating(self, key: str, now: float) -> None:
        self._events.pod_terminating(key, now)

    def delete_pod(self, key: str, now: float) -> None:
        self._events.delete_pod(key, now)

    def confirm_bind(self, key: str) -> None:
        self._events.confirm_bind(key)

    def bind_failed(self, key: str, now: float) -> list[str]:
        return self._events.bind_failed(key, now)

    def add_pod_group(self, group: PodGroup, now: float) -> None:
        self._events.add_pod_group(group, now)

    def delete_pod_group(self, key: str, now: float) -> None:
        self._events.delete_pod_group(key, now)

    def add_composite_pod_group(self, composite: CompositePodGroup, now: float) -> None:
        self._events.add_composite_pod_group(composite, now)

    def delete_composite_pod_group(self, key: str, now: float) -> None:
        self._events.delete_composite_pod_group(key, now)

    def add_pdb(self, pdb: PodDisruptionBudget) -> None:
        self._events.add_pdb(pdb)

    def delete_pdb(self, key: str) -> None:
        self._events.delete_pdb(key)

    def add_device_objects(self, now: float, *, slices: Sequence[ResourceSlice] = (),
                           classes: Sequence[DeviceClass] = (), claims: Sequence[ResourceClaim] = (),
                           templates: Sequence[ResourceClaimTemplate] = ()) -> None:
        self._events.add_device_objects(now, slices=slices, classes=classes, claims=claims, templates=templates)

    def delete_device_objects(self, now: float, *, slices: Sequence[str] = (), classes: Sequence[str] = (),
                              claims: Sequence[str] = (), templates: Sequence[str] = ()) -> None:
        self._events.delete_device_objects(now, slices=slices, classes=classes, claims=claims, templates=templates)

    def add_device_taint_rule(self, rule: DeviceTaintRule, now: float) -> list[DeviceTaintEviction]:
        return self._events.add_device_taint_rule(rule, now)

    # --- a round of cycles ------------------------------------------------------------------------------------

    def schedule(self, now: float) -> list[Decision]:
        """Run cycles for every active entry at time `now`; return what the driver must carry out.

        A cycle that raises fails alone (`CycleErrors.failed`), whatever it was doing; only a broken invariant of
        the books (StateCorrupted) goes on up."""
        self.out = []
        if self.devices is not None:  # the device-taint eviction controller's round
            self.out.extend(evict(self.devices, self.pods, self.running, now))
        self.failures.clear()  # events came in since the last round
        while (key := self.queue.pop(now)) is not None:
            mark = len(self.out)
            try:
                self._cycle(key, now)
            except StateCorrupted:
                raise
            except Exception as exc:  # one entry's failure, whatever it is, fails that entry alone
                self._cycle_errors.failed(key, exc, mark, now)
            else:
                self.errors.pop(key, None)
        return self.out

    def _cycle(self, key: str, now: float) -> None:
        if key.startswith(GROUP):
            self._group_cycles.run(key[len(GROUP):], key, now)
        elif self.trees.owns(key):
            self.trees.run(key, now)
        else:
            self._pod_cycles.run(key[len(POD):], key, now)

    def next_retry(self) -> float | None:
        """When the scheduler next has work without a new event: a backoff ending, a device toleration running
        out (tolerationSeconds of a NoExecute device taint)."""
        due = [t for t in (self.queue.next_backoff(),
                           next_eviction(self.devices, float("-inf")) if self.devices is not None else None)
               if t is not None]
        return min(due, default=None)

    # --- what the parts and the drivers ask ------------------------------------------------------------------

    def priority_of(self, pod: Pod) -> int:
        """With GenericWorkload on, a PodGroup's priority overrides its pods' (KEP-5710): its spec.priority,
        0 when unset (kube-scheduler's PodGroupPriority)."""
        if self.profile.gang and pod.group_key is not None:
            group = self.groups.get(pod.group_key)
            if group is not None:
                return group_priority(group)
        return pod.priority

    def group_priority(self, group_key: str) -> int:
        return group_priority(self.groups[group_key])

    def entry(self, group_key: str) -> str:
        """The queue entry a PodGroup's members are scheduled in: its own, or its tree root's."""
        return self.trees.entry(group_key) or GROUP + group_key

    def in_tree(self, group_key: str) -> PodGroup | None:
        """The PodGroup when it hangs under a CompositePodGroup and the profile schedules trees."""
        group = self.groups.get(group_key)
        return group if group is not None and self.trees.holds(group) else None

    def pending_members(self, group_key: str) -> list[Pod]:
        pods = [self.pods[k] for k in self.members[group_key] if k not in self.cluster.bound]
        pods.sort(key=lambda p: (-p.priority, p.arrival, p.source.index if p.source else 0, p.key))
        return pods

    def gated_member(self, group_keys: Iterable[str]) -> str | None:
        """runPreEnqueuePlugins: one pending member with scheduling gates gates its whole entity (a PodGroup, a
        CompositePodGroup tree); its status, or None when no pending member is gated."""
        for group_key in group_keys:
            for key in sorted(self.members[group_key]):
                pod = self.pods[key]
                if pod.scheduling_gates and key not in self.cluster.bound:
                    return pod.gate_message
        return None

    def running_members(self, group_key: str) -> int:
        """Bound members that count toward minCount: a terminating one (evicted, in its grace period) does not,
        so a later member never binds alone while the members it would join are going away."""
        terminating = self.running.terminating
        return sum(1 for k in self.members[group_key] if k in self.cluster.bound and k not in terminating)

    def running_pods(self, group_key: str) -> list[Pod]:
        return [self.pods[k] for k in sorted(self.members[group_key]) if k in self.cluster.bound]

    def scheduled_members(self, group_key: str) -> list[tuple[str, int]]:
        """Bound members (terminating ones too) and their nodes: where a topology-constrained group already is."""
        bound = self.cluster.bound
        return [(k, bound[k][0]) for k in sorted(self.members[group_key]) if k in bound]

    def pod_message(self, key: str) -> str | None:
        """Why a pending pod is not running yet, in kube-scheduler's words (None once bound or unknown)."""
        pod = self.pods.get(key)
        if pod is None or key in self.cluster.bound:
            return self.messages.get(key)
        group_key = pod.group_key if self.profile.gang else None
        if group_key is not None and group_key in self.gated:
            return self.gated[group_key]
        return self.messages.get(key)

    def pod_devices(self, key: str) -> list[str]:
        """The devices (`driver/pool/device`) a pod's claims hold, for reports."""
        pod = self.pods.get(key)
        if self.devices is None or pod is None or not pod.resource_claims:
            return []
        return self.devices.pod_devices(pod)

    # --- what the parts do through the Handle ----------------------------------------------------------------

    def pre_enqueue(self, group_key: str, now: float) -> None:
        self._group_cycles.pre_enqueue(group_key, now)

    def log_error(self, entry: str, message: str, exc: Exception) -> None:
        self._cycle_errors.log_error(entry, message, exc)

    def bound(self, pod: Pod, node: int, now: float, *, reserve: bool) -> None:
        if reserve:
            self.cycle.reserve(pod, node)
        self.nominated.pop(pod.key, None)
        self.running.clear_nomination(pod.key)
        self.running.add(pod.key, node, self.priority_of(pod), now,
                         member=self.profile.gang and pod.pod_group is not None)
        self.rejectors.pop(POD + pod.key, None)
        self._events.assigned_pod_added(pod, now)

    def rejected(self, entry: str, rejectors: dict[str, frozenset[str]]) -> None:
        """Remember the pods of `entry` that its last cycle left rejected by plugins with queueing hints."""
        by_pod = {key: hinted for key, names in rejectors.items()
                  if (hinted := [h for h in self.cycle.assigned_pod_hints if h.name in names])}
        if by_pod:
            self.rejectors[entry] = by_pod
        else:
            self.rejectors.pop(entry, None)

    def bind_decision(self, pod: Pod, node: int) -> Bind:
        if self.fit_checked:
            self.cluster.check_fits(pod.key)  # the engine never binds past allocatable: if it did, its books are wrong
        claims: list[tuple[str, dict[str, object]]] = []
        if self.devices is not None and pod.resource_claims:
            for state in self.devices.pod_claims(pod):
                allocation = self.devices.allocation(state.key)
                if allocation is not None:
                    claims.append((state.key, allocation))
        return Bind(pod, self.cluster.names[node], tuple(claims))

    def bind_member(self, pod: Pod, node: int, group_key: str, now: float) -> None:
        """A member of PodGroup `group_key` placed by its group's cycle (its node reserved there): assume it and
        emit its Bind."""
        self.bound(pod, node, now, reserve=False)
        self.messages.pop(pod.key, None)
        self.assumed[pod.key] = group_key
        self.out.append(self.bind_decision(pod, node))

    def unschedulable(self, pod: Pod, message: str) -> None:
        """The pod waits with `message` (PodScheduled=False, Unschedulable)."""
        self.messages[pod.key] = message
        self.out.append(Unschedulable(pod, message))

    def condition(self, group: PodGroup, status: bool, reason: str, message: str) -> None:
        """Write PodGroupInitiallyScheduled: True once, then final (updatePodGroupCondition never regresses
        it to False); False (Unschedulable, SchedulerError) while it was never True."""
        if group.key in self.initially_scheduled:
            return
        if status:
            self.initially_scheduled.add(group.key)
        self.out.append(GroupCondition(group, INITIALLY_SCHEDULED, status, reason, message))

    def clear_nominations(self, pods: Sequence[Pod]) -> None:
        for pod in pods:
            if self.nominated.pop(pod.key, None) is not None:
                self.running.clear_nomination(pod.key)
                self.out.append(Nominate(pod, ""))

    def preempt(self, preemptor: str, group: bool, outcome: Outcome, who: str,
                kind: PreemptorKind | None = None, reason: str = "Preempted by") -> None:
        """Carry out a preemption decision: evict the victims, nominate the preemptor's nodes. `kind` defaults to
        a PodGroup's when `group`, else a pod's; `reason` leads the victims' message."""
        kind = kind or ("podgroup" if group else "pod")
        if outcome.victims:
            self.out.append(Preemption(preemptor, group, tuple(outcome.victims)))
        for key in outcome.victims:
            node = self.cluster.names[self.running.node_of[key]]
            self.running.mark_terminating(key, preemptor)
            self.out.append(Evict(self.pods[key], preemptor, node, f"{reason} {who} on node {node}", kind))
        for key, node in outcome.nominations.items():
            self.nominated[key] = node
            pod = self.pods[key]
            self.running.nominate(key, self.cluster.index[node], self.cluster.demand(pod).requests,
                                  outcome.priority, anti_affinity=required_anti(pod))
            self.out.append(Nominate(self.pods[key], node))

    # --- nominated pods in the Filter (schedule_one.go) ------------------------------------------------

    def _nominated_room(self, pod: Pod) -> IntArray | None:
        """The room of pods nominated at the pod's priority or higher, which the Filter counts as taken on
        their nodes (addGENominatedPods); the pod itself and, in a PodGroup cycle, its fellow members (of the
        whole tree under a CompositePodGroup) are left out. None when nothing is nominated."""
        if not self.nominated:
            return None
        return self.running.held_for(self.priority_of(pod), self._nominee_exclusions(pod))

    def _nominated_pods(self, pod: Pod) -> dict[int, list[Pod]]:
        """Node -> the pods nominated there that the Filter adds to it for `pod` (those `_nominated_room` counts)."""
        if not self.nominated or not (reads_other_pods(pod) or self.running.nominated_anti_affinity):
            return {}  # the pod-reading filters would answer as without them (kept cheap: every cycle asks)
        nominations = self.running.nominations(self.priority_of(pod), self._nominee_exclusions(pod))
        return {node: [self.pods[key] for key in keys if key in self.pods] for node, keys in nominations.items()}

    def _nominee_exclusions(self, pod: Pod) -> Iterable[str]:
        if self.profile.gang and pod.group_key is not None:
            tree = self.trees.tree_members(pod.group_key)
            return {pod.key, *(tree if tree is not None else self.members.get(pod.group_key, ()))}  # once each
        return (pod.key,)

    def _nominated_node(self, pod: Pod) -> int | None:
        """The pod's own status.nominatedNodeName, tried before every other node (evaluateNominatedNode)."""
        name = self.nominated.get(pod.key)
        return self.cluster.index.get(name) if name else None

    # --- queries for drivers: what the simulator, the live driver and the tools read, as values -------------

    def knows_pod(self, key: str) -> bool:
        """The engine holds the pod (pending or bound)."""
        return key in self.pods

    def is_bound(self, key: str) -> bool:
        """The pod is on a node in the engine's books (assumed or confirmed)."""
        return key in self.cluster.bound

    def has_node(self, name: str) -> bool:
        return name in self.cluster.index

    def pod_count(self) -> int:
        return len(self.pods)

    def bound_count(self) -> int:
        return len(self.cluster.bound)

    def assumed_group(self, key: str) -> str | None:
        """For a pod bound by a decision the driver has not confirmed yet: its PodGroup's key ("" for none)."""
        return self.assumed.get(key)

    def group_message(self, group_key: str) -> str | None:
        """Why the PodGroup's last cycle left it unscheduled, in kube-scheduler's words."""
        return self.messages.get(GROUP + group_key)

    def shortfall(self, pod: Pod, node_name: str) -> list[str]:
        """The resources node `node_name` lacks to run `pod` as it is (`pods` when only its pod count is full);
        empty when the pod fits."""
        cluster = self.cluster
        node = cluster.index[node_name]
        if cluster.fits(pod, node):
            return []
        return [r for r in pod.requests if cluster.requested[node, cluster.column[r]] + pod.requests[r]
                > cluster.allocatable[node, cluster.column[r]]] or ["pods"]

    def node_allocatable(self, name: str) -> dict[str, int] | None:
        """The node's allocatable per resource in the engine's books; None for a node it never had."""
        cluster = self.cluster
        node = cluster.index.get(name)
        if node is None:
            return None
        return {resource: int(cluster.allocatable[node, col]) for resource, col in cluster.column.items()}

    def node_state(self) -> ClusterState:
        """The node arrays whole, for a model that runs over them (the simulator's cluster autoscaler runs the
        node-static Filters on them to find unneeded nodes). Read them only: the engine's books are its own."""
        return self.cluster

    def allocates_devices(self) -> bool:
        """The profile runs DynamicResources: the engine allocates DRA devices."""
        return self.devices is not None

    def claim_statuses(self) -> list[tuple[str, dict[str, object]]]:
        """Every ResourceClaim the engine knows, by key, with its status as the API shows it."""
        devices = self.devices
        if devices is None:
            return []
        return [(key, devices.claim_status(key)) for key in sorted(devices.claims)]

    def group_claim_statuses(self, group_key: str) -> list[dict[str, str]] | None:
        """The PodGroup's `status.resourceClaimStatuses`; None when the engine allocates no devices."""
        return None if self.devices is None else self.devices.claim_statuses(group_key)

    def composites(self) -> list[CompositePodGroup]:
        """Every CompositePodGroup seen, in the order they came."""
        return list(self.composite_pod_groups.values())

    def exact_placement(self) -> tuple[ExactPlacementReport, ExactPlacementSeconds]:
        """Exact placement's verdicts so far (`Decisions.summary`) and its time spent (`Decisions.timing`)."""
        made = decisions(self.cluster)
        return made.summary(), made.timing()

    def ties(self) -> dict[str, tuple[str, ...]]:
        """With verification's hints: every decision's equally best nodes, per pod."""
        return dict(self.cycle.ties)

    def pending_counts(self) -> dict[str, int]:
        """Pending pods by where they wait, as kube-scheduler's `pending_pods` gauge counts them: `active`
        (in flight too), `backoff`, `unschedulable`, and `gated` (PodGroup members behind PreEnqueue)."""
        counts = {"active": 0, "backoff": 0, "unschedulable": 0, "gated": 0}
        for key, entry in self.queue.entries.items():
            where = {Where.ACTIVE: "active", Where.IN_FLIGHT: "active", Where.BACKOFF: "backoff",
                     Where.UNSCHEDULABLE: "unschedulable"}[entry.where]
            if entry.timed and entry.where is Where.UNSCHEDULABLE:
                where = "backoff"  # a failed group asleep between futile retries: kube-scheduler keeps it in backoffQ
            counts[where] += self._entry_size(key)
        bound = self.cluster.bound
        counts["gated"] = sum(len([k for k in self.members.get(g, ()) if k not in bound]) for g in self.gated)
        return counts

    def _entry_size(self, key: str) -> int:
        """The pending pods of one queue entry: a pod, a PodGroup's members, or every leaf's of a tree."""
        if key.startswith(GROUP):
            groups = [key[len(GROUP):]]
        elif key.startswith(COMPOSITE) and (leaves := self.trees.leaves(key[len(COMPOSITE):])) is not None:
            groups = [leaf.key for leaf in leaves]
        else:
            return 1
        bound = self.cluster.bound
        return sum(1 for group in groups for k in self.members.get(group, ()) if k not in bound)

