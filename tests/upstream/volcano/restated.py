"""Volcano's own scheduler unit tests, restated as Phalanx inputs run under the `volcano` profile.

Upstream is volcano-sh/volcano at commit COMMIT (read with `git show`, never copied). Each restated case names its
upstream file, its Go test function and the case's name exactly as upstream writes it; its objects are the manifests
a cluster would hold for upstream's objects, and its check asserts what upstream asserts (binds, evictions,
PodGroup phases), as far as Phalanx's report can show it. A case Phalanx's inputs cannot say goes to its module's
`UNEXPRESSED`; a case restated whose outcome differs carries `differs` (a strict xfail naming the Volcano function
that decides it and what Phalanx does instead).

How upstream's objects become manifests:
- `util.BuildNode`: a Node whose capacity and allocatable are the given list; every node also carries the
  `kubernetes.io/hostname` label that kubelet sets.
- `util.BuildQueue` and friends: a `scheduling.volcano.sh/v1beta1` Queue with weight, capability, deserved,
  priority and `status.state`.
- `util.BuildPodGroup` and friends: a `scheduling.volcano.sh/v1beta1` PodGroup with queue, minMember,
  minTaskMember, minResources, priorityClassName and `status.phase` as upstream sets them (Phalanx reads the
  spec; it has no reader for a PodGroup's status, so a phase upstream presets is written but not seen).
- `util.BuildPod`: a pod in the group by the annotation `scheduling.k8s.io/group-name` (as Volcano's cache reads
  it), with `schedulerName: volcano`, one container holding the requests, the labels and nodeSelector given.
- PriorityClasses as given; a pod's own `spec.priority` and `spec.preemptionPolicy` where upstream sets them.
- Where a case's PodGroup and pods are what a Volcano Job's controller would make, the same case is also written
  as `batch.volcano.sh/v1alpha1` Jobs (`vcjob`, `task`), to check that simulating them directly and simulating
  `phalanx migrate`'s rewrite of them bind the same (test_allocate.py).
- The session's tiers: a `volcano-scheduler.conf` with upstream's actions and, in upstream's order, the plugins
  the case registers (a plugin named in the tiers but not registered is skipped by Volcano's OpenSession, so it is
  left out). Upstream builds its tiers in Go, where an extension point it does not enable is off
  (`framework.isEnabled` of a nil flag); written as YAML, Volcano would turn every unset flag on
  (`plugins.ApplyPluginConfDefaults`), so the conf writes every flag: true where upstream enables it, false
  elsewhere.

Upstream's state and its one session, on Phalanx's clock:
- A pod upstream builds Running on a node (`spec.nodeName`) is part of the state the session starts from. A pod
  already bound in Phalanx's input is the cluster's running load, which Phalanx never queues nor evicts
  (phalanx/sim/admission_gate.py); so such a pod is created at 0 s, pinned to its node by the nodeSelector
  `kubernetes.io/hostname`, and Phalanx's volcano profile admits and places it itself. Every check first asserts
  that this staging held (each such pod runs on its node by 1 s): if Phalanx cannot reach upstream's state, the
  case does not hold.
- A pending pod (upstream: phase Pending, no node) is created at 1 s: Phalanx's session at 1 s is upstream's
  session, and the run is cut at UNTIL, before the 30 s grace period of any pod evicted then has passed, so no
  later session changes what is read. Upstream's binds are the pods bound from 1 s on; its evictions, the pods
  evicted.
- When upstream runs `preempt` or `reclaim` alone, the pods of 0 s need `allocate` to run at all: the conf puts
  `allocate` first (it admits the pods of 0 s, and at 1 s only what also fits without evicting, where upstream's
  action would evict nothing either).
"""

from __future__ import annotations

import tempfile
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from phalanx.inputs.load import load_paths
from phalanx.scheduler.profiles import builtin
from phalanx.sim.records import PodRecord
from phalanx.sim.scenario import scenario_for
from phalanx.sim.simulation import Simulation

