"""The peer schedulers that came after Kueue and Volcano, as every reader that is not their own sees them: the
labels and annotations they read on pods and owners, their queue objects and configuration files, what
`phalanx snapshot` captures of them, what `phalanx migrate` names or translates, and the GPU asks and notices of
their pod annotations. Each peer describes itself in its own module (api/<peer>_peer.py); a new peer is that
module and one line in PEERS, beside its admission factory (phalanx/admission/registry.py, which also builds its
profile). The readers below ask this table and never name a peer.

Kueue's and Volcano's marks predate the table and keep their own fields (Queueing.kueue, .volcano)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from phalanx.api.fields import KUEUE_PRIORITY_CLASS_LABEL, KUEUE_QUEUE_LABEL, VOLCANO_QUEUE_ANNOTATION, Meta
from phalanx.api.kai_peer import KAI
from phalanx.api.objects import GpuRequest, Pod, Queueing
from phalanx.api.peer import Key, Peer
from phalanx.api.yunikorn_peer import YUNIKORN

PEERS: tuple[Peer, ...] = (KAI, YUNIKORN)
_KEYS = tuple(key for peer in PEERS for key in peer.keys)


def names() -> tuple[str, ...]:
    return tuple(peer.name for peer in PEERS)


def queueing(meta: Meta) -> Queueing | None:
    """The admission queues the object names (None when it names none: the common case costs nothing)."""
    kueue = meta.labels.get(KUEUE_QUEUE_LABEL)
    volcano = meta.annotations.get(VOLCANO_QUEUE_ANNOTATION)
    marks = tuple((key.field, value) for key in _KEYS if (value := _read(meta, key)) is not None)
    if kueue is None and volcano is None and not marks:
        return None
    return Queueing(kueue=kueue, kueue_priority_class=meta.labels.get(KUEUE_PRIORITY_CLASS_LABEL), volcano=volcano,
                    peer=marks)


def _read(meta: Meta, key: Key) -> str | None:
    for name in key.keys:
        if key.where == "either":
            value = meta.annotations.get(name) or meta.labels.get(name)
            if value:
                return value
            continue
        found = (meta.labels if key.where == "labels" else meta.annotations).get(name)
        if found is not None:
            return found
    return None


def is_queue_object(group: str, kind: object) -> bool:
    return any((group, kind) in peer.queue_kinds for peer in PEERS)


def conf_of(doc: Mapping[str, Any]) -> Peer | None:
    """The peer whose configuration `doc` is (in its ConfigMap, or bare)."""
    return next((peer for peer in PEERS if peer.conf is not None and peer.conf(doc)), None)


def is_bare_conf(doc: Any) -> bool:
    return any(peer.bare_conf is not None and peer.bare_conf(doc) for peer in PEERS)


def gpu_request(annotations: Mapping[str, str], spec: Mapping[str, Any], field: str) -> GpuRequest | None:
    """The GPU share a pod's peer annotations ask for (the first peer that reads one), or None."""
    for peer in PEERS:
        if peer.gpu_request is not None:
            found = peer.gpu_request(annotations, spec, field)
            if found is not None:
                return found
    return None


def notices(pods: Sequence[Pod]) -> list[str]:
    return [text for peer in PEERS if peer.notice is not None and (text := peer.notice(pods)) is not None]
