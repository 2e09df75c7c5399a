"""`phalanx run` as a process on the real v1.37.2 API server: two replicas, one leader; SIGTERM releases the
Lease and exits 0; the leader killed (SIGKILL), the standby takes over and binds; probes and metrics."""

from __future__ import annotations

import signal
import time

import pytest
from lightkube import Client
from lightkube.resources.coordination_v1 import Lease

from phalanx.verify.controlplane import ControlPlane, free_port
from tests.kube import until
from tests.live.replica import Replica
from tests.live.test_driver import make_node, make_pod, node_of, pods

pytestmark = pytest.mark.kube


def test_two_replicas_one_leader_failover_on_kill_and_a_clean_stop(
        live_plane: ControlPlane, client: Client, namespace: str, replicas: list[Replica]) -> None:
    make_node(client, namespace, "a", cpu="8")
    replicas.extend(Replica(live_plane.kubeconfig, namespace, "phalanx") for _ in range(2))
    until(lambda: all(r.get("/readyz")[0] == 200 for r in replicas), 60, "both replicas ready")
    until(lambda: sum(r.leading() for r in replicas) == 1, 30, "one leader")
    leader = next(r for r in replicas if r.leading())
    standby = next(r for r in replicas if r is not leader)
    make_pod(client, namespace, "first")
    until(lambda: bool(node_of(pods(client, namespace)["first"])), 30, "the leader to bind")
    text = leader.get("/metrics")[1]
    assert 'scheduler_schedule_attempts_total{profile="gang",result="scheduled"} 1.0' in text, text
    assert 'scheduler_pending_pods{queue="active"} 0.0' in text

    leader.proc.send_signal(signal.SIGKILL)  # no chance to release the Lease
    killed = time.monotonic()
    make_pod(client, namespace, "second")
    until(standby.leading, 30, "the standby to take over")
    failover = time.monotonic() - killed
    until(lambda: bool(node_of(pods(client, namespace)["second"])), 30, "the new leader to bind")
    assert failover < 3 + 5  # the lease duration, and a few retries on a busy machine
    print(f"failover after SIGKILL: {failover:.2f} s")

    standby.proc.send_signal(signal.SIGTERM)
    assert standby.proc.wait(timeout=30) == 0
    lease = client.get(Lease, "phalanx", namespace=namespace)
    assert lease.spec is not None and not lease.spec.holderIdentity  # released on the way out
    log = standby.output()
    assert "Traceback" not in log, log


def test_an_engine_error_stops_the_leader_and_releases_its_lease(
        live_plane: ControlPlane, client: Client, namespace: str, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    from phalanx.live.run import Options, run
    from phalanx.scheduler.profiles import builtin
    from phalanx.scheduler.scheduler import Scheduler

    def broken(self: Scheduler, now: float) -> list[object]:
        raise RuntimeError("engine bug")

    monkeypatch.setattr(Scheduler, "schedule", broken)
    options = Options(profile=builtin("default"), kubeconfig=str(live_plane.kubeconfig),
                      namespaces=frozenset({namespace}), lease_namespace=namespace, lease_name="broken",
                      lease_duration=3, renew_deadline=2, retry_period=0.5, metrics_port=free_port())
    started = time.monotonic()
    assert run(options) == 1
    assert time.monotonic() - started < 30
    assert "the scheduling loop failed" in caplog.text and "engine bug" in caplog.text
    lease = client.get(Lease, "broken", namespace=namespace)
    assert lease.spec is not None and not lease.spec.holderIdentity
