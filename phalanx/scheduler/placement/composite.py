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
leaf PodGroup. Then runRootSchedulingAlgorithm walks the tree top-down:
- a CompositePodGroup (compositePodGroupSchedulingPlacementAlgorithm) gets its placements: with
  `schedulingConstraints.topology` one per value of the label among its parent's nodes (only the domain of
  its subtree's bound pods when there are any), else its parent's placement. In each it runs
  compositePodGroupSchedulingDefaultAlgorithm: the children in turn, each confined to the placement, each
  seeing the earlier siblings' assumed pods, no backtracking; the GangScheduling PlacementFeasible check stops
  early once `remaining + succeeded < minGroupCount` and the node succeeds when `succeeded ≥ minGroupCount`.
  Of several feasible placements the best by PlacementScore (NodeResourcesFit MostAllocated over the
  placement with the subtree's placed pods, PodGroupPodsCount over the subtree) is assumed again;
- a PodGroup is placed as a root one is (placement/topology.py with its own topology key, within its parent's
  placement), except that it succeeds once bound + placed pods reach minCount, even with nothing placed
  (podGroupSchedulingDefaultAlgorithm: only the root must place a pod).
- The root fails when it succeeds without placing a pod ("pod group is unschedulable").
Statuses then flow down (completeCompositePodGroupAlgorithmResultMap): a child that succeeded under a parent
that failed takes the parent's failure, and leaves never tried take their parent's status. Every leaf PodGroup
gets PodGroupInitiallyScheduled from its own status (submitPodGroupAlgorithmResult); the pods of successful
leaves under successful ancestors bind, all others are unschedulable.

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

Exact placement (the `phalanx` profile; not upstream, docs/composite.md): a leaf gang the PodGroup cycle leaves
short of minCount in its domain is placed exactly there by schedule_group, and a composite whose children fail
in turn gets one joint exact model over its leaves (`TreePlacer._joint`, where that is exact). Every verdict is
made inside the tree's trials, where schedule_group records nothing; `TreePlacer.place` collects those behind
the tree's final results and `CompositeCycles.cycle` records them, once per real root cycle.
"""

from __future__ import annotations

import time
from collections.abc import Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, TypedDict

import numpy as np

from phalanx.api.objects import CompositePodGroup, Pod, PodGroup
from phalanx.cluster.state import ClusterState
from phalanx.scheduler.cycle import PodCycle
from phalanx.scheduler.decisions import PreemptorKind
from phalanx.scheduler.gang import GroupOutcome, schedule_group
from phalanx.scheduler.placement import exact
from phalanx.scheduler.placement.forest import MAX_TREE_DEPTH, Forest, TreeNode, depth, ready, walk
from phalanx.scheduler.placement.topology import (
    NODE_RESOURCES_FIT,
    POD_GROUP_PODS_COUNT,
    Domain,
    PlacementError,
    TopologyPlacer,
    fit_score,
    generate_placements,
    pods_count_scores,
)
from phalanx.scheduler.preemption import Outcome, Preemptor
from phalanx.scheduler.profiles import Profile
from phalanx.scheduler.queue import SchedulingQueue
from phalanx.scheduler.running import RunningPods

COMPOSITE = "composite:"  # queue entries of CompositePodGroup roots
UNSCHEDULABLE = "pod group is unschedulable"  # errPodGroupUnschedulable
Status = Literal["success", "unschedulable", "error"]


@dataclass(slots=True)
class NodeResult:
    """A node's algorithm result: its status and message; a leaf's group outcome and the wall seconds its
    placement took (greedy cycle and exact placement, every placement of its own topology tried)."""

    status: Status
    message: str = ""
    any_placed: bool = False
    outcome: GroupOutcome | None = None
    seconds: float = 0.0
    # A composite's joint exact placement over its leaves (`TreePlacer._joint`): its verdict and wall seconds.
    joint: tuple[exact.Verdict, float] | None = None


# A node's algorithm: yields (child, results) for each child it needs placed, receives the child's result, and
# returns its own (TreePlacer._drive runs it).
Steps = Generator[tuple["TreeNode", dict[str, NodeResult]], NodeResult, NodeResult]


class TreePlacer:
    """runRootSchedulingAlgorithm for a CompositePodGroup root on one PodCycle; results by node key."""

    def __init__(self, cycle: PodCycle, placer: TopologyPlacer, pending: Mapping[str, Sequence[Pod]],
                 running: Mapping[str, int], scheduled: Mapping[str, Sequence[tuple[str, int]]]) -> None:
        self.cycle = cycle
        self.placer = placer
        self.pending = pending
        self.running = running
        self.scheduled = scheduled
        self.results: dict[str, NodeResult] = {}
        # Exact placement's verdicts behind the final results: (leaf key, verdict, seconds), set by `place`.
        self.exact_decisions: list[tuple[str, exact.Verdict, float]] = []

    def place(self, root: TreeNode) -> NodeResult:
        """Place the tree; placed pods of successful leaves stay reserved when the root succeeds."""
        with self.cycle.cluster.trial() as trial:
            result = self._drive(self._node(root, self.results))
            if result.status == "success" and not result.any_placed:
                result.status, result.message = "unschedulable", f"composite pod group {root.key}: {UNSCHEDULABLE}"
            if result.status == "success":
                trial.keep()
        self._complete(root, NodeResult("success"))
        self.exact_decisions = self._exact_decisions(root)
        return result

    def _drive(self, steps: Steps) -> NodeResult:
        """Run a node's algorithm and, on a stack, the algorithms of the children it asks for: each child's
        result is sent back to its parent and its exception thrown into it, so that the parent's trials end
        as they would in a recursion."""
        stack = [steps]
        answer: NodeResult | None = None
        failure: BaseException | None = None
        while True:
            top = stack[-1]
            try:
                if failure is not None:
                    thrown, failure = failure, None
                    child, results = top.throw(thrown)
                else:
                    child, results = next(top) if answer is None else top.send(answer)
            except StopIteration as done:
                stack.pop()
                result: NodeResult = done.value
                if not stack:
                    return result
                answer = result
                continue
            except BaseException as exc:
                stack.pop()
                if not stack:
                    raise
                failure = exc
                continue
            stack.append(self._node(child, results))
            answer = None

    def _exact_decisions(self, root: TreeNode) -> list[tuple[str, exact.Verdict, float]]:
        """What exact placement decided for the leaves as the tree's results stand (`_complete` done).

        Every leaf runs inside the tree's trials, where schedule_group records nothing (it cannot tell a
        domain tried from a preemption dry run), and a leaf may be placed once per domain its ancestors try.
        Only the results finally kept count: the chosen domain's (or, when none is feasible, the first one's,
        whose messages the pods carry). A leaf that succeeded under a failed parent took the parent's result
        (no outcome) and binds nothing, so its verdict is left out too. The caller records these in a real
        root cycle only (`CompositeCycles.cycle`), never in the preemption's dry run."""
        found: list[tuple[str, exact.Verdict, float]] = []
        for node in walk(root):
            result = self.results.get(node.key)
            if result is None:
                continue
            if result.outcome is not None and result.outcome.exact is not None:
                found.append((node.key, result.outcome.exact, result.seconds))
            if result.joint is not None:
                found.append((node.key, *result.joint))
        return found

    def _complete(self, root: TreeNode, top: NodeResult) -> None:
        """completeCompositePodGroupAlgorithmResultMap: a parent's failure replaces its children's success,
        and a child never tried takes its parent's status."""
        stack = [(root, top)]
        while stack:
            node, parent = stack.pop()
            own = self.results.get(node.key)
            if own is None or (parent.status != "success" and own.status == "success"):
                own = self.results[node.key] = NodeResult(parent.status, parent.message)
            stack.extend((child, own) for child in node.children)

    def _node(self, node: TreeNode, results: dict[str, NodeResult]) -> Steps:
        """A node's algorithm. Its children's are asked for by yielding them (`_drive` runs them), so that a
        tree of any depth places without recursion."""
        if node.group is not None:
            result = self._leaf(node.group)
        else:
            result = yield from self._composite(node, results)
        results[node.key] = result
        return result

    def _leaf(self, group: PodGroup) -> NodeResult:
        """A leaf placed as a PodGroup in the parent's domain: with the profile's exact placement on, a gang
        the greedy cycle leaves short of minCount is placed exactly within the domain (schedule_group)."""
        start = time.perf_counter()
        result = self._place_leaf(group)
        result.seconds = time.perf_counter() - start
        return result

    def _place_leaf(self, group: PodGroup) -> NodeResult:
        pending, running = self.pending.get(group.key, ()), self.running.get(group.key, 0)
        if group.topology_key is not None:
            found = self.placer.schedule(self.cycle, group, pending, running, self.scheduled.get(group.key, ()),
                                         inner=True)
            if found.error is not None:
                return NodeResult("error", found.outcome.message or found.error, outcome=found.outcome)
            outcome = found.outcome
        else:
            outcome = schedule_group(self.cycle, group, pending, running, inner=True)
        if not outcome.success:
            return NodeResult("unschedulable", outcome.message or f"pod group {group.key}: {UNSCHEDULABLE}",
                              outcome=outcome)
        return NodeResult("success", outcome.message or "", any_placed=bool(outcome.placed), outcome=outcome)

    def _subtree_scheduled(self, node: TreeNode) -> list[tuple[str, int]]:
        return [pair for leaf in node.leaves() for pair in self.scheduled.get(leaf.key, ())]

    def _composite(self, node: TreeNode, results: dict[str, NodeResult]) -> Steps:
        """compositePodGroupSchedulingPlacementAlgorithm: each placement tried, the best assumed again."""
        composite = node.composite
        assert composite is not None
        if composite.topology_key is None:  # one placement, the parent's: tried and kept as it is
            return (yield from self._children(node, results))
        key = composite.topology_key
        try:
            domains = generate_placements(self.cycle.cluster, key, self._subtree_scheduled(node),
                                          self.cycle.confinement)
        except PlacementError as exc:
            return NodeResult("error", f"composite pod group {node.key}: cannot determine domain for already "
                                       f"scheduled pods: {exc}")
        if not domains:
            return NodeResult("unschedulable", f"composite pod group {node.key}: no feasible placements found")
        tried: list[tuple[Domain, NodeResult, dict[str, NodeResult]]] = []
        for domain in domains:
            sub: dict[str, NodeResult] = {}
            with self.cycle.cluster.trial(), self.cycle.confined(domain.nodes):  # never kept
                result = yield from self._children(node, sub)
            if result.status == "error":
                results.update(sub)
                return result
            tried.append((domain, result, sub))
        feasible = [(d, r, s) for d, r, s in tried if r.status == "success"]
        if not feasible:
            first_domain, first, sub = tried[0]
            results.update(sub)
            return NodeResult("unschedulable", f"composite pod group {node.key}: 0/{len(domains)} placements are "
                                               f"available ({key}), first placement {first_domain.name}: "
                                               f"{first.message.removeprefix(f'composite pod group {node.key}: ')}",
                              joint=first.joint)
        chosen = 0 if len(feasible) == 1 else self._best(node, feasible)
        domain, result, sub = feasible[chosen]
        results.update(sub)
        for pod, where in self._placed_below(node, sub):  # assumeSubtreeWithRevert
            self.cycle.reserve(pod, where)
        return result

    def _best(self, node: TreeNode, feasible: Sequence[tuple[Domain, NodeResult, dict[str, NodeResult]]]) -> int:
        """findBestCompositePodGroupPlacement: the placement scores of the subtree's placed pods."""
        placed = [[pod for pod, _ in self._placed_below(node, sub)] for _, _, sub in feasible]
        totals = [0] * len(feasible)
        weight = self.placer.weights.get(NODE_RESOURCES_FIT, 0)
        if weight:
            for i, ((domain, _, _), pods) in enumerate(zip(feasible, placed, strict=True)):
                totals[i] += weight * fit_score(self.cycle.cluster, domain.nodes, pods, self.placer.resources)
        weight = self.placer.weights.get(POD_GROUP_PODS_COUNT, 0)
        bound = len(self._subtree_scheduled(node))
        if weight and any(bound + len(pods) for pods in placed):
            counts = pods_count_scores([bound + len(pods) for pods in placed])
            totals = [total + weight * count for total, count in zip(totals, counts, strict=True)]
        best = [i for i, total in enumerate(totals) if total == max(totals)]
        tied = [(feasible[i][0], GroupOutcome(placed=[(p, 0) for p in placed[i]])) for i in best]
        return TopologyPlacer._tie_break(self.cycle, tied, best)

    @staticmethod
    def _placed_below(node: TreeNode, results: Mapping[str, NodeResult]) -> list[tuple[Pod, int]]:
        """successfulLeafResults: the placed pods of the leaves below a composite node whose every ancestor
        below `node` succeeded, from its children's results."""
        placed: list[tuple[Pod, int]] = []
        stack = list(reversed(node.children))
        while stack:
            each = stack.pop()
            result = results.get(each.key)
            if result is None or result.status != "success":
                continue
            if each.group is not None:
                placed.extend(result.outcome.placed if result.outcome is not None else ())
            else:
                stack.extend(reversed(each.children))
        return placed

    def _children(self, node: TreeNode, results: dict[str, NodeResult]) -> Steps:
        """compositePodGroupSchedulingDefaultAlgorithm: children in turn under the PlacementFeasible check."""
        assert node.composite is not None
        need, remaining, succeeded, any_placed = node.composite.min_group_count, len(node.children), 0, False
        if remaining < need:
            return NodeResult("unschedulable", f"composite pod group {node.key}: minGroupCount ({need}) cannot be "
                                               f"satisfied: 0 scheduled, {remaining} remaining")
        with self.cycle.cluster.trial() as trial:
            for child in node.children:
                result = yield child, results
                if result.status == "error":
                    return NodeResult("error", f"composite pod group {node.key}: composite pod group evaluation "
                                               f"failed due to child error: {result.message}")
                any_placed |= result.any_placed
                remaining -= 1
                succeeded += result.status == "success"
                if remaining + succeeded < need:
                    break
            if succeeded >= need:
                trial.keep()
                return NodeResult("success", any_placed=any_placed)
        verb = "cannot be satisfied" if remaining + succeeded < need else "is not yet satisfied"
        failed = NodeResult("unschedulable", f"composite pod group {node.key}: minGroupCount ({need}) {verb}: "
                                             f"{succeeded} scheduled, {remaining} remaining")
        return self._joint(node, results, failed)

    def _joint(self, node: TreeNode, results: dict[str, NodeResult], failed: NodeResult) -> NodeResult:
        """Exact placement of a composite's leaves together (the profile's exact placement), when the children
        in turn failed: one model over the members every leaf needs, in the composite's domain as it was
        before its children were tried. The composite's result, or `failed` (its message extended with the
        joint verdict, when the model ran) when there is no such placement.

        Exact only where it applies as a whole: two children or more (a single leaf had its own exact
        placement), every child a gang leaf without a topology constraint of its own, all of them needed
        (minGroupCount = children), each needing at least one more pod and either all its pending pods or
        some of its pods of one shape (the first ones then, which loses nothing), no member with rules between
        pods, and one room held for nominated pods against all of them. Then a placement of the model's
        members is exactly a success of every leaf, hence of the composite; members beyond what a leaf needs
        are left for a later cycle."""
        settings = self.cycle.profile.exact_placement
        composite = node.composite
        assert composite is not None
        if settings is None or len(node.children) < 2 or composite.min_group_count != len(node.children):
            return failed  # one child: its own exact placement (schedule_group) has decided already
        chosen: list[tuple[PodGroup, list[Pod]]] = []
        for child in node.children:
            group = child.group
            if group is None or not group.is_gang or group.topology_key is not None:
                return failed
            pending = list(self.pending.get(group.key, ()))
            need = group.min_count - self.running.get(group.key, 0)
            if need < 1 or need > len(pending) or not exact.applicable(pending) or (
                    need < len(pending) and len({exact.shape(pod) for pod in pending}) > 1):
                return failed
            chosen.append((group, pending[:need]))
        members = [pod for _, pods in chosen for pod in pods]
        rooms = [exact.held_room(self.cycle, pods[0]) for _, pods in chosen]  # by each leaf's priority
        room = rooms[0]
        if any(other is not room and (other is None or room is None or not np.array_equal(other, room))
               for other in rooms):
            return failed
        start = time.perf_counter()
        with self.cycle.cluster.trial() as trial:
            found = exact.plan(self.cycle, members, len(members), settings)
            verdict, why = found.verdict, ""
            if verdict == exact.PLACED:
                refused = exact.seat(self.cycle, found.assignment, room)
                if refused is None:
                    trial.keep()
                    where = {pod.key: n for pod, n in found.assignment}
                    for group, pods in chosen:
                        placed = [(pod, where[pod.key]) for pod in pods]
                        left = {pod.key: (f"exact placement of composite pod group {node.key} placed the "
                                          f"{len(pods)} pod(s) pod group {group.key} needs; this one waits")
                                for pod in self.pending.get(group.key, ()) if pod.key not in where}
                        outcome = GroupOutcome(placed=placed, failures=left, success=True)
                        if left:
                            outcome.message = (f"pod group {group.key}: {len(left)} more pod(s) could not be "
                                               f"placed; {next(iter(left.values()))}")
                        results[group.key] = NodeResult("success", outcome.message or "", any_placed=True,
                                                        outcome=outcome)
                    return NodeResult("success", any_placed=True,
                                      joint=(exact.PLACED, time.perf_counter() - start))
                verdict, why = exact.UNDECIDED, f"its placement failed the filters ({refused})"
        if verdict == exact.INFEASIBLE:
            why = f"no placement of its leaves' {len(members)} pod(s) together exists on the nodes their filters allow"
        elif not why:
            why = f"no placement of its leaves together found within its budget of {settings.budget:g}s"
        failed.message += f". Exact placement: {why}."
        failed.joint = (verdict, time.perf_counter() - start)
        return failed


