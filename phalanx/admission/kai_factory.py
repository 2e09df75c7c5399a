"""KAI Scheduler as the simulator's admission gate builds it: a KaiAdmission over the input's KAI Queues
(`scheduling.run.ai/v2`). KAI's pod grouper makes one PodGroup per top owner (a JobSet, a Kubeflow job, a
LeaderWorkerSet group) in the queue its `kai.scheduler/queue` label names."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from phalanx.admission.base import WAITING_FOR_ADMISSION, AdmissionPolicy, NodeScoring, Reservations
from phalanx.admission.kai import DEFAULT_QUEUE
from phalanx.api.fields import Manifest
from phalanx.api.kai_peer import PRIORITY_CLASS, QUEUE
from phalanx.api.objects import Pod, Queueing, Source
from phalanx.errors import InputError


class KaiFactory:
    name = "kai"
    requeues = False  # an evicted PodGroup's pods are deleted; its owner recreates them and it queues again
    whole = True  # the pod grouper groups a JobSet, a Kubeflow job or a LeaderWorkerSet group as one PodGroup
    per_pod = False
    held_message = WAITING_FOR_ADMISSION

    def load(self, queue_docs: Sequence[tuple[Manifest, Source]], capacity: Mapping[str, int]) -> AdmissionPolicy:
        from phalanx.admission.kai import load_kai
        from phalanx.admission.kai_objects import is_queue, parse_queue

        queues: list[Manifest] = []
        files: dict[str, str | None] = {}
        for doc, source in queue_docs:
            if is_queue(doc):
                try:
                    queue = parse_queue(doc)
                except InputError as exc:
                    raise exc.at(file=source.file) from None
                queues.append(doc)
                files.setdefault(f"Queue {queue.name}", source.file)
        try:
            return load_kai(queues, capacity)
        except InputError as exc:  # the hierarchy: a missing parent, a cycle, a duplicate
            raise exc.at(file=files.get(exc.obj or "")) from None

    def queue(self, queueing: Sequence[Queueing | None]) -> str | None:
        """The first queue named; else `default-queue`: KAI's pod grouper puts a workload without the
        `kai.scheduler/queue` label there (podgrouper/plugins/defaultgrouper CalcPodGroupQueue)."""
        return next((name for q in queueing if q is not None and (name := q.value(QUEUE))), DEFAULT_QUEUE)

    def priority_class(self, queueing: Queueing) -> str | None:
        return queueing.value(PRIORITY_CLASS)

    def not_queued(self, kind: str, key: str, queueing: Queueing) -> str | None:
        return None  # whole: every kind is queued

    def node_scoring(self, queue_docs: Sequence[tuple[Manifest, Source]]) -> NodeScoring | None:
        return None  # KAI's binpack/spread placement strategy is a scheduler setting, not in the Queue objects

    def application(self, pod: Pod, queueing: Queueing | None) -> str:
        return ""  # admits whole workloads

    def reservations(self, policy: AdmissionPolicy) -> Reservations | None:
        return None
