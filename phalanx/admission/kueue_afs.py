"""Kueue's admission fair sharing (Configuration `admissionFairSharing`, ClusterQueue
`admissionScope.admissionMode: UsageBasedAdmissionFairSharing`), restated from Kueue v0.17.0 on the simulated
clock, not ported:

- Each LocalQueue of such a ClusterQueue has consumed resources, an exponentially decayed mean of what its admitted
  workloads use (pkg/util/admissionfairsharing CalculateDecayedConsumed): after `elapsed` seconds with usage U,
  consumed becomes consumed·(1−α) + U·α with α = 1 − 0.5^(elapsed / usageHalfLifeTime); a half-life of 0 keeps
  it at nothing (the LocalQueue reconciler resets it).
- The LocalQueue reconciler samples it every usageSamplingInterval after its last update; once the LocalQueue
  has admitted a workload (its entry penalty exists from then on), every change to one of its workloads updates
  it too (localqueue_controller.go). An admission adds at once the entry penalty α(sampling, half-life) × the
  workload's requests (scheduler.go updateEntryPenalty, workload_controller.go folding it into consumed).
- A LocalQueue's usage is Σ over resources of resourceWeights[r] (default 1) × consumed[r], over the
  LocalQueue's fairSharing.weight, with amounts as Kubernetes' AsApproximateFloat64 gives them (cpu in cores).
  The ClusterQueue's queue orders its workloads by that usage, lower first, then as usual (queueOrderingFunc);
  preemption candidates of one ClusterQueue in different LocalQueues go higher usage first (CandidatesOrdering).
Kueue runs the sampling on the wall clock with its reconcilers' latencies; this model takes each step at the
simulated instant of its cause, so it is restated from Kueue's tests (TestScheduleForAFS), not checked against the
real binary.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from phalanx.admission.kueue_config import AdmissionFairSharing

Usage = dict[str, float]


@dataclass(slots=True)
class _LocalQueue:
    weight: float
    consumed: Usage = field(default_factory=dict)
    admitted: Usage = field(default_factory=dict)  # what its admitted workloads use now
    last: float = 0.0
    penalised: bool = False  # it has admitted a workload: every change to its workloads updates `consumed`


def kube_units(usage: Mapping[tuple[str, str], int]) -> Usage:
    """Per resource name over flavors, as Kubernetes floats (cpu in cores; Phalanx counts millicores)."""
    out: Usage = {}
    for (_, resource), value in usage.items():
        out[resource] = out.get(resource, 0.0) + (value / 1000 if resource == "cpu" else float(value))
    return out


class AdmissionUsage:
    """The consumed resources of the LocalQueues of ClusterQueues with usage-based admission fair sharing."""

    def __init__(self, config: AdmissionFairSharing, weights: Mapping[str, float]) -> None:
        """`weights`: each such LocalQueue (namespace/name) and its fairSharing.weight."""
        self.config = config
        self.queues = {key: _LocalQueue(weight) for key, weight in weights.items()}

    def _alpha(self, elapsed: float) -> float:
        if self.config.half_life == 0:
            return 0.0
        return float(1.0 - 0.5 ** (elapsed / self.config.half_life))

    def _decay(self, lq: _LocalQueue, elapsed: float) -> None:
        if self.config.half_life == 0:
            lq.consumed = {}
            return
        alpha = self._alpha(elapsed)
        names = set(lq.consumed) | set(lq.admitted)
        lq.consumed = {r: lq.consumed.get(r, 0.0) * (1 - alpha) + lq.admitted.get(r, 0.0) * alpha for r in names}

    def catch_up(self, now: float) -> set[str]:
        """Take the samples due by `now` (every interval after the last update, with the usage unchanged since),
        and answer the LocalQueues whose consumed resources changed."""
        changed: set[str] = set()
        interval = self.config.sampling
        for key, lq in self.queues.items():
            steps = int((now - lq.last) // interval)
            if steps <= 0:
                continue
            before = lq.consumed
            self._decay(lq, steps * interval)
            lq.last += steps * interval
            if lq.consumed != before:
                changed.add(key)
        return changed

    def touched(self, key: str, now: float) -> bool:
        """A workload of the LocalQueue changed: its reconciler updates consumed once it has admitted one."""
        lq = self.queues.get(key)
        if lq is None or not lq.penalised:
            return False
        before = lq.consumed
        self._decay(lq, now - lq.last)
        lq.last = now
        return lq.consumed != before

    def admitted(self, key: str, usage: Mapping[tuple[str, str], int], now: float) -> bool:
        lq = self.queues.get(key)
        if lq is None:
            return False
        requests = kube_units(usage)
        for name, value in requests.items():
            lq.admitted[name] = lq.admitted.get(name, 0.0) + value
        self._decay(lq, now - lq.last)
        penalty = self._alpha(self.config.sampling)
        for name, value in requests.items():
            lq.consumed[name] = lq.consumed.get(name, 0.0) + penalty * value
        lq.last = now
        lq.penalised = True
        return True

    def released(self, key: str, usage: Mapping[tuple[str, str], int], now: float) -> bool:
        lq = self.queues.get(key)
        if lq is None:
            return False
        for name, value in kube_units(usage).items():
            left = lq.admitted.get(name, 0.0) - value
            lq.admitted[name] = left if abs(left) > 1e-9 else 0.0
        return self.touched(key, now)

    def usage(self, key: str) -> float:
        """CalcFSUsageFromResources: the weighted sum of consumed resources over the LocalQueue's weight."""
        lq = self.queues.get(key)
        if lq is None:
            return 0.0
        total = sum(self.config.weight(name) * value for name, value in sorted(lq.consumed.items()))
        if lq.weight == 0:
            return float("inf") if total > 0 else 0.0
        return total / lq.weight

    def consumed(self, key: str) -> dict[str, float]:
        lq = self.queues.get(key)
        return {} if lq is None else {r: round(v, 6) for r, v in sorted(lq.consumed.items()) if v}

    def keys(self) -> Iterable[str]:
        return self.queues.keys()
