"""The Kubernetes objects Phalanx schedules with, reduced to the fields scheduling reads."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, Protocol

TaintEffect = Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]
ARRIVAL_ANNOTATION = "phalanx.dev/arrival"
DURATION_ANNOTATION = "phalanx.dev/duration"
DEFAULT_SCHEDULER = "default-scheduler"
CHECKPOINT_ANNOTATION = "phalanx.dev/checkpoint-interval"
STARTUP_ANNOTATION = "phalanx.dev/startup-time"
DEFAULT_NAMESPACE = "default"
# kube-scheduler scores pods that request no cpu/memory as if they asked for these (non-zero requests).
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str
    effect: TaintEffect

    def describe(self) -> str:
        return f"{{{self.key}: {self.value}}}"


class TaintLike(Protocol):
    """A node taint or a device taint (KEP-5055): tolerations match both the same way."""

    @property
    def key(self) -> str: ...

    @property
    def value(self) -> str: ...

    @property
    def effect(self) -> str: ...


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str = ""
    operator: Literal["Equal", "Exists"] = "Equal"
    value: str = ""
    effect: str = ""
    toleration_seconds: float | None = None

    def tolerates(self, taint: TaintLike) -> bool:
        """kube's Toleration.ToleratesTaint: key (empty with Exists = all), effect (empty = all), value."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        return bool(self.key) and self.value == taint.value

    def manifest(self) -> dict[str, object]:
        """The toleration as the API writes it (fields at their defaults left out)."""
        out: dict[str, object] = {"operator": self.operator}
        if self.key:
            out["key"] = self.key
        if self.value:
            out["value"] = self.value
        if self.effect:
            out["effect"] = self.effect
        if self.toleration_seconds is not None:
            out["tolerationSeconds"] = int(self.toleration_seconds)
        return out


@dataclass(frozen=True, slots=True)
class Requirement:
    """One node selector requirement: `key operator values`."""

    key: str
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]
    values: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class SelectorTerm:
    """A nodeSelectorTerm: its expressions (on labels) and fields (on metadata.name) are ANDed."""

    expressions: tuple[Requirement, ...] = ()
    fields: tuple[Requirement, ...] = ()

    def matches(self, name: str, labels: Mapping[str, str]) -> bool:
        """Whether a node (its name and labels) satisfies the term, one node at a time (the scheduler's
        filters work on label arrays instead). An empty term matches nothing, as the API reads it."""
        if not self.expressions and not self.fields:
            return False
        for req in (*self.expressions, *self.fields):
            value = name if req in self.fields else labels.get(req.key)
            if req.operator == "In" and value not in req.values:
                return False
            if req.operator == "NotIn" and value in req.values:
                return False
            if req.operator == "Exists" and value is None:
                return False
            if req.operator == "DoesNotExist" and value is not None:
                return False
            if req.operator in ("Gt", "Lt"):
                if value is None or not value.lstrip("+-").isdigit():
                    return False
                if (int(value) > int(req.values[0])) != (req.operator == "Gt"):
                    return False
        return True


@dataclass(frozen=True, slots=True)
class PreferredTerm:
    weight: int
    term: SelectorTerm


