"""HorizontalPodAutoscalers in the simulator: every 15 s of simulated time (the controller's sync period) each
HPA reads its metrics and, through the v2 algorithm of phalanx.autoscale.hpa, sets its target's replicas (the
scale subresource of a Deployment, ReplicaSet or StatefulSet).

Where metric values come from (`--metrics FILE`, phalanx.autoscale.metrics):
- Object and External metrics: the sum over the series of that metric name its selector selects, as an
  external metrics API serves them;
- Resource, ContainerResource and Pods metrics (the pods' usage): the series of that name (`cpu`, `memory`, a
  Pods metric's name) labelled with the target, `deployment=<name>` (or `statefulset=`, `replicaset=`), else
  the unlabelled series of that name. A Utilization target reads the value as percent of the request.
An HPA may instead take its request rate from the built-in model (`phalanx.dev/request-rate-model`, see
`rate_model`). Without a value an HPA leaves its target alone (`ScalingActive=False`), as the controller does
when it cannot read a metric. The HPA keeps syncing until `--until`, or until 10 minutes after the last row of
the metrics file (the default scale-down stabilization is 5 minutes), or for one period of a rate model, or,
without any, for one sync; without --until, one that reads a rate model stops after one period of it (at most
MAX_RATE_PERIOD) if that comes sooner.

Syncs that would change nothing are skipped: once an HPA's syncs have seen the same target and metric values,
and decided the same, for longer than the controller looks back (`HpaController.memory`), the next sync that
can differ is the first after a metric's next sample, or after its target's replicas change (a watch on the
workload controllers wakes it), or the last before the horizon. The skipped syncs' events are counted on the
event they repeat, as kube's event recorder counts them. So a metrics row 292 years away costs a few syncs, not
one every 15 s.

What the controller reports where nothing scales is in the service's `notes` (and on stderr): a target that
does not exist (`FailedGetScale`), pods that more than one HPA controls (`AmbiguousSelector`: both stop), and a
maxReplicas above what Phalanx simulates (capped at MAX_HPA_REPLICAS, the bound of a Deployment's replicas).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, Self, assert_never

import numpy as np
import numpy.typing as npt

from phalanx.api.apps import MAX_REPLICAS
from phalanx.api.autoscaling import HorizontalPodAutoscaler, MetricSpec
from phalanx.api.objects import LabelSelector
from phalanx.api.quantity import MAX_INT64, parse_duration
from phalanx.autoscale.hpa import HpaController, HpaDecision, MetricValues, SelectorCheck
from phalanx.autoscale.hpa_bank import HpaBank, eligible
from phalanx.autoscale.metrics import MetricsSeries, RateModels, RequestRateModel
from phalanx.controllers.deployment import HASH_LABEL
from phalanx.controllers.workloads import WorkloadControllers
from phalanx.errors import InputError
from phalanx.sim.event_queue import ARRIVAL
from phalanx.sim.report_schema import ServiceEvent

RATE_MODEL = "phalanx.dev/request-rate-model"
REQUEST_METRIC = "phalanx.dev/request-metric"
SYNC_PERIOD = 15.0  # kube-controller-manager --horizontal-pod-autoscaler-sync-period
AFTER_LAST_ROW = 600.0
# Phalanx simulates every pod: an HPA's replicas are held to the bound of a Deployment's spec.replicas.
MAX_HPA_REPLICAS = MAX_REPLICAS
# A rate model's period (and so, without --until, the run) is at most a week: a cycle repeats after that.
MAX_RATE_PERIOD = 7 * 86400.0
KEPT_EVENTS = 20
# The resource (and group) kube names in "not found" errors of the scale subresource.
_RESOURCE = {"Deployment": "deployments.apps", "StatefulSet": "statefulsets.apps", "ReplicaSet": "replicasets.apps"}


@dataclass(slots=True)
class HpaSync:
    """An HPA's periodic sync is due."""

    key: str


@dataclass(slots=True)
class HpaBankSync:
    """The periodic sync of a bank of HPAs (phalanx.autoscale.hpa_bank) is due."""

    bank: int


HpaEvent = HorizontalPodAutoscaler | HpaSync | HpaBankSync  # what the HPAs act on


class SyncEvents(Protocol):
    """The simulation's event queue, as the HPAs use it: they queue their syncs."""

    def push(self, time: float, priority: int, event: HpaSync | HpaBankSync) -> None: ...


