"""KAI Scheduler's consolidation, for a pod that fits no node: move running pods to other nodes to make room.

Restated from NVIDIA/KAI-Scheduler `pkg/scheduler/actions/consolidation/consolidation.go` and the jobs solver it
drives (`actions/common/solvers`):
- Only a preemptible pending job is consolidated for (FilterNonPreemptible: priority below 100, KAI's `build`
  and `inference` classes are not), and only preemptible running jobs move (IsPreemptibleJob), at most
  `maxNumberConsolidationPreemptees` of them (16 by default), never the preemptor's own.
- Nothing is tried when the cluster as a whole has no room for the pod (IsEnoughGPUsAllocatableForJob, here for
  every resource the pod asks).
- The victims are taken in KAI's victim order (lowest priority first, then the latest started) and tried in
  growing prefixes: the first n are lifted off their nodes, the pod is placed on what is left, then each victim
  must be placed again (pipelined) on what remains; the first n for which every victim finds a place wins
  (allPodsReallocated). A victim that lands back on its own node is not moved.
- The moved pods are evicted as preemption victims are, and the pod is nominated to its node; the victims'
  pods, made again by their controllers, are scheduled as any pod (the node the pod waits for is held for it).

A gang (a KAI PodGroup of several pods, read as a v1.37 PodGroup) is consolidated for as one job: its members are
placed by the group cycle on what the lifted victims leave (a group a placement plugin places, by topology, is
not). Here only pods that their controller makes again move (a bare pod evicted is gone, so consolidating it
would kill it, not move it), and only pods outside a PodGroup; KAI's pipelining of the moved pods to the very
nodes the solver chose is not modelled (named in the kai profile's notModelled).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

import numpy as np

from phalanx.api.objects import Pod, PodGroup
from phalanx.scheduler.cycle import PodCycle
from phalanx.scheduler.gang import schedule_group
from phalanx.scheduler.handle import Handle
from phalanx.scheduler.preemption import Outcome

NON_PREEMPTIBLE = 100  # KAI pkg/common/podgroup CalculatePreemptibility: priority below it is preemptible
MAX_PREEMPTEES = 16  # KAI cmd/scheduler options: --max-consolidation-preemptees


def consolidate(s: Handle, pod: Pod, priority: int) -> Outcome | None:
    """Victims to move and the node the pod then takes, or None when no consolidation makes room."""
    if priority >= NON_PREEMPTIBLE or pod.group_key is not None or not _room_somewhere(s, [pod]):
        return None

    def place() -> list[tuple[Pod, int]]:
        found = s.cycle.schedule(pod)
        if found.node is None:
            return []
        s.cycle.reserve(pod, found.node)
        return [(pod, found.node)]

    return _solve(s, place, priority, exclude=pod.key)


def consolidate_group(s: Handle, group: PodGroup, priority: int, pending: Sequence[Pod]) -> Outcome | None:
    """For a gang that fits nowhere (a KAI PodGroup of several pods): victims to move and the nodes its members
    then take, placed by the group cycle on what the victims leave; None when no consolidation makes room."""
    running = s.running_members(group.key)
    short = max(group.min_count - running, 1) if group.is_gang else 1
    if priority >= NON_PREEMPTIBLE or not _room_somewhere(s, pending[:short]):
        return None

    def place() -> list[tuple[Pod, int]]:
        outcome = schedule_group(s.cycle, group, pending, running)
        return list(outcome.placed) if outcome.success else []

    return _solve(s, place, priority, exclude=group.key)


def _solve(s: Handle, place: Callable[[], list[tuple[Pod, int]]], priority: int, exclude: str) -> Outcome | None:
    """KAI's jobs solver for consolidation: growing prefixes of the victims lifted, the preemptor placed by
    `place` (its pods stay reserved), every victim placed again; the first prefix that works."""
    running = s.running
    victims = [key for key in running.node_of
               if key not in running.terminating and key != exclude and running.priority[key] < NON_PREEMPTIBLE
               and _movable(s.pods.get(key))]
    victims.sort(key=lambda k: (running.priority[k], -running.started[k], -running.seq[k]))
    victims = victims[:MAX_PREEMPTEES]
    cluster, cycle = s.cluster, s.cycle
    for n in range(1, len(victims) + 1):
        with cluster.trial(), _dry_run(cycle):
            lifted = [cycle.lift(key, s.pods[key]) for key in victims[:n]]
            placed = place()
            if not placed:
                continue
            moved: list[str] = []
            for lift in lifted:
                again = cycle.schedule(lift.pod)
                if again.node is None:
                    break
                cycle.reserve(lift.pod, again.node)
                if again.node != lift.node:
                    moved.append(lift.pod.key)
            else:
                if not moved:
                    return None
                names = cluster.names
                return Outcome(victims=moved, nominations={p.key: names[node] for p, node in placed},
                               node=names[placed[0][1]], priority=priority)
    return None


@contextmanager
def _dry_run(cycle: PodCycle) -> Iterator[None]:
    """The cycle's node rotation and tie-breaking draws as they were: a dry run leaves no trace on later cycles."""
    start, drawn = cycle.next_start, cycle.rng.bit_generator.state
    try:
        yield
    finally:
        cycle.next_start, cycle.rng.bit_generator.state = start, drawn


def _movable(pod: Pod | None) -> bool:
    return pod is not None and pod.controller is not None and pod.owner is not None and pod.group_key is None


def _room_somewhere(s: Handle, pods: Sequence[Pod]) -> bool:
    """The cluster's free room, summed over nodes, covers what the pods ask (IsEnoughGPUsAllocatableForJob)."""
    asked = sum((s.cluster.demand(pod).requests for pod in pods), np.zeros(len(s.cluster.resources), dtype=np.int64))
    cols = np.flatnonzero(asked)
    free = np.clip(s.cluster.free()[:, cols], 0, None).sum(axis=0)
    return bool(np.all(free >= asked[cols]))
