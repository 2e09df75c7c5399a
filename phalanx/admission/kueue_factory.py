"""Kueue as the simulator's admission gate builds it: a KueueAdmission over the input's Kueue objects; a
workload is queued only when it names a LocalQueue (Kueue's `manageJobsWithoutQueueName: false`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from phalanx.admission.base import AdmissionPolicy, NodeScoring
from phalanx.api.fields import Manifest
from phalanx.api.objects import Queueing, Source


class KueueFactory:
    name = "kueue"
    requeues = True

    def load(self, queue_docs: Sequence[tuple[Manifest, Source]], capacity: Mapping[str, int]) -> AdmissionPolicy:
        from phalanx.admission.kueue import load_kueue
        from phalanx.admission.kueue_objects import is_kueue_object

        return load_kueue([(doc, source) for doc, source in queue_docs if is_kueue_object(doc)])

    def queue(self, queueing: Sequence[Queueing | None]) -> str | None:
        return next((q.kueue for q in queueing if q is not None and q.kueue), None)

    def not_queued(self, kind: str, key: str, queueing: Queueing) -> str | None:
        if not queueing.kueue:
            return None
        return (f"{kind} {key} names LocalQueue {queueing.kueue}: Kueue's admission of a {kind} as one workload "
                "is not modelled; its pods are scheduled without admission")

    def node_scoring(self, queue_docs: Sequence[tuple[Manifest, Source]]) -> NodeScoring | None:
        return None
