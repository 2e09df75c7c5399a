"""A PodGroup whose cycle failed, against the real kube-scheduler v1.37.2: it is tried again when its backoff
ends, whatever the events, so room that frees between two retries waits for the next one (`requeuePodGroup`
records no rejecting plugin, and the group goes to the error backoffQ). Phalanx's queue must predict the same
wait: a failed group is *timed* (phalanx/scheduler/queue.py)."""

from __future__ import annotations

import time

import pytest
from lightkube.resources.core_v1 import Pod

from phalanx.api.objects import Source
from phalanx.scheduler.profiles import builtin
from phalanx.scheduler.queue import SchedulingQueue
from phalanx.verify.compare import scheduler_config, scheduler_gates, server_gates
from phalanx.verify.oracle import Oracle
from tests.builders import MakeNode, MakePod, MakePodGroup
from tests.kube import until

pytestmark = pytest.mark.kube

SOURCE = Source("test_group_backoff.py", 0)
INITIAL, MOST = 1, 3  # the scheduler's podInitialBackoffSeconds and podMaxBackoffSeconds, short for the test


def _group_attempts(oracle: Oracle) -> int:
    """scheduler_podgroup_schedule_attempts_total, read as the oracle reads it."""
    return oracle._queues().group_attempts


def _members_bound(oracle: Oracle) -> bool:
    pods = [p.to_dict() for p in oracle.client.list(Pod, namespace="default")]
    return all(p["spec"].get("nodeName") for p in pods if p["metadata"]["name"].startswith("g-"))


def test_room_freed_between_retries_waits_for_the_groups_next_retry(oracle: Oracle) -> None:
    oracle.reset()
    profile = builtin("gang")
    oracle.use_gates(server_gates(profile))
    config = {**scheduler_config(profile), "podInitialBackoffSeconds": INITIAL, "podMaxBackoffSeconds": MOST}
    oracle.plane.start_scheduler(config, scheduler_gates(profile))
    oracle._scheduler_setup = None  # the next verify run starts its own
    oracle.ensure_namespace("default")
    for builder in (MakeNode("n1").alloc(cpu="4", memory="16Gi", pods="110"),
                    MakePod("blocker").req(cpu="3", memory="1Gi").node("n1"),
                    MakePodGroup("g").gang(2),
                    *(MakePod(f"g-{i}").req(cpu="2", memory="1Gi").group("g") for i in range(2))):
        oracle.create(SOURCE, builder.manifest())

    # Let the group fail a few times, until its backoff has reached its most (3 s × √2).
    until(lambda: _group_attempts(oracle) >= 4, 30, "the group to be tried 4 times", poll=0.02)
    seen = _group_attempts(oracle)
    until(lambda: _group_attempts(oracle) > seen, 15, "the group to be retried", poll=0.02)
    retried = time.time()  # backoff windows are on the wall clock's whole seconds
    oracle.delete_now(oracle.client.get(Pod, "blocker", namespace="default").to_dict())
    freed = time.time()
    until(lambda: _members_bound(oracle), 30, "the group to bind", poll=0.02)
    bound = time.time()

    # Phalanx's queue on the same clock: the attempt just seen failed, the room freed right after it.
    queue = SchedulingQueue(initial_backoff=INITIAL, max_backoff=MOST)
    queue.add("group", 0, retried)
    assert queue.pop(retried) == "group"
    queue.entries["group"].attempts = seen  # the attempts before it
    queue.failed("group", retried, size=2, timed=True)
    queue.move_all(freed)
    predicted = queue.next_backoff()
    assert predicted is not None and predicted - retried > 4  # not at once: at the end of a 3 s × √2 backoff
    # Event-driven, the group would bind within a fraction of a second of the deletion.
    assert bound - freed > 2.5, f"the real group bound {bound - freed:.2f} s after the room freed"
    # kube-scheduler flushes backoffQ once a second, so the retry comes up to a second after the window ends.
    assert predicted - 0.3 <= bound <= predicted + 1.5, (bound - retried, predicted - retried)
