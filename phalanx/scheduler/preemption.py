"""Preemption: kube-scheduler's DefaultPreemption for one pod, and KEP-5710 workload-aware preemption.

Victims are *units*: a single pod, or every running member of a PodGroup with `disruptionMode: all`
(evicted together or not at all). A unit is more important (MoreImportantVictim) when it has a higher
priority, then, with GenericWorkload on, when it is a CompositePodGroup's subtree, then when its pods belong to
a PodGroup (`spec.schedulingGroup`, also a lone member of a `disruptionMode: single` group) rather than being
bare pods, then a larger unit (more running members), then an earlier start (`status.startTime` for pods
running in the input, the simulated bind time otherwise); equally important units are ordered by when they
were bound.

Members of a CompositePodGroup tree (gate on; framework/preemption util.go GetPodPriority, types.go
getHighestAllAncestor and getCrossNodesVictims): a member's priority as a victim is its root's (RunningPods holds
its PodGroup's: where the two differ the room estimates are corrected and its node goes one unit at a time),
and the highest PodGroup or CompositePodGroup above it with `disruptionMode: all` makes one unit of every running
pod below it. This holds for every preemptor: a pod, a PodGroup, a tree.

One pod (PostFilter): the potential nodes are those whose failure some eviction could fix (not
UnschedulableAndUnresolvable). They are visited from a random offset; a node is a candidate when removing
every lower-priority unit makes room (a vector test over all nodes first). On each candidate every
lower-priority unit is removed, then units are reprieved, PDB-violating ones first and the most important
first, as long as the pod still fits. Candidates are collected until at least one violates no PDB and
there are enough of them (10% of the potential nodes, at least 100). The node is chosen by fewest PDB
violations, lowest highest-victim priority, lowest priority sum, fewest victims, latest start of the
highest-priority victims, then candidate order (non-violating candidates first). The rules between pods (spread,
pod affinity) are checked as RunFilterPluginsWithNominatedPods checks them: with the pods nominated to the node at
the preemptor's priority or higher counted there (their labels and terms; their room is held anyway), then
without them.

Room on a node counts, besides running pods, the pods of lower priority that earlier preemptions evicted
and that are still terminating (they will be gone: they are not chosen again), less the room promised to
preemptors of at least this priority that are nominated there (the pod's own nomination excluded). A node
that has enough room without evicting anything more is a candidate without victims and wins.

Victims are selected on hundreds of candidate nodes at once: `RunningPods` keeps each node's running pods
in a slot table sorted by importance, the candidates' tables are gathered into one padded array, and
reprieve step k is done for every node together. A node where a lower-priority pod belongs to a
`disruptionMode: all` group or is selected by a PodDisruptionBudget goes through the same rules one unit at
a time (`vectorised = False` sends every node that way; tests check both give the same outcome).

Devices (DRA claims), as v1.37.2: a node DynamicResources rejects is UnschedulableAndUnresolvable and no
potential node, and since the plugin has no `PreFilterExtensions` (its allocator reads the claim tracker,
not the snapshot) removing victims frees none of their devices: a node that failed an earlier filter is a
candidate only where the pod's claims can be allocated with every victim's devices still held
(`SelectVictimsOnNode` runs the Filter pass after the removals). In the PodGroup dry run lifted victims keep
their claims (`DeviceState.keep`), so a gang short of devices preempts nothing. With the Phalanx extension
`preemptForDevices`, removing a victim releases its claims (a claim another remaining pod reserves stays
allocated), nodes short of devices go through the one-unit-at-a-time path on a trial, and a reprieve takes
back exactly the devices the unit held.

Unlike kube-scheduler, a pod that is already terminating is never listed as a victim again: its room
counts as freed, so a node where earlier evictions already make room is chosen without new victims.

A PodGroup (PodGroupPostFilter): the domain is the whole cluster. Every lower-priority unit is removed and
the group cycle runs on what is left (with the room of other nominated preemptors of at least its priority
held back); if it cannot place `minCount` members nothing is preempted. Otherwise, with the preemptor
assumed in place, units are reprieved (PDB-violating first, most important first) wherever all their pods
still fit on their nodes; the rest are the victims.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from phalanx.api.objects import CompositePodGroup, Pod, PodDisruptionBudget, PodGroup
from phalanx.cluster.devices import DeviceState, device_state
from phalanx.cluster.state import ClusterState, IntArray
from phalanx.scheduler.cycle import Lifted, PodCycle, reads_other_pods, required_anti
from phalanx.scheduler.framework import BoolArray
from phalanx.scheduler.gang import GroupOutcome, schedule_group
from phalanx.scheduler.group_status import NO_VICTIMS, UNSCHEDULABLE, GroupStatus, Refusal, placements_failed
from phalanx.scheduler.plugins.composite.forest import MAX_TREE_DEPTH, Forest
from phalanx.scheduler.plugins.dra.device_allocation import device_allocator
from phalanx.scheduler.plugins.dra.dynamic_resources import DynamicResources
from phalanx.scheduler.plugins.dra.post_filter import replay_post_filter
from phalanx.scheduler.running import RunningPods

FloatArray = npt.NDArray[np.float64]
MIN_CANDIDATE_NODES_PERCENTAGE = 10
MIN_CANDIDATE_NODES_ABSOLUTE = 100
PRIORITY_OFFSET = 2**31  # kube adds MaxInt32+1 so that priority sums stay positive
NO_VICTIM_PRIORITY = -(2**31) - 1  # below every pod priority: a node without victims is the best choice


@dataclass(frozen=True, slots=True)
class Unit:
    """Pods that are evicted together: one pod, or the running pods below a `disruptionMode: all` PodGroup or
    CompositePodGroup (the highest such ancestor of a tree member)."""

    pods: tuple[str, ...]
    priority: int
    group: str | None  # the `disruptionMode: all` PodGroup or CompositePodGroup evicted as one unit
    size: int
    start: float
    seq: int = 0  # bind order of its first pod: the last tie-break
    member: bool = False  # its pods have spec.schedulingGroup (GenericWorkload on): ranks above a bare pod
    composite: bool = False  # a CompositePodGroup's subtree: ranks above a PodGroup (victimRank)

    def importance(self) -> tuple[int, int, int, float, int]:
        """Sort key: the most important unit first (MoreImportantVictim: priority, then victimRank, CompositePodGroup
        3 > PodGroup or member pod 2 > bare pod 1, then size, then start)."""
        rank = 3 if self.composite else 2 if self.member else 1
        return (-self.priority, -rank, -self.size, self.start, self.seq)


@dataclass(slots=True)
class Outcome:
    victims: list[str] = field(default_factory=list)
    nominations: dict[str, str] = field(default_factory=dict)  # preemptor pod key -> node name
    node: str | None = None
    priority: int | None = None  # the preemptor's priority: who else must respect its nominations


def num_candidates(num_nodes: int) -> int:
    """DefaultPreemption's candidate count: 10% of nodes, at least 100, at most all."""
    count = num_nodes * MIN_CANDIDATE_NODES_PERCENTAGE // 100
    return min(max(count, MIN_CANDIDATE_NODES_ABSOLUTE), num_nodes)


