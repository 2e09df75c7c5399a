"""The live driver: the scheduling engine kept in step with a real API server, its decisions carried out.

The Driver keeps the engine's view in step with the API server through informers (nodes, every pod, PodGroups,
CompositePodGroups, PodDisruptionBudgets, and the DRA kinds: ResourceSlices, DeviceClasses, ResourceClaims and
their templates),
schedules the pods whose `spec.schedulerName` is its own, and carries the decisions out through the ApiWriter:
Binding calls, PodScheduled conditions, nominations, preemptions, PodGroup conditions and Events. Informer
callbacks only queue events; the engine loop the simulator runs too (`phalanx.scheduler.loop`) applies them to
the Scheduler and runs its rounds from a single thread, with a wall clock (Unix seconds) in place of the
simulator's virtual one.

Binding is assume-then-bind: the engine assumes a pod when it decides, the Binding call confirms it or
fails; a failure unreserves the pod (and the members of its gang not yet bound, when the gang falls below
minCount) and queues it again through backoff. A 409 (bound by someone else first) takes the node the API
server reports through the informer. Objects that cannot be parsed are named once on stderr and skipped;
nothing an API object holds stops the loop.

DRA, as kube-scheduler's DynamicResources plugin: a pending pod enters the engine once every claim it names
exists (the plugin's PreEnqueue, `phalanx.scheduler.plugins.dra.pre_enqueue`, run by `phalanx.live.claims`: the
claim the resourceclaim controller made from a template is found through the pod's
`status.resourceClaimStatuses`); until then it waits with PodScheduled=False in upstream's words,
and a claim deleted under a queued pod sends it back to waiting. Before a pod's Binding, its job writes each
claim's allocation and reservation (PreBind); a failed Binding takes them back (Unreserve). DeviceTaintRules
are not watched. DRA objects are watched only when the profile runs DynamicResources and the API server
serves `resource.k8s.io/v1`; otherwise pods with claims wait with a message that says so.

CompositePodGroup trees (KEP-6012): `scheduling.k8s.io/v1alpha3` CompositePodGroups are watched when the profile
schedules trees (the CompositePodGroup gate on, with GenericWorkload and TopologyAwareWorkloadScheduling) and the
API server serves them. They go into the engine as the simulator hands them over (`add_composite_pod_group`,
`delete_composite_pod_group`); the engine holds a tree's pods until the tree meets its quorum (PreEnqueue over
the hierarchy) and schedules the tree in one cycle of its root, so a tree binds whole or not at all. Each leaf
PodGroup gets its PodGroupInitiallyScheduled condition; CompositePodGroups get none (as kube-scheduler v1.37.2).
"""

from __future__ import annotations

import datetime
import logging
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, assert_never

import httpx2
from lightkube import ApiError, Client
from lightkube.core import resource as r
from lightkube.resources import resource_v1
from lightkube.resources.core_v1 import Node, Pod
from lightkube.resources.policy_v1 import PodDisruptionBudget
from lightkube.resources.scheduling_v1alpha3 import CompositePodGroup
from lightkube.resources.scheduling_v1beta1 import PodGroup

from phalanx.api import objects
from phalanx.api.dra import parse_claim_template, parse_device_class, parse_resource_claim, parse_resource_slice
from phalanx.api.parse import parse_composite_pod_group, parse_node, parse_pdb, parse_pod, parse_pod_group
from phalanx.cluster.devices import EXTENDED_CLAIM
from phalanx.errors import PhalanxError
from phalanx.live.api_writer import ApiWriter, BindResult, ClaimHold
from phalanx.live.claims import ClaimBook, known_claim, resolve
from phalanx.live.clock import Inbox, WallClock
from phalanx.live.informers import DELETED, MODIFIED, Informer, object_key
from phalanx.live.metrics import Metrics
from phalanx.scheduler.decisions import (
    Bind,
    Decision,
    DeviceTaintEviction,
    Evict,
    GroupCondition,
    Nominate,
    Preemption,
    Unschedulable,
)
from phalanx.scheduler.loop import run_engine
from phalanx.scheduler.plugins.dra.pre_enqueue import KnownClaim
from phalanx.scheduler.port import EnginePort
from phalanx.scheduler.profiles import COMPOSITE_GATE, Profile
from phalanx.scheduler.scheduler import Scheduler

