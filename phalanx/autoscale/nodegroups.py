"""Node groups for the cluster-autoscaler model, read from ordinary Node manifests.

A node group is a template Node: the Node manifest describes one node of the group (allocatable, labels,
taints) and its annotations say how the group scales. The sizes use the annotations of cluster-autoscaler's
Cluster API provider (there they sit on a MachineDeployment or MachineSet); what that provider has no
annotation for is Phalanx's own:

    phalanx.dev/node-group                                       the group's name; marks the Node as a template
    cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size  default 0; the group starts with this many nodes
    cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size  required
    phalanx.dev/provisioning-delay                               duration from request to a Ready node, default 2m
    phalanx.dev/cost-per-hour                                    a decimal per node-hour, default 0

A template is not a node of the cluster. The group's nodes are copies named `<group>-<i>` (i from 0) with the
label `phalanx.dev/node-group: <group>`; the first min-size of them exist at time 0.

The sizes are read as the provider reads them (strconv.Atoi: ASCII digits after an optional sign; a negative
size is invalid). A group holds at most MAX_GROUP_SIZE nodes, the most Kubernetes supports in one cluster: a
larger min-size is an error (those nodes would exist from the start), a larger max-size is capped (the report's
`notModelled` says so).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from phalanx.api.fields import Manifest, Meta, object_name
from phalanx.api.objects import Node, Source
from phalanx.api.parse import parse_node
from phalanx.api.quantity import MAX_INT64, parse_duration
from phalanx.errors import InputError

NODE_GROUP_ANNOTATION = "phalanx.dev/node-group"
MIN_SIZE_ANNOTATION = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size"
MAX_SIZE_ANNOTATION = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size"
PROVISIONING_DELAY_ANNOTATION = "phalanx.dev/provisioning-delay"
COST_ANNOTATION = "phalanx.dev/cost-per-hour"
NODE_GROUP_LABEL = "phalanx.dev/node-group"  # on every node made from a template
HOSTNAME_LABEL = "kubernetes.io/hostname"
DEFAULT_PROVISIONING_DELAY = 120.0
GROUP_ANNOTATIONS = (NODE_GROUP_ANNOTATION, MIN_SIZE_ANNOTATION, MAX_SIZE_ANNOTATION,
                     PROVISIONING_DELAY_ANNOTATION, COST_ANNOTATION)
# Node names are DNS subdomains; `<group>-<i>` must stay one, so the group name is held to a DNS label.
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_LABEL_MAX = 63
_DECIMAL = re.compile(r"^[0-9]+(\.[0-9]+)?$")
_SIZE = re.compile(r"([+-]?)([0-9]+)", re.ASCII)
# Kubernetes' largest supported cluster ("Considerations for large clusters": at most 5,000 nodes).
MAX_GROUP_SIZE = 5000


@dataclass(frozen=True, slots=True)
class NodeGroup:
    """A group of identical nodes the autoscaler can add to or remove from, between min_size and max_size."""

    name: str
    template: Node
    min_size: int
    max_size: int
    provisioning_delay: float = DEFAULT_PROVISIONING_DELAY
    cost_per_hour: float = 0.0
    max_size_given: int | None = None  # the annotation's max-size when it was above MAX_GROUP_SIZE

    def node_name(self, index: int) -> str:
        return f"{self.name}-{index}"

    def new_node(self, index: int, arrival: float = 0.0) -> Node:
        """The group's node number `index`: a copy of the template under its own name, labelled with the group
        and, as its kubelet would label it, with its hostname."""
        name = self.node_name(index)
        labels = {**self.template.labels, NODE_GROUP_LABEL: self.name, HOSTNAME_LABEL: name}
        return replace(self.template, name=name, allocatable=dict(self.template.allocatable), labels=labels,
                       arrival=arrival)

    def initial_nodes(self) -> list[Node]:
        """The min_size nodes that exist at time 0."""
        return [self.new_node(i) for i in range(self.min_size)]


def group_of(node: Node) -> str | None:
    """The node group a node was made from (its label), None for a node no group owns."""
    return node.labels.get(NODE_GROUP_LABEL)


def _clipped(raw: str) -> str:
    """The value as messages quote it, short enough for one line."""
    text = repr(raw)
    return text if len(text) <= 40 else f"{text[:30]}…({len(raw)} characters)"


def _size(annotations: Mapping[str, str], key: str, default: int | None) -> int:
    """A size as the provider's strconv.Atoi reads it, then held to int64 and to non-negative values."""
    field = f"metadata.annotations[{key}]"
    if key not in annotations:
        if default is None:
            raise InputError("is required on a node group template", field=field)
        return default
    raw = annotations[key]
    match = _SIZE.fullmatch(raw)
    if match is None:
        raise InputError(f"must be a whole number, got {_clipped(raw)}", field=field)
    sign, digits = match.group(1), match.group(2).lstrip("0") or "0"
    if len(digits) > 19 or int(digits) > MAX_INT64:  # never int() of thousands of digits
        raise InputError(f"{_clipped(raw)} is out of range (at most {MAX_INT64})", field=field)
    if sign == "-" and digits != "0":
        raise InputError(f"must not be negative, got {_clipped(raw)}", field=field)
    return int(digits)


