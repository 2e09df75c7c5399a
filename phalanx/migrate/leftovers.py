"""What another scheduler's manifests keep after a migration that v1.37 alone does not act on, for `phalanx
migrate`'s warnings: a pod or pod template naming a peer's scheduler (`schedulerName: volcano`,
`kai-scheduler`, `yunikorn`: no such scheduler runs, so the pods would stay Pending), the peers' queue labels
and annotations (read only by the peer), and the peers' queue objects (no native equivalent).

`simulate` does not warn of these: its kueue, volcano, kai and yunikorn profiles read the queues, and loading
names pods for other schedulers already (phalanx.inputs.load)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from phalanx.api.kinds import group_of, is_volcano_conf
from phalanx.api.peers import PEERS, conf_of
from phalanx.migrate.templates import PATHS, at

PEER_SCHEDULERS = {"volcano": "Volcano", **{name: peer.whose for peer in PEERS for name in peer.scheduler_names}}
# (labels or annotations, key, whose)
QUEUE_KEYS: tuple[tuple[str, str, str], ...] = (
    ("labels", "kueue.x-k8s.io/queue-name", "Kueue"),
    ("annotations", "scheduling.volcano.sh/queue-name", "Volcano"),
    *((where, key, peer.whose) for peer in PEERS for where, key in peer.queue_marks),
)
# Pod annotations a peer acts on that v1.37 has no field for: (key, what the native route is)
PEER_ANNOTATIONS: dict[str, str] = {key: why for peer in PEERS for key, why in peer.annotations.items()}
# (API group, kind) -> whose queue object
QUEUE_OBJECTS: dict[tuple[str, str], str] = {
    **{("kueue.x-k8s.io", kind): "Kueue" for kind in ("ClusterQueue", "LocalQueue", "Cohort", "ResourceFlavor",
                                                      "WorkloadPriorityClass")},
    ("scheduling.volcano.sh", "Queue"): "Volcano",
    **{kind: peer.whose for peer in PEERS for kind in peer.queue_kinds},
}


def leftovers(doc: Mapping[str, Any], own_metadata: bool = True) -> list[str]:
    """The warnings for one document as `migrate` writes it; `own_metadata=False` for an object a translation
    made (its translation warned of the queue already), whose pod templates are still looked at."""
    whose = QUEUE_OBJECTS.get((group_of(doc.get("apiVersion")), str(doc.get("kind"))))
    if whose is not None:
        profile = f", and for the {whose.lower()} profile"
        return [f"a {whose} queue object: v1.37 has no native equivalent (queues and quotas are {whose}'s own; "
                f"kept for {whose}{profile})"]
    if is_volcano_conf(doc):
        return ["Volcano's scheduler configuration: v1.37 has no native equivalent (kept for the volcano "
                "profile)"]
    conf = conf_of(doc)
    if conf is not None:
        return [f"{conf.whose}'s {conf.conf_name}: v1.37 has no native equivalent (queues and quotas are "
                f"{conf.whose}'s own; kept for {conf.whose}, and for the {conf.name} profile)"]
    out: list[str] = []
    for where, pod in _pods(doc):
        spec = pod.get("spec")
        scheduler = spec.get("schedulerName") if isinstance(spec, Mapping) else None
        if isinstance(scheduler, str) and scheduler in PEER_SCHEDULERS:
            out.append(f"{where}spec.schedulerName {scheduler}: {PEER_SCHEDULERS[scheduler]}'s scheduler; without "
                       "it the pods stay Pending (drop it for the default scheduler)")
    for where, obj in ((("", doc),) if own_metadata else ()) + tuple(_pods(doc)):
        meta = obj.get("metadata")
        for part, key, peer in QUEUE_KEYS:
            values = meta.get(part) if isinstance(meta, Mapping) else None
            if isinstance(values, Mapping) and key in values:
                out.append(f"{where}metadata.{part}[{key}] {values[key]}: {peer}'s queue; v1.37 has no native "
                           f"equivalent (only {peer} reads it)")
    for where, pod in _pods(doc):
        meta = pod.get("metadata")
        annotations = meta.get("annotations") if isinstance(meta, Mapping) else None
        if isinstance(annotations, Mapping):
            out.extend(f"{where}metadata.annotations[{key}]: {why}" for key, why in PEER_ANNOTATIONS.items()
                       if key in annotations)
    return out


def _pods(doc: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """The pod (a Pod itself) or pod templates in `doc`, each with the path before its fields."""
    kind = str(doc.get("kind"))
    if kind == "Pod":
        yield "", doc
        return
    path = PATHS.get(kind)
    if path is not None:
        template = at(doc, path)
        if template is not None:
            yield ".".join(path) + ".", template
        return
    if kind == "JobSet":
        jobs = at(doc, ("spec",))
        replicated = jobs.get("replicatedJobs") if jobs is not None else None
        for i, item in enumerate(replicated if isinstance(replicated, list) else []):
            template = at(item, ("template", "spec", "template")) if isinstance(item, Mapping) else None
            if template is not None:
                yield f"spec.replicatedJobs[{i}].template.spec.template.", template