class TreeScheduler(Protocol):
    """What the composite cycle reads and does of the Scheduler that runs it (scheduler.py's Scheduler): its
    books, and the steps of a PodGroup cycle that a tree's leaves take as a root PodGroup would."""

    @property
    def profile(self) -> Profile: ...
    @property
    def cluster(self) -> ClusterState: ...
    @property
    def cycle(self) -> PodCycle: ...
    @property
    def placer(self) -> TopologyPlacer | None: ...
    @property
    def queue(self) -> SchedulingQueue: ...
    @property
    def running(self) -> RunningPods: ...
    @property
    def preemptor(self) -> Preemptor: ...
    @property
    def pods(self) -> Mapping[str, Pod]: ...
    @property
    def groups(self) -> Mapping[str, PodGroup]: ...
    @property
    def members(self) -> Mapping[str, set[str]]: ...
    @property
    def gated(self) -> dict[str, str]: ...  # group key -> why PreEnqueue holds its members
    @property
    def messages(self) -> dict[str, str]: ...

    def pending_members(self, group_key: str) -> list[Pod]: ...
    def running_pods(self, group_key: str) -> list[Pod]: ...
    def running_members(self, group_key: str) -> int: ...
    def scheduled_members(self, group_key: str) -> list[tuple[str, int]]: ...
    def bind_member(self, pod: Pod, node: int, group_key: str, now: float) -> None: ...
    def unschedulable(self, pod: Pod, message: str) -> None: ...
    def condition(self, group: PodGroup, status: bool, reason: str, message: str) -> None: ...
    def clear_nominations(self, pods: Sequence[Pod]) -> None: ...
    def preempt(self, preemptor: str, group: bool, outcome: Outcome, who: str,
                kind: PreemptorKind | None = None) -> None: ...


