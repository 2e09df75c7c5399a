"""A model of the Kubernetes cluster-autoscaler (CA): scale-up for pending pods, scale-down of idle nodes.

The model restates what cluster-autoscaler's FAQ and docs describe, in two modes:

- `pod` (what CA does today): every pending pod counts on its own. For each node group whose template node
  fits a pod, the nodes needed are estimated by first-fit-decreasing bin packing of those pods onto fresh
  template nodes (CA's binpacking estimator), capped by the group's max-size; an expander picks one group per
  loop. Pods of a gang are independent, so CA may add nodes for part of a gang that still cannot run.
- `gang`: the pending members of a gang PodGroup count as one unit. A group is offered capacity for the
  gang's missing minCount members all at once or not at all; a gang that no group can host whole gets no
  nodes and a reason (`ClusterAutoscaler.unhelped`).

Nodes being provisioned (requested, not yet Ready) are capacity: pending pods that fit on them first cause no
new scale-up. Scale-down removes a group's node once it has been unneeded for `scale_down_delay` seconds in a
row: cpu and memory requests below `utilization_threshold` of allocatable, and every pod on it that must move
(all but DaemonSet pods) fits on another node, never taking a group below its min-size.

Whether a pod fits a node reuses the scheduler profile's own node-static Filter plugins, asked of the plugin
registry (by default NodeUnschedulable, TaintToleration, NodeAffinity: cordons, taints, nodeSelector and
required node affinity), on a throwaway ClusterState of the template nodes, plus the resource fit over every
requested resource and the pod count.
Not modelled: rules between pods (topology spread, inter-pod affinity), DRA devices and GPU shares, DaemonSet
pods a new node would carry, volumes, PodDisruptionBudgets, balancing similar node groups, the priority and
price expanders, scale-down-delay-after-add, and the per-loop limits on empty and drained node deletions.

The module is pure: callers pass the pending pods, group sizes and nodes; it returns decisions.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from phalanx.api.objects import Node, Placement, Pod, PodGroup
from phalanx.autoscale.nodegroups import NodeGroup, group_of
from phalanx.cluster.state import ClusterState
from phalanx.scheduler.framework import CycleState, FilterPlugin
from phalanx.scheduler.plugins.registry import FILTERS, node_static_filters

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
Mode = Literal["pod", "gang"]
Expander = Literal["least-waste", "most-pods", "random"]
MODES: tuple[Mode, ...] = ("pod", "gang")
EXPANDERS: tuple[Expander, ...] = ("least-waste", "most-pods", "random")
# CA's defaults: --scale-down-unneeded-time 10m, --scale-down-utilization-threshold 0.5.
DEFAULT_SCALE_DOWN_DELAY = 600.0
DEFAULT_UTILIZATION_THRESHOLD = 0.5
DAEMONSET = "DaemonSet"


@dataclass(frozen=True, slots=True)
class ScaleUp:
    """Add `count` nodes to `group`, for the pending pods `pods` (keys)."""

    group: str
    count: int
    reason: str
    pods: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class NoScaleUp:
    """A pending pod (or, in gang mode, a gang by its PodGroup key) that no node group can help, and why."""

    key: str
    reason: str


# --- fitting pods on nodes ----------------------------------------------------------------------------------

class _StaticFit:
    """The scheduler's node-static Filter plugins over a ClusterState's nodes, one mask per pod Placement."""

    def __init__(self, state: ClusterState, filters: Sequence[FilterPlugin]) -> None:
        self.state = state
        self.filters = tuple(filters)
        self._masks: dict[Placement, BoolArray] = {}

    def mask(self, pod: Pod) -> BoolArray:
        try:
            cached = self._masks.get(pod.placement)
            hashable = True
        except TypeError:  # a Placement holding an unhashable constraint: not cached
            cached, hashable = None, False
        if cached is not None:
            return cached
        cycle = CycleState(pod=pod, demand=self.state.demand(pod))
        mask = np.ones(len(self.state), dtype=bool)
        for plugin in self.filters:
            mask &= plugin.filter(cycle, self.state)
        if hashable:
            self._masks[pod.placement] = mask
        return mask


class _Bins:
    """Fresh template nodes of one group being filled first-fit: `opened` of them to start with (nodes already
    being provisioned), and at most `limit` more."""

    def __init__(self, capacity: IntArray, opened: int, limit: int) -> None:
        self.capacity = capacity
        self.count = opened
        self.limit = limit
        self.new = 0
        self.used: IntArray = np.zeros_like(capacity)  # what the placed pods request, in total
        self.free: IntArray = np.repeat(capacity[None, :], max(opened, 4), axis=0)

    def place(self, demand: IntArray) -> bool:
        if self.count:
            room = np.logical_and.reduce(self.free[: self.count] >= demand, axis=1)
            first = int(room.argmax())
            if room[first]:
                self.free[first] -= demand
                self.used += demand
                return True
        if self.new >= self.limit or not bool((self.capacity >= demand).all()):
            return False
        if self.count == self.free.shape[0]:
            self.free = np.vstack([self.free, np.repeat(self.capacity[None, :], self.count, axis=0)])
        self.free[self.count] = self.capacity - demand
        self.used += demand
        self.count += 1
        self.new += 1
        return True

    def save(self) -> tuple[IntArray, IntArray, int, int]:
        return self.free[: self.count].copy(), self.used.copy(), self.count, self.new

    def restore(self, saved: tuple[IntArray, IntArray, int, int]) -> None:
        rows, self.used, self.count, self.new = saved
        self.free[: self.count] = rows

    def waste(self) -> float:
        """CA's least-waste score restated: the idle fraction of the new nodes' cpu plus that of their memory
        (columns 0 and 1)."""
        total = 0.0
        for col in (0, 1):
            available = int(self.capacity[col]) * self.new
            if available > 0:
                total += (available - int(self.used[col])) / available
        return total


def estimate_nodes(demands: IntArray, capacity: IntArray, limit: int | None = None) -> tuple[int, BoolArray]:
    """CA's binpacking estimator restated: pods (rows of `demands`, in the order given, largest first for
    first-fit decreasing) go on the first fresh node with room, a new node opening when none has; at most
    `limit` nodes. Returns the nodes used and which pods were placed."""
    bins = _Bins(capacity, 0, limit if limit is not None else len(demands))
    placed = np.array([bins.place(row) for row in demands], dtype=bool)
    return bins.new, placed


# --- scale-up ------------------------------------------------------------------------------------------------

@dataclass(slots=True)
class _Unit:
    """What one scale-up decision counts as a whole: one pod, or a gang's pending members (largest first)."""

    key: str
    pods: list[Pod]
    rows: list[IntArray]
    needed: int  # members that must be placed for the unit to count as helped
    gang: bool
    min_count: int = 1
    # members × groups: the member fits a fresh template node of the group (filters and resources)
    fits: BoolArray = field(default_factory=lambda: np.zeros((0, 0), dtype=bool))

    def fitting(self, group: int) -> int:
        return int(self.fits[:, group].sum())


