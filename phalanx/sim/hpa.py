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
without any, for one sync.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from phalanx.api.autoscaling import HorizontalPodAutoscaler, MetricSpec
from phalanx.api.objects import LabelSelector
from phalanx.api.quantity import parse_duration
from phalanx.autoscale.hpa import HpaController, MetricValues
from phalanx.autoscale.hpa_bank import HpaBank, eligible
from phalanx.autoscale.metrics import MetricsSeries, RateModels, RequestRateModel
from phalanx.errors import InputError
from phalanx.sim.engine import ARRIVAL

if TYPE_CHECKING:
    from phalanx.sim.simulation import Simulation

RATE_MODEL = "phalanx.dev/request-rate-model"
REQUEST_METRIC = "phalanx.dev/request-metric"
SYNC_PERIOD = 15.0  # kube-controller-manager --horizontal-pod-autoscaler-sync-period
AFTER_LAST_ROW = 600.0


@dataclass(slots=True)
class HpaSync:
    """An HPA's periodic sync is due."""

    key: str


@dataclass(slots=True)
class HpaBankSync:
    """The periodic sync of a bank of HPAs (phalanx.autoscale.hpa_bank) is due."""

    bank: int


@dataclass(slots=True)
class _State:
    hpa: HorizontalPodAutoscaler
    controller: HpaController
    events: list[dict[str, Any]] = field(default_factory=list)
    replicas: list[tuple[float, int]] = field(default_factory=list)  # (time, replicas) after each change
    scaled_to_zero: int = 0  # 1→0 transitions
    woke_from_zero: int = 0  # 0→N transitions
    bank: tuple[HpaBank, int] | None = None  # the bank that syncs it, and its place there

    @property
    def conditions(self) -> list[dict[str, str]]:
        if self.bank is not None:
            self.bank[0].flush(self.bank[1])
        return self.controller.conditions()


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
                values[key] = float(value)
        if "base" not in values or "peak" not in values:
            raise ValueError("base= and peak= are required")
        return RequestRateModel(**values)
    except (ValueError, InputError) as exc:
        detail = exc.detail if isinstance(exc, InputError) else str(exc)
        raise InputError(detail, field=field, **where) from None


class Autoscalers:
    def __init__(self, hpas: list[HorizontalPodAutoscaler], metrics: MetricsSeries | None,
                 until: float | None) -> None:
        self.metrics = metrics
        self.states = {h.key: _State(h, HpaController(h)) for h in hpas}
        self.models = {h.key: model for h in hpas if (model := rate_model(h)) is not None}
        together: dict[float, list[_State]] = {}
        for state in self.states.values():
            if eligible(state.controller):
                together.setdefault(state.hpa.arrival, []).append(state)
        self.banks = [_Bank(states, self.models, metrics) for _, states in sorted(together.items())]
        self.bank_of = {state.hpa.key: b for b, bank in enumerate(self.banks) for state in bank.states}
        self.syncs = 0  # HPA syncs run (one per HPA with a target, per period)
        last = metrics.last_time() if metrics is not None else None
        if until is not None:
            self.horizon: float | None = until
        elif last is not None:
            self.horizon = last + AFTER_LAST_ROW
        elif self.models:  # a model never runs out: one period of it
            self.horizon = max(h.arrival for h in hpas) + max(m.period for m in self.models.values())
        else:
            self.horizon = None

    def arrive(self, hpa: HorizontalPodAutoscaler, sim: Simulation) -> None:
        bank = self.bank_of.get(hpa.key)
        if bank is None:
            sim.events.push(sim.now, ARRIVAL, HpaSync(hpa.key))
        elif not self.banks[bank].started:
            self.banks[bank].started = True
            sim.events.push(sim.now, ARRIVAL, HpaBankSync(bank))

    def sync(self, key: str, sim: Simulation) -> None:
        state = self.states[key]
        hpa = state.hpa
        current = sim.workloads.replicas(hpa.target.kind, f"{hpa.namespace}/{hpa.target.name}")
        if current is not None:
            self.syncs += 1
            self._sync(state, current, lambda spec, now: self._value(hpa, spec, now), sim)
        self._again(HpaSync(key), sim)

    def sync_bank(self, index: int, sim: Simulation) -> None:
        bank = self.banks[index]
        now = sim.now
        workloads = sim.workloads
        if bank.replicas_version != workloads.replicas_version:
            replicas = workloads.replica_counts(bank.targets)
            bank.skip = np.array([r is None for r in replicas], dtype=bool)
            bank.current = np.array([r or 0 for r in replicas], dtype=np.int64)
        current, version = bank.current, workloads.replicas_version
        self.syncs += len(bank.states) - int(np.count_nonzero(bank.skip))
        values = bank.values(now)
        for i in np.flatnonzero(bank.hpas.sync(now, current, values, bank.skip)).tolist():
            state = bank.states[i]
            row = values[i]
            position = {id(spec): m for m, spec in enumerate(state.hpa.metrics)}

            def value(spec: MetricSpec, _: float, row: npt.NDArray[np.float64] = row,
                      position: dict[int, int] = position) -> float | None:
                found = float(row[position[id(spec)]])
                return None if math.isnan(found) else found

            bank.hpas.before_scalar(i)
            desired = self._sync(state, int(current[i]), value, sim)
            bank.hpas.after_scalar(i, now)
            if desired != current[i]:
                current[i] = desired
                version += 1  # this scale, which `current` already shows
        # Kept for the next sync unless something else changed some replicas meanwhile.
        bank.replicas_version = version if version == workloads.replicas_version else -1
        self._again(HpaBankSync(index), sim)

    def _again(self, event: HpaSync | HpaBankSync, sim: Simulation) -> None:
        following = sim.now + SYNC_PERIOD
        if self.horizon is not None and following <= self.horizon:
            sim.events.push(following, ARRIVAL, event)

    def _sync(self, state: _State, current: int, values: MetricValues, sim: Simulation) -> int:
        """One HPA's own sync; returns its target's replicas after it."""
        hpa = state.hpa
        decision = state.controller.sync(sim.now, current, values)
        for message in decision.events:
            state.events.append({"time": sim.now, "message": message})
        if decision.rescale:
            if decision.desired == 0:
                state.scaled_to_zero += 1
            elif current == 0:
                state.woke_from_zero += 1
            state.replicas.append((sim.now, decision.desired))
            sim.scale(hpa.target.kind, f"{hpa.namespace}/{hpa.target.name}", decision.desired)
            return decision.desired
        if not state.replicas:
            state.replicas.append((sim.now, current))
        return current

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
