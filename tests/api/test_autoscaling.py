"""autoscaling/v2 HorizontalPodAutoscaler parsing: kube's defaults (pkg/apis/autoscaling/v2/defaults.go) and the
API server's validation (pkg/apis/autoscaling/validation/validation.go and validation_test.go), restated."""

from __future__ import annotations

from typing import Any

import pytest

from phalanx.api.autoscaling import (
    DEFAULT_SCALE_DOWN,
    DEFAULT_SCALE_UP,
    ObjectRef,
    ScalingPolicy,
    parse_hpa,
)
from phalanx.errors import InputError

EXTERNAL: dict[str, Any] = {
    "type": "External",
    "external": {
        "metric": {"name": "queue_depth", "selector": {"matchLabels": {"queue": "orders"}}},
        "target": {"type": "AverageValue", "averageValue": "30"},
    },
}
OBJECT: dict[str, Any] = {
    "type": "Object",
    "object": {
        "describedObject": {"kind": "Service", "name": "web", "apiVersion": "v1"},
        "metric": {"name": "requests_per_second"},
        "target": {"type": "Value", "value": "2k"},
    },
}
CPU: dict[str, Any] = {
    "type": "Resource",
    "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}},
}


def hpa(**spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
        "maxReplicas": 10,
    }
    body.update(spec)
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web", "namespace": "shop"},
        "spec": body,
    }


def error(doc: dict[str, Any]) -> str:
    with pytest.raises(InputError) as info:
        parse_hpa(doc)
    message = str(info.value)
    assert "\n" not in message
    return message


def test_defaults_min_replicas_cpu_metric_and_no_behavior() -> None:
    """defaults.go SetDefaults_HorizontalPodAutoscaler: minReplicas 1, 80% average CPU when no metric."""
    parsed = parse_hpa(hpa())
    assert parsed.key == "shop/web"
    assert parsed.target == ObjectRef("Deployment", "web", "apps/v1")
    assert (parsed.min_replicas, parsed.max_replicas) == (1, 10)
    (metric,) = parsed.metrics
    assert (metric.type, metric.name, metric.target.type, metric.target.average_utilization) == (
        "Resource",
        "cpu",
        "Utilization",
        80,
    )
    assert parsed.behavior is None


def test_behavior_defaults_fill_each_unset_field() -> None:
    """defaults.go GenerateHPAScaleUpRules/GenerateHPAScaleDownRules via copyHPAScalingRules: scale-up window 0,
    4 pods or 100% per 15 s, Max; scale-down 100% per 15 s with the controller's window; given fields win."""
    parsed = parse_hpa(hpa(behavior={"scaleDown": {"stabilizationWindowSeconds": 60}}))
    assert parsed.behavior is not None
    assert parsed.behavior.scale_up == DEFAULT_SCALE_UP
    assert DEFAULT_SCALE_UP.stabilization_window_seconds == 0
    assert DEFAULT_SCALE_UP.policies == (ScalingPolicy("Pods", 4, 15), ScalingPolicy("Percent", 100, 15))
    down = parsed.behavior.scale_down
    assert down.stabilization_window_seconds == 60
    assert down.policies == DEFAULT_SCALE_DOWN.policies == (ScalingPolicy("Percent", 100, 15),)
    assert down.select_policy == "Max"
    assert DEFAULT_SCALE_DOWN.stabilization_window_seconds is None  # the controller's 300 s


def test_behavior_policies_select_policy_and_tolerance() -> None:
    """validation_test.go TestValidateHorizontalPodAutoscalerConfigurableToleranceEnabled: tolerance 0.1, 10, 0
    and 100m are accepted (HPAConfigurableTolerance, beta since v1.35)."""
    parsed = parse_hpa(
        hpa(
            behavior={
                "scaleUp": {
                    "selectPolicy": "Min",
                    "tolerance": "100m",
                    "policies": [
                        {"type": "Pods", "value": 2, "periodSeconds": 60},
                        {"type": "Percent", "value": 50, "periodSeconds": 1800},
                    ],
                }
            }
        )
    )
    assert parsed.behavior is not None
    up = parsed.behavior.scale_up
    assert up.select_policy == "Min"
    assert up.tolerance == pytest.approx(0.1)
    assert up.policies == (ScalingPolicy("Pods", 2, 60), ScalingPolicy("Percent", 50, 1800))
    for tolerance in ("0.1", "10", "0", 0):
        parse_hpa(hpa(behavior={"scaleDown": {"tolerance": tolerance}}))


