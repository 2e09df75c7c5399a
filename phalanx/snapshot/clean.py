"""What a snapshot drops from each object: the server's bookkeeping, which no what-if reads and which makes two
snapshots of the same cluster differ. Everything else is kept as the server sent it: a pod's
`metadata.creationTimestamp` and `status.startTime` (its age), `spec.nodeName` (the running load), statuses,
owner references."""

from __future__ import annotations

from typing import Any, Final

DROPPED_METADATA: Final = ("managedFields", "resourceVersion", "uid", "selfLink", "generation")
LAST_APPLIED: Final = "kubectl.kubernetes.io/last-applied-configuration"


def clean(item: dict[str, Any], api_version: str, kind: str) -> dict[str, Any]:
    """The object as `kubectl get -o yaml` prints it (apiVersion and kind first), without the noise."""
    obj = {"apiVersion": api_version, "kind": kind,
           **{key: value for key, value in item.items() if key not in ("apiVersion", "kind")}}
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        meta = {key: value for key, value in meta.items() if key not in DROPPED_METADATA}
        annotations = meta.get("annotations")
        if isinstance(annotations, dict) and LAST_APPLIED in annotations:
            kept = {key: value for key, value in annotations.items() if key != LAST_APPLIED}
            if kept:
                meta["annotations"] = kept
            else:
                del meta["annotations"]
        obj["metadata"] = meta
    return obj
