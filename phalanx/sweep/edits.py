"""What-if edits for a sweep over manifests: a small vocabulary that changes the loaded objects, never the files.

    base          the manifests as written
    nodes=N       N nodes (1 to 50,000): the first N in document order, or copies added after the last one
    nodes*F       round(F × the number of nodes) nodes (F above 0, at most 1,000), as nodes=N
    arrivals*F    every `phalanx.dev/arrival` time × F (F from 0 to 1,000; F < 1 packs the same work into less
                  time), each still within Go's longest duration (about 292 years)

Edits combine with `+` (`nodes*2+arrivals*0.5`). A node copy is named `<node>-copy<i>` and keeps every label
and taint (a label whose value was the node's name, such as kubernetes.io/hostname, takes the copy's name);
its node-local ResourceSlices are copied with it. Dropping a node a pod already runs on (`spec.nodeName`) is
an error; a dropped node's node-local ResourceSlices are dropped too.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass
from typing import Any

from phalanx.api.dra import ResourceSlice
from phalanx.api.objects import Node
from phalanx.api.quantity import MAX_DURATION_SECONDS
from phalanx.errors import InputError
from phalanx.inputs.load import Inputs

FIELD = "--what-if"
_TERM = re.compile(r"(?P<target>nodes|arrivals)(?P<op>[=*])(?P<value>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)")
# Ten times the 5,000 nodes Kubernetes documents as a cluster's limit: every copy is simulated, so the bound keeps
# an edit's memory and time proportional to something sensible rather than to a number in its text.
MAX_NODES = 50_000
MAX_FACTOR = 1000.0


@dataclass(frozen=True, slots=True)
class Edit:
    text: str
    terms: tuple[tuple[str, str, float], ...] = ()  # (target, op, value); empty: base


def parse_edit(text: str) -> Edit:
    text = text.strip()
    if text == "base":
        return Edit(text)
    return Edit(text, tuple(_term(part.strip()) for part in text.split("+")))


def _term(part: str) -> tuple[str, str, float]:
    """One term of an edit, its value within the documented range (a number too large for a float is inf)."""
    match = _TERM.fullmatch(part)
    shown = repr(part[:40] + ("…" if len(part) > 40 else ""))
    if match is None:
        raise InputError(f"invalid edit {shown}: want base, nodes=N, nodes*F or arrivals*F (combined with +)",
                         field=FIELD)
    target, op, value = match["target"], match["op"], float(match["value"])
    if target == "arrivals" and op == "=":
        raise InputError(f"invalid edit {shown}: arrivals take a factor (arrivals*F)", field=FIELD)
    if op == "=" and not (value.is_integer() and 1 <= value <= MAX_NODES):
        raise InputError(f"invalid edit {shown}: nodes=N takes a whole number from 1 to {MAX_NODES}", field=FIELD)
    if op == "*" and not (0 < value <= MAX_FACTOR or (target == "arrivals" and value == 0)):
        between = "from 0 to" if target == "arrivals" else "above 0 and at most"
        raise InputError(f"invalid edit {shown}: {target}*F takes a factor {between} {MAX_FACTOR:g}", field=FIELD)
    return target, op, value


def parse_edits(text: str) -> list[Edit]:
    """A comma list of edits, e.g. `base,nodes*0.5,nodes*2`."""
    edits = [parse_edit(part) for part in text.split(",") if part.strip()]
    if not edits:
        raise InputError("name at least one edit (base for the manifests as written)", field=FIELD)
    return edits


def apply_edit(inputs: Inputs, edit: Edit) -> Inputs:
    """A copy of `inputs` with the edit applied (`inputs` itself is left as it was)."""
    for target, op, value in edit.terms:
        if target == "nodes":
            count = int(value) if op == "=" else math.floor(value * len(inputs.nodes) + 0.5)
            inputs = _with_nodes(inputs, count, edit.text)
        else:
            inputs = _scaled_arrivals(inputs, value, edit.text)
    return inputs


def _with_nodes(inputs: Inputs, count: int, text: str) -> Inputs:
    nodes = inputs.nodes
    if not nodes:
        raise InputError(f"{text}: the manifests hold no Node", field=FIELD)
    if count < 1:
        raise InputError(f"{text}: leaves no node", field=FIELD)
    if count > MAX_NODES:
        raise InputError(f"{text}: makes {count} nodes, more than the {MAX_NODES} an edit may", field=FIELD)
    if count <= len(nodes):
        dropped = {node.name for node in nodes[count:]}
        for pod in inputs.pods:
            if pod.node_name in dropped:
                raise InputError(f"{text}: drops node {pod.node_name}, which pod {pod.key} runs on", field=FIELD)
        slices = [s for s in inputs.resource_slices if s.node_name not in dropped]
        return dataclasses.replace(inputs, nodes=list(nodes[:count]), resource_slices=slices)
    taken = {node.name for node in nodes}
    added: list[Node] = []
    slices = list(inputs.resource_slices)
    for i in range(count - len(nodes)):
        node = nodes[i % len(nodes)]
        copy = i // len(nodes) + 1
        name = f"{node.name}-copy{copy}"
        while name in taken:
            copy += 1
            name = f"{node.name}-copy{copy}"
        taken.add(name)
        labels = {key: name if value == node.name else value for key, value in node.labels.items()}
        added.append(dataclasses.replace(node, name=name, labels=labels))
        slices.extend(_copied_slice(s, node.name, name) for s in inputs.resource_slices if s.node_name == node.name)
    return dataclasses.replace(inputs, nodes=[*nodes, *added], resource_slices=slices)


def _copied_slice(piece: ResourceSlice, node: str, copy: str) -> ResourceSlice:
    suffix = copy.removeprefix(node)
    pool = copy if piece.pool == node else f"{piece.pool}{suffix}"
    return dataclasses.replace(piece, name=f"{piece.name}{suffix}", pool=pool, node_name=copy)


def _scaled_arrivals(inputs: Inputs, factor: float, text: str) -> Inputs:
    changes: dict[str, Any] = {}
    for spec in dataclasses.fields(inputs):
        items = getattr(inputs, spec.name)
        if isinstance(items, list) and any(_timed(item) for item in items):
            changes[spec.name] = [dataclasses.replace(item, arrival=_scaled(item.arrival, factor, text))
                                  if _timed(item) else item for item in items]
    return dataclasses.replace(inputs, **changes)


def _scaled(arrival: float, factor: float, text: str) -> float:
    scaled = arrival * factor
    if scaled > MAX_DURATION_SECONDS:
        raise InputError(f"{text}: moves an arrival at {arrival:g}s past Go's longest duration (about 292 years)",
                         field=FIELD)
    return scaled


def _timed(item: Any) -> bool:
    return dataclasses.is_dataclass(item) and not isinstance(item, type) and hasattr(item, "arrival")


__all__ = ["MAX_FACTOR", "MAX_NODES", "Edit", "apply_edit", "parse_edit", "parse_edits"]
