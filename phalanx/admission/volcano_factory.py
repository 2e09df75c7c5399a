"""Volcano as the simulator's admission gate builds it: a VolcanoAdmission over the input's Queues and its
`volcano-scheduler.conf` (the file as Volcano ships it, or the ConfigMap holding it); every workload is queued,
in the Queue it names or `default`, and the conf's binpack or nodeorder plugin sets the node scoring."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from phalanx.admission.base import WAITING_FOR_ADMISSION, AdmissionPolicy, NodeScoring, Reservations
from phalanx.admission.volcano_objects import DEFAULT_QUEUE
from phalanx.api.fields import Manifest
from phalanx.api.kinds import is_volcano_conf
from phalanx.api.objects import Pod, Queueing, Source
from phalanx.errors import InputError


class VolcanoFactory:
    name = "volcano"
    requeues = False  # Volcano forgets an evicted job, which comes back as its pods return
    whole = False  # Volcano queues the PodGroups the operators make, in the Queue they name
    per_pod = False
    held_message = WAITING_FOR_ADMISSION

    def load(self, queue_docs: Sequence[tuple[Manifest, Source]], capacity: Mapping[str, int]) -> AdmissionPolicy:
        from phalanx.admission.volcano import load_volcano
        from phalanx.admission.volcano_conf import parse_volcano_conf
        from phalanx.admission.volcano_objects import is_queue, parse_queue

        queues: list[Manifest] = []
        conf = None
        for doc, source in queue_docs:
            try:
                if is_queue(doc):
                    parse_queue(doc)
                    queues.append(doc)
                elif is_volcano_conf(doc) and conf is None:
                    conf = parse_volcano_conf(doc)
            except InputError as exc:
                raise exc.at(file=source.file) from None
        return load_volcano(queues, conf, capacity=capacity)

    def queue(self, queueing: Sequence[Queueing | None]) -> str | None:
        return next((q.volcano for q in queueing if q is not None and q.volcano), DEFAULT_QUEUE)

    def priority_class(self, queueing: Queueing) -> str | None:
        return None

    def not_queued(self, kind: str, key: str, queueing: Queueing) -> str | None:
        if not queueing.volcano:
            return None
        return (f"{kind} {key} names Queue {queueing.volcano}: the queue is not passed to the pods and Jobs it "
                f"makes, which wait in Queue {DEFAULT_QUEUE}")

    def node_scoring(self, queue_docs: Sequence[tuple[Manifest, Source]]) -> NodeScoring | None:
        """binpack: most-allocated with its weights; nodeorder alone: least-allocated and balance."""
        from phalanx.admission.volcano_conf import default_conf, parse_volcano_conf, placement_scoring

        conf = default_conf()
        for doc, source in queue_docs:
            if is_volcano_conf(doc):
                try:
                    conf = parse_volcano_conf(doc)
                except InputError as exc:
                    raise exc.at(file=source.file) from None
                break
        return placement_scoring(conf)

    def application(self, pod: Pod, queueing: Queueing | None) -> str:
        return ""  # admits whole workloads

    def reservations(self, policy: AdmissionPolicy) -> Reservations | None:
        return None
