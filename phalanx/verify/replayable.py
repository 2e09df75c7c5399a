"""Which objects the oracle can replay on its control plane: the API groups the real API server serves with no
custom resource definitions; and which pods it cannot, those the workload controllers it does not run make.

Other schedulers' objects arrive here already translated as `simulate` translates them (a Volcano Job or a
scheduler-plugins PodGroup becomes native Workloads, PodGroups and pods). Queueing objects (Kueue's and
Volcano's queues, Volcano's scheduler configuration) are left out with a note: no profile that `verify` runs reads
them. Anything else the control plane does not serve is one line, exit 2, before a control plane starts. A
Deployment, ReplicaSet, StatefulSet, DaemonSet or CronJob is replayed as an object (a snapshot's holds its pods
already); if Phalanx's run makes pods from one, the oracle cannot (it runs no such controller, and the pods one
makes get the API server's random names): one line, exit 2."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from phalanx.api.fields import object_name
from phalanx.api.kinds import KINDS, group_of, is_namespace, is_queueing_object
from phalanx.api.objects import Source
from phalanx.errors import InputError

SERVED_GROUPS = frozenset({"", "apps", "scheduling.k8s.io", "batch", "policy", "resource.k8s.io", "autoscaling"})
# Controllers the oracle does not run: the pods they make would get the API server's random names.
UNREPLAYED_CONTROLLERS = frozenset({"ReplicaSet", "StatefulSet", "DaemonSet", "CronJob"})

Document = tuple[Source, Mapping[str, Any]]


def replayable(docs: Sequence[Document], *, kueue: bool = False) -> tuple[list[Document], list[str]]:
    """The documents the oracle creates, and a note for each kind left out; InputError (file, object, field
    `kind`) for an object the oracle cannot replay. `kueue`: the real Kueue runs, and takes Kueue's objects
    and the Namespaces its namespaceSelectors match."""
    kept: list[Document] = []
    left: Counter[str] = Counter()
    for source, doc in docs:
        kind, api_version = str(doc.get("kind")), str(doc.get("apiVersion"))
        group = group_of(api_version)
        if kueue and ((group == "kueue.x-k8s.io" and is_queueing_object(doc)) or is_namespace(doc)):
            kept.append((source, doc))
            continue
        if is_queueing_object(doc):
            left[f"{kind} object(s) (queueing objects, which only the kueue and volcano profiles read)"] += 1
            continue
        if kind not in KINDS:
            left[f"{kind} object(s) (a kind Phalanx does not read)"] += 1
            continue
        if group not in SERVED_GROUPS:
            raise InputError(f"verify cannot replay {kind} ({api_version}): the oracle's control plane serves no "
                             "custom resources", file=source.file, obj=object_name(doc), field="kind")
        kept.append((source, doc))
    notes = [f"not replayed: {count} {what}" for what, count in sorted(left.items())]
    return kept, notes


def check_controller_pods(made: Mapping[str, int], paths: Sequence[str]) -> None:
    """InputError when Phalanx's run made pods through a controller the oracle does not run (`made`: owner
    `Kind namespace/name` -> pods)."""
    if made:
        owner, count = next(iter(sorted(made.items())))
        kind = owner.split(" ", 1)[0]
        more = f" (and {len(made) - 1} more owner(s))" if len(made) > 1 else ""
        raise InputError(f"verify cannot replay the {count} pod(s) this {kind} makes{more}: the oracle runs no "
                         f"{kind} controller, and the pods one makes get the API server's random names (simulate "
                         "it; verify its pods as bare pods or a Job)", file=", ".join(paths), obj=owner,
                         field="kind")