UPSTREAM = "volcano-sh/volcano"
COMMIT = "ed72c7c815a9fd547a787134676f73d42e9d049c"
HOSTNAME = "kubernetes.io/hostname"
GROUP_ANNOTATION = "scheduling.k8s.io/group-name"  # schedulingv1beta1.KubeGroupNameAnnotationKey
PREEMPTABLE = "volcano.sh/preemptable"  # schedulingv1beta1.PodPreemptable
RUNNING_AT = 0  # the state upstream's session starts from
PENDING_AT = 1  # upstream's session
UNTIL = 5.0  # before any pod evicted at PENDING_AT is gone (its grace period is 30 s)
VOLCANO_GROUP = "scheduling.volcano.sh/v1beta1"

# Every extension-point flag that Volcano defaults to true when a conf file leaves it unset
# (pkg/scheduler/plugins/defaults.go ApplyPluginConfDefaults), as its YAML key (pkg/scheduler/conf/scheduler_conf.go).
FLAGS = ("enableJobOrder", "enableJobReady", "enableJobPipelined", "enableJobEnqueued", "enableTaskOrder",
         "enablePreemptable", "enableReclaimable", "enablePreemptive", "enableQueueOrder", "enablePredicate",
         "enableBestNode", "enableNodeOrder", "enableTargetJob", "enableReservedNodes", "enabledVictim",
         "enableJobStarving", "enabledOverused", "enabledAllocatable", "enabledHyperNodeOrder",
         "enabledSubJobReady", "enabledSubJobPipelined", "enabledSubJobOrder", "enabledHyperNodeGradient")

Doc = dict[str, Any]


# --- objects --------------------------------------------------------------------------------------------------

def resources(cpu: str | None = None, memory: str | None = None, **scalars: str) -> dict[str, str]:
    """As api.BuildResourceList: cpu and memory (an empty string leaves one out), then named scalars; a scalar
    whose name is not a Python identifier goes through `scalars` via `**{"nvidia.com/gpu": "1"}`."""
    out: dict[str, str] = {}
    if cpu:
        out["cpu"] = cpu
    if memory:
        out["memory"] = memory
    out.update(scalars)
    return out


def node(name: str, alloc: Mapping[str, str], labels: Mapping[str, str] | None = None) -> Doc:
    """util.BuildNode: capacity and allocatable both `alloc`; plus the hostname label."""
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {HOSTNAME: name, **(labels or {})}},
            "status": {"capacity": dict(alloc), "allocatable": dict(alloc)}}


def queue(name: str, weight: int = 1, capability: Mapping[str, str] | None = None, *, state: str = "Open",
          priority: int | None = None, deserved: Mapping[str, str] | None = None) -> Doc:
    """util.BuildQueue (weight, capability, Open), BuildQueueWithState, BuildQueueWithPriorityAndResourcesQuantity
    (weight 1, priority, deserved, capability)."""
    spec: Doc = {"weight": weight}
    if capability:
        spec["capability"] = dict(capability)
    if deserved:
        spec["deserved"] = dict(deserved)
    if priority is not None:
        spec["priority"] = priority
    return {"apiVersion": VOLCANO_GROUP, "kind": "Queue", "metadata": {"name": name}, "spec": spec,
            "status": {"state": state}}


def pod_group(name: str, namespace: str, queue_name: str, min_member: int, phase: str, *,
              priority_class: str | None = None, min_resources: Mapping[str, str] | None = None,
              min_task_member: Mapping[str, int] | None = None) -> Doc:
    """util.BuildPodGroup, BuildPodGroupWithPrio, BuildPodGroupWithMinResources."""
    spec: Doc = {"queue": queue_name, "minMember": min_member}
    if min_task_member:
        spec["minTaskMember"] = dict(min_task_member)
    if min_resources is not None:
        spec["minResources"] = dict(min_resources)
    if priority_class:
        spec["priorityClassName"] = priority_class
    doc: Doc = {"apiVersion": VOLCANO_GROUP, "kind": "PodGroup", "metadata": {"name": name, "namespace": namespace},
                "spec": spec}
    if phase:
        doc["status"] = {"phase": phase}
    return doc


