"""The API calls that carry out the scheduler's decisions on a real cluster, as kube-scheduler v1.37 writes them.

`ApiWriter` binds, reports failures, nominates, preempts, writes PodGroup conditions and DRA claims:

- **bind** POSTs the `pods/binding` subresource (`defaultbinder/default_binder.go`): a `v1 Binding` to the
  Node, carrying the pod's UID so that a pod deleted and recreated under the same name is not bound (the API
  server answers 409 "Precondition failed: UID in precondition", reported here as `gone`). On success it
  emits `Normal Scheduled` "Successfully assigned <ns>/<name> to <node>" (`schedule_one.go` finishBinding).
  `bind` never retries a binding: the engine decides (upstream's `util.BindPod` retries 500/503/refused).
- **unschedulable** writes the pod's `PodScheduled` condition (False, reason `Unschedulable`) and emits
  `Warning FailedScheduling` with the message (`schedule_one.go` handleSchedulingFailure and updatePod),
  patching only when the condition or the nominated node changes.
- **nominate** sets or clears `status.nominatedNodeName`.
- **preempt** follows the preemption executor (`framework/preemption/executor.go` PreemptPod): the victim's
  `DisruptionTarget` condition (True, reason `PreemptionByScheduler`, "<scheduler>: preempting to accommodate
  a higher priority <pod|podgroup>"), then a delete with the victim's own grace period, then `Normal
  Preempted` "Preempted by <pod|podgroup> <uid> on node <node>" on the victim.
- **group_condition** merges one condition into a `scheduling.k8s.io/v1beta1` PodGroup's `/status` by type,
  keeping `lastTransitionTime` while the status stays, and never turning a True condition back to False
  (`schedule_one_podgroup.go` updatePodGroupCondition).
- **reserve_claims** is DynamicResources' PreBind (`dynamicresources.go` bindClaim): for each of the pod's
  ResourceClaims not yet reserved for it, the allocation the engine chose is recorded when the claim has none
  (the `resource.kubernetes.io/delete-protection` finalizer first, in a plain update) and the pod is added to
  `status.reservedFor` (at most 256 entries), by an update of `resourceclaims/status` carrying the claim's
  resourceVersion. A 409 reads the claim again and retries (5 tries, as `retry.DefaultRetry`); the writes of
  this process are also serialized per claim, so parallel bindings of pods sharing a claim do not race each
  other. A claim allocated to other devices, being deleted, missing or full refuses the pod.
- **unreserve_claims** is Unreserve: the pod leaves `reservedFor`; a claim whose allocation this reservation
  wrote and that nobody else uses loses it and the finalizer again (upstream leaves that to the resourceclaim
  controller, which does the same).

Status writes are strategic merge patches of the one condition (pod and PodGroup conditions merge by `type`),
as `util.PatchPodStatus` sends them. Status patches, reads and events retry transient errors (500, 503, 504,
429, a broken connection) with client-go's `retry.DefaultBackoff` (4 tries, 10 ms × 5ⁿ), then are logged and
dropped: apart from `bind`'s result and `preempt`'s boolean, nothing here reports failure to the caller.

Events are `events.k8s.io/v1` Events, as kube-scheduler's recorder writes them (`reportingController` =
the scheduler name, `reportingInstance` = "<scheduler>-<hostname>", `action` Binding / Scheduling /
Preempting); the core/v1 view shows them with `reportingComponent` = the scheduler name (`source` must stay
unset in that API). Repeats are aggregated lightly: the same note, type and reason on the same object is
written at most once per `EVENT_WINDOW` (30 s); a repeat after the window updates the first Event's
`series` (count, lastObservedTime) instead of creating another, and a repeat after `EVENT_FINISH` (6 min, as
client-go's finishSeries) of silence starts a new Event. Repeats within the window are counted into the next
series update but not written on their own. (client-go's aggregation leaves the note out of the key and writes
a series at the second repeat, then every 30 min; keeping the note in the key shows each distinct reason.)
Events are written in the background, never on the scheduling path: at most 1,000 wait (more are dropped), and
one the API server cannot take (a broken connection, a 5xx, as when it restarts) is tried again 12 times, 10 s
apart, as client-go's broadcaster does, so a pod bound while the API server restarted still gets its
`Scheduled` Event. An Event is named when it is queued and keeps that name on every try, so a create whose
answer was lost finds its own Event on the next try (a 409 on an Event this instance wrote about the same pod
and reason) rather than writing a second. A binding whose answer was lost and that the API server then
reports as already made on the node asked for (a 409) counts as made, and gets its `Scheduled` Event too.

kube-scheduler compares against its informer's copy of the pod; the ApiWriter instead remembers, per
`namespace/name`, the PodScheduled condition and nominated node it last read or wrote (read with a GET when
unknown or older than `POD_CACHE_TTL`, 5 min; at most `POD_CACHE_SIZE` pods). The driver calls `forget` when
a pod is deleted; a successful bind forgets on its own. Unlike upstream, `unschedulable` writes nothing to a
pod that is already bound (its PodScheduled is True) or that has been recreated under another UID.
"""

from __future__ import annotations

import datetime
import functools
import logging
import queue
import random
import socket
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import httpx2
from lightkube import ApiError, Client
from lightkube.core import resource as res
from lightkube.generic_resource import Generic
from lightkube.models.core_v1 import ObjectReference
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import Pod
from lightkube.resources.events_v1 import Event
from lightkube.resources.scheduling_v1beta1 import PodGroup
from lightkube.types import PatchType

