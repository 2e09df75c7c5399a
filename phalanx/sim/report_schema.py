"""The report's JSON contract (`docs/report.md`) as types: what `build_report` returns and its consumers read.

Keys are the JSON's own (camelCase); a block present only under some inputs or profiles is NotRequired.
Blocks whose shape belongs to another module's own report (services, queues, composite trees, the time
series, …) stay plain dicts here.
"""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict


class WaitStats(TypedDict):
    count: int
    mean: float
    p50: float
    p90: float
    p99: float
    max: float


class CensoredWaitStats(WaitStats):
    censored: int


class PodCounts(TypedDict):
    total: int
    running: int
    pending: int
    succeeded: int
    failed: int


class GroupCounts(TypedDict):
    total: int
    scheduled: int
    pending: int


class Makespan(TypedDict):
    seconds: float | None
    unfinishedPods: int


class Summary(TypedDict):
    pods: PodCounts
    gangPodsPending: int
    podGroups: GroupCounts
    allocated: dict[str, float]
    useful: dict[str, float]
    stranded: dict[str, float]
    strandedResourceHours: dict[str, float]
    allocatedResourceHours: dict[str, float]
    timeAveragedAllocated: dict[str, float]
    waitSeconds: WaitStats
    waitSecondsIncludingPending: CensoredWaitStats
    groupWaitSeconds: WaitStats
    groupCompletionSeconds: WaitStats
    makespan: Makespan
    preemptions: int
    evictions: int
    lostResourceHours: dict[str, float]


class Stats(TypedDict):
    podsScheduled: int
    schedulingSeconds: float
    podsPerSecond: float
    exactPlacementSeconds: NotRequired[dict[str, float]]


class PodEntry(TypedDict):
    name: str
    node: str | None
    phase: str
    podGroup: str | None
    priority: int
    message: str | None
    createdAt: float
    boundAt: float | None
    finishedAt: float | None
    nominatedNodeName: str | None
    preemptedCount: int
    preemptedBy: list[dict[str, Any]]
    deviceTaintEvictions: list[dict[str, Any]]
    devices: list[str]


class GroupEntry(TypedDict):
    name: str
    policy: str | None
    minCount: int
    running: int
    pending: int
    succeeded: int
    scheduled: bool
    startedAt: float | None
    disruptionMode: str
    priority: int | None
    preemptedCount: int
    waitSeconds: float
    completedAt: float | None
    completionSeconds: float | None
    message: str | None
    conditions: list[dict[str, Any]]
    resourceClaimStatuses: NotRequired[list[dict[str, str]]]


class WorkloadEntry(TypedDict):
    kind: str
    name: str
    pods: int
    running: int
    pending: int
    succeeded: int
    failed: int
    waitSeconds: WaitStats
    completedAt: float | None
    completionSeconds: float | None


class Admission(TypedDict):
    policy: str
    admitted: int
    evicted: int
    notModelled: list[str]
    workloads: list[dict[str, object]]


class Autoscaler(TypedDict):
    scaleUp: str
    nodesAdded: dict[str, int]
    nodesRemoved: int
    nodeHours: dict[str, float]
    cost: dict[str, float]
    totalCost: float
    idleNodeHours: float
    unhelped: list[dict[str, str]]
    notModelled: list[str]


class ResourceClaimEntry(TypedDict):
    name: str
    status: dict[str, object]


class Notes(TypedDict):
    """The `podGroupResourceClaims` block: how many PodGroups, and what is not modelled for them."""

    podGroups: int
    notes: list[str]


class Report(TypedDict):
    schemaVersion: int
    profile: str
    featureGates: dict[str, bool]
    endTime: float
    summary: Summary
    stats: Stats
    notImplementedPlugins: list[str]
    pods: list[PodEntry]
    podGroups: list[GroupEntry]
    workloads: list[WorkloadEntry]
    services: NotRequired[list[dict[str, Any]]]
    autoscaler: NotRequired[Autoscaler]
    admission: NotRequired[Admission]
    queues: NotRequired[list[dict[str, Any]]]
    resourceClaims: NotRequired[list[ResourceClaimEntry]]
    exactPlacement: NotRequired[dict[str, Any]]
    topologyConstraints: NotRequired[dict[str, Any]]
    compositePodGroups: NotRequired[dict[str, Any]]
    podGroupResourceClaims: NotRequired[Notes]
    series: NotRequired[dict[str, Any]]