class CompositeCycles:
    """The Scheduler's side of CompositePodGroup trees: PreEnqueue over the hierarchy and the root cycle."""

    def __init__(self, scheduler: TreeScheduler) -> None:
        self.s = scheduler
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

    def entry(self, group_key: str) -> str | None:
        """The queue entry of the root over PodGroup `group_key` when it has a parent (None: no root)."""
        group = self.s.groups.get(group_key)
        assert group is not None and group.parent is not None
        root, _ = self.root_of_group(group)
        return COMPOSITE + root if root is not None else None

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
            self.s.queue.add(COMPOSITE + root, composite.priority or 0,
                             min(composite.arrival, *(p.arrival for p in pending)))

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
        assert s.placer is not None
        placer = TreePlacer(s.cycle, s.placer, pending, {leaf.key: s.running_members(leaf.key) for leaf in leaves},
                            {leaf.key: s.scheduled_members(leaf.key) for leaf in leaves})
        result = placer.place(tree)
        if not s.cluster.journaling:  # a real root cycle: its leaves' exact verdicts, once each
            for leaf_key, verdict, seconds in placer.exact_decisions:
                exact.decisions(s.cluster).add(leaf_key, verdict, seconds)
        if result.status != "success":
            reason = "SchedulerError" if result.status == "error" else "Unschedulable"
            self._fail(root_key, leaves, pending, placer.results, result.message, reason, entry, now)
            if result.status == "unschedulable":
                self._preempt(root, tree, leaves, pending)
            else:
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

    def _leaf_failed(self, leaf: PodGroup, pending: Sequence[Pod], own: NodeResult, reason: str) -> None:
        s = self.s
        failures = own.outcome.failures if own.outcome is not None else {}
        for pod in pending:
            s.unschedulable(pod, failures.get(pod.key, own.message))
        s.condition(leaf, False, reason, own.message)

    def _fail(self, root_key: str, leaves: Sequence[PodGroup], pending: Mapping[str, Sequence[Pod]],
              results: Mapping[str, NodeResult], message: str, reason: str, entry: str, now: float) -> None:
        """Nothing of the tree binds: every leaf's pods wait with its (or the root's) message."""
        s = self.s
        for leaf in leaves:
            own = results.get(leaf.key, NodeResult("error" if reason == "SchedulerError" else "unschedulable",
                                                   message))
            self._leaf_failed(leaf, pending[leaf.key], own, reason)
        s.messages[COMPOSITE + root_key] = message
        s.queue.failed(entry, now, size=sum(len(pods) for pods in pending.values()))

    # --- workload-aware preemption for the tree -----------------------------------------------------------

    def _preempt(self, root: CompositePodGroup, tree: TreeNode, leaves: Sequence[PodGroup],
                 pending: Mapping[str, Sequence[Pod]]) -> None:
        """The PodGroupPostFilter at the root (podGroupCycle calls RunPodGroupPostFilterPlugins when the root is
        Unschedulable; DefaultPreemption's PodGroupEvaluator.Preempt): the preemptor is the whole tree, at the
        root's priority, with the root's preemption policy; its scheduling function runs the tree's placement
        again (runRootSchedulingAlgorithm) with every lower-priority victim removed. Victims are evicted and
        the pods that placement placed are nominated; with no way to place the tree, nothing is preempted and
        the tree's nominations are cleared."""
        s = self.s
        pods = [pod for leaf in leaves for pod in pending[leaf.key]]
        priority = root.priority or 0
        if self._never(root, pods):  # preemptorEligibleToPreemptOthers
            s.clear_nominations(pods)
            return
        if self._ongoing(leaves, priority):  # isOngoingPreemption: keep waiting on the current nominations
            return
        assert s.placer is not None
        placer, running = s.placer, {leaf.key: s.running_members(leaf.key) for leaf in leaves}
        scheduled = {leaf.key: s.scheduled_members(leaf.key) for leaf in leaves}

        def place() -> list[tuple[Pod, int]] | None:
            """The root's scheduling function, on the preemption's trial: the pods of the leaves that
            succeed, None when the root fails."""
            trees = TreePlacer(s.cycle, placer, pending, running, scheduled)
            if trees.place(tree).status != "success":
                return None
            return [pair for leaf in leaves for pair in _placed_by(trees.results.get(leaf.key))]

        outcome = s.preemptor.for_tree(priority, place, pods[0]) if pods else None
        if outcome is None:
            s.clear_nominations(pods)
            return
        s.preempt(root.key, True, outcome, f"composite pod group {root.key}", "compositepodgroup")

    def _never(self, root: CompositePodGroup, pods: Sequence[Pod]) -> bool:
        """resolveCompositePreemptionPolicy: with PodGroupPreemptionPolicy on, the root's own policy
        (PreemptLowerPriority when unset); with it off, Never as soon as one pending pod says Never."""
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