def _scaled(value: int | str, total: int) -> int:
    """An int-or-percent against `total`, rounded up (the disruption controller's rounding)."""
    if isinstance(value, str):
        return math.ceil(int(value[:-1]) * total / 100)
    return value


class Budgets:
    """PodDisruptionBudgets' allowed disruptions, computed from the pods they select as the disruption
    controller does: healthy (running, not terminating) pods minus the desired healthy count, never below
    zero. The desired count is `minAvailable`, or the selected pods less `maxUnavailable`."""

    def __init__(self, pdbs: Sequence[PodDisruptionBudget], pods: Mapping[str, Pod], running: RunningPods) -> None:
        self.pdbs = list(pdbs)
        self.selects: dict[str, list[int]] = {}
        self.allowed: list[int] = []
        if not self.pdbs:
            return
        selected: list[list[str]] = [[] for _ in self.pdbs]
        for key, pod in pods.items():
            hits = [i for i, pdb in enumerate(self.pdbs) if matches(pdb, pod)]
            for i in hits:
                selected[i].append(key)
            if hits and pod.labels:  # kube-scheduler: a pod without labels matches no PDB
                self.selects[key] = hits
        for pdb, keys in zip(self.pdbs, selected, strict=True):
            healthy = sum(1 for key in keys if key in running.node_of and key not in running.terminating)
            expected = len(keys)
            if pdb.min_available is not None:
                desired = _scaled(pdb.min_available, expected)
            else:
                desired = expected - _scaled(pdb.max_unavailable or 0, expected)
            self.allowed.append(max(healthy - desired, 0))

    def split(self, units: Sequence[Unit]) -> tuple[list[Unit], list[Unit]]:
        """(violating, not violating), each in the given order; kube's filterPodsWithPDBViolation."""
        if not self.selects:
            return [], list(units)
        allowed = list(self.allowed)
        violating: list[Unit] = []
        fine: list[Unit] = []
        for unit in units:
            violates = False
            for key in unit.pods:
                for i in self.selects.get(key, ()):
                    allowed[i] -= 1
                    if allowed[i] < 0:
                        violates = True
            (violating if violates else fine).append(unit)
        return violating, fine


def matches(pdb: PodDisruptionBudget, pod: Pod) -> bool:
    """Whether the PDB selects the pod: same namespace, a non-empty selector that matches its labels."""
    empty = not pdb.selector.match_labels and not pdb.selector.expressions
    return pod.namespace == pdb.namespace and not empty and pdb.selector.matches(pod.labels)


@dataclass(slots=True)
class _Candidate:
    node: int
    victims: list[Unit]
    violations: int

    def pods(self) -> list[str]:
        return [key for unit in self.victims for key in unit.pods]


@dataclass(slots=True)
class _Batch:
    """Dry-run results for a batch of potential nodes, in visiting order."""

    nodes: IntArray
    candidate: BoolArray
    violations: IntArray
    top: IntArray       # highest victim priority (NO_VICTIM_PRIORITY without victims)
    total: IntArray     # Σ (priority + 2^31) over victims
    count: IntArray     # victims (pods)
    earliest: FloatArray  # earliest start among the highest-priority victims (inf without victims)
    victims: dict[int, list[str]]  # row -> victim pod keys, most important first (one-by-one rows)
    # Rows selected all at once, and which of their slots (in importance order) are victims: [slot, row].
    vector_rows: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    slot_victim: BoolArray = field(default_factory=lambda: np.zeros((0, 0), dtype=bool))

    def victims_of(self, row: int, running: RunningPods) -> list[str]:
        if row in self.victims:
            return self.victims[row]
        i = int(np.searchsorted(self.vector_rows, row))
        node = int(self.nodes[row])
        return [running.slot_key(node, int(s)) for s in np.flatnonzero(self.slot_victim[:, i])]


def _covers(room: IntArray, need: IntArray) -> BoolArray:
    """Where `room` (resources × nodes) covers `need` in every resource: one contiguous row at a time."""
    ok: BoolArray = room[0] >= need[0]
    for c in range(1, need.shape[0]):
        ok &= room[c] >= need[c]
    return ok


def _accept(batch: _Batch, good: int, bad: int, wanted: int) -> tuple[IntArray, int, int]:
    """DryRunPreemption's bookkeeping over a batch, in visiting order: non-violating and violating
    candidates are kept up to `wanted` each, and the run stops once there is a non-violating one and
    `wanted` in all. Returns the kept rows and the new counts."""
    if not batch.violations.any():  # the common case: no PDB in the way
        rows = np.flatnonzero(batch.candidate)[: max(wanted - good - bad, 1 if good == 0 else 0)]
        return rows, good + rows.size, bad
    clean = batch.candidate & (batch.violations == 0)
    dirty = batch.candidate & (batch.violations > 0)
    seen_clean = good + np.cumsum(clean)
    seen_dirty = bad + np.cumsum(dirty)
    keep = (clean & (seen_clean <= wanted)) | (dirty & (seen_dirty <= wanted))
    have_clean = np.minimum(seen_clean, wanted)
    have = have_clean + np.minimum(seen_dirty, wanted)
    done = np.flatnonzero(batch.candidate & (have_clean > 0) & (have >= wanted))
    if done.size:
        keep[done[0] + 1:] = False
        last = int(done[0])
    else:
        last = batch.candidate.size - 1
    if last < 0:
        return np.zeros(0, dtype=np.int64), good, bad
    return np.flatnonzero(keep), int(have_clean[last]), int(np.minimum(seen_dirty, wanted)[last])


