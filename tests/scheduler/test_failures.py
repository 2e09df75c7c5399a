"""Failed pod attempts answered from an equivalent pod's failure at the same books (phalanx/scheduler/failures.py):
pods waiting for a full node cost one Filter pass per change, not one per waiting pod, and every decision, the
queue's order and the random choices of preemption are exactly those of running each attempt in full."""

from __future__ import annotations

import pytest

from phalanx.api.objects import Pod
from phalanx.scheduler.decisions import Bind, Evict, Nominate, Unschedulable
from phalanx.scheduler.failures import FailedPods
from phalanx.scheduler.profiles import builtin
from phalanx.scheduler.scheduler import Scheduler
from tests.builders import MakeNode, MakePod

Log = list[tuple[str, str, str]]


def pod(name: str, priority: int = 5, cpu: str = "1") -> Pod:
    return MakePod(name).req(cpu=cpu, memory="1Gi").priority(priority).obj()


def full_nodes(waiting: int) -> tuple[Log, FailedPods]:
    """Three full 1-cpu nodes; `waiting` pods queue for them; each step the oldest running pod ends, so one
    waiting pod binds and every other is tried again and fails (as kube-scheduler requeues them all on an
    assigned pod's deletion). First, after every waiting pod failed once, a pod of higher priority arrives and
    preempts one of three equal candidates (the running pods started together): which one depends on
    preemption's random start, drawn by every failed attempt before."""
    s = Scheduler(builtin("default"), [MakeNode(f"n{i}").alloc(cpu="1", memory="8Gi").obj() for i in range(3)],
                  seed=7)
    running = [f"default/r{i}" for i in range(3)]
    for i, key in enumerate(running):
        s.add_pod(pod(key.split("/")[1]), 0.0, node=f"n{i}")
    for i in range(waiting):
        s.add_pod(pod(f"p{i}"), 0.0)
    log: Log = []
    for step in range(waiting + 2):
        now = float(step)
        if step == 1:  # a round of its own: nothing frees room, so it preempts
            s.add_pod(pod("urgent", priority=100), now)
        elif step:
            s.delete_pod(running.pop(0), now)
        for d in s.schedule(now):
            if isinstance(d, Bind):
                s.confirm_bind(d.pod.key)
                running.append(d.pod.key)
                log.append(("bind", d.pod.name, d.node))
            elif isinstance(d, Unschedulable):
                log.append(("fail", d.pod.name, d.message))
            elif isinstance(d, Evict | Nominate):
                log.append((type(d).__name__, d.pod.name, d.node))
                if isinstance(d, Evict):  # gone at once: no grace period
                    running.remove(d.pod.key)
                    s.delete_pod(d.pod.key, now)
    return log, s.failures


def test_waiting_pods_cost_one_filter_pass_per_change() -> None:
    _, small = full_nodes(40)
    _, large = full_nodes(80)
    assert small.filtered <= 2 * 42 and large.filtered <= 2 * 82  # about one per round, not one per pod
    assert large.filtered < 2.2 * small.filtered
    assert large.reused > 3 * small.reused  # the attempts themselves are kept, as upstream makes them


def test_answers_from_equivalent_failures_change_no_decision(monkeypatch: pytest.MonkeyPatch) -> None:
    answered, _ = full_nodes(30)
    monkeypatch.setattr(FailedPods, "like", lambda self, pod, books: None)
    every_attempt_run, failures = full_nodes(30)
    assert failures.reused == 0
    assert answered == every_attempt_run
    assert any(kind == "Evict" for kind, _, _ in answered)