def pod(namespace: str, name: str, requests: Mapping[str, str], group: str, *, on: str | None = None,
        labels: Mapping[str, str] | None = None, selector: Mapping[str, str] | None = None,
        priority: int | None = None, preemption_policy: str | None = None, affinity: Doc | None = None,
        claims: Sequence[tuple[str, str, str]] = (), phase: str | None = None, arrival: int | None = None) -> Doc:
    """util.BuildPod and its variants. `on`: the node upstream's pod runs on (staged: created at RUNNING_AT and
    pinned there); otherwise the pod is pending and created at PENDING_AT. `claims`: (pod claim name, container
    request, ResourceClaim name). `phase` writes a status phase upstream sets on a pod with no node; `arrival`
    replaces the pending pod's time, for a test that opens several sessions."""
    node_selector = dict(selector or {})
    if on is not None:
        node_selector[HOSTNAME] = on
    container: Doc = {"name": "c", "image": "registry.k8s.io/pause:3.10",
                      "resources": {"requests": dict(requests)}}
    spec: Doc = {"schedulerName": "volcano", "containers": [container]}
    if node_selector:
        spec["nodeSelector"] = node_selector
    if priority is not None:
        spec["priority"] = priority
    if preemption_policy is not None:
        spec["preemptionPolicy"] = preemption_policy
    if affinity is not None:
        spec["affinity"] = affinity
    if claims:
        container["resources"]["claims"] = [{"name": c, "request": r} for c, r, _ in claims]
        spec["resourceClaims"] = [{"name": c, "resourceClaimName": rc} for c, _, rc in claims]
    meta: Doc = {"name": name, "namespace": namespace, "labels": dict(labels or {}),
                 "annotations": {GROUP_ANNOTATION: group,
                                 "phalanx.dev/arrival": str(RUNNING_AT if on is not None else
                                                            PENDING_AT if arrival is None else arrival)}}
    doc: Doc = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
    if phase is not None:
        doc["status"] = {"phase": phase}
    return doc


def task(name: str, replicas: int, requests: Mapping[str, str], *, min_available: int | None = None,
         selector: Mapping[str, str] | None = None, labels: Mapping[str, str] | None = None) -> Doc:
    """One task of a Volcano Job (`batch.volcano.sh/v1alpha1`), its pods as util.BuildPod makes them."""
    spec: Doc = {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                                 "resources": {"requests": dict(requests)}}]}
    if selector:
        spec["nodeSelector"] = dict(selector)
    doc: Doc = {"name": name, "replicas": replicas, "template": {"metadata": {"labels": dict(labels or {})},
                                                                 "spec": spec}}
    if min_available is not None:
        doc["minAvailable"] = min_available
    return doc


def vcjob(name: str, namespace: str, queue_name: str, *tasks: Doc, min_available: int | None = None,
          arrival: int = PENDING_AT) -> Doc:
    """A Volcano Job: its job controller makes the PodGroup (minMember minAvailable, the queue) and the pods."""
    spec: Doc = {"schedulerName": "volcano", "queue": queue_name, "tasks": list(tasks)}
    if min_available is not None:
        spec["minAvailable"] = min_available
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
            "metadata": {"name": name, "namespace": namespace, "annotations": {"phalanx.dev/arrival": str(arrival)}},
            "spec": spec}


def priority_class(name: str, value: int, preemption_policy: str | None = None) -> Doc:
    """util.BuildPriorityClass, BuildPriorityClassWithPreemptionPolicy."""
    doc: Doc = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
                "value": value}
    if preemption_policy is not None:
        doc["preemptionPolicy"] = preemption_policy
    return doc


def plugin(name: str, *enabled: str, arguments: Mapping[str, Any] | None = None) -> Doc:
    """A tier's plugin option: the flags upstream enables true, every other defaulted flag false."""
    unknown = set(enabled) - set(FLAGS)
    assert not unknown, f"not a Volcano flag: {sorted(unknown)}"
    doc: Doc = {"name": name, **{flag: flag in enabled for flag in FLAGS}}
    if arguments:
        doc["arguments"] = dict(arguments)
    return doc


def conf(actions: str, *plugins: Doc, configurations: Sequence[Doc] = ()) -> Doc:
    """A volcano-scheduler.conf of one tier (upstream's unit tests build one)."""
    doc: Doc = {"actions": actions, "tiers": [{"plugins": list(plugins)}]}
    if configurations:
        doc["configurations"] = list(configurations)
    return doc


