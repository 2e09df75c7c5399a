"""Cross-object defaults and checks, once every object is read: priorities from PriorityClasses (the API
server's priority admission), PodGroups against their Workloads, the claims and device classes DRA objects
name."""

from __future__ import annotations

from phalanx.api.apps import resolve_templates
from phalanx.api.collection import ApiObjects
from phalanx.api.dra import DeviceTaintRule, ResourceClaim, ResourceClaimTemplate
from phalanx.api.names import first_few
from phalanx.api.objects import CompositePodGroup, Job, Pod, PodGroup, PriorityClass
from phalanx.api.sets import JobSet
from phalanx.errors import InputError


def _where(obj: Pod | PodGroup | CompositePodGroup | Job, kind: str) -> dict[str, str]:
    return {"file": obj.source.file if obj.source else "", "obj": f"{kind} {obj.namespace}/{obj.name}"}


# The classes every API server creates at start-up (kube-apiserver's bootstrap PriorityClasses): snapshots
# name them without listing them.
SYSTEM_PRIORITY_CLASSES = (
    PriorityClass(name="system-node-critical", value=2_000_001_000),
    PriorityClass(name="system-cluster-critical", value=2_000_000_000),
)


def _notice(inputs: ApiObjects, line: str) -> None:
    if line not in inputs.notices:  # resolve runs again after a trace adds objects
        inputs.notices.append(line)


def _admitted(group: PodGroup | CompositePodGroup, kind: str, pc: PriorityClass) -> None:
    """The Priority admission plugin's checks of a (Composite)PodGroup naming a PriorityClass, in its words: a
    priority or a preemptionPolicy it states must be the class's. (The real API server defaults an unstated
    policy to PreemptLowerPriority before admission, so it refuses a group of a `Never` class that does not say
    `Never`; Phalanx takes the class's policy there, as other schedulers' PodGroups translated here say none:
    docs/fidelity.md.)"""
    noun = "pod group" if kind == "PodGroup" else "composite pod group"
    if group.priority is not None and group.priority != pc.value:
        raise InputError(f"priority set in the {noun} ({group.priority}) must match the priority computed "
                         f"({pc.value}) based on the priority class set in the spec", field="spec.priority",
                         **_where(group, kind))
    stated = group.preemption_policy
    if stated is not None and stated != pc.preemption_policy:
        raise InputError(f"the string value of PreemptionPolicy ({stated}) must not be provided in {noun} spec; "
                         f"priority admission controller computed {pc.preemption_policy} from the given "
                         "PriorityClass name", field="spec.preemptionPolicy", **_where(group, kind))