@dataclass(frozen=True, slots=True)
class Placement:
    """Everything on a pod that restricts or ranks nodes by their labels, name or taints.

    Pods made from one template share a Placement, so per-node masks are computed once per Placement.
    """

    node_selector: tuple[tuple[str, str], ...] = ()
    required_terms: tuple[SelectorTerm, ...] | None = None
    preferred_terms: tuple[PreferredTerm, ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    node_name: str | None = None
    # Constraints between pods (parsed in api/pod_constraints.py). Not static: they depend on the pods already placed.
    spread: tuple[SpreadConstraint, ...] = ()
    pod_affinity: PodAffinity | None = None


TRANSLATED = "(translated)"  # the file named for objects a migration made up (Kueue pod groups and the like)


@dataclass(slots=True)
class Source:
    """Where an object came from, for error messages and document order."""

    file: str
    index: int  # counted across the files of one load, in the order they were given

    @property
    def order(self) -> tuple[bool, int, str]:
        """Document order: what a migration made up first, then the files as given (on the command line, a
        folder's files by name), each top down."""
        return self.file != TRANSLATED, self.index, self.file


@dataclass(slots=True)
class OwnerRef:
    """An ownerReference: the kind and name of the owning object."""

    kind: str
    name: str


@dataclass(slots=True)
class Node:
    name: str
    allocatable: dict[str, int]
    labels: dict[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    unschedulable: bool = False
    arrival: float = 0.0
    source: Source | None = None


@dataclass(frozen=True, slots=True)
class GpuRequest:
    """A pod's GPU ask (the openb trace's `num_gpu`, `gpu_milli`, `gpu_spec`; KAI's `gpu-fraction`, `gpu-memory`
    annotations, api/kai_gpu.py): `count` GPUs with `milli` thousandths free on each (1000 = whole GPUs, less = a
    share of one), on a node whose GPU model is one of `models` (empty: any GPU node)."""

    count: int
    milli: int
    models: tuple[str, ...] = ()
    memory: int = 0  # KAI's gpu-memory (MiB of each GPU): its share depends on the node's GPU memory; milli is 0


@dataclass(frozen=True, slots=True)
class Queueing:
    """The admission queues an object names: Kueue's LocalQueue (label `kueue.x-k8s.io/queue-name`) with its
    WorkloadPriorityClass (label `kueue.x-k8s.io/priority-class`), Volcano's Queue (annotation
    `scheduling.volcano.sh/queue-name`, or a Volcano PodGroup's `spec.queue`), and the later peers' marks
    (phalanx.api.peers: each peer's keys, by the field names its module gives). Only the peers' profiles read
    them."""

    kueue: str | None = None
    kueue_priority_class: str | None = None
    volcano: str | None = None
    peer: tuple[tuple[str, str], ...] = ()  # (field, value) of the later peers' marks found

    def value(self, name: str) -> str | None:
        return next((value for field_name, value in self.peer if field_name == name), None)


@dataclass(slots=True)
class Pod:
    namespace: str
    name: str
    requests: dict[str, int]
    placement: Placement = field(default_factory=Placement)
    labels: dict[str, str] = field(default_factory=dict)
    priority: int = 0
    priority_class_name: str | None = None
    explicit_priority: int | None = None
    preemption_policy: str = "PreemptLowerPriority"
    scheduler_name: str = DEFAULT_SCHEDULER
    node_name: str | None = None
    pod_group: str | None = None
    arrival: float = 0.0
    duration: float | None = None
    owner: str | None = None
    start_time: float | None = None
    source: Source | None = None
    controller: str | None = None  # kind of the controlling ownerReference (Job, ReplicaSet, …), if any
    termination_grace: float = 30.0
    checkpoint_interval: float | None = None
    gpu: GpuRequest | None = None  # shared or whole GPUs (gpu_share plugins), None: no GPU
    resource_claims: tuple[PodResourceClaim, ...] = ()  # spec.resourceClaims (DRA), in order
    # (cpu, memory) as kube-scheduler scores them: each container's missing request defaulted to 100m/200Mi.
    scoring_requests: tuple[int, int] | None = None
    queueing: Queueing | None = None  # the admission queue it names (kueue and volcano profiles)
    startup: float | None = None  # phalanx.dev/startup-time: bound to ready (image pull, init, warm-up)
    # (host IP, protocol, port) its containers and sidecars bind on the node (api/host_ports.py; NodePorts)
    host_ports: tuple[tuple[str, str, int], ...] = ()
    scheduling_gates: tuple[str, ...] = ()  # spec.schedulingGates[].name: queued only once none is left

    @property
    def gate_message(self) -> str | None:
        """SchedulingGates' PreEnqueue status while the pod carries gates (Go's %v of the names)."""
        return f"waiting for scheduling gates: [{' '.join(self.scheduling_gates)}]" if self.scheduling_gates else None

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def group_key(self) -> str | None:
        return f"{self.namespace}/{self.pod_group}" if self.pod_group else None

    def nonzero(self, resource: str) -> int:
        """The request kube-scheduler scores with: cpu and memory default to 100m and 200Mi when unset."""
        if self.scoring_requests is not None and resource in ("cpu", "memory"):
            return self.scoring_requests[0 if resource == "cpu" else 1]
        value = self.requests.get(resource, 0)
        if value:
            return value
        if resource == "cpu":
            return DEFAULT_MILLI_CPU_REQUEST
        if resource == "memory":
            return DEFAULT_MEMORY_REQUEST
        return 0


@dataclass(slots=True)
class PriorityClass:
    name: str
    value: int
    global_default: bool = False
    preemption_policy: str = "PreemptLowerPriority"
    source: Source | None = None


@dataclass(frozen=True, slots=True)
class GroupPolicy:
    """A PodGroup's schedulingPolicy: `gang` with `minCount`, or `basic` (min_count None)."""

    kind: Literal["gang", "basic"]
    min_count: int | None = None


@dataclass(slots=True)
class PodGroupTemplate:
    name: str
    policy: GroupPolicy | None
    priority_class_name: str | None = None
    priority: int | None = None
    disruption_mode: Literal["single", "all"] = "single"
    preemption_policy: str | None = None
    # schedulingConstraints.topology[0].key (KEP-5732): the node label whose value all its pods share.
    topology_key: str | None = None


@dataclass(slots=True)
class CompositePodGroupTemplate:
    """A Workload's compositePodGroupTemplates entry (KEP-6012): its policy and the names of its child
    templates (PodGroup templates and composite ones), which live in the Workload's flat maps."""

    name: str
    policy: GroupPolicy  # gang: min_count is minGroupCount
    children: tuple[str, ...] = ()
    composite_children: tuple[str, ...] = ()
    priority_class_name: str | None = None
    priority: int | None = None
    disruption_mode: Literal["single", "all"] = "single"
    preemption_policy: str | None = None
    topology_key: str | None = None


@dataclass(slots=True)
class Workload:
    namespace: str
    name: str
    templates: dict[str, PodGroupTemplate]
    arrival: float = 0.0
    source: Source | None = None
    # compositePodGroupTemplates (gate CompositePodGroup), every level by name; `templates` then holds the
    # PodGroup templates of every level.
    composite_templates: dict[str, CompositePodGroupTemplate] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(slots=True)
class PodGroup:
    namespace: str
    name: str
    policy: GroupPolicy | None
    workload_name: str | None = None
    template_name: str | None = None
    priority_class_name: str | None = None
    priority: int | None = None
    disruption_mode: Literal["single", "all"] = "single"  # its own spec only (never the Workload template's)
    arrival: float = 0.0
    source: Source | None = None
    preemption_policy: str | None = None  # Never | PreemptLowerPriority (gate PodGroupPreemptionPolicy)
    # status.conditions as read (a snapshot's), each with type, status, reason, message, lastTransitionTime.
    conditions: tuple[dict[str, str], ...] = ()
    queueing: Queueing | None = None
    # schedulingConstraints.topology[0].key (KEP-5732): every member lands on nodes with one value of this
    # node label (with the TopologyAwareWorkloadScheduling gate on; phalanx/scheduler/plugins/topology/).
    topology_key: str | None = None
    # spec.parentCompositePodGroupName (KEP-6012): the CompositePodGroup above it, in its namespace.
    parent: str | None = None
    # spec.resourceClaims (DRAWorkloadResourceClaims): claims its pods share.
    resource_claims: tuple[PodResourceClaim, ...] = ()
    # status.resourceClaimStatuses as read (a snapshot's): (entry name, the claim made from its template).
    claim_statuses: tuple[tuple[str, str], ...] = ()

    @property
    def initially_scheduled(self) -> bool:
        """Its status already says PodGroupInitiallyScheduled=True: final, the scheduler never rewrites it."""
        return any(c.get("type") == "PodGroupInitiallyScheduled" and c.get("status") == "True"
                   for c in self.conditions)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def min_count(self) -> int:
        """Members that must run together: minCount for gang, 1 for basic (no gang requirement)."""
        if self.policy is None or self.policy.kind == "basic" or self.policy.min_count is None:
            return 1
        return self.policy.min_count

    @property
    def is_gang(self) -> bool:
        return self.policy is not None and self.policy.kind == "gang"


@dataclass(slots=True)
class CompositePodGroup:
    """A scheduling.k8s.io/v1alpha3 CompositePodGroup (KEP-6012): an inner node of a tree of groups whose
    leaves are PodGroups, linked upward by `parentCompositePodGroupName`. A gang needs `minGroupCount` of its
    children (PodGroups or CompositePodGroups) to fit together; basic needs one."""

    namespace: str
    name: str
    policy: GroupPolicy  # gang: min_count is minGroupCount
    parent: str | None = None
    workload_name: str = ""
    template_name: str = ""
    priority_class_name: str | None = None
    priority: int | None = None
    preemption_policy: str | None = None
    disruption_mode: Literal["single", "all"] = "single"
    topology_key: str | None = None
    arrival: float = 0.0
    source: Source | None = None
    conditions: tuple[dict[str, str], ...] = ()

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def min_group_count(self) -> int:
        """Children that must fit together: minGroupCount for gang, 1 for basic (getMinCount upstream)."""
        return (self.policy.min_count or 1) if self.policy.kind == "gang" else 1


@dataclass(slots=True)
class Job:
    """A batch/v1 Job: the Job controller stamps its pods (and, with spec.scheduling, its PodGroup)."""

    namespace: str
    name: str
    template: Pod
    parallelism: int
    completions: int
    policy: GroupPolicy | None
    arrival: float = 0.0
    source: Source | None = None
    queueing: Queueing | None = None
    suspend: bool = False  # spec.suspend: no pods until something (Kueue, on admission) resumes it
    # Kueue partial admission: `kueue.x-k8s.io/job-min-parallelism`, and whether completions follow the
    # parallelism Kueue admits (`kueue.x-k8s.io/job-completions-equal-parallelism`)
    min_parallelism: int | None = None
    completions_follow: bool = False

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """A label selector: matchLabels and matchExpressions (In, NotIn, Exists, DoesNotExist), ANDed."""

    match_labels: tuple[tuple[str, str], ...] = ()
    expressions: tuple[Requirement, ...] = ()

    def matches(self, labels: dict[str, str]) -> bool:
        for key, value in self.match_labels:
            if labels.get(key) != value:
                return False
        for req in self.expressions:
            present = req.key in labels
            if req.operator == "In" and not (present and labels[req.key] in req.values):
                return False
            if req.operator == "NotIn" and present and labels[req.key] in req.values:
                return False
            if req.operator == "Exists" and not present:
                return False
            if req.operator == "DoesNotExist" and present:
                return False
        return True


# --- constraints between pods (parsed in api/pod_constraints.py) ----------------------------------------------

# nodeAffinityPolicy and nodeTaintsPolicy of a topologySpreadConstraint.
NodeInclusionPolicy = Literal["Honor", "Ignore"]


def selector_matches(selector: LabelSelector | None, labels: dict[str, str]) -> bool:
    return selector is not None and selector.matches(labels)


def selector_empty(selector: LabelSelector | None) -> bool:
    """labels.Selector.Empty(): an empty (match-everything) selector; None (match nothing) is not empty."""
    return selector is not None and not selector.match_labels and not selector.expressions


@dataclass(frozen=True, slots=True)
class SpreadConstraint:
    """One topologySpreadConstraint, its selector merged with matchLabelKeys."""

    max_skew: int
    topology_key: str
    when_unsatisfiable: Literal["DoNotSchedule", "ScheduleAnyway"]
    selector: LabelSelector | None
    min_domains: int = 1
    node_affinity_policy: NodeInclusionPolicy = "Honor"
    node_taints_policy: NodeInclusionPolicy = "Ignore"


@dataclass(frozen=True, slots=True)
class PodAffinityTerm:
    """A podAffinityTerm with its namespaces resolved: pods in `namespaces` (or in any namespace when
    `all_namespaces`, a `namespaceSelector: {}`) whose labels match `selector`, by `topology_key`."""

    selector: LabelSelector | None
    topology_key: str
    namespaces: frozenset[str]
    all_namespaces: bool = False

    def matches(self, namespace: str, labels: dict[str, str]) -> bool:
        """kube-scheduler's AffinityTerm.Matches (a namespaceSelector other than {} is never loaded)."""
        if not (self.all_namespaces or namespace in self.namespaces):
            return False
        return selector_matches(self.selector, labels)


@dataclass(frozen=True, slots=True)
class WeightedTerm:
    weight: int
    term: PodAffinityTerm


@dataclass(frozen=True, slots=True)
class PodAffinity:
    """spec.affinity.podAffinity and podAntiAffinity: required and preferred terms of each."""

    required: tuple[PodAffinityTerm, ...] = ()
    required_anti: tuple[PodAffinityTerm, ...] = ()
    preferred: tuple[WeightedTerm, ...] = ()
    preferred_anti: tuple[WeightedTerm, ...] = ()


# --- the pod's spec.resourceClaims (parsed in api/dra.py) -------------------------------------------------------

@dataclass(frozen=True, slots=True)
class PodResourceClaim:
    """One entry of a pod's `spec.resourceClaims`: a shared claim by name, or one made from a template."""

    name: str
    claim_name: str | None = None
    template_name: str | None = None

    def claim_for(self, pod_name: str) -> str:
        """The claim's name: the named claim, or `<pod>-<entry>` for the one made from the template."""
        return self.claim_name if self.claim_name is not None else f"{pod_name}-{self.name}"


@dataclass(slots=True)
class PodDisruptionBudget:
    """policy/v1 PodDisruptionBudget: minAvailable or maxUnavailable (an integer or a percentage)."""

    namespace: str
    name: str
    selector: LabelSelector
    min_available: int | str | None = None
    max_unavailable: int | str | None = None
    source: Source | None = None

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"