@dataclass(slots=True)
class _Option:
    group: NodeGroup
    index: int
    nodes: int
    units: list[_Unit]
    waste: float
    capped: bool

    @property
    def pods(self) -> int:
        return sum(len(u.pods) for u in self.units)


@dataclass(slots=True)
class ClusterAutoscaler:
    """Scale-up and scale-down decisions over a set of node groups (see the module docstring).

    State kept between calls: the time each node became unneeded (for the scale-down delay) and the random
    expander's generator. After each `scale_up`, `unhelped` lists the pending pods (or gangs) that no node
    group can help, with the reason.
    """

    groups: Sequence[NodeGroup]
    mode: Mode = "pod"
    scale_down_delay: float = DEFAULT_SCALE_DOWN_DELAY
    utilization_threshold: float = DEFAULT_UTILIZATION_THRESHOLD
    expander: Expander = "least-waste"
    seed: int = 0
    # CA expands one node group per loop; more lets one call answer for several groups.
    groups_per_loop: int = 1
    # CA keeps nodes running pods no controller owns (they would not come back elsewhere).
    move_bare_pods: bool = False
    # The scheduler profile's enabled Filters and pluginConfig args: a pod fits a template node when every
    # node-static one among them passes it (the registry says which those are).
    filters: Sequence[str] = FILTERS
    plugin_args: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    unhelped: list[NoScaleUp] = field(default_factory=list, init=False)
    _unneeded_since: dict[str, float] = field(default_factory=dict, init=False)
    _rng: random.Random = field(init=False)
    _by_name: dict[str, NodeGroup] = field(init=False)
    _members_seen: Sequence[tuple[int, str]] | None = field(default=None, init=False)
    _member_sizes: Counter[str] = field(default_factory=Counter, init=False)
    _member_groups: dict[int, str] = field(default_factory=dict, init=False)
    _fit: _StaticFit | None = field(default=None, init=False)
    _fit_key: tuple[int, int] = field(default=(0, 0), init=False)

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"unknown mode {self.mode!r}: one of {', '.join(MODES)}")
        if self.expander not in EXPANDERS:
            raise ValueError(f"unknown expander {self.expander!r}: one of {', '.join(EXPANDERS)}")
        if not 0.0 <= self.utilization_threshold <= 1.0:
            raise ValueError(f"utilization_threshold must be within 0..1, got {self.utilization_threshold}")
        self.groups = sorted(self.groups, key=lambda g: g.name)
        self._by_name = {g.name: g for g in self.groups}
        if len(self._by_name) != len(self.groups):
            raise ValueError("two node groups share a name")
        self._rng = random.Random(self.seed)

    # --- scale-up ---------------------------------------------------------------------------------------------

    def scale_up(self, pending: Sequence[Pod], groups_of_pods: Mapping[str, PodGroup],
                 upcoming: Mapping[str, int] | None = None, *, sizes: Mapping[str, int] | None = None,
                 running_members: Mapping[str, int] | None = None) -> list[ScaleUp]:
        """Node groups to grow for the pending pods: those the scheduler could not place on the nodes there are
        (CA's unschedulable pods; leaving out pods that fit existing free room is the caller's part).

        `upcoming`: nodes per group requested and not Ready yet (they count as empty template nodes);
        `sizes`: nodes per group that exist now (default: min-size); `running_members`: members of each
        PodGroup (by key) already running, which gang mode subtracts from minCount.
        """
        self.unhelped = []
        if not self.groups:
            self.unhelped = [NoScaleUp(p.key, "no node groups") for p in pending]
            return []
        upcoming_now = {g.name: int((upcoming or {}).get(g.name, 0)) for g in self.groups}
        size_now = {g.name: int((sizes or {}).get(g.name, g.min_size)) for g in self.groups}
        state = ClusterState([replace(g.new_node(0), name=g.name) for g in self.groups])
        for pod in pending:
            for resource in pod.requests:
                state.ensure_resource(resource)
        fit = _StaticFit(state, self._node_filters())
        capacity = state.allocatable  # groups × resources
        units = self._units(pending, groups_of_pods, running_members or {}, state, capacity)
        for unit in units:
            unit.fits = np.array([fit.mask(p) & np.all(capacity >= row, axis=1)
                                  for p, row in zip(unit.pods, unit.rows, strict=True)], dtype=bool)

        # Pending pods that fit on nodes being provisioned wait for them.
        upcoming_bins = {i: _Bins(capacity[i], upcoming_now[g.name], 0)
                         for i, g in enumerate(self.groups) if upcoming_now[g.name] > 0}
        remaining = [u for u in units if not any(self._place(u, i, bins) for i, bins in upcoming_bins.items())]

        decisions: list[ScaleUp] = []
        helped_somewhere: set[int] = set()
        for _ in range(max(self.groups_per_loop, 1)):
            options: list[_Option] = []
            for i, group in enumerate(self.groups):
                room = group.max_size - size_now[group.name] - upcoming_now[group.name]
                if room <= 0:
                    continue
                bins = _Bins(capacity[i], 0, room)
                helped = [u for u in remaining if self._place(u, i, bins)]
                if helped and bins.new:
                    ids = {id(u) for u in helped}
                    helped_somewhere.update(ids)
                    capped = bins.new == room and any(
                        id(u) not in ids and u.fitting(i) >= u.needed for u in remaining)
                    options.append(_Option(group, i, bins.new, helped, bins.waste(), capped))
            if not options:
                break
            best = self._expand(options)
            decisions.append(ScaleUp(best.group.name, best.nodes, self._reason(best),
                                     tuple(p.key for u in best.units for p in u.pods)))
            upcoming_now[best.group.name] += best.nodes
            chosen = {id(u) for u in best.units}
            remaining = [u for u in remaining if id(u) not in chosen]
        self.unhelped = [NoScaleUp(u.key, self._why_not(u, capacity, size_now, upcoming_now))
                         for u in remaining if id(u) not in helped_somewhere]
        return decisions

    def _units(self, pending: Sequence[Pod], groups_of_pods: Mapping[str, PodGroup],
               running: Mapping[str, int], state: ClusterState, capacity: IntArray) -> list[_Unit]:
        """Pending pods as units, largest first (gang mode: gangs first, in the order they appear)."""
        scale = np.maximum(capacity[:, :2].max(axis=0), 1).astype(np.float64)

        def size(pod: Pod) -> float:
            return float(np.sum(state.demand(pod).requests[:2] / scale))

        singles: list[Pod] = []
        gangs: dict[str, list[Pod]] = {}
        for pod in pending:
            key = pod.group_key
            group = groups_of_pods.get(key) if key is not None else None
            if self.mode == "gang" and key is not None and group is not None and group.is_gang:
                gangs.setdefault(key, []).append(pod)
            else:
                singles.append(pod)
        units: list[_Unit] = []
        for key, members in gangs.items():
            group = groups_of_pods[key]
            needed = group.min_count - int(running.get(key, 0))
            if needed <= 0:  # minCount already runs: the rest are scheduled one by one
                singles.extend(members)
                continue
            members = sorted(members, key=size, reverse=True)
            units.append(_Unit(key, members, [state.demand(p).requests for p in members], needed, True,
                               group.min_count))
        singles.sort(key=size, reverse=True)
        units.extend(_Unit(p.key, [p], [state.demand(p).requests], 1, False) for p in singles)
        return units

    @staticmethod
    def _place(unit: _Unit, group: int, bins: _Bins) -> bool:
        """Place the unit's members that fit the group's template on its bins: `needed` of them or none."""
        if len(unit.rows) == 1:  # a lone pod: nothing to roll back
            return bool(unit.fits[0, group]) and bins.place(unit.rows[0])
        if unit.fitting(group) < unit.needed:
            return False
        saved = bins.save()
        placed = sum(1 for row, ok in zip(unit.rows, unit.fits[:, group], strict=True) if ok and bins.place(row))
        if placed >= unit.needed:
            return True
        bins.restore(saved)
        return False

    def _expand(self, options: list[_Option]) -> _Option:
        """The expander's choice. Ties go to more pods, then less waste, then the group's name (CA picks
        among tied options at random)."""
        if self.expander == "random":
            return options[self._rng.randrange(len(options))]
        if self.expander == "most-pods":
            return min(options, key=lambda o: (-o.pods, o.waste, o.group.name))
        return min(options, key=lambda o: (o.waste, -o.pods, o.group.name))

    def _reason(self, option: _Option) -> str:
        gangs = [u for u in option.units if u.gang]
        what = f"{option.pods} pending pod(s)"
        if gangs:
            shown = ", ".join(u.key for u in gangs[:3]) + (", …" if len(gangs) > 3 else "")
            what += f" ({len(gangs)} gang(s) whole: {shown})"
        text = (f"{what} fit {option.nodes} new node(s) of {option.group.name} by bin packing; "
                f"expander {self.expander}, waste {option.waste:.2f}")
        if option.capped:
            text += f"; capped by max-size {option.group.max_size}"
        return text

    def _why_not(self, unit: _Unit, capacity: IntArray, sizes: Mapping[str, int], upcoming: Mapping[str, int]) -> str:
        if unit.gang and len(unit.pods) < unit.needed:
            return (f"gang {unit.key} has {len(unit.pods)} pending member(s); {unit.needed} must be placed to "
                    f"reach minCount {unit.min_count}")
        fitting = [unit.fitting(i) for i in range(len(self.groups))]
        if max(fitting) < unit.needed:
            if unit.gang:
                return f"no node group's template fits {unit.needed} member(s) of gang {unit.key}"
            return "no node group's template fits the pod"
        if not unit.gang:
            return "every node group whose template fits the pod is at max-size"
        parts = []
        for i, group in enumerate(self.groups):
            if fitting[i] < unit.needed:
                continue
            nodes, _ = estimate_nodes(np.array([r for r, ok in zip(unit.rows, unit.fits[:, i], strict=True) if ok]),
                                      capacity[i])
            room = max(group.max_size - sizes[group.name] - upcoming[group.name], 0)
            parts.append(f"{group.name} needs {nodes} node(s), max-size {group.max_size} leaves {room}")
        return (f"no node group can host gang {unit.key} whole ({unit.needed} member(s) for minCount "
                f"{unit.min_count}): {'; '.join(parts)}")

    # --- scale-down -------------------------------------------------------------------------------------------

    def scale_down(self, nodes: Sequence[tuple[Node, Mapping[str, float], Sequence[Pod]]], now: float,
                   groups_of_pods: Mapping[str, PodGroup] | None = None) -> list[str]:
        """Names of the nodes to remove now.

        `nodes`: every node of the cluster (group nodes and others, which only take moved pods) with its
        utilization per resource (requested / allocatable; cpu and memory are read, computed from the pods when
        missing) and the pods on it. A group node is unneeded when its utilization (the larger of cpu and
        memory) is below the threshold, its group stays at or above min-size without it, and its pods can move:
        DaemonSet pods go with the node; pods no controller owns stay (unless `move_bare_pods`); in gang mode a
        gang member stays (moving it would break its gang; `groups_of_pods` says which groups are gangs, else
        any pod of a PodGroup counts); the rest must fit, largest first, on other nodes that are not going
        away (resources, cordons, taints, node selectors). Nodes are tried least utilized first; the pods
        of earlier ones take their room on the others, and a node that takes pods stays for this call. A node
        is removed once unneeded for
        `scale_down_delay` seconds in a row.
        """
        state = ClusterState([node for node, _, _ in nodes])
        on_node: dict[int, Sequence[Pod]] = {}
        levels: dict[int, float] = {}
        for node, utilization, pods in nodes:
            at = state.index[node.name]
            for pod in pods:
                if pod.key not in state.bound:
                    state.assume(pod, at)
            on_node[at] = pods
            if group_of(node) in self._by_name:
                levels[at] = _utilization(node, utilization, pods)
        members = [(state.index[node.name], g) for node, _, _ in nodes if (g := group_of(node)) in self._by_name]
        return self.scale_down_in(state, members, levels, on_node.__getitem__, now, groups_of_pods)

    def scale_down_in(self, state: ClusterState, members: Sequence[tuple[int, str]], levels: Mapping[int, float],
                      pods_on: Callable[[int], Sequence[Pod]], now: float,
                      groups_of_pods: Mapping[str, PodGroup] | None = None) -> list[str]:
        """`scale_down` over a ClusterState that already holds every node and bound pod (a simulator's own):
        `members` are the group nodes present (index, group name), `levels` their utilization (at least for
        those below the threshold), `pods_on(index)` the pods bound there. The moves are tried on a copy of
        the free capacity: `state` is not changed."""
        return self.due(self.unneeded_in(state, members, levels, pods_on, groups_of_pods), now)

    def unneeded_in(self, state: ClusterState, members: Sequence[tuple[int, str]], levels: Mapping[int, float],
                    pods_on: Callable[[int], Sequence[Pod]],
                    groups_of_pods: Mapping[str, PodGroup] | None = None) -> list[str]:
        """The group nodes unneeded now (`scale_down_in` without the clock); the same state gives the same
        answer."""
        sizes = self._sizes(members)
        group_of_member = self._member_groups
        candidates: list[tuple[float, str, int, NodeGroup, list[Pod]]] = []
        for at, level in levels.items():
            group = group_of_member.get(at)
            if group is None or level >= self.utilization_threshold:
                continue
            movable = [p for p in pods_on(at) if p.controller != DAEMONSET]
            if any(self._stays(p, groups_of_pods) for p in movable):
                continue
            candidates.append((level, state.names[at], at, self._by_name[group], movable))
        candidates.sort(key=lambda c: (c[0], c[1]))
        unneeded: list[str] = []
        if candidates:
            fit = self._static_fit(state)
            gone = np.zeros(len(state), dtype=bool)
            receiving = np.zeros(len(state), dtype=bool)
            free = state.free_by_resource.copy()
            taken: Counter[str] = Counter()
            for _, name, at, owner, movable in candidates:
                if receiving[at] or sizes[owner.name] - taken[owner.name] <= owner.min_size:
                    continue
                gone[at] = True
                if _move(movable, state, free, fit, gone, receiving):
                    taken[owner.name] += 1
                    unneeded.append(name)
                else:
                    gone[at] = False
        return unneeded

    def _sizes(self, members: Sequence[tuple[int, str]]) -> Counter[str]:
        """Group sizes of `members`, remembered while the same list is passed again."""
        if self._members_seen is not members:
            self._members_seen = members
            self._member_sizes = Counter(group for _, group in members)
            self._member_groups = dict(members)
        return self._member_sizes

    def _node_filters(self) -> list[FilterPlugin]:
        return node_static_filters(self.filters, self.plugin_args)

    def _static_fit(self, state: ClusterState) -> _StaticFit:
        """The static filters' masks over `state`, kept while its nodes stay as they are."""
        key = (state.version, len(state))
        if self._fit is None or self._fit.state is not state or self._fit_key != key:
            self._fit, self._fit_key = _StaticFit(state, self._node_filters()), key
        return self._fit

    def due(self, unneeded: Sequence[str], now: float) -> list[str]:
        """Nodes unneeded now, as `unneeded_in` found them: the ones unneeded for the whole delay are removed
        (returned); the others' clocks start or go on; the clocks of nodes needed again stop."""
        for name in list(self._unneeded_since):
            if name not in unneeded:
                del self._unneeded_since[name]
        removed = []
        for name in unneeded:
            since = self._unneeded_since.setdefault(name, now)
            if now - since >= self.scale_down_delay:
                removed.append(name)
                del self._unneeded_since[name]
        return removed

    def _stays(self, pod: Pod, groups_of_pods: Mapping[str, PodGroup] | None) -> bool:
        if pod.controller is None and not self.move_bare_pods:
            return True
        if self.mode != "gang" or pod.group_key is None:
            return False
        if groups_of_pods is None:
            return True
        group = groups_of_pods.get(pod.group_key)
        return group is None or group.is_gang

    def unneeded_since(self) -> dict[str, float]:
        """Nodes now unneeded, with the time each became so (a copy)."""
        return dict(self._unneeded_since)


