"""Workload traces: JSON Lines of timestamped create and delete events, replayed on top of a snapshot.

One event per line (`docs/traces.md`):

    {"time": "90s", "op": "create", "object": {<any manifest>}}
    {"time": 5400, "op": "delete", "object": {"kind": "Pod", "metadata": {"namespace": "ml", "name": "w-0"}}}

A `create` adds the object to the simulation's inputs with its arrival at `time` (the event's time wins over a
`phalanx.dev/arrival` annotation); a `delete` of a Pod makes it leave at `time`, freeing what it held. Lines
are in time order within a file; several files merge by time (ties: file order, then line order). Every
error names the file and the line.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from phalanx.api.fields import object_name
from phalanx.api.kinds import KINDS
from phalanx.api.objects import Job, Node, Pod, PodDisruptionBudget, PodGroup, PriorityClass, Source, Workload
from phalanx.api.quantity import format_duration, parse_duration
from phalanx.api.reading import parse_json, read_text
from phalanx.api.resolve import resolve
from phalanx.errors import InputError
from phalanx.inputs.load import Inputs
from phalanx.sim.simulation import Simulation

OPS = ("create", "delete", "update")
_KEYS = {"time", "op", "object"}
Ident = tuple[str, str, str]  # (kind, namespace, name)


@dataclass(frozen=True, slots=True)
class TraceEvent:
    """One line of a trace file."""

    time: float
    op: str
    doc: Mapping[str, Any]
    file: str
    line: int

    def error(self, message: str, field: str | None = None) -> InputError:
        return InputError(message, file=self.file, obj=f"line {self.line}", field=field)


@dataclass
class Trace:
    """What the trace files added: objects created (already in the Inputs) and pod deletions to schedule."""

    files: list[str] = field(default_factory=list)
    created: int = 0
    deletions: list[tuple[float, str]] = field(default_factory=list)  # (time, pod key), in time order
    skipped: Counter[str] = field(default_factory=Counter)
    updates: list[tuple[float, Pod | PodGroup]] = field(default_factory=list)  # a Pod's gates, a PodGroup's spec
    group_deletions: list[tuple[float, str]] = field(default_factory=list)  # (time, PodGroup key)

    def apply(self, sim: Simulation) -> None:
        """Schedule the trace's deletions and updates in a simulation built from the Inputs the trace was loaded
        into."""
        for time, pod_key in self.deletions:
            sim.delete_pod_at(time, pod_key)
        for time, obj in self.updates:
            sim.update_at(time, obj)
        for time, key in self.group_deletions:
            sim.delete_group_at(time, key)


def read_events(path: str) -> list[TraceEvent]:
    """Parse one JSON Lines trace file (blank lines are skipped); raises InputError naming the line."""
    lines = read_text(path).splitlines()
    events: list[TraceEvent] = []
    previous = 0.0
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        where = {"file": path, "obj": f"line {number}"}
        raw = parse_json(text, **where)
        if not isinstance(raw, dict):
            raise InputError(f"an event must be a JSON object, got {type(raw).__name__}", **where)
        unknown = sorted(set(raw) - _KEYS)
        if unknown:
            raise InputError(f"unknown key(s) {', '.join(unknown)}: an event has time, op and object", **where)
        if "time" not in raw:
            raise InputError("is required (seconds, or a duration such as \"90s\")", field="time", **where)
        try:
            time = parse_duration(raw["time"])
        except ValueError as exc:
            raise InputError(str(exc), field="time", **where) from None
        op = raw.get("op")
        if op not in OPS:
            raise InputError(f"must be one of {', '.join(OPS)}, got {op!r}", field="op", **where)
        doc = raw.get("object")
        if not isinstance(doc, dict):
            raise InputError(f"must be an object (a manifest), got {type(doc).__name__}", field="object", **where)
        if time < previous:
            raise InputError(f"time {format_duration(time)} is earlier than the line before "
                             f"({format_duration(previous)}): list events in time order", field="time", **where)
        previous = time
        events.append(TraceEvent(time, op, doc, path, number))
    return events


def _ident(kind: str, obj: Any) -> Ident:
    return kind, getattr(obj, "namespace", ""), obj.name


def _delete_ident(event: TraceEvent) -> Ident:
    """kind/namespace/name of a delete: from metadata, or the shorthand {"kind", "namespace", "name"}."""
    doc = event.doc
    kind = doc.get("kind")
    if not isinstance(kind, str) or not kind:
        raise event.error("is required", field="object.kind")
    meta = doc.get("metadata")
    source: Mapping[str, Any] = meta if isinstance(meta, Mapping) else doc
    name = source.get("name")
    if not isinstance(name, str) or not name:
        raise event.error("is required", field="object.metadata.name")
    namespace = source.get("namespace")
    if namespace is not None and not isinstance(namespace, str):
        raise event.error("must be a string", field="object.metadata.namespace")
    return kind, namespace or ("default" if kind == "Pod" else ""), name


def _parsed(event: TraceEvent, kind: str) -> Any:
    """The event's object read as a manifest of `kind` (None for a terminated pod); errors name the line."""
    doc = event.doc
    versions, parser, _ = KINDS[kind]
    name = object_name(doc)
    if doc.get("apiVersion") not in versions:
        raise InputError(f"{kind} is not read in apiVersion {doc.get('apiVersion')!r} (Phalanx reads "
                         f"{', '.join(versions)})", file=event.file, obj=f"line {event.line}: {name}",
                         field="apiVersion")
    try:
        return parser(doc, Source(event.file, event.line))
    except InputError as exc:
        raise InputError(exc.detail, file=event.file, obj=f"line {event.line}: {name}", field=exc.field) from None