from phalanx.live.fence import NotLeader
from phalanx.scheduler.decisions import PreemptorKind

log = logging.getLogger(__name__)

T = TypeVar("T")

BindReason = Literal["", "conflict", "gone", "error", "fenced"]

# client-go retry.DefaultBackoff (Steps 4, Duration 10ms, Factor 5, Jitter 0.1): the waits between 4 tries.
RETRY_DELAYS = (0.01, 0.05, 0.25)
RETRY_JITTER = 0.1
TRANSIENT_CODES = frozenset({429, 500, 503, 504})

EVENT_WINDOW = 30.0  # seconds: the same event on the same object is written at most once in this window
EVENT_FINISH = 360.0  # seconds of silence after which a repeat starts a new Event (client-go's finishTime)
EVENT_CACHE_SIZE = 4096  # aggregated events remembered (least recently seen dropped first)
# client-go's broadcaster (tools/events): an Event the API server cannot take now is tried 12 times, 10 s apart
# (the first wait random), so that Events survive an API server restart; at most 1,000 wait to be written.
EVENT_TRIES = 12
EVENT_RETRY_WAIT = 10.0
EVENT_QUEUE_LIMIT = 1000
EVENT_WRITERS = 4  # threads writing Events
POD_CACHE_SIZE = 8192  # pods whose PodScheduled condition is remembered
POD_CACHE_TTL = 300.0  # seconds before a remembered condition is read again from the API server
NOTE_LENGTH_LIMIT = 1024  # an Event's note, in bytes (apis/core/validation/events.go NoteLengthLimit)
REPORTING_INSTANCE_LIMIT = 128
CLAIM_FINALIZER = "resource.kubernetes.io/delete-protection"  # resourceapi.Finalizer
RESERVED_FOR_MAX = 256  # ResourceClaimReservedForMaxSize
CLAIM_TRIES = 5  # client-go retry.DefaultRetry: a claim write that meets a 409 is tried again on a fresh read
CLAIM_RETRY_WAIT = 0.01  # seconds between those tries (with RETRY_JITTER)
CLAIM_LOCKS = 64  # claim writes of this process are serialized per claim, over this many striped locks

_PREEMPTOR_REF = {  # the preemptor as the Preempted event's `related` object
    "pod": ("v1", "Pod"),
    "podgroup": ("scheduling.k8s.io/v1beta1", "PodGroup"),
    "compositepodgroup": ("scheduling.k8s.io/v1alpha3", "CompositePodGroup"),
}


@dataclass(frozen=True)
class BindResult:
    """What became of a binding: `ok`, or why not — `conflict` (409: the pod is already bound, perhaps by
    another scheduler), `gone` (404, or the pod was recreated under the same name with another UID),
    `fenced` (not sent: this replica no longer holds the leader Lease) or `error` (anything else: a 5xx, a
    broken connection; the binding may or may not have been stored)."""

    ok: bool
    reason: BindReason
    message: str


@dataclass(frozen=True)
class ClaimHold:
    """A reservation `reserve_claims` added to a claim for a pod (`allocated`: it wrote the allocation and the
    finalizer too), for `unreserve_claims` to take back."""

    key: str  # namespace/name
    allocated: bool


@dataclass(frozen=True)
class ClaimsResult:
    """What became of a pod's claims before its binding: `ok` with what was added (`held`), or why not —
    `conflict` (the claim is gone, being deleted, allocated elsewhere or reserved for too many consumers)
    or `error` (the API server did not answer, or kept answering 409)."""

    ok: bool
    reason: BindReason
    message: str
    held: tuple[ClaimHold, ...] = ()


_CLAIM = res.ResourceDef("resource.k8s.io", "v1", "ResourceClaim")


class _RawClaim(res.NamespacedResource, Generic):  # type: ignore[misc]
    """A ResourceClaim as the plain dict the API server sends: a read-modify-write keeps every field, also
    those newer than lightkube's models."""

    _api_info = res.ApiInfo(resource=_CLAIM, plural="resourceclaims", verbs=["get", "put"])


class _RawClaimStatus(res.NamespacedSubResource, Generic):  # type: ignore[misc]
    """`PUT resourceclaims/{name}/status` with a plain dict."""

    _api_info = res.ApiInfo(resource=_CLAIM, parent=_CLAIM, plural="resourceclaims", verbs=["put"], action="status")


