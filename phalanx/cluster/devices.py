"""DRA device state: every device of every ResourceSlice as NumPy arrays, claims and their allocations.

Devices are rows: the node a device is on (or -1 for a device reachable from several nodes, with a node
mask of its own), how many allocations hold it, the capacity it offers and has consumed (KEP-5075 shared
devices: `allowMultipleAllocations`), and an id of its taint set (slice taints plus DeviceTaintRules; they
add up). CEL selectors are evaluated once per (expression, device) into a boolean vector over devices.
Slices, classes and claims can be added again (the new object replaces the old) and deleted; a device its
slice no longer lists is retired (reachable from no node) and stays with the claim holding it.

The state holds and records; it does not choose. Which devices serve a pod's claims on which node is the
allocator's job (`phalanx.scheduler.plugins.dra.device_allocation`); `reserve` then records its choice. The
PodGroup PostFilter step and the device-taint eviction controller are DRA's too (`phalanx.scheduler.plugins.dra`):
they read and change this state through its methods. While a ClusterState trial is open, every claim change is
journaled so that the trial can undo it exactly.

The state is a typed extension of the ClusterState (`ClusterState.extension(DeviceState)`), as `gpus.GpuTable`
is for the openb replay: that table is a per-GPU milli table fed by the trace's extended resources; a shared
device here is the general model of the same thing, described by ResourceSlices.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import cel
import numpy as np
import numpy.typing as npt

from phalanx.api.dra import (
    CEL_FUNCTIONS,
    ClaimSpec,
    Device,
    DeviceClass,
    DeviceRequest,
    DeviceTaint,
    DeviceTaintRule,
    DeviceToleration,
    ExactRequest,
    NetworkData,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
    claim_from_template,
    compile_selector,
)
from phalanx.api.names import generated_name
from phalanx.api.objects import Pod, PodGroup, PodResourceClaim, SelectorTerm
from phalanx.api.tolerations import first_untolerated
from phalanx.cluster.state import ClusterState

BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int64]
EXTENDED_CLAIM = "extended-resources"
IMPLICIT_CLASS_PREFIX = "deviceclass.resource.kubernetes.io/"


@dataclass(frozen=True, slots=True)
class Choice:
    """One allocated device: for which request (or `request/subrequest`), which device, what it consumes."""

    request: str
    device: int
    consumed: tuple[int, ...] = ()  # per capacity column, for shared devices
    tolerations: tuple[DeviceToleration, ...] = ()


@dataclass(slots=True)
class ClaimState:
    claim: ResourceClaim
    owner: str | None = None  # the pod a template (or extended-resource) claim belongs to
    allocation: tuple[Choice, ...] | None = None
    reach: BoolArray | None = None  # nodes that can use the allocation (its node selector)
    reserved_for: set[str] = field(default_factory=set)  # pods using it
    evicting: str | None = None  # why its pods are being evicted (an untolerated NoExecute taint)
    group: str | None = None  # the PodGroup it is a claim of (DRAWorkloadResourceClaims), if any
    # The PodGroup named in `status.reservedFor`: its members reserve it as a group, and the reservation
    # lasts while the PodGroup exists, whether members run or not.
    group_reserved: str | None = None

    @property
    def key(self) -> str:
        return self.claim.key

    @property
    def in_use(self) -> bool:
        """Reserved for a pod or a PodGroup (its `status.reservedFor` is not empty)."""
        return bool(self.reserved_for) or self.group_reserved is not None


def group_claim_name(group: PodGroup, entry: PodResourceClaim) -> str:
    """The ResourceClaim a PodGroup's `spec.resourceClaims` entry stands for: the named claim, or the one the
    resourceclaim controller makes from the template (`handlePodGroupClaim`): the one the PodGroup's
    `status.resourceClaimStatuses` names, otherwise a new one with generateName `<podgroup>-<entry>-`, both
    parts shortened in proportion when longer than 57 characters, plus five characters the API server picks
    at random (here derived from the PodGroup and entry, to be repeatable)."""
    if entry.claim_name is not None:
        return entry.claim_name
    recorded = dict(group.claim_statuses).get(entry.name)
    if recorded is not None:  # the controller made it already (a snapshot's, or the API server's status)
        return recorded
    base = f"{group.name}-{entry.name}-"
    if len(base) > 57:
        base = (group.name[: len(group.name) * 57 // len(base)] + "-"
                + entry.name[: len(entry.name) * 57 // len(base)])
    return generated_name(base, f"{group.key}/{entry.name}")


def _cel_device(driver: str, device: Device) -> dict[str, object]:
    attributes: dict[str, dict[str, object]] = {}
    for name, value in device.attributes.items():
        domain, _, short = name.rpartition("/")
        attributes.setdefault(domain, {})[short] = value
    capacity: dict[str, dict[str, object]] = {}
    for name, cap in device.capacity.items():
        domain, _, short = name.rpartition("/")
        capacity.setdefault(domain, {})[short] = cap.value
    return {"driver": driver, "attributes": attributes, "capacity": capacity,
            "allowMultipleAllocations": device.allow_multiple}


class DeviceState:
    """All devices as arrays, with the claims that allocate them."""

    def __init__(self, cluster: ClusterState) -> None:
        self.cluster = cluster
        self.devices: list[Device] = []
        self.slice_of: list[ResourceSlice] = []
        self.node_name: list[str | None] = []
        self.selectors: list[tuple[SelectorTerm, ...] | None] = []  # node selector of a non-local device
        self.node: npt.NDArray[np.int32] = np.zeros(0, dtype=np.int32)
        self.allocations: npt.NDArray[np.int32] = np.zeros(0, dtype=np.int32)
        self.shared: BoolArray = np.zeros(0, dtype=bool)  # allowMultipleAllocations
        self.cap_names: list[str] = []
        self.cap_total: IntArray = np.zeros((0, 0), dtype=np.int64)
        self.cap_used: IntArray = np.zeros((0, 0), dtype=np.int64)
        self.taint_sets: list[tuple[DeviceTaint, ...]] = [()]
        self._taint_ids: dict[tuple[DeviceTaint, ...], int] = {(): 0}
        self.taint_set: npt.NDArray[np.int32] = np.zeros(0, dtype=np.int32)
        self.rule_of: dict[DeviceTaint, str] = {}
        self.index: dict[tuple[str, str, str], int] = {}
        self.classes: dict[str, DeviceClass] = {}
        self.templates: dict[str, ResourceClaimTemplate] = {}
        self._slices: dict[str, ResourceSlice] = {}  # by name: a slice added again replaces its devices
        self.claims: dict[str, ClaimState] = {}
        self.groups: dict[str, PodGroup] = {}  # PodGroups with spec.resourceClaims, by key
        self.extended: dict[str, str] = {}  # extended resource name -> device class (KEP-5004)
        self.version = 0  # bumps whenever availability changes
        self.catalog = 0  # bumps whenever devices or classes change (what a request is eligible for)
        self._known_nodes = 0
        self._remote: IntArray = np.zeros(0, dtype=np.int64)  # devices with node -1
        self._reach: dict[int, BoolArray] = {}  # non-local device -> nodes that reach it
        self._by_node: list[IntArray] = []
        self._selector_cache: dict[str, BoolArray] = {}
        self._selector_done: dict[str, BoolArray] = {}
        self._cel_inputs: list[dict[str, object]] = []
        self._cel_keys: list[str] = []  # devices with equal CEL inputs share one evaluation
        self._cel_results: dict[tuple[str, str], bool] = {}
        self._order: IntArray = np.zeros(0, dtype=np.int64)
        self._uniform = 0
        self._bounds: IntArray = np.zeros(1, dtype=np.int64)
        self._tolerated: dict[tuple[tuple[DeviceToleration, ...], int], BoolArray] = {}
        # Pods lifted off their nodes by a preemption dry run whose claims stay allocated and reserved (`keep`).
        self.kept: set[str] = set()
        # The claims the last failed PodGroup cycle's PostFilter deallocated or unreserved, as they were (its
        # PodGroup, then per claim: state, allocation, reach, PodGroup reservation): that cycle's preemption
        # dry run still sees them so (`phalanx.scheduler.plugins.dra.post_filter`).
        self.post_filtered: tuple[str, list[tuple[ClaimState, tuple[Choice, ...] | None, BoolArray | None,
                                                  str | None]]] | None = None

    def __len__(self) -> int:
        return len(self.devices)

    # --- objects ---------------------------------------------------------------------------------------

    def add_classes(self, classes: Iterable[DeviceClass]) -> None:
        """Add DeviceClasses; one with a known name replaces the earlier one."""
        for device_class in classes:
            self._drop_extended(device_class.name)
            self.classes[device_class.name] = device_class
            self.extended[IMPLICIT_CLASS_PREFIX + device_class.name] = device_class.name
            if device_class.extended_resource_name:
                self.extended[device_class.extended_resource_name] = device_class.name
        self.catalog += 1
        self.version += 1  # what `available` answered for a request of a changed class is stale

    def _drop_extended(self, class_name: str) -> None:
        for resource in [r for r, c in self.extended.items() if c == class_name]:
            del self.extended[resource]

    def delete_class(self, name: str) -> None:
        if self.classes.pop(name, None) is not None:
            self._drop_extended(name)
            self.catalog += 1
            self.version += 1

    def add_templates(self, templates: Iterable[ResourceClaimTemplate]) -> None:
        for template in templates:
            self.templates[template.key] = template

    def delete_template(self, key: str) -> None:
        self.templates.pop(key, None)

    def add_claims(self, claims: Iterable[ResourceClaim]) -> None:
        """Add ResourceClaims. A known claim takes the new object only while no pod here uses it: once the
        engine allocates or reserves a claim, its own allocation is the one the claim's status will hold."""
        for claim in claims:
            state = self.claims.get(claim.key)
            if state is None:
                self.claims[claim.key] = ClaimState(claim)
            elif not state.in_use:
                if state.allocation is not None and not claim.allocated:
                    self.deallocate(state)  # deallocated in the API (its last pod is gone)
                state.claim = claim

    def delete_claim(self, key: str) -> None:
        """A deleted claim goes once no pod uses it (the API server keeps a reserved claim too)."""
        state = self.claims.get(key)
        if state is None or state.in_use:
            return
        if state.allocation is not None:
            self.deallocate(state)
        del self.claims[key]

    # --- PodGroup claims (DRAWorkloadResourceClaims) ------------------------------------------------------

    def add_pod_group(self, group: PodGroup) -> None:
        """A PodGroup with `spec.resourceClaims` appears: the claims of its template entries are made now, one
        per PodGroup, owned by it (the resourceclaim controller's `syncPodGroup`); named entries are used as
        they are."""
        if not group.resource_claims:
            self.groups.pop(group.key, None)
            return
        self.groups[group.key] = group
        for entry in group.resource_claims:
            self._group_claim(group, entry)

    def _group_claim(self, group: PodGroup, entry: PodResourceClaim) -> ClaimState | None:
        key = f"{group.namespace}/{group_claim_name(group, entry)}"
        state = self.claims.get(key)
        if state is None and entry.template_name is not None:
            template = self.templates.get(f"{group.namespace}/{entry.template_name}")
            if template is None:
                return None
            claim = dataclasses.replace(claim_from_template(template, group.namespace, group.name, entry),
                                        name=group_claim_name(group, entry))
            state = ClaimState(claim, group=group.key)
            self.claims[key] = state
            self.cluster.record(functools.partial(self.claims.pop, key, None))
        if state is not None and state.group is None:
            state.group = group.key
        return state

    def claim_statuses(self, group_key: str) -> list[dict[str, str]]:
        """The PodGroup's `status.resourceClaimStatuses`: the claim made for each template entry."""
        group = self.groups.get(group_key)
        if group is None:
            return []
        return [{"name": entry.name, "resourceClaimName": group_claim_name(group, entry)}
                for entry in group.resource_claims if entry.template_name is not None
                and f"{group.namespace}/{group_claim_name(group, entry)}" in self.claims]

    def delete_pod_group(self, key: str) -> None:
        """A PodGroup is deleted: the resourceclaim controller drops it from its claims' `reservedFor`
        (`syncClaim`), which deallocates a claim no pod reserves, and the garbage collector deletes the claims
        it owns once no pod uses them."""
        group = self.groups.pop(key, None)
        if group is None:
            return
        for entry in group.resource_claims:
            claim_key = f"{group.namespace}/{group_claim_name(group, entry)}"
            state = self.claims.get(claim_key)
            if state is None or state.group != key:
                continue
            self.remember(state)
            state.group_reserved = None
            if not state.reserved_for:
                if state.allocation is not None:
                    self.deallocate(state)
                if entry.template_name is not None:
                    del self.claims[claim_key]

    def claim_key(self, pod: Pod, ref: PodResourceClaim) -> str:
        """The claim (`namespace/name`) the pod's entry refers to. An entry equal to one of its PodGroup's
        (same name, same resourceClaimName or resourceClaimTemplateName) is the group's claim, bound to the
        PodGroup (`resourceclaim.BindTo`); any other entry is the pod's own."""
        group = self.groups.get(pod.group_key) if pod.group_key is not None else None
        if group is not None and ref in group.resource_claims:
            return f"{group.namespace}/{group_claim_name(group, ref)}"
        return f"{pod.namespace}/{ref.claim_for(pod.name)}"

    def add_slices(self, slices: Sequence[ResourceSlice]) -> None:
        """Add ResourceSlices. A slice with a known name replaces the earlier one: devices it still lists are
        updated in place (allocations kept), devices it no longer lists are retired, new ones are added."""
        rows: list[tuple[ResourceSlice, Device]] = []
        for s in slices:
            old = self._slices.get(s.name)
            self._slices[s.name] = s
            if old is None:
                rows.extend((s, d) for d in s.devices)
                continue
            rows.extend(self._replace_slice(old, s))
        if rows:
            self._append(rows)
        if slices:
            self._devices_changed()

    def delete_slice(self, name: str) -> None:
        """Every device of the slice is retired (a claim that holds one keeps it until its pods are gone)."""
        old = self._slices.pop(name, None)
        if old is None:
            return
        for device in old.devices:
            d = self.index.get((old.driver, old.pool, device.name))
            if d is not None and self.slice_of[d] is old:
                self._retire(d)
        self._devices_changed()

    def _replace_slice(self, old: ResourceSlice, new: ResourceSlice) -> list[tuple[ResourceSlice, Device]]:
        """Update the devices `new` keeps, retire those it dropped; the devices that are new, to append."""
        fresh: list[tuple[ResourceSlice, Device]] = []
        kept: set[int] = set()
        for device in new.devices:
            d = self.index.get((new.driver, new.pool, device.name))
            if d is None or self.slice_of[d] is not old:
                fresh.append((new, device))
                continue
            kept.add(d)
            self._describe(d, new, device)
            for name in device.capacity:
                if name not in self.cap_names:
                    self._widen_capacity(name)
            self.cap_total[d] = 0
            for name, cap in device.capacity.items():
                self.cap_total[d, self.cap_names.index(name)] = cap.value
            self.shared[d] = device.allow_multiple
            self.taint_set[d] = self._taint_id(device.taints)
        for device in old.devices:
            d = self.index.get((old.driver, old.pool, device.name))
            if d is not None and d not in kept and self.slice_of[d] is old:
                self._retire(d)
        return fresh

    def _describe(self, d: int, s: ResourceSlice, device: Device) -> None:
        """The device's own fields and where it lives (its node, or the node selector of a network device)."""
        self.devices[d] = device
        self.slice_of[d] = s
        per_device = s.per_device_node_selection
        selector = device.node_selector if per_device else s.node_selector
        all_nodes = device.all_nodes if per_device else s.all_nodes
        self.node_name[d] = device.node_name if per_device else s.node_name
        self.selectors[d] = selector if selector is not None else (() if all_nodes else None)
        self._cel_inputs[d] = _cel_device(s.driver, device)
        self._cel_keys[d] = repr(self._cel_inputs[d])

    def _retire(self, d: int) -> None:
        """A device that no slice lists any more: reachable from no node, so never allocated again."""
        s, device = self.slice_of[d], self.devices[d]
        self.index.pop((s.driver, s.pool, device.name), None)
        self.node_name[d] = None
        self.selectors[d] = None

    def _widen_capacity(self, name: str) -> None:
        self.cap_names.append(name)
        pad = np.zeros((len(self.devices), 1), dtype=np.int64)
        self.cap_total = np.hstack([self.cap_total, pad])
        self.cap_used = np.hstack([self.cap_used, pad])

    def _append(self, rows: list[tuple[ResourceSlice, Device]]) -> None:
        start = len(self.devices)
        for s, d in rows:
            self.index[(s.driver, s.pool, d.name)] = len(self.devices)
            self.devices.append(d)
            self.slice_of.append(s)
            self.node_name.append(None)
            self.selectors.append(None)
            self._cel_inputs.append({})
            self._cel_keys.append("")
            self._describe(len(self.devices) - 1, s, d)
            for name in d.capacity:
                if name not in self.cap_names:
                    self.cap_names.append(name)
        count = len(rows)
        width = len(self.cap_names)
        total = np.zeros((len(self.devices), width), dtype=np.int64)
        used = np.zeros_like(total)
        total[:start, : self.cap_total.shape[1]] = self.cap_total
        used[:start, : self.cap_used.shape[1]] = self.cap_used
        for i, (_, d) in enumerate(rows):
            for name, cap in d.capacity.items():
                total[start + i, self.cap_names.index(name)] = cap.value
        self.cap_total, self.cap_used = total, used
        self.node = np.concatenate([self.node, np.full(count, -1, dtype=np.int32)])
        self.allocations = np.concatenate([self.allocations, np.zeros(count, dtype=np.int32)])
        self.shared = np.concatenate([self.shared, np.array([d.allow_multiple for _, d in rows], dtype=bool)])
        self.taint_set = np.concatenate([self.taint_set, np.array([self._taint_id(d.taints) for _, d in rows],
                                                                  dtype=np.int32)])

    def _devices_changed(self) -> None:
        self._known_nodes = -1  # resolve node names and selectors again
        self.node[:] = -1
        self._selector_cache.clear()
        self._selector_done.clear()
        self.catalog += 1
        self._tolerated.clear()
        self.version += 1

    def _taint_id(self, taints: tuple[DeviceTaint, ...]) -> int:
        if taints not in self._taint_ids:
            self._taint_ids[taints] = len(self.taint_sets)
            self.taint_sets.append(taints)
        return self._taint_ids[taints]

    def sync_nodes(self) -> None:
        """Map devices to node indices (nodes may arrive after their slices)."""
        n = len(self.cluster)
        if self._known_nodes == n:
            return
        self._known_nodes = n
        index = self.cluster.index
        reach: dict[int, BoolArray] = {}
        for d, name in enumerate(self.node_name):
            if name is not None:
                self.node[d] = index.get(name, -1)
                continue
            terms = self.selectors[d]
            if terms is None:
                continue
            if not terms:  # allNodes
                reach[d] = np.ones(n, dtype=bool)
            else:
                reach[d] = np.array([any(t.matches(self.cluster.names[i], self.cluster.labels.labels(i))
                                         for t in terms) for i in range(n)], dtype=bool)
        self._reach = reach
        self._remote = np.array(sorted(reach), dtype=np.int64)
        order = np.argsort(self.node, kind="stable")
        bounds = np.searchsorted(self.node[order], np.arange(n + 1))
        self._order, self._bounds = order, bounds
        # A fleet whose slices list every node's devices together, k per node: counts are a reshape away.
        per = len(self) // n if n else 0
        self._uniform = per if (per and per * n == len(self) and not reach
                                and np.array_equal(self.node, np.repeat(np.arange(n, dtype=np.int32), per))) else 0
        self._by_node = [order[bounds[i]:bounds[i + 1]].astype(np.int64) for i in range(n)]
        for i in range(n):  # the node's own devices, then devices it reaches over the network
            extra = [d for d in self._remote.tolist() if reach[d][i]]
            if extra:
                self._by_node[i] = np.concatenate([self._by_node[i], np.array(extra, dtype=np.int64)])

    def nodes_changed(self) -> None:
        """Node labels changed: which nodes reach a network device (its node selector) is worked out again."""
        self._known_nodes = -1
        self.version += 1

    def on_node(self, node: int) -> IntArray:
        self.sync_nodes()
        return self._by_node[node]

    # --- taints -----------------------------------------------------------------------------------------

    def rule_mask(self, rule: DeviceTaintRule) -> BoolArray:
        sel = rule.selector
        mask = np.ones(len(self), dtype=bool)
        for d, device in enumerate(self.devices):
            s = self.slice_of[d]
            if (sel.driver and s.driver != sel.driver) or (sel.pool and s.pool != sel.pool) or \
                    (sel.device and device.name != sel.device):
                mask[d] = False
        if sel.device_class_name is not None:
            mask &= self.class_mask(sel.device_class_name)
        for expression in sel.selectors:
            mask &= self.selector_mask(expression, mask)
        return mask

    def add_taint_rule(self, rule: DeviceTaintRule) -> int:
        """Add the rule's taint to every device it selects; returns how many devices it tainted."""
        mask = self.rule_mask(rule)
        self.rule_of[rule.taint] = rule.name
        for d in np.flatnonzero(mask).tolist():
            self.taint_set[d] = self._taint_id((*self.taint_sets[int(self.taint_set[d])], rule.taint))
        self._tolerated.clear()
        self.version += 1
        return int(mask.sum())

    def taints(self, device: int) -> tuple[DeviceTaint, ...]:
        return self.taint_sets[int(self.taint_set[device])]

    def tolerated(self, tolerations: tuple[DeviceToleration, ...]) -> BoolArray:
        """Devices without an untolerated NoSchedule/NoExecute taint."""
        key = (tolerations, len(self))
        cached = self._tolerated.get(key)
        if cached is None:
            per_set = np.array([first_untolerated(t, tolerations, harmless="None") is None
                                for t in self.taint_sets], dtype=bool)
            cached = per_set[self.taint_set]
            self._tolerated[key] = cached
        return cached

    # --- selectors and eligibility ----------------------------------------------------------------------

    def selector_mask(self, expression: str, among: BoolArray | None = None) -> BoolArray:
        """Devices the CEL expression selects, evaluated once per device and cached. An evaluation error
        (a missing attribute, a type mismatch) counts as "not selected"; devices outside `among` are not
        evaluated (a class's selectors guard its requests' selectors, as kube evaluates them in order)."""
        cached = self._selector_cache.setdefault(expression, np.zeros(len(self), dtype=bool))
        evaluated = self._selector_done.setdefault(expression, np.zeros(len(self), dtype=bool))
        wanted = np.ones(len(self), dtype=bool) if among is None else among
        todo = np.flatnonzero(wanted & ~evaluated)
        if todo.size:
            program = compile_selector(expression)
            context = cel.Context(functions=CEL_FUNCTIONS)
            for d in todo.tolist():
                key = (expression, self._cel_keys[d])
                result = self._cel_results.get(key)
                if result is None:
                    context.add_variable("device", self._cel_inputs[d])
                    try:
                        result = program.execute(context) is True
                    except BaseException as exc:  # a runtime error (division by zero, overflow, …) or a panic
                        if isinstance(exc, KeyboardInterrupt | SystemExit):
                            raise
                        result = False
                    self._cel_results[key] = result
                cached[d] = result
            evaluated[todo] = True
        return cached

    def class_mask(self, name: str) -> BoolArray:
        device_class = self.classes.get(name)
        if device_class is None:
            return np.zeros(len(self), dtype=bool)
        mask = np.ones(len(self), dtype=bool)
        for expression in device_class.selectors:
            mask = mask & self.selector_mask(expression, mask)
        return mask

    # --- claims of a pod --------------------------------------------------------------------------------

    def translate(self, pod: Pod, mapping: dict[str, str] | None = None) -> Pod:
        """The pod with extended-resource requests served by devices (KEP-5004) moved into a claim of its own
        (`<pod>-extended-resources`); the pod itself unchanged when none of its requests is mapped."""
        if not self.extended and not mapping:
            return pod  # nothing maps extended resources onto devices: the common case, kept free
        table = {**self.extended, **(mapping or {})}
        mapped = {name: value for name, value in pod.requests.items() if name in table}
        if not mapped:
            return pod
        requests = tuple(DeviceRequest(f"request-{i}", exactly=ExactRequest(f"request-{i}", table[name],
                                                                            count=value))
                         for i, (name, value) in enumerate(sorted(mapped.items())) if value > 0)
        name = f"{pod.name}-{EXTENDED_CLAIM}"
        key = f"{pod.namespace}/{name}"
        if key not in self.claims:
            self.claims[key] = ClaimState(ResourceClaim(pod.namespace, name, ClaimSpec(requests)), owner=pod.key)
        return dataclasses.replace(pod, requests={k: v for k, v in pod.requests.items() if k not in mapped},
                                   resource_claims=(*pod.resource_claims, PodResourceClaim(EXTENDED_CLAIM, name)))

    def pod_claims(self, pod: Pod) -> list[ClaimState]:
        """The pod's claims, making those from templates on first use (as the resourceclaim controller does)."""
        out: list[ClaimState] = []
        for ref in pod.resource_claims:
            key = self.claim_key(pod, ref)
            state = self.claims.get(key)
            if state is None and pod.group_key in self.groups and ref in self.groups[pod.group_key].resource_claims:
                state = self._group_claim(self.groups[pod.group_key], ref)
                if state is None:
                    raise KeyError(f"pod {pod.key}: no ResourceClaimTemplate {pod.namespace}/{ref.template_name}")
            if state is None:
                if ref.template_name is None:
                    raise KeyError(f"pod {pod.key}: no ResourceClaim {key}")
                template = self.templates[f"{pod.namespace}/{ref.template_name}"]
                state = ClaimState(claim_from_template(template, pod.namespace, pod.name, ref), owner=pod.key)
                self.claims[key] = state
                self.cluster.record(functools.partial(self.claims.pop, key, None))
            out.append(state)
        return out

    def forget_pod(self, pod: Pod) -> None:
        """A deleted pod's own claims (from templates, or for extended resources) are deleted with it."""
        for ref in (*pod.resource_claims, PodResourceClaim(EXTENDED_CLAIM, f"{pod.name}-{EXTENDED_CLAIM}")):
            key = self.claim_key(pod, ref)
            state = self.claims.get(key)
            if state is not None and state.owner == pod.key and not state.in_use:
                del self.claims[key]

    # --- devices per node -------------------------------------------------------------------------------

    def count_per_node(self, devices: BoolArray) -> IntArray:
        """Per node, how many of the marked devices it can use."""
        self.sync_nodes()
        if self._uniform:
            uniform: IntArray = np.count_nonzero(devices.reshape(-1, self._uniform), axis=1).astype(np.int64)
            return uniform
        running = np.zeros(len(self) + 1, dtype=np.int64)
        np.cumsum(devices[self._order], out=running[1:])
        counts: IntArray = running[self._bounds[1:]] - running[self._bounds[:-1]]
        if self._remote.size:
            for d in self._remote[devices[self._remote]].tolist():
                counts += self._reach[d]
        return counts

    def usable_nodes(self, state: ClaimState) -> BoolArray:
        """Nodes that can use an allocated claim's devices (none while it is being evicted)."""
        n = len(self.cluster)
        if state.evicting is not None or state.reach is None:
            return np.zeros(n, dtype=bool)
        if state.reach.shape[0] != n:
            state.reach = np.concatenate([state.reach, np.zeros(n - state.reach.shape[0], dtype=bool)])
        return state.reach

    # --- allocation -------------------------------------------------------------------------------------

    def reserve(self, pod: Pod, node: int, found: Mapping[str, tuple[Choice, ...]]) -> None:
        """Allocate the pod's unallocated claims on `node` with the devices `found` for them (by claim key,
        from the allocator) and reserve every claim for the pod."""
        states = self.pod_claims(pod)
        for state in states:
            self.remember(state)
        for state in states:
            if state.allocation is None:
                self._allocate(state, found.get(state.key, ()), node)
            state.reserved_for.add(pod.key)
            if state.group is not None and state.group == pod.group_key:
                state.group_reserved = state.group  # PreBind writes the PodGroup, not the pod, into reservedFor

    def pin(self, state: ClaimState, choices: tuple[Choice, ...]) -> None:
        """Hold the devices of a claim allocated elsewhere (its status says so) before any pod here uses it."""
        self.remember(state)
        self._allocate(state, choices, -1)

    def _allocate(self, state: ClaimState, choices: tuple[Choice, ...], node: int) -> None:
        self.sync_nodes()
        n = len(self.cluster)
        reach = np.ones(n, dtype=bool)
        self.hold(choices, 1)
        for choice in choices:
            d = choice.device
            if self.node[d] >= 0:
                only = np.zeros(n, dtype=bool)
                only[self.node[d]] = True
                reach &= only
            elif d in self._reach:
                reach &= self._reach[d]
        state.allocation = choices
        state.reach = reach
        self.version += 1

    def keep(self, pod: Pod) -> None:
        """The pod leaves its node in a preemption dry run but its claims keep their devices: the following
        `unreserve` changes nothing and `restore` only ends the keeping. This is kube-scheduler v1.37.2's dry run:
        DynamicResources.PreFilter builds its allocator from the claim tracker (`ListAllAllocatedDevices`,
        `GatherAllocatedState`), not from the snapshot, and its `PreFilterExtensions` is nil, so removing a victim
        (`SelectVictimsOnNode`, `PodGroupEvaluator.selectVictimsOnDomain`) frees none of its devices. Only
        inside a trial, which undoes it: outside one a pod taken off its node really leaves (no keeping)."""
        if pod.key in self.kept or not self.cluster.journaling:
            return
        self.kept.add(pod.key)
        self.cluster.record(functools.partial(self.kept.discard, pod.key))

    def release(self, pod: Pod) -> None:
        """End `keep` for a lifted pod and let its claims go as `unreserve` does (the `preemptForDevices` dry run
        frees a victim's devices); a claim another pod still reserves stays allocated."""
        if self._unkeep(pod):
            self.unreserve(pod)

    def _unkeep(self, pod: Pod) -> bool:
        if pod.key not in self.kept:
            return False
        self.kept.discard(pod.key)
        self.cluster.record(functools.partial(self.kept.add, pod.key))
        return True

    def unreserve(self, pod: Pod) -> None:
        """The pod no longer uses its claims; a claim nobody uses any more is deallocated (the resourceclaim
        controller drops a gone pod from `reservedFor` and clears the allocation of a claim nobody reserves).
        A PodGroup's claim stays reserved for the PodGroup, so allocated, while the PodGroup exists (`syncClaim`
        keeps a PodGroup entry until it is deleted; Unreserve skips claims reserved for the PodGroup); only one
        being evicted for a NoExecute taint is deallocated once no member uses it, as the PodGroup's next failed
        cycle does for a claim no node can use (`deallocatePodGroupClaims`)."""
        if pod.key in self.kept:
            return
        for ref in pod.resource_claims:
            state = self.claims.get(self.claim_key(pod, ref))
            if state is None:
                continue
            self.remember(state)
            state.reserved_for.discard(pod.key)
            if state.group_reserved is not None and not state.reserved_for and state.evicting is not None:
                state.group_reserved = None
            if not state.in_use and state.allocation is not None:
                self.deallocate(state)

    def holding(self, pod: Pod) -> dict[str, tuple[tuple[Choice, ...] | None, ResourceClaim]]:
        """What the pod's claims hold now (allocation and claim object), to restore exactly (`restore`)."""
        out: dict[str, tuple[tuple[Choice, ...] | None, ResourceClaim]] = {}
        for ref in pod.resource_claims:
            key = self.claim_key(pod, ref)
            state = self.claims.get(key)
            if state is not None:
                out[key] = (state.allocation, state.claim)
        return out

    def restore(self, pod: Pod, node: int, held: Mapping[str, tuple[tuple[Choice, ...] | None, ResourceClaim]]
                ) -> bool:
        """Undo `unreserve` exactly: a claim it deallocated gets back the very devices it had (never others).
        False, and nothing changed, when one of those devices has been taken meanwhile. A pod that kept its
        claims (`keep`, never `release`d) has nothing to get back."""
        if self._unkeep(pod):
            return True
        todo: list[tuple[ClaimState, tuple[Choice, ...], ResourceClaim]] = []
        for key, (allocation, claim) in held.items():
            state = self.claims.get(key)
            if state is None or allocation is None or state.allocation is not None:
                continue
            for choice in allocation:
                d = choice.device
                if self.shared[d]:
                    need = np.asarray(choice.consumed or (0,) * self.cap_used.shape[1], dtype=np.int64)
                    if np.any(self.cap_used[d] + need > self.cap_total[d]):
                        return False
                elif self.allocations[d] > 0:
                    return False
            todo.append((state, allocation, claim))
        for key in held:
            found = self.claims.get(key)
            if found is not None:
                self.remember(found)
        for state, allocation, claim in todo:
            self._allocate(state, allocation, node)
            state.claim = claim
        for key in held:
            found = self.claims.get(key)
            if found is not None:
                found.reserved_for.add(pod.key)
        return True

    def remember(self, state: ClaimState) -> None:
        """Journal the claim as it is now, so that an abandoned trial puts it (and its devices) back exactly."""
        if not self.cluster.journaling:
            return
        allocation, reach, reserved = state.allocation, state.reach, frozenset(state.reserved_for)
        evicting, claim, group_reserved = state.evicting, state.claim, state.group_reserved

        def undo() -> None:
            self.hold(state.allocation, -1)
            self.hold(allocation, 1)
            state.allocation, state.reach, state.reserved_for = allocation, reach, set(reserved)
            state.evicting, state.claim, state.group_reserved = evicting, claim, group_reserved
            self.version += 1

        self.cluster.record(undo)

    def hold(self, choices: tuple[Choice, ...] | None, sign: int) -> None:
        for choice in choices or ():
            self.allocations[choice.device] += sign
            if choice.consumed:
                self.cap_used[choice.device] += sign * np.asarray(choice.consumed, dtype=np.int64)

    def deallocate(self, state: ClaimState) -> None:
        self.remember(state)
        self.hold(state.allocation, -1)
        state.allocation = None
        state.reach = None
        state.evicting = None
        state.claim = dataclasses.replace(state.claim, allocated=())
        self.version += 1

    # --- status -----------------------------------------------------------------------------------------

    def describe_device(self, d: int) -> tuple[str, str, str]:
        s = self.slice_of[d]
        return s.driver, s.pool, self.devices[d].name

    def allocation(self, key: str) -> dict[str, object] | None:
        """The claim's `status.allocation` as the API writes it (None while unallocated): the device results,
        and for node-local devices the node selector pinning the claim's pods to that node."""
        state = self.claims[key]
        if state.allocation is None:
            return None
        results = []
        for choice in state.allocation:
            driver, pool, device = self.describe_device(choice.device)
            result: dict[str, object] = {"request": choice.request, "driver": driver, "pool": pool,
                                         "device": device}
            if choice.consumed:
                result["consumedCapacity"] = {name: amount for name, amount in zip(self.cap_names, choice.consumed,
                                                                                  strict=True) if amount}
            if choice.tolerations:
                result["tolerations"] = [t.manifest() for t in choice.tolerations]
            results.append(result)
        out: dict[str, object] = {"devices": {"results": results}}
        local = {self.node[c.device] for c in state.allocation}
        if len(local) == 1 and (node := int(next(iter(local)))) >= 0:
            out["nodeSelector"] = {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [self.cluster.names[node]]}]}]}
        return out

    def claim_status(self, key: str) -> dict[str, object]:
        """The claim's status as the API shows it: allocation results, reservedFor, devices' networkData."""
        state = self.claims[key]
        allocation = self.allocation(key)
        # Members of a PodGroup reserve its claim as the PodGroup (one `podgroups` entry, not one per pod).
        reserved = [f"PodGroup {state.group_reserved}"] if state.group_reserved is not None else sorted(
            state.reserved_for)
        if allocation is None:
            return {"reservedFor": reserved}
        devices: list[dict[str, object]] = []
        for choice in state.allocation or ():
            network: NetworkData | None = self.devices[choice.device].network_data
            if network is not None:
                driver, pool, device = self.describe_device(choice.device)
                devices.append({"driver": driver, "pool": pool, "device": device, "networkData": network.manifest()})
        status: dict[str, object] = {"allocation": allocation, "reservedFor": reserved}
        if devices:
            status["devices"] = devices
        return status

    def pod_devices(self, pod: Pod) -> list[str]:
        """`driver/pool/device` of every device the pod's claims hold."""
        out: list[str] = []
        for ref in pod.resource_claims:
            state = self.claims.get(self.claim_key(pod, ref))
            for choice in (state.allocation or ()) if state is not None else ():
                out.append("/".join(self.describe_device(choice.device)))
        return out

    def overallocated(self) -> bool:
        """Any device held twice (not shared) or with more capacity consumed than offered (must never be)."""
        return bool(((self.allocations > 1) & ~self.shared).any() or (self.cap_used > self.cap_total).any()
                    or (self.allocations < 0).any())


def device_state(cluster: ClusterState) -> DeviceState:
    """The cluster's device state, created empty on first use."""
    state = cluster.extension(DeviceState)
    if state is None:
        state = DeviceState(cluster)
        cluster.add_extension(state)
    return state
