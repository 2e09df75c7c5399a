"""autoscaling/v2 HorizontalPodAutoscaler, read as the v1.37 API server defaults and validates it.

Restates kube's `pkg/apis/autoscaling/v2/defaults.go` (minReplicas 1, 80% CPU when no metric is given, the
scale-up and scale-down rules filled in field by field once `behavior` is set) and
`pkg/apis/autoscaling/validation/validation.go` (`validateHorizontalPodAutoscalerSpec`, `validateMetrics`,
`validateMetricSpec`, the per-source checks, `validateBehavior`, `validateScalingRules`,
`validateScalingPolicy`). With `HPAScaleToZero` (beta, on by default in v1.37) `minReplicas: 0` is accepted when
at least one metric is of type Object or External. Phalanx also holds `scaleTargetRef.kind` to the kinds it
simulates (Deployment, StatefulSet, ReplicaSet); the API server takes any kind with a scale subresource.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import ROUND_CEILING, Context, Decimal
from typing import Any

from phalanx.api.fields import Manifest, Meta, fail, integer, mapping, sequence, text
from phalanx.api.objects import LabelSelector, Source
from phalanx.api.quantity import QuantityError, parse_quantity
from phalanx.api.selectors import parse_selector

SCALE_TARGET_KINDS = ("Deployment", "StatefulSet", "ReplicaSet")
METRIC_TYPES = ("ContainerResource", "External", "Object", "Pods", "Resource")
TARGET_TYPES = ("Utilization", "Value", "AverageValue")
SELECT_POLICIES = ("Disabled", "Max", "Min")
POLICY_TYPES = ("Percent", "Pods")
MAX_PERIOD_SECONDS = 1800
MAX_STABILIZATION_WINDOW_SECONDS = 3600
DEFAULT_CPU_UTILIZATION = 80
# The int32 fields' bound (replicas, seconds, policy values).
_MAX_INT32 = 2**31 - 1
_NANO = Decimal("1e-9")
_EXACT = Context(prec=40)  # int64 amounts in nano units fit
# Each metric type's member field in MetricSpec.
_SOURCE_FIELDS = {"Object": "object", "Pods": "pods", "Resource": "resource", "External": "external",
                  "ContainerResource": "containerResource"}
SCALE_TO_ZERO_FORBIDDEN = (
    "Forbidden: must specify at least one Object or External metric to support scaling to zero replicas")


@dataclass(frozen=True, slots=True)
class ObjectRef:
    """A CrossVersionObjectReference: scaleTargetRef, or an Object metric's describedObject."""

    kind: str
    name: str
    api_version: str = ""


@dataclass(frozen=True, slots=True)
class MetricTarget:
    """What a metric is held to; quantities are floats in base units (cores, bytes, counts)."""

    type: str  # Utilization | Value | AverageValue
    value: float | None = None
    average_value: float | None = None
    average_utilization: int | None = None  # percent of the pods' requests


@dataclass(frozen=True, slots=True)
class MetricSpec:
    """One entry of spec.metrics; `name` is the resource name (Resource, ContainerResource) or the metric name."""

    type: str  # Resource | ContainerResource | Pods | Object | External
    name: str
    target: MetricTarget
    container: str | None = None  # ContainerResource
    selector: LabelSelector | None = None  # metric.selector (Pods, Object, External)
    described_object: ObjectRef | None = None  # Object


@dataclass(frozen=True, slots=True)
class ScalingPolicy:
    type: str  # Pods | Percent
    value: int
    period_seconds: int


@dataclass(frozen=True, slots=True)
class ScalingRules:
    """HPAScalingRules after defaulting. A None window on scale-down means the controller's
    --horizontal-pod-autoscaler-downscale-stabilization (300 s); None tolerance means its --tolerance (0.1)."""

    stabilization_window_seconds: int | None
    select_policy: str
    policies: tuple[ScalingPolicy, ...]
    tolerance: float | None = None


DEFAULT_SCALE_UP = ScalingRules(
    stabilization_window_seconds=0, select_policy="Max",
    policies=(ScalingPolicy("Pods", 4, 15), ScalingPolicy("Percent", 100, 15)))
DEFAULT_SCALE_DOWN = ScalingRules(
    stabilization_window_seconds=None, select_policy="Max", policies=(ScalingPolicy("Percent", 100, 15),))


@dataclass(frozen=True, slots=True)
class Behavior:
    scale_up: ScalingRules = DEFAULT_SCALE_UP
    scale_down: ScalingRules = DEFAULT_SCALE_DOWN


