"""Kueue's own objects as a cluster holds them: ResourceFlavor, ClusterQueue, Cohort, LocalQueue and
WorkloadPriorityClass of `kueue.x-k8s.io/v1beta1` (served, deprecated) and `kueue.x-k8s.io/v1beta2` (served,
the storage version). Each parser raises InputError naming the field, as Kueue's CRD schema and validating
webhooks (pkg/webhooks) would reject the object.

What differs between the versions, as far as admission goes:
- ClusterQueue: v1beta1 names its cohort `spec.cohort`, v1beta2 `spec.cohortName`.
- ClusterQueue: v1beta1 also has `spec.admissionChecks` (a plain list); v1beta2 only `admissionChecksStrategy`.
- flavorFungibility: v1beta2 takes `MayStopSearch` (default of whenCanBorrow) and `TryNextFlavor` (default of
  whenCanPreempt); v1beta1 also takes the old names `Borrow` and `Preempt`, both meaning `MayStopSearch`.
- Cohort: `spec.parentName` in both; the older v1alpha1 Cohort's `spec.parent` is read as the same thing.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Literal, cast

from phalanx.admission.crd import crd_int
from phalanx.api.fields import Manifest, Meta, fail, labels, mapping, object_name, sequence, text
from phalanx.api.objects import LabelSelector, Source, Taint, Toleration
from phalanx.api.quantity import QuantityError, parse_quantity, resource_value
from phalanx.api.selectors import parse_selector
from phalanx.api.tolerations import parse_toleration
from phalanx.errors import InputError

GROUP = "kueue.x-k8s.io"
VERSIONS = ("v1beta1", "v1beta2")
KINDS = ("ResourceFlavor", "ClusterQueue", "Cohort", "LocalQueue", "WorkloadPriorityClass")
PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"

MAX_RESOURCE_GROUPS = 16  # spec.resourceGroups, ClusterQueue and Cohort
MAX_GROUP_ITEMS = 64  # coveredResources, flavors and each flavor's resources, per group
MAX_TOTAL_FLAVORS = 256  # over all groups of a ClusterQueue (webhook validateTotalFlavors)
MAX_TOTAL_RESOURCES = 256  # coveredResources over all groups (webhook validateTotalCoveredResources)
MAX_FLAVOR_RESOURCES = 512  # flavor-resource pairs in one group (webhook validateFlavorResourceCombinations)
MAX_NODE_LABELS = 8  # ResourceFlavor spec.nodeLabels
_INT32 = (-(2**31), 2**31 - 1)

QueueingStrategy = Literal["StrictFIFO", "BestEffortFIFO"]
StopPolicy = Literal["None", "Hold", "HoldAndDrain"]
Fungibility = Literal["MayStopSearch", "TryNextFlavor"]

_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


# --- objects ------------------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class ResourceQuota:
    """One resource of one flavor: amounts in Phalanx units (cpu in millicores, others in base units)."""

    name: str
    nominal: int
    borrowing_limit: int | None = None  # None: may borrow whatever the cohort has unused
    lending_limit: int | None = None  # None: lends all of its unused nominal quota


@dataclass(frozen=True, slots=True)
class FlavorQuotas:
    name: str
    resources: tuple[ResourceQuota, ...]


@dataclass(frozen=True, slots=True)
class ResourceGroup:
    covered: tuple[str, ...]
    flavors: tuple[FlavorQuotas, ...]  # in the order flavor assignment tries them


@dataclass(frozen=True, slots=True)
class ResourceFlavor:
    name: str
    node_labels: Mapping[str, str] = field(default_factory=dict)
    node_taints: tuple[Taint, ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    raw_tolerations: tuple[Mapping[str, str], ...] = ()  # as written, for Admit.tolerations
    topology_name: str = ""
    source: Source | None = None


@dataclass(frozen=True, slots=True)
class ClusterQueuePreemption:
    """A ClusterQueue's `spec.preemption` (Kueue's ClusterQueuePreemption), borrowWithinCohort's policy and
    maxPriorityThreshold flattened in."""

    within_cluster_queue: Literal["Never", "LowerPriority", "LowerOrNewerEqualPriority"] = "Never"
    reclaim_within_cohort: Literal["Never", "LowerPriority", "Any"] = "Never"
    borrow_within_cohort: Literal["Never", "LowerPriority"] = "Never"
    max_priority_threshold: int | None = None


@dataclass(frozen=True, slots=True)
class FlavorFungibility:
    when_can_borrow: Fungibility = "MayStopSearch"
    when_can_preempt: Fungibility = "TryNextFlavor"
    preference: Literal["BorrowingOverPreemption", "PreemptionOverBorrowing"] | None = None


@dataclass(frozen=True, slots=True)
class ClusterQueue:
    name: str
    cohort: str = ""
    resource_groups: tuple[ResourceGroup, ...] = ()
    queueing_strategy: QueueingStrategy = "BestEffortFIFO"
    namespace_selector: LabelSelector | None = None  # None selects no namespace; {} selects every one
    flavor_fungibility: FlavorFungibility = field(default_factory=FlavorFungibility)
    preemption: ClusterQueuePreemption = field(default_factory=ClusterQueuePreemption)
    fair_weight: Decimal = Decimal(1)
    stop_policy: StopPolicy = "None"
    ignored: tuple[str, ...] = ()  # fields set that admission does not model
    api_version: str = "kueue.x-k8s.io/v1beta2"
    source: Source | None = None
    admission_mode: str = ""  # spec.admissionScope.admissionMode, "" without an admissionScope


@dataclass(frozen=True, slots=True)
class Cohort:
    name: str
    parent: str = ""
    resource_groups: tuple[ResourceGroup, ...] = ()
    fair_weight: Decimal = Decimal(1)
    ignored: tuple[str, ...] = ()
    source: Source | None = None


@dataclass(frozen=True, slots=True)
class LocalQueue:
    namespace: str
    name: str
    cluster_queue: str
    stop_policy: StopPolicy = "None"
    fair_weight: Decimal = Decimal(1)
    source: Source | None = None

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class WorkloadPriorityClass:
    name: str
    value: int
    source: Source | None = None


KueueObject = ResourceFlavor | ClusterQueue | Cohort | LocalQueue | WorkloadPriorityClass


# --- field readers ------------------------------------------------------------------------------------------

def _reference(value: Any, where: str, *, required: bool = False) -> str:
    """A reference to another Kueue object: a DNS subdomain of at most 253 characters."""
    name = text(value, where, required=required)
    if name and (len(name) > 253 or not _DNS_SUBDOMAIN.match(name)):
        raise fail(where, f"invalid name {name!r}: must be a lowercase DNS subdomain of at most 253 characters")
    return name


def _resource_name(value: Any, where: str) -> str:
    """A resource name: a qualified name (`cpu`, `nvidia.com/gpu`), as validateResourceName checks it."""
    name = text(value, where, required=True)
    prefix, _, local = name.rpartition("/")
    if len(local) > 63 or not _QUALIFIED_NAME.match(local) or (
            prefix and (len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix))) or name.startswith("/"):
        raise fail(where, f"invalid resource name {name!r}")
    return name


def _amount(resource: str, value: Any, where: str) -> int:
    if value is None:
        raise fail(where, "is required")
    try:
        return resource_value(resource, value)
    except QuantityError as exc:
        if str(exc).startswith("negative"):
            raise fail(where, "must be greater than or equal to 0") from None
        raise fail(where, str(exc)) from None


def _enum(value: Any, where: str, allowed: tuple[str, ...], default: str) -> str:
    got = text(value, where) or default
    if got not in allowed:
        raise fail(where, f"unsupported value {got!r}: one of {', '.join(allowed)}")
    return got


def _weight(raw: Mapping[str, Any], where: str) -> Decimal:
    """fairSharing.weight: a non-negative quantity, 0 or above 1n (webhook validateFairSharing)."""
    fs = mapping(raw.get("fairSharing"), f"{where}.fairSharing")
    if fs.get("weight") is None:
        return Decimal(1)
    wfield = f"{where}.fairSharing.weight"
    raw_weight = fs["weight"]
    if isinstance(raw_weight, str) and raw_weight.strip().startswith("-"):
        raise fail(wfield, "must be greater than or equal to 0")
    try:
        weight = parse_quantity(raw_weight)
    except QuantityError as exc:
        message = "must be greater than or equal to 0" if str(exc).startswith("negative") else str(exc)
        raise fail(wfield, message) from None
    if 0 < weight <= Decimal("1e-9"):
        raise fail(wfield, "when not 0, must be greater than 1n")
    return weight


def _stop_policy(spec: Mapping[str, Any]) -> StopPolicy:
    return cast(StopPolicy, _enum(spec.get("stopPolicy"), "spec.stopPolicy", ("None", "Hold", "HoldAndDrain"),
                                  "None"))


def _resource_groups(spec: Mapping[str, Any], *, has_parent: bool, is_cohort: bool) -> tuple[ResourceGroup, ...]:
    """spec.resourceGroups as the CRD schema and validateResourceGroups check it."""
    raw_groups = sequence(spec.get("resourceGroups"), "spec.resourceGroups")
    if len(raw_groups) > MAX_RESOURCE_GROUPS:
        raise fail("spec.resourceGroups", f"must have at most {MAX_RESOURCE_GROUPS} items, got {len(raw_groups)}")
    groups: list[ResourceGroup] = []
    seen_resources: set[str] = set()
    seen_flavors: set[str] = set()
    total_flavors = total_resources = 0
    for i, raw in enumerate(raw_groups):
        where = f"spec.resourceGroups[{i}]"
        group = mapping(raw, where)
        covered_raw = sequence(group.get("coveredResources"), f"{where}.coveredResources")
        flavors_raw = sequence(group.get("flavors"), f"{where}.flavors")
        for name, items in (("coveredResources", covered_raw), ("flavors", flavors_raw)):
            if not items:
                raise fail(f"{where}.{name}", "is required: at least 1 item")
            if len(items) > MAX_GROUP_ITEMS:
                raise fail(f"{where}.{name}", f"must have at most {MAX_GROUP_ITEMS} items, got {len(items)}")
        covered: list[str] = []
        for j, value in enumerate(covered_raw):
            rfield = f"{where}.coveredResources[{j}]"
            resource = _resource_name(value, rfield)
            if resource in seen_resources:
                raise fail(rfield, f"duplicate value {resource!r}")
            seen_resources.add(resource)
            covered.append(resource)
        flavors: list[FlavorQuotas] = []
        pairs = 0
        for j, value in enumerate(flavors_raw):
            ffield = f"{where}.flavors[{j}]"
            flavor = mapping(value, ffield)
            fname = _reference(flavor.get("name"), f"{ffield}.name", required=True)
            if fname in seen_flavors:
                raise fail(f"{ffield}.name", f"duplicate value {fname!r}")
            seen_flavors.add(fname)
            resources_raw = sequence(flavor.get("resources"), f"{ffield}.resources")
            if len(resources_raw) != len(covered):
                raise fail(f"{ffield}.resources", f"must have the same number of resources as coveredResources "
                                                  f"({len(covered)}), got {len(resources_raw)}")
            quotas: list[ResourceQuota] = []
            for k, rq_raw in enumerate(resources_raw):
                qfield = f"{ffield}.resources[{k}]"
                rq = mapping(rq_raw, qfield)
                rname = _resource_name(rq.get("name"), f"{qfield}.name")
                if rname != covered[k]:
                    raise fail(f"{qfield}.name", f"{rname!r} must match the name in coveredResources "
                                                 f"({covered[k]!r})")
                nominal = _amount(rname, rq.get("nominalQuota"), f"{qfield}.nominalQuota")
                limits: list[int | None] = []
                for key in ("borrowingLimit", "lendingLimit"):
                    if rq.get(key) is None:
                        limits.append(None)
                        continue
                    amount = _amount(rname, rq[key], f"{qfield}.{key}")
                    if not has_parent:
                        owner = "parent" if is_cohort else "cohort"
                        raise fail(f"{qfield}.{key}", f"must be nil when {owner} is empty")
                    limits.append(amount)
                if limits[1] is not None and not is_cohort and limits[1] > nominal:
                    raise fail(f"{qfield}.lendingLimit", "must be less than or equal to the nominalQuota")
                quotas.append(ResourceQuota(rname, nominal, limits[0], limits[1]))
            pairs += len(quotas)
            flavors.append(FlavorQuotas(fname, tuple(quotas)))
        if pairs > MAX_FLAVOR_RESOURCES:
            raise fail(where, f"number of flavor-resource combinations in a resourceGroup must be at most "
                              f"{MAX_FLAVOR_RESOURCES}, got {pairs}")
        total_flavors += len(flavors)
        total_resources += len(covered)
        groups.append(ResourceGroup(tuple(covered), tuple(flavors)))
    if total_flavors > MAX_TOTAL_FLAVORS:
        raise fail("spec.resourceGroups", f"total number of flavors must be at most {MAX_TOTAL_FLAVORS}, "
                                          f"got {total_flavors}")
    if total_resources > MAX_TOTAL_RESOURCES:
        raise fail("spec.resourceGroups", f"total number of covered resources must be at most "
                                          f"{MAX_TOTAL_RESOURCES}, got {total_resources}")
    return tuple(groups)


def _version(doc: Manifest, kind: str) -> str:
    api_version = text(doc.get("apiVersion"), "apiVersion", required=True)
    group, _, version = api_version.partition("/")
    allowed = VERSIONS + (("v1alpha1",) if kind == "Cohort" else ())
    if group != GROUP or version not in allowed:
        choices = ", ".join(f"{GROUP}/{v}" for v in allowed)
        raise fail("apiVersion", f"unsupported apiVersion {api_version!r} for {kind}: one of {choices}")
    return version


# --- parsers ------------------------------------------------------------------------------------------------

def parse_resource_flavor(doc: Manifest, source: Source) -> ResourceFlavor:
    _version(doc, "ResourceFlavor")
    meta = Meta(doc, namespaced=False)
    spec = mapping(doc.get("spec"), "spec")
    node_labels = labels(spec.get("nodeLabels"), "spec.nodeLabels")
    if len(node_labels) > MAX_NODE_LABELS:
        raise fail("spec.nodeLabels", f"must have at most {MAX_NODE_LABELS} entries, got {len(node_labels)}")
    taints: list[Taint] = []
    for i, raw in enumerate(sequence(spec.get("nodeTaints"), "spec.nodeTaints")):
        where = f"spec.nodeTaints[{i}]"
        item = mapping(raw, where)
        key = text(item.get("key"), f"{where}.key", required=True)
        effect = _enum(item.get("effect"), f"{where}.effect", _TAINT_EFFECTS, "")
        if not effect:
            raise fail(f"{where}.effect", "is required")
        taints.append(Taint(key=key, value=text(item.get("value"), f"{where}.value"), effect=cast(Any, effect)))
    tolerations: list[Toleration] = []
    raw_tolerations: list[Mapping[str, str]] = []
    for i, raw in enumerate(sequence(spec.get("tolerations"), "spec.tolerations")):
        tolerations.append(parse_toleration(raw, f"spec.tolerations[{i}]", _TAINT_EFFECTS))
        raw_tolerations.append({str(k): str(v) for k, v in mapping(raw, f"spec.tolerations[{i}]").items()})
    topology = _reference(spec.get("topologyName"), "spec.topologyName")
    if topology and not node_labels:
        raise fail("spec.nodeLabels", "at least one nodeLabel is required when topologyName is set")
    return ResourceFlavor(meta.name, node_labels, tuple(taints), tuple(tolerations), tuple(raw_tolerations),
                          topology, source)


def _preemption(spec: Mapping[str, Any]) -> ClusterQueuePreemption:
    raw = mapping(spec.get("preemption"), "spec.preemption")
    within = _enum(raw.get("withinClusterQueue"), "spec.preemption.withinClusterQueue",
                   ("Never", "LowerPriority", "LowerOrNewerEqualPriority"), "Never")
    reclaim = _enum(raw.get("reclaimWithinCohort"), "spec.preemption.reclaimWithinCohort",
                    ("Never", "LowerPriority", "Any"), "Never")
    bwc = mapping(raw.get("borrowWithinCohort"), "spec.preemption.borrowWithinCohort")
    policy = _enum(bwc.get("policy"), "spec.preemption.borrowWithinCohort.policy", ("Never", "LowerPriority"),
                   "Never")
    threshold = None
    if bwc.get("maxPriorityThreshold") is not None:
        threshold = crd_int(bwc["maxPriorityThreshold"], "spec.preemption.borrowWithinCohort.maxPriorityThreshold")
    if reclaim == "Never" and policy != "Never":
        raise fail("spec.preemption", "reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never")
    return ClusterQueuePreemption(cast(Any, within), cast(Any, reclaim), cast(Any, policy), threshold)


def _fungibility(spec: Mapping[str, Any], version: str) -> FlavorFungibility:
    raw = mapping(spec.get("flavorFungibility"), "spec.flavorFungibility")
    aliases = {"Borrow": "MayStopSearch", "Preempt": "MayStopSearch"} if version == "v1beta1" else {}
    borrow_allowed = ("MayStopSearch", "TryNextFlavor", *(("Borrow",) if aliases else ()))
    preempt_allowed = ("MayStopSearch", "TryNextFlavor", *(("Preempt",) if aliases else ()))
    borrow = _enum(raw.get("whenCanBorrow"), "spec.flavorFungibility.whenCanBorrow", borrow_allowed,
                   "MayStopSearch")
    preempt = _enum(raw.get("whenCanPreempt"), "spec.flavorFungibility.whenCanPreempt", preempt_allowed,
                    "TryNextFlavor")
    borrow, preempt = aliases.get(borrow, borrow), aliases.get(preempt, preempt)
    preference = None
    if raw.get("preference") is not None:
        preference = _enum(raw["preference"], "spec.flavorFungibility.preference",
                           ("BorrowingOverPreemption", "PreemptionOverBorrowing"), "")
        if borrow != "TryNextFlavor" or preempt != "TryNextFlavor":
            raise fail("spec.flavorFungibility.preference",
                       "requires both whenCanBorrow and whenCanPreempt to be TryNextFlavor")
    return FlavorFungibility(cast(Any, borrow), cast(Any, preempt), cast(Any, preference))


def parse_cluster_queue(doc: Manifest, source: Source) -> ClusterQueue:
    version = _version(doc, "ClusterQueue")
    meta = Meta(doc, namespaced=False)
    spec = mapping(doc.get("spec"), "spec")
    cohort_field = "spec.cohort" if version == "v1beta1" else "spec.cohortName"
    other = "spec.cohortName" if version == "v1beta1" else "spec.cohort"
    if spec.get(other.removeprefix("spec.")) is not None:
        raise fail(other, f"unknown field in {GROUP}/{version}: use {cohort_field}")
    cohort = _reference(spec.get(cohort_field.removeprefix("spec.")), cohort_field)
    groups = _resource_groups(spec, has_parent=bool(cohort), is_cohort=False)
    strategy = _enum(spec.get("queueingStrategy"), "spec.queueingStrategy", ("StrictFIFO", "BestEffortFIFO"),
                     "BestEffortFIFO")
    selector = None
    if spec.get("namespaceSelector") is not None:
        selector = parse_selector(spec["namespaceSelector"], "spec.namespaceSelector")
    ignored = [f"spec.{name}" for name in ("admissionChecks", "admissionChecksStrategy",
                                           "concurrentAdmissionPolicy") if spec.get(name)]
    scope = mapping(spec.get("admissionScope"), "spec.admissionScope")
    admission_mode = ""
    if spec.get("admissionScope") is not None:
        if not scope.get("admissionMode"):
            raise fail("spec.admissionScope.admissionMode", "Required value")
        admission_mode = _enum(scope.get("admissionMode"), "spec.admissionScope.admissionMode",
                               ("UsageBasedAdmissionFairSharing", "NoAdmissionFairSharing"), "")
    return ClusterQueue(
        name=meta.name, cohort=cohort, resource_groups=groups, queueing_strategy=cast(QueueingStrategy, strategy),
        namespace_selector=selector, flavor_fungibility=_fungibility(spec, version), preemption=_preemption(spec),
        fair_weight=_weight(spec, "spec"), stop_policy=_stop_policy(spec), ignored=tuple(ignored),
        api_version=f"{GROUP}/{version}", source=source, admission_mode=admission_mode)


def parse_cohort(doc: Manifest, source: Source) -> Cohort:
    version = _version(doc, "Cohort")
    meta = Meta(doc, namespaced=False)
    spec = mapping(doc.get("spec"), "spec")
    parent_field = "spec.parent" if version == "v1alpha1" else "spec.parentName"
    parent = _reference(spec.get(parent_field.removeprefix("spec.")), parent_field)
    if parent == meta.name:
        raise fail(parent_field, "cannot name the Cohort itself")
    groups = _resource_groups(spec, has_parent=bool(parent), is_cohort=True)
    return Cohort(meta.name, parent, groups, _weight(spec, "spec"), (), source)


def parse_local_queue(doc: Manifest, source: Source) -> LocalQueue:
    _version(doc, "LocalQueue")
    meta = Meta(doc, namespaced=True)
    spec = mapping(doc.get("spec"), "spec")
    cq = _reference(spec.get("clusterQueue"), "spec.clusterQueue")
    return LocalQueue(meta.namespace, meta.name, cq, _stop_policy(spec), _weight(spec, "spec"), source)


def parse_workload_priority_class(doc: Manifest, source: Source) -> WorkloadPriorityClass:
    _version(doc, "WorkloadPriorityClass")
    meta = Meta(doc, namespaced=False)
    if doc.get("value") is None:
        raise fail("value", "is required")
    value = crd_int(doc.get("value"), "value")
    return WorkloadPriorityClass(meta.name, value, source)


_PARSERS: dict[str, Callable[[Manifest, Source], KueueObject]] = {
    "ResourceFlavor": parse_resource_flavor,
    "ClusterQueue": parse_cluster_queue,
    "Cohort": parse_cohort,
    "LocalQueue": parse_local_queue,
    "WorkloadPriorityClass": parse_workload_priority_class,
}


def is_kueue_object(doc: Manifest) -> bool:
    """A document this module reads: one of KINDS in the `kueue.x-k8s.io` group (any version)."""
    api_version = doc.get("apiVersion")
    return (isinstance(api_version, str) and api_version.partition("/")[0] == GROUP
            and doc.get("kind") in _PARSERS)


def parse_kueue_object(doc: Manifest, source: Source) -> KueueObject:
    """One Kueue object; errors name the file, the object and the field."""
    kind = doc.get("kind")
    parser = _PARSERS.get(kind) if isinstance(kind, str) else None
    try:
        if parser is None:
            raise fail("kind", f"unsupported kind {kind!r}: one of {', '.join(KINDS)}")
        return parser(doc, source)
    except InputError as exc:
        raise exc.at(file=source.file, obj=object_name(doc)) from None
