"""What a peer scheduler is to the readers that are not its own (phalanx.api.peers holds the table): its marks on
pods and owners, its queue objects and configuration, what `snapshot` captures, what `migrate` names or translates,
and what its pod annotations ask of GPUs."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from phalanx.api.objects import GpuRequest, Pod


class Key(NamedTuple):
    """A mark the peer reads: `keys` tried in order, each in `where` (`labels`, `annotations`, or `either`:
    the annotation, then the label); Queueing.peer holds the first value found under `field`."""

    field: str
    keys: tuple[str, ...]
    where: str = "labels"


class ForeignGang(NamedTuple):
    """A peer's gang object that `migrate` writes as a native Workload and PodGroup (`minMember`,
    `priorityClassName`), the queue its spec names kept as the mark the peer reads on pods (`queue`)."""

    group: str
    kind: str
    label: str  # how the migration names it ("KAI PodGroup")
    minimum: int | None  # minMember's minimum in the peer's CRD
    queue: tuple[str, str] | None = None  # (labels or annotations, key)


class Capture(NamedTuple):
    """A kind `phalanx snapshot` reads for the peer (as phalanx.snapshot.kinds.Captured)."""

    kind: str
    group: str
    versions: tuple[str, ...]
    plural: str
    file: str


@dataclass(frozen=True)
class Peer:
    name: str  # its profile and admission policy
    whose: str  # as messages name it
    keys: tuple[Key, ...] = ()
    scheduler_names: tuple[str, ...] = ()  # the schedulerName its pods give
    queue_kinds: tuple[tuple[str, str], ...] = ()  # (API group, kind) of its queue objects
    conf: Callable[[Mapping[str, Any]], bool] | None = None  # its configuration: in its ConfigMap, or bare
    bare_conf: Callable[[Any], bool] | None = None  # its configuration file as shipped (no kind, no metadata)
    conf_name: str = ""  # the configuration file's name
    config_maps: tuple[str, ...] = ()  # the ConfigMaps `snapshot` reads for it
    captured: tuple[Capture, ...] = ()
    queue_marks: tuple[tuple[str, str], ...] = ()  # (labels or annotations, key) only the peer reads: migrate
    annotations: Mapping[str, str] = field(default_factory=dict)  # pod annotations with no native field -> why
    gangs: tuple[ForeignGang, ...] = ()
    pointers: tuple[tuple[str, str], ...] = ()  # where a pod names its gang object: (labels or annotations, key)
    # migrate: the module that writes an application's gang from its pods' marks (pointer, notes, Application)
    applications: str = ""
    gpu_request: Callable[[Mapping[str, str], Mapping[str, Any], str], GpuRequest | None] | None = None
    notice: Callable[[Sequence[Pod]], str | None] | None = None  # what loading says of pods only it reads
    # its builtin profile, as a profile file writes it (phalanx.scheduler.profiles.profile_from_config), over the
    # v1.37 workload gates
    profile: Mapping[str, Any] = field(default_factory=dict)
