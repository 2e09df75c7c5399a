"""The HorizontalPodAutoscaler controller's algorithm (autoscaling/v2, Kubernetes v1.37), pure and deterministic.

Restates kube-controller-manager's `pkg/controller/podautoscaler/horizontal.go` (`reconcileAutoscaler`,
`computeReplicasForMetrics`, `normalizeDesiredReplicas`, `normalizeDesiredReplicasWithBehaviors`,
`stabilizeRecommendation`, `stabilizeRecommendationWithBehaviors`, `convertDesiredReplicasWithRules`,
`convertDesiredReplicasWithBehaviorRate`, `calculateScaleUpLimitWithScalingRules`,
`calculateScaleDownLimitWithBehaviors`, `getReplicasChangePerPeriod`, `storeScaleEvent`) and
`replica_calculator.go` (`GetResourceReplicas`, `GetRawResourceReplicas`, `GetMetricReplicas`,
`GetObjectMetricReplicas`, `GetObjectPerPodMetricReplicas`, `GetExternalMetricReplicas`,
`GetExternalPerPodMetricReplicas`, `getUsageRatioReplicaCount`), with the v1.37 `HPAScaleToZero` behaviour
(SPEC.md section 5).

The caller owns the clock and the 15 s sync period: it calls `HpaController.sync(now, current, metric_values)`
with non-decreasing `now` and sets the target to `HpaDecision.desired` (the controller records a scale event
whenever `desired != current`, as if the scale update succeeded).

Simplified, on purpose:
- Readiness: every pod of the target counts as ready and as having metrics. kube's handling of unready pods
  (`--horizontal-pod-autoscaler-cpu-initialization-period`, `--initial-readiness-delay`) and of pods missing
  metrics (counted at 0% on scale-up, 100% of target on scale-down) is not modelled.
- Metric values come from `metric_values(spec, now)` already aggregated: the average utilization in percent
  (truncated to an integer, as kube computes it) for a Utilization target, the per-pod average for Resource
  AverageValue and Pods metrics, the object's value for Object metrics, and the sum over selected series for
  External metrics. None means the metric could not be read.
- Scale events are kept for the longest policy period of either direction (kube keeps a slot per event and
  reuses outdated ones); recommendations for the longer stabilization window.
- Scaling up from zero under `behavior` rules is allowed at least one replica even when every policy is a
  Percent one (a percent of zero is zero, which would pin the target at zero; UNCONFIRMED upstream).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from phalanx.api.autoscaling import HorizontalPodAutoscaler, MetricSpec, ScalingRules

MetricValues = Callable[[MetricSpec, float], float | None]
# `validateAndParseSelector`'s check that no other HPA controls the target's pods: the error message, or None.
SelectorCheck = Callable[[], str | None]

DEFAULT_TOLERANCE = 0.1  # --horizontal-pod-autoscaler-tolerance
DEFAULT_DOWNSCALE_STABILIZATION = 300.0  # --horizontal-pod-autoscaler-downscale-stabilization
SCALE_UP_LIMIT_FACTOR = 2.0  # without spec.behavior: at most double, or 4, per sync
SCALE_UP_LIMIT_MINIMUM = 4
CONDITION_ORDER = ("AbleToScale", "ScalingActive", "ScalingLimited", "ScaledToZero")
_FAILED_REASON = {"Resource": "FailedGetResourceMetric", "ContainerResource": "FailedGetContainerResourceMetric",
                  "Pods": "FailedGetPodsMetric", "Object": "FailedGetObjectMetric",
                  "External": "FailedGetExternalMetric"}


@dataclass(frozen=True, slots=True)
class Tolerances:
    """The band around ratio 1 in which no scaling happens (`tolerances.isWithin`)."""

    down: float = DEFAULT_TOLERANCE
    up: float = DEFAULT_TOLERANCE

    def within(self, ratio: float) -> bool:
        return (1.0 - self.down) <= ratio <= (1.0 + self.up)


class MetricError(Exception):
    """A metric that gives no replica count this sync; `reason` is the ScalingActive=False reason."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class MetricProposal:
    """One metric's part in a sync: its value and the replica count it proposes (None when it failed)."""

    metric: str
    value: float | None
    replicas: int | None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class HpaDecision:
    current: int
    desired: int
    conditions: list[dict[str, str]]
    events: list[str]
    proposals: tuple[MetricProposal, ...] = ()

    @property
    def rescale(self) -> bool:
        return self.desired != self.current

    def condition(self, kind: str) -> dict[str, str] | None:
        return next((c for c in self.conditions if c["type"] == kind), None)