def test_every_metric_type_parses() -> None:
    """validation.go validateMetricSpec: the five source types, each with its own member field."""
    container = {
        "type": "ContainerResource",
        "containerResource": {
            "name": "memory",
            "container": "app",
            "target": {"type": "AverageValue", "averageValue": "512Mi"},
        },
    }
    pods = {
        "type": "Pods",
        "pods": {"metric": {"name": "packets"}, "target": {"type": "AverageValue", "averageValue": "500m"}},
    }
    parsed = parse_hpa(hpa(metrics=[CPU, container, pods, OBJECT, EXTERNAL]))
    cpu, memory, packets, obj, ext = parsed.metrics
    assert cpu.target.average_utilization == 50
    assert (memory.container, memory.target.average_value) == ("app", 512 * 2**20)
    assert packets.target.average_value == 0.5
    assert obj.described_object == ObjectRef("Service", "web", "v1")
    assert obj.target.value == 2000.0
    assert ext.selector is not None and ext.selector.match_labels == (("queue", "orders"),)
    assert ext.target.average_value == 30.0


def test_min_replicas_zero_with_external_or_object_metric() -> None:
    """validation_test.go TestValidateHorizontalPodAutoscalerScaleToZeroEnabled: minReplicas 0 with an Object or
    an External metric is valid (HPAScaleToZero, beta and on by default in v1.37; SPEC.md section 5)."""
    assert parse_hpa(hpa(minReplicas=0, metrics=[OBJECT])).min_replicas == 0
    assert parse_hpa(hpa(minReplicas=0, metrics=[EXTERNAL])).has_object_or_external
    assert parse_hpa(hpa(minReplicas=0, metrics=[CPU, EXTERNAL])).min_replicas == 0


@pytest.mark.parametrize("metrics", [[CPU], None])
def test_min_replicas_zero_without_object_or_external_is_rejected(metrics: list[Any] | None) -> None:
    """test/integration/podautoscaler TestHPAScaleToZeroRejected: a CPU-only HPA (or the defaulted 80% CPU one)
    with minReplicas 0 is rejected with "at least one Object or External metric"."""
    message = error(hpa(minReplicas=0, metrics=metrics))
    assert message == (
        "spec.metrics: Forbidden: must specify at least one Object or External metric to support "
        "scaling to zero replicas"
    )


