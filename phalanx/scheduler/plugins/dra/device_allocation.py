"""DRA device allocation: which nodes can serve a pod's claims, and which devices on a node serve them.

The allocator reads the DeviceState (`phalanx.cluster.devices`) and never changes it; Reserve hands its
choice to `DeviceState.reserve`. A request's *eligible* vector (class selectors, its own selectors, the
capacity it asks for) is cached per request until devices or classes change, and its *available* vector
(eligible, tolerated, free) per state version, so a pod's filter is a handful of vector operations and a
per-node count per request.

Whether a pod's claims fit on a node is decided exactly: when the pod's requests are plain `exactly`
requests without constraints, by counting (Hall's condition over requests whose devices overlap: for
every set of requests, the available devices any of them could use must number at least their total
count); otherwise (`firstAvailable`, `matchAttribute`/`distinctAttribute`, more than four overlapping
requests) counting gives a necessary condition and a per-node search settles the nodes that pass it.
A device serves at most one request of one pod, even a shared one; different pods share a shared device
until its capacity is used. A snapshot claim's recorded allocation (`status.allocation`) is taken as it
is while its devices exist.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from phalanx.api.dra import DeviceRequest, ExactRequest
from phalanx.api.objects import Pod
from phalanx.cluster.devices import Choice, ClaimState, DeviceState, device_state
from phalanx.cluster.state import BoolArray, ClusterState, IntArray
from phalanx.scheduler.framework import PluginError

MAX_HALL_REQUESTS = 4
SEARCH_BUDGET = 20_000  # search steps and devices tried per node before a search gives up ("cannot allocate")
MAX_CLAIM_DEVICES = 32  # AllocationResultsMaxSize: the most devices one claim's allocation holds


class AllocationError(PluginError):
    """A claim the allocator refuses outright, whatever the node's devices: asking for more than
    MAX_CLAIM_DEVICES (structured/internal/*/allocator_*.go). kube-scheduler's DynamicResources Filter returns an
    error status for it, not Unschedulable, so the pod's (or its group's) cycle fails with SchedulerError."""


class _Missing:
    pass


_MISSING = _Missing()  # an attribute a device does not have (matchAttribute then fails)


class DeviceAllocator:
    """Feasibility over nodes and the per-node device search for one DeviceState."""

    def __init__(self, state: DeviceState) -> None:
        self.state = state
        self._catalog = state.catalog
        self._eligible: dict[ExactRequest, tuple[BoolArray, IntArray]] = {}
        self._last_available: tuple[ExactRequest, int, BoolArray] | None = None

    def _fresh(self) -> None:
        if self._catalog != self.state.catalog:
            self._catalog = self.state.catalog
            self._eligible.clear()
            self._last_available = None

    def eligible(self, request: ExactRequest) -> tuple[BoolArray, IntArray]:
        """Devices that could serve the request if free, and what each would consume (per capacity column;
        a device that is not shared is consumed whole)."""
        self._fresh()
        cached = self._eligible.get(request)
        if cached is not None and cached[0].shape[0] == len(self.state):
            return cached
        mask = self.state.class_mask(request.device_class_name)
        for expression in request.selectors:
            mask = mask & self.state.selector_mask(expression, mask)
        need = np.zeros((len(self.state), len(self.state.cap_names)), dtype=np.int64)
        if request.capacity:  # capacity.requests: an unqualified name is in the device's driver's domain
            drivers = np.array([s.driver for s in self.state.slice_of], dtype=object)
            for name, wanted in request.capacity:
                enough = np.zeros(len(self.state), dtype=bool)
                for driver in set(drivers.tolist()):
                    qualified = name if "/" in name else f"{driver}/{name}"
                    if qualified in self.state.cap_names:
                        col = self.state.cap_names.index(qualified)
                        enough |= (drivers == driver) & (self.state.cap_total[:, col] >= wanted)
                mask = mask & enough
        for d in np.flatnonzero(mask & self.state.shared).tolist():
            driver = self.state.slice_of[d].driver
            asked = {(n if "/" in n else f"{driver}/{n}"): v for n, v in request.capacity}
            for name, cap in self.state.devices[d].capacity.items():
                col = self.state.cap_names.index(name)
                requested = asked.get(name)
                if cap.policy is None:
                    amount: int | None = cap.value if requested is None else requested
                else:
                    amount = cap.policy.consumed(requested)
                if amount is None or amount > cap.value:
                    mask[d] = False
                    break
                need[d, col] = amount
        cached = (mask, need)
        self._eligible[request] = cached
        return cached

    def available(self, request: ExactRequest) -> BoolArray:
        """Devices free for the request now: eligible, tolerated, not held (or with capacity left)."""
        self._fresh()
        last = self._last_available
        if last is not None and last[0] is request and last[1] == self.state.version:
            return last[2]
        mask, need = self.eligible(request)
        free: BoolArray = self.state.allocations == 0
        if self.state.shared.any():
            room: BoolArray = np.all(self.state.cap_used + need <= self.state.cap_total, axis=1)
            free = np.where(self.state.shared, room, free)
        out: BoolArray = mask & free & self.state.tolerated(request.tolerations)
        self._last_available = (request, self.state.version, out)
        return out

    @staticmethod
    def _needs_search(claims: Sequence[ClaimState]) -> bool:
        return any(c.claim.spec.constraints or any(r.exactly is None for r in c.claim.spec.requests)
                   for c in claims)

    def feasible(self, pod: Pod) -> BoolArray:
        """Nodes where every claim of the pod is usable (allocated and reachable) or can be allocated."""
        self.state.sync_nodes()
        n = len(self.state.cluster)
        mask = np.ones(n, dtype=bool)
        pending: list[ClaimState] = []
        for state in self.state.pod_claims(pod):
            if state.allocation is not None:
                mask &= self.state.usable_nodes(state)
            else:
                pending.append(state)
        if not pending or not mask.any():
            return mask
        self._check_sizes(pending, mask)
        requests = [r for state in pending for r in state.claim.spec.requests]
        search = self._needs_search(pending)
        groups: list[list[tuple[BoolArray, IntArray, BoolArray]]] = []  # per request: alternatives
        for request in requests:
            options: list[tuple[BoolArray, IntArray, BoolArray]] = []
            for alt in request.alternatives:
                avail = self.available(alt)
                if alt.allocation_mode == "All":
                    eligible = self.eligible(alt)[0] & self.state.tolerated(alt.tolerations)
                    need = self.state.count_per_node(eligible)
                    counts = self.state.count_per_node(avail)
                    ok = (need >= 1) & (counts == need)
                else:
                    need = np.full(n, alt.count, dtype=np.int64)
                    ok = self.state.count_per_node(avail) >= alt.count
                options.append((avail, need, ok))
            groups.append(options)
        for options in groups:
            any_ok = np.zeros(n, dtype=bool)
            for _, _, ok in options:
                any_ok |= ok
            mask &= any_ok
        if not mask.any():
            return mask
        if not search and len(groups) > 1:
            counted = self._hall([options[0] for options in groups], mask)
            if counted is not None:
                return counted
        if search or len(groups) > 1:  # the counts left it open: the search settles each node
            for node in np.flatnonzero(mask).tolist():
                if self.search(pod, node, pending) is None:
                    mask[node] = False
        return mask

    def feasible_on(self, pod: Pod, node: int) -> bool:
        """`feasible` for one node: every claim usable there or allocatable there now (the exact search)."""
        self.state.sync_nodes()
        pending: list[ClaimState] = []
        for state in self.state.pod_claims(pod):
            if state.allocation is None:
                pending.append(state)
            elif not self.state.usable_nodes(state)[node]:
                return False
        if pending:
            self._check_sizes(pending, np.arange(len(self.state.cluster)) == node)
        return not pending or self.search(pod, node, pending) is not None

    def _check_sizes(self, pending: Sequence[ClaimState], nodes: BoolArray) -> None:
        """Raise AllocationError when a claim would need more than MAX_CLAIM_DEVICES devices on one of `nodes`
        (the fewest its requests could take: `count`, every matching device for `All`, the smallest of a
        `firstAvailable` list), naming the first request that goes over, as the allocator's Allocate does."""
        n = nodes.shape[0]
        for state in pending:
            accounted = np.zeros(n, dtype=np.int64)
            for request in state.claim.spec.requests:
                adding: IntArray | None = None
                for alt in request.alternatives:
                    count = self.state.count_per_node(self.eligible(alt)[0]) if alt.allocation_mode == "All" \
                        else np.full(n, alt.count, dtype=np.int64)
                    adding = count if adding is None else np.minimum(adding, count)
                if adding is None:
                    continue
                over = np.flatnonzero(nodes & (adding > MAX_CLAIM_DEVICES - accounted))
                if over.size:
                    node = int(over[0])
                    raise AllocationError(
                        f'running "DynamicResources" filter plugin: claim {state.key}, request {request.name}: '
                        f"adding {int(adding[node])} devices exceeds the claim limit of {MAX_CLAIM_DEVICES}, with "
                        f"{int(accounted[node])} already accounted for")
                accounted += adding

    def _hall(self, items: list[tuple[BoolArray, IntArray, BoolArray]], mask: BoolArray) -> BoolArray | None:
        """Hall's condition for requests that compete for devices: every subset's devices cover its count. None
        when too many requests overlap to count every subset (the search decides then)."""
        k = len(items)
        out = mask.copy()
        # Requests whose available devices are disjoint never compete: only overlapping ones need subsets.
        overlap = [[bool((items[i][0] & items[j][0]).any()) for j in range(k)] for i in range(k)]
        if not any(overlap[i][j] for i in range(k) for j in range(k) if i != j):
            return out
        if k > MAX_HALL_REQUESTS:
            return None
        for size in range(2, k + 1):
            for subset in itertools.combinations(range(k), size):
                union = np.zeros(len(self.state), dtype=bool)
                need = np.zeros(len(out), dtype=np.int64)
                for i in subset:
                    union |= items[i][0]
                    need += items[i][1]
                out &= self.state.count_per_node(union) >= need
        return out

    # --- per-node search --------------------------------------------------------------------------------

    def search(self, pod: Pod, node: int,
               pending: Sequence[ClaimState] | None = None) -> dict[str, tuple[Choice, ...]] | None:
        """Devices on (or reachable from) `node` for every unallocated claim of the pod, or None."""
        if pending is None:
            pending = [s for s in self.state.pod_claims(pod) if s.allocation is None]
        local = self.state.on_node(node)
        slots: list[tuple[ClaimState, DeviceRequest]] = [(s, r) for s in pending for r in s.claim.spec.requests]
        if len(slots) == 1 and not slots[0][0].claim.spec.constraints:  # the common case: first fitting devices
            alt = slots[0][1].exactly
            if alt is not None and alt.allocation_mode == "ExactCount":
                picked = local[self.available(alt)[local]][: alt.count]
                if picked.size < alt.count:
                    return None
                need = self.eligible(alt)[1]
                return {slots[0][0].key: tuple(
                    Choice(alt.name, d, tuple(int(x) for x in need[d]) if self.state.shared[d] else (), alt.tolerations)
                    for d in picked.tolist())}
        found = _Search(self, local, slots).run()
        if found is None:
            return None
        out: dict[str, list[Choice]] = {}
        for (state, _), choices in zip(slots, found, strict=True):
            out.setdefault(state.key, []).extend(choices)
        return {k: tuple(v) for k, v in out.items()}

    def pinned(self, state: ClaimState) -> tuple[Choice, ...] | None:
        """A snapshot claim's recorded allocation (status.allocation), if every device still exists."""
        choices: list[Choice] = []
        requests = {r.name: r for r in state.claim.spec.requests}
        for result in state.claim.allocated:
            d = self.state.index.get((result.driver, result.pool, result.device))
            if d is None:
                return None
            base = requests.get(result.request.split("/")[0])
            alt = next((a for a in base.alternatives if a.name == result.request), None) if base else None
            need = self.eligible(alt)[1][d] if alt is not None else np.zeros(len(self.state.cap_names), dtype=np.int64)
            choices.append(Choice(result.request, d, tuple(int(x) for x in need) if self.state.shared[d] else (),
                                  alt.tolerations if alt is not None else ()))
        return tuple(choices)

    def choose(self, pod: Pod, node: int) -> dict[str, tuple[Choice, ...]] | None:
        """Devices on `node` for each of the pod's unallocated claims (a snapshot's recorded allocation where
        it still holds, else the search), or None when they cannot all be allocated there."""
        pending = [s for s in self.state.pod_claims(pod) if s.allocation is None]
        found: dict[str, tuple[Choice, ...]] = {}
        todo = []
        for claim in pending:
            pinned = self.pinned(claim) if claim.claim.allocated else None
            if pinned is not None:
                found[claim.key] = pinned
            else:
                todo.append(claim)
        if todo:
            result = self.search(pod, node, todo)
            if result is None:
                return None
            found.update(result)
        return found


@dataclass(slots=True)
class _Slot:
    """A search step: which alternative of request slot `slot` to try next."""

    slot: int
    next_alternative: int = 0


@dataclass(slots=True)
class _Pick:
    """A search step: one more device for `slot` from `pool[position:]`, `left` of them still to choose (this
    one included); `device` is the one chosen now, undone before the next is tried."""

    slot: int
    alternative: ExactRequest
    pool: list[int]
    left: int
    position: int = 0
    device: int | None = None


class _Search:
    """The per-node search of `DeviceAllocator.search` over request slots (a claim's request each): a slot
    takes the first of its alternatives that can be served, picking devices from the node's available ones
    in slice order; a constraint (`matchAttribute`, `distinctAttribute`) that fails sends it back to try
    other devices, then other alternatives, then earlier slots. The steps live on a stack of their own, not
    on Python's: a request for every device of a node (`allocationMode: All`) is as deep as the node has
    devices. At most SEARCH_BUDGET steps and devices looked at before the search gives up."""

    def __init__(self, allocator: DeviceAllocator, local: IntArray,
                 slots: Sequence[tuple[ClaimState, DeviceRequest]]) -> None:
        self.allocator = allocator
        self.state = allocator.state
        self.local = local
        self.slots = slots
        self.used: set[int] = set()
        self.chosen: list[list[Choice]] = [[] for _ in slots]
        self.budget = SEARCH_BUDGET
        # Per alternative: the node's devices available to it, and those it needs all of (`All`), in slice order.
        self._pools: dict[ExactRequest, tuple[list[int], list[int]]] = {}

    def _devices_for(self, alt: ExactRequest) -> tuple[list[int], list[int]]:
        found = self._pools.get(alt)
        if found is None:
            available = self.local[self.allocator.available(alt)[self.local]].tolist()
            every: list[int] = []
            if alt.allocation_mode == "All":
                eligible = self.allocator.eligible(alt)[0] & self.state.tolerated(alt.tolerations)
                every = self.local[eligible[self.local]].tolist()
            found = self._pools[alt] = (available, every)
        return found

    def run(self) -> list[list[Choice]] | None:
        """The devices chosen for each slot, or None when there is no way (or the budget ran out)."""
        stack: list[_Slot | _Pick] = [_Slot(0)]
        while stack:
            self.budget -= 1  # every step counts, the devices it looks at too: the loop is bounded
            if self.budget <= 0:
                return None
            step = stack[-1]
            if isinstance(step, _Slot):
                if step.slot == len(self.slots):
                    return self.chosen
                following = self._alternative(step)
            else:
                following = self._device(step)
            if following is None:
                stack.pop()
                if self.budget <= 0:
                    return None
            else:
                stack.append(following)
        return None

    def _alternative(self, step: _Slot) -> _Pick | _Slot | None:
        """The first step of the slot's next alternative that has devices enough on the node; None when none
        is left."""
        alternatives = self.slots[step.slot][1].alternatives
        while step.next_alternative < len(alternatives):
            alt = alternatives[step.next_alternative]
            step.next_alternative += 1
            available, every = self._devices_for(alt)
            pool = [d for d in available if d not in self.used]
            count = alt.count
            if alt.allocation_mode == "All":
                free = set(pool)
                if not every or any(d not in free for d in every):
                    continue
                pool, count = every, len(every)
            if count == 0:
                return _Slot(step.slot + 1)
            return _Pick(step.slot, alt, pool, count)
        return None

    def _device(self, step: _Pick) -> _Pick | _Slot | None:
        """Undo the step's last device and choose the next one that keeps the constraints; the step after it
        (another device for the slot, or the next slot); None when the pool is exhausted or the budget spent."""
        if step.device is not None:
            self.chosen[step.slot].pop()
            self.used.discard(step.device)
            step.device = None
        alt = step.alternative
        need = self.allocator.eligible(alt)[1]
        for position in range(step.position, len(step.pool) - step.left + 1):  # room left for the rest
            self.budget -= 1
            if self.budget <= 0:
                return None
            d = step.pool[position]
            if d in self.used or not self._consistent(step.slot, d, alt.name):
                continue
            self.used.add(d)
            consumed = tuple(int(x) for x in need[d]) if self.state.shared[d] else ()
            self.chosen[step.slot].append(Choice(alt.name, d, consumed, alt.tolerations))
            step.device, step.position = d, position + 1
            if step.left > 1:
                return _Pick(step.slot, alt, step.pool, step.left - 1, position + 1)
            return _Slot(step.slot + 1)
        return None

    def _attribute(self, d: int, name: str) -> object:
        return self.state.devices[d].attributes.get(name, _MISSING)

    def _consistent(self, slot: int, d: int, request_name: str) -> bool:
        """Whether device `d` for the slot keeps every constraint of its claim with the devices chosen so far."""
        claim = self.slots[slot][0]
        for constraint in claim.claim.spec.constraints:
            if constraint.requests and request_name.split("/")[0] not in constraint.requests and \
                    request_name not in constraint.requests:
                continue
            attr = constraint.match_attribute or constraint.distinct_attribute or ""
            value = self._attribute(d, attr)
            if value is _MISSING:
                return False
            others = [self._attribute(c.device, attr) for i, (state, _) in enumerate(self.slots) if state is claim
                      for c in self.chosen[i]
                      if not constraint.requests or c.request.split("/")[0] in constraint.requests
                      or c.request in constraint.requests]
            if constraint.match_attribute and any(v != value for v in others):
                return False
            if constraint.distinct_attribute and any(v == value for v in others):
                return False
        return True


def device_allocator(cluster: ClusterState) -> DeviceAllocator:
    """The allocator of the cluster's devices, made on first use (a typed extension of the cluster)."""
    allocator = cluster.extension(DeviceAllocator)
    if allocator is None:
        allocator = DeviceAllocator(device_state(cluster))
        cluster.add_extension(allocator)
    return allocator
