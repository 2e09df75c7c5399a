"""HPAs that sync at the same moments, evaluated together as arrays: the steady syncs in bulk, the rest one by one.

Most syncs of an HPA change nothing: the metrics are within tolerance, or a recent higher recommendation holds
the target where it is. For HPAs without `spec.behavior` whose metrics are all Object or External with a Value
or AverageValue target (`eligible`), `HpaBank.sync` computes every member's sync as arrays: the replica count
each metric proposes (`metric_replicas`), the largest, the scale-down stabilization over the recent
recommendations, and the limits of `convertDesiredReplicasWithRules`, exactly as `HpaController.sync` does.
A member whose sync keeps its target as it is only records its recommendation and the conditions that sync
sets (`HpaController.steady`, applied when they are read). Every other member (its first sync, a rescale, a
metric without a value, a target at zero or outside min/max, a value whose rounding to milli-units NumPy
could take differently from Python) is returned to the caller, which runs `HpaController.sync` on it after
`before_scalar` and then calls `after_scalar`: the arrays and the controller hand the recent recommendations
over to each other, so both paths see the same history.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from phalanx.autoscale.hpa import (
    DEFAULT_DOWNSCALE_STABILIZATION,
    DEFAULT_TOLERANCE,
    SCALE_UP_LIMIT_FACTOR,
    SCALE_UP_LIMIT_MINIMUM,
    HpaController,
    describe,
)

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

_LIMIT_REASONS = ("DesiredWithinRange", "ScaleUpLimit", "TooManyReplicas", "TooFewReplicas")
_WITHIN, _UP_LIMIT, _TOO_MANY, _TOO_FEW = range(4)
_MOST = float(2**62)


def _target_kind(controller: HpaController) -> list[tuple[bool, float]] | None:
    """Per metric: (per-pod average?, target in milli-units), or None when the HPA is not for the bank."""
    kinds = []
    for spec in controller.hpa.metrics:
        target = spec.target
        if spec.type == "Object":
            if target.type == "Value" and target.value is not None:
                kinds.append((False, target.value))
            elif target.type == "AverageValue" and target.average_value is not None:
                kinds.append((True, target.average_value))
            else:
                return None
        elif spec.type == "External":
            if target.average_value is not None:
                kinds.append((True, target.average_value))
            elif target.value is not None:
                kinds.append((False, target.value))
            else:
                return None
        else:
            return None
    return [(average, float(math.ceil(round(value * 1000, 6)))) for average, value in kinds]


def eligible(controller: HpaController) -> bool:
    """Whether the bank can run this HPA's steady syncs: no spec.behavior, only Object and External metrics
    with a Value or AverageValue target, the controller's default flags and the HPAScaleToZero gate on."""
    return (controller.hpa.behavior is None and bool(controller.hpa.metrics)
            and controller.tolerance == DEFAULT_TOLERANCE
            and controller.downscale_stabilization == DEFAULT_DOWNSCALE_STABILIZATION
            and controller.scale_to_zero and _target_kind(controller) is not None)