def resolve(inputs: ApiObjects) -> None:
    """Cross-object defaults and checks: priorities from PriorityClasses, group policies from Workloads."""
    classes = {pc.name: pc for pc in SYSTEM_PRIORITY_CLASSES}
    classes.update((pc.name, pc) for pc in inputs.priority_classes)
    defaults = [pc for pc in inputs.priority_classes if pc.global_default]
    default_priority = defaults[0].value if defaults else 0
    node_arrival = {n.name: n.arrival for n in inputs.nodes}
    # Classes named but not given, by objects that carry the priority admission already filled in from them.
    missing: set[str] = set()

    def pod_priority(pod: Pod, kind: str, field: str) -> None:
        if pod.priority_class_name is not None:
            pc = classes.get(pod.priority_class_name)
            if pc is None:
                if pod.explicit_priority is None:
                    raise InputError(f"no PriorityClass named {pod.priority_class_name!r}", field=field,
                                     **_where(pod, kind))
                missing.add(pod.priority_class_name)
                pod.priority = pod.explicit_priority
                return
            if pod.explicit_priority is not None and pod.explicit_priority != pc.value:
                raise InputError(f"the integer value of priority ({pod.explicit_priority}) must not be provided in pod "
                                 f"spec; priority admission controller computed {pc.value} from the given "
                                 "PriorityClass name", field=field.replace("priorityClassName", "priority"),
                                 **_where(pod, kind))
            pod.priority = pc.value
            if pod.preemption_policy == "PreemptLowerPriority":
                pod.preemption_policy = pc.preemption_policy
        elif pod.explicit_priority is None:
            pod.priority = default_priority

    unplaced = [pod for pod in inputs.pods if pod.node_name is not None and pod.node_name not in node_arrival]
    if unplaced:
        # A partial snapshot (`kubectl get pods -A` with some of the nodes): their pods hold nothing here.
        dropped = {id(pod) for pod in unplaced}
        inputs.pods = [pod for pod in inputs.pods if id(pod) not in dropped]
        _notice(inputs, f"skipped {len(unplaced)} pod(s) bound to nodes not in the input ("
                + first_few([f"{p.namespace}/{p.name} on {p.node_name}" for p in unplaced]) + ")")
    for pod in inputs.pods:
        pod_priority(pod, "Pod", "spec.priorityClassName")
        if pod.node_name is not None and node_arrival[pod.node_name] > pod.arrival:
            raise InputError(f"Node {pod.node_name!r} arrives at {node_arrival[pod.node_name]:g}s, after this pod "
                             f"({pod.arrival:g}s)", field="spec.nodeName", **_where(pod, "Pod"))
    # status.startTime of running pods, made relative to the snapshot: the latest start is time 0.
    started = [p.start_time for p in inputs.pods if p.start_time is not None]
    latest = max(started, default=0.0)
    for pod in inputs.pods:
        if pod.start_time is not None:
            pod.start_time -= latest
    for job in inputs.jobs:
        pod_priority(job.template, "Job", "spec.template.spec.priorityClassName")
        job.template.source = job.source
    workloads = {w.key: w for w in inputs.workloads}

    def admit_priority(group: PodGroup | CompositePodGroup, kind: str) -> None:
        """Every field but priority is the group's own: the scheduler reads the (Composite)PodGroup only, and
        the controller that creates one copies the template's fields into it. Priority admission fills
        priority (and preemptionPolicy) from priorityClassName, else from the global default class, else 0."""
        pc = None
        if group.priority_class_name is not None:
            pc = classes.get(group.priority_class_name)
            if pc is None and group.priority is None:
                raise InputError(f"no PriorityClass named {group.priority_class_name!r}",
                                 field="spec.priorityClassName", **_where(group, kind))
            if pc is None:
                missing.add(group.priority_class_name)
            else:
                _admitted(group, kind, pc)
        elif defaults:
            pc = defaults[0]
        if group.priority is None:
            group.priority = pc.value if pc is not None else default_priority
        if group.preemption_policy is None:
            group.preemption_policy = pc.preemption_policy if pc is not None else "PreemptLowerPriority"

    for group in inputs.pod_groups:
        template = None
        if group.workload_name is not None:
            workload = workloads.get(f"{group.namespace}/{group.workload_name}")
            if workload is not None:
                template = workload.templates.get(group.template_name or "")
                if template is None:
                    raise InputError(f"Workload {workload.key} has no podGroupTemplate {group.template_name!r}",
                                     field="spec.workloadRef.templateName", **_where(group, "PodGroup"))
        if group.policy is None:  # the API server rejects it: the controller that creates it copies the policy
            raise InputError("is required: one of basic, gang", field="spec.schedulingPolicy",
                             **_where(group, "PodGroup"))
        admit_priority(group, "PodGroup")
    for composite in inputs.composite_pod_groups:
        workload = workloads.get(f"{composite.namespace}/{composite.workload_name}")
        if workload is not None and composite.template_name not in workload.composite_templates:
            raise InputError(f"Workload {workload.key} has no compositePodGroupTemplate {composite.template_name!r}",
                             field="spec.workloadRef.templateName", **_where(composite, "CompositePodGroup"))
        admit_priority(composite, "CompositePodGroup")
    if missing:
        _notice(inputs, f"no PriorityClass named {', '.join(repr(n) for n in sorted(missing))}: the objects naming "
                "it keep their own spec.priority")
    resolve_templates(inputs.controllers(), classes.values())
    ignored = [f"{js.key} ({', '.join(js.ignored_scheduling)})" for js in inputs.of(JobSet) if js.ignored_scheduling]
    if ignored:
        _notice(inputs, "JobSet Job templates' spec.scheduling has no effect (the Job controller makes PodGroups "
                "only for Jobs without a controller; name a PodGroup in the pod template's schedulingGroup "
                f"instead): {first_few(ignored)}")
    resolve_devices(inputs)


