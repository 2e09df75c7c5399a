"""Leader election on a `coordination.k8s.io/v1` Lease, with client-go's leaderelection semantics.

Every replica of `phalanx run` runs a `LeaderElector` on the same Lease; only the one holding it schedules.
A candidate takes the Lease when it is missing, free (no holder) or expired (its `renewTime` plus
`leaseDurationSeconds` lies in the past), and then renews it every `retry_period`. Each write is an update
with the resourceVersion just read, so of two candidates racing for one Lease the API server lets exactly one
win; the other gets a 409 and keeps waiting. A leader that cannot renew for `renew_deadline` stops leading
before anyone else may take the Lease (`renew_deadline` < `lease_duration`), so two replicas never schedule
at once. On a clean stop the leader releases the Lease (client-go's ReleaseOnCancel), and a waiting replica
takes over at its next retry instead of after `lease_duration`.

One difference from client-go: expiry is judged from the Lease's `renewTime` on this replica's clock (as the
Lease's own documentation describes it), not from the local time at which the record was last seen to change;
replicas are assumed to have synchronised clocks, to well under `lease_duration - renew_deadline`.
"""

from __future__ import annotations

import datetime
import logging
import math
import threading
import time
from collections.abc import Callable

import httpx2
from lightkube import ApiError, Client
from lightkube.models.coordination_v1 import LeaseSpec
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.coordination_v1 import Lease

log = logging.getLogger(__name__)

JITTER_FACTOR = 1.2  # client-go's: renew_deadline must exceed retry_period by this factor


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
                 clock: Callable[[], float] = time.time) -> None:
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
        self._leading = False

    @property
    def is_leader(self) -> bool:
        """Whether this candidate leads: inside `run`, from just before `on_started` until just before
        `on_stopped`; outside it, whether the last `try_acquire_or_renew` succeeded."""
        return self._leading

    def try_acquire_or_renew(self) -> bool:
        """One attempt to create, take or renew the Lease; False when someone else holds it, won the race
        for it (a 409), or the API server could not be reached."""
        self._leading = self._try()
        return self._leading

    def release(self) -> bool:
        """Give the Lease up if this candidate holds it: no holder, a one-second duration (client-go's
        ReleaseOnCancel). False when someone else holds it or the update failed."""
        self._leading = False
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
        promptly, e.g. after starting the scheduling thread) and renews every `retry_period`. When renewals
        keep failing for `renew_deadline` (an attempt that hangs counts as failing), or `stop` is set, it calls
        `on_stopped`, which must return only once scheduling has stopped; after a stop it then releases the
        Lease, so that the next leader cannot start before this one has finished. `on_stopped` is called only
        if `on_started` was; an attempt left hanging finishes in a daemon thread, and its result is ignored.
        """
        while not self._bounded(self._try, self.renew_deadline):
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
            failing_since: float | None = None
            while not (stopped := stop.wait(self.retry_period)):
                started = time.monotonic()
                budget = self.renew_deadline - (started - failing_since if failing_since is not None else 0.0)
                if self._bounded(self._try, budget):
                    failing_since = None
                    continue
                failing_since = started if failing_since is None else failing_since
                if time.monotonic() - failing_since >= self.renew_deadline:
                    log.warning("lease %s/%s: %s could not renew it for %.1f s and stops leading",
                                self.namespace, self.name, self.identity, self.renew_deadline)
                    break
        finally:
            self._leading = False
            on_stopped()
        if stopped:
            self._bounded(self.release, self.renew_deadline)

    def _bounded(self, attempt: Callable[[], bool], timeout: float) -> bool:
        """`attempt()` in a daemon thread, given up as failed after `timeout` seconds."""
        outcome: list[bool] = []
        done = threading.Event()

        def call() -> None:
            try:
                outcome.append(attempt())
            finally:
                done.set()

        threading.Thread(target=call, name=f"lease-{self.name}-{self.identity}", daemon=True).start()
        return done.wait(max(timeout, 0.0)) and bool(outcome) and outcome[0]

    def _try(self) -> bool:
        now = self.clock()
        stamp = micro_time(now)
        duration = max(1, math.ceil(self.lease_duration))
        try:
            lease = self.client.get(Lease, self.name, namespace=self.namespace)
        except ApiError as exc:
            if exc.status.code != 404:
                log.warning("lease %s/%s: could not read it: %s", self.namespace, self.name, exc)
                return False
            return self._write(create=True, lease=Lease(
                metadata=ObjectMeta(name=self.name, namespace=self.namespace),
                spec=LeaseSpec(holderIdentity=self.identity, leaseDurationSeconds=duration, acquireTime=stamp,
                               renewTime=stamp, leaseTransitions=0)))
        except httpx2.HTTPError as exc:
            log.warning("lease %s/%s: could not read it: %s", self.namespace, self.name, exc)
            return False
        spec = lease.spec if lease.spec is not None else LeaseSpec()
        lease.spec = spec
        holder = spec.holderIdentity or ""
        if holder != self.identity and not _expired(spec, now):
            log.debug("lease %s/%s: held by %s", self.namespace, self.name, holder)
            return False
        if holder == self.identity:
            spec.acquireTime = _six_digits(spec.acquireTime) if spec.acquireTime is not None else stamp
        else:
            spec.holderIdentity = self.identity
            spec.acquireTime = stamp
            spec.leaseTransitions = (spec.leaseTransitions or 0) + 1
        spec.renewTime = stamp
        spec.leaseDurationSeconds = duration
        return self._write(create=False, lease=lease)

    def _write(self, *, create: bool, lease: Lease) -> bool:
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
            return False
        except httpx2.HTTPError as exc:
            log.warning("lease %s/%s: could not write it: %s", self.namespace, self.name, exc)
            return False
        return True


def _expired(spec: LeaseSpec, now: float) -> bool:
    """Free (no holder) or past its `renewTime + leaseDurationSeconds`."""
    if not spec.holderIdentity or spec.renewTime is None or spec.leaseDurationSeconds is None:
        return True
    return spec.renewTime.timestamp() + spec.leaseDurationSeconds < now
