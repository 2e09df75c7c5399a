"""Turn one manifest (a dict from YAML) into a Phalanx object, raising InputError naming the field: the core
kinds (v1 Node and Pod, scheduling.k8s.io, batch/v1 Job, policy/v1 PodDisruptionBudget) and the pod spec that
every controller's template reuses (kinds.py lists every kind's parser)."""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, cast

from phalanx.api import dra
from phalanx.api.fields import Manifest, Meta, controller_ref, template_meta
from phalanx.api.fields import boolean as _bool
from phalanx.api.fields import fail as _fail
from phalanx.api.fields import integer as _int
from phalanx.api.fields import labels as _labels
from phalanx.api.fields import mapping as _mapping
from phalanx.api.fields import name as _name
from phalanx.api.fields import seconds as _seconds
from phalanx.api.fields import sequence as _list
from phalanx.api.fields import text as _text
from phalanx.api.host_ports import parse_host_ports
from phalanx.api.names import check, label_value_problem, qualified_name_problem, subdomain_problem
from phalanx.api.objects import (
    CHECKPOINT_ANNOTATION,
    DEFAULT_MEMORY_REQUEST,
    DEFAULT_MILLI_CPU_REQUEST,
    DEFAULT_SCHEDULER,
    DURATION_ANNOTATION,
    STARTUP_ANNOTATION,
    CompositePodGroup,
    CompositePodGroupTemplate,
    GroupPolicy,
    Job,
    Node,
    Placement,
    Pod,
    PodDisruptionBudget,
    PodGroup,
    PodGroupTemplate,
    PreferredTerm,
    PriorityClass,
    SelectorTerm,
    Source,
    Taint,
    Toleration,
    Workload,
)
from phalanx.api.peers import gpu_request, queueing
from phalanx.api.pod_constraints import parse_pod_affinity, parse_spread
from phalanx.api.quantity import MAX_INT64, QuantityError, resource_value
from phalanx.api.selectors import parse_selector
from phalanx.api.selectors import term as _term
from phalanx.api.tolerations import parse_toleration

MAX_PRIORITY = 1_000_000_000
MIN_PRIORITY = -2_147_483_648  # priorities are int32
MAX_INT32 = 2_147_483_647  # the API's int32 counts (minCount, minAvailable, …)
# The API server's bound on an Indexed Job's completions and parallelism; Phalanx simulates every pod of a Job,
# so it holds every Job to it.
MAX_JOB_PODS = 100_000
_TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")


# Manifests repeat a handful of quantities (`100m`, `500Mi`, `110`) thousands of times: their values, by
# resource name and the quantity exactly as written (a str or an int, never a float or a bool).
_AMOUNTS: dict[tuple[str, str | int], int] = {}
_MAX_AMOUNTS = 4096


