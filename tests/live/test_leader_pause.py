"""Split brain: a leader paused (SIGSTOP) past its Lease while the standby takes over, then resumed (SIGCONT)
with gangs arriving all along, on the real v1.37.2 API server. The paused leader must write nothing once it
has lost the Lease: no Binding (so no node over its allocatable, no pod bound by both), and it exits 1."""

from __future__ import annotations

import signal
import threading
import time
from collections import defaultdict

import pytest
from lightkube import Client

from phalanx.verify.controlplane import ControlPlane
from tests.kube import until
from tests.live.replica import Replica
from tests.live.test_driver import make_gang, make_node, make_pod, node_of, pods

pytestmark = pytest.mark.kube

NODES, NODE_CPU = 4, 8
GANG, EVERY, GANGS = 4, 0.25, 28  # 4 pods of 1 CPU each, a gang every 0.25 s: 112 CPUs asked of 32


def test_a_leader_paused_past_its_lease_binds_nothing_after_the_standby_took_over(
        live_plane: ControlPlane, client: Client, namespace: str, replicas: list[Replica]) -> None:
    for i in range(NODES):
        make_node(client, namespace, f"n{i}", cpu=str(NODE_CPU))
    replicas.extend(Replica(live_plane.kubeconfig, namespace, "pause") for _ in range(2))
    until(lambda: all(r.get("/readyz")[0] == 200 for r in replicas), 60, "both replicas ready")
    until(lambda: sum(r.leading() for r in replicas) == 1, 30, "one leader")
    leader = next(r for r in replicas if r.leading())
    standby = next(r for r in replicas if r is not leader)

    created: list[str] = []

    def arrive() -> None:
        for g in range(GANGS):
            make_gang(client, namespace, f"g{g}", GANG)
            for m in range(GANG):
                make_pod(client, namespace, f"g{g}-{m}", cpu="1", group=f"g{g}")
            created.append(f"g{g}")
            time.sleep(EVERY)

    arrivals = threading.Thread(target=arrive, daemon=True)
    arrivals.start()
    until(lambda: len(created) >= 3, 30, "the first gangs")
    leader.proc.send_signal(signal.SIGSTOP)  # mid-stream: it has seen some gangs and not others
    try:
        until(standby.leading, 30, "the standby to take over")
        time.sleep(1.0)  # the standby binds what fits; the paused leader's view is now stale
    finally:
        leader.proc.send_signal(signal.SIGCONT)
    assert leader.proc.wait(timeout=30) == 1  # it lost the Lease: it stops, for its Deployment to restart it
    arrivals.join(timeout=60)
    try:
        until(lambda: all(node_of(p) or _told(p) for p in pods(client, namespace).values()), 60,
              "the standby to try every gang")
    except AssertionError:
        left = [n for n, p in pods(client, namespace).items() if not (node_of(p) or _told(p))]
        standby.proc.kill()
        raise AssertionError(f"untried: {left}\n{standby.output()[-5000:]}") from None

    now = pods(client, namespace)
    used: defaultdict[str, int] = defaultdict(int)
    per_gang: defaultdict[str, int] = defaultdict(int)
    for name, pod in now.items():
        node = node_of(pod)
        if node:
            used[node] += 1
            per_gang[name.rsplit("-", 1)[0]] += 1
    assert used, "nothing was bound"
    assert max(used.values()) <= NODE_CPU, f"over-committed: {dict(used)}"
    assert all(count == GANG for count in per_gang.values()), f"a gang bound in part: {dict(per_gang)}"
    log = leader.output()
    assert "Traceback" not in log, log
    assert "stops leading" in log, log
    assert "failed (conflict)" not in log, f"the paused leader bound pods the new leader had bound:\n{log}"
    print(f"\nbound per node {dict(sorted(used.items()))}; "
          f"fenced writes of the paused leader: {log.count('not the leader any more')}")


def _told(pod: dict[str, object]) -> bool:
    """Pending with PodScheduled=False: the scheduler tried it and said why."""
    status = pod.get("status")
    conditions = (status.get("conditions") if isinstance(status, dict) else None) or []
    return any(c.get("type") == "PodScheduled" and c.get("status") == "False" for c in conditions)
