"""The live driver: the scheduling engine kept in step with a real API server, its decisions carried out.

The Driver keeps the engine's view in step with the API server through informers (nodes, every pod, PodGroups,
PodDisruptionBudgets), schedules the pods whose `spec.schedulerName` is its own, and carries the decisions
out through the Binder: Binding calls, PodScheduled conditions, nominations, preemptions, PodGroup
conditions and Events. Informer callbacks only queue events; the engine loop the simulator runs too
(`phalanx.scheduler.loop`) applies them to the Scheduler and runs its rounds from a single thread, with a
wall clock (Unix seconds) in place of the simulator's virtual one.

Binding is assume-then-bind: the engine assumes a pod when it decides, the Binding call confirms it or
fails; a failure unreserves the pod (and the members of its gang not yet bound, when the gang falls below
minCount) and queues it again through backoff. A 409 (bound by someone else first) takes the node the API
server reports through the informer. Objects that cannot be parsed are named once on stderr and skipped;
nothing an API object holds stops the loop.
"""

from __future__ import annotations

import datetime
import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx2
from lightkube import ApiError, Client
from lightkube.core import resource as r
from lightkube.resources.core_v1 import Node, Pod
from lightkube.resources.policy_v1 import PodDisruptionBudget
from lightkube.resources.scheduling_v1beta1 import PodGroup

from phalanx.api import objects
from phalanx.api.parse import parse_node, parse_pdb, parse_pod, parse_pod_group
from phalanx.errors import PhalanxError
from phalanx.live.binder import Binder, BindResult
from phalanx.live.clock import Inbox, WallClock
from phalanx.live.informers import Informer, object_key
from phalanx.live.metrics import Metrics
from phalanx.scheduler.loop import run_engine
from phalanx.scheduler.profiles import Profile
from phalanx.scheduler.queue import Where
from phalanx.scheduler.scheduler import (
    GROUP,
    Bind,
    Decision,
    DeviceTaintEviction,
    Evict,
    GroupCondition,
    Nominate,
    Preemption,
    Scheduler,
    Unschedulable,
)

log = logging.getLogger("phalanx.live")
BIND_WORKERS = 16  # binding calls in flight at once
BIND_RETRY_WAITS = (0.2, 0.5, 1.0, 2.0)  # a Binding that failed transiently is tried again after these
SOURCE = objects.Source("api-server", 0)
NO_DRA = ("the pod has resourceClaims, and phalanx run does not allocate DRA devices yet "
          "(docs/live.md): schedule it with kube-scheduler")


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


def _terminal(obj: Mapping[str, Any]) -> bool:
    return (obj.get("status") or {}).get("phase") in ("Succeeded", "Failed")