def _resources(value: Any, field: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for name, raw in _mapping(value, field).items():
        resource = str(name)
        key = (resource, raw) if type(raw) is str or type(raw) is int else None
        amount = _AMOUNTS.get(key) if key is not None else None
        if amount is None:
            try:
                amount = resource_value(resource, raw)
            except QuantityError as exc:
                raise _fail(f"{field}.{name}", str(exc)) from None
            if key is not None:
                if len(_AMOUNTS) >= _MAX_AMOUNTS:
                    _AMOUNTS.clear()
                _AMOUNTS[key] = amount
        out[resource] = amount
    return out


# --- Node -------------------------------------------------------------------------------------------------

def _taint(raw: Any, field: str) -> Taint:
    item = _mapping(raw, field)
    effect = _text(item.get("effect"), f"{field}.effect", required=True)
    if effect not in _TAINT_EFFECTS:
        raise _fail(f"{field}.effect", f"unsupported value {effect!r}: one of {', '.join(_TAINT_EFFECTS)}")
    key = check(_text(item.get("key"), f"{field}.key", required=True), f"{field}.key", qualified_name_problem)
    value = check(_text(item.get("value"), f"{field}.value"), f"{field}.value", label_value_problem)
    return Taint(key=key, value=value, effect=cast(Any, effect))


def parse_node(doc: Manifest, source: Source) -> Node:
    meta = Meta(doc, namespaced=False)
    spec = _mapping(doc.get("spec"), "spec")
    status = _mapping(doc.get("status"), "status")
    allocatable_raw = status.get("allocatable", status.get("capacity"))
    allocatable = _resources(allocatable_raw, "status.allocatable")
    allocatable.setdefault("pods", 110)
    taints = tuple(_taint(t, f"spec.taints[{i}]") for i, t in enumerate(_list(spec.get("taints"), "spec.taints")))
    return Node(name=meta.name, allocatable=allocatable, labels=meta.labels, taints=taints,
                unschedulable=_bool(spec.get("unschedulable"), "spec.unschedulable"), arrival=meta.arrival,
                source=source)


# --- Pod --------------------------------------------------------------------------------------------------

def _add(total: dict[str, int], extra: Mapping[str, int]) -> dict[str, int]:
    out = dict(total)
    for name, value in extra.items():
        out[name] = out.get(name, 0) + value
    return out


def _max(a: Mapping[str, int], b: Mapping[str, int]) -> dict[str, int]:
    return {name: max(a.get(name, 0), b.get(name, 0)) for name in {*a, *b}}


def _container_requests(raw: Any, field: str) -> dict[str, int]:
    container = _mapping(raw, field)
    resources = _mapping(container.get("resources"), f"{field}.resources")
    limits = _resources(resources.get("limits"), f"{field}.resources.limits")
    requests = _resources(resources.get("requests"), f"{field}.resources.requests")
    for name, amount in requests.items():
        if _overcommittable(name):
            continue
        # ValidateResourceRequirements: an extended resource or hugepages are never overcommitted.
        if name not in limits:
            raise _fail(f"{field}.resources.limits",
                        "Required value: Limit must be set for non overcommitable resources")
        if limits[name] != amount:
            raise _fail(f"{field}.resources.requests[{name}]",
                        f"Invalid value: {_quantity(resources, 'requests', name)}: must be equal to {name} limit "
                        f"of {_quantity(resources, 'limits', name)}")
    return {**limits, **requests}  # the API server defaults a missing request to its limit


def _overcommittable(name: str) -> bool:
    """IsOverCommitAllowed: a native resource (no domain, or a kubernetes.io one) other than hugepages."""
    native = "/" not in name or "kubernetes.io/" in name
    return native and not name.startswith("hugepages-")


def _quantity(resources: Mapping[str, Any], kind: str, name: str) -> str:
    return str((resources.get(kind) or {}).get(name))


# kube-scheduler scores a container that sets no cpu or memory request as if it asked for these.
NON_MISSING_DEFAULTS = {"cpu": DEFAULT_MILLI_CPU_REQUEST, "memory": DEFAULT_MEMORY_REQUEST}


def _aggregate(containers: list[dict[str, int]], inits: list[tuple[dict[str, int], bool]],
               overhead: Mapping[str, int]) -> dict[str, int]:
    """kube's PodRequests: containers plus sidecars, or the largest init step if larger, plus overhead."""
    total: dict[str, int] = {}
    for requests in containers:
        total = _add(total, requests)
    sidecars: dict[str, int] = {}
    init_peak: dict[str, int] = {}
    for requests, sidecar in inits:
        if sidecar:
            sidecars = _add(sidecars, requests)
            step = sidecars
        else:
            step = _add(requests, sidecars)
        init_peak = _max(init_peak, step)
    return _add(_max(_add(total, sidecars), init_peak), overhead)


def pod_requests_pair(spec: Mapping[str, Any], field: str = "spec") -> tuple[dict[str, int], dict[str, int]]:
    """(requests as the fit filter counts them, requests as scoring counts them).

    Scoring fills a container's missing cpu and memory requests with 100m and 200Mi first, container by
    container (kube-scheduler's NonMissingContainerRequests). Pod-level requests (`spec.resources`) win over
    the containers' for cpu, memory and hugepages.
    """
    raw_containers = _list(spec.get("containers"), f"{field}.containers")
    if not raw_containers:
        raise _fail(f"{field}.containers", "at least one container is required")
    containers = [_container_requests(c, f"{field}.containers[{i}]") for i, c in enumerate(raw_containers)]
    inits: list[tuple[dict[str, int], bool]] = []
    for i, c in enumerate(_list(spec.get("initContainers"), f"{field}.initContainers")):
        cfield = f"{field}.initContainers[{i}]"
        inits.append((_container_requests(c, cfield), _mapping(c, cfield).get("restartPolicy") == "Always"))
    overhead = _resources(spec.get("overhead"), f"{field}.overhead")
    # PodLevelResources (beta, on in v1.37): spec.resources.requests for cpu, memory and hugepages replace the
    # containers' sum for those resources (PodRequests' applyPodLevelResources); overhead is added after.
    pod_level = {name: value for name, value in _resources(
        _mapping(spec.get("resources"), f"{field}.resources").get("requests"), f"{field}.resources.requests").items()
        if name in ("cpu", "memory") or name.startswith("hugepages-")}
    if pod_level:
        actual = _add({**_aggregate(containers, inits, {}), **pod_level}, overhead)
    else:
        actual = _aggregate(containers, inits, overhead)
    for name, value in actual.items():
        if value > MAX_INT64:  # each amount fits, their sum does not: no node has that much
            raise _fail(f"{field}.containers", f"the pod's {name} requests add up to more than a 64-bit integer "
                                               "holds")
    if pod_level:
        # getNonMissingContainerRequests: with pod-level requests, a default only for what neither level asks.
        missing = {name: value for name, value in NON_MISSING_DEFAULTS.items() if name not in actual}
        scoring = _add({**_aggregate([{**missing, **c} for c in containers],
                                     [({**missing, **r}, s) for r, s in inits], {}), **pod_level}, overhead)
    else:
        scoring = _aggregate([{**NON_MISSING_DEFAULTS, **c} for c in containers],
                             [({**NON_MISSING_DEFAULTS, **r}, s) for r, s in inits], overhead)
    return {name: value for name, value in actual.items() if value}, scoring


def _toleration(raw: Any, field: str) -> Toleration:
    return parse_toleration(raw, field, _TAINT_EFFECTS)


def _placement(spec: Mapping[str, Any], field: str, meta: Meta) -> Placement:
    selector = _labels(spec.get("nodeSelector"), f"{field}.nodeSelector")
    affinity = _mapping(_mapping(spec.get("affinity"), f"{field}.affinity").get("nodeAffinity"),
                        f"{field}.affinity.nodeAffinity")
    afield = f"{field}.affinity.nodeAffinity"
    required: tuple[SelectorTerm, ...] | None = None
    req_raw = affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if req_raw is not None:
        rfield = f"{afield}.requiredDuringSchedulingIgnoredDuringExecution"
        terms = _list(_mapping(req_raw, rfield).get("nodeSelectorTerms"), f"{rfield}.nodeSelectorTerms")
        required = tuple(_term(t, f"{rfield}.nodeSelectorTerms[{i}]") for i, t in enumerate(terms))
    preferred: list[PreferredTerm] = []
    pfield = f"{afield}.preferredDuringSchedulingIgnoredDuringExecution"
    for i, raw in enumerate(_list(affinity.get("preferredDuringSchedulingIgnoredDuringExecution"), pfield)):
        item = _mapping(raw, f"{pfield}[{i}]")
        weight = _int(item.get("weight"), f"{pfield}[{i}].weight", minimum=1, maximum=100)
        preferred.append(PreferredTerm(weight=weight, term=_term(item.get("preference"), f"{pfield}[{i}].preference")))
    tolerations = tuple(_toleration(t, f"{field}.tolerations[{i}]")
                        for i, t in enumerate(_list(spec.get("tolerations"), f"{field}.tolerations")))
    return Placement(node_selector=tuple(sorted(selector.items())), required_terms=required,
                     preferred_terms=tuple(preferred), tolerations=tolerations,
                     spread=parse_spread(spec, field, meta.labels),
                     pod_affinity=parse_pod_affinity(spec, field, meta.namespace, meta.labels))


def pod_from_spec(meta: Meta, spec: Mapping[str, Any], field: str, source: Source) -> Pod:
    """A Pod from metadata and a pod spec (a Pod's own, or a Job's template)."""
    if spec.get("workloadRef") is not None:
        raise _fail(f"{field}.workloadRef",
                    "is the v1.35 (v1alpha1) link; v1.37 pods name their group in spec.schedulingGroup.podGroupName")
    group = _mapping(spec.get("schedulingGroup"), f"{field}.schedulingGroup")
    pod_group = _name(group.get("podGroupName"), f"{field}.schedulingGroup.podGroupName") or None
    explicit_priority = None
    if spec.get("priority") is not None:
        explicit_priority = _int(spec.get("priority"), f"{field}.priority", minimum=-2_147_483_648,
                                 maximum=2_147_483_647)  # int32: system-node-critical is 2000001000
    preemption_policy = _text(spec.get("preemptionPolicy"), f"{field}.preemptionPolicy") or "PreemptLowerPriority"
    if preemption_policy not in ("PreemptLowerPriority", "Never"):
        raise _fail(f"{field}.preemptionPolicy", f"unsupported value {preemption_policy!r}")
    node_name = _name(spec.get("nodeName"), f"{field}.nodeName") or None
    grace = spec.get("terminationGracePeriodSeconds")
    requests, scoring = pod_requests_pair(spec, field)
    return Pod(
        namespace=meta.namespace, name=meta.name, requests=requests,
        scoring_requests=(scoring.get("cpu", 0), scoring.get("memory", 0)),
        placement=_placement(spec, field, meta), labels=meta.labels,
        priority=explicit_priority or 0, explicit_priority=explicit_priority,
        priority_class_name=_name(spec.get("priorityClassName"), f"{field}.priorityClassName") or None,
        preemption_policy=preemption_policy,
        scheduler_name=_text(spec.get("schedulerName"), f"{field}.schedulerName") or DEFAULT_SCHEDULER,
        node_name=node_name, pod_group=pod_group, arrival=meta.arrival,
        duration=_seconds(meta.annotations, DURATION_ANNOTATION, "metadata.annotations"),
        source=source, controller=meta.controller,
        termination_grace=30.0 if grace is None else float(_int(grace, f"{field}.terminationGracePeriodSeconds",
                                                                  minimum=0)),
        checkpoint_interval=_seconds(meta.annotations, CHECKPOINT_ANNOTATION, "metadata.annotations"),
        startup=_seconds(meta.annotations, STARTUP_ANNOTATION, "metadata.annotations"),
        resource_claims=dra.parse_pod_claims(spec, field), queueing=queueing(meta),
        host_ports=parse_host_ports(spec, field), scheduling_gates=_scheduling_gates(spec, field),
        gpu=gpu_request(meta.annotations, spec, field),
    )


def _scheduling_gates(spec: Mapping[str, Any], field: str) -> tuple[str, ...]:
    """spec.schedulingGates[].name, each a qualified name, none twice (as the API server validates them)."""
    names: list[str] = []
    for i, raw in enumerate(_list(spec.get("schedulingGates"), f"{field}.schedulingGates")):
        where = f"{field}.schedulingGates[{i}].name"
        name = _text(_mapping(raw, f"{field}.schedulingGates[{i}]").get("name"), where, required=True)
        problem = qualified_name_problem(name)
        if problem is not None:
            raise _fail(where, problem)
        if name in names:
            raise _fail(where, f"duplicate value {name!r}")
        names.append(name)
    return tuple(names)


def parse_pod(doc: Manifest, source: Source) -> Pod | None:
    """A Pod, or None for a pod that already terminated (a snapshot's Succeeded/Failed pods)."""
    meta = Meta(doc, namespaced=True)
    status = _mapping(doc.get("status"), "status")
    if status.get("phase") in ("Succeeded", "Failed"):
        return None
    pod = pod_from_spec(meta, _mapping(doc.get("spec"), "spec", required=True), "spec", source)
    owner = controller_ref(doc)
    if owner is not None and owner.name:  # so that a workload controller adopts it instead of adding another
        pod.owner = f"{meta.namespace}/{owner.name}"
    if status.get("startTime") is not None and pod.node_name is not None:
        pod.start_time = _timestamp(status.get("startTime"), "status.startTime")
    return pod


def _timestamp(raw: Any, field: str) -> float:
    """RFC 3339 (`2026-11-30T22:00:00Z`) as Unix seconds; `resolve` makes them relative to the snapshot."""
    if isinstance(raw, datetime.datetime):
        moment = raw
    else:
        try:
            moment = datetime.datetime.fromisoformat(_text(raw, field).replace("Z", "+00:00"))
        except ValueError:
            raise _fail(field, f"invalid RFC 3339 time {raw!r}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return moment.timestamp()


# --- scheduling.k8s.io --------------------------------------------------------------------------------------

def parse_priority_class(doc: Manifest, source: Source) -> PriorityClass:
    meta = Meta(doc, namespaced=False)
    # The API server keeps values above 1000000000 for its own `system-` classes.
    value = _int(doc.get("value"), "value", minimum=MIN_PRIORITY,
                 maximum=2_147_483_647 if meta.name.startswith("system-") else MAX_PRIORITY)
    policy = _text(doc.get("preemptionPolicy"), "preemptionPolicy") or "PreemptLowerPriority"
    if policy not in ("PreemptLowerPriority", "Never"):
        raise _fail("preemptionPolicy", f"unsupported value {policy!r}")
    return PriorityClass(name=meta.name, value=value, global_default=_bool(doc.get("globalDefault"), "globalDefault"),
                         preemption_policy=policy, source=source)


def parse_policy(raw: Any, field: str) -> GroupPolicy | None:
    """A PodGroup's schedulingPolicy: exactly one of `basic: {}`, `gang: {minCount ≥ 1}`; None when absent."""
    return None if raw is None else _group_policy(raw, field, "minCount")


def _group_policy(raw: Any, field: str, count: str, *, maximum: int = MAX_INT32) -> GroupPolicy:
    """Exactly one of `basic: {}` and `gang: {<count>: n ≥ 1}`, where `count` is the gang's quorum field."""
    policy = _mapping(raw, field)
    kinds = [k for k in ("basic", "gang") if k in policy]
    if len(kinds) != 1:
        raise _fail(field, "exactly one of basic, gang must be set")
    if kinds[0] == "basic":
        return GroupPolicy(kind="basic")
    gang = _mapping(policy.get("gang"), f"{field}.gang")
    if gang.get(count) is None:
        raise _fail(f"{field}.gang.{count}", "Required value")
    return GroupPolicy(kind="gang", min_count=_int(gang.get(count), f"{field}.gang.{count}", minimum=1,
                                                    maximum=maximum))


def _disruption_mode(raw: Any, field: str) -> str:
    if raw is None:
        return "single"
    if isinstance(raw, str):  # the v1.36 enum, kept readable: Pod -> single, PodGroup -> all
        mapped = {"Pod": "single", "PodGroup": "all"}.get(raw)
        if mapped is None:
            raise _fail(field, f"unsupported value {raw!r}: use {{single: {{}}}} or {{all: {{}}}}")
        return mapped
    mode = _mapping(raw, field)
    kinds = [k for k in ("single", "all") if k in mode]
    if len(kinds) != 1:
        raise _fail(field, "exactly one of single, all must be set")
    return kinds[0]


def _group_priority(spec: Mapping[str, Any], field: str) -> tuple[str | None, int | None]:
    name = _name(spec.get("priorityClassName"), f"{field}.priorityClassName") or None
    value = spec.get("priority")
    return name, None if value is None else _int(value, f"{field}.priority", minimum=MIN_PRIORITY,
                                                 maximum=MAX_PRIORITY)


def _group_preemption_policy(spec: Mapping[str, Any], field: str) -> str | None:
    policy = _text(spec.get("preemptionPolicy"), f"{field}.preemptionPolicy") or None
    if policy not in (None, "Never", "PreemptLowerPriority"):
        raise _fail(f"{field}.preemptionPolicy", f"unsupported value {policy!r}: one of Never, PreemptLowerPriority")
    return policy


def _label_key(raw: Any, field: str) -> str:
    """A node label key as the API server validates one (a qualified name: an optional DNS-subdomain prefix
    and `/`, then a name of at most 63 alphanumerics, `-`, `_` or `.`, starting and ending alphanumeric)."""
    key = _text(raw, field, required=True)
    prefix, slash, name = key.rpartition("/")
    if slash and (not prefix or subdomain_problem(prefix) is not None):
        raise _fail(field, f"invalid label key {key[:80]!r}: the prefix before '/' must be a lowercase DNS subdomain "
                           "of at most 253 characters")
    if qualified_name_problem(name) is not None:
        raise _fail(field, f"invalid label key {key[:80]!r}: the name must be at most 63 characters, alphanumerics, "
                           "'-', '_' or '.', starting and ending with an alphanumeric")
    return key


def _topology_key(spec: Mapping[str, Any], field: str) -> str | None:
    """schedulingConstraints.topology (KEP-5732): at most one `{key: <node label key>}`; its key, or None."""
    constraints = _mapping(spec.get("schedulingConstraints"), f"{field}.schedulingConstraints")
    where = f"{field}.schedulingConstraints.topology"
    items = _list(constraints.get("topology"), where)
    if len(items) > 1:
        raise _fail(where, f"must have at most 1 item, got {len(items)}")
    if not items:
        return None
    return _label_key(_mapping(items[0], f"{where}[0]").get("key"), f"{where}[0].key")


MAX_TEMPLATES = 8
# WorkloadMaxTemplateDepth: levels of the template tree, PodGroup templates included, so at most 3 composite levels.
MAX_TEMPLATE_DEPTH = 4
MAX_GROUP_CLAIMS = 4


def _pod_group_template(raw: Any, field: str) -> PodGroupTemplate:
    item = _mapping(raw, field)
    name = _text(item.get("name"), f"{field}.name", required=True)
    pc_name, priority = _group_priority(item, field)
    return PodGroupTemplate(
        name=name, policy=parse_policy(item.get("schedulingPolicy"), f"{field}.schedulingPolicy"),
        priority_class_name=pc_name, priority=priority,
        preemption_policy=_group_preemption_policy(item, field),
        disruption_mode=cast(Any, _disruption_mode(item.get("disruptionMode"), f"{field}.disruptionMode")),
        topology_key=_topology_key(item, field),
    )


def _template_list(spec: Mapping[str, Any], key: str, field: str) -> list[Any]:
    items = _list(spec.get(key), f"{field}.{key}")
    if len(items) > MAX_TEMPLATES:
        raise _fail(f"{field}.{key}", f"must have at most {MAX_TEMPLATES} items, got {len(items)}")
    return items


class _Templates:
    """A Workload's templates of every level as ValidateWorkloadSpec checks them: names unique across the
    whole tree, at most 4 composite levels, every composite template with a child, one priority for all."""

    def __init__(self) -> None:
        self.groups: dict[str, PodGroupTemplate] = {}
        self.composites: dict[str, CompositePodGroupTemplate] = {}
        self.priority: tuple[str | None, int | None] | None = None

    def _name(self, name: str, field: str) -> None:
        if name in self.groups or name in self.composites:
            raise _fail(f"{field}.name", f"Duplicate value: {name!r} (template names are unique in a Workload)")

    def _same_priority(self, pc_name: str | None, priority: int | None, top: str) -> None:
        if self.priority is None:
            self.priority = (pc_name, priority)
        elif self.priority != (pc_name, priority):
            raise _fail(top, "all priority and priorityClassName values must be identical, detected multiple "
                             "values")

    def group(self, raw: Any, field: str, top: str) -> str:
        template = _pod_group_template(raw, field)
        self._name(template.name, field)
        self._same_priority(template.priority_class_name, template.priority, top)
        self.groups[template.name] = template
        return template.name

    def composite(self, raw: Any, field: str, depth: int, top: str, top_item: str) -> str:
        """validateWorkloadTemplatesDepth, validateCompositePodGroupTemplateHasAtLeastOneChild and the name
        and priority checks, restated; `top_item` is the top-level template the depth error names."""
        if depth >= MAX_TEMPLATE_DEPTH:
            raise _fail(top_item, f"maximum template hierarchy depth is {MAX_TEMPLATE_DEPTH}")
        item = _mapping(raw, field)
        name = _text(item.get("name"), f"{field}.name", required=True)
        self._name(name, field)
        pc_name, priority = _group_priority(item, field)
        self._same_priority(pc_name, priority, top)
        raw_policy = item.get("schedulingPolicy")
        if raw_policy is None:
            raise _fail(f"{field}.schedulingPolicy", "is required: one of basic, gang")
        template = CompositePodGroupTemplate(
            name=name, policy=parse_composite_policy(raw_policy, f"{field}.schedulingPolicy"),
            priority_class_name=pc_name, priority=priority, preemption_policy=_group_preemption_policy(item, field),
            disruption_mode=cast(Any, _disruption_mode(item.get("disruptionMode"), f"{field}.disruptionMode")),
            topology_key=_topology_key(item, field))
        self.composites[name] = template
        group_items = _template_list(item, "podGroupTemplates", field)
        composite_items = _template_list(item, "compositePodGroupTemplates", field)
        if not group_items and not composite_items:
            raise _fail(field, "must have at least one child PodGroupTemplate or CompositePodGroupTemplate")
        template.children = tuple(self.group(r, f"{field}.podGroupTemplates[{i}]", top)
                                  for i, r in enumerate(group_items))
        template.composite_children = tuple(
            self.composite(r, f"{field}.compositePodGroupTemplates[{i}]", depth + 1, top, top_item)
            for i, r in enumerate(composite_items))
        return name


def parse_workload(doc: Manifest, source: Source) -> Workload:
    meta = Meta(doc, namespaced=True)
    spec = _mapping(doc.get("spec"), "spec", required=True)
    found = _Templates()
    group_items = _template_list(spec, "podGroupTemplates", "spec")
    composite_items = _template_list(spec, "compositePodGroupTemplates", "spec")
    if group_items and composite_items:
        raise _fail("spec", "exactly one of podGroupTemplates, compositePodGroupTemplates may be set")
    for i, raw in enumerate(group_items):
        found.group(raw, f"spec.podGroupTemplates[{i}]", "spec")
    for i, raw in enumerate(composite_items):
        where = f"spec.compositePodGroupTemplates[{i}]"
        found.composite(raw, where, 1, "spec", where)
    return Workload(namespace=meta.namespace, name=meta.name, templates=found.groups, arrival=meta.arrival,
                    source=source, composite_templates=found.composites)


def parse_composite_policy(raw: Any, field: str) -> GroupPolicy:
    """CompositePodGroupSchedulingPolicy: exactly one of `basic: {}`, `gang: {minGroupCount ≥ 1}`."""
    return _group_policy(raw, field, "minGroupCount")


def _object_name(raw: Any, field: str) -> str | None:
    """A reference to a (Composite)PodGroup by name: a DNS subdomain of at most 253 characters, or None."""
    if raw is None:
        return None
    _text(raw, field, required=True)
    return _name(raw, field)


def parse_composite_pod_group(doc: Manifest, source: Source) -> CompositePodGroup:
    """A scheduling.k8s.io/v1alpha3 CompositePodGroup, validated as the API server's declarative validation
    (Validate_CompositePodGroupSpec): workloadRef and schedulingPolicy required, names DNS subdomains,
    schedulingConstraints.topology at most one item."""
    meta = Meta(doc, namespaced=True)
    spec = _mapping(doc.get("spec"), "spec", required=True)
    if spec.get("workloadRef") is None:
        raise _fail("spec.workloadRef", "Required value")
    ref = _mapping(spec.get("workloadRef"), "spec.workloadRef")
    workload = _object_name(ref.get("workloadName"), "spec.workloadRef.workloadName")
    template = _text(ref.get("templateName"), "spec.workloadRef.templateName")
    if not workload or not template:
        raise _fail("spec.workloadRef", "needs both workloadName and templateName")
    if spec.get("schedulingPolicy") is None:
        raise _fail("spec.schedulingPolicy", "is required: one of basic, gang")
    pc_name, priority = _group_priority(spec, "spec")
    return CompositePodGroup(
        namespace=meta.namespace, name=meta.name,
        policy=parse_composite_policy(spec.get("schedulingPolicy"), "spec.schedulingPolicy"),
        parent=_object_name(spec.get("parentCompositePodGroupName"), "spec.parentCompositePodGroupName"),
        workload_name=workload, template_name=template, priority_class_name=pc_name, priority=priority,
        preemption_policy=_group_preemption_policy(spec, "spec"),
        disruption_mode=cast(Any, _disruption_mode(spec.get("disruptionMode"), "spec.disruptionMode")),
        topology_key=_topology_key(spec, "spec"), arrival=meta.arrival, source=source,
        conditions=_conditions(doc))


def parse_pod_group(doc: Manifest, source: Source) -> PodGroup:
    meta = Meta(doc, namespaced=True)
    spec = _mapping(doc.get("spec"), "spec", required=True)
    if spec.get("podGroupTemplateRef") is not None:
        raise _fail("spec.podGroupTemplateRef", "is the v1alpha2 field; v1beta1 uses spec.workloadRef")
    ref = _mapping(spec.get("workloadRef"), "spec.workloadRef")
    pc_name, priority = _group_priority(spec, "spec")
    group = PodGroup(
        namespace=meta.namespace, name=meta.name,
        policy=parse_policy(spec.get("schedulingPolicy"), "spec.schedulingPolicy"),
        workload_name=_text(ref.get("workloadName"), "spec.workloadRef.workloadName") or None,
        template_name=_text(ref.get("templateName"), "spec.workloadRef.templateName") or None,
        priority_class_name=pc_name, priority=priority,
        disruption_mode=cast(Any, _disruption_mode(spec.get("disruptionMode"), "spec.disruptionMode")),
        arrival=meta.arrival, source=source, preemption_policy=_group_preemption_policy(spec, "spec"),
        conditions=_conditions(doc), queueing=queueing(meta), topology_key=_topology_key(spec, "spec"),
        parent=_object_name(spec.get("parentCompositePodGroupName"), "spec.parentCompositePodGroupName"),
        resource_claims=dra.parse_pod_claims(spec, "spec"), claim_statuses=_claim_statuses(doc),
    )
    if ref and not (group.workload_name and group.template_name):
        raise _fail("spec.workloadRef", "needs both workloadName and templateName")
    if group.parent is not None and not ref:  # ValidatePodGroup
        raise _fail("spec.workloadRef", "must be set when parentCompositePodGroupName is set")
    if len(group.resource_claims) > MAX_GROUP_CLAIMS:
        raise _fail("spec.resourceClaims", f"must have at most {MAX_GROUP_CLAIMS} items, got "
                                           f"{len(group.resource_claims)}")
    return group


def _claim_statuses(doc: Manifest) -> tuple[tuple[str, str], ...]:
    """status.resourceClaimStatuses of a PodGroup (a snapshot's): entry name -> the claim made for it."""
    raw = _list(_mapping(doc.get("status"), "status").get("resourceClaimStatuses"), "status.resourceClaimStatuses")
    out: list[tuple[str, str]] = []
    for i, item in enumerate(raw):
        field = f"status.resourceClaimStatuses[{i}]"
        entry = _mapping(item, field)
        name = _text(entry.get("name"), f"{field}.name", required=True)
        claim = _text(entry.get("resourceClaimName"), f"{field}.resourceClaimName")
        if claim:
            out.append((name, claim))
    return tuple(out)


def _conditions(doc: Manifest) -> tuple[dict[str, str], ...]:
    """status.conditions of a PodGroup (a snapshot's), kept as written: type, status, reason, message, time."""
    raw = _list(_mapping(doc.get("status"), "status").get("conditions"), "status.conditions")
    out: list[dict[str, str]] = []
    for i, item in enumerate(raw):
        field = f"status.conditions[{i}]"
        cond = _mapping(item, field)
        out.append({k: str(v) for k, v in cond.items() if k in ("type", "status", "reason", "message",
                                                                 "lastTransitionTime") and v is not None})
        if not out[-1].get("type"):
            raise _fail(f"{field}.type", "is required")
    return tuple(out)


# --- batch/v1 ----------------------------------------------------------------------------------------------

def parse_job(doc: Manifest, source: Source) -> Job:
    meta = Meta(doc, namespaced=True)
    spec = _mapping(doc.get("spec"), "spec", required=True)
    parallelism = _int(spec.get("parallelism", 1), "spec.parallelism", minimum=0, maximum=MAX_JOB_PODS)
    completions = _int(spec.get("completions", parallelism), "spec.completions", minimum=0, maximum=MAX_JOB_PODS)
    template = _mapping(spec.get("template"), "spec.template", required=True)
    tmeta = template_meta(template, meta, "spec.template")
    pod = pod_from_spec(tmeta, _mapping(template.get("spec"), "spec.template.spec", required=True),
                        "spec.template.spec", source)
    if pod.duration is None:
        pod.duration = _seconds(meta.annotations, DURATION_ANNOTATION, "metadata.annotations")
    policy: GroupPolicy | None = None
    scheduling = _mapping(spec.get("scheduling"), "spec.scheduling")
    for shorthand in ("gang", "basic"):
        if shorthand in scheduling:  # the API server drops this unknown field: the Job would not be a gang
            raise _fail(f"spec.scheduling.{shorthand}",
                        f"is not a v1.37 Job field: write spec.scheduling.schedulingPolicy.{shorthand}")
    chosen = _mapping(scheduling.get("schedulingPolicy"), "spec.scheduling.schedulingPolicy")
    if "gang" in chosen:
        # batch/v1 JobSchedulingConfiguration: without minCount the Job controller takes parallelism.
        gang = _mapping(chosen.get("gang"), "spec.scheduling.schedulingPolicy.gang")
        min_count = parallelism
        if gang.get("minCount") is not None:
            min_count = _int(gang.get("minCount"), "spec.scheduling.schedulingPolicy.gang.minCount", minimum=1,
                             maximum=MAX_INT32)
        policy = GroupPolicy(kind="gang", min_count=min_count)
    elif "basic" in chosen:
        policy = GroupPolicy(kind="basic")
    queues = queueing(meta)
    min_parallelism, follow = (None, False) if queues is None or queues.kueue is None else \
        _partial_admission(meta, spec, min(parallelism, completions), parallelism, completions)
    return Job(namespace=meta.namespace, name=meta.name, template=pod, parallelism=parallelism,
               completions=completions, policy=policy, arrival=meta.arrival, source=source, queueing=queues,
               suspend=_bool(spec.get("suspend"), "spec.suspend"), min_parallelism=min_parallelism,
               completions_follow=follow)


KUEUE_MIN_PARALLELISM = "kueue.x-k8s.io/job-min-parallelism"
KUEUE_COMPLETIONS_FOLLOW = "kueue.x-k8s.io/job-completions-equal-parallelism"
# what Go's strconv.ParseBool takes
_GO_BOOLEANS = {**dict.fromkeys(("1", "t", "T", "TRUE", "true", "True"), True),
                **dict.fromkeys(("0", "f", "F", "FALSE", "false", "False"), False)}


def _partial_admission(meta: Meta, spec: Manifest, pods: int, parallelism: int, completions: int
                       ) -> tuple[int | None, bool]:
    """A Kueue-queued Job's partial admission annotations, checked as Kueue's Job webhook checks them
    (validatePartialAdmissionCreate, validateSyncCompletionCreate)."""
    min_parallelism: int | None = None
    raw = meta.annotations.get(KUEUE_MIN_PARALLELISM)
    if raw is not None:
        where = f"metadata.annotations[{KUEUE_MIN_PARALLELISM}]"
        try:
            min_parallelism = int(str(raw).strip())
        except ValueError:
            raise _fail(where, f"invalid value {raw!r}: not an integer") from None
        if not 0 < min_parallelism < pods:
            raise _fail(where, f"invalid value {min_parallelism}: should be between 0 and {pods - 1}")
    follow = False
    raw = meta.annotations.get(KUEUE_COMPLETIONS_FOLLOW)
    if raw is not None:
        where = f"metadata.annotations[{KUEUE_COMPLETIONS_FOLLOW}]"
        parsed = _GO_BOOLEANS.get(str(raw))
        if parsed is None:
            raise _fail(where, f"invalid value {raw!r}: not a boolean")
        follow = parsed
        if follow and spec.get("completionMode") != "Indexed":
            raise _fail(where, "should not be enabled for NonIndexed jobs")
        if follow and parallelism != completions:
            raise _fail("spec.completions", f"should be equal to parallelism when {KUEUE_COMPLETIONS_FOLLOW} is "
                        "true")
    return min_parallelism, follow


# --- policy/v1 ----------------------------------------------------------------------------------------------

def _int_or_percent(raw: Any, field: str) -> int | str:
    """An IntOrString as PodDisruptionBudget takes it: a non-negative integer, or a percentage up to 100%."""
    if isinstance(raw, str):
        if not (raw.endswith("%") and raw[:-1].isascii() and raw[:-1].isdigit()):
            raise _fail(field, f"must be an integer or a percentage like '50%', got {raw!r}")
        digits = raw[:-1].lstrip("0")
        if len(digits) > 3 or int(digits or "0") > 100:
            raise _fail(field, f"must not be more than 100%, got {raw!r}")
        return raw
    return _int(raw, field, minimum=0, maximum=MAX_INT32)


def parse_pdb(doc: Manifest, source: Source) -> PodDisruptionBudget:
    meta = Meta(doc, namespaced=True)
    spec = _mapping(doc.get("spec"), "spec", required=True)
    has_min, has_max = spec.get("minAvailable") is not None, spec.get("maxUnavailable") is not None
    if has_min and has_max:
        raise _fail("spec", "minAvailable and maxUnavailable are mutually exclusive")
    return PodDisruptionBudget(
        namespace=meta.namespace, name=meta.name, selector=parse_selector(spec.get("selector"), "spec.selector"),
        min_available=_int_or_percent(spec["minAvailable"], "spec.minAvailable") if has_min else None,
        max_unavailable=_int_or_percent(spec["maxUnavailable"], "spec.maxUnavailable") if has_max else None,
        source=source,
    )