def describe(spec: MetricSpec) -> str:
    """The metric as kube names it in conditions and events."""
    if spec.type in ("Resource", "ContainerResource"):
        kind = "resource" if spec.type == "Resource" else "container resource"
        if spec.target.average_value is None:
            return f"{spec.name} {kind} utilization (percentage of request)"
        return f"{spec.name} {kind}"
    if spec.type == "Pods":
        return f"pods metric {spec.name}"
    if spec.type == "Object":
        kind = spec.described_object.kind if spec.described_object else "object"
        return f"{kind} metric {spec.name}"
    return f"external metric {spec.name}" + (f" ({_selector_text(spec)})" if spec.selector else "")


def _selector_text(spec: MetricSpec) -> str:
    assert spec.selector is not None
    parts = [f"{k}={v}" for k, v in spec.selector.match_labels]
    parts += [f"{r.key} {r.operator} ({','.join(r.values)})" for r in spec.selector.expressions]
    return ",".join(parts)


def _milli(value: float) -> int:
    """A quantity as kube's MilliValue (rounded up), so ratios are ratios of integers as upstream."""
    return math.ceil(round(value * 1000, 6))


def usage_ratio_replicas(current: int, ratio: float, tolerances: Tolerances) -> int:
    """`getUsageRatioReplicaCount`: within tolerance keep `current`; else ceil(ratio × current); from zero
    replicas, ceil(ratio)."""
    if current != 0:
        if tolerances.within(ratio):
            return current
        return math.ceil(ratio * current)
    return math.ceil(ratio)


def per_pod_replicas(current: int, usage: int, target_average: int, tolerances: Tolerances) -> int:
    """`GetExternalPerPodMetricReplicas` / `GetObjectPerPodMetricReplicas`: ceil(usage / target average) unless
    usage / (target × current) is within tolerance (never the case from zero replicas)."""
    if current != 0 and tolerances.within(usage / (target_average * current)):
        return current
    return math.ceil(usage / target_average)


def metric_replicas(spec: MetricSpec, value: float | None, current: int, tolerances: Tolerances) -> int:
    """The replica count one metric proposes (`computeReplicasForMetric` and the replica calculator);
    MetricError when it proposes none."""
    reason = _FAILED_REASON[spec.type]
    if value is None or not math.isfinite(value):
        raise MetricError(reason, f"unable to get {describe(spec)}: no value")
    target = spec.target
    if spec.type in ("Resource", "ContainerResource", "Pods"):
        if current == 0:
            raise MetricError(reason, f"unable to get {describe(spec)}: the target has no pods to measure")
        if target.average_value is not None:  # GetRawResourceReplicas, GetMetricReplicas
            ratio = _milli(value) / _milli(target.average_value)
        elif target.average_utilization is not None:  # GetResourceReplicas: integer percent
            ratio = math.trunc(value) / target.average_utilization
        else:
            raise MetricError(reason, "invalid resource metric source: neither an average utilization target nor "
                                      "an average value target was set")
        return current if tolerances.within(ratio) else math.ceil(ratio * current)
    usage = _milli(value)
    if spec.type == "Object":
        if target.type == "Value" and target.value is not None:
            return usage_ratio_replicas(current, usage / _milli(target.value), tolerances)
        if target.type == "AverageValue" and target.average_value is not None:
            return per_pod_replicas(current, usage, _milli(target.average_value), tolerances)
        raise MetricError(reason, "invalid object metric source: neither a value target nor an average value "
                                  "target was set")
    if target.average_value is not None:  # External: the field set decides, whatever target.type says
        return per_pod_replicas(current, usage, _milli(target.average_value), tolerances)
    if target.value is not None:
        return usage_ratio_replicas(current, usage / _milli(target.value), tolerances)
    raise MetricError(reason, "invalid external metric source: neither a value target nor an average value target "
                              "was set")


