"""Fluent builders for Kubernetes objects, shared by every test tier (after kube-scheduler's MakePod()).

A builder holds the manifest a Kubernetes user would write; `.manifest()` returns it as a dict (what
`kubectl get -o yaml` prints, what a test writes to a file), `.obj()` parses it with Phalanx's own
parser, and `.kube()` makes it the lightkube object a live or control-plane test sends to the API server.
So a test reads like the YAML it stands for:

    MakePod().name("web").req(cpu="500m", memory="1Gi").toleration("gpu", "true").obj()
    MakeNode().name("node-a").alloc(cpu="16", memory="64Gi").taint("gpu", "true").obj()
    client.create(MakePod("p", namespace).scheduler("phalanx").req(cpu="1").kube())
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar, cast

import yaml
from lightkube.core.dictmixin import DictMixin
from lightkube.resources import batch_v1, core_v1, scheduling_v1, scheduling_v1alpha3, scheduling_v1beta1

from phalanx.api.kinds import KINDS
from phalanx.api.objects import (
    CompositePodGroup,
    Job,
    Node,
    Pod,
    PodDisruptionBudget,
    PodGroup,
    PriorityClass,
    Source,
    Workload,
)
from phalanx.api.parse import (
    parse_composite_pod_group,
    parse_job,
    parse_node,
    parse_pod,
    parse_pod_group,
    parse_workload,
)
from phalanx.api.resolve import resolve
from phalanx.cluster.state import ClusterState
from phalanx.inputs.load import Inputs
from phalanx.scheduler.framework import CycleState

Doc = dict[str, Any]
B = TypeVar("B", bound="_Builder")
K = TypeVar("K", bound=DictMixin)


def kube_object(kind: type[K], doc: Doc) -> K:
    """The manifest as lightkube's object of `kind` (its `from_dict` is typed as returning the base class)."""
    return cast(K, kind.from_dict(copy.deepcopy(doc)))


