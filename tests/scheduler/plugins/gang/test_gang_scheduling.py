"""GangScheduling's quorum rule (phalanx/scheduler/plugins/gang/gang_scheduling.py), as kube-scheduler's
gangscheduling plugin states it: a gang needs minCount pods, a basic PodGroup none in particular. The cycles
that ask it are tested where they run (tests/scheduler/test_gang.py, test_scheduler.py, placement/)."""

from __future__ import annotations

import pytest

from phalanx.api.objects import PodGroup
from phalanx.scheduler.plugins.gang.gang_scheduling import GangScheduling
from tests.builders import MakePodGroup

GANG = MakePodGroup("g").gang(3).obj()
BASIC = MakePodGroup("b").basic().obj()


@pytest.mark.parametrize(("group", "count", "quorum"), [
    (GANG, 0, False), (GANG, 2, False), (GANG, 3, True), (GANG, 4, True),
    (BASIC, 0, True), (BASIC, 1, True),
])
def test_quorum(group: PodGroup, count: int, quorum: bool) -> None:
    assert GangScheduling().quorum(group, count) is quorum


def test_pre_enqueue_holds_a_gang_until_min_count_pods_exist() -> None:
    plugin = GangScheduling()
    assert plugin.pre_enqueue(GANG, 2) == "waiting for pod group default/g: 2 of the 3 pods (minCount) exist"
    assert plugin.pre_enqueue(GANG, 3) is None
    assert plugin.pre_enqueue(BASIC, 0) is None