@dataclass(slots=True)
class HorizontalPodAutoscaler:
    namespace: str
    name: str
    target: ObjectRef
    min_replicas: int
    max_replicas: int
    metrics: tuple[MetricSpec, ...]
    behavior: Behavior | None = None  # None: spec.behavior unset (the controller's legacy normalization)
    selection_strategy: str = "LabelSelector"
    arrival: float = 0.0
    source: Source | None = None
    annotations: Mapping[str, str] = field(default_factory=dict)  # the service model's settings (phalanx.dev/)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def has_object_or_external(self) -> bool:
        return any(m.type in ("Object", "External") for m in self.metrics)


def _path_segment(value: str, field: str) -> str:
    """kube's IsValidPathSegmentName: the name goes into a URL path."""
    if value in (".", ".."):
        raise fail(field, f"Invalid value: {value!r}: may not be '{value}'")
    for bad in ("/", "%"):
        if bad in value:
            raise fail(field, f"Invalid value: {value!r}: may not contain '{bad}'")
    return value


def _object_ref(raw: Any, field: str) -> ObjectRef:
    ref = mapping(raw, field, required=True)
    kind = text(ref.get("kind"), f"{field}.kind")
    if not kind:
        raise fail(f"{field}.kind", "Required value")
    name = text(ref.get("name"), f"{field}.name")
    if not name:
        raise fail(f"{field}.name", "Required value")
    return ObjectRef(kind=_path_segment(kind, f"{field}.kind"), name=_path_segment(name, f"{field}.name"),
                     api_version=text(ref.get("apiVersion"), f"{field}.apiVersion"))


def _quantity(raw: Any, field: str) -> float | None:
    if raw is None:
        return None
    try:
        value = parse_quantity(raw)
    except QuantityError as exc:
        if str(exc).startswith("negative"):
            raise fail(field, f"Invalid value: {raw!r}: must be positive") from None
        raise fail(field, str(exc)) from None
    if value <= 0:
        raise fail(field, f"Invalid value: {raw!r}: must be positive")
    # ParseQuantity rounds a non-zero amount up to 1n, so `0.0000001m` is 1n: positive, and 1 as a MilliValue.
    return float(value.quantize(_NANO, rounding=ROUND_CEILING, context=_EXACT))


def _target(raw: Any, field: str) -> MetricTarget:
    target = mapping(raw, field)
    kind = text(target.get("type"), f"{field}.type")
    if not kind:
        raise fail(f"{field}.type", "Required value: must specify a metric target type")
    if kind not in TARGET_TYPES:
        raise fail(f"{field}.type", f"Invalid value: {kind!r}: must be either Utilization, Value, or AverageValue")
    utilization = target.get("averageUtilization")
    if utilization is not None:
        utilization = integer(utilization, f"{field}.averageUtilization", maximum=_MAX_INT32)
        if utilization < 1:
            raise fail(f"{field}.averageUtilization", f"Invalid value: {utilization}: must be greater than 0")
    return MetricTarget(type=kind, value=_quantity(target.get("value"), f"{field}.value"),
                        average_value=_quantity(target.get("averageValue"), f"{field}.averageValue"),
                        average_utilization=utilization)


def _metric_id(raw: Any, field: str) -> tuple[str, LabelSelector | None]:
    metric = mapping(raw, field)
    name = text(metric.get("name"), f"{field}.name")
    if not name:
        raise fail(f"{field}.name", "Required value: must specify a metric name")
    selector = None if metric.get("selector") is None else parse_selector(metric.get("selector"), f"{field}.selector")
    return _path_segment(name, f"{field}.name"), selector


def _resource_target(target: MetricTarget, field: str) -> None:
    if target.average_utilization is None and target.average_value is None:
        raise fail(f"{field}.target.averageUtilization",
                   "Required value: must set either a target raw value or a target utilization")
    if target.average_utilization is not None and target.average_value is not None:
        raise fail(f"{field}.target.averageValue",
                   "Forbidden: may not set both a target raw value and a target utilization")


def _dns_label(value: str, field: str) -> str:
    ok = len(value) <= 63 and value[:1].isalnum() and value[-1:].isalnum() and all(
        c.isascii() and (c.islower() or c.isdigit() or c == "-") for c in value)
    if not ok:
        raise fail(field, f"Invalid value: {value!r}: a lowercase RFC 1123 label must consist of lower case "
                          "alphanumeric characters or '-', and must start and end with an alphanumeric character")
    return value


