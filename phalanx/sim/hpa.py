"""HorizontalPodAutoscalers in the simulator: every 15 s of simulated time (the controller's sync period) each
HPA reads its metrics and, through the v2 algorithm of phalanx.autoscale.hpa, sets its target's replicas (the
scale subresource of a Deployment, ReplicaSet or StatefulSet).

Where metric values come from (`--metrics FILE`, phalanx.autoscale.metrics):
- Object and External metrics: the sum over the series of that metric name its selector selects, as an
  external metrics API serves them;
- Resource, ContainerResource and Pods metrics (the pods' usage): the series of that name (`cpu`, `memory`, a
  Pods metric's name) labelled with the target, `deployment=<name>` (or `statefulset=`, `replicaset=`), else
  the unlabelled series of that name. A Utilization target reads the value as percent of the request.
Without a value an HPA leaves its target alone (`ScalingActive=False`), as the controller does when it cannot
read a metric. The HPA keeps syncing until `--until`, or until 10 minutes after the last row of the metrics
file (the default scale-down stabilization is 5 minutes), or, without a metrics file, for one sync.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from phalanx.api.autoscaling import HorizontalPodAutoscaler, MetricSpec
from phalanx.autoscale.hpa import HpaController
from phalanx.autoscale.metrics import MetricsSeries
from phalanx.sim.engine import ARRIVAL

if TYPE_CHECKING:
    from phalanx.sim.simulation import Simulation

SYNC_PERIOD = 15.0  # kube-controller-manager --horizontal-pod-autoscaler-sync-period
AFTER_LAST_ROW = 600.0


@dataclass(slots=True)
class HpaSync:
    """An HPA's periodic sync is due."""

    key: str


@dataclass(slots=True)
class _State:
    hpa: HorizontalPodAutoscaler
    controller: HpaController
    conditions: list[dict[str, str]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    replicas: list[tuple[float, int]] = field(default_factory=list)  # (time, replicas) after each change
    scaled_to_zero: int = 0  # 1→0 transitions
    woke_from_zero: int = 0  # 0→N transitions


class Autoscalers:
    def __init__(self, hpas: list[HorizontalPodAutoscaler], metrics: MetricsSeries | None,
                 until: float | None) -> None:
        self.metrics = metrics
        self.states = {h.key: _State(h, HpaController(h)) for h in hpas}
        last = metrics.last_time() if metrics is not None else None
        self.horizon = until if until is not None else (last + AFTER_LAST_ROW if last is not None else None)

    def arrive(self, hpa: HorizontalPodAutoscaler, sim: Simulation) -> None:
        sim.events.push(sim.now, ARRIVAL, HpaSync(hpa.key))

    def sync(self, key: str, sim: Simulation) -> None:
        state = self.states[key]
        hpa = state.hpa
        current = sim.workloads.replicas(hpa.target.kind, f"{hpa.namespace}/{hpa.target.name}")
        if current is not None:
            decision = state.controller.sync(sim.now, current, lambda spec, now: self._value(hpa, spec, now))
            state.conditions = decision.conditions
            for message in decision.events:
                state.events.append({"time": sim.now, "message": message})
            if decision.rescale:
                if decision.desired == 0:
                    state.scaled_to_zero += 1
                elif current == 0:
                    state.woke_from_zero += 1
                state.replicas.append((sim.now, decision.desired))
                sim.scale(hpa.target.kind, f"{hpa.namespace}/{hpa.target.name}", decision.desired)
            elif not state.replicas:
                state.replicas.append((sim.now, current))
        following = sim.now + SYNC_PERIOD
        if self.horizon is not None and following <= self.horizon:
            sim.events.push(following, ARRIVAL, HpaSync(key))

    def _value(self, hpa: HorizontalPodAutoscaler, spec: MetricSpec, now: float) -> float | None:
        if self.metrics is None:
            return None
        if spec.type in ("Object", "External"):
            return self.metrics.total(spec.name, spec.selector, now)
        scoped = self.metrics.value(spec.name, f"{hpa.target.kind.lower()}={hpa.target.name}", now)
        return scoped if scoped is not None else self.metrics.value(spec.name, None, now)