def _utilization(node: Node, given: Mapping[str, float], pods: Sequence[Pod]) -> float:
    """The larger of the node's cpu and memory utilization (requests / allocatable), as CA compares it."""
    levels = []
    for resource in ("cpu", "memory"):
        if resource in given:
            levels.append(float(given[resource]))
            continue
        allocatable = node.allocatable.get(resource, 0)
        requested = sum(p.requests.get(resource, 0) for p in pods)
        levels.append(requested / allocatable if allocatable > 0 else 0.0)
    return max(levels)


def _move(pods: Sequence[Pod], state: ClusterState, free: IntArray, fit: _StaticFit, gone: BoolArray,
          receiving: BoolArray) -> bool:
    """Move the pods off their node, largest first, each onto the first node with room in `free` (resources ×
    nodes, a copy of the state's) that is not going away. When all of them fit, their requests stay taken
    from `free` and the nodes that took pods are marked in `receiving`; otherwise nothing changes."""
    order = sorted(pods, key=lambda p: (p.requests.get("cpu", 0), p.requests.get("memory", 0)), reverse=True)
    placed: list[tuple[int, IntArray]] = []
    staying = ~gone
    for pod in order:
        demand = state.demand(pod)
        cols = list(demand.columns)
        ok = (free[cols] >= demand.requests[cols, None]).all(axis=0)
        ok &= fit.mask(pod)
        ok &= staying
        node = int(ok.argmax())
        if not ok[node]:
            for node, requests in placed:
                free[: requests.shape[0], node] += requests
            return False
        free[: demand.requests.shape[0], node] -= demand.requests
        placed.append((node, demand.requests))
    for node, _ in placed:
        receiving[node] = True
    return True