def _resources(resources: Mapping[str, Any] | None, kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """`req({"nvidia.com/gpu": 1}, cpu="2")`: names that are not Python identifiers go in the mapping."""
    return {**(resources or {}), **kwargs}


class _Builder:
    def __init__(self, api_version: str, kind: str, name: str, namespace: str | None) -> None:
        meta: Doc = {"name": name}
        if namespace is not None:
            meta["namespace"] = namespace
        self.doc: Doc = {"apiVersion": api_version, "kind": kind, "metadata": meta}

    @property
    def _meta(self) -> Doc:
        meta: Doc = self.doc["metadata"]
        return meta

    def name(self: B, name: str) -> B:
        self._meta["name"] = name
        return self

    def namespace(self: B, namespace: str) -> B:
        self._meta["namespace"] = namespace
        return self

    def label(self: B, key: str, value: str) -> B:
        self._meta.setdefault("labels", {})[key] = value
        return self

    def annotation(self: B, key: str, value: str) -> B:
        self._meta.setdefault("annotations", {})[key] = value
        return self

    def arrival(self: B, when: str | int) -> B:
        """`phalanx.dev/arrival`: when the object appears in the simulation."""
        return self.annotation("phalanx.dev/arrival", str(when))

    def api_version(self: B, api_version: str) -> B:
        self.doc["apiVersion"] = api_version
        return self

    def manifest(self) -> Doc:
        return copy.deepcopy(self.doc)

    def __repr__(self) -> str:  # hypothesis prints failing examples with this: show the manifest
        return yaml.safe_dump(self.doc, default_flow_style=True, sort_keys=False, width=10_000).strip()


# --- Node -----------------------------------------------------------------------------------------------

class MakeNode(_Builder):
    def __init__(self, name: str = "node") -> None:
        super().__init__("v1", "Node", name, None)
        self.doc["spec"] = {}
        self.doc["status"] = {"allocatable": {}}

    def alloc(self, resources: Mapping[str, Any] | None = None, **kwargs: Any) -> MakeNode:
        """status.allocatable, e.g. `alloc(cpu="16", memory="64Gi")` or `alloc({"nvidia.com/gpu": 8})`."""
        self.doc["status"]["allocatable"].update(_resources(resources, kwargs))
        return self

    def capacity(self, resources: Mapping[str, Any] | None = None, **kwargs: Any) -> MakeNode:
        """status.capacity, as `alloc` (the API server keeps what a node reports; the engine reads allocatable)."""
        self.doc["status"].setdefault("capacity", {}).update(_resources(resources, kwargs))
        return self

    def ready(self) -> MakeNode:
        """The Ready condition a kubelet reports (a live test's node has no kubelet)."""
        self.doc["status"].setdefault("conditions", []).append(
            {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "ok"})
        return self

    def taint(self, key: str, value: str = "", effect: str = "NoSchedule") -> MakeNode:
        taint: Doc = {"key": key, "effect": effect}
        if value:
            taint["value"] = value
        self.doc["spec"].setdefault("taints", []).append(taint)
        return self

    def unschedulable(self, value: bool = True) -> MakeNode:
        self.doc["spec"]["unschedulable"] = value
        return self

    def obj(self) -> Node:
        return parse_node(self.manifest(), Source("<builder>", 0))

    def kube(self) -> core_v1.Node:
        return kube_object(core_v1.Node, self.doc)


# --- Pod ------------------------------------------------------------------------------------------------

def _container(name: str, requests: Mapping[str, Any] | None, limits: Mapping[str, Any] | None) -> Doc:
    """A container with these requests and limits; an extended resource or hugepages requested with no limit
    get one equal to the request, as the API server requires (they are never overcommitted)."""
    container: Doc = {"name": name, "image": "registry.example.com/app:v1"}
    resources: Doc = {}
    if requests:
        resources["requests"] = dict(requests)
    whole = {k: v for k, v in (requests or {}).items()
             if ("/" in k and "kubernetes.io/" not in k) or k.startswith("hugepages-")}
    limits = {**whole, **(limits or {})}
    if limits:
        resources["limits"] = dict(limits)
    if resources:
        container["resources"] = resources
    return container


def _claim_ref(name: str, claim: str | None, template: str | None) -> Doc:
    """A resourceClaims entry of a pod or PodGroup: the ResourceClaim `claim` or one made from `template`."""
    ref: Doc = {"name": name}
    if claim is not None:
        ref["resourceClaimName"] = claim
    if template is not None:
        ref["resourceClaimTemplateName"] = template
    return ref


class MakePod(_Builder):
    def __init__(self, name: str = "pod", namespace: str = "default") -> None:
        super().__init__("v1", "Pod", name, namespace)
        self.doc["spec"] = {"containers": []}

    @property
    def spec(self) -> Doc:
        spec: Doc = self.doc["spec"]
        return spec

    # containers

    def req(self, resources: Mapping[str, Any] | None = None, **kwargs: Any) -> MakePod:
        """Add a container requesting these resources (as kube-scheduler's PodWrapper.Req does)."""
        return self.container(requests=_resources(resources, kwargs))

    def container(self, requests: Mapping[str, Any] | None = None,
                  limits: Mapping[str, Any] | None = None) -> MakePod:
        containers: list[Doc] = self.spec["containers"]
        containers.append(_container(f"c{len(containers)}", requests, limits))
        return self

    def init_container(self, requests: Mapping[str, Any] | None = None, *, sidecar: bool = False,
                       limits: Mapping[str, Any] | None = None) -> MakePod:
        """An init container; `sidecar=True` gives it `restartPolicy: Always` (a native sidecar)."""
        inits: list[Doc] = self.spec.setdefault("initContainers", [])
        container = _container(f"init{len(inits)}", requests, limits)
        if sidecar:
            container["restartPolicy"] = "Always"
        inits.append(container)
        return self

    def claim(self, name: str, *, claim: str | None = None, template: str | None = None) -> MakePod:
        """A spec.resourceClaims entry (of the ResourceClaim `claim` or the template `template`), which the
        last container uses."""
        self.spec.setdefault("resourceClaims", []).append(_claim_ref(name, claim, template))
        self.spec["containers"][-1].setdefault("resources", {}).setdefault("claims", []).append({"name": name})
        return self

    def overhead(self, resources: Mapping[str, Any] | None = None, **kwargs: Any) -> MakePod:
        self.spec["overhead"] = _resources(resources, kwargs)
        return self

    # scheduling

    def scheduler(self, name: str) -> MakePod:
        """spec.schedulerName: which scheduler on a real API server takes the pod."""
        self.spec["schedulerName"] = name
        return self

    def grace(self, seconds: int) -> MakePod:
        """spec.terminationGracePeriodSeconds."""
        self.spec["terminationGracePeriodSeconds"] = seconds
        return self

    def priority(self, value: int) -> MakePod:
        self.spec["priority"] = value
        return self

    def priority_class(self, name: str) -> MakePod:
        self.spec["priorityClassName"] = name
        return self

    def toleration(self, key: str = "", value: str = "", effect: str = "", operator: str | None = None,
                   seconds: int | None = None) -> MakePod:
        toleration: Doc = {}
        if key:
            toleration["key"] = key
        if operator:
            toleration["operator"] = operator
        if value:
            toleration["value"] = value
        if effect:
            toleration["effect"] = effect
        if seconds is not None:
            toleration["tolerationSeconds"] = seconds
        self.spec.setdefault("tolerations", []).append(toleration)
        return self

    def node_selector(self, labels: Mapping[str, str] | None = None, **kwargs: str) -> MakePod:
        self.spec.setdefault("nodeSelector", {}).update(_resources(labels, kwargs))
        return self

    def _node_affinity(self) -> Doc:
        affinity: Doc = self.spec.setdefault("affinity", {}).setdefault("nodeAffinity", {})
        return affinity

    def required_term(self, *expressions: Doc, fields: Sequence[Doc] = ()) -> MakePod:
        """Add one nodeSelectorTerm (terms are ORed; the expressions inside one term are ANDed)."""
        required = self._node_affinity().setdefault("requiredDuringSchedulingIgnoredDuringExecution",
                                                    {"nodeSelectorTerms": []})
        term: Doc = {}
        if expressions:
            term["matchExpressions"] = list(expressions)
        if fields:
            term["matchFields"] = list(fields)
        required["nodeSelectorTerms"].append(term)
        return self

    def preferred(self, weight: int, *expressions: Doc, fields: Sequence[Doc] = ()) -> MakePod:
        preference: Doc = {}
        if expressions:
            preference["matchExpressions"] = list(expressions)
        if fields:
            preference["matchFields"] = list(fields)
        self._node_affinity().setdefault("preferredDuringSchedulingIgnoredDuringExecution", []).append(
            {"weight": weight, "preference": preference})
        return self

    def spread(self, max_skew: int, topology_key: str, when: str = "DoNotSchedule",
               match: Mapping[str, str] | None = None, **fields: Any) -> MakePod:
        """Add a topologySpreadConstraint; `match` is its labelSelector.matchLabels (None: no labelSelector),
        `fields` the optional ones as the API spells them (minDomains=2, nodeTaintsPolicy="Honor", …)."""
        constraint: Doc = {"maxSkew": max_skew, "topologyKey": topology_key, "whenUnsatisfiable": when}
        if match is not None:
            constraint["labelSelector"] = {"matchLabels": dict(match)}
        constraint.update(fields)
        self.spec.setdefault("topologySpreadConstraints", []).append(constraint)
        return self

    def _pod_term(self, kind: str, topology_key: str, match: Mapping[str, str] | None, weight: int | None,
                  fields: Mapping[str, Any]) -> MakePod:
        term: Doc = {"topologyKey": topology_key}
        if match is not None:
            term["labelSelector"] = {"matchLabels": dict(match)}
        term.update(fields)
        section: Doc = self.spec.setdefault("affinity", {}).setdefault(kind, {})
        if weight is None:
            section.setdefault("requiredDuringSchedulingIgnoredDuringExecution", []).append(term)
        else:
            section.setdefault("preferredDuringSchedulingIgnoredDuringExecution", []).append(
                {"weight": weight, "podAffinityTerm": term})
        return self

    def pod_affinity(self, topology_key: str, match: Mapping[str, str] | None = None, *, weight: int | None = None,
                     **fields: Any) -> MakePod:
        """A podAffinity term (required, or preferred with `weight`); `match` is its labelSelector.matchLabels,
        `fields` the others as the API spells them (namespaces=[...], namespaceSelector={}, matchLabelKeys=[...])."""
        return self._pod_term("podAffinity", topology_key, match, weight, fields)

    def pod_anti_affinity(self, topology_key: str, match: Mapping[str, str] | None = None, *,
                          weight: int | None = None, **fields: Any) -> MakePod:
        """A podAntiAffinity term, as `pod_affinity`."""
        return self._pod_term("podAntiAffinity", topology_key, match, weight, fields)

    def group(self, pod_group: str) -> MakePod:
        """spec.schedulingGroup.podGroupName."""
        self.spec["schedulingGroup"] = {"podGroupName": pod_group}
        return self

    def node(self, node_name: str) -> MakePod:
        """spec.nodeName: the pod already runs there."""
        self.spec["nodeName"] = node_name
        return self

    def duration(self, how_long: str | int) -> MakePod:
        """`phalanx.dev/duration`: how long the pod runs once it can make progress."""
        return self.annotation("phalanx.dev/duration", str(how_long))

    def obj(self) -> Pod:
        pod = parse_pod(self.manifest(), Source("<builder>", 0))
        assert pod is not None
        return pod

    def kube(self) -> core_v1.Pod:
        return kube_object(core_v1.Pod, self.doc)


def expr(key: str, operator: str, *values: str | int) -> Doc:
    """A node selector requirement: `expr("zone", "In", "a", "b")`."""
    requirement: Doc = {"key": key, "operator": operator}
    if values:
        requirement["values"] = [str(v) for v in values]
    return requirement


# --- scheduling.k8s.io ----------------------------------------------------------------------------------

class MakePriorityClass(_Builder):
    def __init__(self, name: str = "pc", value: int = 0) -> None:
        super().__init__("scheduling.k8s.io/v1", "PriorityClass", name, None)
        self.doc["value"] = value

    def value(self, value: int) -> MakePriorityClass:
        self.doc["value"] = value
        return self

    def global_default(self, value: bool = True) -> MakePriorityClass:
        self.doc["globalDefault"] = value
        return self

    def preemption_policy(self, policy: str) -> MakePriorityClass:
        self.doc["preemptionPolicy"] = policy
        return self

    def obj(self) -> PriorityClass:
        parsed = KINDS["PriorityClass"].parse(self.manifest(), Source("<builder>", 0))
        assert isinstance(parsed, PriorityClass)
        return parsed

    def kube(self) -> scheduling_v1.PriorityClass:
        return kube_object(scheduling_v1.PriorityClass, self.doc)


class MakePodGroup(_Builder):
    def __init__(self, name: str = "pg", namespace: str = "default") -> None:
        super().__init__("scheduling.k8s.io/v1beta1", "PodGroup", name, namespace)
        self.doc["spec"] = {}

    def gang(self, min_count: int) -> MakePodGroup:
        self.doc["spec"]["schedulingPolicy"] = {"gang": {"minCount": min_count}}
        return self

    def basic(self) -> MakePodGroup:
        self.doc["spec"]["schedulingPolicy"] = {"basic": {}}
        return self

    def policy(self, min_count: int | None, priority: int | None = None) -> MakePodGroup:
        """A gang of `min_count`, or basic without one; with `priority`, spec.priority."""
        builder = self.basic() if min_count is None else self.gang(min_count)
        return builder if priority is None else builder.priority(priority)

    def workload(self, workload_name: str, template_name: str) -> MakePodGroup:
        self.doc["spec"]["workloadRef"] = {"workloadName": workload_name, "templateName": template_name}
        return self

    def priority_class(self, name: str) -> MakePodGroup:
        self.doc["spec"]["priorityClassName"] = name
        return self

    def priority(self, value: int) -> MakePodGroup:
        self.doc["spec"]["priority"] = value
        return self

    def parent(self, name: str, workload: str = "wl", template: str = "workers") -> MakePodGroup:
        """Under CompositePodGroup `name` (the API server wants a workloadRef then)."""
        self.doc["spec"]["parentCompositePodGroupName"] = name
        self.doc["spec"].setdefault("workloadRef", {"workloadName": workload, "templateName": template})
        return self

    def claim(self, name: str, *, claim: str | None = None, template: str | None = None) -> MakePodGroup:
        """A spec.resourceClaims entry (DRAWorkloadResourceClaims): one claim for the whole group."""
        self.doc["spec"].setdefault("resourceClaims", []).append(_claim_ref(name, claim, template))
        return self

    def topology(self, key: str) -> MakePodGroup:
        self.doc["spec"]["schedulingConstraints"] = {"topology": [{"key": key}]}
        return self

    def obj(self) -> PodGroup:
        return parse_pod_group(self.manifest(), Source("<builder>", 0))

    def kube(self) -> scheduling_v1beta1.PodGroup:
        return kube_object(scheduling_v1beta1.PodGroup, self.doc)


class MakeCompositePodGroup(_Builder):
    """A scheduling.k8s.io/v1alpha3 CompositePodGroup; basic unless `gang` is called."""

    def __init__(self, name: str = "cpg", namespace: str = "default") -> None:
        super().__init__("scheduling.k8s.io/v1alpha3", "CompositePodGroup", name, namespace)
        self.doc["spec"] = {"workloadRef": {"workloadName": "wl", "templateName": name},
                            "schedulingPolicy": {"basic": {}}}

    def gang(self, min_group_count: int) -> MakeCompositePodGroup:
        self.doc["spec"]["schedulingPolicy"] = {"gang": {"minGroupCount": min_group_count}}
        return self

    def workload(self, workload_name: str, template_name: str) -> MakeCompositePodGroup:
        self.doc["spec"]["workloadRef"] = {"workloadName": workload_name, "templateName": template_name}
        return self

    def priority_class(self, name: str) -> MakeCompositePodGroup:
        self.doc["spec"]["priorityClassName"] = name
        return self

    def parent(self, name: str) -> MakeCompositePodGroup:
        self.doc["spec"]["parentCompositePodGroupName"] = name
        return self

    def topology(self, key: str) -> MakeCompositePodGroup:
        self.doc["spec"]["schedulingConstraints"] = {"topology": [{"key": key}]}
        return self

    def priority(self, value: int) -> MakeCompositePodGroup:
        self.doc["spec"]["priority"] = value
        return self

    def obj(self) -> CompositePodGroup:
        return parse_composite_pod_group(self.manifest(), Source("<builder>", 0))

    def kube(self) -> scheduling_v1alpha3.CompositePodGroup:
        return kube_object(scheduling_v1alpha3.CompositePodGroup, self.doc)


class MakeWorkload(_Builder):
    def __init__(self, name: str = "wl", namespace: str = "default") -> None:
        super().__init__("scheduling.k8s.io/v1beta1", "Workload", name, namespace)
        self.doc["spec"] = {"podGroupTemplates": []}

    def template(self, name: str, *, gang: int | None = None, basic: bool = False,
                 priority_class: str | None = None, disruption: str | None = None) -> MakeWorkload:
        template: Doc = {"name": name}
        if disruption is not None:
            template["disruptionMode"] = {disruption: {}}
        if gang is not None:
            template["schedulingPolicy"] = {"gang": {"minCount": gang}}
        elif basic:
            template["schedulingPolicy"] = {"basic": {}}
        if priority_class is not None:
            template["priorityClassName"] = priority_class
        self.doc["spec"]["podGroupTemplates"].append(template)
        return self

    def obj(self) -> Workload:
        return parse_workload(self.manifest(), Source("<builder>", 0))


# --- batch/v1 -------------------------------------------------------------------------------------------

class MakeJob(_Builder):
    def __init__(self, name: str = "job", namespace: str = "default") -> None:
        super().__init__("batch/v1", "Job", name, namespace)
        self.doc["spec"] = {"template": {"spec": {"restartPolicy": "Never", "containers": []}}}

    def parallelism(self, n: int) -> MakeJob:
        self.doc["spec"]["parallelism"] = n
        return self

    def completions(self, n: int) -> MakeJob:
        self.doc["spec"]["completions"] = n
        return self

    def gang(self, min_count: int | None = None) -> MakeJob:
        """spec.scheduling.gang (minCount defaults to parallelism)."""
        gang: Doc = {} if min_count is None else {"minCount": min_count}
        self.doc["spec"]["scheduling"] = {"schedulingPolicy": {"gang": gang}}
        return self

    def req(self, resources: Mapping[str, Any] | None = None, **kwargs: Any) -> MakeJob:
        self.doc["spec"]["template"]["spec"]["containers"].append(
            _container("worker", _resources(resources, kwargs), None))
        return self

    def duration(self, how_long: str | int) -> MakeJob:
        return self.annotation("phalanx.dev/duration", str(how_long))

    def scheduler(self, name: str) -> MakeJob:
        """The pod template's spec.schedulerName."""
        self.doc["spec"]["template"]["spec"]["schedulerName"] = name
        return self

    def obj(self) -> Job:
        return parse_job(self.manifest(), Source("<builder>", 0))

    def kube(self) -> batch_v1.Job:
        return kube_object(batch_v1.Job, self.doc)


# --- assembling inputs ----------------------------------------------------------------------------------

Buildable = _Builder | Doc


def _doc(item: Buildable) -> Doc:
    return item.manifest() if isinstance(item, _Builder) else copy.deepcopy(item)


def inputs_of(*items: Buildable) -> Inputs:
    """Parse and resolve objects in document order, as `load_paths` does for one file (no disk)."""
    inputs = Inputs()
    buckets: dict[type, list[Any]] = {Node: inputs.nodes, Pod: inputs.pods, PriorityClass: inputs.priority_classes,
                                      Workload: inputs.workloads, PodGroup: inputs.pod_groups, Job: inputs.jobs,
                                      CompositePodGroup: inputs.composite_pod_groups,
                                      PodDisruptionBudget: inputs.pdbs}
    for index, item in enumerate(items, start=1):
        doc = _doc(item)
        parser = KINDS[doc["kind"]].parse
        obj = parser(doc, Source("<test>", index))
        buckets[type(obj)].append(obj)
    resolve(inputs)
    return inputs


def write_manifests(path: Path, *items: Buildable) -> Path:
    """Write the objects as one multi-document YAML file; returns the path."""
    path.write_text(yaml.safe_dump_all([_doc(i) for i in items], sort_keys=False), encoding="utf-8")
    return path


def make_cluster(nodes: Iterable[Node | MakeNode], running: Iterable[tuple[Pod | MakePod, str]] = ()) -> ClusterState:
    """A ClusterState with these nodes and these pods already bound (`(pod, node name)` pairs)."""
    cluster = ClusterState([n.obj() if isinstance(n, MakeNode) else n for n in nodes])
    for i, (pod, node) in enumerate(running):
        obj = pod.obj() if isinstance(pod, MakePod) else pod
        if obj.key in cluster.bound:  # unnamed filler pods: give each its own name
            obj.name = f"{obj.name}-{i}"
        cluster.assume(obj, cluster.index[node])
    return cluster


def cycle_state(pod: Pod | MakePod, cluster: ClusterState) -> CycleState:
    obj = pod.obj() if isinstance(pod, MakePod) else pod
    return CycleState(pod=obj, demand=cluster.demand(obj))