def _pick(kept: Sequence[tuple[_Batch, IntArray]]) -> tuple[_Batch, int]:
    """pickOneNodeForPreemption over the kept candidates: fewest PDB violations, lowest highest-victim
    priority, lowest priority sum, fewest victims, latest start of the highest-priority victims, then
    candidate order (non-violating candidates first, each kind in visiting order)."""
    if len(kept) == 1 and not kept[0][0].violations.any():  # the common case: one batch, no PDB
        batch, rows = kept[0]
        order = np.lexsort((-batch.earliest[rows], batch.count[rows], batch.total[rows], batch.top[rows]))
        return batch, int(rows[order[0]])

    def joined(get: Callable[[_Batch, IntArray], npt.NDArray[Any]]) -> npt.NDArray[Any]:
        return np.concatenate([get(batch, rows) for batch, rows in kept])

    violations = joined(lambda b, r: b.violations[r])
    ranked = np.argsort(violations > 0, kind="stable")  # lexsort is stable: ties keep this order
    keys = [joined(get)[ranked] for get in (lambda b, r: -b.earliest[r], lambda b, r: b.count[r],
                                            lambda b, r: b.total[r], lambda b, r: b.top[r])]
    best = int(ranked[np.lexsort((*keys, violations[ranked]))[0]])
    which = np.concatenate([np.full(rows.size, i) for i, (_, rows) in enumerate(kept)])
    row_of = np.concatenate([rows for _, rows in kept])
    return kept[int(which[best])][0], int(row_of[best])


def _rank(batch: _Batch, row: int) -> tuple[int, int, int, int, float]:
    """What pickOneNodeForPreemption compares, in its order (lower is better)."""
    return (int(batch.violations[row]), int(batch.top[row]), int(batch.total[row]), int(batch.count[row]),
            -float(batch.earliest[row]))


def _hinted(kept: Sequence[tuple[_Batch, IntArray]], batch: _Batch, row: int,
            want: int | None) -> tuple[_Batch, int]:
    """The hinted node's candidate instead of the picked one, where the two rank equal."""
    if want is None:
        return batch, row
    for other, rows in kept:
        for r in rows.tolist():
            if int(other.nodes[r]) == want and _rank(other, r) == _rank(batch, row):
                return other, r
    return batch, row


def _key(running: RunningPods, pods: Sequence[str], priority_of: Callable[[str], int]) -> tuple[int, int, int, float]:
    """(top priority, priority sum, count, earliest start of the top-priority victims) of a victim list."""
    if not pods:
        return NO_VICTIM_PRIORITY, 0, 0, math.inf
    priorities = {k: priority_of(k) for k in pods}
    top = max(priorities.values())
    total = sum(p + PRIORITY_OFFSET for p in priorities.values())
    earliest = min(running.started[k] for k in pods if priorities[k] == top)
    return top, total, len(pods), earliest


