"""The report's JSON contract (`docs/report.md`) as types: what `build_report` returns and its consumers read.

Keys are the JSON's own (camelCase); a block present only under some inputs or profiles is NotRequired.
The engine's own blocks (exact placement, topology constraints, composite trees) are typed beside their
builders in phalanx/scheduler (placement/, plugins/), which cannot import this driver module; the rest are here. Left
loose: PodGroup conditions (a snapshot's are kept as written) and the policies' own per-queue counters
(`details`).
"""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict

from phalanx.scheduler.placement.exact import ExactPlacementReport, ExactPlacementSeconds
from phalanx.scheduler.plugins.composite.report import CompositeReport
from phalanx.scheduler.plugins.topology.report import TopologyReport


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


class NotAdmitted(TypedDict):
    """Work that never ran: workloads a queueing policy never admitted or that stay suspended, and the pods
    of those that never made one (a Job's completions)."""

    workloads: int
    podsNotCreated: int


class DefaultDuration(TypedDict):
    """Pods of one owner kind that ran for a default duration (no phalanx.dev/duration)."""

    seconds: float
    pods: int


class Makespan(TypedDict):
    seconds: float | None
    unfinishedPods: int


class Summary(TypedDict):
    pods: PodCounts
    gangPodsPending: int
    notAdmitted: NotAdmitted
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
    exactPlacementSeconds: NotRequired[ExactPlacementSeconds]


class Preemption(TypedDict):
    """One eviction of the pod by preemption (`preemptedBy`)."""

    time: float
    preemptor: str
    node: str
    message: str


class DeviceTaintEvictionEntry(TypedDict):
    time: float
    node: str
    claim: str
    deviceTaintRule: str | None
    message: str


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
    preemptedBy: list[Preemption]
    deviceTaintEvictions: list[DeviceTaintEvictionEntry]
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
    held: NotRequired[str]  # why it never ran or waits again at the end (not admitted, suspended)
    podsNotCreated: NotRequired[int]  # a Job never started: the pods it would have made


class AdmissionWorkload(TypedDict):
    """One queued workload (`admission.workloads`)."""

    name: str
    queue: str
    admitted: bool
    finished: bool
    admittedBy: str | None
    admissionWaits: list[float]
    evictions: int
    reason: str | None  # why it is held at the end (None once admitted)


class Placeholders(TypedDict):
    """YuniKorn's gang applications (task groups) and their placeholder pods, which the pod counts leave out."""

    applications: int
    placeholders: int
    replaced: int
    timedOut: int
    failed: int  # Hard style at the timeout, or rejected
    rejected: int  # refused by the core: the task groups pass a queue max, or the queue does not sort fifo


class Admission(TypedDict):
    policy: str
    admitted: int
    evicted: int
    notModelled: list[str]
    workloads: list[AdmissionWorkload]
    placeholders: NotRequired[Placeholders]


class Queue(TypedDict):
    """One queue of the admission policy (`queues`): a Kueue ClusterQueue or LocalQueue, or a Volcano Queue."""

    kind: str
    name: str
    admitted: int
    pending: int
    running: int
    borrowed: int | None  # admissions that borrowed (Kueue's ClusterQueues only)
    preempted: int
    reclaimed: int
    meanWaitSeconds: float | None
    details: dict[str, object]  # the policy's own counters


class ReplicaCount(TypedDict):
    time: float
    replicas: int


class ServiceEvent(TypedDict):
    time: float
    message: str
    count: NotRequired[int]  # when it repeated: how often, and when last
    lastTime: NotRequired[float]


class AddedLatency(TypedDict):
    p50: float
    p99: float
    max: float


class Requests(TypedDict):
    """A service's requests and what cold windows did to them (None without a request series)."""

    requests: float | None
    requestsCold: float | None
    requestsDropped: float | None
    addedLatencySeconds: AddedLatency | None


class Service(TypedDict):
    """One HorizontalPodAutoscaler's service (`services`)."""

    name: str
    target: str
    whenAtZero: str
    minReplicas: int
    maxReplicas: int
    scaledToZero: int
    wokeFromZero: int
    replicas: list[ReplicaCount]
    conditions: list[dict[str, str]]
    events: list[ServiceEvent]
    coldSeconds: float
    replicaHours: float
    gpuHours: float
    replicaHoursSaved: float
    gpuHoursSaved: float
    requests: float | None  # `Requests`' keys
    requestsCold: float | None
    requestsDropped: float | None
    addedLatencySeconds: AddedLatency | None
    notes: list[str]


class SeriesWaits(TypedDict):
    pods: list[float]
    groups: list[float]


class Series(TypedDict):
    """The `series` block: one entry per sample in each list; fractions by resource."""

    sampleInterval: float | None
    time: list[float]
    allocated: dict[str, list[float]]
    useful: dict[str, list[float]]
    stranded: dict[str, list[float]]
    podsRunning: list[int]
    podsPending: list[int]
    groupsPending: list[int]
    preemptions: list[int]
    waitSeconds: SeriesWaits
    queueShare: NotRequired[dict[str, list[float]]]  # kueue and volcano profiles: each queue's share


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


class OutcomeEntry(TypedDict):
    """One outcome of a timing-dependent workload, and the interleavings that give it (phalanx/sim/timing.py)."""

    interleavings: list[str]
    bound: int
    pending: int
    failed: int
    preempted: int
    boundAt: list[float]
    nodes: list[str]


class WorkloadTiming(TypedDict):
    workload: str
    outcomes: list[OutcomeEntry]
    kubeScheduler: NotRequired[str]  # verify: the interleaving whose outcome the real scheduler's matches


class InterleavingEntry(TypedDict):
    name: str
    how: str


class TimingReport(TypedDict):
    interleavings: list[InterleavingEntry]
    workloads: int
    timingDependent: list[WorkloadTiming]


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
    defaultDurations: NotRequired[dict[str, DefaultDuration]]
    services: NotRequired[list[Service]]
    autoscaler: NotRequired[Autoscaler]
    admission: NotRequired[Admission]
    queues: NotRequired[list[Queue]]
    resourceClaims: NotRequired[list[ResourceClaimEntry]]
    exactPlacement: NotRequired[ExactPlacementReport]
    topologyConstraints: NotRequired[TopologyReport]
    compositePodGroups: NotRequired[CompositeReport]
    podGroupResourceClaims: NotRequired[Notes]
    series: NotRequired[Series]
    timing: NotRequired[TimingReport]