# --- cases ----------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Outcome:
    """The end of a restated case's run, read as upstream's checks read the session."""

    sim: Simulation

    def record(self, key: str) -> PodRecord:
        assert key in self.sim.pods, f"no pod {key} in the run (pods: {sorted(self.sim.pods)})"
        return self.sim.pods[key]

    def binds(self) -> dict[str, str]:
        """Upstream's FakeBinder: pods bound in the session (from PENDING_AT on), to their node."""
        return {key: r.node for key, r in sorted(self.sim.pods.items())
                if r.node is not None and r.bound_at is not None and r.bound_at >= PENDING_AT}

    def evicted(self) -> list[str]:
        """Upstream's FakeEvictor: every pod evicted (by Phalanx's admission policy or by preemption)."""
        return sorted(key for key, r in self.sim.pods.items() if r.preempted_count > 0)

    def workload(self, group: str) -> dict[str, Any] | None:
        gate = self.sim.gate
        assert gate is not None
        return next((dict(w) for w in gate.workload_rows() if w["name"] == f"PodGroup {group}"), None)

    def phase(self, group: str) -> str:
        """The PodGroup's phase as Volcano's job updater names it, from what Phalanx shows: Running once minMember
        of its pods are bound (Volcano counts allocated tasks); Inqueue when the policy enqueued or admitted it;
        Pending otherwise (never offered: its pod group waits for members; or held before enqueue)."""
        members = [r for r in self.sim.pods.values() if r.pod.group_key == group]
        record = self.sim.groups.get(group)
        min_count = record.group.min_count if record is not None and record.group.is_gang else 1
        if members and sum(1 for r in members if r.node is not None) >= max(1, min_count):
            return "Running"
        row = self.workload(group)
        if row is None:
            return "Pending"
        if row["admitted"]:
            return "Inqueue"
        reason = str(row["reason"] or "")
        return "Inqueue" if reason.startswith("Inqueue") else "Pending"

    def queue_row(self, name: str) -> dict[str, Any]:
        gate = self.sim.gate
        assert gate is not None
        return next(dict(r) for r in gate.policy.queue_rows() if r.get("queue") == name)


Check = Callable[[Outcome], None]


@dataclass(frozen=True)
class Case:
    test: str  # the Go test function
    name: str  # the case's name, verbatim
    objects: tuple[Doc, ...]
    conf: Doc
    check: Check
    differs: str = ""  # why Phalanx's outcome is not upstream's: the case is a strict xfail
    until: float = UNTIL

    @property
    def id(self) -> str:
        return f"{self.test}/{self.name}"


Unexpressed = tuple[str, str, str]  # (Go test function, case name, why Phalanx's inputs cannot say it)


def write(directory: Path, objects: Iterable[Doc], conf_doc: Doc) -> Path:
    """The case as a user's folder: the manifests in one file, the scheduler conf as Volcano ships it."""
    (directory / "cluster.yaml").write_text(yaml.safe_dump_all(list(objects), sort_keys=False), encoding="utf-8")
    (directory / "volcano-scheduler.conf").write_text(yaml.safe_dump(conf_doc, sort_keys=False), encoding="utf-8")
    return directory


def simulate(directory: Path, until: float = UNTIL) -> Simulation:
    """`phalanx simulate DIR --profile volcano`, cut at `until`."""
    return Simulation(load_paths([str(directory)]), builtin("volcano"), scenario=scenario_for("volcano"),
                      until=until).run()


def staged(sim: Simulation, objects: Iterable[Doc]) -> None:
    """Upstream's state held: each pod it builds Running on a node runs there by PENDING_AT."""
    for doc in objects:
        if doc.get("kind") != "Pod":
            continue
        on = doc["spec"].get("nodeSelector", {}).get(HOSTNAME)
        arrival = doc["metadata"]["annotations"]["phalanx.dev/arrival"]
        if on is None or arrival != str(RUNNING_AT):
            continue
        key = f"{doc['metadata']['namespace']}/{doc['metadata']['name']}"
        record = sim.pods.get(key)
        assert record is not None and record.node == on and record.bound_at is not None \
            and record.bound_at < PENDING_AT, (
                f"staging: {key} should run on {on} before the session, got "
                f"{(record.node, record.bound_at, record.phase) if record else None}")


