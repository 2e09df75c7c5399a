"""Verification's hints (`phalanx verify`): the real scheduler's choices, which Phalanx takes where they rank
equal with its own, so that a random tie-break does not make the two runs drift apart. Given to the Scheduler
when it is made; a Scheduler without them decides as always."""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Hints:
    # pod key -> the node the real scheduler bound it to, taken among equally best nodes; with it on, the
    # Scheduler also notes every decision's best nodes (`Scheduler.ties`)
    nodes: Mapping[str, str] | None = None
    # preemptor key -> the node the real scheduler preempted on, taken when it ranks equal with Phalanx's pick
    preemption_nodes: Mapping[str, str] | None = None
    # the pods the real scheduler evicted: among victims that rank equal, these go last
    victims: AbstractSet[str] | None = None
