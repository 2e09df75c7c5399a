"""The oracle's own bookkeeping, without a control plane: which steps it replays when the real scheduler binds
a pod with a run time, and what kube-scheduler's metrics say is left in its queues."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from phalanx.verify.oracle import Oracle, RealPod, Step, _group_still, _Queues

KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
"""

METRICS = """# HELP scheduler_pending_pods Number of pending pods, by the queue type.
scheduler_pending_pods{queue="active"} 0
scheduler_pending_pods{queue="backoff"} 3
scheduler_pending_pods{queue="gated"} 1
scheduler_pending_pods{queue="unschedulable"} 2
scheduler_queued_entities{queue="backoff",type="pod"} 0
scheduler_queued_entities{queue="backoff",type="podgroup"} 1
scheduler_queued_entities{queue="gated",type="podgroup"} 1
scheduler_queued_entities{queue="unschedulable",type="pod"} 2
scheduler_podgroup_schedule_attempts_total{profile="default-scheduler",result="error"} 4
scheduler_podgroup_schedule_attempts_total{profile="default-scheduler",result="scheduled"} 1
"""


class _Plane:
    def __init__(self, kubeconfig: Path, metrics: str = METRICS) -> None:
        self.kubeconfig = kubeconfig
        self.metrics = metrics

    def scheduler_metrics(self) -> str:
        return self.metrics


def _oracle(tmp_path: Path, metrics: str = METRICS) -> Oracle:
    config = tmp_path / "kubeconfig"
    config.write_text(KUBECONFIG)
    plane: Any = _Plane(config, metrics)
    return Oracle(plane)


def test_a_bound_pod_ends_its_run_time_after_the_real_binding(tmp_path: Path) -> None:
    oracle = _oracle(tmp_path)
    oracle._durations = {"default/p": 15.0, "default/q": 5.0}
    steps = [Step(0.0), Step(10.0), Step(30.0)]
    replayed = []
    for step in oracle._with_due(steps):
        replayed.append(step.time)
        if step.time == 10.0:  # p bound at 10 s (Phalanx's first run may have bound it at another time)
            oracle._seen_bound(RealPod("default/p"), "node-a", 10.0)
        if step.time == 25.0:
            assert oracle._due.pop(25.0) == {"default/p"}
        if step.time == 30.0:  # q bound at the last step: its end is a step after the timeline's
            oracle._seen_bound(RealPod("default/q"), "node-b", 30.0)
        if step.time == 35.0:
            oracle._due.pop(35.0)
    assert replayed == [0.0, 10.0, 25.0, 30.0, 35.0]


def test_a_pod_without_a_run_time_or_already_finished_gets_no_end(tmp_path: Path) -> None:
    oracle = _oracle(tmp_path)
    oracle._durations = {"default/p": 15.0}
    oracle._seen_bound(RealPod("default/other"), "node-a", 0.0)
    oracle._seen_bound(RealPod("default/p", finished=True), "node-a", 0.0)
    assert not oracle._due
    record = RealPod("default/p")
    oracle._seen_bound(record, "node-a", 5.0)
    assert (record.node, record.bound_at, dict(oracle._due)) == ("node-a", 5.0, {20.0: {"default/p"}})


def test_queues_read_groups_from_queued_entities(tmp_path: Path) -> None:
    queues = _oracle(tmp_path)._queues()
    # Gated and unschedulable entries are parked; the group backing off (its 3 pods in pending_pods' backoff)
    # retries on its own.
    assert (queues.pods, queues.groups, queues.group_attempts) == (0, 1, 5)


def test_unreadable_metrics_count_as_busy(tmp_path: Path) -> None:
    oracle = _oracle(tmp_path)

    def broken() -> str:
        raise OSError("connection refused")

    oracle.plane.scheduler_metrics = broken  # type: ignore[method-assign]
    assert oracle._queues().pods == 1


def test_without_entity_metrics_pods_come_from_pending_pods(tmp_path: Path) -> None:
    metrics = 'scheduler_pending_pods{queue="active"} 2\nscheduler_pending_pods{queue="backoff"} 1\n'
    assert _oracle(tmp_path, metrics)._queues() == _Queues(pods=3, groups=0, group_attempts=0, queued=3)


def _pod(name: str, group: str | None, node: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulingGroup": {"podGroupName": group}} if group else {}
    if node:
        spec["nodeName"] = node
    return {"metadata": {"name": name, "namespace": "ml"}, "spec": spec}


def test_a_step_with_a_group_waiting_lasts_at_least_its_longest_backoff() -> None:
    """kube-scheduler retries a failed group every podMaxBackoff × √(pending members) at most: a 5-pod gang's
    22.4 s, longer than the 12 s floor; a bound member or a bare pod does not count."""
    gang = [_pod(f"g-{i}", "g") for i in range(5)] + [_pod("g-5", "g", node="n1"), _pod("bare", None)]
    assert abs(_group_still(gang) - (10 * 5 ** 0.5 + 2)) < 1e-9
    assert _group_still([_pod("h-0", "h"), _pod("h-1", "h", node="n1")]) == 12.0  # one pending: 10 s + 2
    assert _group_still([]) == 12.0