class Preemptor:
    """Finds victims for a pod or a PodGroup; the Scheduler carries out the evictions."""

    def __init__(self, cycle: PodCycle, running: RunningPods, pods: Mapping[str, Pod],
                 groups: Mapping[str, PodGroup], members: Mapping[str, set[str]], gang: bool,
                 pdbs: Callable[[], Sequence[PodDisruptionBudget]], seed: int = 0) -> None:
        self.cycle = cycle
        self.cluster: ClusterState = cycle.cluster
        self.running = running
        self.pods = pods
        self.groups = groups
        self.members = members
        self.gang = gang
        self.pdbs = pdbs
        self.rng = np.random.default_rng(seed + 1)
        # Select victims on many nodes at once (False: one node at a time, the reference implementation).
        self.vectorised = True
        self._pdb_list: list[PodDisruptionBudget] = []
        self._pdb_ids: tuple[int, ...] = ()
        self._seen_groups: set[str] = set()
        self._seen_trees = 0
        # The CompositePodGroups (set by CompositeCycles when the profile schedules trees): a tree member's priority
        # as a victim is its root's, and a `disruptionMode: all` ancestor evicts everything below it.
        self.forest: Forest | None = None
        running.classify = self._special
        # Verification only (`phalanx verify`): the node the real scheduler preempted on, per preemptor, taken
        # when it ranks equal with Phalanx's pick (kube-scheduler visits candidates from a random offset).
        self.hints: Mapping[str, str] | None = None
        # Verification only: the pods the real scheduler evicted. Among victims that rank equal (priority,
        # start second, group membership) kube-scheduler's order is sort.Slice's, not a rule; these go last.
        self.victim_hints: AbstractSet[str] | None = None

    # --- which pods need one-by-one treatment ---------------------------------------------------------

    def _special(self, key: str) -> bool:
        """A pod whose eviction is not just its own (an `all` group or tree) or is bounded by a PDB, or whose
        priority as a victim is not the one RunningPods ranks it by (a tree member: its root's)."""
        if self._highest_all(key) is not None:
            return True
        if self._in_tree(key) and self.priority(key) != self.running.priority.get(key):
            return True
        pod = self.pods.get(key)
        return pod is not None and bool(pod.labels) and any(matches(pdb, pod) for pdb in self._pdb_list)

    def _refresh_special(self) -> None:
        """Re-mark running pods after PodDisruptionBudgets, PodGroups or CompositePodGroups appeared."""
        pdbs = list(self.pdbs())
        ids = tuple(id(pdb) for pdb in pdbs)
        trees = len(self.forest.composites) if self.forest is not None else 0
        if ids != self._pdb_ids or trees != self._seen_trees:
            self._pdb_list, self._pdb_ids, self._seen_trees = pdbs, ids, trees
            self._seen_groups = set(self.groups)
            keys = [k for k in self.running.node_of if k not in self.running.terminating]
            special = {k for k in keys if self._special(k)}
            self.running.set_special(special, True)
            self.running.set_special([k for k in keys if k not in special], False)
            return
        if len(self._seen_groups) != len(self.groups):
            for key in [k for k in self.groups if k not in self._seen_groups]:
                self._seen_groups.add(key)
                if self.gang and (self.groups[key].disruption_mode == "all" or self.groups[key].parent is not None):
                    self.running.set_special([k for k in self.members.get(key, ()) if self._special(k)], True)

    # --- a victim's entity: its priority and what is evicted with it -----------------------------------------

    def _ancestry(self, group_key: str) -> list[tuple[str, PodGroup | CompositePodGroup]]:
        """TraverseHierarchyUp (framework/preemption/util.go) from a PodGroup: the PodGroup, then each parent
        CompositePodGroup while it exists, at most WorkloadMaxTreeDepth levels and stopping at a loop. Only the
        PodGroup without the CompositePodGroup gate (`forest` None)."""
        group = self.groups.get(group_key)
        if group is None:
            return []
        chain: list[tuple[str, PodGroup | CompositePodGroup]] = [(group_key, group)]
        if self.forest is None:
            return chain
        seen = {group_key}
        parent = group.parent
        while parent is not None and len(chain) < MAX_TREE_DEPTH:
            key = f"{group.namespace}/{parent}"
            composite = self.forest.composites.get(key)
            if composite is None or "composite:" + key in seen:
                break
            seen.add("composite:" + key)
            chain.append((key, composite))
            parent = composite.parent
        return chain

    def priority(self, key: str) -> int:
        """A running pod's priority as a victim (GetPodPriority): the priority of the last object reached walking
        up from its PodGroup (its tree's root), its PodGroup's without the CompositePodGroup gate, its own without
        GenericWorkload. RunningPods holds the PodGroup's; only a tree member can differ."""
        if not self._in_tree(key):
            return self.running.priority[key]
        _, top = self._ancestry(self.pods[key].group_key or "")[-1]
        return top.priority if top.priority is not None else 0

    def _in_tree(self, key: str) -> bool:
        """Whether the pod is a member of a PodGroup under a CompositePodGroup (with the gate on)."""
        if self.forest is None or not self.gang:
            return False
        pod = self.pods.get(key)
        group = self.groups.get(pod.group_key) if pod is not None and pod.group_key is not None else None
        return group is not None and group.parent is not None

    def _mismatched(self) -> dict[str, int]:
        """Running tree members whose priority as a victim (their root's) differs from the one RunningPods holds
        for them (their PodGroup's), with that priority; empty without trees."""
        if self.forest is None or not self.gang or not self.forest.composites:
            return {}
        out: dict[str, int] = {}
        for group in self.groups.values():
            if group.parent is None:
                continue
            for key in self.members.get(group.key, ()):
                if key in self.running.node_of:
                    priority = self.priority(key)
                    if priority != self.running.priority[key]:
                        out[key] = priority
        return out

    def _highest_all(self, key: str) -> tuple[str, bool] | None:
        """getHighestAllAncestor (framework/preemption/types.go): the highest PodGroup or CompositePodGroup above
        the pod with `disruptionMode: all` (key, whether a CompositePodGroup), or None."""
        pod = self.pods.get(key)
        if not self.gang or pod is None or pod.group_key is None:
            return None
        found: tuple[str, bool] | None = None
        for at, obj in self._ancestry(pod.group_key):
            if obj.disruption_mode == "all":
                found = (at, isinstance(obj, CompositePodGroup))
        return found

    def _below(self, key: str, composite: bool) -> Iterable[str]:
        """The pods of every leaf PodGroup below a PodGroup or CompositePodGroup (helper.GetPodGroupStates)."""
        if not composite:
            return self.members.get(key, ())
        assert self.forest is not None
        return [k for leaf in self.forest.tree(key).leaves() for k in self.members.get(leaf.key, ())]

    def terminating_below(self, node: int, priority: int) -> bool:
        """Whether a pod of lower priority as a victim (its tree root's for a tree member) is still terminating
        on the node."""
        mismatched = self._mismatched()
        if not mismatched:
            return self.running.terminating_below(node, priority)
        running = self.running
        return any(running.node_of.get(k) == node and mismatched.get(k, running.priority[k]) < priority
                   for k in running.terminating)

    def _unit(self, key: str, seen: set[str]) -> Unit | None:
        """The victim a running pod belongs to (getCrossNodesVictims): the pod alone (NewPodVictim), or every running
        pod below its highest `disruptionMode: all` ancestor once (searchCrossNodesVictimPods), at the pod's
        priority as a victim."""
        running = self.running
        entity = self._highest_all(key)
        if entity is None:
            pod = self.pods.get(key)
            member = self.gang and pod is not None and pod.pod_group is not None
            return Unit((key,), self.priority(key), None, 1, running.started[key], running.seq[key], member)
        group, composite = entity
        if group in seen:
            return None
        seen.add(group)
        pods = tuple(sorted(k for k in self._below(group, composite) if k in running.node_of
                            and k not in running.terminating))
        priority = self.priority(key) if self._in_tree(key) else max(running.priority[k] for k in pods)
        return Unit(pods, priority, group, len(pods), min(running.started[k] for k in pods),
                    min(running.seq[k] for k in pods), True, composite)

    def units(self, keys: Iterable[str], below: int) -> list[Unit]:
        """Victim units among `keys` with a priority below `below`, the most important first."""
        seen: set[str] = set()
        out: list[Unit] = []
        for key in keys:
            if key in self.running.terminating or self.priority(key) >= below:
                continue
            unit = self._unit(key, seen)
            if unit is not None and unit.priority < below:
                out.append(unit)
        hinted = self.victim_hints
        if hinted is None:
            out.sort(key=Unit.importance)
        else:
            out.sort(key=lambda u: (*u.importance()[:-1], any(k in hinted for k in u.pods), u.seq))
        return out

    def _on_node(self, unit: Unit, node: int) -> IntArray:
        total = np.zeros(len(self.cluster.resources), dtype=np.int64)
        for key in unit.pods:
            if self.running.node_of.get(key) == node:
                total += self.running.requests(key)
        return total

    # --- one pod ----------------------------------------------------------------------------------------

    def eligible(self, pod: Pod, priority: int, nominated: str | None,
                 unresolvable: BoolArray | None = None) -> bool:
        """PodEligibleToPreemptOthers: not with `preemptionPolicy: Never`, and not while lower-priority
        victims are still terminating on the pod's nominated node (unless that node became unresolvable)."""
        if pod.preemption_policy == "Never":
            return False
        if nominated is not None and nominated in self.cluster.index:
            node = self.cluster.index[nominated]
            if unresolvable is not None and node < unresolvable.shape[0] and unresolvable[node]:
                return True
            if self.terminating_below(node, priority):
                return False  # its earlier victims are still terminating: wait for them
        return True

    def for_pod(self, pod: Pod, priority: int, unresolvable: BoolArray | None) -> Outcome | None:
        """DefaultPreemption's PostFilter for a pod that fits nowhere."""
        cluster = self.cluster
        n = len(cluster)
        if n == 0:
            return None
        self._refresh_special()
        demand = cluster.demand(pod)
        cols = list(demand.columns)
        need = demand.requests[cols]
        # Resources × nodes: room before evicting anything more, and with every lower-priority pod gone.
        everything = cols == list(range(len(cluster.resources)))
        base = self.running.pending_changes(priority, (pod.key,), out=cluster.free_by_resource.copy())
        room = self.running.removable_below(priority, out=base.copy())
        force = self._correct_for_trees(priority, base, room)
        if not everything:
            base, room = base[cols], room[cols]
        possible = _covers(room, need)
        devices = self._devices(pod)
        short: BoolArray | None = None  # nodes where only freed devices could serve the pod's claims
        if devices is not None:
            allocatable = devices.filter(self.cycle.cycle_state(pod), cluster)
            if not devices.frees_devices:
                possible &= allocatable  # v1.37.2: the dry run's Filter pass sees the victims' devices held
            elif not allocatable.all():
                short = ~allocatable
        offset = self.offset(unresolvable)
        if offset is None:
            return None
        first, candidates = offset
        if candidates < n:
            assert unresolvable is not None
            possible &= ~unresolvable
        wanted = num_candidates(candidates)
        nodes = np.flatnonzero(possible)
        if nodes.size == 0:
            return None
        split = int(np.searchsorted(nodes, first))
        if split:
            nodes = np.concatenate((nodes[split:], nodes[:split]))
        budgets: list[Budgets] = []  # built once, and only if a node needs it
        # A pod with rules between pods (spread, pod affinity) has them checked on each node with the victims
        # gone, one unit at a time, as SelectVictimsOnNode runs every filter.
        rules = pod if self.cycle.pod_rules(pod) else None
        # The pods nominated to a node count there for those rules too (RunFilterPluginsWithNominatedPods).
        nominated = self._nominated_pods(priority, pod.key)
        if nominated and any(p.placement.pod_affinity is not None for ps in nominated.values() for p in ps):
            rules = pod  # a nominated pod's anti-affinity may reject the preemptor

        def budget() -> Budgets:
            if not budgets:
                budgets.append(Budgets(self._pdb_list, self.pods, self.running))
            return budgets[0]

        # Dry runs, batch by batch in visiting order, until kube's stopping rule holds.
        kept: list[tuple[_Batch, IntArray]] = []  # (batch, accepted rows in order)
        good = bad = 0  # candidates without / with PDB violations (each capped at `wanted`)
        start = 0
        while start < nodes.size and not (good > 0 and good + bad >= wanted):
            size = max(wanted - good - bad, 16)
            batch = self._dry_run(nodes[start:start + size], cols, need, priority, base, budget, rules,
                                  (pod, short) if short is not None else None, force, nominated)
            start += size
            rows, good, bad = _accept(batch, good, bad, wanted)
            kept.append((batch, rows))
        if good + bad == 0:
            return None
        batch, row = _pick(kept)
        if self.hints is not None and pod.key in self.hints:
            batch, row = _hinted(kept, batch, row, cluster.index.get(self.hints[pod.key]))
        node = int(batch.nodes[row])
        return Outcome(victims=batch.victims_of(row, self.running), nominations={pod.key: cluster.names[node]},
                       node=cluster.names[node], priority=priority)

    def offset(self, unresolvable: BoolArray | None) -> tuple[int, int] | None:
        """Where `for_pod` starts visiting nodes: a random one among the potential nodes (those not
        UnschedulableAndUnresolvable), and how many potential nodes there are; None (and nothing drawn) when
        there are none. A failed attempt answered without its run draws it too, keeping the stream the same."""
        n = len(self.cluster)
        if n == 0:
            return None
        if unresolvable is not None and unresolvable.any():
            potential = np.flatnonzero(~unresolvable)
            if potential.size == 0:
                return None
            return int(potential[int(self.rng.integers(potential.size))]), int(potential.size)
        return int(self.rng.integers(n)), n

    def _devices(self, pod: Pod) -> DynamicResources | None:
        """The profile's DynamicResources filter when the pod has claims (None otherwise)."""
        if not pod.resource_claims:
            return None
        return next((f for f in self.cycle.filters if isinstance(f, DynamicResources)), None)

    def _correct_for_trees(self, priority: int, base: IntArray, room: IntArray) -> BoolArray | None:
        """RunningPods counts a tree member at its PodGroup's priority; as a victim it has its root's. Where the
        two fall on different sides of `priority`, move its requests into or out of `room` (running) or `base`
        and `room` (terminating), and return the nodes that hold such pods (they go one unit at a time), or None."""
        mismatched = self._mismatched()
        if not mismatched:
            return None
        running = self.running
        force = np.zeros(len(self.cluster), dtype=bool)
        for key, effective in mismatched.items():
            held = running.priority[key]
            if (held < priority) == (effective < priority):
                continue
            node = running.node_of[key]
            share = running.requests(key)
            sign = 1 if effective < priority else -1
            room[: share.shape[0], node] += sign * share
            if key in running.terminating:
                base[: share.shape[0], node] += sign * share
            force[node] = True
        return force if force.any() else None

    def _dry_run(self, nodes: IntArray, cols: list[int], need: IntArray, priority: int, base: IntArray,
                 budget: Callable[[], Budgets], rules: Pod | None = None,
                 claims: tuple[Pod, BoolArray] | None = None, force: BoolArray | None = None,
                 nominated: Mapping[int, Sequence[Pod]] | None = None) -> _Batch:
        """SelectVictimsOnNode for each of `nodes` (one node at a time when `rules`, the preemptor, has rules
        between pods to check; `claims`, the preemptor and the nodes where its claims need devices that only
        the victims can free (`preemptForDevices`), sends those nodes through `_select_freeing_devices`).
        Elsewhere the victims' devices need not move: the pod's claims fit beside them. `nominated`: per node,
        the pods nominated there that the rules between pods count (`_nominated_pods`)."""
        k = nodes.size
        out = _Batch(nodes, np.zeros(k, dtype=bool), np.zeros(k, dtype=np.int64),
                     np.full(k, NO_VICTIM_PRIORITY, dtype=np.int64), np.zeros(k, dtype=np.int64),
                     np.zeros(k, dtype=np.int64), np.full(k, math.inf), {})
        running = self.running
        slots = running.slots()
        one_by_one = running.special_floor[nodes] < priority \
            if self.vectorised and rules is None and self.victim_hints is None else np.ones(k, dtype=bool)
        if claims is not None:
            one_by_one |= claims[1][nodes]
        if force is not None:
            one_by_one |= force[nodes]
        for row in np.flatnonzero(one_by_one).tolist():
            node = int(nodes[row])
            held = nominated.get(node, ()) if nominated else ()
            if claims is not None and claims[1][node]:
                candidate = self._select_freeing_devices(node, cols, need, priority, base[:, node], budget,
                                                         claims[0], rules, held)
            else:
                candidate = self._select_on_node(node, cols, need, priority, base[:, node], budget, rules, held)
            if candidate is None:
                continue
            pods = candidate.pods()
            out.candidate[row] = True
            out.violations[row] = candidate.violations
            out.top[row], out.total[row], out.count[row], out.earliest[row] = _key(running, pods, self.priority)
            out.victims[row] = pods
        rows = np.flatnonzero(~one_by_one)
        if rows.size == 0:
            return out
        whole = rows.size == k
        at = nodes if whole else nodes[rows]
        into: IntArray | slice = slice(None) if whole else rows  # plain slices assign faster
        depth = int(running.slot_count[at].max(initial=0))
        # Slot-major arrays ([slot, node] and [slot, resource, node]) keep every step a contiguous vector op.
        # Slots are kept most important first (priority, then start, then bind order): reprieve in order.
        prio = running.slot_priority[:depth].take(at, axis=1)  # take keeps [slot, node] C-contiguous
        lower = prio < priority
        requests = slots[:depth].take(at, axis=2)
        if len(cols) < requests.shape[1]:
            requests = requests[:, cols]
        requests *= lower[:, None, :]
        slack = base[:, at] + requests.sum(axis=0)  # with every lower-priority pod gone, less the need
        slack -= need[:, None]
        fits = np.logical_and.reduce(slack >= 0, axis=0)
        back = np.empty((depth, at.size), dtype=bool)
        for s in range(depth):  # put pods back, most important first, while the preemptor still fits
            share = requests[s]
            np.logical_and.reduce(share <= slack, axis=0, out=back[s])
            slack -= share * back[s]
        victim = lower & ~back
        count = victim.sum(axis=0)
        if depth:
            first = victim.argmax(axis=0)  # the most important victim: of the highest priority
            some = count > 0
            top = np.where(some, prio[first, np.arange(at.size)], NO_VICTIM_PRIORITY)
            out.top[into] = top
            # The earliest start among the highest-priority victims (a PodGroup member may rank before an
            # older bare pod of its priority, so the first victim need not be the oldest).
            starts = running.slot_start[:depth].take(at, axis=1)
            out.earliest[into] = np.where(victim & (prio == top), starts, math.inf).min(axis=0)
            out.total[into] = (prio * victim).sum(axis=0) + PRIORITY_OFFSET * count
        out.count[into] = count
        out.candidate[into] = fits
        out.vector_rows, out.slot_victim = rows, victim
        return out

    def _nominated_pods(self, priority: int, preemptor: str) -> dict[int, list[Pod]]:
        """Per node, the pods nominated there that addGENominatedPods adds for a preemptor of `priority`: of at
        least that priority, the preemptor itself left out."""
        found = self.running.nominations(priority, (preemptor,))
        bound = self.cluster.bound  # a nominee that bound is in the pod index already
        out = {node: [self.pods[key] for key in keys if key in self.pods and key not in bound]
               for node, keys in found.items()}
        return {node: pods for node, pods in out.items() if pods}

    def _rules_pass(self, pod: Pod, node: int, nominated: Sequence[Pod]) -> bool:
        """The rules between pods on `node` as RunFilterPluginsWithNominatedPods runs them: with the `nominated`
        pods counted on the node (their labels and affinity terms in the pod index, not their requests, which
        the room already holds), then without them; both passes must succeed."""
        if nominated:
            cluster = self.cluster
            index = cluster.pod_index
            for other in nominated:
                index.add(other, node)
                cluster.affinity_pods += other.placement.pod_affinity is not None
            try:
                ok = self.cycle.pod_rules_pass(pod, node)
            finally:
                for other in nominated:
                    index.remove(other, node)
                    cluster.affinity_pods -= other.placement.pod_affinity is not None
            if not ok:
                return False
        return self.cycle.pod_rules_pass(pod, node)

    def _removable(self, node: int, cols: list[int], need: IntArray, priority: int, base: IntArray,
                   budget: Callable[[], Budgets]) -> tuple[list[Unit], dict[Unit, IntArray], list[Unit], list[Unit],
                                                           IntArray] | None:
        """The lower-priority units on the node, each one's share of `cols`, those whose eviction would break a
        PDB and the others, and the room with all of them gone; None when even that is short of `need`."""
        units = self.units(self.running.on_node.get(node, ()), priority)
        shares = [self._on_node(unit, node)[cols] for unit in units]
        free = base.copy()
        for share in shares:
            free = free + share
        if np.any(free < need):
            return None
        violating, fine = budget().split(units) if self._pdb_list else ([], units)
        return units, dict(zip(units, shares, strict=True)), violating, fine, free

    def _select_on_node(self, node: int, cols: list[int], need: IntArray, priority: int, base: IntArray,
                        budget: Callable[[], Budgets], rules: Pod | None = None,
                        nominated: Sequence[Pod] = ()) -> _Candidate | None:
        """SelectVictimsOnNode, one unit at a time: remove every lower-priority unit, then reprieve as many
        as still fit. `base` is the node's room (in `cols`) before removing anything; `rules`, the preemptor
        whose rules between pods (spread, pod affinity) must hold too, with the removed units hidden and with
        and without the `nominated` pods (`_rules_pass`)."""
        removable = self._removable(node, cols, need, priority, base, budget)
        if removable is None:
            return None
        units, share_of, violating, fine, free = removable
        bad = set(violating)
        victims: list[Unit] = []
        violations = 0
        with self.cluster.hidden_pods() as hidden:
            if rules is not None:
                for unit in units:
                    for key in unit.pods:
                        hidden.hide(key)
                if not self._rules_pass(rules, node, nominated):
                    return None
            for unit in (*violating, *fine):
                share = share_of[unit]
                if np.all(free - share >= need):
                    if rules is None:
                        free = free - share
                        continue
                    for key in unit.pods:
                        hidden.show(key)
                    if self._rules_pass(rules, node, nominated):
                        free = free - share
                        continue
                    for key in unit.pods:
                        hidden.hide(key)
                victims.append(unit)
                violations += unit in bad
        victims.sort(key=Unit.importance)
        return _Candidate(node, victims, violations)

    def _select_freeing_devices(self, node: int, cols: list[int], need: IntArray, priority: int, base: IntArray,
                                budget: Callable[[], Budgets], pod: Pod, rules: Pod | None,
                                nominated: Sequence[Pod] = ()) -> _Candidate | None:
        """`_select_on_node` where removing a unit also releases its claims (`preemptForDevices`): on a trial
        never kept, every lower-priority unit is lifted (`PodCycle.lift`), the pod must fit (resources, its
        claims allocatable on the node, and its rules between pods); then units are put back, PDB-violating
        first and the most important first, each with exactly the devices it held, as long as all of that
        still holds."""
        removable = self._removable(node, cols, need, priority, base, budget)
        if removable is None:
            return None
        units, share_of, violating, fine, free = removable
        bad = set(violating)
        allocator = device_allocator(self.cluster)

        def fits() -> bool:
            if not allocator.feasible_on(pod, node):
                return False
            return rules is None or self._rules_pass(rules, node, nominated)

        victims: list[Unit] = []
        violations = 0
        with self.cluster.trial():
            lifted = {key: self.cycle.lift(key, self.pods[key]) for unit in units for key in unit.pods}
            devices = device_state(self.cluster)
            for key in lifted:
                devices.release(self.pods[key])
            if not fits():
                return None
            for unit in (*violating, *fine):
                share = share_of[unit]
                if np.all(free - share >= need):
                    with self.cluster.trial() as trial:
                        if all(self.cycle.put_back(lifted[key]) for key in unit.pods) and fits():
                            trial.keep()
                            free = free - share
                            continue
                victims.append(unit)
                violations += unit in bad
        victims.sort(key=Unit.importance)
        return _Candidate(node, victims, violations)

    # --- a PodGroup -------------------------------------------------------------------------------------

    @staticmethod
    def group_eligible(group: PodGroup, pending: Sequence[Pod], preemption_policy_gate: bool) -> bool:
        """preemptorEligibleToPreemptOthers: not when the group's preemption policy is Never (preemption/manager.go
        getPreemptionPolicy: with the PodGroupPreemptionPolicy gate on, the PodGroup's own
        spec.preemptionPolicy, PreemptLowerPriority when unset; with it off, Never as soon as one pending member
        says Never)."""
        if preemption_policy_gate:
            return group.preemption_policy != "Never"
        return not any(pod.preemption_policy == "Never" for pod in pending)

    def group_preempting(self, group: PodGroup) -> bool:
        """isOngoingPreemption: earlier victims of this group, or lower-priority pods on its members' nominated
        nodes, are still terminating. Preempt then succeeds with the current nominations, which stay."""
        if any(preemptor == group.key for preemptor in self.running.terminating.values()):
            return True
        priority = group.priority if group.priority is not None else 0
        for key in self.members.get(group.key, ()):
            node = self.running.nominated_node(key)
            if node is not None and self.terminating_below(node, priority):
                return True
        return False

    def for_group(self, group: PodGroup, priority: int, pending: Sequence[Pod], running: int) -> Outcome | Refusal:
        """Workload-aware preemption: victims anywhere in the cluster, so that minCount members fit; or why not."""
        units = self.units(list(self.running.node_of), priority)
        if not units:
            return NO_VICTIMS
        # The dry run is a trial never kept: victims leave the cluster, the group is placed, victims are
        # reprieved, and then every change is undone (victims hold their nodes and devices until they are gone).
        with self.cluster.trial():
            devices = self.cluster.extension(DeviceState)
            if devices is not None:  # the claims this cycle's DynamicResources PostFilter released, as they were
                replay_post_filter(devices, group.key)
            return self._group_dry_run(group, priority, pending, running, units)

    def _group_dry_run(self, group: PodGroup, priority: int, pending: Sequence[Pod], running: int,
                       units: list[Unit]) -> Outcome | Refusal:
        lifted = {key: self.cycle.lift(key, self.pods[key]) for unit in units for key in unit.pods}
        # Room promised to other preemptors of at least this priority stays taken while the group is placed:
        # the cycle's Filter holds it (kube-scheduler runs the filters with those nominated pods on their nodes).
        # The lifted victims keep their devices (v1.37.2); with `preemptForDevices` they are released, the least
        # important unit first, only until the group can be placed.
        first = schedule_group(self.cycle, group, pending, running)
        outcome: GroupOutcome | None = first
        if not first.success or not first.placed:
            outcome = self._place_freeing_devices(group, pending, running, units)
        if outcome is None or not outcome.success or not outcome.placed:
            # The scheduling function's status, as DefaultPreemption reports it (through the placement algorithm,
            # one placement of every node, when its gate is on).
            status = first.status or GroupStatus(unschedulable=True)
            if self.cycle.profile.topology_aware and self.cycle.confinement is None:
                status = placements_failed(1, status)
            return Refusal(status.message)
        return self._reprieve_units(units, lifted, outcome.placed, priority, pending[0])

    def for_tree(self, priority: int, place: Callable[[], Sequence[tuple[Pod, int]] | Refusal],
                 preemptor: Pod) -> Outcome | Refusal:
        """Workload-aware preemption for a CompositePodGroup tree (PodGroupEvaluator.Preempt with the root's
        scheduling function): every lower-priority unit leaves the cluster on a trial, `place` runs the whole
        tree's placement (runRootSchedulingAlgorithm) and returns the pods it placed, or why the root still
        fails; then units are reprieved as for one PodGroup (selectVictimsOnDomain). `preemptor` is any
        pending pod of the tree: whose nominated room stays held."""
        units = self.units(list(self.running.node_of), priority)
        if not units:
            return NO_VICTIMS
        with self.cluster.trial():  # never kept, as in for_group
            lifted = {key: self.cycle.lift(key, self.pods[key]) for unit in units for key in unit.pods}
            placed = place()
            if isinstance(placed, Refusal):
                return placed
            if not placed:
                return Refusal(UNSCHEDULABLE)
            return self._reprieve_units(units, lifted, placed, priority, preemptor)

    def _reprieve_units(self, units: Sequence[Unit], lifted: Mapping[str, Lifted],
                        placed: Sequence[tuple[Pod, int]], priority: int, preemptor: Pod) -> Outcome:
        """With the preemptor's pods placed: reprieve units, PDB-violating first and the most important first,
        wherever they still fit; the rest are the victims, the placed pods are nominated where they are."""
        violating, fine = Budgets(self.pdbs(), self.pods, self.running).split(units)
        # Reprieved victims may not take that promised room either.
        room = self.cycle.nominated_room(preemptor) if self.cycle.nominated_room is not None else None
        if room is not None:
            self.cycle.hold_room(room, -1)
        victims: list[str] = []
        # The preemptor pods whose own rules read other pods (spread, pod (anti-)affinity): a reprieved unit must
        # leave them passing, as must a unit whose pods' required anti-affinity can reject a preemptor.
        ruled = any(reads_other_pods(pod) for pod, _ in placed)
        try:
            for unit in (*violating, *fine):
                if not self._reprieve(unit, lifted, placed, priority, ruled):
                    victims.extend(unit.pods)
        finally:
            if room is not None:
                self.cycle.hold_room(room, 1)
        names = self.cluster.names
        return Outcome(victims=victims, nominations={pod.key: names[node] for pod, node in placed},
                       priority=priority)

    def _place_freeing_devices(self, group: PodGroup, pending: Sequence[Pod], running: int,
                               units: Sequence[Unit]) -> GroupOutcome | None:
        """With `preemptForDevices`: release the devices of lifted units, the least important first, and try the
        group cycle again after each until it places the group (None when releasing them all does not help),
        so that a gang short of devices takes those of the lowest-priority holders and no more."""
        if not any(self._frees_devices(pod) for pod in pending):
            return None
        devices = device_state(self.cluster)
        holders = [unit for unit in reversed(units) if any(self.pods[key].resource_claims for key in unit.pods)]
        for unit in holders:
            for key in unit.pods:
                devices.release(self.pods[key])
            with self.cluster.trial() as trial:
                outcome = schedule_group(self.cycle, group, pending, running)
                if outcome.success and outcome.placed:
                    trial.keep()
                    return outcome
        return None

    def _frees_devices(self, pod: Pod) -> bool:
        found = self._devices(pod)
        return found is not None and found.frees_devices

    def _reprieve(self, unit: Unit, lifted: Mapping[str, Lifted], placed: Sequence[tuple[Pod, int]] = (),
                  priority: int = 0, ruled: bool = False) -> bool:
        """Put the unit back if all its pods fit on their nodes with what they held and, where rules between
        pods can tell, the preemptor's pods still pass them on their proposed nodes; all or none (a trial)."""
        with self.cluster.trial() as trial:
            for key in unit.pods:
                if not self.cycle.fits_back(lifted[key]) or not self.cycle.put_back(lifted[key]):
                    return False
            if (ruled or any(required_anti(self.pods[key]) for key in unit.pods)) \
                    and not self._placed_pass_rules(placed, priority):
                return False
            trial.keep()
        return True

    def _placed_pass_rules(self, placed: Sequence[tuple[Pod, int]], priority: int) -> bool:
        """reprieveVictim (podgrouppreemption.go): with the victim back, each preemptor pod in cycle order passes
        the filters on its proposed node, seeing the preemptor pods before it and not those after. Resources
        were checked by `fits_back`; here the rules between pods, with the nominated pods as
        RunFilterPluginsWithNominatedPods adds them. Call inside a trial: the preemptor pods are lifted and put
        back one by one."""
        if not placed:
            return True
        own = [self.cycle.lift(pod.key, pod) for pod, _ in reversed(placed)]
        own.reverse()
        nominated = self._nominated_pods(priority, placed[0][0].key)
        preemptors = {pod.key for pod, _ in placed}
        for (pod, node), back in zip(placed, own, strict=True):
            others = [p for p in nominated.get(node, ()) if p.key not in preemptors]
            if not self._rules_pass(pod, node, others) or not self.cycle.put_back(back):
                return False
        return True
