"""What the engine takes in: the driver's add, update and delete events for nodes, pods, PodGroups,
CompositePodGroups, PodDisruptionBudgets and DRA objects, and the binding outcomes it reports (assume, then
bind). Each event changes the Scheduler's state and moves the queue entries it may help; the queueing hint for
an assigned pod being added lives here too."""

from __future__ import annotations

from collections.abc import Sequence

from phalanx.api.dra import DeviceClass, DeviceTaintRule, ResourceClaim, ResourceClaimTemplate, ResourceSlice
from phalanx.api.objects import CompositePodGroup, Node, Pod, PodDisruptionBudget, PodGroup
from phalanx.cluster.state import StateCorrupted
from phalanx.scheduler.cycle_errors import error_message
from phalanx.scheduler.decisions import DeviceTaintEviction
from phalanx.scheduler.entries import COMPOSITE, GROUP, POD
from phalanx.scheduler.handle import Handle
from phalanx.scheduler.plugins.dra.device_allocation import device_allocator
from phalanx.scheduler.plugins.dra.taint_eviction import evict
from phalanx.scheduler.plugins.gang.gang_scheduling import GANG_SCHEDULING


class Events:
    def __init__(self, scheduler: Handle) -> None:
        self.s = scheduler

    def add_nodes(self, nodes: Sequence[Node], now: float) -> None:
        self.s.cluster.add_nodes(nodes)
        self.s.queue.move_all(now)

    def add_pod(self, pod: Pod, now: float, node: str | None = None) -> None:
        """A new pod: pending (queued, or gated behind its PodGroup) or already bound to `node`."""
        if self.s.devices is not None:  # extended resources served by devices become a claim (KEP-5004)
            pod = self.s.devices.translate(pod, self.s.extended)
        self.s.pods[pod.key] = pod
        group_key = pod.group_key if self.s.profile.gang else None
        if group_key is not None:
            self.s.members[group_key].add(pod.key)
        if node is not None:
            self.s.bound(pod, self.s.cluster.index[node], pod.start_time if pod.start_time is not None else now,
                         reserve=True)
            return
        if group_key is None:
            if pod.scheduling_gates:  # SchedulingGates' PreEnqueue: not queued until an update lifts the gates
                self.s.messages[pod.key] = pod.gate_message or ""
                return
            self.s.queue.add(POD + pod.key, self.s.priority_of(pod), pod.arrival)
        else:
            # GangScheduling's EventsToRegister: an unscheduled member appearing requeues its group, also one
            # already waiting as unschedulable (the new member may be what it was missing).
            self.s.pre_enqueue(group_key, now)
            self.s.queue.move(self.s.entry(group_key), now)

    def update_pod(self, pod: Pod, now: float) -> None:
        """A pending pod changes (its schedulingGates lifted, the one change the API allows a pending pod's
        scheduling to see): it passes PreEnqueue again, keeping its place by creation time."""
        if pod.key not in self.s.pods or pod.key in self.s.cluster.bound:
            return
        self.delete_pod(pod.key, now)
        self.add_pod(pod, now)

    def delete_pod(self, key: str, now: float) -> None:
        """A pod finished or was deleted: free its node and let waiting entries retry."""
        pod = self.s.pods.pop(key, None)
        if pod is None:
            return
        self.s.messages.pop(key, None)
        group_key = pod.group_key if self.s.profile.gang else None
        if group_key is not None:
            self.s.members[group_key].discard(key)
        self.s.nominated.pop(key, None)
        self.s.rejectors.pop(POD + key, None)
        self.s.errors.pop(POD + key, None)
        self.s.failures.forget(key)
        self.s.running.clear_nomination(key)
        if key in self.s.cluster.bound:
            self.s.running.remove(key)
            self.s.cycle.unreserve(key, pod)
            self.s.queue.move_all(now)
        else:
            self.s.queue.done(POD + key)
        if self.s.devices is not None:
            self.s.devices.forget_pod(pod)

    def confirm_bind(self, key: str) -> None:
        """The driver bound the pod (the Binding call succeeded): it is no longer only assumed."""
        self.s.assumed.pop(key, None)

    def bind_failed(self, key: str, now: float) -> list[str]:
        """The driver could not bind an assumed pod (handleBindingCycleError): unreserve it, forget it and queue
        it again through backoff. When it leaves its gang below minCount, the gang's other members that are
        still only assumed are rolled back with it (the driver must not bind them). Returns every pod rolled
        back, `key` first; empty when `key` was not assumed."""
        if key not in self.s.assumed:
            return []
        group_key = self.s.assumed.pop(key) or None
        rolled = [key]
        self._unassume(key)
        if group_key is not None:
            group = self.s.groups.get(group_key)
            if group is not None and not GANG_SCHEDULING.quorum(group, self.s.running_members(group_key)):
                for other in [k for k, g in self.s.assumed.items() if g == group_key]:
                    del self.s.assumed[other]
                    self._unassume(other)
                    rolled.append(other)
            priority = self.s.group_priority(group_key) if group is not None else 0
            self.s.queue.backoff(self.s.entry(group_key), priority, group.arrival if group is not None else now, now)
        else:
            pod = self.s.pods.get(key)
            if pod is not None:
                self.s.queue.backoff(POD + key, self.s.priority_of(pod), pod.arrival, now)
        self.s.queue.move_all(now)  # room came back
        return rolled

    def _unassume(self, key: str) -> None:
        pod = self.s.pods.get(key)
        if pod is None or key not in self.s.cluster.bound:
            return
        self.s.running.remove(key)
        self.s.cycle.unreserve(key, pod)
        if self.s.devices is not None:
            self.s.devices.forget_pod(pod)

    def update_nodes(self, nodes: Sequence[Node], now: float) -> None:
        """Nodes appear or change: a new node is added; a known one takes its new labels, taints, cordon and
        allocatable."""
        known = [n for n in nodes if n.name in self.s.cluster.index]
        new = [n for n in nodes if n.name not in self.s.cluster.index]
        if new:
            self.s.cluster.add_nodes(new)
        relabelled = False
        for node in known:
            index = self.s.cluster.index[node.name]
            relabelled |= self.s.cluster.set_labels(index, node.labels)
            self.s.cluster.set_taints(index, node.taints)
            self.s.cluster.set_unschedulable(index, node.unschedulable)
            self.s.cluster.set_allocatable(index, node.allocatable)
        if relabelled and self.s.devices is not None:
            self.s.devices.nodes_changed()
        self.s.queue.move_all(now)

    def delete_node(self, name: str, now: float) -> None:
        """A node is gone: it keeps its row (indices stay) with no room and cordoned, so nothing lands there.
        Pods still bound to it leave through their own delete events."""
        index = self.s.cluster.index.get(name)
        if index is None:
            return
        self.s.cluster.set_unschedulable(index, True)
        self.s.cluster.set_allocatable(index, {})
        self.s.queue.move_all(now)

    def pod_terminating(self, key: str, now: float) -> None:
        """A bound pod got a deletionTimestamp (evicted or deleted by someone): it keeps its node until it is
        gone, and no longer counts toward its gang's minCount."""
        if key in self.s.cluster.bound and key not in self.s.running.terminating:
            self.s.running.mark_terminating(key, "")

    def delete_pod_group(self, key: str, now: float) -> None:
        """A PodGroup is deleted: its pending members wait behind PreEnqueue again."""
        group = self.s.groups.pop(key, None)
        if group is None:
            return
        if self.s.devices is not None:
            self.s.devices.delete_pod_group(key)
        self.s.trees.group_deleted(group)
        if self.s.profile.gang:
            self.s.pre_enqueue(key, now)
            self.s.queue.done(GROUP + key)

    def add_pod_group(self, group: PodGroup, now: float) -> None:
        """A PodGroup appears or changes (e.g. its minCount): its members pass PreEnqueue again. One whose
        status already says PodGroupInitiallyScheduled=True (a snapshot's) keeps that condition for good."""
        self.s.groups[group.key] = group
        if self.s.devices is not None and self.s.profile.workload_claims:
            self.s.devices.add_pod_group(group)  # its claims from templates, one per PodGroup
        if group.initially_scheduled:
            self.s.initially_scheduled.add(group.key)
        self.s.trees.group_added(group)
        if self.s.profile.gang:
            self.s.pre_enqueue(group.key, now)
            self.s.queue.move(self.s.entry(group.key), now)

    def add_composite_pod_group(self, composite: CompositePodGroup, now: float) -> None:
        """A CompositePodGroup appears (ignored with the CompositePodGroup gate off, as the API server drops
        the PodGroups' parent link then): its tree's members pass PreEnqueue again."""
        self.s.composite_pod_groups[composite.key] = composite
        try:
            self.s.trees.add(composite, now)
        except StateCorrupted:
            raise
        except Exception as exc:  # as in GroupCycles.pre_enqueue: the members wait, nothing else is held up
            self.s.log_error(COMPOSITE + composite.key, error_message(exc), exc)

    def delete_composite_pod_group(self, key: str, now: float) -> None:
        self.s.composite_pod_groups.pop(key, None)
        self.s.trees.delete(key, now)

    def add_pdb(self, pdb: PodDisruptionBudget) -> None:
        """A PodDisruptionBudget appears or changes."""
        self.s.pdbs[pdb.key] = pdb

    def delete_pdb(self, key: str) -> None:
        self.s.pdbs.pop(key, None)

    def add_device_objects(self, now: float, *, slices: Sequence[ResourceSlice] = (),
                           classes: Sequence[DeviceClass] = (), claims: Sequence[ResourceClaim] = (),
                           templates: Sequence[ResourceClaimTemplate] = ()) -> None:
        """ResourceSlices, DeviceClasses, ResourceClaims and templates appear or change: an object whose name
        is known replaces the earlier one (ignored without DynamicResources)."""
        if self.s.devices is None:
            return
        self.s.devices.add_classes(classes)
        self.s.devices.add_templates(templates)
        self.s.devices.add_claims(claims)
        self.s.devices.add_slices(slices)
        if slices or claims:
            self._pin_allocated()
        if slices or classes or claims or templates:
            self.s.queue.move_all(now)

    def _pin_allocated(self) -> None:
        """A claim the API shows allocated and reserved for pods (bound by any scheduler, or mid-binding)
        holds its devices here too, before its pods are known: they are never handed to another claim."""
        assert self.s.devices is not None
        allocator = device_allocator(self.s.cluster)
        for state in self.s.devices.claims.values():
            if state.allocation is None and state.claim.allocated and state.claim.reserved:
                choices = allocator.pinned(state)
                if choices is not None:
                    self.s.devices.pin(state, choices)

    def delete_device_objects(self, now: float, *, slices: Sequence[str] = (), classes: Sequence[str] = (),
                              claims: Sequence[str] = (), templates: Sequence[str] = ()) -> None:
        """ResourceSlices and DeviceClasses (by name), ResourceClaims and templates (`namespace/name`) deleted.
        A retired device stays with the claim that holds it until that claim's pods are gone."""
        if self.s.devices is None:
            return
        for name in slices:
            self.s.devices.delete_slice(name)
        for name in classes:
            self.s.devices.delete_class(name)
        for key in claims:
            self.s.devices.delete_claim(key)
        for key in templates:
            self.s.devices.delete_template(key)

    def add_device_taint_rule(self, rule: DeviceTaintRule, now: float) -> list[DeviceTaintEviction]:
        """A DeviceTaintRule appears: its taint joins the selected devices' taints. Returns the evictions it
        causes now (pods whose claims do not tolerate a NoExecute taint); later ones, after tolerationSeconds,
        come out of `schedule`."""
        if self.s.devices is None:
            return []
        self.s.devices.add_taint_rule(rule)
        return evict(self.s.devices, self.s.pods, self.s.running, now)

    def assigned_pod_added(self, added: Pod, now: float) -> None:
        """The AssignedPod/Add event: an unschedulable pod goes to backoffQ or activeQ when a plugin that
        rejected it gives the Queue hint for `added` (isSchedulableAfterAssignedPodChange of InterPodAffinity
        and PodTopologySpread); NodeResourcesFit and the others skip an added pod, which frees nothing."""
        for entry, rejected in self.s.rejectors.items():
            if any((pending := self.s.pods.get(key)) is not None and key not in self.s.cluster.bound
                   and any(h.requeue_after_assigned_pod_add(pending, added) for h in hints)
                   for key, hints in rejected.items()):
                self.s.queue.move(entry, now)