# --- accounting ----------------------------------------------------------------------------------------------

@dataclass(slots=True)
class NodeRecord:
    """One node the autoscaler added: its group, when it was added (requested) and removed, and whether a pod
    ever made use of it (for gangs: a member of a gang that ran)."""

    name: str
    group: str
    added: float
    removed: float | None = None
    used: bool = False

    def hours(self, end: float) -> float:
        stop = end if self.removed is None else min(self.removed, end)
        return max(stop - self.added, 0.0) / 3600.0


def nodes_added(records: Iterable[NodeRecord]) -> dict[str, int]:
    """Nodes added per group."""
    return dict(Counter(r.group for r in records))


def node_hours(records: Iterable[NodeRecord], end: float) -> dict[str, float]:
    """Node-hours per group, from each node's addition to its removal (or `end`)."""
    out: dict[str, float] = {}
    for record in records:
        out[record.group] = out.get(record.group, 0.0) + record.hours(end)
    return out


def cost(groups: Mapping[str, NodeGroup], records: Iterable[NodeRecord], end: float) -> dict[str, float]:
    """Cost per group: cost-per-hour × node-hours."""
    return {name: groups[name].cost_per_hour * hours for name, hours in node_hours(records, end).items()}


def idle_node_hours(records: Iterable[NodeRecord], end: float) -> float:
    """Node-hours of added nodes nothing used: partial scale-ups (nodes added for a gang that never ran)."""
    return sum(r.hours(end) for r in records if not r.used)
