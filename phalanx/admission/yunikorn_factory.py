"""YuniKorn as the simulator's admission gate builds it: a YunikornAdmission over the input's `queues.yaml`
(the `yunikorn-configs` ConfigMap or the bare file; YuniKorn's default configuration without one). Every
workload is an application; the queue it names (`yunikorn.apache.org/queue` or `queue`) is what the
`provided` placement rule reads, and with none the placement rules decide (the default configuration's `tag`
rule puts it in `root.<namespace>`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from phalanx.admission.base import WAITING_FOR_ADMISSION, AdmissionPolicy, NodeScoring, Reservations
from phalanx.api.fields import Manifest
from phalanx.api.kinds import is_namespace
from phalanx.api.objects import Pod, Queueing, Source
from phalanx.api.yunikorn_peer import APP, QUEUE
from phalanx.api.yunikorn_peer import is_conf as is_yunikorn_conf
from phalanx.errors import InputError


class YunikornFactory:
    name = "yunikorn"
    requeues = False  # an evicted application's pods come back through the gate, as the k8shim re-adds them
    whole = False  # the k8shim groups pods into applications by applicationId; the gate's workloads stand in
    per_pod = True  # the k8shim hands YuniKorn each pod, of the application its labels name
    held_message = WAITING_FOR_ADMISSION

    def load(self, queue_docs: Sequence[tuple[Manifest, Source]], capacity: Mapping[str, int]) -> AdmissionPolicy:
        from phalanx.admission.yunikorn import load_yunikorn
        from phalanx.admission.yunikorn_conf import parse_yunikorn_conf
        from phalanx.admission.yunikorn_namespaces import read_namespaces

        conf = None
        for doc, source in queue_docs:
            if is_yunikorn_conf(doc) and conf is None:
                try:
                    conf = parse_yunikorn_conf(doc)
                except InputError as exc:
                    raise exc.at(file=source.file) from None
        namespaces, warnings = read_namespaces(doc for doc, _ in queue_docs if is_namespace(doc))
        policy = load_yunikorn(conf, capacity)
        policy.set_namespaces(namespaces, warnings)
        return policy

    def queue(self, queueing: Sequence[Queueing | None]) -> str | None:
        """The queue the application is submitted to: the first named, else "" (placement rules decide)."""
        return next((name for q in queueing if q is not None and (name := q.value(QUEUE))), "")

    def priority_class(self, queueing: Queueing) -> str | None:
        return None

    def not_queued(self, kind: str, key: str, queueing: Queueing) -> str | None:
        queue = queueing.value(QUEUE)
        if not queue:
            return None
        return (f"{kind} {key} names YuniKorn queue {queue}: the k8shim reads the queue from each "
                "pod, and the pods of what this object makes do not carry it unless their template does")

    def node_scoring(self, queue_docs: Sequence[tuple[Manifest, Source]]) -> NodeScoring | None:
        return None  # YuniKorn's node sorting (fair, binpacking) is not mapped: the profile's scoring places pods

    def application(self, pod: Pod, queueing: Queueing | None) -> str:
        """The application a pod belongs to, as the k8shim names it (GetApplicationIDFromPod): the app-id it
        carries, else one application of every such pod in its namespace."""
        app = queueing.value(APP) if queueing is not None else None
        return app or f"yunikorn-{pod.namespace}-autogen"

    def reservations(self, policy: AdmissionPolicy) -> Reservations | None:
        """Task groups reserve with placeholder pods first (phalanx/admission/yunikorn_placeholders.py)."""
        from phalanx.admission.yunikorn_placeholders import Reservations as Placeholders

        return Placeholders(refuse=getattr(policy, "task_group_refusal", None))
