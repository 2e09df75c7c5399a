"""Leader election on a `coordination.k8s.io/v1` Lease, with client-go's leaderelection semantics.

Every replica of `phalanx run` runs a `LeaderElector` on the same Lease; only the one holding it schedules.
A candidate takes the Lease when it is missing, free (no holder) or expired (its `renewTime` plus
`leaseDurationSeconds` lies in the past), and then renews it every `retry_period`. Each write is an update
with the resourceVersion just read, so of two candidates racing for one Lease the API server lets exactly one
win; the other gets a 409 and keeps waiting. On a clean stop the leader releases the Lease (client-go's
ReleaseOnCancel), and a waiting replica takes over at its next retry instead of after `lease_duration`.

A leader stops leading, before anyone else may take the Lease, when:
- no renewal has succeeded for `renew_deadline`, counted from the start of the last successful one (so a
  process paused by SIGSTOP, or starved of CPU, past the deadline stops the moment it runs again, even if a
  renewal would now succeed: in between, another replica may have led);
- or a read shows another holder (client-go's `IsLeader` turns false on the first such read).
`holds()` is the fence: true only while this replica leads and its last successful renewal started less than
`renew_deadline` ago. The live driver asks it right before every write (a Binding, a status patch, an
eviction), so a leader that was paused writes nothing after it lost the Lease, even before its election loop
has noticed. Elapsed time is read from CLOCK_BOOTTIME where there is one (it keeps counting while the
machine sleeps), else the monotonic clock.

One difference from client-go: expiry is judged from the Lease's `renewTime` on this replica's clock (as the
Lease's own documentation describes it), not from the local time at which the record was last seen to change;
replicas are assumed to have synchronised clocks, to well under `lease_duration - renew_deadline`.
"""

from __future__ import annotations

import datetime
import enum
import logging
import math
import threading
import time
from collections.abc import Callable
from typing import TypeVar

import httpx2
from lightkube import ApiError, Client
from lightkube.models.coordination_v1 import LeaseSpec
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.coordination_v1 import Lease

log = logging.getLogger(__name__)

JITTER_FACTOR = 1.2  # client-go's: renew_deadline must exceed retry_period by this factor
T = TypeVar("T")


def elapsed_clock() -> float:
    """Seconds on a clock that never goes back and keeps counting through a pause or a suspend."""
    return time.clock_gettime(time.CLOCK_BOOTTIME) if hasattr(time, "CLOCK_BOOTTIME") else time.monotonic()


class Attempt(enum.Enum):
    """The outcome of one try to take or renew the Lease."""

    HELD = "held"  # this candidate holds the Lease now
    OTHER = "other"  # another candidate holds it, and it has not expired
    FAILED = "failed"  # the API server could not be reached, or another candidate won the race (a 409)


def micro_time(seconds: float) -> datetime.datetime:
    """`seconds` since the epoch as a Lease time (a MicroTime): UTC, to the microsecond.

    lightkube's encoder (msgspec) writes the fraction only when it is not zero, and the API server parses a
    MicroTime with exactly six digits of fraction (`2026-12-02T01:02:03.123456Z`), so a time that falls on a
    whole second is moved one microsecond later.
    """
    moment = datetime.datetime.fromtimestamp(seconds, tz=datetime.UTC)
    return _six_digits(moment)


def _six_digits(moment: datetime.datetime) -> datetime.datetime:
    return moment if moment.microsecond else moment.replace(microsecond=1)


