"""The Scheduler as its parts see it (kube-scheduler's framework.Handle): the state it owns and the few things it
does for them. The parts (events.py, pod_cycle.py, group_cycle.py, cycle_errors.py) take a Handle and never
import scheduler.py; the Scheduler meets the Protocol and wires them."""

from __future__ import annotations

from typing import Protocol

from phalanx.api.objects import CompositePodGroup, Pod, PodDisruptionBudget, PodGroup
from phalanx.cluster.devices import DeviceState
from phalanx.scheduler.decisions import Bind, Decision
from phalanx.scheduler.failures import FailedPods
from phalanx.scheduler.framework import AssignedPodHintPlugin
from phalanx.scheduler.plugins.composite.tree_cycles import CompositeCycles, TreeScheduler


class Handle(TreeScheduler, Protocol):
    """Everything a tree's cycle reads and does (TreeScheduler), and what the other parts need besides."""

    # --- the state (the Scheduler's attributes; the parts change what they hold, never rebind them)
    @property
    def composite(self) -> CompositeCycles | None: ...
    @property
    def devices(self) -> DeviceState | None: ...
    @property
    def extended(self) -> dict[str, str]: ...  # extended resource -> the DeviceClass serving it (KEP-5004)
    @property
    def pods(self) -> dict[str, Pod]: ...
    @property
    def groups(self) -> dict[str, PodGroup]: ...
    @property
    def composite_pod_groups(self) -> dict[str, CompositePodGroup]: ...
    @property
    def members(self) -> dict[str, set[str]]: ...  # PodGroup key -> its pods' keys
    @property
    def pdbs(self) -> dict[str, PodDisruptionBudget]: ...
    @property
    def rejectors(self) -> dict[str, dict[str, list[AssignedPodHintPlugin]]]: ...
    @property
    def nominated(self) -> dict[str, str]: ...  # pod key -> its nominated node
    @property
    def assumed(self) -> dict[str, str]: ...  # pod key -> its PodGroup key ("" for none)
    @property
    def initially_scheduled(self) -> set[str]: ...
    @property
    def errors(self) -> dict[str, str]: ...  # queue entry -> the error its last cycle failed with
    @property
    def failures(self) -> FailedPods: ...
    @property
    def out(self) -> list[Decision]: ...  # the round's decisions so far

    # --- what it answers
    def priority_of(self, pod: Pod) -> int: ...
    def group_priority(self, group_key: str) -> int: ...
    def entry(self, group_key: str) -> str: ...
    def in_tree(self, group_key: str) -> PodGroup | None: ...

    # --- what it does
    def pre_enqueue(self, group_key: str, now: float) -> None: ...
    def bound(self, pod: Pod, node: int, now: float, *, reserve: bool) -> None: ...
    def rejected(self, entry: str, rejectors: dict[str, frozenset[str]]) -> None: ...
    def bind_decision(self, pod: Pod, node: int) -> Bind: ...
    def log_error(self, entry: str, message: str, exc: Exception) -> None: ...
