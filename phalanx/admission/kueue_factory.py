"""Kueue as the simulator's admission gate builds it: a KueueAdmission over the input's Kueue objects; a
workload is queued only when it names a LocalQueue (Kueue's `manageJobsWithoutQueueName: false`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from phalanx.admission.base import SCHEDULING_GATED, AdmissionPolicy, NodeScoring, Reservations
from phalanx.admission.kueue_config import KueueConfig, parse_kueue_config
from phalanx.api.fields import Manifest, Meta, labels, mapping, object_name
from phalanx.api.kinds import is_kueue_config, is_namespace
from phalanx.api.objects import Pod, Queueing, Source
from phalanx.errors import InputError


def namespace_labels(docs: Sequence[tuple[Manifest, Source]]) -> dict[str, dict[str, str]]:
    """The labels of each Namespace among `docs`, as a ClusterQueue's namespaceSelector sees them (the API
    server adds `kubernetes.io/metadata.name`; Kueue adds it too for a namespace it has not seen)."""
    out: dict[str, dict[str, str]] = {}
    for doc, source in docs:
        if not is_namespace(doc):
            continue
        try:
            meta = Meta(doc, namespaced=False)
            out[meta.name] = labels(mapping(doc.get("metadata"), "metadata").get("labels"), "metadata.labels")
        except InputError as exc:
            raise exc.at(file=source.file, obj=object_name(doc)) from None
    return out


def kueue_config(docs: Sequence[tuple[Manifest, Source]]) -> KueueConfig:
    """Kueue's Configuration among `docs` (bare or in its ConfigMap), or the defaults without one; a second one
    is an error (Kueue runs with one)."""
    config: KueueConfig | None = None
    first: Source | None = None
    for doc, source in docs:
        if not is_kueue_config(doc):
            continue
        if first is not None:
            raise InputError(f"a second Kueue Configuration (the first is in {first.file}, document "
                             f"{first.index}): Kueue runs with one", file=source.file, obj=object_name(doc),
                             field="kind")
        try:
            config = parse_kueue_config(doc)
        except InputError as exc:
            raise exc.at(file=source.file) from None
        first = source
    return config or KueueConfig()


class KueueFactory:
    name = "kueue"
    requeues = True
    whole = True
    per_pod = False
    held_message = SCHEDULING_GATED

    def load(self, queue_docs: Sequence[tuple[Manifest, Source]], capacity: Mapping[str, int]) -> AdmissionPolicy:
        from phalanx.admission.kueue import load_kueue
        from phalanx.admission.kueue_objects import is_kueue_object

        return load_kueue([(doc, source) for doc, source in queue_docs if is_kueue_object(doc)],
                          namespace_labels(queue_docs), kueue_config(queue_docs))

    def queue(self, queueing: Sequence[Queueing | None]) -> str | None:
        return next((q.kueue for q in queueing if q is not None and q.kueue), None)

    def priority_class(self, queueing: Queueing) -> str | None:
        return queueing.kueue_priority_class

    def not_queued(self, kind: str, key: str, queueing: Queueing) -> str | None:
        return None  # Kueue queues them whole (`whole`)

    def node_scoring(self, queue_docs: Sequence[tuple[Manifest, Source]]) -> NodeScoring | None:
        return None

    def application(self, pod: Pod, queueing: Queueing | None) -> str:
        return ""  # admits whole workloads

    def reservations(self, policy: AdmissionPolicy) -> Reservations | None:
        return None