class HpaController:
    """One HPA's controller state: its status conditions, recent recommendations and scale events."""

    def __init__(self, hpa: HorizontalPodAutoscaler, *, tolerance: float = DEFAULT_TOLERANCE,
                 downscale_stabilization: float = DEFAULT_DOWNSCALE_STABILIZATION, scale_to_zero: bool = True,
                 scaled_to_zero: bool = False) -> None:
        """`tolerance` and `downscale_stabilization` are the controller's flags; `scale_to_zero` is the
        HPAScaleToZero gate (on in v1.37); `scaled_to_zero` resumes an HPA whose status has ScaledToZero=True."""
        self.hpa = hpa
        self.tolerance = tolerance
        self.downscale_stabilization = downscale_stabilization
        self.scale_to_zero = scale_to_zero
        self._conditions: dict[str, tuple[str, str, str]] = {}
        if scaled_to_zero:
            self._set("ScaledToZero", True, "ScaledToZero", "the HPA controller scaled the workload to zero")
        # None until the first sync records the target's replicas as the first recommendation
        # (`recordInitialRecommendation`, which records only while the controller has none for the HPA).
        self._recommendations: list[tuple[float, int]] | None = None
        self._up_events: list[tuple[float, int]] = []
        self._down_events: list[tuple[float, int]] = []

    @property
    def scaled_to_zero(self) -> bool:
        return self._conditions.get("ScaledToZero", ("False",))[0] == "True"

    def _set(self, kind: str, status: bool, reason: str, message: str) -> None:
        self._conditions[kind] = ("True" if status else "False", reason, message)

    def _decision(self, current: int, desired: int, events: list[str],
                  proposals: tuple[MetricProposal, ...] = ()) -> HpaDecision:
        return HpaDecision(current=current, desired=desired, conditions=self.conditions(), events=events,
                           proposals=proposals)

    def conditions(self) -> list[dict[str, str]]:
        """The HPA's status conditions now, in kube's order."""
        return [{"type": kind, "status": c[0], "reason": c[1], "message": c[2]}
                for kind in CONDITION_ORDER if (c := self._conditions.get(kind)) is not None]

    @property
    def recommendations(self) -> list[tuple[float, int]] | None:
        """(time, recommendation) of the recent syncs, oldest first (the stabilization windows read them); None
        before the first sync. Setting a list, even an empty one, skips the initial recommendation, as a kube
        controller test does by filling its `recommendations` map."""
        return self._recommendations

    @recommendations.setter
    def recommendations(self, value: list[tuple[float, int]]) -> None:
        self._recommendations = value

    def steady(self, metric: str, stabilized: bool, limited: bool, limit_reason: str) -> None:
        """The conditions a sync leaves when it computes a replica count from `metric`, without spec.behavior,
        and keeps the target as it is (`_compute` then `_normalize`): `stabilized` when a recent higher
        recommendation won, `limited` with the ScalingLimited reason of `convertDesiredReplicasWithRules`."""
        self._set("ScalingActive", True, "ValidMetricFound",
                  f"the HPA was able to successfully calculate a replica count from {metric}")
        if stabilized:
            self._set("AbleToScale", True, "ScaleDownStabilized", _STABILIZED_DOWN_MESSAGE)
        else:
            self._set("AbleToScale", True, "ReadyForNewScale", _READY_MESSAGE)
        self._set("ScalingLimited", limited, limit_reason, LIMIT_MESSAGES[limit_reason])

    def _tolerances(self) -> Tolerances:
        behavior = self.hpa.behavior
        down = behavior.scale_down.tolerance if behavior is not None else None
        up = behavior.scale_up.tolerance if behavior is not None else None
        return Tolerances(down=self.tolerance if down is None else down, up=self.tolerance if up is None else up)

    def memory(self) -> float:
        """How far back a sync reads what earlier syncs left (recommendations, scale events): the longest
        stabilization window or policy period. Syncs that see the same target and metric values for longer than
        this leave the controller as they found it."""
        behavior = self.hpa.behavior
        if behavior is None:
            return self.downscale_stabilization
        down = behavior.scale_down.stabilization_window_seconds
        spans = [float(behavior.scale_up.stabilization_window_seconds or 0),
                 self.downscale_stabilization if down is None else float(down)]
        spans += [float(p.period_seconds) for rules in (behavior.scale_up, behavior.scale_down)
                  for p in rules.policies]
        return max(spans)

    def repeat_last(self, last: float, times: Iterable[float]) -> None:
        """Record again, at each of `times`, what the sync at `last` recommended: the syncs skipped after it
        would have recommended the same (nothing, if it recommended nothing)."""
        recommendations = self._recommendations
        if recommendations and recommendations[-1][0] == last:
            recommendations.extend((time, recommendations[-1][1]) for time in times)

    def failed_get_scale(self, error: str) -> HpaDecision:
        """A sync that could not read the target's scale subresource (`reconcileAutoscaler`: the target is
        missing): AbleToScale=False FailedGetScale, and nothing else happens."""
        self._set("AbleToScale", False, "FailedGetScale",
                  f"the HPA controller was unable to get the target's current scale: {error}")
        return self._decision(0, 0, [f"FailedGetScale: {error}"])

    def sync(self, now: float, current_replicas: int, metric_values: MetricValues,
             selector_check: SelectorCheck | None = None) -> HpaDecision:
        """One reconcile (`reconcileAutoscaler`) at time `now` with the target at `current_replicas`;
        `selector_check` is called where the controller checks that no other HPA controls the same pods."""
        hpa = self.hpa
        current = current_replicas
        minimum, maximum = hpa.min_replicas, hpa.max_replicas
        events: list[str] = []
        scaled_condition = self.scale_to_zero and self.scaled_to_zero
        can_scale_from_zero = scaled_condition and hpa.has_object_or_external
        proposals: tuple[MetricProposal, ...] = ()
        reason = ""
        desired = current
        # `reconcileAutoscaler` sets this on every sync once it has read the scale subresource; the steps below
        # overwrite it, except where the sync stops early (a paused target at zero, metrics that failed).
        self._set("AbleToScale", True, "SucceededGetScale", "the HPA controller was able to get the target's current "
                                                            "scale")
        if self._recommendations is None:  # `recordInitialRecommendation`: the target's count holds a window
            self._recommendations = [(now, current)]
        if current == 0:
            # `shouldComputeMetricsForZeroReplicas`: a target at zero is scaled only if this HPA put it there
            # (with the gate off, never).
            if not ((minimum != 0 and scaled_condition) or can_scale_from_zero):
                self._set("ScalingActive", False, "ScalingDisabled",
                          "scaling is disabled since the replica count of the target is zero")
                if not self.scale_to_zero:
                    self._conditions.pop("ScaledToZero", None)
                return self._decision(current, 0, events)
            compute = True
        elif current > maximum:
            desired, reason, compute = maximum, "Current number of replicas above Spec.MaxReplicas", False
        elif current < minimum:
            desired, reason, compute = minimum, "Current number of replicas below Spec.MinReplicas", False
        else:
            compute = True
        if compute:
            ambiguous = selector_check() if selector_check is not None else None
            if ambiguous is not None:  # `validateAndParseSelector`, at the start of `computeReplicasForMetrics`
                self._set("ScalingActive", False, "AmbiguousSelector", ambiguous)
                events += [f"AmbiguousSelector: {ambiguous}", f"FailedComputeMetricsReplicas: {ambiguous}"]
                return self._decision(current, current, events)
            outcome = self._compute(now, current, metric_values, events)
            proposals = outcome[2]
            if outcome[0] is None:
                return self._decision(current, current, events, proposals)
            metric_desired, metric_name = outcome[0], outcome[1]
            if metric_desired > current:
                reason = f"{metric_name} above target"
            elif metric_desired < current:
                reason = "All metrics below target"
            if hpa.behavior is None:
                desired = self._normalize(now, current, metric_desired)
            else:
                desired = self._normalize_with_behaviors(now, current, metric_desired)
            if current == 0 and minimum != 0 and scaled_condition and desired < minimum:
                desired = minimum
                reason = reason or "Current number of replicas below Spec.MinReplicas"
        if desired != current:
            self._set("AbleToScale", True, "SucceededRescale",
                      f"the HPA controller was able to update the target scale to {desired}")
            events.append(f"SuccessfulRescale: New size: {desired}; reason: {reason}")
            if hpa.behavior is not None:
                self._store_scale_event(now, current, desired)
            if self.scale_to_zero:
                if current > 0 and desired == 0 and minimum == 0 and hpa.has_object_or_external:
                    self._set("ScaledToZero", True, "ScaledToZero", "the HPA controller scaled the workload to zero")
                else:
                    self._set("ScaledToZero", False, "NotScaledToZero",
                              "the HPA controller did not scale the workload to zero")
        return self._decision(current, desired, events, proposals)

    def _compute(self, now: float, current: int, metric_values: MetricValues,
                 events: list[str]) -> tuple[int | None, str, tuple[MetricProposal, ...]]:
        """`computeReplicasForMetrics`: the largest proposal; none when every metric failed, or when some
        failed and the rest would scale down (a missing metric never lets the target shrink)."""
        tolerances = self._tolerances()
        replicas, name = 0, ""
        failures: list[MetricError] = []
        proposals: list[MetricProposal] = []
        for spec in self.hpa.metrics:
            value = metric_values(spec, now)
            try:
                proposal = metric_replicas(spec, value, current, tolerances)
            except MetricError as exc:
                failures.append(exc)
                events.append(f"{exc.reason}: {exc}")
                proposals.append(MetricProposal(describe(spec), value, None, str(exc)))
                continue
            proposals.append(MetricProposal(describe(spec), value, proposal))
            if replicas == 0 or proposal > replicas:
                replicas, name = proposal, describe(spec)
        total = len(self.hpa.metrics)
        if failures and (len(failures) >= total or replicas < current):
            first = failures[0]
            self._set("ScalingActive", False, first.reason, f"the HPA was unable to compute the replica count: {first}")
            events.append(f"FailedComputeMetricsReplicas: invalid metrics ({len(failures)} invalid out of {total}), "
                          f"first error is: {first}")
            return None, "", tuple(proposals)
        self._set("ScalingActive", True, "ValidMetricFound",
                  f"the HPA was able to successfully calculate a replica count from {name}")
        return replicas, name, tuple(proposals)

    # spec.behavior unset: the controller's own rules.

    def _normalize(self, now: float, current: int, desired: int) -> int:
        """`normalizeDesiredReplicas`: the highest recommendation of the downscale window, then
        `convertDesiredReplicasWithRules` (min, max, and at most max(2 × current, 4) on the way up)."""
        cutoff = now - self.downscale_stabilization
        stabilized = max([desired, *(r for t, r in self._recommendations or () if t >= cutoff)])
        self._record(now, desired, self.downscale_stabilization)
        if stabilized != desired:
            self._set("AbleToScale", True, "ScaleDownStabilized", _STABILIZED_DOWN_MESSAGE)
        else:
            self._set("AbleToScale", True, "ReadyForNewScale", _READY_MESSAGE)
        up_limit = int(max(SCALE_UP_LIMIT_FACTOR * current, SCALE_UP_LIMIT_MINIMUM))
        if self.hpa.max_replicas > up_limit:
            upper, reason, message = up_limit, "ScaleUpLimit", _UP_LIMIT_MESSAGE
        else:
            upper, reason, message = self.hpa.max_replicas, "TooManyReplicas", _TOO_MANY_MESSAGE
        if stabilized < self.hpa.min_replicas:
            result, reason, message = self.hpa.min_replicas, "TooFewReplicas", _TOO_FEW_MESSAGE
        elif stabilized > upper:
            result = upper
        else:
            result, reason, message = stabilized, "DesiredWithinRange", _WITHIN_MESSAGE
        self._set("ScalingLimited", result != stabilized, reason, message)
        return result

    # spec.behavior set.

    def _normalize_with_behaviors(self, now: float, current: int, desired: int) -> int:
        """`normalizeDesiredReplicasWithBehaviors`: stabilize, then limit the rate of change."""
        assert self.hpa.behavior is not None
        up, down = self.hpa.behavior.scale_up, self.hpa.behavior.scale_down
        up_window = float(up.stabilization_window_seconds or 0)
        down_window = (self.downscale_stabilization if down.stabilization_window_seconds is None
                       else float(down.stabilization_window_seconds))
        stabilized = self._stabilize(now, current, desired, up_window, down_window)
        result, reason, message = self._limit_rate(now, current, stabilized, up, down)
        self._set("ScalingLimited", result != stabilized, reason, message)
        return result

    def _stabilize(self, now: float, current: int, desired: int, up_window: float, down_window: float) -> int:
        """`stabilizeRecommendationWithBehaviors`: scale up no further than the lowest recommendation of the
        scale-up window, down no further than the highest of the scale-down window."""
        up_cutoff, down_cutoff = now - up_window, now - down_window
        up_limit = down_limit = desired
        for stamp, recommendation in self._recommendations or ():
            if stamp > up_cutoff:
                up_limit = min(up_limit, recommendation)
            if stamp > down_cutoff:
                down_limit = max(down_limit, recommendation)
        stabilized = min(max(current, up_limit), down_limit)
        self._record(now, desired, max(up_window, down_window))
        if stabilized != desired:
            if desired >= current:
                self._set("AbleToScale", True, "ScaleUpStabilized",
                          "recent recommendations were lower than current one, applying the lowest recent "
                          "recommendation")
            else:
                self._set("AbleToScale", True, "ScaleDownStabilized", _STABILIZED_DOWN_MESSAGE)
        else:
            self._set("AbleToScale", True, "ReadyForNewScale", _READY_MESSAGE)
        return stabilized

    def _record(self, now: float, desired: int, window: float) -> None:
        cutoff = now - window
        self._recommendations = [(t, r) for t, r in self._recommendations or () if t >= cutoff]
        self._recommendations.append((now, desired))

    def _limit_rate(self, now: float, current: int, desired: int, up: ScalingRules,
                    down: ScalingRules) -> tuple[int, str, str]:
        """`convertDesiredReplicasWithBehaviorRate`."""
        if desired > current:
            limit = max(self._scale_up_limit(now, current, up), current)
            if current == 0 and up.select_policy != "Disabled":
                limit = max(limit, 1)
            if self.hpa.max_replicas > limit:
                upper, reason, message = limit, "ScaleUpLimit", _UP_LIMIT_MESSAGE
            else:
                upper, reason, message = self.hpa.max_replicas, "TooManyReplicas", _TOO_MANY_MESSAGE
            if desired > upper:
                return upper, reason, message
        elif desired < current:
            limit = min(self._scale_down_limit(now, current, down), current)
            if self.hpa.min_replicas < limit:
                lower, reason, message = limit, "ScaleDownLimit", _DOWN_LIMIT_MESSAGE
            else:
                lower, reason, message = self.hpa.min_replicas, "TooFewReplicas", _TOO_FEW_MESSAGE
            if desired < lower:
                return lower, reason, message
        return desired, "DesiredWithinRange", _WITHIN_MESSAGE

    def _changed(self, now: float, period: int, events: list[tuple[float, int]]) -> int:
        """`getReplicasChangePerPeriod`: replicas added (or removed) by the events of the last `period` s."""
        cutoff = now - period
        return sum(change for stamp, change in events if stamp > cutoff)

    def _scale_up_limit(self, now: float, current: int, rules: ScalingRules) -> int:
        """`calculateScaleUpLimitWithScalingRules`: each policy allows a count over the replicas the target had
        when its period began; Max takes the most permissive, Min the least, Disabled allows no change."""
        if rules.select_policy == "Disabled":
            return current
        proposals = []
        for policy in rules.policies:
            start = (current - self._changed(now, policy.period_seconds, self._up_events)
                     + self._changed(now, policy.period_seconds, self._down_events))
            if policy.type == "Pods":
                proposals.append(start + policy.value)
            else:
                proposals.append(math.ceil(start * (1 + policy.value / 100)))
        return min(proposals) if rules.select_policy == "Min" else max(proposals)

    def _scale_down_limit(self, now: float, current: int, rules: ScalingRules) -> int:
        """`calculateScaleDownLimitWithBehaviors`: as scale-up, mirrored (Percent rounds the count that stays
        down); Max takes the lowest count, Min the highest."""
        if rules.select_policy == "Disabled":
            return current
        proposals = []
        for policy in rules.policies:
            start = (current - self._changed(now, policy.period_seconds, self._up_events)
                     + self._changed(now, policy.period_seconds, self._down_events))
            if policy.type == "Pods":
                proposals.append(start - policy.value)
            else:
                proposals.append(int(start * (1 - policy.value / 100)))
        return max(proposals) if rules.select_policy == "Min" else min(proposals)

    def _store_scale_event(self, now: float, previous: int, new: int) -> None:
        """`storeScaleEvent`, keeping events only as long as some policy period can still count them."""
        assert self.hpa.behavior is not None
        behavior = self.hpa.behavior
        longest = max(p.period_seconds for rules in (behavior.scale_up, behavior.scale_down) for p in rules.policies)
        cutoff = now - longest
        self._up_events = [e for e in self._up_events if e[0] > cutoff]
        self._down_events = [e for e in self._down_events if e[0] > cutoff]
        if new > previous:
            self._up_events.append((now, new - previous))
        else:
            self._down_events.append((now, previous - new))


_UP_LIMIT_MESSAGE = "the desired replica count is increasing faster than the maximum scale rate"
_DOWN_LIMIT_MESSAGE = "the desired replica count is decreasing faster than the maximum scale rate"
_TOO_MANY_MESSAGE = "the desired replica count is more than the maximum replica count"
_TOO_FEW_MESSAGE = "the desired replica count is less than the minimum replica count"
_WITHIN_MESSAGE = "the desired count is within the acceptable range"
_STABILIZED_DOWN_MESSAGE = ("recent recommendations were higher than current one, applying the highest recent "
                            "recommendation")
_READY_MESSAGE = "recommended size matches current size"
LIMIT_MESSAGES = {"ScaleUpLimit": _UP_LIMIT_MESSAGE, "ScaleDownLimit": _DOWN_LIMIT_MESSAGE,
                  "TooManyReplicas": _TOO_MANY_MESSAGE, "TooFewReplicas": _TOO_FEW_MESSAGE,
                  "DesiredWithinRange": _WITHIN_MESSAGE}