def _metric(raw: Any, field: str) -> MetricSpec:
    spec = mapping(raw, field)
    kind = text(spec.get("type"), f"{field}.type")
    if not kind:
        raise fail(f"{field}.type", "Required value: must specify a metric source type")
    if kind not in METRIC_TYPES:
        supported = ", ".join(f'"{t}"' for t in METRIC_TYPES)
        raise fail(f"{field}.type", f'Unsupported value: "{kind}": supported values: {supported}')
    expected = _SOURCE_FIELDS[kind]
    if spec.get(expected) is None:
        raise fail(f"{field}.{expected}", "Required value: must populate information for the given metric source")
    for other in _SOURCE_FIELDS.values():
        if other != expected and spec.get(other) is not None:
            raise fail(f"{field}.{other}", "Forbidden: must populate the given metric source only")
    where = f"{field}.{expected}"
    source = mapping(spec.get(expected), where)
    target = _target(source.get("target"), f"{where}.target")
    if kind in ("Resource", "ContainerResource"):
        name = text(source.get("name"), f"{where}.name")
        if not name:
            raise fail(f"{where}.name", "Required value: must specify a resource name")
        container = None
        if kind == "ContainerResource":
            container = text(source.get("container"), f"{where}.container")
            if not container:
                raise fail(f"{where}.container", "Required value: must specify a container")
            _dns_label(container, f"{where}.container")
        _resource_target(target, where)
        return MetricSpec(type=kind, name=name, target=target, container=container)
    name, selector = _metric_id(source.get("metric"), f"{where}.metric")
    if kind == "Pods":
        if target.average_value is None:
            raise fail(f"{where}.target.averageValue", "Required value: must specify a positive target averageValue")
        return MetricSpec(type=kind, name=name, target=target, selector=selector)
    if kind == "Object":
        described = _object_ref(source.get("describedObject"), f"{where}.describedObject")
        if target.value is None and target.average_value is None:
            raise fail(f"{where}.target.averageValue", "Required value: must set either a target value or averageValue")
        return MetricSpec(type=kind, name=name, target=target, selector=selector, described_object=described)
    if target.value is None and target.average_value is None:
        raise fail(f"{where}.target.averageValue",
                   "Required value: must set either a target value for metric or a per-pod target")
    if target.value is not None and target.average_value is not None:
        raise fail(f"{where}.target.value",
                   "Forbidden: may not set both a target value for metric and a per-pod target")
    return MetricSpec(type=kind, name=name, target=target, selector=selector)


def _rules(raw: Any, field: str, default: ScalingRules) -> ScalingRules:
    """copyHPAScalingRules over the defaults: each field given replaces the default's; an explicit empty
    `policies: []` stays empty and is rejected, as the API server does."""
    if raw is None:
        return default
    rules = mapping(raw, field)
    window = default.stabilization_window_seconds
    if rules.get("stabilizationWindowSeconds") is not None:
        window = integer(rules["stabilizationWindowSeconds"], f"{field}.stabilizationWindowSeconds")
        if window < 0:
            raise fail(f"{field}.stabilizationWindowSeconds",
                       f"Invalid value: {window}: must be greater than or equal to zero")
        if window > MAX_STABILIZATION_WINDOW_SECONDS:
            raise fail(f"{field}.stabilizationWindowSeconds",
                       f"Invalid value: {window}: must be less than or equal to {MAX_STABILIZATION_WINDOW_SECONDS}")
    select = text(rules.get("selectPolicy"), f"{field}.selectPolicy") or default.select_policy
    if select not in SELECT_POLICIES:
        supported = ", ".join(f'"{p}"' for p in SELECT_POLICIES)
        raise fail(f"{field}.selectPolicy", f'Unsupported value: "{select}": supported values: {supported}')
    policies = default.policies
    if rules.get("policies") is not None:
        items = sequence(rules["policies"], f"{field}.policies")
        if not items:
            raise fail(f"{field}.policies", "Required value: must specify at least one Policy")
        policies = tuple(_policy(item, f"{field}.policies[{i}]") for i, item in enumerate(items))
    tolerance = default.tolerance
    if rules.get("tolerance") is not None:
        try:
            amount = parse_quantity(rules["tolerance"])
        except QuantityError as exc:
            if str(exc).startswith("negative"):
                raise fail(f"{field}.tolerance", f"Invalid value: {rules['tolerance']!r}: must be greater or "
                                                 "equal to zero") from None
            raise fail(f"{field}.tolerance", str(exc)) from None
        tolerance = float(amount)
    return ScalingRules(stabilization_window_seconds=window, select_policy=select, policies=policies,
                        tolerance=tolerance)