def run(case: Case) -> Outcome:
    with tempfile.TemporaryDirectory(prefix="volcano-restated-") as tmp:
        sim = simulate(write(Path(tmp), case.objects, case.conf), case.until)
    staged(sim, case.objects)
    return Outcome(sim)


def params(cases: Iterable[Case]) -> list[Any]:
    """pytest params, ids `Test/case name`, a strict xfail where the case differs."""
    return [pytest.param(c, id=c.id, marks=[pytest.mark.xfail(strict=True, reason=c.differs)] if c.differs else [])
            for c in cases]


def check_names(cases: Sequence[Case], unexpressed: Sequence[Unexpressed],
                upstream: Mapping[str, Sequence[str]]) -> None:
    """The module's cases and UNEXPRESSED name every case of the upstream functions exactly once (a name upstream
    gives twice, twice)."""
    ours = Counter([(c.test, c.name) for c in cases] + [(test, name) for test, name, _ in unexpressed])
    theirs = Counter((test, name) for test, names in upstream.items() for name in names)
    assert ours == theirs, {"missing": sorted((theirs - ours).elements()), "extra": sorted((ours - theirs).elements())}
    assert all(why for _, _, why in unexpressed)


# --- why a case differs, where many share the cause --------------------------------------------------------------

GROUP_PRIORITY = ("Volcano takes a job's priority from its PodGroup's priorityClassName and a task's from its own pod "
                  "(cache/cache.go Snapshot, api/job_info.go NewTaskInfo), so upstream's pods, which carry no "
                  "priority, run in PodGroups of class {classes}; Phalanx's translation (phalanx/migrate/foreign.py "
                  "volcano_group) gives the v1.37 PodGroup that class, and the v1.37 group cycle "
                  "(phalanx/scheduler/group_cycle.py GroupCycle._validate, kube-scheduler's validatePodGroup) "
                  "refuses a group whose pods lack its priority: the pods of 0 s never run, so upstream's state "
                  "(victims running) is never reached and nothing is evicted")
MISSING_CLASS = ("upstream's PodGroups name PriorityClasses ({classes}) the case does not create, which Volcano "
                 "reads as the default priority (cache/cache.go Snapshot keeps defaultPriority when the class is not "
                 "found); Phalanx refuses the input: the translated v1.37 PodGroup keeps the name "
                 "(phalanx/migrate/foreign.py volcano_group) and phalanx/api/resolve.py admit_priority raises "
                 "\"no PriorityClass named ...\"")
NEVER_CLASS = ("a PodGroup names the PriorityClass {cls}, whose preemptionPolicy is Never; Volcano reads only the "
               "class's value for the job (and each pod's own preemptionPolicy); Phalanx refuses the input: the "
               "translated v1.37 PodGroup (phalanx/migrate/foreign.py volcano_group) states no preemptionPolicy, "
               "which phalanx/api/resolve.py _admitted takes as PreemptLowerPriority and rejects against the "
               "class's Never")
PARTIAL_GANG = ("upstream's state is a gang of minMember {min} with only {running} members running and the rest "
                "pending; Phalanx's admission gate offers a PodGroup only once minMember members exist "
                "(phalanx/sim/admission_gate.py AdmissionGate._through), so the pods of 0 s wait and the whole gang "
                "binds together at 1 s: upstream's state is never reached")


# --- common checks ------------------------------------------------------------------------------------------

def expect(binds: Mapping[str, str] | None = None, evicted: Sequence[str] = (), *,
           phases: Mapping[str, str] | None = None, bind_count: int | None = None) -> Check:
    """Upstream's CheckAll: exactly these binds (ExpectBindMap, or only their number with `bind_count`), exactly
    these evictions (ExpectEvicted: none when empty), and these PodGroup phases (ExpectStatus). `binds=None`
    skips the binds (a case whose actions never bind)."""
    def check(o: Outcome) -> None:
        if binds is not None:
            assert o.binds() == dict(binds), o.binds()
        if bind_count is not None:
            assert len(o.binds()) == bind_count, o.binds()
        assert o.evicted() == sorted(evicted), o.evicted()
        for group, phase in (phases or {}).items():
            assert o.phase(group) == phase, (group, o.phase(group), o.workload(group))
    return check
