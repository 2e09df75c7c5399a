"""What a snapshot drops from each object: the server's bookkeeping, which no what-if reads and which makes two
snapshots of the same cluster differ. Everything else is kept as the server sent it: a pod's
`metadata.creationTimestamp` and `status.startTime` (its age), `spec.nodeName` (the running load), statuses,
owner references."""

from __future__ import annotations

from typing import Any, Final

DROPPED_METADATA: Final = ("managedFields", "resourceVersion", "uid", "selfLink", "generation")
LAST_APPLIED: Final = "kubectl.kubernetes.io/last-applied-configuration"
# The labels the API server stamps on a Job's template from the Job's uid (with the selector it generates)
JOB_UID_LABELS: Final = ("controller-uid", "batch.kubernetes.io/controller-uid")


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
    if kind == "Job" and api_version == "batch/v1":
        _without_generated_selector(obj)
    return obj


def _without_generated_selector(job: dict[str, Any]) -> None:
    """A Job without `spec.manualSelector: true` gets its selector and two template labels made from its uid;
    with the uid gone they name nothing, and an API server refuses them on a new Job ("`selector` not
    auto-generated"), so they go too: the server that reads the snapshot makes its own (`verify`)."""
    spec = job.get("spec")
    if not isinstance(spec, dict) or spec.get("manualSelector") is True:
        return
    job["spec"] = spec = {key: value for key, value in spec.items() if key != "selector"}
    template = spec.get("template")
    meta = template.get("metadata") if isinstance(template, dict) else None
    labels = meta.get("labels") if isinstance(meta, dict) else None
    if isinstance(template, dict) and isinstance(meta, dict) and isinstance(labels, dict):
        kept = {key: value for key, value in labels.items() if key not in JOB_UID_LABELS}
        spec["template"] = {**template, "metadata": {**meta, "labels": kept}}
