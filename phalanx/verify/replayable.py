"""Which objects the oracle can replay on its control plane: the API groups the real API server serves with no
custom resource definitions; and which pods it cannot, those the workload controllers it does not run make.

JobSets and LeaderWorkerSets are made by their real controllers (`phalanx.verify.integrations_plane`).
Other schedulers' objects arrive here already translated as `simulate` translates them (a Volcano Job or a
scheduler-plugins PodGroup becomes native Workloads, PodGroups and pods). Queueing objects (Kueue's and
Volcano's queues, Volcano's scheduler configuration) are left out with a note: no profile that `verify` runs reads
them. Anything else the control plane does not serve is one line, exit 2, before a control plane starts. The
pods a Deployment, ReplicaSet, StatefulSet or DaemonSet makes are made by the real controllers
(`phalanx.verify.controller_pods`); a CronJob's Jobs are made as Phalanx's run made them (its schedule follows
the wall clock); a workload an HPA scales cannot be replayed (no HPA controller runs): one line, exit 2."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from phalanx.api.fields import object_name
from phalanx.api.kinds import KINDS, group_of, is_kueue_config, is_namespace, is_queueing_object
from phalanx.api.objects import Source
from phalanx.errors import InputError
from phalanx.inputs.load import Inputs
from phalanx.verify.controller_pods import ControllerPods

# The groups whose real controllers (JobSet, LeaderWorkerSet) the oracle runs (beside the real Kueue under `kueue`).
INTEGRATED = frozenset({"jobset.x-k8s.io", "leaderworkerset.x-k8s.io"})
SERVED_GROUPS = frozenset({"", "apps", "scheduling.k8s.io", "batch", "policy", "resource.k8s.io", "autoscaling"})

Document = tuple[Source, Mapping[str, Any]]


def replayable(docs: Sequence[Document], *, kueue: bool = False) -> tuple[list[Document], list[str]]:
    """The documents the oracle creates, and a note for each kind left out; InputError (file, object, field
    `kind`) for an object the oracle cannot replay. `kueue`: the real Kueue runs, and takes Kueue's objects
    and the Namespaces its namespaceSelectors match. JobSets and LeaderWorkerSets are replayed under every profile:
    their real controllers run in the oracle."""
    kept: list[Document] = []
    left: Counter[str] = Counter()
    for source, doc in docs:
        kind, api_version = str(doc.get("kind")), str(doc.get("apiVersion"))
        group = group_of(api_version)
        if group in INTEGRATED or (kueue and ((group == "kueue.x-k8s.io" and is_queueing_object(doc))
                                              or is_namespace(doc))):
            kept.append((source, doc))
            continue
        if kueue and is_kueue_config(doc):
            continue  # the real Kueue's own configuration: `verify` hands it its fields
        if is_queueing_object(doc):
            left[f"{kind} object(s) (queueing objects, which only the kueue and volcano profiles read)"] += 1
            continue
        if kind not in KINDS:
            left[f"{kind} object(s) (a kind Phalanx does not read)"] += 1
            continue
        if group not in SERVED_GROUPS:
            raise InputError(f"verify cannot replay {kind} ({api_version}): the oracle's control plane serves no "
                             "custom resources but JobSet and LeaderWorkerSet", file=source.file,
                             obj=object_name(doc), field="kind")
        kept.append((source, doc))
    notes = [f"not replayed: {count} {what}" for what, count in sorted(left.items())]
    return kept, notes


def check_scaled(inputs: Inputs, pods: ControllerPods, paths: Sequence[str]) -> None:
    """InputError when an HorizontalPodAutoscaler scales a workload whose pods the replay makes: the oracle runs
    no HPA controller (the metrics it reads are Phalanx's `--metrics`, which no metrics server serves there)."""
    for hpa in inputs.hpas:
        owner = f"{hpa.target.kind} {hpa.namespace}/{hpa.target.name}"
        if owner in pods.made:
            raise InputError(f"verify cannot replay what this HorizontalPodAutoscaler scales ({owner}): the oracle "
                             "runs no HPA controller and serves no metrics", file=", ".join(paths),
                             obj=f"HorizontalPodAutoscaler {hpa.namespace}/{hpa.name}", field="spec.scaleTargetRef")