def tree_notes(groups: Sequence[PodGroup], composites: Sequence[CompositePodGroup]) -> list[str]:
    """What kube-scheduler v1.37.2 leaves unchecked in the given trees, one line each: cycles, missing
    parents and roots out of the hierarchy walk's reach (the members never queue), trees deeper than 4
    levels and trees spanning several Workloads (scheduled as any other tree; the API's `Invalid` reason is
    never set)."""
    forest = Forest()
    for composite in composites:
        forest.add(composite)
    for group in groups:
        forest.add_group(group)
    notes: list[str] = []
    orphans = sorted({why for group in groups if group.parent is not None
                      for root, why in [forest.hierarchy_root(f"{group.namespace}/{group.parent}")] if root is None})
    notes.extend(f"PodGroup members will wait: {why}" for why in orphans)
    for composite in composites:
        if composite.parent is not None:
            continue
        tree = forest.tree(composite.key)
        levels = depth(tree)
        if levels > MAX_TREE_DEPTH:
            notes.append(f"CompositePodGroup {composite.key}: its tree is {levels} levels deep (more than "
                         f"{MAX_TREE_DEPTH}); kube-scheduler v1.37.2 schedules it anyway (but for leaves more than "
                         f"{MAX_TREE_DEPTH + 1} levels down: their root is out of its reach)")
        names = {obj.workload_name for obj in _objects(tree) if obj.workload_name}
        if len(names) > 1:
            notes.append(f"CompositePodGroup {composite.key}: its tree names {len(names)} Workloads "
                         f"({', '.join(sorted(names))}); kube-scheduler v1.37.2 schedules it anyway")
    return notes


