"""How long a pod runs when its manifest does not say (`phalanx.dev/duration`): real manifests, as `kubectl get
-o yaml` prints them, never carry one. Batch pods (a Job's, so a CronJob's and a JobSet's too, and a Kubeflow
training job's) get a default per owner kind; a controller's service pods (ReplicaSet, Deployment, StatefulSet,
DaemonSet, LeaderWorkerSet) and bare pods run for the whole horizon unless `--default-duration` names their
kind (`Pod` for bare pods)."""

from __future__ import annotations

from phalanx.api.quantity import format_duration, parse_duration
from phalanx.api.training import REPLICA_SPECS
from phalanx.errors import InputError

BATCH_KINDS = ("Job", *REPLICA_SPECS)
SERVICE_KINDS = ("ReplicaSet", "StatefulSet", "DaemonSet", "LeaderWorkerSet", "Pod")
DEFAULT_BATCH_SECONDS = 3600.0
DEFAULT_DURATIONS: tuple[tuple[str, float], ...] = tuple((kind, DEFAULT_BATCH_SECONDS) for kind in BATCH_KINDS)
FIELD = "--default-duration"


def parse_default_durations(spec: str) -> tuple[tuple[str, float], ...]:
    """`none` (no defaults), `1h` (every batch kind), or `Job=2h,PyTorchJob=6h,Pod=30m` (these kinds, the
    other batch kinds keeping their default)."""
    text = spec.strip()
    if text == "none":
        return ()
    if "=" not in text:
        return tuple((kind, _seconds(text)) for kind in BATCH_KINDS)
    chosen = dict(DEFAULT_DURATIONS)
    for part in text.split(","):
        kind, sep, value = part.strip().partition("=")
        if not sep or kind not in (*BATCH_KINDS, *SERVICE_KINDS):
            raise InputError(f"{part.strip()!r}: want KIND=DURATION with KIND one of "
                             f"{', '.join((*BATCH_KINDS, *SERVICE_KINDS))}", field=FIELD)
        if value.strip() == "none":
            chosen.pop(kind, None)
        else:
            chosen[kind] = _seconds(value)
    return tuple(chosen.items())


def _seconds(text: str) -> float:
    try:
        seconds = parse_duration(text.strip())
    except ValueError as exc:
        raise InputError(str(exc), field=FIELD) from None
    if seconds <= 0:
        raise InputError(f"must be above 0, got {text.strip()!r}", field=FIELD)
    return seconds


def describe(durations: tuple[tuple[str, float], ...]) -> str:
    return ", ".join(f"{kind} {format_duration(seconds)}" for kind, seconds in durations) or "none"
