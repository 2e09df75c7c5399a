"""The HPA controller's algorithm: expectations restated from kube's pkg/controller/podautoscaler tests
(replica_calculator_test.go, horizontal_test.go), the scale-to-zero integration test
(test/integration/podautoscaler TestHPAScaleToZero) and SPEC.md section 5; each test names its source."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from phalanx.api.autoscaling import HorizontalPodAutoscaler, MetricSpec, parse_hpa
from phalanx.autoscale.hpa import HpaController, HpaDecision, Tolerances, metric_replicas

TOL = Tolerances()


def resource(utilization: int = 50, name: str = "cpu") -> dict[str, Any]:
    return {"type": "Resource",
            "resource": {"name": name, "target": {"type": "Utilization", "averageUtilization": utilization}}}


def external(name: str = "qps", value: str | None = "100", average: str | None = None) -> dict[str, Any]:
    target: dict[str, Any] = {"type": "Value" if average is None else "AverageValue"}
    if value is not None and average is None:
        target["value"] = value
    if average is not None:
        target["averageValue"] = average
    return {"type": "External", "external": {"metric": {"name": name}, "target": target}}


def make(metrics: list[dict[str, Any]], *, min_replicas: int = 1, max_replicas: int = 100,
         behavior: dict[str, Any] | None = None) -> HorizontalPodAutoscaler:
    spec: dict[str, Any] = {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "minReplicas": min_replicas,
                            "maxReplicas": max_replicas, "metrics": metrics}
    if behavior is not None:
        spec["behavior"] = behavior
    return parse_hpa({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
                      "metadata": {"name": "web"}, "spec": spec})


AVG = external(average="100")  # replicas = ceil(qps / 100)


def values(**by_name: float | None) -> Any:
    return lambda spec, now: by_name.get(spec.name)


def spec(doc: dict[str, Any]) -> MetricSpec:
    return make([doc]).metrics[0]


def reason(decision: HpaDecision, kind: str) -> tuple[str, str] | None:
    condition = decision.condition(kind)
    return None if condition is None else (condition["status"], condition["reason"])


# Per-metric replica counts (replica_calculator.go).

def test_resource_utilization_scale_up() -> None:
    """replica_calculator_test.go TestReplicaCalcScaleUp: 3 pods at 50% of request against a 30% target → 5."""
    assert metric_replicas(spec(resource(30)), 50, 3, TOL) == 5


def test_resource_utilization_scale_down() -> None:
    """replica_calculator_test.go TestReplicaCalcScaleDown: 5 pods at 28% against 50% → 3."""
    assert metric_replicas(spec(resource(50)), 28, 5, TOL) == 3


def test_tolerance_holds() -> None:
    """replica_calculator_test.go TestReplicaCalcTolerance: 102% against 100% is inside the 0.1 tolerance."""
    assert metric_replicas(spec(resource(100)), 102, 3, TOL) == 3
    assert metric_replicas(spec(resource(100)), 110, 3, TOL) == 3
    assert metric_replicas(spec(resource(100)), 111, 3, TOL) == 4
    assert metric_replicas(spec(resource(100)), 90, 10, TOL) == 10
    assert metric_replicas(spec(resource(100)), 89, 10, TOL) == 9
    assert metric_replicas(spec(resource(100)), 102, 3, Tolerances(down=0.0, up=0.0)) == 4


def test_utilization_is_an_integer_percent() -> None:
    """replica_calculator.go GetResourceReplicas: utilization is computed as an integer percent of request."""
    assert metric_replicas(spec(resource(50)), 55.9, 10, TOL) == 10


def test_pods_metric_average_value() -> None:
    """replica_calculator_test.go TestReplicaCalcScaleUpCM: pods averaging 20 (20000m) against 15 → 4 of 3."""
    pods = {"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue",
                                                                          "averageValue": "15"}}}
    assert metric_replicas(spec(pods), 20, 3, TOL) == 4


def test_object_metric_value_and_average_value() -> None:
    """replica_calculator_test.go TestReplicaCalcScaleUpCMObject (20 against a value of 15: 3 → 4) and
    TestReplicaCalcScaleUpPerPodCMObject (20 against 5 per pod → 4)."""
    obj: dict[str, Any] = {"type": "Object", "object": {"describedObject": {"kind": "Service", "name": "web"},
                                                   "metric": {"name": "qps"},
                                                   "target": {"type": "Value", "value": "15"}}}
    assert metric_replicas(spec(obj), 20, 3, TOL) == 4
    obj["object"]["target"] = {"type": "AverageValue", "averageValue": "5"}
    assert metric_replicas(spec(obj), 20, 3, TOL) == 4


def test_external_metric_value_and_average_value() -> None:
    """replica_calculator_test.go TestReplicaCalcScaleUpCMExternal (8600 against 4400: 1 → 2),
    TestReplicaCalcScaleUpPerPodCMExternal (8600 against 2150 per pod: 3 → 4), TestReplicaCalcScaleDownCMExternal
    (8600 against 14334: 5 → 3) and TestReplicaCalcToleranceCMExternal (8900 against 8888: 3 stays)."""
    assert metric_replicas(spec(external(value="4400")), 8600, 1, TOL) == 2
    assert metric_replicas(spec(external(average="2150")), 8600, 3, TOL) == 4
    assert metric_replicas(spec(external(value="14334")), 8600, 5, TOL) == 3
    assert metric_replicas(spec(external(value="8888")), 8900, 3, TOL) == 3


def test_from_zero_replicas_the_usage_ratio_is_the_count() -> None:
    """replica_calculator.go getUsageRatioReplicaCount: with no replicas, ceil(usage / target); a value of zero
    proposes zero."""
    assert metric_replicas(spec(external(value="100")), 500, 0, TOL) == 5
    assert metric_replicas(spec(external(value="100")), 50, 0, TOL) == 1
    assert metric_replicas(spec(external(average="100")), 250, 0, TOL) == 3
    assert metric_replicas(spec(external(value="100")), 0, 4, TOL) == 0
    assert metric_replicas(spec(external(average="100")), 0, 4, TOL) == 0


def test_quantities_divide_as_milli_integers() -> None:
    """Ratios of MilliValues, as kube: 0.3 over 0.1 is exactly 3, not 3.0000000000000004."""
    assert metric_replicas(spec(external(average="100m")), 0.3, 1, TOL) == 3


def test_a_target_of_less_than_one_nano_divides_as_one_milli() -> None:
    """`averageValue: 0.0000001m` is 1n once parsed (ParseQuantity rounds up), whose MilliValue is 1: 5 over a
    target of 1 milli asks for 5000 replicas; it used to divide by a milli-value of 0."""
    assert metric_replicas(spec(external(average="0.0000001m")), 5, 1, TOL) == 5000
    assert metric_replicas(spec(external(value="0.0000001m")), 5, 1, TOL) == 5000


# The controller (horizontal.go).

def test_scale_up_takes_the_largest_proposal() -> None:
    """horizontal_test.go TestScaleUp / computeReplicasForMetrics: the largest proposal over all metrics wins."""
    hpa = make([resource(30), external(value="100")], max_replicas=6)
    decision = HpaController(hpa).sync(0, 3, values(cpu=50, qps=100))
    assert decision.desired == 5
    assert decision.rescale
    assert decision.events == ["SuccessfulRescale: New size: 5; reason: cpu resource utilization (percentage of "
                               "request) above target"]
    assert reason(decision, "ScalingActive") == ("True", "ValidMetricFound")
    assert reason(decision, "AbleToScale") == ("True", "SucceededRescale")
    assert reason(decision, "ScalingLimited") == ("False", "DesiredWithinRange")


def test_clamped_to_max_and_min() -> None:
    """horizontal_test.go TestMaxReplicas / TestMinReplicas: proposals are held to [minReplicas, maxReplicas]."""
    hpa = make([resource(50)], min_replicas=2, max_replicas=5)
    up = HpaController(hpa).sync(0, 3, values(cpu=200))
    assert (up.desired, reason(up, "ScalingLimited")) == (5, ("True", "TooManyReplicas"))
    controller = HpaController(hpa)
    controller.recommendations = []  # as the kube test's filled `recommendations`: no initial one
    down = controller.sync(0, 3, values(cpu=1))
    assert (down.desired, reason(down, "ScalingLimited")) == (2, ("True", "TooFewReplicas"))


def test_the_first_sync_holds_the_current_count_for_a_stabilization_window() -> None:
    """horizontal.go recordInitialRecommendation: the first sync records the target's replicas as a
    recommendation, so a scale-down waits out the downscale stabilization window (seen on the real
    kube-controller-manager v1.37.2: a Deployment at 3 whose metric asks for 1 stays at 3,
    ScaleDownStabilized)."""
    hpa = make([external(average="100")], min_replicas=1, max_replicas=10)
    controller = HpaController(hpa)
    first = controller.sync(0, 3, values(qps=100))
    assert (first.desired, reason(first, "AbleToScale")) == (3, ("True", "ScaleDownStabilized"))
    assert controller.sync(300, 3, values(qps=100)).desired == 3  # the initial one is still in the window
    assert controller.sync(315, 3, values(qps=100)).desired == 1


def test_current_outside_the_range_is_corrected_without_metrics() -> None:
    """horizontal.go reconcileAutoscaler: above maxReplicas → maxReplicas, below minReplicas → minReplicas,
    whatever the metrics say."""
    hpa = make([resource(50)], min_replicas=2, max_replicas=5)
    high = HpaController(hpa).sync(0, 9, values())
    assert high.desired == 5
    assert high.events == ["SuccessfulRescale: New size: 5; reason: Current number of replicas above Spec.MaxReplicas"]
    assert HpaController(hpa).sync(0, 1, values()).desired == 2


def test_missing_metrics() -> None:
    """horizontal.go computeReplicasForMetrics: a metric without a value is skipped; all missing keeps the
    current count with ScalingActive=False; a missing metric also blocks a scale-down the others propose
    (horizontal_test.go TestScaleDownWithInvalidMetric... and TestScaleUpOneMetricInvalid)."""
    hpa = make([resource(50), external(value="100")])
    controller = HpaController(hpa)
    none = controller.sync(0, 4, values())
    assert none.desired == 4 and not none.rescale
    assert reason(none, "ScalingActive") == ("False", "FailedGetResourceMetric")
    assert none.events[-1].startswith("FailedComputeMetricsReplicas: invalid metrics (2 invalid out of 2)")
    up = controller.sync(15, 4, values(qps=200))
    assert up.desired == 8
    assert reason(up, "ScalingActive") == ("True", "ValidMetricFound")
    assert [p.replicas for p in up.proposals] == [None, 8]
    down = HpaController(hpa).sync(0, 4, values(qps=50))
    assert down.desired == 4
    assert reason(down, "ScalingActive") == ("False", "FailedGetResourceMetric")


def test_without_behavior_scale_up_is_limited_to_double_or_four() -> None:
    """horizontal.go convertDesiredReplicasWithRules / calculateScaleUpLimit (horizontal_test.go TestUpscaleCap):
    with spec.behavior unset a sync scales up to at most max(2 × current, 4)."""
    hpa = make([AVG], max_replicas=100)
    first = HpaController(hpa).sync(0, 1, values(qps=1000))
    assert (first.desired, reason(first, "ScalingLimited")) == (4, ("True", "ScaleUpLimit"))
    assert HpaController(hpa).sync(0, 10, values(qps=10000)).desired == 20


def test_without_behavior_scale_down_is_stabilized_for_five_minutes() -> None:
    """horizontal.go stabilizeRecommendation (horizontal_test.go TestScaleDownStabilizeInitialSize...): the
    highest recommendation of the last 300 s wins."""
    hpa = make([AVG])
    controller = HpaController(hpa)
    assert controller.sync(0, 10, values(qps=1000)).desired == 10
    held = controller.sync(60, 10, values(qps=200))
    assert held.desired == 10
    assert reason(held, "AbleToScale") == ("True", "ScaleDownStabilized")
    assert controller.sync(300, 10, values(qps=200)).desired == 10
    assert controller.sync(301, 10, values(qps=200)).desired == 2


def test_default_behavior_scale_up_policies() -> None:
    """horizontal.go calculateScaleUpLimitWithScalingRules with the default rules (4 pods or 100% per 15 s,
    Max), as horizontal_test.go TestScalingWithRules: from 10, up to 20; from 2, up to 6."""
    hpa = make([AVG], behavior={})
    assert HpaController(hpa).sync(0, 10, values(qps=4000)).desired == 20
    decision = HpaController(hpa).sync(0, 2, values(qps=4000))
    assert (decision.desired, reason(decision, "ScalingLimited")) == (6, ("True", "ScaleUpLimit"))


def test_scale_up_policy_counts_the_period_history() -> None:
    """horizontal.go getReplicasChangePerPeriod: replicas added inside the period count against its limit."""
    hpa = make([AVG], behavior={})
    controller = HpaController(hpa)
    assert controller.sync(0, 10, values(qps=8000)).desired == 20
    assert controller.sync(10, 20, values(qps=8000)).desired == 20  # the period still holds the +10
    assert controller.sync(15, 20, values(qps=8000)).desired == 40


def test_select_policy_min_and_disabled() -> None:
    """horizontal_test.go TestScalingWithRules (selectPolicy Min takes the least permissive policy; Disabled
    forbids that direction)."""
    up_min = {"scaleUp": {"selectPolicy": "Min"}}
    assert HpaController(make([AVG], behavior=up_min)).sync(0, 10, values(qps=4000)).desired == 14
    up_off = {"scaleUp": {"selectPolicy": "Disabled"}}
    held = HpaController(make([AVG], behavior=up_off)).sync(0, 10, values(qps=4000))
    assert (held.desired, reason(held, "ScalingLimited")) == (10, ("True", "ScaleUpLimit"))
    down_off = {"scaleDown": {"selectPolicy": "Disabled"}}
    assert HpaController(make([AVG], behavior=down_off)).sync(0, 10, values(qps=100)).desired == 10
    down_min = {"scaleDown": {"stabilizationWindowSeconds": 0, "selectPolicy": "Min", "policies": [
        {"type": "Pods", "value": 2, "periodSeconds": 60}, {"type": "Percent", "value": 50, "periodSeconds": 60}]}}
    assert HpaController(make([AVG], behavior=down_min)).sync(0, 10, values(qps=100)).desired == 8


def test_scale_down_policy_per_period() -> None:
    """horizontal.go calculateScaleDownLimitWithBehaviors: 1 pod per 60 s takes 10 → 9, holds inside the
    period, then 9 → 8; 10% per 60 s takes 80 → 72 (truncating the count that stays)."""
    one_pod = {"scaleDown": {"stabilizationWindowSeconds": 0,
                             "policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}]}}
    controller = HpaController(make([AVG], behavior=one_pod))
    first = controller.sync(0, 10, values(qps=300))
    assert (first.desired, reason(first, "ScalingLimited")) == (9, ("True", "ScaleDownLimit"))
    assert controller.sync(30, 9, values(qps=300)).desired == 9
    assert controller.sync(60, 9, values(qps=300)).desired == 8
    percent = {"scaleDown": {"stabilizationWindowSeconds": 0,
                             "policies": [{"type": "Percent", "value": 10, "periodSeconds": 60}]}}
    assert HpaController(make([AVG], behavior=percent)).sync(0, 80, values(qps=100)).desired == 72


def test_stabilization_window_holds_scale_down_and_scale_up() -> None:
    """horizontal.go stabilizeRecommendationWithBehaviors (horizontal_test.go TestNormalizeDesiredReplicasWith
    Behavior): scale-down takes the highest recommendation of its window, scale-up the lowest of its window."""
    down = {"scaleDown": {"stabilizationWindowSeconds": 120}}
    controller = HpaController(make([AVG], behavior=down))
    assert controller.sync(0, 10, values(qps=1000)).desired == 10
    held = controller.sync(60, 10, values(qps=300))
    assert (held.desired, reason(held, "AbleToScale")) == (10, ("True", "ScaleDownStabilized"))
    assert controller.sync(119, 10, values(qps=300)).desired == 10
    assert controller.sync(120, 10, values(qps=300)).desired == 3
    up = {"scaleUp": {"stabilizationWindowSeconds": 60}}
    controller = HpaController(make([AVG], behavior=up))
    assert controller.sync(0, 4, values(qps=400)).desired == 4
    held = controller.sync(30, 4, values(qps=600))
    assert (held.desired, reason(held, "AbleToScale")) == (4, ("True", "ScaleUpStabilized"))
    assert controller.sync(61, 4, values(qps=600)).desired == 6


def test_behavior_tolerance_per_direction() -> None:
    """HPAConfigurableTolerance (KEP-4951): behavior.scaleUp.tolerance and scaleDown.tolerance replace the
    controller's 0.1 per direction."""
    hpa = make([external()], behavior={"scaleUp": {"tolerance": "0.01"}, "scaleDown": {"tolerance": "0.5"}})
    assert HpaController(hpa).sync(0, 10, values(qps=105)).desired == 11
    assert HpaController(hpa).sync(0, 10, values(qps=60)).desired == 10