class SimulationView(Protocol):
    """What the HPAs read and do of the simulation (simulation.py's Simulation): the time, the workload
    controllers' replicas, the scale subresource, and a watch after each round (`observers`)."""

    @property
    def now(self) -> float: ...
    @property
    def events(self) -> SyncEvents: ...
    @property
    def observers(self) -> list[Callable[[Self], None]]: ...
    @property
    def workloads(self) -> WorkloadControllers: ...

    def scale(self, kind: str, key: str, replicas: int) -> None: ...


class EventLog:
    """An HPA's events as kube's event recorder keeps them: an event whose message was seen before counts again
    on that one (`count`, `lastTime`); the KEPT_EVENTS most recently seen are kept."""

    def __init__(self) -> None:
        self._events: dict[str, tuple[float, float, int]] = {}  # message -> (first, last, count)

    def record(self, time: float, message: str, count: int = 1) -> None:
        """`count` events with `message`, the last at `time`."""
        first, _, seen = self._events.pop(message, (time, time, 0))
        self._events[message] = (first, time, seen + count)
        if len(self._events) > KEPT_EVENTS:
            del self._events[next(iter(self._events))]

    def report(self) -> list[ServiceEvent]:
        out: list[ServiceEvent] = []
        for message, (first, last, count) in self._events.items():
            event: ServiceEvent = {"time": first, "message": message}
            if count > 1:
                event["count"] = count
                event["lastTime"] = last
            out.append(event)
        return out


@dataclass(slots=True)
class _Pace:
    """When an HPA (or a bank of them) syncs: the last sync run, the one due (events queued for other times are
    stale), and the run of identical syncs that lets it skip those that would change nothing."""

    last: float | None = None
    due: float | None = None
    queued: set[float] = field(default_factory=set)  # times of its sync events still queued
    signature: object = None
    since: float = 0.0  # the first sync of the run of syncs with `signature`
    quiet: bool = False  # syncs between `last` and `due` are skipped
    order: int = 0  # its place among the HPAs (and banks) as they arrived: syncs woken together go in this order
    horizon: float | None = None  # no sync after this (None: the first is the last)

    def steady(self, signature: object, now: float, memory: float) -> bool:
        """Whether the syncs up to this one, of this `signature`, have gone on for longer than `memory` (so this
        one read back none from before them, nor the first sync's initial recommendation)."""
        if signature != self.signature:
            self.signature, self.since = signature, now
            return False
        return now - self.since > memory


@dataclass(slots=True)
class _State:
    hpa: HorizontalPodAutoscaler  # as simulated: maxReplicas held to Autoscalers.replica_cap
    controller: HpaController
    spec: HorizontalPodAutoscaler  # as written
    events: EventLog = field(default_factory=EventLog)
    replicas: list[tuple[float, int]] = field(default_factory=list)  # (time, replicas) after each change
    scaled_to_zero: int = 0  # 1→0 transitions
    woke_from_zero: int = 0  # 0→N transitions
    bank: tuple[HpaBank, int] | None = None  # the bank that syncs it, and its place there
    pace: _Pace = field(default_factory=_Pace)
    repeated: list[str] = field(default_factory=list)  # the events a skipped sync would record
    current: int | None = None  # its target's replicas at its last sync (None: no such target)
    notes: dict[str, None] = field(default_factory=dict)  # what the report and stderr say about it, in order

    @property
    def conditions(self) -> list[dict[str, str]]:
        if self.bank is not None:
            self.bank[0].flush(self.bank[1])
        return self.controller.conditions()

    @property
    def target(self) -> tuple[str, str]:
        return self.hpa.target.kind, f"{self.hpa.namespace}/{self.hpa.target.name}"


