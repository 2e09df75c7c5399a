"""CompositePodGroup trees (KEP-6012), as kube-scheduler v1.37.2 schedules them with the CompositePodGroup gate on
(it needs GenericWorkload and TopologyAwareWorkloadScheduling, kube_features.go).

The tree (backend/queue/workload_forest.go). CompositePodGroups are inner nodes and PodGroups leaves, each
naming its parent by `spec.parentCompositePodGroupName` in its own namespace. The queue holds one entry per
root: a PodGroup without a parent is its own root; a PodGroup under a composite belongs to the root found by
walking parents upward (getRootLookupInfoForParentCPG). A missing parent or a cycle gives no root, and the
members wait: upstream only logs the cycle ("cycle detected in composite pod group hierarchy").

PreEnqueue (gangscheduling.go preEnqueueWithHierarchies, isCPGTreeReady, isPGReady). A member passes once its
PodGroup exists and its tree is ready: a PodGroup is ready when it has minCount pods (1 for basic), bound ones
counted; a CompositePodGroup when at least minGroupCount of its children (1 for basic) are ready.

One cycle per root (schedule_one_podgroup.go). validatePodGroup runs over every pod of the tree, pending and
bound: one schedulerName, every pod at the root's priority (spec.priority, 0 unset), one preemption policy
(the root's with PodGroupPreemptionPolicy on, else the first pod's). A failure is a SchedulerError on every
leaf PodGroup. Then runRootSchedulingAlgorithm places the tree (tree_placement.py).

Not done upstream in v1.37.2, so not here: no condition on CompositePodGroups (CompositePodGroupInitiallyScheduled
and its `Invalid` reason are documented in the API but no scheduler code writes them), no check of one Workload per
tree (only a Workload's templates are checked, by the API server: parse.py). Depth is checked only where the
GangScheduling PreEnqueue walks up from a leaf (BuildHierarchySnapshotFromPod follows WorkloadMaxTreeDepth parent
links): a leaf more than 5 levels below its root finds no root, and its pods wait with that message
(`Forest.hierarchy_root`, forest.py). Every walk over a tree here is a loop, never a recursion, so a chain of any
length is only as costly as it is long.

Preemption (podGroupCycle): when the root is Unschedulable, RunPodGroupPostFilterPlugins runs DefaultPreemption's
PodGroupEvaluator once for the whole tree, at the root's priority and with the root's preemption policy; its
scheduling function is runRootSchedulingAlgorithm for the root, run with every lower-priority victim removed
(selectVictimsOnDomain). Here `CompositeCycles._preempt` hands `Preemptor.for_tree` a TreePlacer run on the
preemption's trial; the pods of the leaves that succeed are nominated (upstream also lists those of leaves that
failed after placing some pods: see docs/composite.md). The tree's running pods are victims at their root's
priority, grouped under their highest `disruptionMode: all` ancestor, for every preemptor: CompositeCycles hands
the Preemptor its Forest for that (preemption.py).

The tree's placement itself, exact placement in it included, is `tree_placement.py`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from phalanx.api.objects import CompositePodGroup, Pod, PodGroup
from phalanx.scheduler.entries import COMPOSITE
from phalanx.scheduler.gang import with_note
from phalanx.scheduler.group_status import (
    NO_VICTIMS,
    NOT_ELIGIBLE,
    ONGOING,
    Refusal,
    member_messages,
    post_filter_reason,
    preempting,
)
from phalanx.scheduler.handle import Handle
from phalanx.scheduler.placement import exact
from phalanx.scheduler.plugins.composite.forest import Forest, TreeNode, ready
from phalanx.scheduler.plugins.composite.tree_placement import NodeResult, TreePlacer
from phalanx.scheduler.plugins.topology.topology_placement import TopologyPlacer
from phalanx.scheduler.preemption import Outcome


class CompositeCycles:
    """The tree plugin (group_framework.TreePlugin) of CompositePodGroups: PreEnqueue over the hierarchy and the
    root cycle, each tree's groups placed with `placer` (the topology plugin's search, which the
    CompositePodGroup gate needs)."""

    def __init__(self, scheduler: Handle, placer: TopologyPlacer) -> None:
        self.s = scheduler
        self.placer = placer
        self.forest = Forest()
        scheduler.preemptor.forest = self.forest  # victims in trees: their root's priority, `all` ancestors

    # --- the tree and PreEnqueue ------------------------------------------------------------------------

    def root_of_group(self, group: PodGroup) -> tuple[str | None, str]:
        assert group.parent is not None
        return self.forest.root_of(f"{group.namespace}/{group.parent}")

    def held(self, group: PodGroup) -> str | None:
        """Why PreEnqueue holds the leaf's pods whatever its tree's quorum: no root within reach of its
        hierarchy walk (`Forest.hierarchy_root`); None when it has one."""
        assert group.parent is not None
        root, why = self.forest.hierarchy_root(f"{group.namespace}/{group.parent}")
        return why if root is None else None

    def tree_members(self, group_key: str) -> set[str] | None:
        """The pods of every leaf of the tree over PodGroup `group_key` (None: it has no root): one
        preemptor's pods, whose nominations leave room for each other."""
        group = self.s.groups.get(group_key)
        if group is None or group.parent is None:
            return None
        root, _ = self.root_of_group(group)
        if root is None:
            return None
        return {key for leaf in self.forest.tree(root).leaves() for key in self.s.members.get(leaf.key, ())}

    def holds(self, group: PodGroup) -> bool:
        return group.parent is not None

    def entry(self, group_key: str) -> str | None:
        """The queue entry of the root over PodGroup `group_key` when it has a parent (None: no parent, no root)."""
        group = self.s.groups.get(group_key)
        if group is None or group.parent is None:
            return None
        root, _ = self.root_of_group(group)
        return COMPOSITE + root if root is not None else None

    def owns(self, entry: str) -> bool:
        return entry.startswith(COMPOSITE)

    def leaves(self, root_key: str) -> list[PodGroup] | None:
        if root_key not in self.forest.composites:
            return None
        return list(self.forest.tree(root_key).leaves())

    def group_added(self, group: PodGroup) -> None:
        self.forest.add_group(group)

    def group_deleted(self, group: PodGroup) -> None:
        self.forest.remove_group(group)

    def add(self, composite: CompositePodGroup, now: float) -> None:
        self.forest.add(composite)
        root, _ = self.forest.root_of(composite.key)
        if root is not None:
            self.pre_enqueue(root, now)
            self.s.queue.move(COMPOSITE + root, now)

    def delete(self, key: str, now: float) -> None:
        composite = self.forest.remove(key)
        if composite is None:
            return
        self.s.queue.done(COMPOSITE + key)
        for group in list(self.s.groups.values()):  # its former leaves, now without a root, wait again
            if group.parent is not None:
                root, why = self.root_of_group(group)
                if root is None:
                    self.s.gated[group.key] = why

    def pre_enqueue_group(self, group: PodGroup, now: float) -> None:
        root, why = self.root_of_group(group)
        if root is None:
            self.s.gated[group.key] = why
            self.s.messages["group:" + group.key] = why
            return
        self.pre_enqueue(root, now)

    def pre_enqueue(self, root: str, now: float) -> None:
        """preEnqueueWithHierarchies: the root's entry waits until the tree meets its quorum. A leaf too far
        below the root for the hierarchy walk waits in any case (its pods never join the root's entry)."""
        tree = self.forest.tree(root)
        leaves = list(tree.leaves())
        held = {leaf.key: why for leaf in leaves if (why := self.held(leaf)) is not None}
        gated = self.s.gated_member(leaf.key for leaf in leaves)
        if gated is not None:  # one pod with scheduling gates gates the root's whole entry
            for leaf in leaves:
                self.s.gated[leaf.key] = self.s.messages["group:" + leaf.key] = held.get(leaf.key, gated)
            self.s.queue.done(COMPOSITE + root)
            return
        for key, why in held.items():
            self.s.gated[key] = why
            self.s.messages["group:" + key] = why
        if not ready(tree, self.s.members):
            why = f"waiting for composite pod group {root} tree to meet quorum"
            for leaf in leaves:
                self.s.gated[leaf.key] = held.get(leaf.key, why)
            self.s.queue.done(COMPOSITE + root)
            return
        leaves = [leaf for leaf in leaves if leaf.key not in held]
        for leaf in leaves:
            self.s.gated.pop(leaf.key, None)
        if COMPOSITE + root in self.s.queue:
            return
        pending = [self.s.pods[k] for leaf in leaves for k in self.s.members[leaf.key]
                   if k not in self.s.cluster.bound]
        if pending:
            composite = self.forest.composites[root]
            self.s.queue.add(COMPOSITE + root, composite.priority or 0, min(p.arrival for p in pending))

    # --- the root cycle ---------------------------------------------------------------------------------

    def _validate(self, root: CompositePodGroup, pods: Sequence[Pod]) -> str | None:
        """validatePodGroup over the tree: one schedulerName, the root's priority, one preemption policy."""
        priority = root.priority or 0
        gate = self.s.profile.feature_gates.get("PodGroupPreemptionPolicy", False)
        first = pods[0]
        policy = (root.preemption_policy or "PreemptLowerPriority") if gate else first.preemption_policy
        for pod in pods:
            if pod.scheduler_name != first.scheduler_name:
                return (f"all pods in a single pod group should have the same .spec.schedulerName set, got: "
                        f"{pod.scheduler_name!r} and {first.scheduler_name!r}")
            if pod.priority != priority:
                return (f"all pods in a single pod group should have the same priority as the pod group's "
                        f"priority, got {pod.priority} and {priority}")
            if pod.preemption_policy != policy:
                return f"all pods in a single pod group should have the same preemption policy, got " \
                       f"{pod.preemption_policy} and {policy}"
        return None

    def run(self, entry: str, now: float) -> None:
        self.cycle(entry[len(COMPOSITE):], entry, now)

    def cycle(self, root_key: str, entry: str, now: float) -> None:
        s = self.s
        root = self.forest.composites.get(root_key)
        if root is None or root.parent is not None:
            s.queue.done(entry)
            return
        tree = self.forest.tree(root_key)
        leaves = list(tree.leaves())
        pending = {leaf.key: s.pending_members(leaf.key) if self.held(leaf) is None else [] for leaf in leaves}
        if not any(pending.values()) or not ready(tree, s.members):
            s.queue.done(entry)
            self.pre_enqueue(root_key, now)
            return
        every = [pod for leaf in leaves for pod in (*pending[leaf.key], *s.running_pods(leaf.key))]
        invalid = self._validate(root, every)
        if invalid is not None:  # handlePodGroupFailureBeforeScheduling: a SchedulerError on every leaf
            self._fail(root_key, leaves, pending, {}, invalid, "SchedulerError", entry, now)
            s.clear_nominations([pod for pods in pending.values() for pod in pods])
            return
        placer = TreePlacer(s.cycle, self.placer, pending, {leaf.key: s.running_members(leaf.key) for leaf in leaves},
                            {leaf.key: s.scheduled_members(leaf.key) for leaf in leaves})
        result = placer.place(tree)
        if not s.cluster.journaling:  # a real root cycle: its leaves' exact verdicts, once each
            for leaf_key, verdict, seconds in placer.exact_decisions:
                exact.decisions(s.cluster).add(leaf_key, verdict, seconds)
        if result.status != "success":
            reason = "SchedulerError" if result.status == "error" else "Unschedulable"
            if result.status == "unschedulable":
                found, ongoing = self._preemption(root, tree, leaves, pending)
                tail = self._tail(found, ongoing)
                self._fail(root_key, leaves, pending, placer.results, result.message, reason, entry, now, tail,
                           waiting=ongoing or isinstance(found, Outcome))
                if isinstance(found, Outcome):
                    s.preempt(root.key, True, found, f"composite pod group {root.key}", "compositepodgroup")
                elif not ongoing:
                    s.clear_nominations([pod for leaf in leaves for pod in pending[leaf.key]])
            else:
                self._fail(root_key, leaves, pending, placer.results, result.message, reason, entry, now)
                s.clear_nominations([pod for pods in pending.values() for pod in pods])
            return
        retry = False
        for leaf in leaves:
            own = placer.results[leaf.key]
            outcome = own.outcome
            if own.status == "success" and outcome is not None:
                for pod, node in outcome.placed:
                    s.bind_member(pod, node, leaf.key, now)
                for pod_key, why in outcome.failures.items():
                    retry = True
                    s.unschedulable(s.pods[pod_key], why)
                s.condition(leaf, True, "Scheduled", f"{len(outcome.placed)} pod(s) bound")
            else:
                retry |= bool(pending[leaf.key])
                self._leaf_failed(leaf, pending[leaf.key], own, "SchedulerError" if own.status == "error"
                                  else "Unschedulable")
        if retry:
            s.messages[COMPOSITE + root_key] = result.message
            s.queue.failed(entry, now, size=sum(len(pods) for pods in pending.values()))
        else:
            s.messages.pop(COMPOSITE + root_key, None)
            s.queue.done(entry)

    def _leaf_failed(self, leaf: PodGroup, pending: Sequence[Pod], own: NodeResult, reason: str,
                     tail: str | None = None, waiting: bool = False) -> None:
        """A leaf that binds nothing: its pods' messages and its condition, in kube-scheduler's words where the
        result has them (group_status.py; `tail` the root's PodGroupPostFilter reason, None when it did not run)."""
        s = self.s
        outcome = own.outcome
        if own.said is None or reason == "SchedulerError":
            failures = outcome.failures if outcome is not None else {}
            for pod in pending:
                s.unschedulable(pod, failures.get(pod.key, own.message))
            s.condition(leaf, False, reason, own.message)
            return
        if outcome is not None:
            tried = {k: v for k, v in outcome.failures.items() if k not in outcome.untried}
            fitted, untried = list(outcome.fitted), list(outcome.untried)
        else:  # the parent's result (completeCompositePodGroupAlgorithmResultMap): none of its pods was tried
            tried, fitted, untried = {}, [], [pod.key for pod in pending]
        message, messages = member_messages(own.said, tail, tried, fitted, untried, waiting_on_preemption=waiting)
        if own.note:
            message = with_note(message, own.note)
            for key in (*fitted, *untried):
                messages[key] = with_note(messages[key], own.note)
        for pod in pending:
            s.unschedulable(pod, messages.get(pod.key, message))
        s.condition(leaf, False, reason, message)

    def _fail(self, root_key: str, leaves: Sequence[PodGroup], pending: Mapping[str, Sequence[Pod]],
              results: Mapping[str, NodeResult], message: str, reason: str, entry: str, now: float,
              tail: str | None = None, waiting: bool = False) -> None:
        """Nothing of the tree binds: every leaf's pods wait with its (or the root's) message."""
        s = self.s
        for leaf in leaves:
            own = results.get(leaf.key, NodeResult("error" if reason == "SchedulerError" else "unschedulable",
                                                   message))
            self._leaf_failed(leaf, pending[leaf.key], own, reason, tail, waiting)
        root = results.get(root_key)
        s.messages[COMPOSITE + root_key] = message if root is None or root.said is None or tail is None else \
            with_note(root.said.appended(tail).message, root.note)
        s.queue.failed(entry, now, size=sum(len(pods) for pods in pending.values()))

    # --- workload-aware preemption for the tree -----------------------------------------------------------

    def _preemption(self, root: CompositePodGroup, tree: TreeNode, leaves: Sequence[PodGroup],
                    pending: Mapping[str, Sequence[Pod]]) -> tuple[Outcome | Refusal | None, bool]:
        """The PodGroupPostFilter at the root (podGroupCycle calls RunPodGroupPostFilterPlugins when the root is
        Unschedulable; DefaultPreemption's PodGroupEvaluator.Preempt): the preemptor is the whole tree, at the
        root's priority, with the root's preemption policy; its scheduling function runs the tree's placement
        again (runRootSchedulingAlgorithm) with every lower-priority victim removed. The victims to evict and
        the pods that placement placed to nominate, or why not (None: the profile runs no preemption); and
        whether an earlier preemption of the tree is still going on. Nothing is carried out here."""
        s = self.s
        if not s.profile.preemption:
            return None, False
        pods = [pod for leaf in leaves for pod in pending[leaf.key]]
        priority = root.priority or 0
        if self._never(root, pods):  # preemptorEligibleToPreemptOthers
            return NOT_ELIGIBLE, False
        if self._ongoing(leaves, priority):  # isOngoingPreemption: keep waiting on the current nominations
            return None, True
        placer, running = self.placer, {leaf.key: s.running_members(leaf.key) for leaf in leaves}
        scheduled = {leaf.key: s.scheduled_members(leaf.key) for leaf in leaves}

        def place() -> list[tuple[Pod, int]] | Refusal:
            """The root's scheduling function, on the preemption's trial: the pods of the leaves that
            succeed, or the root's status when it fails."""
            trees = TreePlacer(s.cycle, placer, pending, running, scheduled)
            placed = trees.place(tree)
            if placed.status != "success":
                return Refusal(placed.said.message if placed.said is not None else placed.message)
            return [pair for leaf in leaves for pair in _placed_by(trees.results.get(leaf.key))]

        return (s.preemptor.for_tree(priority, place, pods[0]) if pods else NO_VICTIMS), False

    def _tail(self, found: Outcome | Refusal | None, ongoing: bool) -> str:
        """The PodGroupPostFilter's reason, as the tree's statuses get it appended."""
        if ongoing or isinstance(found, Outcome):
            said = ONGOING if ongoing else preempting(len(found.victims) if isinstance(found, Outcome) else 0)
            return post_filter_reason(enabled=True, dra=None, preemption=said, success=True)
        if isinstance(found, Refusal):
            return post_filter_reason(enabled=True, dra=None, preemption=found.message, resolvable=found.resolvable)
        return post_filter_reason(enabled=False, dra=None, preemption=None)

    def _never(self, root: CompositePodGroup, pods: Sequence[Pod]) -> bool:
        """resolveCompositePreemptionPolicy: with PodGroupPreemptionPolicy on, the root's own policy
        (PreemptLowerPriority when unset); with it off, Never as soon as one pending pod says Never. Always, with
        the profile's DefaultPreemption off."""
        if not self.s.profile.preemption:
            return True
        if self.s.profile.feature_gates.get("PodGroupPreemptionPolicy", False):
            return root.preemption_policy not in (None, "PreemptLowerPriority")
        return any(pod.preemption_policy == "Never" for pod in pods)

    def _ongoing(self, leaves: Sequence[PodGroup], priority: int) -> bool:
        """isOngoingPreemption: a lower-priority pod is still terminating on a node one of the tree's pods is
        nominated to."""
        running = self.s.running
        for leaf in leaves:
            for key in self.s.members.get(leaf.key, ()):
                node = running.nominated_node(key)
                if node is not None and self.s.preemptor.terminating_below(node, priority):
                    return True
        return False


def _placed_by(result: NodeResult | None) -> Sequence[tuple[Pod, int]]:
    """The pods a leaf placed, when it succeeded under successful ancestors."""
    if result is None or result.status != "success" or result.outcome is None:
        return ()
    return result.outcome.placed