def _objects(node: TreeNode) -> Iterator[PodGroup | CompositePodGroup]:
    for each in walk(node):
        if each.group is not None:
            yield each.group
        if each.composite is not None:
            yield each.composite


class CompositeReport(TypedDict):
    """The report's `compositePodGroups` block."""

    compositePodGroups: int
    podGroupsWithParent: int
    scheduled: bool
    notes: list[str]


def composite_report(groups: Sequence[PodGroup], composites: Sequence[CompositePodGroup], *, scheduled: bool,
                     topology_aware: bool, gang: bool) -> CompositeReport | None:
    """For the report: the trees in the input, whether the profile schedules them, and a line for each thing
    that leaves out (None without CompositePodGroups or parent links)."""
    children = [group for group in groups if group.parent is not None]
    if not composites and not children:
        return None
    notes: list[str] = []
    if not scheduled:
        missing = [gate for gate, on in (("GenericWorkload", gang), ("TopologyAwareWorkloadScheduling",
                                                                     topology_aware), ("CompositePodGroup", False))
                   if not on]
        notes.append(f"{len(composites)} CompositePodGroup(s) and the parentCompositePodGroupName of {len(children)} "
                     f"PodGroup(s) have no effect: the CompositePodGroup gate needs {', '.join(missing)} on (alpha "
                     "and off by default in v1.37.2); each PodGroup is scheduled on its own")
    else:
        notes.extend(tree_notes(groups, composites))
    return {"compositePodGroups": len(composites), "podGroupsWithParent": len(children), "scheduled": scheduled,
            "notes": notes}