class _Bank:
    """HPAs that arrive together and are eligible for an HpaBank, with their metric values as arrays."""

    def __init__(self, states: list[_State], models: dict[str, RequestRateModel],
                 metrics: MetricsSeries | None) -> None:
        self.states = states
        self.hpas = HpaBank([s.controller for s in states], SYNC_PERIOD)
        self.targets = [(s.hpa.target.kind, f"{s.hpa.namespace}/{s.hpa.target.name}") for s in states]
        # The targets' replicas as of `replicas_version` of the workload controllers (-1: read them again).
        self.replicas_version = -1
        self.current = np.zeros(len(states), dtype=np.int64)
        self.skip = np.ones(len(states), dtype=bool)
        for i, state in enumerate(states):
            state.bank = (self.hpas, i)
        self.started = False
        width = self.hpas.width
        cells: list[tuple[str, LabelSelector | None]] = []
        cell_at: list[tuple[int, int]] = []
        modelled: list[RequestRateModel] = []
        model_at: list[tuple[int, int]] = []
        for i, state in enumerate(states):
            model = models.get(state.hpa.key)
            for m, spec in enumerate(state.hpa.metrics):
                if model is not None and spec.name == model.metric:
                    modelled.append(model)
                    model_at.append((i, m))
                elif metrics is not None:
                    cells.append((spec.name, spec.selector))
                    cell_at.append((i, m))
        self.shape = (len(states), width)
        self.cell_index = np.array(cell_at, dtype=np.int64).reshape(-1, 2).T
        self.model_index = np.array(model_at, dtype=np.int64).reshape(-1, 2).T
        self.tape = metrics.tape(cells) if metrics is not None and cells else None
        self.models = RateModels(modelled) if modelled else None
        self.pace = _Pace()

    def next_change(self, now: float) -> float | None:
        """When a metric value of the bank may next change (None: never; a rate model changes all the time)."""
        if self.models is not None:
            return now
        if self.tape is None:
            return None
        at = int(np.searchsorted(self.tape.times, now, side="right"))
        return float(self.tape.times[at]) if at < len(self.tape.times) else None

    def values(self, now: float) -> npt.NDArray[np.float64]:
        values = np.full(self.shape, np.nan)
        if self.tape is not None:
            values[self.cell_index[0], self.cell_index[1]] = self.tape.at(now)
        if self.models is not None:
            values[self.model_index[0], self.model_index[1]] = self.models.rates(now)
        return values


def rate_model(hpa: HorizontalPodAutoscaler) -> RequestRateModel | None:
    """The built-in request-rate model an HPA's annotation asks for: `phalanx.dev/request-rate-model:
    "base=5,peak=80,night=22h-6h"` (also `phase=14h`, `period=24h`), serving the metric its
    `phalanx.dev/request-metric` names (default `requests_per_second`)."""
    raw = hpa.annotations.get(RATE_MODEL)
    if raw is None:
        return None
    field = f"metadata.annotations[{RATE_MODEL}]"
    where = {"file": hpa.source.file if hpa.source else None, "obj": f"HorizontalPodAutoscaler {hpa.key}"}
    values: dict[str, Any] = {"metric": hpa.annotations.get(REQUEST_METRIC, "requests_per_second")}
    try:
        for part in filter(None, (p.strip() for p in raw.split(","))):
            key, sep, value = part.partition("=")
            if not sep or key not in ("base", "peak", "night", "phase", "period"):
                raise ValueError(f"{part!r} is not base=, peak=, night=START-END, phase= or period=")
            if key == "night":
                start, dash, end = value.partition("-")
                if not dash:
                    raise ValueError(f"night={value!r}: want START-END, e.g. 22h-6h")
                values["night"] = (parse_duration(start), parse_duration(end))
            elif key in ("phase", "period"):
                values[key] = parse_duration(value)
            else:
                values[key] = _rate(key, value)
        if "base" not in values or "peak" not in values:
            raise ValueError("base= and peak= are required")
        if values.get("period", 0.0) > MAX_RATE_PERIOD:
            raise ValueError(f"period={values['period']:g}s is longer than a week, the longest cycle Phalanx models")
        return RequestRateModel(**values)
    except (ValueError, InputError) as exc:
        detail = exc.detail if isinstance(exc, InputError) else str(exc)
        raise InputError(detail, field=field, **where) from None


def _rate(key: str, raw: str) -> float:
    """A rate as a metric serves it: an ASCII decimal within a quantity's int64 range."""
    text = raw.strip()
    try:
        rate = float(text) if text.isascii() and "_" not in text else math.nan
    except ValueError:
        rate = math.nan
    if not math.isfinite(rate) or abs(rate) > MAX_INT64:
        shown = text if len(text) <= 30 else f"{text[:20]}…"
        raise ValueError(f"{key}={shown!r}: want a number of requests per second")
    return rate


