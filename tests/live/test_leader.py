"""Leader election on a real API server: one leader at a time, hand-over on release, take-over after a
leader stops renewing, and the loser of a race for the Lease told by a 409.

Short durations (lease 2 s, renew deadline 1.5 s, retry 0.2 s) keep the file under a minute; failover times
are printed (`pytest -s` shows them).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx2
import pytest
from lightkube import ApiError, Client, KubeConfig
from lightkube.models.coordination_v1 import LeaseSpec
from lightkube.resources.coordination_v1 import Lease

from phalanx.live.leader import LeaderElector
from phalanx.verify.controlplane import ControlPlane

pytestmark = pytest.mark.kube

LEASE, RENEW, RETRY = 2.0, 1.5, 0.2
NAME = "phalanx-scheduler"
SLACK = 1.5  # API round trips and thread wake-ups on a busy machine (CI runs the control plane beside the tests)


def new_client(plane: ControlPlane) -> Client:
    return Client(KubeConfig.from_file(str(plane.kubeconfig)), field_manager="phalanx-tests")


def elector(client: Client, namespace: str, identity: str, **kwargs: Any) -> LeaderElector:
    return LeaderElector(client, namespace=namespace, name=NAME, identity=identity, lease_duration=LEASE,
                         renew_deadline=RENEW, retry_period=RETRY, **kwargs)


def lease_spec(client: Client, namespace: str) -> LeaseSpec:
    spec = client.get(Lease, NAME, namespace=namespace).spec
    assert spec is not None
    return spec


def wait_for(condition: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


class Candidate:
    """`LeaderElector.run` in a thread, with the wall-clock moments of its callbacks."""

    def __init__(self, elector: LeaderElector) -> None:
        self.elector = elector
        self.stop = threading.Event()
        self.started_at: float | None = None
        self.stopped_at: float | None = None
        self.thread = threading.Thread(target=elector.run, args=(self.stop, self._started, self._stopped),
                                       name=f"candidate-{elector.identity}", daemon=True)

    def _started(self) -> None:
        self.started_at = time.time()

    def _stopped(self) -> None:
        self.stopped_at = time.time()

    def waiting(self) -> bool:
        """Running, and never called on_started."""
        return self.thread.is_alive() and self.started_at is None

    def start(self) -> Candidate:
        self.thread.start()
        return self

    def finish(self) -> None:
        self.stop.set()
        self.thread.join(timeout=RENEW + 2 * RETRY + SLACK)
        assert not self.thread.is_alive(), f"{self.elector.identity} did not return from run()"


@pytest.fixture
def candidates() -> Iterator[list[Candidate]]:
    """Candidates to finish after the test, whatever happened."""
    running: list[Candidate] = []
    yield running
    for candidate in running:
        candidate.finish()


def test_only_one_of_two_becomes_leader_and_keeps_the_lease(
        client: Client, namespace: str, live_plane: ControlPlane, candidates: list[Candidate]) -> None:
    a = Candidate(elector(new_client(live_plane), namespace, "a"))
    b = Candidate(elector(new_client(live_plane), namespace, "b"))
    candidates += [a.start(), b.start()]

    assert wait_for(lambda: a.started_at is not None or b.started_at is not None, timeout=5)
    time.sleep(LEASE + 2 * RETRY)  # longer than a lease: the leader must renew, the other must not take it

    leader, follower = (a, b) if a.started_at is not None else (b, a)
    assert follower.waiting()
    assert leader.elector.is_leader and not follower.elector.is_leader
    spec = lease_spec(client, namespace)
    assert spec.holderIdentity == leader.elector.identity
    assert spec.leaseDurationSeconds == 2
    assert spec.leaseTransitions == 0
    assert spec.renewTime is not None and spec.acquireTime is not None
    assert time.time() - spec.renewTime.timestamp() < RETRY + SLACK  # renewed every retry period
    assert spec.renewTime > spec.acquireTime
    assert follower.elector.try_acquire_or_renew() is False


def test_a_stopped_leader_releases_the_lease_and_the_other_takes_over_at_once(
        client: Client, namespace: str, live_plane: ControlPlane, candidates: list[Candidate]) -> None:
    a = Candidate(elector(new_client(live_plane), namespace, "a"))
    candidates.append(a.start())
    assert wait_for(lambda: a.started_at is not None, timeout=5)
    b = Candidate(elector(new_client(live_plane), namespace, "b"))
    candidates.append(b.start())
    time.sleep(2 * RETRY)
    assert b.waiting()

    stopped = time.time()
    a.stop.set()
    assert wait_for(lambda: b.started_at is not None, timeout=LEASE)
    a.finish()

    assert a.stopped_at is not None and b.started_at is not None
    failover = b.started_at - stopped
    print(f"\nfailover after a release: {failover * 1000:.0f} ms (retry period {RETRY * 1000:.0f} ms)")
    assert a.stopped_at <= b.started_at  # the old leader stopped before the new one started
    assert failover < min(RETRY + SLACK, LEASE)  # the next retry, not the lease's expiry
    assert not a.elector.is_leader and b.elector.is_leader
    spec = lease_spec(client, namespace)
    assert spec.holderIdentity == "b"
    assert spec.leaseTransitions == 1
    assert spec.leaseDurationSeconds == 2


class Partition:
    """Cuts one client off the API server: while cut, its calls hang (as on a black-holed connection) and then
    fail when the partition heals. Records the renewTime of every Lease it wrote."""

    def __init__(self, client: Client, monkeypatch: pytest.MonkeyPatch) -> None:
        self.cut = threading.Event()
        self.healed = threading.Event()
        self.written: list[float] = []
        for method in ("get", "create", "replace"):
            monkeypatch.setattr(client, method, self._wrap(getattr(client, method)))

    def _wrap(self, real: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            if self.cut.is_set():
                self.healed.wait(timeout=30)
                raise httpx2.ConnectError("partitioned")
            result = real(*args, **kwargs)
            if isinstance(result, Lease) and result.spec is not None and result.spec.renewTime is not None:
                self.written.append(result.spec.renewTime.timestamp())
            return result
        return call


def test_a_leader_that_stops_renewing_steps_down_and_is_replaced_after_the_lease_duration(
        client: Client, namespace: str, live_plane: ControlPlane, candidates: list[Candidate],
        monkeypatch: pytest.MonkeyPatch) -> None:
    a_client = new_client(live_plane)
    partition = Partition(a_client, monkeypatch)
    a = Candidate(elector(a_client, namespace, "a"))
    candidates.append(a.start())
    assert wait_for(lambda: a.started_at is not None, timeout=5)
    b = Candidate(elector(new_client(live_plane), namespace, "b"))
    candidates.append(b.start())
    time.sleep(2 * RETRY)
    assert b.waiting()

    cut = time.time()
    partition.cut.set()  # a can no longer renew, nor release: to b, a has crashed
    try:
        assert wait_for(lambda: b.started_at is not None, timeout=LEASE + RETRY + 2 * SLACK)
    finally:
        partition.healed.set()
    a.finish()

    assert a.stopped_at is not None and b.started_at is not None
    last_renewal = max(partition.written)
    failover = b.started_at - last_renewal
    print(f"\nfailover after the leader stopped renewing: {failover * 1000:.0f} ms after its last renewal "
          f"(lease {LEASE * 1000:.0f} ms); it stepped down {(a.stopped_at - cut) * 1000:.0f} ms after the cut "
          f"(renew deadline {RENEW * 1000:.0f} ms)")
    # It stops leading at the renew deadline, counted from the start of its last successful renewal (at most a
    # retry before the cut), as client-go does...
    assert RENEW - 0.05 <= a.stopped_at - last_renewal <= RENEW + SLACK
    assert a.stopped_at - cut <= RENEW
    assert a.stopped_at < b.started_at  # ... before anyone may take the lease
    assert LEASE <= failover <= LEASE + RETRY + SLACK  # not before the lease expired, and soon after
    assert not a.elector.is_leader and b.elector.is_leader
    spec = lease_spec(client, namespace)
    assert spec.holderIdentity == "b"
    assert spec.leaseTransitions == 1


class Race:
    """Makes `rival` win the race against `loser`: after `loser` has read the Lease (or found none), `rival`
    makes a whole attempt, so that `loser`'s write carries a stale resourceVersion (or creates a Lease that
    exists). Records the status of every failed write of `loser`."""

    def __init__(self, loser: Client, rival: LeaderElector, monkeypatch: pytest.MonkeyPatch) -> None:
        self.rival = rival
        self.rival_won: list[bool] = []
        self.refused: list[int | None] = []
        monkeypatch.setattr(loser, "get", self._read(loser.get))
        monkeypatch.setattr(loser, "create", self._write(loser.create))
        monkeypatch.setattr(loser, "replace", self._write(loser.replace))

    def _read(self, real: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                return real(*args, **kwargs)
            finally:
                self.rival_won.append(self.rival.try_acquire_or_renew())
        return call

    def _write(self, real: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                return real(*args, **kwargs)
            except ApiError as exc:
                self.refused.append(exc.status.code)
                raise
        return call


def test_the_loser_of_a_race_for_the_lease_gets_a_409_and_false(
        client: Client, namespace: str, live_plane: ControlPlane, monkeypatch: pytest.MonkeyPatch) -> None:
    a = elector(new_client(live_plane), namespace, "a")
    b_client = new_client(live_plane)
    b = elector(b_client, namespace, "b")
    race = Race(b_client, a, monkeypatch)

    # Both find no Lease; a creates it first.
    assert b.try_acquire_or_renew() is False
    assert race.rival_won == [True] and race.refused == [409]
    assert a.is_leader and not b.is_leader
    assert lease_spec(client, namespace).holderIdentity == "a"

    # Both find it free; a takes it first.
    assert a.release()
    assert lease_spec(client, namespace).holderIdentity == ""
    assert b.try_acquire_or_renew() is False
    assert race.rival_won == [True, True] and race.refused == [409, 409]
    assert a.is_leader and not b.is_leader
    spec = lease_spec(client, namespace)
    assert spec.holderIdentity == "a"
    assert spec.leaseTransitions == 1  # a → (released) → a; b's write never happened


def test_times_are_written_with_six_digits_of_fraction(client: Client, namespace: str) -> None:
    whole = float(int(time.time()))  # msgspec would write "…:03Z", which the API server refuses for a MicroTime
    a = elector(client, namespace, "a", clock=lambda: whole)
    assert a.try_acquire_or_renew() is True
    spec = lease_spec(client, namespace)
    assert spec.renewTime is not None and spec.acquireTime is not None
    assert spec.renewTime.timestamp() == pytest.approx(whole + 1e-6, abs=1e-7)
    assert a.try_acquire_or_renew() is True  # a renewal writes the acquireTime it read back, too


def test_a_held_lease_is_not_taken_before_it_expires(client: Client, namespace: str) -> None:
    now = time.time()
    a = elector(client, namespace, "a", clock=lambda: now)
    b = elector(client, namespace, "b", clock=lambda: now + LEASE - 0.1)
    late = elector(client, namespace, "late", clock=lambda: now + LEASE + 0.1)
    assert a.try_acquire_or_renew() is True
    assert b.try_acquire_or_renew() is False
    assert late.try_acquire_or_renew() is True
    spec = lease_spec(client, namespace)
    assert (spec.holderIdentity, spec.leaseTransitions) == ("late", 1)


def test_bad_durations_are_refused(client: Client) -> None:
    with pytest.raises(ValueError, match="lease_duration > renew_deadline"):
        LeaderElector(client, namespace="n", name="l", identity="a", lease_duration=1, renew_deadline=2)
    with pytest.raises(ValueError, match="identity"):
        LeaderElector(client, namespace="n", name="l", identity="")


def test_a_leader_that_reads_another_holder_stops_at_once(
        client: Client, namespace: str, live_plane: ControlPlane, candidates: list[Candidate]) -> None:
    a = Candidate(elector(new_client(live_plane), namespace, "a"))
    candidates.append(a.start())
    assert wait_for(lambda: a.started_at is not None, timeout=5)
    lease = client.get(Lease, NAME, namespace=namespace)
    assert lease.spec is not None
    lease.spec.holderIdentity = "b"  # as a replica that judged a's Lease expired would write it
    client.replace(lease)
    taken = time.time()
    assert wait_for(lambda: a.stopped_at is not None, timeout=RENEW)
    assert a.stopped_at is not None and a.stopped_at - taken <= RETRY + SLACK  # the next read, not the deadline
    assert not a.elector.holds()
    assert lease_spec(client, namespace).holderIdentity == "b"  # it did not take the Lease back


class PausableClock:
    """The elapsed clock, with `pause(seconds)` making that much time pass at once (as SIGSTOP then SIGCONT)."""

    def __init__(self) -> None:
        self.skipped = 0.0

    def __call__(self) -> float:
        return time.monotonic() + self.skipped

    def pause(self, seconds: float) -> None:
        self.skipped += seconds


def test_a_leader_paused_past_its_renew_deadline_is_fenced_at_once_and_stops_without_renewing(
        client: Client, namespace: str, live_plane: ControlPlane, candidates: list[Candidate],
        monkeypatch: pytest.MonkeyPatch) -> None:
    clock = PausableClock()
    a_client = new_client(live_plane)
    partition = Partition(a_client, monkeypatch)
    a = Candidate(elector(a_client, namespace, "a", elapsed=clock))
    candidates.append(a.start())
    assert wait_for(lambda: a.started_at is not None, timeout=5)
    assert wait_for(lambda: len(partition.written) >= 2, timeout=5)
    assert a.elector.holds()

    paused_at = time.time()
    clock.pause(RENEW)  # the renew deadline passed while the process stood still
    assert not a.elector.holds()  # fenced before the election loop has even woken up
    assert wait_for(lambda: a.stopped_at is not None, timeout=RETRY + SLACK)
    # No renewal started after the pause (one already in flight may finish): another replica may have led.
    assert all(renewed < paused_at for renewed in partition.written), (paused_at, partition.written)
    assert not a.elector.is_leader


def test_a_fenced_client_sends_nothing_once_the_fence_closes(
        client: Client, namespace: str, live_plane: ControlPlane) -> None:
    from lightkube import KubeConfig
    from lightkube.models.meta_v1 import ObjectMeta
    from lightkube.resources.core_v1 import ConfigMap

    from phalanx.live.fence import NotLeader, fenced_client

    open_ = threading.Event()
    open_.set()
    fenced = fenced_client(KubeConfig.from_file(str(live_plane.kubeconfig)), open_.is_set)
    fenced.create(ConfigMap(metadata=ObjectMeta(name="before", namespace=namespace)))
    assert fenced.get(ConfigMap, "before", namespace=namespace).metadata is not None  # reads, TLS and auth work
    open_.clear()
    with pytest.raises(NotLeader):
        fenced.create(ConfigMap(metadata=ObjectMeta(name="after", namespace=namespace)))
    with pytest.raises(ApiError) as missing:
        client.get(ConfigMap, "after", namespace=namespace)
    assert missing.value.status.code == 404