class HpaBank:
    """Eligible HPAs synced every `period` seconds at the same moments."""

    def __init__(self, controllers: Sequence[HpaController], period: float) -> None:
        if not all(eligible(c) for c in controllers):
            raise ValueError("every HPA of a bank must be eligible")
        self.controllers = list(controllers)
        n = len(self.controllers)
        self.width = max((len(c.hpa.metrics) for c in self.controllers), default=1)
        shape = (n, self.width)
        self.present = np.zeros(shape, dtype=bool)
        self.average = np.zeros(shape, dtype=bool)
        self.target = np.ones(shape)
        for i, controller in enumerate(self.controllers):
            for m, (average, target) in enumerate(_target_kind(controller) or ()):
                self.present[i, m], self.average[i, m], self.target[i, m] = True, average, target
        self.last_metric = self.present.sum(axis=1) - 1
        self.any_average = bool((self.present & self.average).any())
        self.any_value = bool((self.present & ~self.average).any())
        self.minimum = np.array([c.hpa.min_replicas for c in self.controllers], dtype=np.int64)
        self.maximum = np.array([c.hpa.max_replicas for c in self.controllers], dtype=np.int64)
        self.scaled_to_zero = np.array([c.scaled_to_zero for c in self.controllers], dtype=bool)
        self.seen = np.zeros(n, dtype=bool)
        # The recent recommendations, one slot per sync: enough slots that the one overwritten is always older
        # than the stabilization window.
        slots = int(DEFAULT_DOWNSCALE_STABILIZATION // period) + 2
        self.times = np.full(slots, -np.inf)
        self.recommended = np.full((n, slots), -1, dtype=np.int64)
        self.slot = 0
        # Conditions of the latest steady sync, applied to the controller when read (`flush`).
        self.pending = np.zeros(n, dtype=bool)
        self.metric = np.zeros(n, dtype=np.int64)
        self.stabilized = np.zeros(n, dtype=bool)
        self.limited = np.zeros(n, dtype=bool)
        self.limit_reason = np.zeros(n, dtype=np.int64)

    def __len__(self) -> int:
        return len(self.controllers)

    @property
    def memory(self) -> float:
        """How far back a sync reads earlier ones (`HpaController.memory` of every member: no spec.behavior,
        the default downscale stabilization)."""
        return DEFAULT_DOWNSCALE_STABILIZATION

    def sync(self, now: float, current: IntArray, values: FloatArray, skip: BoolArray) -> BoolArray:
        """Sync every member not in `skip` at `now` with its target at `current` replicas and its metrics'
        `values` (members × metrics, in spec order; NaN when a metric has no value). Returns the members the
        caller must sync with their HpaController (between `before_scalar` and `after_scalar`)."""
        self.slot = (self.slot + 1) % len(self.times)
        self.times[self.slot] = now
        self.recommended[:, self.slot] = -1
        present = self.present
        finite = np.isfinite(values)
        milli = np.where(present & finite, values, 0.0) * 1000.0
        scaled = milli * 1e6
        # Python rounds the exact decimal value; NumPy the product above: they may differ only near a half.
        ambiguous = np.abs(scaled - np.floor(scaled) - 0.5) < 1e-6
        usage = np.ceil(np.round(milli, 6))
        cur = current.astype(np.float64)[:, None]
        low, high = 1.0 - DEFAULT_TOLERANCE, 1.0 + DEFAULT_TOLERANCE
        per_pod = whole = usage
        with np.errstate(divide="ignore", invalid="ignore"):
            if self.any_average:
                per_pod_ratio = usage / (self.target * cur)
                per_pod = np.where((cur != 0) & (per_pod_ratio >= low) & (per_pod_ratio <= high), cur,
                                   np.ceil(usage / self.target))
            if self.any_value:
                ratio = usage / self.target
                whole = np.where(cur == 0, np.ceil(ratio),
                                 np.where((ratio >= low) & (ratio <= high), cur, np.ceil(ratio * cur)))
        proposals = np.where(present, np.where(self.average, per_pod, whole) if self.any_value and self.any_average
                             else per_pod if self.any_average else whole, -1.0)
        # A proposal past int64 (a value of 8Ei over a target of 1m) is more than any maxReplicas: held below it.
        desired = np.minimum(proposals.max(axis=1), _MOST).astype(np.int64)
        # `computeReplicasForMetrics` keeps the first largest proposal, but the last metric while all are 0.
        metric = np.where(desired > 0, proposals.argmax(axis=1), self.last_metric)
        window = self.times >= now - DEFAULT_DOWNSCALE_STABILIZATION
        recent = self.recommended[:, window].max(axis=1, initial=-1)
        stabilized = np.maximum(desired, recent)
        up_limit = np.maximum(SCALE_UP_LIMIT_FACTOR * current, SCALE_UP_LIMIT_MINIMUM).astype(np.int64)
        capped = self.maximum > up_limit
        upper = np.where(capped, up_limit, self.maximum)
        result = np.where(stabilized < self.minimum, self.minimum, np.minimum(stabilized, upper))
        reason = np.where(stabilized < self.minimum, _TOO_FEW,
                          np.where(stabilized > upper, np.where(capped, _UP_LIMIT, _TOO_MANY), _WITHIN))
        scalar = ~self.seen | (present & (~finite | ambiguous)).any(axis=1)
        scalar |= (current == 0) & ~self.scaled_to_zero
        scalar |= (current > self.maximum) | (current < self.minimum) | (result != current)
        scalar &= ~skip
        steady = ~scalar & ~skip
        np.copyto(self.recommended[:, self.slot], desired, where=steady)
        self.pending |= steady
        np.copyto(self.metric, metric, where=steady)
        np.copyto(self.stabilized, stabilized != desired, where=steady)
        np.copyto(self.limited, result != stabilized, where=steady)
        np.copyto(self.limit_reason, reason, where=steady)
        self.seen |= ~skip
        return scalar

    def repeat_last(self, times: Sequence[float]) -> None:
        """Record again, at each of `times`, what every member's latest sync recommended (syncs skipped because
        they would have recommended the same)."""
        for time in times:
            previous = self.slot
            self.slot = (self.slot + 1) % len(self.times)
            self.times[self.slot] = time
            self.recommended[:, self.slot] = self.recommended[:, previous]

    def flush(self, i: int) -> None:
        """Apply member `i`'s latest steady sync's conditions to its controller."""
        if self.pending[i]:
            self.pending[i] = False
            controller = self.controllers[i]
            controller.steady(describe(controller.hpa.metrics[int(self.metric[i])]), bool(self.stabilized[i]),
                              bool(self.limited[i]), _LIMIT_REASONS[int(self.limit_reason[i])])

    def before_scalar(self, i: int) -> None:
        """Hand member `i`'s state to its controller for a sync of its own."""
        self.flush(i)
        controller = self.controllers[i]
        if controller.recommendations is None:  # its first sync records the initial recommendation itself
            return
        order = np.argsort(self.times, kind="stable")
        row = self.recommended[i]
        controller.recommendations = [(float(self.times[s]), int(row[s])) for s in order if row[s] >= 0]

    def after_scalar(self, i: int, now: float) -> None:
        """Take back what member `i`'s own sync at `now` recorded."""
        controller = self.controllers[i]
        # Only the highest recommendation of a moment counts (the bank's HPAs have no spec.behavior, whose
        # scale-up window would want the lowest): the initial one and the sync's own share a slot.
        now_recommended = [r for t, r in controller.recommendations or () if t == now]
        if now_recommended:
            self.recommended[i, self.slot] = min(max(now_recommended), int(_MOST))
        self.scaled_to_zero[i] = controller.scaled_to_zero
