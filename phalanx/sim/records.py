"""What the simulator keeps of each pod and PodGroup while it runs: their records, read by the report, the
outcome metrics and the cluster autoscaler."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from phalanx.api.objects import Pod, PodGroup
from phalanx.sim.report_schema import DeviceTaintEvictionEntry, Preemption


@dataclass(slots=True)
class PodRecord:
    pod: Pod
    created: float = 0.0
    phase: str = "Pending"
    node: str | None = None
    bound_at: float | None = None
    finished_at: float | None = None
    message: str | None = None
    progress: float = 0.0
    since: float | None = None  # making progress since this time
    token: int = 0
    terminating: bool = False
    nominated: str | None = None
    preempted_count: int = 0
    preempted_by: list[Preemption] = field(default_factory=list)
    device_taint_evictions: list[DeviceTaintEvictionEntry] = field(default_factory=list)
    devices: list[str] = field(default_factory=list)  # DRA devices its claims held when it was bound
    counted_live: bool = False  # counted in its group's members running (and not terminating)
    counted_done: bool = False  # counted in its group's members running or succeeded
    placeholder: bool = False  # YuniKorn's placeholder pod: holds room for a gang, does no work, not reported


@dataclass(slots=True)
class GroupRecord:
    group: PodGroup
    started_at: float | None = None  # first time minCount members ran together
    running_since: float | None = None  # making progress (minCount members running) since
    waiting_since: float | None = None  # waiting for minCount members to run since
    waits: list[float] = field(default_factory=list)
    preempted_count: int = 0
    conditions: dict[str, dict[str, Any]] = field(default_factory=dict)