def _policy(raw: Any, field: str) -> ScalingPolicy:
    item = mapping(raw, field)
    kind = text(item.get("type"), f"{field}.type")
    if kind not in POLICY_TYPES:
        raise fail(f"{field}.type", f'Unsupported value: "{kind}": supported values: "Percent", "Pods"')
    value = integer(item.get("value", 0), f"{field}.value", maximum=_MAX_INT32)
    if value <= 0:
        raise fail(f"{field}.value", f"Invalid value: {value}: must be greater than zero")
    period = integer(item.get("periodSeconds", 0), f"{field}.periodSeconds")
    if period <= 0:
        raise fail(f"{field}.periodSeconds", f"Invalid value: {period}: must be greater than zero")
    if period > MAX_PERIOD_SECONDS:
        raise fail(f"{field}.periodSeconds",
                   f"Invalid value: {period}: must be less than or equal to {MAX_PERIOD_SECONDS}")
    return ScalingPolicy(type=kind, value=value, period_seconds=period)


def parse_hpa(doc: Manifest, source: Source | None = None, *, scale_to_zero: bool = True) -> HorizontalPodAutoscaler:
    """An autoscaling/v2 HorizontalPodAutoscaler, defaulted and validated; InputError naming the field.
    `scale_to_zero` is the HPAScaleToZero gate (on in v1.37): off, minReplicas must be at least 1."""
    meta = Meta(doc, namespaced=True)
    spec = mapping(doc.get("spec"), "spec", required=True)
    target = _object_ref(spec.get("scaleTargetRef"), "spec.scaleTargetRef")
    if target.kind not in SCALE_TARGET_KINDS:
        raise fail("spec.scaleTargetRef.kind",
                   f"{target.kind!r} is not simulated: Phalanx scales {', '.join(SCALE_TARGET_KINDS)}")
    lower = 0 if scale_to_zero else 1
    raw_min = spec.get("minReplicas")
    min_replicas = 1 if raw_min is None else integer(raw_min, "spec.minReplicas", maximum=_MAX_INT32)
    if min_replicas < lower:
        raise fail("spec.minReplicas", f"Invalid value: {min_replicas}: must be greater than or equal to {lower}")
    if spec.get("maxReplicas") is None:
        raise fail("spec.maxReplicas", "Required value")
    max_replicas = integer(spec.get("maxReplicas"), "spec.maxReplicas", maximum=_MAX_INT32)
    if max_replicas < 1:
        raise fail("spec.maxReplicas", f"Invalid value: {max_replicas}: must be greater than 0")
    if max_replicas < min_replicas:
        raise fail("spec.maxReplicas", f"Invalid value: {max_replicas}: must be greater than or equal to `minReplicas`")
    raw_metrics = sequence(spec.get("metrics"), "spec.metrics")
    metrics = tuple(_metric(m, f"spec.metrics[{i}]") for i, m in enumerate(raw_metrics))
    if not metrics:
        metrics = (MetricSpec(type="Resource", name="cpu",
                              target=MetricTarget(type="Utilization", average_utilization=DEFAULT_CPU_UTILIZATION)),)
    if min_replicas == 0 and not any(m.type in ("Object", "External") for m in metrics):
        raise fail("spec.metrics", SCALE_TO_ZERO_FORBIDDEN)
    behavior = None
    if spec.get("behavior") is not None:
        raw_behavior = mapping(spec.get("behavior"), "spec.behavior")
        behavior = Behavior(scale_up=_rules(raw_behavior.get("scaleUp"), "spec.behavior.scaleUp", DEFAULT_SCALE_UP),
                            scale_down=_rules(raw_behavior.get("scaleDown"), "spec.behavior.scaleDown",
                                              DEFAULT_SCALE_DOWN))
    strategy = text(spec.get("selectionStrategy"), "spec.selectionStrategy") or "LabelSelector"
    if strategy not in ("LabelSelector", "OwnerReferences"):
        raise fail("spec.selectionStrategy",
                   f'Unsupported value: "{strategy}": supported values: "LabelSelector", "OwnerReferences"')
    return HorizontalPodAutoscaler(namespace=meta.namespace, name=meta.name, target=target, min_replicas=min_replicas,
                                   max_replicas=max_replicas, metrics=metrics, behavior=behavior,
                                   selection_strategy=strategy, arrival=meta.arrival, source=source,
                                   annotations=dict(meta.annotations))