# Scale to zero (v1.37, SPEC.md section 5).

def test_scale_to_zero_and_back() -> None:
    """test/integration/podautoscaler TestHPAScaleToZero: minReplicas 0 with an External metric (averageValue
    100): 500 scales 1 → 5 (in two syncs) with ScaledToZero=False; 0 scales to 0 with ScaledToZero=True; 400
    scales back to 4 with ScaledToZero=False again."""
    hpa = make([external(average="100")], min_replicas=0, max_replicas=10)
    controller = HpaController(hpa)
    assert controller.sync(0, 1, values(qps=500)).desired == 4  # at most max(2 × 1, 4) a sync
    up = controller.sync(15, 4, values(qps=500))
    assert up.desired == 5
    assert reason(up, "ScaledToZero") == ("False", "NotScaledToZero")
    zero = controller.sync(30, 5, values(qps=0))
    assert zero.desired == 5  # the 300 s scale-down stabilization still holds the 5
    zero = controller.sync(316, 5, values(qps=0))
    assert zero.desired == 0
    assert reason(zero, "ScaledToZero") == ("True", "ScaledToZero")
    assert zero.events == ["SuccessfulRescale: New size: 0; reason: All metrics below target"]
    assert controller.scaled_to_zero
    idle = controller.sync(331, 0, values(qps=0))
    assert (idle.desired, idle.events) == (0, [])
    assert reason(idle, "ScaledToZero") == ("True", "ScaledToZero")
    back = controller.sync(346, 0, values(qps=400))
    assert back.desired == 4
    assert reason(back, "ScaledToZero") == ("False", "NotScaledToZero")
    assert not controller.scaled_to_zero