class _ClaimRefused(Exception):
    def __init__(self, reason: BindReason, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


class _Conflict(Exception):
    """A claim write met a newer resourceVersion (409): read the claim again and retry."""


class _PodBinding(res.NamespacedSubResource, Generic):  # type: ignore[misc]  # as lightkube's own generics
    """`POST pods/{name}/binding`, answered with a `Status` (lightkube's typed `Pod.Binding` would try to read
    the answer as a Binding and fail after the binding was made)."""

    _api_info = res.ApiInfo(resource=res.ResourceDef("", "v1", "Binding"), parent=res.ResourceDef("", "v1", "Pod"),
                            plural="pods", verbs=["post"], action="binding")


class _Gone(Exception):
    """The object is not there (404)."""


class _Failed(Exception):
    """A call failed for good: not transient, or still failing after the retries (`transient`)."""

    def __init__(self, transient: bool = False) -> None:
        super().__init__()
        self.transient = transient


class _Fenced(_Failed):
    """A call not made: this replica no longer holds the leader Lease."""


@dataclass(frozen=True)
class _EventToWrite:
    """An Event waiting for the background writer: a new one, or (`count` > 1) a series update of `name`."""

    namespace: str
    regarding: ObjectReference
    related: ObjectReference | None
    kind: str
    reason: str
    action: str
    note: str
    count: int
    name: str  # the Event to update with a series ("" for a new one)
    at: float  # monotonic time of the occurrence
    new_name: str = ""  # the name a new Event is created under, the same on every try


@dataclass
class _PodScheduled:
    """What the API server holds, as far as we know, for one pod's `PodScheduled` condition."""

    uid: str
    generation: int | None
    status: str  # "" when the pod has no such condition
    reason: str
    message: str
    since: str  # lastTransitionTime, RFC 3339
    nominated: str  # status.nominatedNodeName ("" for none)
    checked: float  # monotonic time of the last read or write


@dataclass
class _Emitted:
    """One Event written, and its repeats since."""

    name: str
    count: int
    written: float  # monotonic time of the last API write
    seen: float  # monotonic time of the last occurrence


def utc_now() -> datetime.datetime:
    return datetime.datetime.now(tz=datetime.UTC)


def rfc3339(moment: datetime.datetime) -> str:
    """A `metav1.Time`: UTC to the second."""
    return moment.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def micro_time(moment: datetime.datetime) -> str:
    """A `metav1.MicroTime`: UTC with exactly six digits of fraction, as the API server parses it."""
    return moment.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def truncate_note(message: str, limit: int = NOTE_LENGTH_LIMIT) -> str:
    """schedule_one.go truncateMessage: at most `limit` bytes, cut with " ..." (here on a character boundary)."""
    if len(message.encode()) <= limit:
        return message
    suffix = " ..."
    cut = message.encode()[:limit - len(suffix)].decode(errors="ignore")
    return cut + suffix


def preempting_message(scheduler_name: str, kind: PreemptorKind = "pod") -> str:
    """executor.go: the victim's DisruptionTarget message."""
    return f"{scheduler_name}: preempting to accommodate a higher priority {kind}"


def preempted_message(kind: PreemptorKind, preemptor_uid: str, node: str) -> str:
    """executor.go: the note of the victim's Preempted event."""
    return f"Preempted by {kind} {preemptor_uid} on node {node}"


def scheduled_message(namespace: str, name: str, node: str) -> str:
    """schedule_one.go finishBinding: the note of the Scheduled event."""
    return f"Successfully assigned {namespace}/{name} to {node}"


def _devices(allocation: Mapping[str, Any] | None) -> set[tuple[str, str, str, str]]:
    """The (request, driver, pool, device) of an allocation's results."""
    results = ((allocation or {}).get("devices") or {}).get("results") or []
    return {(str(r.get("request")), str(r.get("driver")), str(r.get("pool")), str(r.get("device")))
            for r in results if isinstance(r, Mapping)}


def _reserved_for(claim: Mapping[str, Any]) -> list[dict[str, Any]]:
    return list((claim.get("status") or {}).get("reservedFor") or [])


def _claim_refusal(claim: Mapping[str, Any], key: str, allocation: Mapping[str, Any]) -> str | None:
    """Why the claim cannot be reserved for one more pod with `allocation` (bindClaim's checks)."""
    if (claim.get("metadata") or {}).get("deletionTimestamp") is not None:
        return f"claim {key} got deleted in the meantime"
    current = (claim.get("status") or {}).get("allocation")
    if current is not None and _devices(current) != _devices(allocation):
        return f"claim {key} got allocated elsewhere in the meantime"
    if len(_reserved_for(claim)) >= RESERVED_FOR_MAX:
        return f"claim {key} is reserved for {RESERVED_FOR_MAX} consumers already"
    return None


def _has_finalizer(claim: Mapping[str, Any]) -> bool:
    return CLAIM_FINALIZER in ((claim.get("metadata") or {}).get("finalizers") or [])


def _with_finalizer(claim: dict[str, Any], *, add: bool) -> dict[str, Any]:
    """The claim with the delete-protection finalizer added (or removed)."""
    meta = dict(claim.get("metadata") or {})
    finalizers = [f for f in meta.get("finalizers") or [] if f != CLAIM_FINALIZER]
    meta["finalizers"] = [*finalizers, CLAIM_FINALIZER] if add else finalizers
    return {**claim, "metadata": meta}


def _reserving(claim: dict[str, Any], pod: str, uid: str, allocation: Mapping[str, Any] | None) -> dict[str, Any]:
    """The claim with the pod added to reservedFor (and `allocation` recorded, when given)."""
    status = dict(claim.get("status") or {})
    status["reservedFor"] = [*_reserved_for(claim), {"resource": "pods", "name": pod, "uid": uid}]
    if allocation is not None:
        status["allocation"] = dict(allocation)
    return {**claim, "status": status}


def _unreserving(claim: dict[str, Any], left: list[dict[str, Any]], *, deallocate: bool) -> dict[str, Any]:
    """The claim reserved for `left` only; without its allocation (and device statuses) when `deallocate`."""
    status = {k: v for k, v in (claim.get("status") or {}).items()
              if k != "reservedFor" and not (deallocate and k in ("allocation", "devices"))}
    if left:
        status["reservedFor"] = left
    return {**claim, "status": status}


def _code(exc: BaseException) -> int | None:
    if isinstance(exc, ApiError):
        code = exc.status.code if exc.status is not None else None
        return code if code is not None else exc.response.status_code
    return None


def _text(exc: BaseException) -> str:
    if isinstance(exc, ApiError) and exc.status is not None and exc.status.message:
        return f"{_code(exc)}: {exc.status.message}"
    return f"{type(exc).__name__}: {exc}"


class ApiWriter:
    """Writes the scheduler's decisions to the API server through `client`, as `scheduler_name`.

    Safe to call from several threads. `events=False` writes no Events. `fence` is asked right before every
    call to the API server (leader election's `LeaderElector.holds`): when it says no, nothing is sent, a
    binding answers `fenced` and other writes are dropped. `clock` (monotonic seconds), `sleep` and `wall`
    (the UTC time written into conditions and events) are there for tests.
    """

    def __init__(self, client: Client, scheduler_name: str = "phalanx", *, events: bool = True,
                 fence: Callable[[], bool] | None = None,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep,
                 wall: Callable[[], datetime.datetime] = utc_now) -> None:
        self.client = client
        self.fence = fence
        self.scheduler_name = scheduler_name
        self.events = events
        self.reporting_instance = f"{scheduler_name}-{socket.gethostname()}"[:REPORTING_INSTANCE_LIMIT]
        self._clock = clock
        self._sleep = sleep
        self._wall = wall
        self._lock = threading.Lock()
        self._pods: OrderedDict[tuple[str, str], _PodScheduled] = OrderedDict()
        self._emitted: OrderedDict[tuple[str, ...], _Emitted] = OrderedDict()
        # Events wait here for the writers (daemon threads, so an outage never holds the process at exit).
        self._events: queue.Queue[tuple[tuple[str, ...], _EventToWrite]] = queue.Queue(maxsize=EVENT_QUEUE_LIMIT)
        self._writers: list[threading.Thread] = []
        self._closing = threading.Event()
        self._claim_locks = [threading.Lock() for _ in range(CLAIM_LOCKS)]

    # --- binding --------------------------------------------------------------------------------------

    def bind(self, namespace: str, name: str, uid: str | None, node: str) -> BindResult:
        """Bind the pod to `node` (one POST, never retried here) and, on success, emit `Scheduled`."""
        # The UID is a precondition: the API server refuses the binding for another pod of that name.
        body = _PodBinding(apiVersion="v1", kind="Binding",
                           metadata=ObjectMeta(name=name, namespace=namespace, uid=uid or None),
                           target={"kind": "Node", "name": node})
        fenced = BindResult(False, "fenced", "not the leader any more: the binding was not sent")
        if not self._may_write(f"binding {namespace}/{name} to {node}"):
            return fenced
        try:
            self.client.create(body, name=name, namespace=namespace)
        except NotLeader:
            log.warning("not the leader any more: binding %s/%s to %s not sent", namespace, name, node)
            return fenced
        except ApiError as exc:
            code = _code(exc)
            message = exc.status.message if exc.status is not None and exc.status.message else str(exc)
            if code == 404 or (code == 409 and "Precondition failed: UID" in message):
                return BindResult(False, "gone", message)
            if code == 409:
                return BindResult(False, "conflict", message)
            log.warning("binding %s/%s to %s failed: %s", namespace, name, node, _text(exc))
            return BindResult(False, "error", message)
        except httpx2.HTTPError as exc:
            log.warning("binding %s/%s to %s failed: %s", namespace, name, node, _text(exc))
            return BindResult(False, "error", _text(exc))
        self.forget(namespace, name)
        return BindResult(True, "", self.scheduled(namespace, name, uid, node))

    def scheduled(self, namespace: str, name: str, uid: str | None, node: str) -> str:
        """Emit `Scheduled` for a pod bound to `node` (also one whose binding's answer was lost); the note."""
        note = scheduled_message(namespace, name, node)
        self._event(namespace, name, uid, "Normal", "Scheduled", "Binding", note)
        return note

    # --- failures and nominations ---------------------------------------------------------------------

    def unschedulable(self, namespace: str, name: str, message: str, *, nominated_node: str | None = None,
                      reason: Literal["Unschedulable", "SchedulerError"] = "Unschedulable",
                      uid: str | None = None) -> None:
        """Record a failed attempt: the `PodScheduled` condition (False, `reason`, `message`) and, when
        `nominated_node` is given, `status.nominatedNodeName` ("" clears it), patched only when they change;
        then a `FailedScheduling` Warning event (aggregated, see the module notes).

        A pod already bound (`spec.nodeName` set) is left alone, and so is a pod that is gone or, when `uid` is
        given, has another UID (recreated under the same name).
        """
        state = self._pod_state(namespace, name, uid)
        if state is None:
            return
        now = self._wall()
        changed = (state.status, state.reason, state.message) != ("False", reason, message)
        renominate = nominated_node is not None and nominated_node != state.nominated
        if changed or renominate:
            status: dict[str, Any] = {}
            since = state.since if state.status == "False" else rfc3339(now)
            if changed:
                condition: dict[str, Any] = {"type": "PodScheduled", "status": "False", "reason": reason,
                                             "message": message, "lastProbeTime": None, "lastTransitionTime": since}
                if state.generation is not None:
                    condition["observedGeneration"] = state.generation
                status["conditions"] = [condition]
            if renominate:
                status["nominatedNodeName"] = nominated_node or None
            try:
                self._call(f"pod {namespace}/{name} PodScheduled condition",
                           lambda: self.client.patch(Pod.Status, name, {"status": status}, namespace=namespace,
                                                     patch_type=PatchType.STRATEGIC))
            except _Gone:
                self.forget(namespace, name)
                return
            except _Failed:
                self.forget(namespace, name)  # what the server holds is unknown now: read it next time
            else:
                with self._lock:
                    state.status, state.reason, state.message, state.since = "False", reason, message, since
                    if renominate:
                        state.nominated = nominated_node or ""
                    state.checked = self._clock()
        self._event(namespace, name, state.uid, "Warning", "FailedScheduling", "Scheduling", truncate_note(message))

    def nominate(self, namespace: str, name: str, node: str) -> None:
        """Set `status.nominatedNodeName` to `node`; "" clears it (sends null)."""
        with self._lock:
            known = self._pods.get((namespace, name))
            if known is not None and self._clock() - known.checked < POD_CACHE_TTL and known.nominated == node:
                return
        try:
            self._call(f"pod {namespace}/{name} nominatedNodeName",
                       lambda: self.client.patch(Pod.Status, name, {"status": {"nominatedNodeName": node or None}},
                                                 namespace=namespace, patch_type=PatchType.MERGE))
        except _Gone:
            self.forget(namespace, name)
        except _Failed:
            self.forget(namespace, name)
        else:
            with self._lock:
                known = self._pods.get((namespace, name))
                if known is not None:
                    known.nominated = node

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until the Events queued so far are written (or given up), at most `timeout` seconds (None: no
        limit); whether they all were. The ApiWriter stays usable."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self._events.unfinished_tasks:
            if deadline is not None and time.monotonic() >= deadline:
                return False
            time.sleep(0.01)
        return True

    def close(self, grace: float = 2.0) -> None:
        """Stop writing Events: those waiting get `grace` seconds, the rest are dropped (a write in flight ends
        with its request)."""
        self.flush(grace)
        self._closing.set()

    def forget(self, namespace: str, name: str) -> None:
        """Drop what is remembered of the pod's status (the pod was bound, deleted or recreated)."""
        with self._lock:
            self._pods.pop((namespace, name), None)

    # --- preemption -----------------------------------------------------------------------------------

    def preempt(self, namespace: str, name: str, *, preemptor: str, node: str, message: str = "",
                grace_seconds: int | None = None, preemptor_kind: PreemptorKind = "pod",
                preemptor_name: str | None = None, uid: str | None = None) -> bool:
        """Evict the victim `namespace/name` for `preemptor` (its UID; a pod's, or a PodGroup's with
        `preemptor_kind="podgroup"`) on `node`, as the preemption executor does: the `DisruptionTarget`
        condition (`message`, by default upstream's "<scheduler>: preempting to accommodate a higher priority
        <kind>"), then a delete with the victim's own grace period (or `grace_seconds`), then a `Preempted`
        event on the victim (related to the preemptor when `preemptor_name` is given).

        True when the victim is deleted, being deleted already, or gone (a 404 at any step, or another UID
        than `uid`); False when a call failed (the condition could not be written, or the delete failed).
        """
        try:
            victim = self._call(f"victim {namespace}/{name}", lambda: self.client.get(Pod, name, namespace=namespace))
        except _Gone:
            return True
        except _Failed:
            return False
        meta = victim.metadata or ObjectMeta()
        if uid is not None and meta.uid != uid:
            return True  # the victim is gone; another pod has its name
        if meta.deletionTimestamp is not None:
            return True  # graceful deletion has already started (executor.go skips the API calls)
        current = next((c for c in (victim.status.conditions if victim.status else None) or []
                        if c.type == "DisruptionTarget"), None)
        text = message or preempting_message(self.scheduler_name, preemptor_kind)
        if current is None or (current.status, current.reason, current.message) != ("True", "PreemptionByScheduler",
                                                                                    text):
            since = (rfc3339(current.lastTransitionTime) if current is not None and current.status == "True"
                     and current.lastTransitionTime is not None else rfc3339(self._wall()))
            condition: dict[str, Any] = {"type": "DisruptionTarget", "status": "True",
                                         "reason": "PreemptionByScheduler", "message": text,
                                         "lastProbeTime": None, "lastTransitionTime": since}
            if meta.generation is not None:
                condition["observedGeneration"] = meta.generation
            try:
                self._call(f"victim {namespace}/{name} DisruptionTarget condition",
                           lambda: self.client.patch(Pod.Status, name, {"status": {"conditions": [condition]}},
                                                     namespace=namespace, patch_type=PatchType.STRATEGIC))
            except _Gone:
                return True
            except _Failed:
                return False
        try:
            self._call(f"victim {namespace}/{name} delete",
                       lambda: self.client.delete(Pod, name, namespace=namespace, grace_period=grace_seconds))
        except _Gone:
            return True
        except _Failed:
            return False
        self.forget(namespace, name)
        related = None
        if preemptor_name is not None:
            api_version, kind = _PREEMPTOR_REF[preemptor_kind]
            related = ObjectReference(apiVersion=api_version, kind=kind, namespace=namespace, name=preemptor_name,
                                      uid=preemptor)
        self._event(namespace, name, meta.uid, "Normal", "Preempted", "Preempting",
                    preempted_message(preemptor_kind, preemptor, node), related=related)
        return True

    # --- PodGroups ------------------------------------------------------------------------------------

    def group_condition(self, namespace: str, name: str, type: str, status: bool, reason: str,
                        message: str) -> None:
        """Merge the condition `type` into the PodGroup's status: `lastTransitionTime` changes only with the
        status, `observedGeneration` is the group's generation, nothing is written when nothing changed, and a
        condition that is True is never set back to False (updatePodGroupCondition)."""
        try:
            group = self._call(f"PodGroup {namespace}/{name}",
                               lambda: self.client.get(PodGroup, name, namespace=namespace))
        except (_Gone, _Failed):
            return
        want = "True" if status else "False"
        conditions = (group.status.conditions if group.status else None) or []
        current = next((c for c in conditions if c.type == type), None)
        generation = group.metadata.generation if group.metadata else None
        if current is not None and current.status == "True" and want != "True":
            return
        if current is not None and (current.status, current.reason, current.message, current.observedGeneration) \
                == (want, reason, message, generation):
            return
        since = (current.lastTransitionTime if current is not None and current.status == want
                 and current.lastTransitionTime is not None else self._wall())
        condition: dict[str, Any] = {"type": type, "status": want, "reason": reason, "message": message,
                                     "lastTransitionTime": rfc3339(since)}
        if generation is not None:
            condition["observedGeneration"] = generation
        try:
            self._call(f"PodGroup {namespace}/{name} {type} condition",
                       lambda: self.client.patch(PodGroup.Status, name, {"status": {"conditions": [condition]}},
                                                 namespace=namespace, patch_type=PatchType.STRATEGIC))
        except (_Gone, _Failed):
            return

    # --- DRA claims (DynamicResources PreBind and Unreserve) -----------------------------------------

    def reserve_claims(self, namespace: str, name: str, uid: str,
                       claims: Sequence[tuple[str, Mapping[str, Any]]]) -> ClaimsResult:
        """Before the pod's binding, record each claim's `status.allocation` (when the claim has none yet; the
        finalizer first, in a plain update) and add the pod to `status.reservedFor`, as bindClaim does: an
        update with the claim's resourceVersion, read again and retried on a 409. A claim allocated to other
        devices, being deleted or full refuses the pod; what this call added to earlier claims is taken back
        then. A claim already reserved for the pod is left as it is."""
        held: list[ClaimHold] = []
        for key, allocation in claims:
            try:
                hold = self._reserve_claim(key, name, uid, allocation)
            except _ClaimRefused as exc:
                self.unreserve_claims(namespace, name, uid, held)
                return ClaimsResult(False, exc.reason, exc.message)
            if hold is not None:
                held.append(hold)
        return ClaimsResult(True, "", "", tuple(held))

    def unreserve_claims(self, namespace: str, name: str, uid: str, held: Sequence[ClaimHold]) -> None:
        """Take back what `reserve_claims` added (the binding failed), as Unreserve does: the pod leaves
        `status.reservedFor`; a claim this reservation allocated and that nobody else uses now loses its
        allocation and finalizer again. Never raises: a claim that cannot be written is logged."""
        for hold in reversed(held):
            try:
                self._unreserve_claim(hold, uid)
            except _ClaimRefused as exc:
                if exc.reason == "error":
                    log.warning("pod %s/%s left in reservedFor: %s", namespace, name, exc.message)

    def _reserve_claim(self, key: str, pod: str, uid: str, allocation: Mapping[str, Any]) -> ClaimHold | None:
        with self._claim_lock(key):
            for _ in range(CLAIM_TRIES):
                claim = self._read_claim(key)
                if any(r.get("uid") == uid for r in _reserved_for(claim)):
                    return None
                refusal = _claim_refusal(claim, key, allocation)
                if refusal is not None:
                    raise _ClaimRefused("conflict", refusal)
                allocate = (claim.get("status") or {}).get("allocation") is None
                try:
                    if allocate and not _has_finalizer(claim):
                        claim = self._put_claim(key, _with_finalizer(claim, add=True))
                    self._put_claim_status(key, _reserving(claim, pod, uid, allocation if allocate else None))
                except _Conflict:
                    self._sleep(CLAIM_RETRY_WAIT * (1 + random.uniform(0, RETRY_JITTER)))
                    continue
                return ClaimHold(key, allocate)
        raise _ClaimRefused("error", f"claim {key}: still in conflict after {CLAIM_TRIES} tries")

    def _unreserve_claim(self, hold: ClaimHold, uid: str) -> None:
        """Idempotent, so that a retry after a 409 finishes what the try before it began."""
        with self._claim_lock(hold.key):
            for _ in range(CLAIM_TRIES):
                claim = self._read_claim(hold.key)
                reserved = _reserved_for(claim)
                left = [r for r in reserved if r.get("uid") != uid]
                try:
                    if len(left) != len(reserved):
                        claim = self._put_claim_status(hold.key, _unreserving(claim, left,
                                                                              deallocate=hold.allocated and not left))
                    status = claim.get("status") or {}
                    if hold.allocated and not status.get("allocation") and not status.get("reservedFor") \
                            and _has_finalizer(claim):
                        self._put_claim(hold.key, _with_finalizer(claim, add=False))
                except _Conflict:
                    self._sleep(CLAIM_RETRY_WAIT * (1 + random.uniform(0, RETRY_JITTER)))
                    continue
                return
        raise _ClaimRefused("error", f"claim {hold.key}: still in conflict after {CLAIM_TRIES} tries")

    def _claim_lock(self, key: str) -> threading.Lock:
        return self._claim_locks[hash(key) % CLAIM_LOCKS]

    def _read_claim(self, key: str) -> dict[str, Any]:
        namespace, _, name = key.partition("/")
        try:
            found = self._call(f"claim {key}", lambda: self.client.get(_RawClaim, name, namespace=namespace))
        except _Gone:
            raise _ClaimRefused("conflict", f"claim {key} not found") from None
        except _Failed:
            raise _ClaimRefused("error", f"claim {key} could not be read") from None
        return dict(found)

    def _put_claim(self, key: str, body: dict[str, Any]) -> dict[str, Any]:
        return self._put(key, "metadata.finalizers", lambda: self.client.replace(_RawClaim.from_dict(body)))

    def _put_claim_status(self, key: str, body: dict[str, Any]) -> dict[str, Any]:
        namespace, _, name = key.partition("/")
        return self._put(key, "status", lambda: self.client.replace(_RawClaimStatus.from_dict(body), name,
                                                                    namespace=namespace))

    def _put(self, key: str, what: str, call: Callable[[], Any]) -> dict[str, Any]:
        try:
            return dict(self._call(f"claim {key} {what}", call, conflicts=False, passthrough=frozenset({409})))
        except ApiError as exc:
            raise _Conflict() from exc
        except _Gone:
            raise _ClaimRefused("conflict", f"claim {key} not found") from None
        except _Failed:
            raise _ClaimRefused("error", f"claim {key}: {what} could not be written") from None

    # --- internals ------------------------------------------------------------------------------------

    def _call(self, what: str, call: Callable[[], T], *, conflicts: bool = True,
              passthrough: frozenset[int] = frozenset()) -> T:
        """`call()`, retried on transient errors (and on 409 when `conflicts`, as RetriableWithConflict).
        Raises `_Gone` on a 404, the error itself for a code in `passthrough`, and `_Failed` (after logging)
        when it gives up."""
        for attempt in range(len(RETRY_DELAYS) + 1):
            if not self._may_write(what):
                raise _Fenced()
            try:
                return call()
            except NotLeader:
                log.warning("not the leader any more: %s not sent", what)
                raise _Fenced() from None
            except (ApiError, httpx2.HTTPError) as exc:
                code = _code(exc)
                if code == 404:
                    raise _Gone() from exc
                if code in passthrough:
                    raise
                transient = (code in TRANSIENT_CODES or (conflicts and code == 409)
                             or (code is None and isinstance(exc, httpx2.TransportError)))
                if not transient or attempt == len(RETRY_DELAYS):
                    log.warning("%s: giving up after %d tries: %s", what, attempt + 1, _text(exc))
                    raise _Failed(transient) from exc
                delay = RETRY_DELAYS[attempt]
                self._sleep(delay * (1 + random.uniform(0, RETRY_JITTER)))
        raise AssertionError("unreachable")  # pragma: no cover

    def _may_write(self, what: str) -> bool:
        if self.fence is None or self.fence():
            return True
        log.warning("not the leader any more: %s not sent", what)
        return False

    def _pod_state(self, namespace: str, name: str, uid: str | None) -> _PodScheduled | None:
        """The remembered PodScheduled condition of the pod, read again when unknown, older than
        POD_CACHE_TTL or of another UID; None when the pod is gone, bound, of another UID, or cannot be read."""
        key = (namespace, name)
        now = self._clock()
        with self._lock:
            known = self._pods.get(key)
            if known is not None and now - known.checked < POD_CACHE_TTL and uid in (None, known.uid):
                self._pods.move_to_end(key)
                return known
        try:
            pod = self._call(f"pod {namespace}/{name}", lambda: self.client.get(Pod, name, namespace=namespace))
        except (_Gone, _Failed):
            self.forget(namespace, name)
            return None
        if pod.spec is not None and pod.spec.nodeName:
            self.forget(namespace, name)
            return None
        meta = pod.metadata or ObjectMeta()
        condition = next((c for c in (pod.status.conditions if pod.status else None) or []
                          if c.type == "PodScheduled"), None)
        state = _PodScheduled(
            uid=meta.uid or "", generation=meta.generation,
            status=condition.status if condition is not None else "",
            reason=(condition.reason or "") if condition is not None else "",
            message=(condition.message or "") if condition is not None else "",
            since=rfc3339(condition.lastTransitionTime) if condition is not None and condition.lastTransitionTime
            else "",
            nominated=(pod.status.nominatedNodeName or "") if pod.status else "", checked=now)
        with self._lock:
            self._pods[key] = state
            self._pods.move_to_end(key)
            while len(self._pods) > POD_CACHE_SIZE:
                self._pods.popitem(last=False)
        return state if uid in (None, state.uid) else None

    def _event(self, namespace: str, name: str, uid: str | None, kind: Literal["Normal", "Warning"], reason: str,
               action: str, note: str, *, related: ObjectReference | None = None) -> None:
        """Queue an events.k8s.io/v1 Event about the pod, aggregated (see the module notes); never raises and
        never waits for the API server: a writer in the background sends it, and tries again through an outage
        of the API server, as client-go's broadcaster does (EVENT_TRIES, EVENT_RETRY_WAIT apart). At most
        EVENT_QUEUE_LIMIT events wait; more are dropped, as the broadcaster drops them."""
        if not self.events:
            return
        key = (namespace, name, uid or "", kind, reason, action, note, (related.uid or "") if related else "")
        now = self._clock()
        with self._lock:
            known = self._emitted.get(key)
            if known is not None and now - known.seen > EVENT_FINISH:
                known = None
            if known is not None:
                known.count += 1
                known.seen = now
                self._emitted.move_to_end(key)
                if now - known.written < EVENT_WINDOW or not known.name:  # (no name: the first is on its way)
                    return
                known.written = now
                count, event_name = known.count, known.name
            else:
                # Remembered at once, so that repeats while the first is being written are counted, not written.
                self._emitted[key] = _Emitted(name="", count=1, written=now, seen=now)
                while len(self._emitted) > EVENT_CACHE_SIZE:
                    self._emitted.popitem(last=False)
                count, event_name = 1, ""
            if not self._writers:
                self._writers = [threading.Thread(target=self._write_events, name=f"events-{i}", daemon=True)
                                 for i in range(EVENT_WRITERS)]
                for writer in self._writers:
                    writer.start()
        regarding = ObjectReference(apiVersion="v1", kind="Pod", namespace=namespace, name=name, uid=uid or None)
        try:
            self._events.put_nowait((key, _EventToWrite(namespace, regarding, related, kind, reason, action, note,
                                                        count, event_name, now, f"{name}.{time.time_ns():x}")))
        except queue.Full:
            log.debug("%d events wait to be written: dropping %s on %s/%s", EVENT_QUEUE_LIMIT, reason, namespace,
                      name)

    def _write_events(self) -> None:
        while not self._closing.is_set():
            key, event = self._events.get()
            try:
                self._send_event(key, event)
            finally:
                self._events.task_done()

    def _send_event(self, key: tuple[str, ...], event: _EventToWrite) -> None:
        for attempt in range(EVENT_TRIES):
            if self._closing.is_set() or self._write_event(key, event):
                return
            # The first wait is random, so that schedulers do not all come back at once after an outage.
            if self._closing.wait(EVENT_RETRY_WAIT * (random.random() if attempt == 0 else 1.0)):
                return
        log.warning("event %s on %s/%s: not written after %d tries", event.reason, event.namespace,
                    event.regarding.name, EVENT_TRIES)

    def _write_event(self, key: tuple[str, ...], event: _EventToWrite) -> bool:
        """One try: True when done (written, or refused for good), False when the API server could not take it
        now (a broken connection, a 5xx: try again later)."""
        namespace = event.namespace
        if event.count > 1:
            series = {"series": {"count": event.count, "lastObservedTime": micro_time(self._wall())}}
            try:
                self._call(f"event {namespace}/{event.name}",
                           lambda: self.client.patch(Event, event.name, series, namespace=namespace,
                                                     patch_type=PatchType.MERGE), conflicts=False)
                return True
            except _Gone:
                pass  # the Event expired or was deleted: write a new one
            except _Failed as exc:
                return not exc.transient
        try:
            created = self._create_event(event)
        except _Failed as exc:
            if exc.transient:
                return False
            created = None
        with self._lock:
            known = self._emitted.get(key)
            if known is not None and not known.name:
                if created is None:
                    del self._emitted[key]  # never written: a repeat starts afresh
                else:
                    known.name = created
        return True

    def _create_event(self, event: _EventToWrite) -> str | None:
        """Create the Event under the name it was given when queued, so that a create whose answer was lost and
        that is tried again finds its own Event (a 409 on an Event this instance wrote about the same thing
        counts as written) instead of writing a second one; under a fresh name if someone else took it. Its
        name, or None when it cannot be written (its namespace is gone, the API server refused it). Raises a
        transient `_Failed`."""
        namespace = event.namespace
        event_name = event.new_name or f"{event.regarding.name}.{time.time_ns():x}"
        for _ in range(2):
            moment = self._wall()
            body = Event(
                metadata=ObjectMeta(name=event_name, namespace=namespace),
                # msgspec drops a zero fraction, and the API server wants six digits in a MicroTime
                eventTime=moment if moment.microsecond else moment.replace(microsecond=1),
                reportingController=self.scheduler_name, reportingInstance=self.reporting_instance,
                action=event.action, reason=event.reason, note=event.note, type=event.kind,
                regarding=event.regarding, related=event.related)
            try:
                self._call(f"event {namespace}/{event_name}", functools.partial(self.client.create, body),
                           conflicts=False)
            except _Gone:
                return None  # the namespace is gone
            except _Failed as exc:
                if _code(exc.__cause__ or exc) == 409:
                    if self._written_before(namespace, event_name, event):
                        return event_name
                    event_name = f"{event.regarding.name}.{time.time_ns():x}"
                    continue
                if exc.transient:
                    raise
                return None
            return event_name
        return None

    def _written_before(self, namespace: str, event_name: str, event: _EventToWrite) -> bool:
        """Whether the Event under `event_name` is the one an earlier try of `event` wrote."""
        try:
            found = self._call(f"event {namespace}/{event_name}",
                               lambda: self.client.get(Event, event_name, namespace=namespace))
        except (_Gone, _Failed):
            return False
        regarding = found.regarding
        return (found.reportingInstance == self.reporting_instance and found.reason == event.reason
                and found.note == event.note and regarding is not None
                and regarding.name == event.regarding.name and regarding.uid == event.regarding.uid)
