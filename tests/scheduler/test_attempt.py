"""SingleAttempts: one attempt per pod, no queue, the pod reserved on its node, nothing diagnosed."""

from __future__ import annotations

import pytest

from phalanx.cluster.state import ClusterState
from phalanx.scheduler.attempt import SingleAttempts
from phalanx.scheduler.cycle import PodCycle
from phalanx.scheduler.profiles import builtin
from tests.builders import MakeNode, MakePod


def test_each_pod_is_placed_once_and_reserved_until_nothing_fits(monkeypatch: pytest.MonkeyPatch) -> None:
    cluster = ClusterState([MakeNode(f"n{i}").alloc(cpu="2", memory="8Gi").obj() for i in range(2)])
    attempts = SingleAttempts(builtin("default"), cluster)
    monkeypatch.setattr(PodCycle, "diagnose", lambda *_: pytest.fail("no failure is explained"))
    pods = [MakePod(f"p{i}").req(cpu="1", memory="1Gi").obj() for i in range(5)]
    placed = [attempts.place(pod) for pod in pods]
    assert sorted(n for n in placed if n is not None) == [0, 0, 1, 1]
    assert placed[-1] is None
    assert set(cluster.bound) == {p.key for p in pods[:4]}