def _updated(event: TraceEvent, inputs: Inputs, kind: str) -> Pod | PodGroup:
    """The new state of a Pod or PodGroup an `update` gives (the whole object, as `kubectl get -o yaml` prints
    it). A Pod may only lose schedulingGates, as the API server allows of a pending pod; the rest of its spec is
    the original's."""
    obj = _parsed(event, kind)
    if isinstance(obj, PodGroup):
        return obj
    if not isinstance(obj, Pod):  # a terminated pod: a status the simulation decides itself
        raise event.error("an update of a Pod changes its spec.schedulingGates, not its phase", field="object.status")
    before = next(p for p in reversed(inputs.pods) if p.key == obj.key)
    added = [gate for gate in obj.scheduling_gates if gate not in before.scheduling_gates]
    if added:
        raise event.error(f"only deletion is allowed: {added[0]!r} was not a scheduling gate of the pod",
                          field="object.spec.schedulingGates")
    return obj


def _existing(inputs: Inputs) -> dict[Ident, float]:
    """Objects the snapshot holds, with their arrival time."""
    live: dict[Ident, float] = {}
    for kind, objects in (("Node", inputs.nodes), ("Pod", inputs.pods), ("PodGroup", inputs.pod_groups),
                          ("Job", inputs.jobs), ("Workload", inputs.workloads)):
        for obj in objects:
            live[_ident(kind, obj)] = obj.arrival
    for pc in inputs.priority_classes:
        live[("PriorityClass", "", pc.name)] = 0.0
    for pdb in inputs.pdbs:
        live[("PodDisruptionBudget", pdb.namespace, pdb.name)] = 0.0
    return live


def _create(event: TraceEvent, inputs: Inputs, trace: Trace) -> Ident | None:
    doc = event.doc
    kind = doc.get("kind")
    if not isinstance(kind, str) or not kind:
        raise event.error("is required", field="object.kind")
    if kind not in KINDS:
        trace.skipped[kind] += 1
        return None
    obj = _parsed(event, kind)
    if obj is None:  # a terminated pod: nothing to simulate
        trace.skipped["Pod (terminated)"] += 1
        return None
    if isinstance(obj, Node | Pod | PodGroup | Job | Workload):
        obj.arrival = event.time
    if isinstance(obj, Pod):
        obj.start_time = None  # a pod created bound starts running at its creation time
    buckets: dict[type, list[Any]] = {Node: inputs.nodes, Pod: inputs.pods, PriorityClass: inputs.priority_classes,
                                      Workload: inputs.workloads, PodGroup: inputs.pod_groups, Job: inputs.jobs,
                                      PodDisruptionBudget: inputs.pdbs}
    bucket = buckets.get(type(obj))
    if bucket is None:  # the simulation reads these once, at time 0
        raise event.error(f"creating a {kind} from a trace is not simulated: give it in the manifests", field="op")
    bucket.append(obj)
    trace.created += 1
    return _ident(kind, obj)


def load_traces(paths: Sequence[str], inputs: Inputs) -> Trace:
    """Read trace files, add their created objects to `inputs` and return the deletions to schedule."""
    trace = Trace(files=list(paths))
    events = [event for path in paths for event in read_events(path)]
    events.sort(key=lambda e: e.time)  # stable: file order, then line order at equal times
    live = _existing(inputs)
    lines: dict[tuple[str, str], int] = {}  # (file, "Pod ns/name") -> line, to name lines in resolve's errors
    for event in events:
        if event.op == "create":
            ident = _create(event, inputs, trace)
            if ident is None:
                continue
            if ident in live:
                kind, namespace, name = ident
                raise event.error(f"{kind} {'/'.join(p for p in (namespace, name) if p)} already exists "
                                  "(delete it first)", field="object.metadata.name")
            live[ident] = event.time
            kind, namespace, name = ident
            lines[(event.file, f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}")] = event.line
            node_name = inputs.pods[-1].node_name if kind == "Pod" else None
            if node_name is not None and live.get(("Node", "", node_name), event.time + 1) > event.time:
                raise event.error(f"no Node named {node_name!r} exists at {format_duration(event.time)}",
                                  field="object.spec.nodeName")
            continue
        kind, namespace, name = ident = _delete_ident(event)
        label = f"{kind} {'/'.join(p for p in (namespace, name) if p)}"
        if kind not in KINDS:
            trace.skipped[kind] += 1
            continue
        if kind not in ("Pod", "PodGroup"):
            raise event.error(f"{'changing' if event.op == 'update' else 'deleting'} a {kind} is not simulated "
                              "(a trace updates or deletes Pods and PodGroups)", field="op")
        if ident not in live:
            raise event.error(f"{label} does not exist: neither the snapshot nor an earlier line creates it",
                              field="object.metadata.name")
        if live[ident] >= event.time:
            raise event.error(f"{label} is {event.op}d at {format_duration(event.time)}, not after it is created "
                              f"({format_duration(live[ident])})", field="time")
        if event.op == "update":
            trace.updates.append((event.time, _updated(event, inputs, kind)))
            continue
        del live[ident]
        if kind == "Pod":
            trace.deletions.append((event.time, f"{namespace}/{name}"))
        else:
            trace.group_deletions.append((event.time, f"{namespace}/{name}"))
    try:
        resolve(inputs)
    except InputError as exc:  # name the line of an object the trace created
        line = lines.get((exc.file or "", exc.obj or ""))
        if line is None:
            raise
        raise InputError(exc.detail, file=exc.file, obj=f"line {line}: {exc.obj}", field=exc.field) from None
    return trace