class Driver:
    """One live scheduler: informers in, decisions out. `run` blocks until `stop` is set."""

    def __init__(self, client: Client, profile: Profile, *, scheduler_name: str = "phalanx", seed: int = 0,
                 metrics: Metrics | None = None, binder: Binder | None = None,
                 namespaces: set[str] | None = None, clock: Callable[[], float] = time.time) -> None:
        self.client = client
        self.profile = profile
        self.scheduler_name = scheduler_name
        self.scheduler = Scheduler(profile, [], seed)
        self.metrics = metrics
        self.binder = binder or Binder(client, scheduler_name)
        self.clock = clock
        self.namespaces = namespaces  # schedule only pods of these namespaces (None: all); every pod is counted
        self.events = Inbox()
        self._leading: threading.Event | None = None
        self.counters = Counters()
        self.informers: list[Informer] = []
        self.ready = threading.Event()  # every informer has synced once
        self.lock = threading.Lock()  # held while a cycle runs: whoever stops scheduling waits for it
        self._uids: dict[str, str] = {}  # pod key -> uid, for bindings and preemptions
        self._group_uids: dict[str, str] = {}  # PodGroup key -> uid
        self._orphans: dict[str, dict[str, Any]] = {}  # bound pods whose node is not known yet
        self._warned: set[str] = set()
        self._attempt_started: dict[str, float] = {}  # pod key -> when it was first queued
        self._pool = ThreadPoolExecutor(max_workers=BIND_WORKERS, thread_name_prefix="bind")

    # --- informers ----------------------------------------------------------------------------------------

    def _handler(self, kind: str) -> Callable[[str, dict[str, Any]], None]:
        def on_event(event: str, obj: dict[str, Any]) -> None:
            self.events.put((kind, event, obj))
        return on_event

    def _served(self, resource: type[r.NamespacedResource]) -> bool:
        """Whether the API server serves the kind (404: not). Any other answer counts as served: its informer
        retries until it is reachable."""
        try:
            next(iter(self.client.list(resource, namespace="*", chunk_size=1)), None)
        except ApiError as exc:
            return not (exc.status is not None and exc.status.code == 404)
        except httpx2.HTTPError:
            return True
        return True

    def start_informers(self, stop: threading.Event) -> None:
        """Nodes first (pods name them), then pods, PodGroups (when the API server serves v1beta1) and PDBs."""
        nodes = Informer(self.client, Node, self._handler("Node"))
        self.informers.append(nodes)
        nodes.start(stop)
        nodes.synced.wait(timeout=60)
        self.informers.append(Informer(self.client, Pod, self._handler("Pod")))
        if self._served(PodGroup):
            self.informers.append(Informer(self.client, PodGroup, self._handler("PodGroup")))
        else:
            self._warn("podgroups", "scheduling.k8s.io/v1beta1 PodGroup is not served by this API server: "
                                    "pods naming a PodGroup wait for it")
        self.informers.append(Informer(self.client, PodDisruptionBudget, self._handler("PodDisruptionBudget")))
        for informer in self.informers[1:]:
            informer.start(stop)

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

    # The engine loop's ends (phalanx.scheduler.loop.Ends).

    def feed(self, now: float) -> None:
        """Apply the queued informer events."""
        for item in self.events.take_all():
            self.apply(*item)

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
            elif kind == "PodDisruptionBudget":
                if event == "DELETED":
                    self.scheduler.delete_pdb(key)
                else:
                    self.scheduler.add_pdb(parse_pdb(obj, SOURCE))
        except PhalanxError as exc:
            self._warn(f"{kind}/{key}", f"skipping {kind} {key}: {exc}")
            self.counters.skipped[f"{kind}/{key}"] = str(exc)

    def _node(self, event: str, obj: dict[str, Any]) -> None:
        now = self.clock()
        name = str((obj.get("metadata") or {}).get("name"))
        if event == "DELETED":
            self.scheduler.delete_node(name, now)
            return
        self.scheduler.update_nodes([parse_node(obj, SOURCE)], now)
        for key, pod in [(k, p) for k, p in self._orphans.items() if (p.get("spec") or {}).get("nodeName") == name]:
            del self._orphans[key]
            self._pod("ADDED", key, pod)

    def _pod(self, event: str, key: str, obj: dict[str, Any]) -> None:
        s = self.scheduler
        now = self.clock()
        if event == "DELETED" or _terminal(obj):
            namespace, _, name = key.partition("/")
            self.binder.forget(namespace, name)
            self._orphans.pop(key, None)
            self._uids.pop(key, None)
            self._attempt_started.pop(key, None)
            s.delete_pod(key, now)
            return
        meta = obj.get("metadata") or {}
        uid = str(meta.get("uid") or "")
        node = (obj.get("spec") or {}).get("nodeName")
        known = s.pods.get(key)
        if known is not None and self._uids.get(key) not in (None, uid):  # recreated under the same name
            s.delete_pod(key, now)
            known = None
        self._uids[key] = uid
        if node:
            if key in s.cluster.bound:
                s.confirm_bind(key)
                if meta.get("deletionTimestamp") is not None:
                    s.pod_terminating(key, now)
                return
            if node not in s.cluster.index:
                self._orphans[key] = obj
                return
            if known is not None:  # pending here, bound by someone else (a 409, another scheduler)
                s.delete_pod(key, now)
            pod = parse_pod(obj, SOURCE)
            if pod is None:
                return
            s.add_pod(pod, now, node=node)
            if meta.get("deletionTimestamp") is not None:
                s.pod_terminating(key, now)
            return
        if known is not None or (obj.get("spec") or {}).get("schedulerName") != self.scheduler_name:
            return  # a pending pod we already queued, or another scheduler's
        if self.namespaces is not None and meta.get("namespace") not in self.namespaces:
            return
        if meta.get("deletionTimestamp") is not None:
            return
        pod = parse_pod(obj, SOURCE)
        if pod is None:
            return
        if pod.resource_claims:  # DRA objects are not watched yet: say so rather than bind without devices
            self._warn(f"claims/{key}", f"not scheduling {key}: {NO_DRA}")
            self.binder.unschedulable(pod.namespace, pod.name, NO_DRA, uid=uid)
            return
        pod.arrival = _created(obj)
        self._attempt_started.setdefault(key, now)
        s.add_pod(pod, now)

    def _pod_group(self, event: str, key: str, obj: dict[str, Any]) -> None:
        now = self.clock()
        if event == "DELETED":
            self._group_uids.pop(key, None)
            self.scheduler.delete_pod_group(key, now)
            return
        group = parse_pod_group(obj, SOURCE)
        group.arrival = _created(obj)
        self._group_uids[key] = str((obj.get("metadata") or {}).get("uid") or "")
        self.scheduler.add_pod_group(group, now)

    # --- decisions out ------------------------------------------------------------------------------------

    def carry_out(self, decisions: list[Decision], now: float, seconds: float) -> None:
        """One round's decisions carried out: binds in parallel, then conditions, nominations, evictions."""
        profile = self.profile.name
        self.counters.cycles += 1
        self._bind_all([d for d in decisions if isinstance(d, Bind)], now)
        for decision in decisions:
            if isinstance(decision, Bind):
                if self.metrics is not None:
                    self.metrics.attempt("scheduled", profile, seconds)
            elif isinstance(decision, Unschedulable):
                pod = decision.pod
                self.counters.unschedulable += 1
                self.binder.unschedulable(pod.namespace, pod.name, decision.message, uid=self._uids.get(pod.key))
                if self.metrics is not None:
                    self.metrics.attempt("unschedulable", profile, seconds)
            elif isinstance(decision, Nominate):
                self.binder.nominate(decision.pod.namespace, decision.pod.name, decision.node)
            elif isinstance(decision, Evict):
                self._evict(decision)
            elif isinstance(decision, Preemption):
                if self.metrics is not None:
                    self.metrics.preemption(len(decision.victims))
            elif isinstance(decision, GroupCondition):
                group = decision.group
                if self.metrics is not None:
                    self.metrics.group_attempt("scheduled" if decision.status else
                                               "error" if decision.reason == "SchedulerError" else "unschedulable",
                                               profile, seconds)
                self.binder.group_condition(group.namespace, group.name, decision.type, decision.status,
                                            decision.reason, decision.message)
            elif isinstance(decision, DeviceTaintEviction):
                pod = decision.pod
                self.binder.preempt(pod.namespace, pod.name, preemptor="", node=decision.node,
                                    message=decision.message, uid=self._uids.get(pod.key))
        if self.metrics is not None:
            self.metrics.pending(self._pending_counts())

    def _bind_all(self, binds: list[Bind], now: float) -> None:
        """The binding cycles, in parallel as kube-scheduler's run: one job per pod, and one per PodGroup whose
        members bind in order and stop at the first failure. Then, on the loop's thread: the bound confirmed,
        and each failure handed to the engine (which rolls back what of its gang is still only assumed)."""
        units: dict[str, list[Bind]] = {}
        for bind in binds:
            group = self.scheduler.assumed.get(bind.pod.key) or ""
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
        """One Binding, retried on the same node while the error is transient (the pod keeps its assumed room,
        so a gang member is not overtaken by others while the API server is away). A 409 after a lost answer
        is a success when the pod is bound where we asked."""
        pod = bind.pod
        uid = self._uids.get(pod.key)
        result = self.binder.bind(pod.namespace, pod.name, uid, bind.node)
        for wait in BIND_RETRY_WAITS:
            if result.ok or result.reason != "error":
                break
            time.sleep(wait)
            result = self.binder.bind(pod.namespace, pod.name, uid, bind.node)
            if result.reason == "conflict" and self._bound_to(pod.namespace, pod.name, bind.node):
                return BindResult(True, "", result.message)
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
        is_group = preemptor in self._group_uids and preemptor not in self._uids
        uid = self._group_uids.get(preemptor, "") if is_group else self._uids.get(preemptor, "")
        self.binder.preempt(victim.namespace, victim.name, preemptor=uid, node=decision.node,
                            preemptor_kind="podgroup" if is_group else "pod",
                            preemptor_name=preemptor.split("/", 1)[-1], uid=self._uids.get(victim.key))

    # --- reporting ----------------------------------------------------------------------------------------

    def _pending_counts(self) -> dict[str, int]:
        counts = {"active": 0, "backoff": 0, "unschedulable": 0, "gated": 0}
        s = self.scheduler
        for key, entry in s.queue.entries.items():
            size = len([k for k in s.members.get(key[len(GROUP):], ()) if k not in s.cluster.bound]) \
                if key.startswith(GROUP) else 1
            where = {Where.ACTIVE: "active", Where.IN_FLIGHT: "active", Where.BACKOFF: "backoff",
                     Where.UNSCHEDULABLE: "unschedulable"}[entry.where]
            counts[where] += size
        counts["gated"] = sum(len([k for k in s.members.get(g, ()) if k not in s.cluster.bound]) for g in s.gated)
        return counts

    def _warn(self, key: str, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            log.warning("%s", message)