def _group_name(annotations: Mapping[str, str]) -> str:
    field = f"metadata.annotations[{NODE_GROUP_ANNOTATION}]"
    name = annotations[NODE_GROUP_ANNOTATION].strip()
    if not name:
        raise InputError("must name the node group, got an empty value", field=field)
    if len(name) > _DNS_LABEL_MAX or not _DNS_LABEL.match(name):
        raise InputError(f"must be a DNS label (lower-case letters, digits and '-', at most {_DNS_LABEL_MAX}), "
                         f"got {name!r}", field=field)
    return name


def _delay(annotations: Mapping[str, str]) -> float:
    if PROVISIONING_DELAY_ANNOTATION not in annotations:
        return DEFAULT_PROVISIONING_DELAY
    try:
        return parse_duration(annotations[PROVISIONING_DELAY_ANNOTATION])
    except ValueError as exc:
        raise InputError(str(exc), field=f"metadata.annotations[{PROVISIONING_DELAY_ANNOTATION}]") from None


def _cost(annotations: Mapping[str, str]) -> float:
    if COST_ANNOTATION not in annotations:
        return 0.0
    raw = annotations[COST_ANNOTATION].strip()
    if not _DECIMAL.match(raw) or not math.isfinite(float(raw)):
        raise InputError(f"must be a non-negative decimal such as 0.75, got {annotations[COST_ANNOTATION]!r}",
                         field=f"metadata.annotations[{COST_ANNOTATION}]")
    return float(raw)


def parse_node_group(doc: Manifest, source: Source) -> NodeGroup | None:
    """The node group a Node manifest describes, or None when the Node is an ordinary node (no group
    annotation). Bad input raises a one-line InputError naming the file, the Node and the annotation."""
    try:
        annotations = Meta(doc, namespaced=False).annotations
        if NODE_GROUP_ANNOTATION not in annotations:
            stray = [key for key in GROUP_ANNOTATIONS if key in annotations]
            if stray:
                raise InputError(f"is required with {stray[0]} (it names the node group and makes the Node a "
                                 "template)", field=f"metadata.annotations[{NODE_GROUP_ANNOTATION}]")
            return None
        template = parse_node(doc, source)
        name = _group_name(annotations)
        min_size = _size(annotations, MIN_SIZE_ANNOTATION, 0)
        max_size = _size(annotations, MAX_SIZE_ANNOTATION, None)
        if min_size > max_size:
            raise InputError(f"min-size {min_size} is larger than max-size {max_size}",
                             field=f"metadata.annotations[{MIN_SIZE_ANNOTATION}]")
        if min_size > MAX_GROUP_SIZE:
            raise InputError(f"min-size {min_size} is more than {MAX_GROUP_SIZE}, the most nodes Kubernetes "
                             "supports in a cluster", field=f"metadata.annotations[{MIN_SIZE_ANNOTATION}]")
        given = max_size if max_size > MAX_GROUP_SIZE else None
        return NodeGroup(name=name, template=template, min_size=min_size, max_size=min(max_size, MAX_GROUP_SIZE),
                         provisioning_delay=_delay(annotations), cost_per_hour=_cost(annotations),
                         max_size_given=given)
    except InputError as exc:
        raise exc.at(file=source.file, obj=object_name(doc)) from None


def index_node_groups(groups: Iterable[NodeGroup]) -> dict[str, NodeGroup]:
    """Node groups by name; two templates naming one group is an error."""
    out: dict[str, NodeGroup] = {}
    for group in groups:
        if group.name in out:
            first = out[group.name].template.source
            where = f" (first defined in {first.file})" if first is not None else ""
            source = group.template.source
            raise InputError(f"duplicate node group {group.name!r}{where}",
                             file=source.file if source is not None else None, obj=f"Node {group.template.name}",
                             field=f"metadata.annotations[{NODE_GROUP_ANNOTATION}]")
        out[group.name] = group
    return out


def node_groups_from(docs: Iterable[tuple[Manifest, Source]],
                     ) -> tuple[dict[str, NodeGroup], list[tuple[Manifest, Source]]]:
    """Split Node manifests into node groups (by name) and the rest (returned as given, for the caller's
    parser)."""
    groups: list[NodeGroup] = []
    rest: list[tuple[Manifest, Source]] = []
    for doc, source in docs:
        group = parse_node_group(doc, source) if doc.get("kind") == "Node" else None
        if group is None:
            rest.append((doc, source))
        else:
            groups.append(group)
    return index_node_groups(groups), rest