def test_scale_up_from_zero_goes_to_the_metric_count_within_policies() -> None:
    """SPEC.md section 5: from zero the HPA scales straight to the metric-derived count (not 0 → 1), bounded by
    the scale-up policies (default: 4 pods per 15 s); a percent-only policy still allows one replica."""
    wide = {"scaleUp": {"policies": [{"type": "Pods", "value": 10, "periodSeconds": 15}]},
            "scaleDown": {"stabilizationWindowSeconds": 0}}
    controller = HpaController(make([external()], min_replicas=0, behavior=wide), scaled_to_zero=True)
    assert controller.sync(0, 0, values(qps=700)).desired == 7
    capped = HpaController(make([external()], min_replicas=0, behavior={}), scaled_to_zero=True)
    assert capped.sync(0, 0, values(qps=700)).desired == 4
    percent = {"scaleUp": {"policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]}}
    controller = HpaController(make([external()], min_replicas=0, behavior=percent), scaled_to_zero=True)
    assert controller.sync(0, 0, values(qps=700)).desired == 1
    assert controller.sync(15, 1, values(qps=700)).desired == 2


def test_manual_zero_stays_paused() -> None:
    """SPEC.md section 5 / horizontal.go shouldComputeMetricsForZeroReplicas: a target a user set to 0 (this
    HPA had not scaled it to zero) is paused: no change, ScalingActive=False ScalingDisabled; also with
    minReplicas >= 1 (the pre-v1.37 rule)."""
    for hpa in (make([external()], min_replicas=0), make([external()], min_replicas=2)):
        decision = HpaController(hpa).sync(0, 0, values(qps=900))
        assert (decision.desired, decision.events) == (0, [])
        assert reason(decision, "ScalingActive") == ("False", "ScalingDisabled")
        assert decision.condition("ScaledToZero") is None


def test_scaled_to_zero_then_min_raised_scales_to_min() -> None:
    """horizontal.go reconcileAutoscaler: ScaledToZero=True and minReplicas raised meanwhile: the scale-up from
    zero is floored at minReplicas."""
    controller = HpaController(make([external()], min_replicas=2), scaled_to_zero=True)
    decision = controller.sync(0, 0, values(qps=50))
    assert decision.desired == 2
    assert reason(decision, "ScaledToZero") == ("False", "NotScaledToZero")


def test_idle_zero_stays_zero_and_missing_metric_at_zero_does_nothing() -> None:
    """From zero, a metric still at 0 proposes 0 (no rescale); a metric with no value fails (ScalingActive=False)."""
    controller = HpaController(make([external()], min_replicas=0), scaled_to_zero=True)
    assert controller.sync(0, 0, values(qps=0)).desired == 0
    missing = controller.sync(15, 0, values())
    assert missing.desired == 0
    assert reason(missing, "ScalingActive") == ("False", "FailedGetExternalMetric")
    assert controller.scaled_to_zero


def test_resource_metric_beside_an_external_one() -> None:
    """computeReplicasForMetrics with a CPU metric beside an External one: at zero the CPU metric has no pods to
    read (skipped, the External one scales up); above zero every metric must propose 0 to reach 0."""
    hpa = make([resource(50), external()], min_replicas=0,
               behavior={"scaleDown": {"stabilizationWindowSeconds": 0}})
    controller = HpaController(hpa, scaled_to_zero=True)
    assert controller.sync(0, 0, values(cpu=None, qps=300)).desired == 3
    assert controller.sync(15, 3, values(cpu=40, qps=0)).desired == 3
    assert controller.sync(30, 3, values(cpu=0, qps=0)).desired == 0
    assert controller.scaled_to_zero


def test_gate_off_never_sets_the_condition() -> None:
    """HPAScaleToZero off: no ScaledToZero condition, and a target at zero stays paused whatever minReplicas
    says (horizontal.go shouldComputeMetricsForZeroReplicas, seen on the real kube-controller-manager v1.37.2
    with the gate off); a condition left from before is removed."""
    controller = HpaController(make([external()], min_replicas=0, behavior={}), scale_to_zero=False,
                               scaled_to_zero=True)
    decision = controller.sync(0, 0, values(qps=300))
    assert (decision.desired, reason(decision, "ScalingActive")) == (0, ("False", "ScalingDisabled"))
    assert decision.condition("ScaledToZero") is None
    down = controller.sync(15, 2, values(qps=0))
    assert down.desired == 0  # minReplicas 0 still lets it go to zero; it then stays there
    assert down.condition("ScaledToZero") is None


# Properties.

policies = st.lists(st.tuples(st.sampled_from(["Pods", "Percent"]), st.integers(1, 100), st.integers(1, 120)),
                    min_size=1, max_size=3)
rules = st.builds(lambda window, select, items: {
    "stabilizationWindowSeconds": window, "selectPolicy": select,
    "policies": [{"type": t, "value": v, "periodSeconds": p} for t, v, p in items]},
    st.integers(0, 120), st.sampled_from(["Max", "Min", "Disabled"]), policies)
behaviors = st.one_of(st.none(), st.builds(lambda up, down: {"scaleUp": up, "scaleDown": down}, rules, rules))


@settings(max_examples=150, deadline=None)
@given(bounds=st.tuples(st.integers(0, 20), st.integers(1, 40)), behavior=behaviors,
       start=st.integers(0, 40), samples=st.lists(st.one_of(st.none(), st.integers(0, 5000)), min_size=1,
                                                  max_size=40))
def test_desired_always_within_min_and_max(bounds: tuple[int, int], behavior: dict[str, Any] | None, start: int,
                                           samples: list[int | None]) -> None:
    """horizontal.go: whatever the metrics, every decision from a target inside [minReplicas, maxReplicas]
    stays inside it (a paused target at zero stays at zero)."""
    low, high = min(bounds), max(bounds)
    hpa = make([external()], min_replicas=low, max_replicas=high, behavior=behavior)
    controller = HpaController(hpa)
    current = min(max(start, low), high) or 1
    for i, sample in enumerate(samples):
        decision = controller.sync(15.0 * i, current, values(qps=sample))
        assert low <= decision.desired <= high
        current = decision.desired


@settings(max_examples=150, deadline=None)
@given(kind=st.sampled_from(["Pods", "Percent"]), value=st.integers(1, 100), period=st.integers(1, 120),
       step=st.integers(1, 60), start=st.integers(1, 200),
       samples=st.lists(st.integers(0, 20000), min_size=1, max_size=40))
def test_scale_down_never_exceeds_the_policy_per_period(kind: str, value: int, period: int, step: int, start: int,
                                                        samples: list[int]) -> None:
    """horizontal.go calculateScaleDownLimitWithBehaviors: with one scale-down policy (and scale-up disabled),
    over every window of periodSeconds the replicas removed never exceed the policy: `value` pods, or `value`%
    of the count when the window opened (the count that stays rounded down)."""
    behavior = {"scaleUp": {"selectPolicy": "Disabled"},
                "scaleDown": {"stabilizationWindowSeconds": 0,
                              "policies": [{"type": kind, "value": value, "periodSeconds": period}]}}
    controller = HpaController(make([external()], min_replicas=0, max_replicas=200, behavior=behavior))
    history: list[tuple[float, int]] = [(-1e9, start)]  # (time, replicas from then on)
    current = start
    for i, sample in enumerate(samples):
        now = float(step * i)
        current = controller.sync(now, current, values(qps=sample)).desired
        history.append((now, current))
        opened = [r for t, r in history if t <= now - period][-1]
        if kind == "Pods":
            assert opened - current <= value
        else:
            assert current >= int(opened * (1 - value / 100))
