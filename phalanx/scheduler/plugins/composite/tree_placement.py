"""runRootSchedulingAlgorithm for a CompositePodGroup root (KEP-6012, schedule_one_podgroup.go): the tree's
placement, walked top-down, as kube-scheduler v1.37.2 places it with the CompositePodGroup gate on.

runRootSchedulingAlgorithm walks the tree top-down:
- a CompositePodGroup (compositePodGroupSchedulingPlacementAlgorithm) gets its placements: with
  `schedulingConstraints.topology` one per value of the label among its parent's nodes (only the domain of
  its subtree's bound pods when there are any), else its parent's placement. In each it runs
  compositePodGroupSchedulingDefaultAlgorithm: the children in turn, each confined to the placement, each
  seeing the earlier siblings' assumed pods, no backtracking; the GangScheduling PlacementFeasible check stops
  early once `remaining + succeeded < minGroupCount` and the node succeeds when `succeeded ≥ minGroupCount`.
  Of several feasible placements the best by PlacementScore (NodeResourcesFit MostAllocated over the
  placement with the subtree's placed pods, PodGroupPodsCount over the subtree) is assumed again;
- a PodGroup is placed as a root one is (the topology plugin's search with its own topology key, within its parent's
  placement), except that it succeeds once bound + placed pods reach minCount, even with nothing placed
  (podGroupSchedulingDefaultAlgorithm: only the root must place a pod).
- The root fails when it succeeds without placing a pod ("pod group is unschedulable").
Statuses then flow down (completeCompositePodGroupAlgorithmResultMap): a child that succeeded under a parent
that failed takes the parent's failure, and leaves never tried take their parent's status. Every leaf PodGroup
gets PodGroupInitiallyScheduled from its own status (submitPodGroupAlgorithmResult); the pods of successful
leaves under successful ancestors bind, all others are unschedulable.

Exact placement (the `phalanx` profile; not upstream, docs/composite.md): a leaf gang the PodGroup cycle leaves
short of minCount in its domain is placed exactly there by schedule_group, and a composite whose children fail
in turn gets one joint exact model over its leaves (`TreePlacer._joint`, where that is exact). Every verdict is
made inside the tree's trials, where schedule_group records nothing; `TreePlacer.place` collects those behind
the tree's final results and `CompositeCycles.cycle` records them, once per real root cycle.
"""

from __future__ import annotations

import time
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from phalanx.api.objects import Pod, PodGroup
from phalanx.scheduler.cycle import PodCycle
from phalanx.scheduler.gang import GroupOutcome, schedule_group, with_note
from phalanx.scheduler.group_framework import Domain
from phalanx.scheduler.group_status import GroupStatus, placements_failed
from phalanx.scheduler.placement import exact
from phalanx.scheduler.plugins.composite.forest import TreeNode, walk
from phalanx.scheduler.plugins.topology.placements import PlacementError, generate_placements
from phalanx.scheduler.plugins.topology.topology_placement import TopologyPlacer

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
    # A failed node's status as kube-scheduler holds it (group_status.py); `message` is its message (with exact
    # placement's verdict after it, where that ran).
    said: GroupStatus | None = None
    note: str | None = None  # exact placement's verdict, in Phalanx's words

    @classmethod
    def failed(cls, said: GroupStatus, **kw: Any) -> NodeResult:
        return cls("unschedulable", said.message, said=said, **kw)


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
                # The framework needs a pod placed: a success without one is errPodGroupUnschedulable.
                result.said = GroupStatus(unschedulable=True)
                result.status, result.message = "unschedulable", result.said.message
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
                own = self.results[node.key] = NodeResult(parent.status, parent.message, said=parent.said,
                                                                note=parent.note)
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
            if not outcome.success:  # the placement algorithm's one placement, the parent's (CPG needs TAS on)
                outcome.status = placements_failed(1, outcome.status or GroupStatus(unschedulable=True))
        if not outcome.success:
            said = outcome.status or GroupStatus(unschedulable=True)
            result = NodeResult.failed(said, outcome=outcome, note=outcome.note)
            if outcome.note:
                result.message = with_note(result.message, outcome.note)
            return result
        return NodeResult("success", outcome.message or "", any_placed=bool(outcome.placed), outcome=outcome)

    def _subtree_scheduled(self, node: TreeNode) -> list[tuple[str, int]]:
        return [pair for leaf in node.leaves() for pair in self.scheduled.get(leaf.key, ())]

    def _composite(self, node: TreeNode, results: dict[str, NodeResult]) -> Steps:
        """compositePodGroupSchedulingPlacementAlgorithm: each placement tried, the best assumed again."""
        composite = node.composite
        assert composite is not None
        if composite.topology_key is None:  # one placement, the parent's: tried and kept as it is
            result = yield from self._children(node, results)
            if result.status == "unschedulable" and result.said is not None:
                result.said = placements_failed(1, result.said)
                result.message = with_note(result.said.message, result.note)
            return result
        key = composite.topology_key
        try:
            domains = generate_placements(self.cycle.cluster, key, self._subtree_scheduled(node),
                                          self.cycle.confinement)
        except PlacementError as exc:
            return NodeResult("error", str(exc))  # its words: "cannot determine domain for already scheduled pods: …"
        if not domains:
            return NodeResult.failed(GroupStatus(("no feasible placements found",)))
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
            _, first, sub = tried[0]
            results.update(sub)
            failed = NodeResult.failed(placements_failed(len(domains), first.said or GroupStatus(unschedulable=True)),
                                       joint=first.joint, note=first.note)
            failed.message = with_note(failed.message, first.note)
            return failed
        chosen = 0 if len(feasible) == 1 else self._best(node, feasible)
        domain, result, sub = feasible[chosen]
        results.update(sub)
        for pod, where in self._placed_below(node, sub):  # assumeSubtreeWithRevert
            self.cycle.reserve(pod, where)
        return result

    def _best(self, node: TreeNode, feasible: Sequence[tuple[Domain, NodeResult, dict[str, NodeResult]]]) -> int:
        """findBestCompositePodGroupPlacement: the placement scores of the subtree's placed pods."""
        placed = [[pod for pod, _ in self._placed_below(node, sub)] for _, _, sub in feasible]
        totals = self.placer.score(self.cycle.cluster, [domain for domain, _, _ in feasible], placed,
                                   len(self._subtree_scheduled(node)))
        best = [i for i, total in enumerate(totals) if total == max(totals)]
        tied = [(feasible[i][0], GroupOutcome(placed=[(p, 0) for p in placed[i]])) for i in best]
        return self.placer.tie_break(self.cycle, tied, best)

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
        if remaining < need:  # GangScheduling.PlacementFeasible's words, minGroupCount as its minCount
            return NodeResult.failed(GroupStatus((f"minCount ({need}) cannot be satisfied: 0 scheduled, "
                                                  f"{remaining} remaining",)))
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
        stopped = remaining + succeeded < need
        verb = "cannot be satisfied" if stopped else "is not yet satisfied"  # waiting ends as errPodGroupUnschedulable
        failed = NodeResult.failed(GroupStatus((f"minCount ({need}) {verb}: {succeeded} scheduled, {remaining} "
                                                f"remaining",), unschedulable=not stopped))
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
        failed.note = f"Exact placement: {why}."
        failed.message = with_note(failed.message, failed.note)
        failed.joint = (verdict, time.perf_counter() - start)
        return failed