class LeaderElector:
    """One candidate for the Lease `namespace/name`, known to the others as `identity`.

    `try_acquire_or_renew` makes one attempt; `run` campaigns, leads and steps down. `clock` gives the wall
    time (seconds since the epoch) written to and compared with the Lease; the loops of `run` wait on the
    monotonic clock.
    """

    def __init__(self, client: Client, *, namespace: str, name: str, identity: str, lease_duration: float = 15.0,
                 renew_deadline: float = 10.0, retry_period: float = 2.0,
                 clock: Callable[[], float] = time.time, elapsed: Callable[[], float] = elapsed_clock) -> None:
        if not identity:
            raise ValueError("identity must not be empty")
        if not (lease_duration > renew_deadline > JITTER_FACTOR * retry_period > 0):
            raise ValueError(
                f"need lease_duration > renew_deadline > {JITTER_FACTOR} × retry_period > 0, got "
                f"{lease_duration}, {renew_deadline}, {retry_period}")
        self.client = client
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.clock = clock
        self.elapsed = elapsed
        self._leading = False
        self._renewed_at: float | None = None  # on `elapsed`: when the last successful attempt started

    @property
    def is_leader(self) -> bool:
        """Whether this candidate leads: inside `run`, from just before `on_started` until just before
        `on_stopped`; outside it, whether the last `try_acquire_or_renew` succeeded."""
        return self._leading

    def holds(self) -> bool:
        """The fence: this candidate leads, and its last successful renewal started less than `renew_deadline`
        ago, so no other candidate can have taken the Lease since."""
        renewed = self._renewed_at
        return self._leading and renewed is not None and self.elapsed() - renewed < self.renew_deadline

    def try_acquire_or_renew(self) -> bool:
        """One attempt to create, take or renew the Lease; False when someone else holds it, won the race
        for it (a 409), or the API server could not be reached."""
        self._leading = self._attempt() is Attempt.HELD
        return self._leading

    def release(self) -> bool:
        """Give the Lease up if this candidate holds it: no holder, a one-second duration (client-go's
        ReleaseOnCancel). False when someone else holds it or the update failed."""
        self._leading = False
        self._renewed_at = None
        try:
            lease = self.client.get(Lease, self.name, namespace=self.namespace)
            spec = lease.spec
            if spec is None or spec.holderIdentity != self.identity:
                return False
            now = micro_time(self.clock())
            spec.holderIdentity = ""
            spec.leaseDurationSeconds = 1
            spec.acquireTime = now
            spec.renewTime = now
            self.client.replace(lease)
        except httpx2.HTTPError as exc:
            log.warning("lease %s/%s: could not release it: %s", self.namespace, self.name, exc)
            return False
        log.info("lease %s/%s: released by %s", self.namespace, self.name, self.identity)
        return True

    def run(self, stop: threading.Event, on_started: Callable[[], None], on_stopped: Callable[[], None]) -> None:
        """Campaign until leader, lead, and return when `stop` is set or the Lease is lost.

        Tries every `retry_period` until it holds the Lease, then calls `on_started` (which must return
        promptly, e.g. after starting the scheduling thread) and renews every `retry_period`. It stops leading
        when no renewal has succeeded for `renew_deadline` since the start of the last successful one (an
        attempt that hangs counts as failing, and a pause of the whole process counts too), at once when a read
        shows another holder, or when `stop` is set; it then calls `on_stopped`, which must return only once
        scheduling has stopped. After a stop it releases the Lease, so that the next leader cannot start
        before this one has finished. `on_stopped` is called only if `on_started` was; an attempt left hanging
        finishes in a daemon thread, and its result is ignored.
        """
        while self._bounded(self._attempt, self.renew_deadline) is not Attempt.HELD:
            if stop.wait(self.retry_period):
                return
        if stop.is_set():  # won the Lease as the stop came: hand it back without leading
            self._bounded(self.release, self.renew_deadline)
            return
        log.info("lease %s/%s: %s is the leader", self.namespace, self.name, self.identity)
        self._leading = True
        stopped = False
        try:
            on_started()
            while not (stopped := stop.wait(self.retry_period)):
                if not self._renew():
                    break
        finally:
            self._leading = False
            on_stopped()
        if stopped:
            self._bounded(self.release, self.renew_deadline)

    def _renew(self) -> bool:
        """One renewal while leading, within what is left of the renew deadline; False when leadership is
        lost (the deadline passed, or another candidate holds the Lease)."""
        renewed = self._renewed_at if self._renewed_at is not None else self.elapsed()
        left = self.renew_deadline - (self.elapsed() - renewed)
        if left > 0:
            outcome = self._bounded(self._attempt, left)
            if outcome is Attempt.HELD:
                return True
            if outcome is Attempt.OTHER:
                log.warning("lease %s/%s: another candidate holds it: %s stops leading", self.namespace, self.name,
                            self.identity)
                return False
            if self.elapsed() - renewed < self.renew_deadline:
                return True  # failed, but the deadline has not passed: try again at the next retry
        log.warning("lease %s/%s: %s could not renew it for %.1f s and stops leading",
                    self.namespace, self.name, self.identity, self.renew_deadline)
        return False

    def _bounded(self, attempt: Callable[[], T], timeout: float) -> T | None:
        """`attempt()` in a daemon thread; None when it raised or did not finish within `timeout` seconds."""
        outcome: list[T] = []
        done = threading.Event()

        def call() -> None:
            try:
                outcome.append(attempt())
            finally:
                done.set()

        threading.Thread(target=call, name=f"lease-{self.name}-{self.identity}", daemon=True).start()
        return outcome[0] if done.wait(max(timeout, 0.0)) and outcome else None

    def _attempt(self) -> Attempt:
        """One attempt; a success moves the fence to when the attempt started (the renewTime it wrote)."""
        started = self.elapsed()
        outcome = self._try()
        if outcome is Attempt.HELD:
            self._renewed_at = started
        return outcome

    def _try(self) -> Attempt:
        now = self.clock()
        stamp = micro_time(now)
        duration = max(1, math.ceil(self.lease_duration))
        try:
            lease = self.client.get(Lease, self.name, namespace=self.namespace)
        except ApiError as exc:
            if exc.status.code != 404:
                log.warning("lease %s/%s: could not read it: %s", self.namespace, self.name, exc)
                return Attempt.FAILED
            return self._write(create=True, lease=Lease(
                metadata=ObjectMeta(name=self.name, namespace=self.namespace),
                spec=LeaseSpec(holderIdentity=self.identity, leaseDurationSeconds=duration, acquireTime=stamp,
                               renewTime=stamp, leaseTransitions=0)))
        except httpx2.HTTPError as exc:
            log.warning("lease %s/%s: could not read it: %s", self.namespace, self.name, exc)
            return Attempt.FAILED
        spec = lease.spec if lease.spec is not None else LeaseSpec()
        lease.spec = spec
        holder = spec.holderIdentity or ""
        if holder != self.identity and not _expired(spec, now):
            log.debug("lease %s/%s: held by %s", self.namespace, self.name, holder)
            return Attempt.OTHER
        if holder == self.identity:
            spec.acquireTime = _six_digits(spec.acquireTime) if spec.acquireTime is not None else stamp
        else:
            spec.holderIdentity = self.identity
            spec.acquireTime = stamp
            spec.leaseTransitions = (spec.leaseTransitions or 0) + 1
        spec.renewTime = stamp
        spec.leaseDurationSeconds = duration
        return self._write(create=False, lease=lease)

    def _write(self, *, create: bool, lease: Lease) -> Attempt:
        """Create the Lease, or update it with the resourceVersion read; a 409 means another candidate won."""
        try:
            if create:
                self.client.create(lease)
            else:
                self.client.replace(lease)
        except ApiError as exc:
            if exc.status.code == 409:
                log.debug("lease %s/%s: another candidate won the race", self.namespace, self.name)
            else:
                log.warning("lease %s/%s: could not write it: %s", self.namespace, self.name, exc)
            return Attempt.FAILED
        except httpx2.HTTPError as exc:
            log.warning("lease %s/%s: could not write it: %s", self.namespace, self.name, exc)
            return Attempt.FAILED
        return Attempt.HELD


def _expired(spec: LeaseSpec, now: float) -> bool:
    """Free (no holder) or past its `renewTime + leaseDurationSeconds`."""
    if not spec.holderIdentity or spec.renewTime is None or spec.leaseDurationSeconds is None:
        return True
    return spec.renewTime.timestamp() + spec.leaseDurationSeconds < now