def test_min_replicas_zero_with_the_gate_off() -> None:
    """validation_test.go TestValidateHorizontalPodAutoscalerScaleToZeroDisabled: "must be greater than or
    equal to 1"."""
    with pytest.raises(InputError, match=r"spec.minReplicas: .*must be greater than or equal to 1"):
        parse_hpa(hpa(minReplicas=0, metrics=[EXTERNAL]), scale_to_zero=False)


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"minReplicas": -1}, "spec.minReplicas: Invalid value: -1: must be greater than or equal to 0"),
        (
            {"maxReplicas": 0, "minReplicas": 0, "metrics": [EXTERNAL]},
            "spec.maxReplicas: Invalid value: 0: must be greater than 0",
        ),
        (
            {"minReplicas": 5, "maxReplicas": 3},
            "spec.maxReplicas: Invalid value: 3: must be greater than or equal to `minReplicas`",
        ),
        ({"maxReplicas": None}, "spec.maxReplicas: Required value"),
        ({"minReplicas": "2"}, "spec.minReplicas: must be an integer"),
        ({"scaleTargetRef": {"kind": "Deployment"}}, "spec.scaleTargetRef.name: Required value"),
        ({"scaleTargetRef": {"name": "web"}}, "spec.scaleTargetRef.kind: Required value"),
        (
            {"scaleTargetRef": {"kind": "Deployment", "name": "a/b"}},
            "spec.scaleTargetRef.name: Invalid value: 'a/b': may not contain '/'",
        ),
        (
            {"scaleTargetRef": {"kind": "CronJob", "name": "web"}},
            "spec.scaleTargetRef.kind: 'CronJob' is not simulated",
        ),
        (
            {"metrics": [{"resource": CPU["resource"]}]},
            "spec.metrics[0].type: Required value: must specify a metric source type",
        ),
        (
            {"metrics": [{"type": "Custom"}]},
            'spec.metrics[0].type: Unsupported value: "Custom": supported values: "ContainerResource", '
            '"External", "Object", "Pods", "Resource"',
        ),
        (
            {"metrics": [{"type": "External", "resource": CPU["resource"]}]},
            "spec.metrics[0].external: Required value: must populate information for the given metric source",
        ),
        (
            {"metrics": [{**CPU, "external": EXTERNAL["external"]}]},
            "spec.metrics[0].external: Forbidden: must populate the given metric source only",
        ),
        (
            {
                "metrics": [
                    {"type": "Resource", "resource": {"target": {"type": "Utilization", "averageUtilization": 5}}}
                ]
            },
            "spec.metrics[0].resource.name: Required value: must specify a resource name",
        ),
        (
            {"metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization"}}}]},
            "spec.metrics[0].resource.target.averageUtilization: Required value: must set either a "
            "target raw value or a target utilization",
        ),
        (
            {
                "metrics": [
                    {
                        "type": "Resource",
                        "resource": {
                            "name": "cpu",
                            "target": {"type": "Utilization", "averageUtilization": 50, "averageValue": "1"},
                        },
                    }
                ]
            },
            "spec.metrics[0].resource.target.averageValue: Forbidden: may not set both a target raw "
            "value and a target utilization",
        ),
        (
            {
                "metrics": [
                    {
                        "type": "Resource",
                        "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 0}},
                    }
                ]
            },
            "spec.metrics[0].resource.target.averageUtilization: Invalid value: 0: must be greater than 0",
        ),
        (
            {"metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"averageUtilization": 50}}}]},
            "spec.metrics[0].resource.target.type: Required value: must specify a metric target type",
        ),
        (
            {
                "metrics": [
                    {
                        "type": "Resource",
                        "resource": {"name": "cpu", "target": {"type": "Average", "averageUtilization": 50}},
                    }
                ]
            },
            "spec.metrics[0].resource.target.type: Invalid value: 'Average': must be either "
            "Utilization, Value, or AverageValue",
        ),
        (
            {
                "metrics": [
                    {
                        "type": "ContainerResource",
                        "containerResource": {
                            "name": "cpu",
                            "target": {"type": "Utilization", "averageUtilization": 50},
                        },
                    }
                ]
            },
            "spec.metrics[0].containerResource.container: Required value: must specify a container",
        ),
        (
            {
                "metrics": [
                    {
                        "type": "ContainerResource",
                        "containerResource": {
                            "name": "cpu",
                            "container": "App_1",
                            "target": {"type": "Utilization", "averageUtilization": 50},
                        },
                    }
                ]
            },
            "spec.metrics[0].containerResource.container: Invalid value: 'App_1'",
        ),
        (
            {
                "metrics": [
                    {"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {"type": "Value", "value": "1"}}}
                ]
            },
            "spec.metrics[0].pods.target.averageValue: Required value: must specify a positive target averageValue",
        ),
        (
            {
                "metrics": [
                    {"type": "Pods", "pods": {"metric": {}, "target": {"type": "AverageValue", "averageValue": "1"}}}
                ]
            },
            "spec.metrics[0].pods.metric.name: Required value: must specify a metric name",
        ),
        (
            {
                "metrics": [
                    {"type": "Object", "object": {"metric": {"name": "q"}, "target": {"type": "Value", "value": "1"}}}
                ]
            },
            "spec.metrics[0].object.describedObject: is required",
        ),
        (
            {"metrics": [{"type": "Object", "object": {**OBJECT["object"], "target": {"type": "Value"}}}]},
            "spec.metrics[0].object.target.averageValue: Required value: must set either a target "
            "value or averageValue",
        ),
        (
            {"metrics": [{"type": "External", "external": {"metric": {"name": "q"}, "target": {"type": "Value"}}}]},
            "spec.metrics[0].external.target.averageValue: Required value: must set either a target "
            "value for metric or a per-pod target",
        ),
        (
            {
                "metrics": [
                    {
                        "type": "External",
                        "external": {
                            "metric": {"name": "q"},
                            "target": {"type": "Value", "value": "1", "averageValue": "1"},
                        },
                    }
                ]
            },
            "spec.metrics[0].external.target.value: Forbidden: may not set both a target value for "
            "metric and a per-pod target",
        ),
        (
            {
                "metrics": [
                    {
                        "type": "External",
                        "external": {"metric": {"name": "q"}, "target": {"type": "Value", "value": "0"}},
                    }
                ]
            },
            "spec.metrics[0].external.target.value: Invalid value: '0': must be positive",
        ),
        (
            {
                "metrics": [
                    {
                        "type": "External",
                        "external": {"metric": {"name": "q"}, "target": {"type": "Value", "value": "-1"}},
                    }
                ]
            },
            "spec.metrics[0].external.target.value: Invalid value: '-1': must be positive",
        ),
        (
            {
                "metrics": [
                    {
                        "type": "External",
                        "external": {"metric": {"name": "q"}, "target": {"type": "Value", "value": "lots"}},
                    }
                ]
            },
            "spec.metrics[0].external.target.value: invalid quantity 'lots'",
        ),
        (
            {
                "metrics": [
                    {
                        "type": "External",
                        "external": {
                            "metric": {"name": "q", "selector": {"matchLabels": "x"}},
                            "target": {"type": "Value", "value": "1"},
                        },
                    }
                ]
            },
            "spec.metrics[0].external.metric.selector.matchLabels: must be an object",
        ),
        (
            {"behavior": {"scaleUp": {"stabilizationWindowSeconds": -1}}},
            "spec.behavior.scaleUp.stabilizationWindowSeconds: Invalid value: -1: must be greater than "
            "or equal to zero",
        ),
        (
            {"behavior": {"scaleDown": {"stabilizationWindowSeconds": 3601}}},
            "spec.behavior.scaleDown.stabilizationWindowSeconds: Invalid value: 3601: must be less "
            "than or equal to 3600",
        ),
        (
            {"behavior": {"scaleUp": {"selectPolicy": "Average"}}},
            'spec.behavior.scaleUp.selectPolicy: Unsupported value: "Average": supported values: '
            '"Disabled", "Max", "Min"',
        ),
        (
            {"behavior": {"scaleUp": {"policies": []}}},
            "spec.behavior.scaleUp.policies: Required value: must specify at least one Policy",
        ),
        (
            {"behavior": {"scaleUp": {"policies": [{"type": "Replicas", "value": 1, "periodSeconds": 15}]}}},
            'spec.behavior.scaleUp.policies[0].type: Unsupported value: "Replicas": supported values: '
            '"Percent", "Pods"',
        ),
        (
            {"behavior": {"scaleUp": {"policies": [{"type": "Pods", "value": 0, "periodSeconds": 15}]}}},
            "spec.behavior.scaleUp.policies[0].value: Invalid value: 0: must be greater than zero",
        ),
        (
            {"behavior": {"scaleDown": {"policies": [{"type": "Pods", "value": 1, "periodSeconds": 0}]}}},
            "spec.behavior.scaleDown.policies[0].periodSeconds: Invalid value: 0: must be greater than zero",
        ),
        (
            {"behavior": {"scaleDown": {"policies": [{"type": "Pods", "value": 1, "periodSeconds": 1801}]}}},
            "spec.behavior.scaleDown.policies[0].periodSeconds: Invalid value: 1801: must be less than "
            "or equal to 1800",
        ),
        (
            {"behavior": {"scaleDown": {"tolerance": "-0.001"}}},
            "spec.behavior.scaleDown.tolerance: Invalid value: '-0.001': must be greater or equal to zero",
        ),
        ({"selectionStrategy": "Random"}, 'spec.selectionStrategy: Unsupported value: "Random"'),
    ],
)
def test_invalid_specs_name_the_field(spec: dict[str, Any], expected: str) -> None:
    """validation.go (validateHorizontalPodAutoscalerSpec, validateMetricSpec and the per-source, target, behavior
    and policy checks) with the messages validation_test.go looks for; one line, naming the field."""
    assert expected in error(hpa(**spec))


def test_missing_spec_and_metadata() -> None:
    doc = hpa()
    del doc["spec"]
    assert error(doc) == "spec: is required"
    doc = hpa()
    del doc["metadata"]
    assert error(doc) == "metadata: is required"


@pytest.mark.parametrize("raw", ["0.0000001m", "1e-30", "0.0000000001"])
def test_a_target_below_one_nano_rounds_up_to_one_nano(raw: str) -> None:
    """resource.ParseQuantity rounds a non-zero amount up to 1n, so the API server keeps such a target as 1n
    (positive, so validateMetricTarget accepts it) and the controller divides by its MilliValue, 1."""
    parsed = parse_hpa(hpa(metrics=[{"type": "External", "external": {
        "metric": {"name": "q"}, "target": {"type": "AverageValue", "averageValue": raw}}}]))
    assert parsed.metrics[0].target.average_value == 1e-9
