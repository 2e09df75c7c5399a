"""Load manifests into a simulation's Inputs: every document read and parsed (api), other schedulers' gang
objects and the alpha shapes translated as they go (migrate), cluster-autoscaler node groups picked out
(autoscale), then the cross-object defaults and checks (api.resolve)."""

from __future__ import annotations

import gc
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from phalanx.api.collection import ApiObjects, Seen
from phalanx.api.documents import raw_documents
from phalanx.api.fields import with_generated_name
from phalanx.api.names import first_few
from phalanx.api.objects import DEFAULT_SCHEDULER, TRANSLATED, Pod, Source
from phalanx.api.peers import names as peer_names
from phalanx.api.peers import notices as peer_notices
from phalanx.api.resolve import resolve
from phalanx.autoscale.metrics import MetricsSeries
from phalanx.autoscale.nodegroups import GROUP_ANNOTATIONS, NodeGroup, parse_node_group
from phalanx.errors import InputError
from phalanx.migrate.foreign import Change
from phalanx.migrate.rewrite import Migrator


@dataclass
class Inputs(ApiObjects):
    """Everything one simulation reads, in document order: the API objects and, beside them, node groups, the
    metrics HPAs read and what translating foreign objects did."""

    # Cluster-autoscaler node groups: template Nodes (phalanx.autoscale.nodegroups); their min-size nodes are
    # in `nodes`.
    node_groups: list[NodeGroup] = field(default_factory=list)
    metrics: MetricsSeries | None = None  # `--metrics FILE`: the values HPAs read
    translated: Counter[str] = field(default_factory=Counter)  # foreign or alpha objects read as v1beta1
    migration: list[Change] = field(default_factory=list)  # what each translation did (`phalanx migrate`)


def load_paths(paths: Sequence[str]) -> Inputs:
    """Load and validate every manifest under `paths`; raises InputError on the first problem."""
    # Loading builds millions of small dicts and lists and frees none: the cyclic garbage collector would
    # only walk them again and again, so it rests until the load is done.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _load_paths(paths)
    finally:
        if collecting:
            gc.enable()


def documents_as_read(paths: Sequence[str]) -> list[tuple[Source, Mapping[str, Any]]]:
    """Every object under `paths` as a simulation reads it: other schedulers' gang objects and the alpha shapes
    translated, generated names given (what `phalanx verify` replays on a real API server)."""
    return [(source, with_generated_name(doc, f"{source.file}#{source.index}"))
            for source, doc in _translated(paths, Migrator(), [])]


def _translated(paths: Sequence[str], migrator: Migrator, foreign: list[str]
                ) -> Iterator[tuple[Source, Mapping[str, Any]]]:
    for source, item in raw_documents(paths, foreign):
        try:
            fed = migrator.feed(item)
        except InputError as exc:
            raise exc.at(file=source.file) from None
        for doc, _ in fed:
            yield source, doc
    for i, (doc, _) in enumerate(migrator.finish(), start=1):
        yield Source(TRANSLATED, i), doc


def _load_paths(paths: Sequence[str]) -> Inputs:
    inputs = Inputs()
    seen: Seen = {}
    migrator = Migrator()  # other schedulers' gang objects and the alpha shapes, read as v1beta1
    foreign: list[str] = []
    for source, doc in _translated(paths, migrator, foreign):
        _load_one(doc, source, inputs, seen)
    inputs.translated = migrator.translated
    inputs.migration = migrator.changes
    if foreign:
        inputs.notices.append(f"skipped {len(foreign)} file(s) in folders that hold no Kubernetes objects "
                              f"({first_few(foreign)})")
    resolve(inputs)
    others = _other_schedulers(inputs)
    if others:
        inputs.notices.append(
            f"{sum(others.values())} pending pod(s) and pod template(s) name another scheduler ("
            + ", ".join(f"{name}: {count}" for name, count in sorted(others.items()))
            + "): the simulated profile schedules them as its own, a what-if of moving them to it (the "
            + ", ".join(("volcano", *peer_names()[:-1])) + f" and {peer_names()[-1]} profiles queue them as those "
            "schedulers do)")
    inputs.notices.extend(peer_notices([*inputs.pods, *_templates(inputs)]))
    return inputs


def _templates(inputs: Inputs) -> list[Pod]:
    return [template for obj in (*inputs.jobs, *inputs.controllers())
            if isinstance(template := getattr(obj, "template", None), Pod)]


def _other_schedulers(inputs: Inputs) -> Counter[str]:
    """schedulerName of the pending pods and the pod templates that do not name the default scheduler."""
    return Counter(pod.scheduler_name for pod in (*inputs.pods, *_templates(inputs))
                   if pod.node_name is None and pod.scheduler_name != DEFAULT_SCHEDULER)


def _load_one(doc: Mapping[str, Any], source: Source, inputs: Inputs, seen: Seen) -> None:
    if doc.get("kind") == "Node" and _names_node_group(doc):
        group = parse_node_group(doc, source)
        if group is not None:  # a template: the group's min-size nodes exist from the start
            inputs.node_groups.append(group)
            for node in group.initial_nodes():
                inputs.keep(node, "Node", source, seen, f"Node {node.name}")
            return
    inputs.add(doc, source, seen)


def _names_node_group(doc: Mapping[str, Any]) -> bool:
    meta = doc.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, Mapping) else None
    return isinstance(annotations, Mapping) and any(key in annotations for key in GROUP_ANNOTATIONS)