log = logging.getLogger("phalanx.live")
BIND_WORKERS = 16  # binding calls in flight at once
BIND_RETRY_WAITS = (0.2, 0.5, 1.0, 2.0)  # a Binding that failed transiently is tried again after these
SOURCE = objects.Source("api-server", 0)
# The DRA kinds watched (resource.k8s.io/v1): the lightkube resource, the parser, the engine's keyword.
DEVICE_KINDS: dict[str, tuple[type[r.Resource], Callable[[Mapping[str, Any], objects.Source], Any], str]] = {
    "DeviceClass": (resource_v1.DeviceClass, parse_device_class, "classes"),
    "ResourceClaimTemplate": (resource_v1.ResourceClaimTemplate, parse_claim_template, "templates"),
    "ResourceClaim": (resource_v1.ResourceClaim, parse_resource_claim, "claims"),
    "ResourceSlice": (resource_v1.ResourceSlice, parse_resource_slice, "slices"),
}
DRA_OFF = "the pod has resourceClaims, and phalanx run does not watch DRA objects here: {why}"


@dataclass
class Counters:
    """What the loop did, for tests and the log."""

    binds: int = 0
    bind_failures: int = 0
    unschedulable: int = 0
    evictions: int = 0
    cycles: int = 0
    skipped: dict[str, str] = field(default_factory=dict)  # object key -> why it was skipped