def _selector_text(selector: LabelSelector) -> str:
    """A selector as the scale subresource's status.selector shows it (metav1.FormatLabelSelector)."""
    parts = [(key, f"{key}={value}") for key, value in selector.match_labels if key != HASH_LABEL]
    for req in selector.expressions:
        if req.operator in ("In", "NotIn"):
            parts.append((req.key, f"{req.key} {req.operator.lower()} ({','.join(sorted(req.values))})"))
        else:
            parts.append((req.key, req.key if req.operator == "Exists" else f"!{req.key}"))
    return ",".join(text for _, text in sorted(parts))


class Autoscalers:
    skip_quiet_syncs = True  # tests turn it off to compare with a sync every SYNC_PERIOD
    replica_cap = MAX_HPA_REPLICAS  # the fuzz suite lowers it: the pods of a capped HPA cost time, not findings

    def __init__(self, hpas: list[HorizontalPodAutoscaler], metrics: MetricsSeries | None,
                 until: float | None) -> None:
        self.metrics = metrics
        self.states = {h.key: self._state(h) for h in hpas}
        self.models = {h.key: model for h in hpas if (model := rate_model(h)) is not None}
        per_target: dict[tuple[str, str], list[str]] = {}
        for state in self.states.values():
            per_target.setdefault(state.target, []).append(state.hpa.key)
        # Targets more than one HPA scales: their syncs check `AmbiguousSelector` one by one, out of any bank.
        self.shared = {target for target, keys in per_target.items() if len(keys) > 1}
        self.selecting: dict[tuple[str, str], set[str]] = {}  # target -> HPAs that select its pods (arrived)
        together: dict[tuple[float, bool], list[_State]] = {}
        for state in self.states.values():
            if eligible(state.controller) and state.target not in self.shared:
                together.setdefault((state.hpa.arrival, self._reads_model(state.hpa)), []).append(state)
        self.banks = [_Bank(states, self.models, metrics) for _, states in sorted(together.items())]
        self.bank_of = {state.hpa.key: b for b, bank in enumerate(self.banks) for state in bank.states}
        self.syncs = 0  # HPA syncs (one per HPA with a target, per period; the skipped ones too)
        last = metrics.last_time() if metrics is not None else None
        if until is not None:
            self.horizon: float | None = until
        elif last is not None:
            self.horizon = last + AFTER_LAST_ROW
        elif self.models:  # a model never runs out: one period of it
            self.horizon = max(h.arrival for h in hpas) + max(m.period for m in self.models.values())
        else:
            self.horizon = None
        self.until = until
        self._watching = False
        self._version = -1  # the workload controllers' replicas_version the watch last saw
        self._quiet: dict[str, _State] = {}
        self._quiet_banks: set[int] = set()
        self._arrived = 0

    def _reads_model(self, hpa: HorizontalPodAutoscaler) -> bool:
        """Whether some metric of the HPA takes its values from its rate model (they change all the time)."""
        model = self.models.get(hpa.key)
        return model is not None and any(spec.type in ("Object", "External") and spec.name == model.metric
                                         for spec in hpa.metrics)

    def _horizon(self, states: list[_State], now: float) -> float | None:
        """When the syncs of these HPAs (arriving `now`) end: the run's horizon, or, without --until, one period
        of the rate model they read (the longest of them), if sooner."""
        horizon = self.horizon
        periods = [self.models[s.hpa.key].period for s in states if self._reads_model(s.hpa)]
        if self.until is None and periods and horizon is not None:
            horizon = min(horizon, now + max(periods))
        return horizon

    def _state(self, hpa: HorizontalPodAutoscaler) -> _State:
        simulated = hpa
        notes: dict[str, None] = {}
        cap = self.replica_cap
        if hpa.max_replicas > cap:
            simulated = replace(hpa, max_replicas=cap, min_replicas=min(hpa.min_replicas, cap))
            notes[f"spec.maxReplicas {hpa.max_replicas} is more than {cap}, the most replicas Phalanx simulates: "
                  f"capped at {cap}"] = None
        return _State(simulated, HpaController(simulated), hpa, notes=notes)

    def receive(self, event: HpaEvent, sim: SimulationView) -> None:
        """An HPA arrives, or a sync of one HPA (or of a bank of them) is due."""
        match event:
            case HorizontalPodAutoscaler():
                self.arrive(event, sim)
            case HpaSync():
                self.sync(event.key, sim)
            case HpaBankSync():
                self.sync_bank(event.bank, sim)
            case _:
                assert_never(event)

    def arrive(self, hpa: HorizontalPodAutoscaler, sim: SimulationView) -> None:
        if not self._watching:
            self._watching = True
            sim.observers.append(self._watch)
        state = self.states[hpa.key]
        if state.target in self.shared:  # one more HPA selects these pods: the others' syncs say so from now
            selecting = self.selecting.setdefault(state.target, set())
            selecting.add(hpa.key)
            woken = sorted((self._quiet.pop(key) for key in selecting if key in self._quiet),
                           key=lambda other: other.pace.order)
            for other in woken:
                self._wake(other.pace, HpaSync(other.hpa.key), sim)
        bank = self.bank_of.get(hpa.key)
        if bank is None:
            self._arrived += 1
            state.pace.order = self._arrived
            state.pace.horizon = self._horizon([state], sim.now)
            self._push(state.pace, sim.now, HpaSync(hpa.key), sim)
        elif not self.banks[bank].started:
            self.banks[bank].started = True
            self._arrived += 1
            self.banks[bank].pace.order = self._arrived
            self.banks[bank].pace.horizon = self._horizon(self.banks[bank].states, sim.now)
            self._push(self.banks[bank].pace, sim.now, HpaBankSync(bank), sim)

    @staticmethod
    def _push(pace: _Pace, time: float, event: HpaSync | HpaBankSync, sim: SimulationView) -> None:
        pace.due = time
        if time not in pace.queued:
            pace.queued.add(time)
            sim.events.push(time, ARRIVAL, event)

    @staticmethod
    def _current(pace: _Pace, now: float) -> bool:
        """Whether a sync event popped at `now` is the one due (an earlier wake-up may have replaced it)."""
        pace.queued.discard(now)
        return pace.due == now

    def sync(self, key: str, sim: SimulationView) -> None:
        state = self.states[key]
        pace = state.pace
        if not self._current(pace, sim.now):
            return
        skipped = self._skipped(pace, sim.now, state.controller.memory())
        if skipped is not None:
            self._repeat_events(state, *skipped)
            state.controller.repeat_last(skipped[0], skipped[2])
            self.syncs += skipped[1] if state.current is not None else 0
        hpa = state.hpa
        kind, target = state.target
        current = sim.workloads.replicas(kind, target)
        state.current = current
        if current is None:
            decision = state.controller.failed_get_scale(f'{_RESOURCE[kind]} "{hpa.target.name}" not found')
            self._record(state, decision, sim.now)
            signature: tuple[object, ...] = ("missing",)
        else:
            self.syncs += 1
            read: list[float | None] = []

            def values(spec: MetricSpec, now: float) -> float | None:
                found = self._value(hpa, spec, now)
                read.append(found)
                return found

            desired, decision = self._sync(state, current, values, sim, self._selector_check(state, current, sim))
            signature = (current, desired, tuple(read), _conditions(decision))
        signature += tuple(decision.events)
        state.repeated = list(decision.events)
        settled = (pace.steady(signature, sim.now, state.controller.memory()) and not self._reads_model(state.hpa)
                   and self.skip_quiet_syncs)
        self._again(pace, HpaSync(key), sim, self._next_change(state, sim.now) if settled else None, settled)
        self._quiet.pop(key, None)
        if pace.quiet:
            self._quiet[key] = state

    def _selector_check(self, state: _State, current: int, sim: SimulationView) -> SelectorCheck | None:
        """`validateAndParseSelector` for a target that more than one HPA scales: once two of them are there
        (and the target has pods), each sync of either fails with AmbiguousSelector. kube counts an HPA from
        its first sync, so the first of two HPAs may scale once before the other's first sync; Phalanx counts
        it from its arrival, so which syncs first at an instant does not matter."""
        if state.target not in self.shared:
            return None

        def check() -> str | None:
            selecting = self.selecting.get(state.target, set())
            if len(selecting) < 2 or current == 0:
                return None
            selector = self._target_selector(state, sim)
            message = (f"pods by selector {selector} are controlled by multiple HPAs: "
                       f"[{' '.join(sorted(selecting))}]")
            state.notes[f"ScalingActive=False AmbiguousSelector: {message}"] = None
            return message

        return check

    @staticmethod
    def _target_selector(state: _State, sim: SimulationView) -> str:
        kind, key = state.target
        owner = sim.workloads.scaled_owner(kind, key)
        if owner is not None and owner[0] == "ReplicaSet" and owner[1] in sim.workloads.rs.sets:
            return _selector_text(sim.workloads.rs.sets[owner[1]].replica_set.selector)
        if owner is not None and owner[1] in sim.workloads.sts.sets:
            return _selector_text(sim.workloads.sts.sets[owner[1]].stateful_set.selector)
        return ""

    def sync_bank(self, index: int, sim: SimulationView) -> None:
        bank = self.banks[index]
        now = sim.now
        if not self._current(bank.pace, now):
            return
        skipped = self._skipped(bank.pace, now, bank.hpas.memory)
        if skipped is not None:
            for state in bank.states:
                self._repeat_events(state, *skipped)
            bank.hpas.repeat_last(skipped[2])
            self.syncs += skipped[1] * (len(bank.states) - int(np.count_nonzero(bank.skip)))
        workloads = sim.workloads
        if bank.replicas_version != workloads.replicas_version:
            replicas = workloads.replica_counts(bank.targets)
            bank.skip = np.array([r is None for r in replicas], dtype=bool)
            bank.current = np.array([r or 0 for r in replicas], dtype=np.int64)
        current, version = bank.current, workloads.replicas_version
        self.syncs += len(bank.states) - int(np.count_nonzero(bank.skip))
        values = bank.values(now)
        scalar = np.flatnonzero(bank.hpas.sync(now, current, values, bank.skip)).tolist()
        signature: list[object] = [current.tobytes(), bank.skip.tobytes(), values.tobytes()]
        for state in bank.states:
            state.repeated = []
        for i in np.flatnonzero(bank.skip).tolist():
            state = bank.states[i]
            state.current = None
            name = state.hpa.target.name
            decision = state.controller.failed_get_scale(f'{_RESOURCE[state.target[0]]} "{name}" not found')
            self._record(state, decision, now)
            state.repeated = list(decision.events)
        for i in scalar:
            state = bank.states[i]
            row = values[i]
            position = {id(spec): m for m, spec in enumerate(state.hpa.metrics)}

            def value(spec: MetricSpec, _: float, row: npt.NDArray[np.float64] = row,
                      position: dict[int, int] = position) -> float | None:
                found = float(row[position[id(spec)]])
                return None if math.isnan(found) else found

            bank.hpas.before_scalar(i)
            desired, decision = self._sync(state, int(current[i]), value, sim)
            bank.hpas.after_scalar(i, now)
            state.repeated = list(decision.events)
            signature += [i, desired, _conditions(decision), *decision.events]
            if desired != current[i]:
                current[i] = desired
                version += 1  # this scale, which `current` already shows
        # Kept for the next sync unless something else changed some replicas meanwhile.
        bank.replicas_version = version if version == workloads.replicas_version else -1
        settled = (bank.pace.steady(tuple(signature), now, bank.hpas.memory) and bank.models is None
                   and self.skip_quiet_syncs)
        self._again(bank.pace, HpaBankSync(index), sim, bank.next_change(now) if settled else None, settled)
        self._quiet_banks.discard(index)
        if bank.pace.quiet:
            self._quiet_banks.add(index)

    def _again(self, pace: _Pace, event: HpaSync | HpaBankSync, sim: SimulationView, change: float | None,
               settled: bool) -> None:
        """Schedule the next sync: the next period's, or, once `settled`, the first at or after `change` (when a
        metric may change next) or else the last before the horizon."""
        now = sim.now
        pace.last, pace.due, pace.quiet = now, None, False
        horizon = pace.horizon
        if horizon is None:
            return
        following = now + SYNC_PERIOD
        if following > horizon:
            return
        if settled:
            final = now + SYNC_PERIOD * math.floor((horizon - now) / SYNC_PERIOD)
            if final > horizon:  # rounding
                final -= SYNC_PERIOD
            if change is not None:
                following = min(final, now + SYNC_PERIOD * max(math.ceil((change - now) / SYNC_PERIOD), 1))
            else:
                following = final
            pace.quiet = following > now + SYNC_PERIOD
        self._push(pace, following, event, sim)

    def _watch(self, sim: SimulationView) -> None:
        """After each round: wake the skipping HPAs whose target's replicas changed (an object arrived, another
        HPA scaled it), at their next sync time."""
        workloads = sim.workloads
        if workloads.replicas_version == self._version:
            return
        self._version = workloads.replicas_version
        woken: list[tuple[_Pace, HpaSync | HpaBankSync]] = []
        for key, state in list(self._quiet.items()):
            if workloads.replicas(*state.target) != state.current:
                del self._quiet[key]
                woken.append((state.pace, HpaSync(key)))
        for index in list(self._quiet_banks):
            bank = self.banks[index]
            replicas = workloads.replica_counts(bank.targets)
            if any(r != (None if s else int(c)) for r, s, c in zip(replicas, bank.skip, bank.current, strict=True)):
                self._quiet_banks.discard(index)
                woken.append((bank.pace, HpaBankSync(index)))
        for pace, event in sorted(woken, key=lambda w: w[0].order):
            self._wake(pace, event, sim)

    def _wake(self, pace: _Pace, event: HpaSync | HpaBankSync, sim: SimulationView) -> None:
        assert pace.last is not None and pace.due is not None
        steps = max(math.ceil((sim.now - pace.last) / SYNC_PERIOD), 1)
        time = pace.last + SYNC_PERIOD * steps
        if time < pace.due:
            self._push(pace, time, event, sim)

    @staticmethod
    def _skipped(pace: _Pace, now: float, memory: float) -> tuple[float, int, list[float]] | None:
        """The syncs skipped since the last one run: that one's time, how many, and the times of those that the
        sync at `now` reads back (within `memory`); None when none was skipped."""
        if not pace.quiet or pace.last is None:
            return None
        count = round((now - pace.last) / SYNC_PERIOD) - 1
        recent = [t for j in range(max(count - int(memory // SYNC_PERIOD) - 1, 0), count)
                  if (t := pace.last + SYNC_PERIOD * (j + 1)) >= now - memory]
        return pace.last, count, recent

    @staticmethod
    def _repeat_events(state: _State, last: float, count: int, _: list[float]) -> None:
        """Each skipped sync would have recorded the events of the one before it (`repeated`)."""
        if count > 0:
            for message in state.repeated:
                state.events.record(last + SYNC_PERIOD * count, message, count)

    def _next_change(self, state: _State, now: float) -> float | None:
        """When a metric the HPA reads may next change (None: never)."""
        if self.metrics is None:
            return None
        hpa = state.hpa
        times: list[float | None] = []
        for spec in hpa.metrics:
            if spec.type in ("Object", "External"):
                times.append(self.metrics.next_change(spec.name, spec.selector, now))
            else:
                times.append(self.metrics.next_change_of(spec.name, f"{hpa.target.kind.lower()}={hpa.target.name}",
                                                         now))
                times.append(self.metrics.next_change_of(spec.name, None, now))
        return min((t for t in times if t is not None), default=None)

    def _record(self, state: _State, decision: HpaDecision, now: float) -> None:
        for message in decision.events:
            state.events.record(now, message)
        condition = decision.condition("AbleToScale")
        if condition is not None and condition["reason"] == "FailedGetScale":
            state.notes[f"AbleToScale=False FailedGetScale: {condition['message']}"] = None

    def _sync(self, state: _State, current: int, values: MetricValues, sim: SimulationView,
              check: SelectorCheck | None = None) -> tuple[int, HpaDecision]:
        """One HPA's own sync; returns its target's replicas after it, and the decision."""
        hpa = state.hpa
        decision = state.controller.sync(sim.now, current, values, check)
        self._record(state, decision, sim.now)
        if decision.rescale:
            if decision.desired == 0:
                state.scaled_to_zero += 1
            elif current == 0:
                state.woke_from_zero += 1
            state.replicas.append((sim.now, decision.desired))
            sim.scale(hpa.target.kind, f"{hpa.namespace}/{hpa.target.name}", decision.desired)
            return decision.desired, decision
        if not state.replicas:
            state.replicas.append((sim.now, current))
        return current, decision

    def _value(self, hpa: HorizontalPodAutoscaler, spec: MetricSpec, now: float) -> float | None:
        model = self.models.get(hpa.key)
        if model is not None and spec.type in ("Object", "External") and spec.name == model.metric:
            return model.rate(now)
        if self.metrics is None:
            return None
        if spec.type in ("Object", "External"):
            return self.metrics.total(spec.name, spec.selector, now)
        scoped = self.metrics.value(spec.name, f"{hpa.target.kind.lower()}={hpa.target.name}", now)
        return scoped if scoped is not None else self.metrics.value(spec.name, None, now)


def _conditions(decision: HpaDecision) -> tuple[tuple[str, ...], ...]:
    return tuple(tuple(c.values()) for c in decision.conditions)
