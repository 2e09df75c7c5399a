"""What an admission policy (Kueue-style, Volcano-style) sees and answers. The simulator hands it whole
workloads (a Job, a JobSet, a pod group) as they arrive and finish; each admission cycle it answers with
workloads to admit, whose pods then go to the scheduler, and workloads to evict (preempted or reclaimed:
their pods are deleted and the workload waits again). It keeps no clock of its own and never sees nodes
one by one: the engine places what it admits."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from phalanx.api.fields import Manifest
from phalanx.api.objects import Pod, Queueing, Source, Toleration

WAITING_FOR_ADMISSION = "waiting for admission"
SCHEDULING_GATED = "Scheduling is blocked due to non-empty scheduling gates"  # kube-scheduler's words


@dataclass(frozen=True, slots=True)
class PodSet:
    """Pods of one shape in a workload (a Job's template, a JobSet's replicated job, a PyTorchJob's Worker)."""

    name: str
    count: int
    requests: Mapping[str, int]  # per pod, in Phalanx's units: cpu in millicores, memory and others in units
    min_count: int | None = None  # the gang minimum if less than count (Kueue partial admission, minAvailable)
    node_selector: Mapping[str, str] = field(default_factory=dict)
    tolerations: tuple[Toleration, ...] = ()  # the pods' own tolerations (a flavor's nodeTaints must be tolerated)
    # per pod, thousandths of a GPU asked by KAI's gpu-fraction annotation (times its devices); only KAI counts it
    gpu_share_milli: int = 0


@dataclass(frozen=True, slots=True)
class QueuedWorkload:
    key: str  # namespace/name of the object admitted whole
    namespace: str
    queue: str  # the LocalQueue (Kueue) or Queue (Volcano) it names; "" when it names none
    priority: int
    created: float  # its arrival: FIFO order
    pod_sets: tuple[PodSet, ...]
    priority_class: str | None = None
    application: str = ""  # the application it belongs to, where the policy groups workloads (YuniKorn's pods)

    def total(self) -> dict[str, int]:
        """Requests of the whole workload, summed over its pod sets."""
        out: dict[str, int] = {}
        for ps in self.pod_sets:
            for name, value in ps.requests.items():
                out[name] = out.get(name, 0) + value * ps.count
        return out


@dataclass(frozen=True, slots=True)
class Admit:
    key: str
    queue: str  # the ClusterQueue (Kueue) or Queue (Volcano) that admitted it
    node_selector: Mapping[str, str] = field(default_factory=dict)  # the flavor's nodeLabels, added to its pods
    tolerations: tuple[Mapping[str, str], ...] = ()  # the flavor's tolerations (as written in the manifest)
    flavors: Mapping[str, str] = field(default_factory=dict)  # resource -> flavor, as the report shows it
    borrowed: bool = False
    pod_set_flavors: Mapping[str, Mapping[str, str]] = field(default_factory=dict)  # pod set -> resource -> flavor
    pod_set_node_selectors: Mapping[str, Mapping[str, str]] = field(default_factory=dict)  # pod set -> nodeLabels
    counts: Mapping[str, int] = field(default_factory=dict)  # pod set -> pods admitted, where fewer than asked


@dataclass(frozen=True, slots=True)
class EvictWorkload:
    """Evict an admitted workload (`key`) whole: its pods go and it waits for admission again (Kueue's Evicted
    condition; Volcano's preempt and reclaim actions)."""

    key: str
    reason: str  # "Preempted", "Reclaimed", "InClusterQueue", "InCohortReclamation", ...
    message: str = ""
    by: str | None = None  # the workload it made room for


class AdmissionPolicy(Protocol):
    """Kueue-style or Volcano-style admission, as the simulator drives it."""

    def workload_priority(self, priority_class: str, priority: int) -> int:
        """The priority of a workload that names `priority_class` (Kueue's WorkloadPriorityClass label), whose
        pods have `priority`."""
        ...

    def submit(self, workload: QueuedWorkload, now: float) -> None:
        """A workload arrives (or comes back after an eviction) and waits to be admitted."""

    def finished(self, key: str, now: float) -> None:
        """An admitted workload ended (its pods succeeded or were deleted): its quota is free again."""

    def cycle(self, now: float) -> list[Admit | EvictWorkload]:
        """One admission pass over the waiting workloads, in the policy's order."""
        ...

    def queue_rows(self) -> list[dict[str, object]]:
        """Per-queue counters for the report (admitted, pending, borrowed, preempted, reclaimed, waits)."""
        ...

    def not_modelled(self) -> list[str]:
        """Fields the inputs use that the policy does not model, named for stderr and the report."""
        ...

    def pending_reason(self, key: str) -> str:
        """Why a submitted workload is not admitted now, in the peer's words where it has them ("" when the
        policy does not know it as waiting)."""
        ...


class NodeScoring(Protocol):
    """The node scoring a policy's configuration implies (Volcano's binpack and nodeorder plugins), in place of
    the profile's resource scoring."""

    @property
    def notes(self) -> tuple[str, ...]:
        """What the mapping leaves out."""
        ...

    def score_weights(self) -> dict[str, int]: ...

    def plugin_args(self) -> dict[str, dict[str, Any]]: ...


class PolicyFactory(Protocol):
    """One admission policy, by the name a profile gives in `admission` (phalanx.admission.registry): how to
    build it over the input's queueing objects, and the few things the simulator's gate asks of it by name."""

    name: str
    # The policy requeues a workload it evicted itself (Kueue); else the gate offers it again (Volcano).
    requeues: bool
    # The policy queues a JobSet or Kubeflow job whole, and a LeaderWorkerSet by group (Kueue's integrations).
    whole: bool
    # What a pod the policy holds says while it waits (PodScheduled's message): Kueue gates pods, so kube-scheduler
    # writes its scheduling-gates message; the others' pending pods say "waiting for admission".
    held_message: str
    # The policy admits pods one by one (YuniKorn): a Job starts at once and each of its pods outside a gang is a
    # workload of its own, in the application its pods name.
    per_pod: bool

    def load(self, queue_docs: Sequence[tuple[Manifest, Source]], capacity: Mapping[str, int]) -> AdmissionPolicy:
        """The policy over the input's queueing objects (bad ones fail here, with file, object and field);
        `capacity`: the cluster's allocatable total less a snapshot's running pods."""
        ...

    def queue(self, queueing: Sequence[Queueing | None]) -> str | None:
        """The queue a workload waits in, from what its object (then its PodGroup) names; None: not queued."""
        ...

    def priority_class(self, queueing: Queueing) -> str | None:
        """The priority class a workload's own label names for the policy (Kueue's WorkloadPriorityClass label,
        KAI's `priorityClassName` label), which `AdmissionPolicy.workload_priority` turns into its priority."""
        ...

    def not_queued(self, kind: str, key: str, queueing: Queueing) -> str | None:
        """A note for a JobSet, LeaderWorkerSet or Kubeflow job that names one of the policy's queues when the
        policy does not queue it whole (`whole` False); None when it names none."""
        ...

    def node_scoring(self, queue_docs: Sequence[tuple[Manifest, Source]]) -> NodeScoring | None:
        """The node scoring the policy's configuration implies; None: the profile's own."""
        ...

    def application(self, pod: Pod, queueing: Queueing | None) -> str:
        """The application a pod belongs to, where the policy admits pods one by one (`per_pod`); else ""."""
        ...

    def reservations(self, policy: AdmissionPolicy) -> Reservations | None:
        """The placeholder pods that reserve room for the policy's gang applications before their pods are
        scheduled (phalanx.admission.yunikorn_placeholders), if the policy has them; None: it has none."""
        ...


class Reservations(Protocol):
    """Placeholder pods that hold room for a gang application until all of its groups are bound, and that its
    pods then replace (YuniKorn's task groups: phalanx.admission.yunikorn_placeholders). The gate asks it of each
    pod that arrives and is bound; the simulator creates and deletes what it lists in `create` and `delete` and
    fails the pods in `failed`."""

    create: list[Pod]  # placeholder pods to create
    delete: list[tuple[str, str]]  # (placeholder key, why) to delete
    released: list[Pod]  # application pods released to wait for admission as any pod
    failed: list[tuple[str, str]]  # (pod key, message) of pods failed with their application
    warnings: list[str]  # task groups that could not be read, for stderr
    used: bool

    @property
    def note(self) -> str:
        """What the reservations do not model, for the report's notModelled once used."""
        ...

    def is_placeholder(self, pod_key: str) -> bool: ...

    def arrive(self, pod: Pod, application: str, now: float) -> str:
        """"pass" (scheduled as usual), "hold" (its application reserves) or "fail" (its application failed)."""
        ...

    def message(self, pod_key: str, application: str, namespace: str) -> str | None: ...

    def bound(self, pod_key: str, node: str, now: float) -> bool: ...

    def gone(self, pod_key: str) -> None: ...

    def replacement(self, pod: Pod, application: str) -> tuple[str, str] | None:
        """(placeholder, node) whose place the pod takes, if any."""
        ...

    def wake_at(self) -> float | None: ...

    def tick(self, now: float) -> bool: ...

    def counts(self) -> dict[str, int]: ...
