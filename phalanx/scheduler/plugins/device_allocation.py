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

import numpy as np

from phalanx.api.dra import DeviceRequest, ExactRequest
from phalanx.api.objects import Pod
from phalanx.cluster.devices import Choice, ClaimState, DeviceState, device_state
from phalanx.cluster.state import BoolArray, ClusterState, IntArray

MAX_HALL_REQUESTS = 4
SEARCH_BUDGET = 20_000  # device choices tried per node before a search gives up (counts as "cannot allocate")


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
            mask &= self._hall([options[0] for options in groups], mask)
        elif search:
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
        return not pending or self.search(pod, node, pending) is not None

    def _hall(self, items: list[tuple[BoolArray, IntArray, BoolArray]], mask: BoolArray) -> BoolArray:
        """Hall's condition for requests that compete for devices: every subset's devices cover its count."""
        k = len(items)
        out = mask.copy()
        # Requests whose available devices are disjoint never compete: only overlapping ones need subsets.
        overlap = [[bool((items[i][0] & items[j][0]).any()) for j in range(k)] for i in range(k)]
        if not any(overlap[i][j] for i in range(k) for j in range(k) if i != j):
            return out
        if k > MAX_HALL_REQUESTS:
            return np.zeros_like(mask)  # the caller's search settles it
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
        used: set[int] = set()
        chosen: dict[int, list[Choice]] = {i: [] for i in range(len(slots))}
        budget = [SEARCH_BUDGET]

        def candidates(alt: ExactRequest) -> list[int]:
            avail = self.available(alt)
            return [d for d in local.tolist() if avail[d] and d not in used]

        def attribute(d: int, name: str) -> object:
            return self.state.devices[d].attributes.get(name, _MISSING)

        def consistent(slot: int, d: int, request_name: str) -> bool:
            state = slots[slot][0]
            for constraint in state.claim.spec.constraints:
                if constraint.requests and request_name.split("/")[0] not in constraint.requests and \
                        request_name not in constraint.requests:
                    continue
                attr = constraint.match_attribute or constraint.distinct_attribute or ""
                value = attribute(d, attr)
                if value is _MISSING:
                    return False
                others = [attribute(c.device, attr) for i in range(len(slots)) if slots[i][0] is state
                          for c in chosen[i]
                          if not constraint.requests or c.request.split("/")[0] in constraint.requests
                          or c.request in constraint.requests]
                if constraint.match_attribute and any(v != value for v in others):
                    return False
                if constraint.distinct_attribute and any(v == value for v in others):
                    return False
            return True

        def pick(slot: int, alt: ExactRequest, pool: list[int], count: int, first: int) -> bool:
            """Choose `count` more devices for the slot from `pool[first:]` (in order), then the next slots."""
            if count == 0:
                return place(slot + 1)
            need = self.eligible(alt)[1]
            for pos in range(first, len(pool)):
                budget[0] -= 1
                if budget[0] <= 0:
                    return False
                d = pool[pos]
                if d in used or not consistent(slot, d, alt.name):
                    continue
                used.add(d)
                consumed = tuple(int(x) for x in need[d]) if self.state.shared[d] else ()
                chosen[slot].append(Choice(alt.name, d, consumed, alt.tolerations))
                if pick(slot, alt, pool, count - 1, pos + 1):
                    return True
                chosen[slot].pop()
                used.discard(d)
            return False

        def place(slot: int) -> bool:
            if slot == len(slots):
                return True
            _, request = slots[slot]
            for alt in request.alternatives:
                cands = candidates(alt)
                count = alt.count
                if alt.allocation_mode == "All":
                    eligible = self.eligible(alt)[0] & self.state.tolerated(alt.tolerations)
                    every = [d for d in local.tolist() if eligible[d]]
                    if not every or any(d not in cands for d in every):
                        continue
                    cands, count = every, len(every)
                if pick(slot, alt, cands, count, 0):
                    return True
                if budget[0] <= 0:
                    return False
            return False

        if not place(0):
            return None
        out: dict[str, list[Choice]] = {}
        for i, (state, _) in enumerate(slots):
            out.setdefault(state.key, []).extend(chosen[i])
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


def device_allocator(cluster: ClusterState) -> DeviceAllocator:
    """The allocator of the cluster's devices, made on first use (a typed extension of the cluster)."""
    allocator = cluster.extension(DeviceAllocator)
    if allocator is None:
        allocator = DeviceAllocator(device_state(cluster))
        cluster.add_extension(allocator)
    return allocator