def _created(obj: Mapping[str, Any]) -> float:
    raw = (obj.get("metadata") or {}).get("creationTimestamp")
    if isinstance(raw, datetime.datetime):
        return raw.timestamp()
    if isinstance(raw, str):
        try:
            return datetime.datetime.fromisoformat(raw.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return time.time()
    return time.time()


def _gates(obj: Mapping[str, Any]) -> tuple[str, ...]:
    """A pod's spec.schedulingGates names, as the pod says them (parsed and checked by `parse_pod`)."""
    gates = (obj.get("spec") or {}).get("schedulingGates") or ()
    return tuple(str(g.get("name")) for g in gates if isinstance(g, Mapping))


def _terminal(obj: Mapping[str, Any]) -> bool:
    return (obj.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def _has_claims(obj: Mapping[str, Any]) -> bool:
    return bool((obj.get("spec") or {}).get("resourceClaims"))


@dataclass
class _DeviceBatch:
    """DRA objects added or changed, handed to the engine in one call (a relist of many ResourceSlices is one
    rebuild of the device arrays, not one per slice)."""

    objects: defaultdict[str, list[Any]] = field(default_factory=lambda: defaultdict(list))  # keyword -> parsed
    claims: dict[str, KnownClaim] = field(default_factory=dict)

    def add(self, kind: str, obj: Mapping[str, Any]) -> None:
        _, parse, keyword = DEVICE_KINDS[kind]
        self.objects[keyword].append(parse(obj, SOURCE))
        if kind == "ResourceClaim":
            self.claims[object_key(dict(obj))] = known_claim(obj)


class Driver:
    """One live scheduler: informers in, decisions out. `run` blocks until `stop` is set."""

    def __init__(self, client: Client, profile: Profile, *, scheduler_name: str = "phalanx", seed: int = 0,
                 metrics: Metrics | None = None, api_writer: ApiWriter | None = None,
                 namespaces: set[str] | None = None, clock: Callable[[], float] = time.time) -> None:
        self.client = client
        self.profile = profile
        self.scheduler_name = scheduler_name
        self.scheduler: EnginePort = Scheduler(profile, [], seed)
        self.metrics = metrics
        self.api_writer = api_writer or ApiWriter(client, scheduler_name)
        self.clock = clock
        self.namespaces = namespaces  # schedule only pods of these namespaces (None: all); every pod is counted
        self.events = Inbox()
        self._leading: threading.Event | None = None
        self.counters = Counters()
        self.informers: list[Informer] = []
        self.ready = threading.Event()  # every informer has synced once
        self.lock = threading.Lock()  # held while a cycle runs: whoever stops scheduling waits for it
        self._uids: dict[str, str] = {}  # pod key -> uid, for bindings and preemptions
        self._gates: dict[str, tuple[str, ...]] = {}  # pending pod key -> its schedulingGates as queued
        self._group_uids: dict[str, str] = {}  # PodGroup key -> uid
        self._composite_uids: dict[str, str] = {}  # CompositePodGroup key -> uid
        self._orphans: dict[str, dict[str, Any]] = {}  # bound pods whose node is not known yet
        self._warned: set[str] = set()
        self._attempt_started: dict[str, float] = {}  # pod key -> when it was first queued
        self.claims = ClaimBook()  # DRA claims known, and the pending pods that name them
        self._dra_off: str | None = None  # why DRA objects are not watched (None: they are)
        self._pool = ThreadPoolExecutor(max_workers=BIND_WORKERS, thread_name_prefix="bind")

    # --- informers ----------------------------------------------------------------------------------------

    def _handler(self, kind: str) -> Callable[[str, dict[str, Any]], None]:
        def on_event(event: str, obj: dict[str, Any]) -> None:
            self.events.put((kind, event, obj))
        return on_event

    def _served(self, resource: type[r.Resource]) -> bool:
        """Whether the API server serves the kind (404: not). Any other answer counts as served: its informer
        retries until it is reachable."""
        try:
            if issubclass(resource, r.NamespacedResource):
                next(iter(self.client.list(resource, namespace="*", chunk_size=1)), None)
            elif issubclass(resource, r.GlobalResource):
                next(iter(self.client.list(resource, chunk_size=1)), None)
        except ApiError as exc:
            return not (exc.status is not None and exc.status.code == 404)
        except httpx2.HTTPError:
            return True
        return True

    def start_informers(self, stop: threading.Event) -> None:
        """Nodes and the DRA objects first (pods name them), then pods, PodGroups (when the API server serves
        v1beta1), CompositePodGroups (when the profile schedules trees and the API server serves v1alpha3) and
        PDBs."""
        first = [Informer(self.client, Node, self._handler("Node")), *self._device_informers()]
        for informer in first:
            self.informers.append(informer)
            informer.start(stop)
        for informer in first:
            informer.synced.wait(timeout=60)
        rest = [Informer(self.client, Pod, self._handler("Pod"))]
        if self._served(PodGroup):
            rest.append(Informer(self.client, PodGroup, self._handler("PodGroup")))
        else:
            self._warn("podgroups", "scheduling.k8s.io/v1beta1 PodGroup is not served by this API server: "
                                    "pods naming a PodGroup wait for it")
        rest.extend(self._composite_informers())
        rest.append(Informer(self.client, PodDisruptionBudget, self._handler("PodDisruptionBudget")))
        for informer in rest:
            self.informers.append(informer)
            informer.start(stop)

    def _composite_informers(self) -> list[Informer]:
        """The CompositePodGroup informer, when the profile schedules trees and the API server serves them."""
        if not self.profile.composite:
            if self.profile.feature_gates.get(COMPOSITE_GATE, False):
                self._warn("compositepodgroups", "the CompositePodGroup gate needs GenericWorkload and "
                                                 "TopologyAwareWorkloadScheduling on: CompositePodGroups are not "
                                                 "watched and each PodGroup is scheduled on its own")
            return []
        if not self._served(CompositePodGroup):
            self._warn("compositepodgroups", "scheduling.k8s.io/v1alpha3 CompositePodGroup is not served by this "
                                             "API server: the pods of PodGroups naming a parent CompositePodGroup "
                                             "wait for it")
            return []
        return [Informer(self.client, CompositePodGroup, self._handler("CompositePodGroup"))]

    def _device_informers(self) -> list[Informer]:
        """Informers of the DRA kinds, when the profile allocates devices and the API server serves them."""
        if not self.scheduler.allocates_devices():
            self._dra_off = "the profile does not run the DynamicResources plugin"
            return []
        if not all(self._served(resource) for resource, _, _ in DEVICE_KINDS.values()):
            self._dra_off = "resource.k8s.io/v1 is not served by this API server"
            self._warn("dra", f"{self._dra_off}: pods with resourceClaims are not scheduled")
            return []
        return [Informer(self.client, resource, self._handler(kind))
                for kind, (resource, _, _) in DEVICE_KINDS.items()]

    def synced(self) -> bool:
        return bool(self.informers) and all(i.synced.is_set() for i in self.informers)

    # --- the loop -----------------------------------------------------------------------------------------

    def run(self, stop: threading.Event, leading: threading.Event | None = None) -> None:
        """Apply events and run scheduling rounds until `stop` is set; rounds run only while `leading` is set
        (no elector: always). The informers keep the view warm meanwhile."""
        if not self.informers:
            self.start_informers(stop)
        self._leading = leading
        try:
            run_engine(self.scheduler, WallClock(self.events, stop, self.clock), self)
        finally:
            self._pool.shutdown(wait=True)
            self.api_writer.close()

    # The engine loop's ends (phalanx.scheduler.loop.Ends).

    def feed(self, now: float) -> None:
        """Apply the queued informer events, in order; DRA objects added or changed in a row go in together."""
        batch = _DeviceBatch()
        for kind, event, obj in self.events.take_all():
            if kind in DEVICE_KINDS and event != DELETED:
                try:
                    batch.add(kind, obj)
                except PhalanxError as exc:
                    self._skip(kind, object_key(obj), str(exc))
                continue
            self._flush(batch)
            self.apply(kind, event, obj)
        self._flush(batch)

    @contextmanager
    def turn(self) -> Iterator[bool]:
        """No round before every informer has synced once, nor while another replica leads; the lock is held
        through the round, so whoever stops scheduling waits for the round in flight."""
        if not self.ready.is_set():
            if not self.synced():
                yield False
                return
            self.ready.set()
        with self.lock:
            yield self._leading is None or self._leading.is_set()

    # --- events in ----------------------------------------------------------------------------------------

    def apply(self, kind: str, event: str, obj: dict[str, Any]) -> None:
        """One informer event into the engine; a bad object is named once and skipped."""
        key = object_key(obj)
        try:
            if kind == "Node":
                self._node(event, obj)
            elif kind == "Pod":
                self._pod(event, key, obj)
            elif kind == "PodGroup":
                self._pod_group(event, key, obj)
            elif kind == "CompositePodGroup":
                self._composite_pod_group(event, key, obj)
            elif kind == "PodDisruptionBudget":
                if event == DELETED:
                    self.scheduler.delete_pdb(key)
                else:
                    self.scheduler.add_pdb(parse_pdb(obj, SOURCE))
            elif kind in DEVICE_KINDS:
                self._device_object(kind, event, key, obj)
        except PhalanxError as exc:
            self._skip(kind, key, str(exc))
        except Exception as exc:  # a fault this object's shape brought out: the object is skipped, not the loop
            log.debug("taking in %s %s failed", kind, key, exc_info=True)
            self._skip(kind, key, f"{type(exc).__name__}: {exc}")
            if kind == "Pod" and event != DELETED and self._ours_pending(obj):
                namespace, _, name = key.partition("/")
                self.api_writer.unschedulable(namespace, name, f"the scheduler could not take the pod in: "
                                          f"{type(exc).__name__}: {exc}", reason="SchedulerError",
                                          uid=self._uids.get(key))

    def _ours_pending(self, obj: Mapping[str, Any]) -> bool:
        spec = obj.get("spec") or {}
        return spec.get("schedulerName") == self.scheduler_name and not spec.get("nodeName")

    def _skip(self, kind: str, key: str, why: str) -> None:
        self._warn(f"{kind}/{key}", f"skipping {kind} {key}: {why}")
        self.counters.skipped[f"{kind}/{key}"] = why

    # DRA objects: the engine's device state, and the pending pods that wait for their claims.

    def _device_object(self, kind: str, event: str, key: str, obj: dict[str, Any]) -> None:
        if event != DELETED:
            batch = _DeviceBatch()
            batch.add(kind, obj)
            self._flush(batch)
            return
        if kind == "ResourceClaim":
            self.claims.claims.pop(key, None)
            self._reconsider_users(key)  # the pending pods that name it wait again, out of the engine
        self.scheduler.delete_device_objects(self.clock(), **{DEVICE_KINDS[kind][2]: [key]})

    def _flush(self, batch: _DeviceBatch) -> None:
        """Hand the batched DRA objects to the engine, then let in the pods that waited for those claims."""
        if not batch.objects:
            return
        self.scheduler.add_device_objects(self.clock(), **batch.objects)
        self.claims.claims.update(batch.claims)
        for key in batch.claims:
            self._reconsider_users(key)
        batch.objects.clear()
        batch.claims.clear()

    def _reconsider_users(self, claim: str) -> None:
        """The pending pods that name the claim, checked again: one that can no longer be queued leaves the
        engine and waits; one that waited and now can is queued."""
        s = self.scheduler
        for key in self.claims.users(claim):
            obj = self.claims.pods.get(key)
            if obj is None or s.is_bound(key):
                continue
            if s.knows_pod(key):
                if resolve(obj, self.claims.claims, bound=False).waiting is None:
                    continue
                s.delete_pod(key, self.clock())
            self._pod(MODIFIED, key, obj)

    def _pending_claims(self, key: str, obj: dict[str, Any]) -> dict[str, Any] | None:
        """A pending pod with claims: the pod naming the claims the engine knows, or None when it must wait
        (PreEnqueue), after telling it why (PodScheduled=False)."""
        if self._dra_off is not None:
            self._wait(key, DRA_OFF.format(why=self._dra_off))
            return None
        resolution = resolve(obj, self.claims.claims, bound=False)
        self.claims.track(key, obj, resolution.claims)
        if resolution.waiting is not None:
            self._wait(key, resolution.waiting)
            return None
        self.claims.waiting.pop(key, None)
        return resolution.pod

    def _wait(self, key: str, message: str) -> None:
        if self.claims.waiting.get(key) == message:
            return
        self.claims.waiting[key] = message
        namespace, _, name = key.partition("/")
        self.api_writer.unschedulable(namespace, name, message, uid=self._uids.get(key))

    # Nodes, pods, PodGroups.

    def _node(self, event: str, obj: dict[str, Any]) -> None:
        now = self.clock()
        name = str((obj.get("metadata") or {}).get("name"))
        if event == DELETED:
            self.scheduler.delete_node(name, now)
            return
        self.scheduler.update_nodes([parse_node(obj, SOURCE)], now)
        for key, pod in [(k, p) for k, p in self._orphans.items() if (p.get("spec") or {}).get("nodeName") == name]:
            del self._orphans[key]
            self._pod("ADDED", key, pod)

    def _pod(self, event: str, key: str, obj: dict[str, Any]) -> None:
        s = self.scheduler
        now = self.clock()
        if event == DELETED or _terminal(obj):
            namespace, _, name = key.partition("/")
            self.api_writer.forget(namespace, name)
            self.claims.untrack(key)
            self._orphans.pop(key, None)
            self._uids.pop(key, None)
            self._gates.pop(key, None)
            self._attempt_started.pop(key, None)
            s.delete_pod(key, now)
            return
        meta = obj.get("metadata") or {}
        uid = str(meta.get("uid") or "")
        node = (obj.get("spec") or {}).get("nodeName")
        known = s.knows_pod(key)
        if known and self._uids.get(key) not in (None, uid):  # recreated under the same name
            s.delete_pod(key, now)
            known = False
        self._uids[key] = uid
        if node:
            self.claims.untrack(key)
            if s.is_bound(key):
                s.confirm_bind(key)
                if meta.get("deletionTimestamp") is not None:
                    s.pod_terminating(key, now)
                return
            if not s.has_node(node):
                self._orphans[key] = obj
                return
            if known:  # pending here, bound by someone else (a 409, another scheduler)
                s.delete_pod(key, now)
            if _has_claims(obj):  # claims it cannot name are dropped: its room still counts
                obj = resolve(obj, self.claims.claims, bound=True).pod
            pod = parse_pod(obj, SOURCE)
            if pod is None:
                return
            s.add_pod(pod, now, node=node)
            if meta.get("deletionTimestamp") is not None:
                s.pod_terminating(key, now)
            return
        if known and self._gates.get(key, ()) and _gates(obj) != self._gates[key]:
            self._ungate(key, obj, now)  # the only change to a pending pod's spec that scheduling sees
            return
        if known or (obj.get("spec") or {}).get("schedulerName") != self.scheduler_name:
            return  # a pending pod we already queued, or another scheduler's
        if self.namespaces is not None and meta.get("namespace") not in self.namespaces:
            return
        if meta.get("deletionTimestamp") is not None:
            return
        if _has_claims(obj):
            resolved = self._pending_claims(key, obj)
            if resolved is None:
                return
            obj = resolved
        pod = parse_pod(obj, SOURCE)
        if pod is None:
            return
        pod.arrival = _created(obj)
        self._attempt_started.setdefault(key, now)
        if pod.scheduling_gates:
            self._gates[key] = pod.scheduling_gates
        s.add_pod(pod, now)

    def _ungate(self, key: str, obj: dict[str, Any], now: float) -> None:
        """A pending pod's schedulingGates were lifted (some or all): the engine takes it again as it is now
        (claims resolved as for any new pod), queued by its creation time."""
        self._gates.pop(key, None)
        self.scheduler.delete_pod(key, now)
        self._pod(MODIFIED, key, obj)

    def _pod_group(self, event: str, key: str, obj: dict[str, Any]) -> None:
        now = self.clock()
        if event == DELETED:
            self._group_uids.pop(key, None)
            self.scheduler.delete_pod_group(key, now)
            return
        group = parse_pod_group(obj, SOURCE)
        group.arrival = _created(obj)
        self._group_uids[key] = str((obj.get("metadata") or {}).get("uid") or "")
        self.scheduler.add_pod_group(group, now)

    def _composite_pod_group(self, event: str, key: str, obj: dict[str, Any]) -> None:
        """A CompositePodGroup into the engine's forest: the tree's leaves wait for it (and for their quorum),
        and its root's cycle places the tree whole."""
        s = self.scheduler
        now = self.clock()
        if event == DELETED:
            self._composite_uids.pop(key, None)
            s.delete_composite_pod_group(key, now)
            return
        composite = parse_composite_pod_group(obj, SOURCE)
        composite.arrival = _created(obj)
        self._composite_uids[key] = str((obj.get("metadata") or {}).get("uid") or "")
        s.add_composite_pod_group(composite, now)

    # --- decisions out ------------------------------------------------------------------------------------

    def carry_out(self, decisions: list[Decision], now: float, seconds: float) -> None:
        """One round's decisions carried out: binds in parallel, then conditions, nominations, evictions."""
        profile = self.profile.name
        self.counters.cycles += 1
        self._bind_all([d for d in decisions if isinstance(d, Bind)], now)
        for decision in decisions:
            match decision:
                case Bind():  # bound above
                    if self.metrics is not None:
                        self.metrics.attempt("scheduled", profile, seconds)
                case Unschedulable():
                    pod = decision.pod
                    self.counters.unschedulable += 1
                    self.api_writer.unschedulable(pod.namespace, pod.name, decision.message, reason=decision.reason,
                                              uid=self._uids.get(pod.key))
                    if self.metrics is not None:
                        self.metrics.attempt("error" if decision.reason == "SchedulerError" else "unschedulable",
                                             profile, seconds)
                case Nominate():
                    self.api_writer.nominate(decision.pod.namespace, decision.pod.name, decision.node)
                case Evict():
                    self._evict(decision)
                case Preemption():
                    if self.metrics is not None:
                        self.metrics.preemption(len(decision.victims))
                case GroupCondition():
                    group = decision.group
                    if self.metrics is not None:
                        self.metrics.group_attempt("scheduled" if decision.status else
                                                   "error" if decision.reason == "SchedulerError" else "unschedulable",
                                                   profile, seconds)
                    self.api_writer.group_condition(group.namespace, group.name, decision.type, decision.status,
                                                decision.reason, decision.message)
                case DeviceTaintEviction():
                    pod = decision.pod
                    self.api_writer.preempt(pod.namespace, pod.name, preemptor="", node=decision.node,
                                        message=decision.message, uid=self._uids.get(pod.key))
                case _:
                    assert_never(decision)
        if self.metrics is not None:
            self.metrics.pending(self._pending_counts())
        line = round_line(decisions, seconds)
        if line is not None:
            log.info("%s", line)

    def _bind_all(self, binds: list[Bind], now: float) -> None:
        """The binding cycles, in parallel as kube-scheduler's run: one job per pod, and one per PodGroup whose
        members bind in order and stop at the first failure. Then, on the loop's thread: the bound confirmed,
        and each failure handed to the engine (which rolls back what of its gang is still only assumed)."""
        units: dict[str, list[Bind]] = {}
        for bind in binds:
            group = self.scheduler.assumed_group(bind.pod.key) or ""
            units.setdefault(group or bind.pod.key, []).append(bind)
        jobs = [self._pool.submit(self._bind_unit, unit) for unit in units.values()]
        failed: list[tuple[Bind, BindResult]] = []
        for job in jobs:
            done, failure = job.result()
            for bind in done:
                self._bound(bind)
            if failure is not None:
                failed.append(failure)
        for bind, result in failed:
            pod = bind.pod
            self.counters.bind_failures += 1
            if self.metrics is not None:
                self.metrics.bind_failure("conflict" if result.reason == "conflict" else "error")
            log.warning("binding %s to %s failed (%s): %s", pod.key, bind.node, result.reason or "error",
                        result.message)
            self.scheduler.bind_failed(pod.key, now)

    def _bind_unit(self, unit: list[Bind]) -> tuple[list[Bind], tuple[Bind, BindResult] | None]:
        done: list[Bind] = []
        for bind in unit:
            result = self._bind_one(bind)
            if not result.ok:
                return done, (bind, result)
            done.append(bind)
        return done, None

    def _bind_one(self, bind: Bind) -> BindResult:
        """DynamicResources' PreBind, then the Binding: the pod's claims get their allocation and the pod in
        reservedFor; when the Binding then fails, the reservations are taken back (Unreserve)."""
        pod = bind.pod
        uid = self._uids.get(pod.key)
        held: tuple[ClaimHold, ...] = ()
        wanted = self._api_claims(bind)
        if wanted:
            claims = self.api_writer.reserve_claims(pod.namespace, pod.name, uid or "", wanted)
            if not claims.ok:
                return BindResult(False, claims.reason, claims.message)
            held = claims.held
        result = self._binding(bind, uid)
        if not result.ok and held:
            self.api_writer.unreserve_claims(pod.namespace, pod.name, uid or "", held)
        return result

    def _api_claims(self, bind: Bind) -> list[tuple[str, dict[str, object]]]:
        """The Bind's claims but the one the engine made for extended resources served by devices (KEP-5004):
        kube-scheduler creates that claim in the API server, Phalanx does not yet (docs/live.md)."""
        pod = bind.pod
        extended = f"{pod.namespace}/{pod.name}-{EXTENDED_CLAIM}"
        if any(key == extended and key not in self.claims.claims for key, _ in bind.claims):
            self._warn(f"extended/{pod.key}", f"{pod.key}: its extended-resource claim is not written to the API "
                                              "server (not supported yet)")
        return [(key, allocation) for key, allocation in bind.claims
                if key != extended or key in self.claims.claims]

    def _binding(self, bind: Bind, uid: str | None) -> BindResult:
        """One Binding, retried on the same node while the error is transient (the pod keeps its assumed room,
        so a gang member is not overtaken by others while the API server is away). A 409 after a lost answer
        is a success when the pod is bound where we asked."""
        pod = bind.pod
        result = self.api_writer.bind(pod.namespace, pod.name, uid, bind.node)
        for wait in BIND_RETRY_WAITS:
            if result.ok or result.reason != "error":
                break
            time.sleep(wait)
            result = self.api_writer.bind(pod.namespace, pod.name, uid, bind.node)
            if result.reason == "conflict" and self._bound_to(pod.namespace, pod.name, bind.node):
                # Our earlier binding was stored, its answer lost (the API server restarting): say so too.
                return BindResult(True, "", self.api_writer.scheduled(pod.namespace, pod.name, uid, bind.node))
        return result

    def _bound_to(self, namespace: str, name: str, node: str) -> bool:
        try:
            found = self.client.get(Pod, name, namespace=namespace)
        except (ApiError, httpx2.HTTPError):
            return False
        return found.spec is not None and found.spec.nodeName == node

    def _bound(self, bind: Bind) -> None:
        key = bind.pod.key
        self.scheduler.confirm_bind(key)
        self.counters.binds += 1
        started = self._attempt_started.pop(key, None)
        if self.metrics is not None and started is not None:
            self.metrics.scheduled(1, max(0.0, self.clock() - started))

    def _evict(self, decision: Evict) -> None:
        victim = decision.pod
        self.counters.evictions += 1
        preemptor = decision.preemptor
        kind = decision.kind
        uids = {"pod": self._uids, "podgroup": self._group_uids, "compositepodgroup": self._composite_uids}[kind]
        self.api_writer.preempt(victim.namespace, victim.name, preemptor=uids.get(preemptor, ""), node=decision.node,
                            preemptor_kind=kind, preemptor_name=preemptor.split("/", 1)[-1],
                            uid=self._uids.get(victim.key))

    # --- reporting ----------------------------------------------------------------------------------------

    def _pending_counts(self) -> dict[str, int]:
        counts = self.scheduler.pending_counts()
        counts["gated"] += len(self.claims.waiting)  # held by DynamicResources' PreEnqueue
        return counts

    def _warn(self, key: str, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            log.warning("%s", message)


def round_line(decisions: Sequence[Decision], seconds: float) -> str | None:
    """The info log's one line for a round that decided something: how many pods it bound, left unschedulable,
    nominated and evicted, and how long the engine took (None for a round that decided nothing)."""
    if not decisions:
        return None
    counts = Counter(type(decision).__name__ for decision in decisions)
    nominated = sum(1 for d in decisions if isinstance(d, Nominate) and d.node)
    return (f"round: {counts['Bind']} bound, {counts['Unschedulable']} unschedulable, {nominated} nominated, "
            f"{counts['Evict'] + counts['DeviceTaintEviction']} evicted ({seconds * 1000:.1f} ms)")