def _device_where(obj: ResourceClaim | ResourceClaimTemplate | DeviceTaintRule, kind: str) -> dict[str, str]:
    namespace = getattr(obj, "namespace", "")
    return {"file": obj.source.file if obj.source else "", "obj": f"{kind} {namespace + '/' if namespace else ''}"
            f"{obj.name}"}


def resolve_devices(inputs: ApiObjects) -> None:
    """DRA cross-object checks: device classes named by claims and rules exist; pods' claims and templates
    exist in the pod's namespace."""
    classes = {c.name for c in inputs.device_classes}

    def check_spec(obj: ResourceClaim | ResourceClaimTemplate, kind: str, where: str) -> None:
        for i, request in enumerate(obj.spec.requests):
            if request.exactly is not None:
                fields = [(request.exactly, f"{where}.devices.requests[{i}].exactly.deviceClassName")]
            else:
                fields = [(sub, f"{where}.devices.requests[{i}].firstAvailable[{j}].deviceClassName")
                          for j, sub in enumerate(request.first_available)]
            for exact, field_name in fields:
                if exact.device_class_name not in classes:
                    raise InputError(f"no DeviceClass named {exact.device_class_name!r}", field=field_name,
                                     **_device_where(obj, kind))

    for claim in inputs.resource_claims:
        check_spec(claim, "ResourceClaim", "spec")
    for template in inputs.claim_templates:
        check_spec(template, "ResourceClaimTemplate", "spec.spec")
    for rule in inputs.device_taint_rules:
        name = rule.selector.device_class_name
        if name is not None and name not in classes:
            raise InputError(f"no DeviceClass named {name!r}", field="spec.deviceSelector.deviceClassName",
                             **_device_where(rule, "DeviceTaintRule"))
    claims = {c.key for c in inputs.resource_claims}
    templates = {t.key for t in inputs.claim_templates}

    def check_pod(pod: Pod, kind: str, obj: Pod | Job, where: str) -> None:
        for i, ref in enumerate(pod.resource_claims):
            if ref.claim_name is not None and f"{obj.namespace}/{ref.claim_name}" not in claims:
                raise InputError(f"no ResourceClaim named {ref.claim_name!r} in namespace {obj.namespace!r}",
                                 field=f"{where}.resourceClaims[{i}].resourceClaimName", **_where(obj, kind))
            if ref.template_name is not None and f"{obj.namespace}/{ref.template_name}" not in templates:
                raise InputError(f"no ResourceClaimTemplate named {ref.template_name!r} in namespace "
                                 f"{obj.namespace!r}", field=f"{where}.resourceClaims[{i}].resourceClaimTemplateName",
                                 **_where(obj, kind))

    for pod in inputs.pods:
        check_pod(pod, "Pod", pod, "spec")
    for job in inputs.jobs:
        check_pod(job.template, "Job", job, "spec.template.spec")
    for group in inputs.pod_groups:  # DRAWorkloadResourceClaims: the claims its pods share
        for i, ref in enumerate(group.resource_claims):
            if ref.claim_name is not None and f"{group.namespace}/{ref.claim_name}" not in claims:
                raise InputError(f"no ResourceClaim named {ref.claim_name!r} in namespace {group.namespace!r}",
                                 field=f"spec.resourceClaims[{i}].resourceClaimName", **_where(group, "PodGroup"))
            if ref.template_name is not None and f"{group.namespace}/{ref.template_name}" not in templates:
                raise InputError(f"no ResourceClaimTemplate named {ref.template_name!r} in namespace "
                                 f"{group.namespace!r}", field=f"spec.resourceClaims[{i}].resourceClaimTemplateName",
                                 **_where(group, "PodGroup"))
