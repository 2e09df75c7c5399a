"""Which objects the oracle can replay on its control plane: the API groups the real API server serves with no
custom resource definitions, less the workload controllers whose pods it cannot match to Phalanx's yet.

Other schedulers' objects arrive here already translated as `simulate` translates them (a Volcano Job or a
scheduler-plugins PodGroup becomes native Workloads, PodGroups and pods). Queueing objects (Kueue's and
Volcano's queues, Volcano's scheduler configuration) are left out with a note: no profile that `verify` runs reads
them. Anything else the control plane does not serve is one line, exit 2, before a control plane starts."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from phalanx.api.fields import object_name
from phalanx.api.kinds import group_of, is_queueing_object
from phalanx.api.objects import Source
from phalanx.errors import InputError

SERVED_GROUPS = frozenset({"", "scheduling.k8s.io", "batch", "policy", "resource.k8s.io", "autoscaling"})
# Served, but their pods would get the API server's random names from controllers the oracle does not run.
UNMATCHED = frozenset({("apps", "Deployment"), ("apps", "ReplicaSet"), ("apps", "StatefulSet"),
                       ("apps", "DaemonSet"), ("batch", "CronJob")})

Document = tuple[Source, Mapping[str, Any]]


def replayable(docs: Sequence[Document]) -> tuple[list[Document], list[str]]:
    """The documents the oracle creates, and a note for each kind left out; InputError (file, object, field
    `kind`) for an object the oracle cannot replay."""
    kept: list[Document] = []
    left: Counter[str] = Counter()
    for source, doc in docs:
        kind, api_version = str(doc.get("kind")), str(doc.get("apiVersion"))
        group = group_of(api_version)
        if is_queueing_object(doc):
            left[kind] += 1
            continue
        if (group, kind) in UNMATCHED:
            raise InputError(f"verify cannot replay a {kind} yet: the oracle runs no {kind} controller, and the "
                             "pods one makes get the API server's random names (simulate it; verify its pods as "
                             "bare pods or a Job)", file=source.file, obj=object_name(doc), field="kind")
        if group not in SERVED_GROUPS:
            raise InputError(f"verify cannot replay {kind} ({api_version}): the oracle's control plane serves no "
                             "custom resources", file=source.file, obj=object_name(doc), field="kind")
        kept.append((source, doc))
    notes = [f"not replayed: {count} {kind} object(s) (queueing objects, which only the kueue and volcano profiles "
             "read)" for kind, count in sorted(left.items())]
    return kept, notes
