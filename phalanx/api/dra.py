"""Dynamic Resource Allocation objects (`resource.k8s.io`): ResourceSlice, DeviceClass, ResourceClaim,
ResourceClaimTemplate, DeviceTaintRule, and the pod's `spec.resourceClaims`.

Phalanx reads the `resource.k8s.io/v1` shapes and also accepts `v1beta1` and `v1beta2` (and `v1alpha3`
for DeviceTaintRule, the only version that served it before v1.36). Where fields moved between versions:

- ResourceSlice devices: v1beta1 nests a device's fields under `basic:`; v1beta2 and v1 put them on the
  device itself. v1beta1 capacities may be a bare quantity or `{value: …}`; both mean `{value: …}`.
- ResourceClaim requests: v1beta1 puts `deviceClassName`, `selectors`, `allocationMode`, `count`,
  `tolerations`, `capacity` on the request itself; v1beta2 and v1 put them under `exactly:`. Both read
  into one `ExactRequest`; `firstAvailable` is the same in every version.

Quantities (device capacity, capacity requests) are kept in thousandths of a base unit (`500m` is 500,
`1` is 1000, `80Gi` is 80·2³⁰·1000), so fractional and huge amounts compare exactly as integers; CEL's
`quantity()` uses the same scale. CEL selectors are compiled when an object is read (a selector that
does not compile is an input error naming the field) and evaluated once per device by the device state
(`phalanx.cluster.devices`), never per scheduling attempt.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, cast

import cel

from phalanx.api import cel_cost
from phalanx.api.fields import Meta
from phalanx.api.fields import boolean as _bool
from phalanx.api.fields import fail as _fail
from phalanx.api.fields import integer as _int
from phalanx.api.fields import mapping as _mapping
from phalanx.api.fields import sequence as _list
from phalanx.api.fields import text as _text
from phalanx.api.names import check, shown, subdomain_problem
from phalanx.api.objects import DEFAULT_NAMESPACE, PodResourceClaim, SelectorTerm, Source, Toleration
from phalanx.api.quantity import MAX_INT64, QuantityError, parse_quantity
from phalanx.api.selectors import term as _term
from phalanx.api.tolerations import parse_toleration

GROUP = "resource.k8s.io"
VERSIONS = (f"{GROUP}/v1", f"{GROUP}/v1beta2", f"{GROUP}/v1beta1")
TAINT_RULE_VERSIONS = (*VERSIONS, f"{GROUP}/v1alpha3")
DeviceTaintEffect = Literal["None", "NoSchedule", "NoExecute"]
TAINT_EFFECTS: tuple[str, ...] = ("None", "NoSchedule", "NoExecute")
AllocationMode = Literal["ExactCount", "All"]
AttributeValue = bool | int | str
MILLI = 1000
MAX_TOLERATIONS = 16
MAX_TAINTS = 16
# What the API server lets a device hold (ResourceSliceMaxAttributesAndCapacitiesPerDevice,
# DeviceAttributeMaxValueLength, DeviceMaxIDLength, DeviceMaxDomainLength = DriverNameMaxLength): the bounds the
# CEL cost estimate counts on (phalanx.api.cel_cost).
MAX_ATTRIBUTES_AND_CAPACITIES = cel_cost.DEVICE_ENTRIES
MAX_ATTRIBUTE_LENGTH = cel_cost.DEVICE_LENGTH
MAX_ID_LENGTH = 32
MAX_DOMAIN_LENGTH = 63
_C_IDENTIFIER = re.compile("[A-Za-z_][A-Za-z0-9_]*")


def milli(raw: Any, where: str) -> int:
    """A quantity in thousandths of its base unit (rounded up, as Kubernetes' MilliValue)."""
    try:
        value = parse_quantity(raw) * MILLI
    except QuantityError as exc:
        raise _fail(where, str(exc)) from None
    result = int(-(-value // 1))
    if result > MAX_INT64:  # counted in thousandths in int64 arrays, as Kubernetes' MilliValue
        raise _fail(where, f"quantity {raw!r} is too large: at most {MAX_INT64 // MILLI} base units")
    return result


# --- CEL --------------------------------------------------------------------------------------------------

_SEMVER = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$")


def semver_key(text: str) -> tuple[int, int, int, int, str]:
    """A sort key for a semantic version (a release sorts after its pre-releases)."""
    match = _SEMVER.match(text)
    if not match:
        raise ValueError(f"invalid semantic version {text!r}")
    major, minor, patch, pre = match.groups()
    return int(major), int(minor), int(patch), 0 if pre else 1, pre or ""


def _quantity(text: object) -> int:
    return int(-(-parse_quantity(text) * MILLI // 1))


def _compare(a: object, b: object) -> int:
    if isinstance(a, str) and isinstance(b, str):
        ka, kb = semver_key(a), semver_key(b)
        return (ka > kb) - (ka < kb)
    if isinstance(a, int) and isinstance(b, int):
        return (a > b) - (a < b)
    raise TypeError(f"cannot compare {a!r} and {b!r}")


def _semver(text: object) -> str:
    """CEL's semver(): the version itself (as a string), checked; compareTo and friends parse it again."""
    semver_key(str(text))
    return str(text)


def _is_semver(text: object) -> bool:
    return isinstance(text, str) and bool(_SEMVER.match(text))


# The Kubernetes CEL libraries DRA selectors use: quantities (as integers of thousandths) and semantic
# versions (as strings), with the member functions called on them.
_CEL_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "quantity": _quantity,
    "isQuantity": lambda text: _is_quantity(text),
    "semver": lambda text: _semver(text),
    "isSemver": _is_semver,
    "compareTo": _compare,
    "isGreaterThan": lambda a, b: _compare(a, b) > 0,
    "isLessThan": lambda a, b: _compare(a, b) < 0,
    "add": lambda a, b: a + (b if isinstance(b, int) else 0),
    "sub": lambda a, b: a - (b if isinstance(b, int) else 0),
    "asInteger": lambda a: a // MILLI,
    "asApproximateFloat": lambda a: a / MILLI,
    "isInteger": lambda a: a % MILLI == 0,
    "sign": lambda a: (a > 0) - (a < 0),
    "major": lambda v: semver_key(v)[0],
    "minor": lambda v: semver_key(v)[1],
    "patch": lambda v: semver_key(v)[2],
}


class _Failed:
    """What a CEL function returns instead of raising: CEL cannot convert it, so the evaluation fails (as it
    would in kube) without the CEL library printing the Python exception on stderr, as it does for a raise."""


_FAILED = _Failed()


def _quiet(function: Callable[..., Any]) -> Callable[..., Any]:
    def call(*args: Any) -> Any:
        try:
            return function(*args)
        except Exception:
            return _FAILED
    return call


CEL_FUNCTIONS: dict[str, Any] = {name: _quiet(function) for name, function in _CEL_FUNCTIONS.items()}


def _is_quantity(text: object) -> bool:
    try:
        parse_quantity(text)
    except QuantityError:
        return False
    return True


# The API server's limit on a device selector's CEL expression (resource.k8s.io CELSelectorExpressionMaxLength),
# in bytes. It also keeps the CEL parser, which panics or overflows its stack on deeply nested input, safe.
MAX_CEL_LENGTH = 10 * 1024


class TooCostly(ValueError):
    """A selector whose worst-case cost exceeds the API server's limit (phalanx.api.cel_cost)."""


@functools.lru_cache(maxsize=4096)
def compile_selector(expression: str) -> cel.Program:
    """The compiled program of a CEL expression (compiled once per distinct text); ValueError if invalid,
    TooCostly if its worst case costs more than the API server allows. Every evaluation gets its program here,
    so no expression runs whose worst case exceeds the budget: the interpreter takes no step limit of its own."""
    size = len(expression.encode("utf-8", "surrogatepass"))
    if size > MAX_CEL_LENGTH:
        raise ValueError(f"is {size} bytes long, more than the {MAX_CEL_LENGTH} the API server accepts")
    program = _compiled(expression)
    try:
        cost = cel_cost.estimate_cost(expression)
    except cel_cost.CostError as exc:
        raise TooCostly(str(exc)) from None
    if cost > cel_cost.MAX_COST:
        raise TooCostly(f"too complex, exceeds cost limit (estimated cost {cost}, limit {cel_cost.MAX_COST})")
    return program


def _compiled(expression: str) -> cel.Program:
    try:
        return cel.compile(expression)
    except ValueError:
        raise
    except Exception as exc:  # the parser's own failures (a Rust panic arrives as a BaseException subclass too)
        raise ValueError(f"the CEL parser failed: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
                         ) from None
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt | SystemExit | GeneratorExit):
            raise
        raise ValueError(f"the CEL parser failed: {type(exc).__name__}") from None


def _selector(raw: Any, where: str) -> str:
    item = _mapping(raw, where)
    expression = _text(_mapping(item.get("cel"), f"{where}.cel", required=True).get("expression"),
                       f"{where}.cel.expression", required=True)
    try:
        compile_selector(expression)
    except TooCostly as exc:
        raise _fail(f"{where}.cel.expression", f"Forbidden: {exc}") from None
    except ValueError as exc:
        first = str(exc).splitlines()[0] if str(exc) else "invalid expression"
        raise _fail(f"{where}.cel.expression", f"CEL expression does not compile: {first}") from None
    return expression


def _selectors(raw: Any, where: str) -> tuple[str, ...]:
    return tuple(_selector(s, f"{where}[{i}]") for i, s in enumerate(_list(raw, where)))


# --- taints and tolerations -------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class DeviceTaint:
    key: str
    value: str
    effect: DeviceTaintEffect
    time_added: float | None = None

    def describe(self) -> str:
        return f"{{{self.key}: {self.effect}}}"


# A claim request's toleration of device taints matches exactly as a pod's toleration of node taints.
DeviceToleration = Toleration


def _taint(raw: Any, where: str) -> DeviceTaint:
    item = _mapping(raw, where)
    key = _text(item.get("key"), f"{where}.key", required=True)
    effect = _text(item.get("effect"), f"{where}.effect", required=True)
    if effect not in TAINT_EFFECTS:
        raise _fail(f"{where}.effect", f"unsupported value {effect!r}: one of {', '.join(TAINT_EFFECTS)}")
    return DeviceTaint(key=key, value=_text(item.get("value"), f"{where}.value"),
                       effect=cast(DeviceTaintEffect, effect))


def _toleration(raw: Any, where: str) -> DeviceToleration:
    return parse_toleration(raw, where, TAINT_EFFECTS)


# --- ResourceSlice ----------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class CapacityPolicy:
    """KEP-5075 requestPolicy: how much of a shared device's capacity one request consumes."""

    default: int | None = None
    valid_values: tuple[int, ...] = ()
    min: int | None = None
    max: int | None = None
    step: int | None = None

    def consumed(self, requested: int | None) -> int | None:
        """The amount a request consumes (rounded up to a valid value), or None if the policy refuses it."""
        amount = self.default if requested is None else requested
        if amount is None:
            return None
        if self.valid_values:
            fitting = [v for v in self.valid_values if v >= amount]
            return fitting[0] if fitting else None
        if self.min is not None:
            amount = max(amount, self.min)
            if self.step:
                amount = self.min + -(-(amount - self.min) // self.step) * self.step
        if self.max is not None and amount > self.max:
            return None
        return amount


@dataclass(frozen=True, slots=True)
class DeviceCapacity:
    value: int  # thousandths of the base unit
    policy: CapacityPolicy | None = None


@dataclass(frozen=True, slots=True)
class NetworkData:
    """The network details a driver reports for an allocated device (ResourceClaim status.devices[])."""

    interface_name: str = ""
    ips: tuple[str, ...] = ()
    hardware_address: str = ""

    def manifest(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.interface_name:
            out["interfaceName"] = self.interface_name
        if self.ips:
            out["ips"] = list(self.ips)
        if self.hardware_address:
            out["hardwareAddress"] = self.hardware_address
        return out


@dataclass(slots=True)
class Device:
    name: str
    attributes: dict[str, AttributeValue] = field(default_factory=dict)  # fully qualified names
    capacity: dict[str, DeviceCapacity] = field(default_factory=dict)  # fully qualified names
    taints: tuple[DeviceTaint, ...] = ()
    allow_multiple: bool = False  # allowMultipleAllocations: capacity is consumed, not the device
    node_name: str | None = None  # per-device node selection (perDeviceNodeSelection)
    node_selector: tuple[SelectorTerm, ...] | None = None
    all_nodes: bool = False
    network_data: NetworkData | None = None


@dataclass(slots=True)
class ResourceSlice:
    name: str
    driver: str
    pool: str
    generation: int = 0
    node_name: str | None = None
    node_selector: tuple[SelectorTerm, ...] | None = None
    all_nodes: bool = False
    per_device_node_selection: bool = False
    devices: tuple[Device, ...] = ()
    arrival: float = 0.0
    source: Source | None = None


def _qualified(name: str, driver: str) -> str:
    return name if "/" in name else f"{driver}/{name}"


def _too_long(value: str, limit: int, where: str) -> None:
    if len(value) > limit:
        raise _fail(where, f"Too long: may not be more than {limit} bytes")


def _driver_name(value: str, where: str) -> str:
    """validateDriverName: a DNS subdomain of at most 63 characters."""
    _too_long(value, MAX_DOMAIN_LENGTH, where)
    return check(value, where, subdomain_problem)


def _attribute_name(name: str, where: str) -> str:
    """validateQualifiedName: `<C identifier>` or `<driver-like domain>/<C identifier>`."""
    domain, slash, ident = name.rpartition("/")
    if slash:
        _driver_name(domain, where)
    _too_long(ident, MAX_ID_LENGTH, where)
    if not _C_IDENTIFIER.fullmatch(ident):
        raise _fail(where, f"Invalid value: {shown(ident)}: a valid C identifier must start with alphabetic character "
                           "or '_', followed by a string of alphanumeric characters or '_'")
    return name


def _attribute(raw: Any, where: str) -> AttributeValue:
    item = _mapping(raw, where)
    kinds = [k for k in ("bool", "int", "string", "version") if k in item]
    if len(kinds) != 1:
        raise _fail(where, "exactly one of bool, int, string, version must be set")
    kind = kinds[0]
    if kind == "bool":
        return _bool(item["bool"], f"{where}.bool")
    if kind == "int":
        return _int(item["int"], f"{where}.int")
    text = _text(item[kind], f"{where}.{kind}")
    _too_long(text, MAX_ATTRIBUTE_LENGTH, f"{where}.{kind}")
    if kind == "version" and not _SEMVER.match(text):
        raise _fail(f"{where}.version", f"invalid semantic version {text!r}")
    return text


def _policy(raw: Any, where: str) -> CapacityPolicy | None:
    if raw is None:
        return None
    item = _mapping(raw, where)
    default = None if item.get("default") is None else milli(item["default"], f"{where}.default")
    values = tuple(milli(v, f"{where}.validValues[{i}]") for i, v in enumerate(_list(item.get("validValues"),
                                                                                      f"{where}.validValues")))
    if list(values) != sorted(values):
        raise _fail(f"{where}.validValues", "must be sorted in ascending order")
    rng = _mapping(item.get("validRange"), f"{where}.validRange")
    if values and rng:
        raise _fail(where, "validValues and validRange are mutually exclusive")
    low = None if rng.get("min") is None else milli(rng["min"], f"{where}.validRange.min")
    high = None if rng.get("max") is None else milli(rng["max"], f"{where}.validRange.max")
    step = None if rng.get("step") is None else milli(rng["step"], f"{where}.validRange.step")
    if rng and low is None:
        raise _fail(f"{where}.validRange.min", "is required")
    return CapacityPolicy(default=default, valid_values=values, min=low, max=high, step=step)


def _capacity(raw: Any, where: str) -> DeviceCapacity:
    if not isinstance(raw, Mapping):  # v1alpha3/v1beta1: a bare quantity
        return DeviceCapacity(milli(raw, where))
    return DeviceCapacity(milli(raw.get("value"), f"{where}.value"),
                          _policy(raw.get("requestPolicy"), f"{where}.requestPolicy"))


def _network_data(raw: Any, where: str) -> NetworkData | None:
    if raw is None:
        return None
    item = _mapping(raw, where)
    ips = tuple(_text(v, f"{where}.ips[{i}]") for i, v in enumerate(_list(item.get("ips"), f"{where}.ips")))
    return NetworkData(interface_name=_text(item.get("interfaceName"), f"{where}.interfaceName"), ips=ips,
                       hardware_address=_text(item.get("hardwareAddress"), f"{where}.hardwareAddress"))


def _node_selector(raw: Any, where: str) -> tuple[SelectorTerm, ...] | None:
    if raw is None:
        return None
    terms = _list(_mapping(raw, where).get("nodeSelectorTerms"), f"{where}.nodeSelectorTerms")
    return tuple(_term(t, f"{where}.nodeSelectorTerms[{i}]") for i, t in enumerate(terms))


def _device(raw: Any, where: str, driver: str, api_version: str) -> Device:
    item = _mapping(raw, where)
    name = _text(item.get("name"), f"{where}.name", required=True)
    body, bwhere = item, where
    if api_version.endswith("v1beta1"):
        body, bwhere = _mapping(item.get("basic"), f"{where}.basic"), f"{where}.basic"
    raw_attributes = _mapping(body.get("attributes"), f"{bwhere}.attributes")
    raw_capacity = _mapping(body.get("capacity"), f"{bwhere}.capacity")
    if len(raw_attributes) + len(raw_capacity) > MAX_ATTRIBUTES_AND_CAPACITIES:
        raise _fail(where, f"Invalid value: {len(raw_attributes) + len(raw_capacity)}: the total number of attributes "
                           f"and capacities must not exceed {MAX_ATTRIBUTES_AND_CAPACITIES}")
    attributes = {_qualified(_attribute_name(str(k), f"{bwhere}.attributes"), driver):
                  _attribute(v, f"{bwhere}.attributes.{k}") for k, v in raw_attributes.items()}
    capacity = {_qualified(_attribute_name(str(k), f"{bwhere}.capacity"), driver):
                _capacity(v, f"{bwhere}.capacity.{k}") for k, v in raw_capacity.items()}
    raw_taints = _list(body.get("taints"), f"{bwhere}.taints")
    if len(raw_taints) > MAX_TAINTS:
        raise _fail(f"{bwhere}.taints", f"must have at most {MAX_TAINTS} items, got {len(raw_taints)}")
    allow = _bool(body.get("allowMultipleAllocations"), f"{bwhere}.allowMultipleAllocations")
    for cname, cap in capacity.items():
        if cap.policy is not None and not allow:
            raise _fail(f"{bwhere}.capacity.{cname}.requestPolicy", "needs allowMultipleAllocations: true")
    return Device(
        name=name, attributes=attributes, capacity=capacity,
        taints=tuple(_taint(t, f"{bwhere}.taints[{i}]") for i, t in enumerate(raw_taints)),
        allow_multiple=allow,
        node_name=_text(body.get("nodeName"), f"{bwhere}.nodeName") or None,
        node_selector=_node_selector(body.get("nodeSelector"), f"{bwhere}.nodeSelector"),
        all_nodes=_bool(body.get("allNodes"), f"{bwhere}.allNodes"),
        network_data=_network_data(body.get("networkData"), f"{bwhere}.networkData"),
    )


def _meta(doc: Mapping[str, Any], *, namespaced: bool) -> Meta:
    return Meta(doc, namespaced=namespaced)


def parse_resource_slice(doc: Mapping[str, Any], source: Source) -> ResourceSlice:
    meta = _meta(doc, namespaced=False)
    spec = _mapping(doc.get("spec"), "spec", required=True)
    driver = _driver_name(_text(spec.get("driver"), "spec.driver", required=True), "spec.driver")
    pool = _mapping(spec.get("pool"), "spec.pool", required=True)
    api_version = str(doc.get("apiVersion", ""))
    per_device = _bool(spec.get("perDeviceNodeSelection"), "spec.perDeviceNodeSelection")
    node_name = _text(spec.get("nodeName"), "spec.nodeName") or None
    selector = _node_selector(spec.get("nodeSelector"), "spec.nodeSelector")
    all_nodes = _bool(spec.get("allNodes"), "spec.allNodes")
    if sum((node_name is not None, selector is not None, all_nodes, per_device)) != 1:
        raise _fail("spec", "exactly one of nodeName, nodeSelector, allNodes, perDeviceNodeSelection must be set")
    devices = tuple(_device(d, f"spec.devices[{i}]", driver, api_version)
                    for i, d in enumerate(_list(spec.get("devices"), "spec.devices")))
    names = [d.name for d in devices]
    if len(set(names)) != len(names):
        raise _fail("spec.devices", "device names must be unique within a slice")
    for i, device in enumerate(devices):
        chosen = sum((device.node_name is not None, device.node_selector is not None, device.all_nodes))
        if per_device and chosen != 1:
            raise _fail(f"spec.devices[{i}]", "exactly one of nodeName, nodeSelector, allNodes must be set "
                                              "with perDeviceNodeSelection")
        if not per_device and chosen:
            raise _fail(f"spec.devices[{i}]", "nodeName, nodeSelector and allNodes need perDeviceNodeSelection")
    return ResourceSlice(
        name=meta.name, driver=driver, pool=_text(pool.get("name"), "spec.pool.name", required=True),
        generation=_int(pool.get("generation", 0), "spec.pool.generation", minimum=0),
        node_name=node_name, node_selector=selector, all_nodes=all_nodes, per_device_node_selection=per_device,
        devices=devices, arrival=meta.arrival, source=source,
    )


# --- DeviceClass ------------------------------------------------------------------------------------------

@dataclass(slots=True)
class DeviceClass:
    name: str
    selectors: tuple[str, ...] = ()
    extended_resource_name: str | None = None  # KEP-5004: pods' requests for this resource use this class
    arrival: float = 0.0
    source: Source | None = None


def parse_device_class(doc: Mapping[str, Any], source: Source) -> DeviceClass:
    meta = _meta(doc, namespaced=False)
    spec = _mapping(doc.get("spec"), "spec")
    return DeviceClass(name=meta.name, selectors=_selectors(spec.get("selectors"), "spec.selectors"),
                       extended_resource_name=_text(spec.get("extendedResourceName"),
                                                    "spec.extendedResourceName") or None,
                       arrival=meta.arrival, source=source)


# --- ResourceClaim and ResourceClaimTemplate --------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class ExactRequest:
    """One way to satisfy a request: `count` devices (or `All`) of a class that pass every selector."""

    name: str
    device_class_name: str
    selectors: tuple[str, ...] = ()
    allocation_mode: AllocationMode = "ExactCount"
    count: int = 1
    tolerations: tuple[DeviceToleration, ...] = ()
    capacity: tuple[tuple[str, int], ...] = ()  # capacity.requests, fully qualified names, thousandths
    admin_access: bool = False


@dataclass(frozen=True, slots=True)
class DeviceRequest:
    name: str
    exactly: ExactRequest | None = None
    first_available: tuple[ExactRequest, ...] = ()

    @property
    def alternatives(self) -> tuple[ExactRequest, ...]:
        """`exactly`, or the `firstAvailable` subrequests in order of preference."""
        return (self.exactly,) if self.exactly is not None else self.first_available


@dataclass(frozen=True, slots=True)
class DeviceConstraint:
    requests: tuple[str, ...] = ()  # empty: every request of the claim
    match_attribute: str | None = None
    distinct_attribute: str | None = None


@dataclass(frozen=True, slots=True)
class ClaimSpec:
    requests: tuple[DeviceRequest, ...] = ()
    constraints: tuple[DeviceConstraint, ...] = ()


@dataclass(frozen=True, slots=True)
class AllocatedDevice:
    request: str
    driver: str
    pool: str
    device: str


@dataclass(slots=True)
class ResourceClaim:
    namespace: str
    name: str
    spec: ClaimSpec
    allocated: tuple[AllocatedDevice, ...] = ()  # status.allocation.devices.results of a snapshot
    arrival: float = 0.0
    source: Source | None = None
    template: str | None = None  # the ResourceClaimTemplate it was made from, if any
    reserved: tuple[str, ...] = ()  # names of the pods in status.reservedFor

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(slots=True)
class ResourceClaimTemplate:
    namespace: str
    name: str
    spec: ClaimSpec
    arrival: float = 0.0
    source: Source | None = None

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def _exact(item: Mapping[str, Any], where: str, name: str) -> ExactRequest:
    mode = _text(item.get("allocationMode"), f"{where}.allocationMode") or "ExactCount"
    if mode not in ("ExactCount", "All"):
        raise _fail(f"{where}.allocationMode", f"unsupported value {mode!r}: one of ExactCount, All")
    count = 1
    if item.get("count") is not None:
        if mode != "ExactCount":
            raise _fail(f"{where}.count", "may only be set with allocationMode ExactCount")
        count = _int(item["count"], f"{where}.count", minimum=1)
    raw_tolerations = _list(item.get("tolerations"), f"{where}.tolerations")
    if len(raw_tolerations) > MAX_TOLERATIONS:
        raise _fail(f"{where}.tolerations", f"must have at most {MAX_TOLERATIONS} items")
    requests = _mapping(_mapping(item.get("capacity"), f"{where}.capacity").get("requests"),
                        f"{where}.capacity.requests")
    capacity = tuple(sorted((str(k), milli(v, f"{where}.capacity.requests.{k}")) for k, v in requests.items()))
    return ExactRequest(
        name=name, device_class_name=_text(item.get("deviceClassName"), f"{where}.deviceClassName", required=True),
        selectors=_selectors(item.get("selectors"), f"{where}.selectors"), allocation_mode=cast(Any, mode),
        count=count, tolerations=tuple(_toleration(t, f"{where}.tolerations[{i}]")
                                       for i, t in enumerate(raw_tolerations)),
        capacity=capacity, admin_access=_bool(item.get("adminAccess"), f"{where}.adminAccess"),
    )


def _request(raw: Any, where: str, api_version: str) -> DeviceRequest:
    item = _mapping(raw, where)
    name = _text(item.get("name"), f"{where}.name", required=True)
    subs = _list(item.get("firstAvailable"), f"{where}.firstAvailable")
    if api_version.endswith("v1beta1"):
        exact_raw: Any = item if item.get("deviceClassName") is not None else None
        exact_where = where
    else:
        if item.get("deviceClassName") is not None:
            raise _fail(f"{where}.deviceClassName", f"is the v1beta1 field; {api_version} uses "
                                                    f"{where}.exactly.deviceClassName")
        exact_raw, exact_where = item.get("exactly"), f"{where}.exactly"
    if (exact_raw is None) == (not subs):
        raise _fail(where, "exactly one of exactly, firstAvailable must be set")
    if exact_raw is not None:
        return DeviceRequest(name, exactly=_exact(_mapping(exact_raw, exact_where), exact_where, name))
    alternatives: list[ExactRequest] = []
    for i, sub in enumerate(subs):
        swhere = f"{where}.firstAvailable[{i}]"
        sitem = _mapping(sub, swhere)
        sname = _text(sitem.get("name"), f"{swhere}.name", required=True)
        alternatives.append(_exact(sitem, swhere, f"{name}/{sname}"))
    return DeviceRequest(name, first_available=tuple(alternatives))


def parse_claim_spec(raw: Any, where: str, api_version: str) -> ClaimSpec:
    spec = _mapping(raw, where)
    devices = _mapping(spec.get("devices"), f"{where}.devices")
    requests = tuple(_request(r, f"{where}.devices.requests[{i}]", api_version)
                     for i, r in enumerate(_list(devices.get("requests"), f"{where}.devices.requests")))
    names = [r.name for r in requests]
    if len(set(names)) != len(names):
        raise _fail(f"{where}.devices.requests", "request names must be unique")
    constraints: list[DeviceConstraint] = []
    for i, raw_c in enumerate(_list(devices.get("constraints"), f"{where}.devices.constraints")):
        cwhere = f"{where}.devices.constraints[{i}]"
        item = _mapping(raw_c, cwhere)
        refs = tuple(_text(r, f"{cwhere}.requests[{j}]") for j, r in enumerate(_list(item.get("requests"),
                                                                                    f"{cwhere}.requests")))
        for j, ref in enumerate(refs):
            if ref.split("/")[0] not in names:
                raise _fail(f"{cwhere}.requests[{j}]", f"names no request of this claim: {ref!r}")
        match = _text(item.get("matchAttribute"), f"{cwhere}.matchAttribute") or None
        distinct = _text(item.get("distinctAttribute"), f"{cwhere}.distinctAttribute") or None
        if (match is None) == (distinct is None):
            raise _fail(cwhere, "exactly one of matchAttribute, distinctAttribute must be set")
        constraints.append(DeviceConstraint(refs, match, distinct))
    return ClaimSpec(requests, tuple(constraints))


def _results(status: Mapping[str, Any]) -> tuple[AllocatedDevice, ...]:
    allocation = _mapping(status.get("allocation"), "status.allocation")
    devices = _mapping(allocation.get("devices"), "status.allocation.devices")
    out: list[AllocatedDevice] = []
    for i, raw in enumerate(_list(devices.get("results"), "status.allocation.devices.results")):
        where = f"status.allocation.devices.results[{i}]"
        item = _mapping(raw, where)
        out.append(AllocatedDevice(*(_text(item.get(k), f"{where}.{k}", required=True)
                                     for k in ("request", "driver", "pool", "device"))))
    return tuple(out)


def parse_resource_claim(doc: Mapping[str, Any], source: Source) -> ResourceClaim:
    meta = _meta(doc, namespaced=True)
    spec = parse_claim_spec(doc.get("spec"), "spec", str(doc.get("apiVersion", "")))
    status = _mapping(doc.get("status"), "status")
    return ResourceClaim(namespace=meta.namespace, name=meta.name, spec=spec, allocated=_results(status),
                         arrival=meta.arrival, source=source, reserved=_reserved(status))


def _reserved(status: Mapping[str, Any]) -> tuple[str, ...]:
    out: list[str] = []
    for i, raw in enumerate(_list(status.get("reservedFor"), "status.reservedFor")):
        item = _mapping(raw, f"status.reservedFor[{i}]")
        if item.get("resource", "pods") == "pods":
            out.append(_text(item.get("name"), f"status.reservedFor[{i}].name", required=True))
    return tuple(out)


def parse_claim_template(doc: Mapping[str, Any], source: Source) -> ResourceClaimTemplate:
    meta = _meta(doc, namespaced=True)
    spec = _mapping(doc.get("spec"), "spec", required=True)
    claim = parse_claim_spec(spec.get("spec"), "spec.spec", str(doc.get("apiVersion", "")))
    return ResourceClaimTemplate(namespace=meta.namespace, name=meta.name, spec=claim, arrival=meta.arrival,
                                 source=source)


# --- DeviceTaintRule --------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class DeviceTaintSelector:
    """Which devices a DeviceTaintRule taints: every set field must match (an empty selector: all)."""

    driver: str | None = None
    pool: str | None = None
    device: str | None = None
    device_class_name: str | None = None  # v1alpha3 only
    selectors: tuple[str, ...] = ()  # v1alpha3 only


@dataclass(slots=True)
class DeviceTaintRule:
    name: str
    selector: DeviceTaintSelector
    taint: DeviceTaint
    arrival: float = 0.0
    source: Source | None = None


def parse_device_taint_rule(doc: Mapping[str, Any], source: Source) -> DeviceTaintRule:
    meta = _meta(doc, namespaced=False)
    spec = _mapping(doc.get("spec"), "spec", required=True)
    raw_selector = spec.get("deviceSelector")
    if raw_selector is None:
        raise _fail("spec.deviceSelector", "is required (an empty selector {} selects every device)")
    sel = _mapping(raw_selector, "spec.deviceSelector")
    selector = DeviceTaintSelector(
        driver=_text(sel.get("driver"), "spec.deviceSelector.driver") or None,
        pool=_text(sel.get("pool"), "spec.deviceSelector.pool") or None,
        device=_text(sel.get("device"), "spec.deviceSelector.device") or None,
        device_class_name=_text(sel.get("deviceClassName"), "spec.deviceSelector.deviceClassName") or None,
        selectors=_selectors(sel.get("selectors"), "spec.deviceSelector.selectors"),
    )
    taint = _taint(_mapping(spec.get("taint"), "spec.taint", required=True), "spec.taint")
    return DeviceTaintRule(name=meta.name, selector=selector,
                           taint=DeviceTaint(taint.key, taint.value, taint.effect, time_added=meta.arrival),
                           arrival=meta.arrival, source=source)


# --- the pod's spec.resourceClaims ------------------------------------------------------------------------

def parse_pod_claims(spec: Mapping[str, Any], where: str) -> tuple[PodResourceClaim, ...]:
    out: list[PodResourceClaim] = []
    for i, raw in enumerate(_list(spec.get("resourceClaims"), f"{where}.resourceClaims")):
        cwhere = f"{where}.resourceClaims[{i}]"
        item = _mapping(raw, cwhere)
        name = _text(item.get("name"), f"{cwhere}.name", required=True)
        claim = _text(item.get("resourceClaimName"), f"{cwhere}.resourceClaimName") or None
        template = _text(item.get("resourceClaimTemplateName"), f"{cwhere}.resourceClaimTemplateName") or None
        if (claim is None) == (template is None):
            raise _fail(cwhere, "exactly one of resourceClaimName, resourceClaimTemplateName must be set")
        if any(c.name == name for c in out):
            raise _fail(f"{cwhere}.name", f"duplicate claim name {name!r}")
        out.append(PodResourceClaim(name, claim, template))
    return tuple(out)


def claim_from_template(template: ResourceClaimTemplate, pod_namespace: str, pod_name: str,
                        ref: PodResourceClaim) -> ResourceClaim:
    """The ResourceClaim the resourceclaim controller makes for a pod from a template."""
    return ResourceClaim(namespace=pod_namespace or DEFAULT_NAMESPACE, name=ref.claim_for(pod_name),
                         spec=template.spec, template=template.name)
