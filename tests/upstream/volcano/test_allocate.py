"""volcano-sh/volcano `pkg/scheduler/actions/allocate/allocate_test.go`, restated (see restated.py).

Restated: TestAllocate, TestFareShareAllocate and TestAllocateWithDRA, each running the allocate action alone on
PodGroups upstream builds Inqueue or Running (Phalanx's allocate without enqueue takes every Pending job as
Inqueue, as allocate.go does when no enqueue action is configured). The other functions build HyperNodes, sub-job
worksheets, nominations, PersistentVolumes or parse the action's arguments: their cases are in UNEXPRESSED.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from phalanx.cli import main
from tests.upstream.volcano.restated import (
    Case,
    Doc,
    Outcome,
    Unexpressed,
    check_names,
    conf,
    expect,
    node,
    params,
    plugin,
    pod,
    pod_group,
    queue,
    resources,
    run,
    simulate,
    task,
    vcjob,
    write,
)

FILE = "pkg/scheduler/actions/allocate/allocate_test.go"
ALLOCATE = "TestAllocate"
FAIR_SHARE = "TestFareShareAllocate"
DRA = "TestAllocateWithDRA"
TASK_SPEC = "volcano.sh/task-spec"
DRIVER = "gpu.example.com"

ALLOCATE_CONF = conf("allocate",
                     plugin("gang", "enableJobOrder", "enableJobReady", "enableJobPipelined", "enableJobStarving"),
                     plugin("drf", "enablePreemptable", "enableJobOrder"),
                     plugin("proportion", "enableQueueOrder", "enableReclaimable", "enabledAllocatable"),
                     plugin("predicates", "enablePredicate"),
                     plugin("nodeorder", "enableNodeOrder"))
# TestFareShareAllocate registers no gang plugin and turns proportion's Allocatable off.
FAIR_SHARE_CONF = conf("allocate",
                       plugin("drf", "enablePreemptable", "enableJobOrder"),
                       plugin("proportion", "enableQueueOrder", "enableReclaimable"),
                       plugin("predicates", "enablePredicate"),
                       plugin("nodeorder", "enableNodeOrder"))
DRA_CONF = conf("allocate",
                plugin("gang", "enableJobReady", "enablePredicate", "enableJobPipelined", "enableTaskOrder"),
                plugin("predicates", "enablePredicate",
                       arguments={"predicate.DynamicResourceAllocationEnable": True}))

WHOLE_WORKLOAD = ("allocate.go allocates task by task, and proportion's Allocatable admits each task while the "
                  "queue's allocated plus that task fits its deserved share (here one of each job's two pods: "
                  "deserved is 1 cpu a queue); Phalanx's VolcanoAdmission._allocate admits a workload only whole "
                  "(its request counted as one), and the admission gate (phalanx/sim/admission_gate.py "
                  "AdmissionGate._through) offers a PodGroup once minMember members exist, with only those "
                  "members' requests, then releases the later ones on admission uncounted: so pg1, counted as 1 cpu, "
                  "is admitted and both its pods bind, leaving no room for pg2")
NO_MIN_TASK_MEMBER = ("the gang plugin's JobValid/JobReady hold the job to minTaskMember per task (2 masters, and "
                      "only one master node of 1 cpu fits one): allocate.go binds nothing; Phalanx's translation "
                      "(phalanx/migrate/foreign.py _group) keeps minMember only, drops minTaskMember without a "
                      "warning, and the v1.37 gang of 2 binds a master and both workers")
ALLOCATABLE_FLAG = ("upstream turns proportion's Allocatable off (EnabledAllocatable false in its tiers), so "
                    "allocate.go orders queues by share and admits whatever fits the node; Phalanx's "
                    "VolcanoAdmission._fits_queue applies proportion's deserved share whatever the flag: ")


def role_pod(name: str, role: str) -> Doc:
    return pod("c1", name, resources("1", "1G"), "pg1", labels={TASK_SPEC: role}, selector={"nodeRole": role})


def small(namespace: str, name: str, group: str, cpu: str = "1", memory: str = "1G", on: str | None = None) -> Doc:
    return pod(namespace, name, resources(cpu, memory), group, on=on)


def node_of(name: str, cpu: str, memory: str, **labels: str) -> Doc:
    return node(name, resources(cpu, memory, pods="10"), labels)


def dra_objects(expression: str) -> tuple[Doc, ...]:
    """A claim for one device of class gpu.example.com, one such device on n1, and the class's CEL selector."""
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
             "metadata": {"name": "claim1", "namespace": "c1"},
             "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                 "deviceClassName": DRIVER, "allocationMode": "ExactCount", "count": 1}}]}}}
    device_slice = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "n1-slice1"},
                    "spec": {"nodeName": "n1", "driver": DRIVER,
                             "pool": {"name": "gpu-worker", "generation": 1, "resourceSliceCount": 1},
                             "devices": [{"name": "gpu-1"}]}}
    device_class = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": DRIVER},
                    "spec": {"selectors": [{"cel": {"expression": expression}}]}}
    return (claim, device_slice, device_class, pod_group("pg1", "c1", "c1", 1, "Inqueue"),
            pod("c1", "p1", resources("1", "1G"), "pg1", claims=[("gpu", "gpu", "claim1")]),
            queue("c1"), node_of("n1", "2", "4Gi"))


CASES = [
    Case(ALLOCATE, "prepredicate failed: node selector does not match",
         (pod_group("pg1", "c1", "c1", 1, "Inqueue"), role_pod("p1", "master"), role_pod("p2", "worker"),
          node_of("n1", "2", "4Gi", nodeRole="worker"), queue("c1")),
         ALLOCATE_CONF, expect({"c1/p2": "n1"})),
    Case(ALLOCATE, "prepredicate failed and tasks are not used up, continue on until min member meet",
         (pod_group("pg1", "c1", "c1", 2, "Inqueue", min_task_member={"master": 1, "worker": 1}),
          role_pod("p0", "master"), role_pod("p1", "master"), role_pod("p2", "worker"), role_pod("p3", "worker"),
          node_of("n1", "1", "2Gi", nodeRole="master"), node_of("n2", "1", "2Gi", nodeRole="worker"), queue("c1")),
         ALLOCATE_CONF, expect({"c1/p0": "n1", "c1/p2": "n2"})),
    Case(ALLOCATE, "master's min member can not be allocated, break from allocating",
         (pod_group("pg1", "c1", "c1", 2, "Inqueue", min_task_member={"master": 2, "worker": 0}),
          role_pod("p0", "master"), role_pod("p1", "master"), role_pod("p2", "worker"), role_pod("p3", "worker"),
          node_of("n1", "1", "2Gi", nodeRole="master"), node_of("n2", "2", "2Gi", nodeRole="worker"), queue("c1")),
         ALLOCATE_CONF, expect({}), differs=NO_MIN_TASK_MEMBER),
    Case(ALLOCATE, "one Job with two Pods on one node",
         (pod_group("pg1", "c1", "c1", 0, "Inqueue"), small("c1", "p1", "pg1"), small("c1", "p2", "pg1"),
          node_of("n1", "2", "4Gi"), queue("c1")),
         ALLOCATE_CONF, expect({"c1/p1": "n1", "c1/p2": "n1"})),
    Case(ALLOCATE, "two Jobs on one node",
         (pod_group("pg1", "c1", "c1", 0, "Inqueue"), pod_group("pg2", "c2", "c2", 0, "Inqueue"),
          small("c1", "pg1-p-1", "pg1"), small("c1", "pg1-p-2", "pg1"),
          small("c2", "pg2-p-1", "pg2"), small("c2", "pg2-p-2", "pg2"),
          node_of("n1", "2", "4G"), queue("c1"), queue("c2")),
         ALLOCATE_CONF, expect({"c2/pg2-p-1": "n1", "c1/pg1-p-1": "n1"}), differs=WHOLE_WORKLOAD),
    Case(ALLOCATE, "high priority queue should not block others",
         (pod_group("pg1", "c1", "c1", 0, "Inqueue"), pod_group("pg2", "c1", "c2", 0, "Inqueue"),
          small("c1", "p1", "pg1", cpu="3"), small("c1", "p2", "pg2"), node_of("n1", "2", "4G"),
          queue("c1"), queue("c2")),
         ALLOCATE_CONF, expect({"c1/p2": "n1"})),
    Case(FAIR_SHARE, "queue with low DRF share value has high priority, should allocate first",
         (pod_group("pg-small-1", "ns-1", "q-1", 0, "Running"), pod_group("pg-large-1", "ns-1", "q-1", 0, "Inqueue"),
          pod_group("pg-large-2", "ns-1", "q-2", 0, "Inqueue"),
          small("ns-1", "pod-small-1", "pg-small-1", on="node-1"),
          small("ns-1", "pod-large-1", "pg-large-1", cpu="2", memory="2G"),
          small("ns-1", "pod-large-2", "pg-large-2", cpu="3", memory="2G"),
          node_of("node-1", "5", "5G"), queue("q-1"), queue("q-2")),
         FAIR_SHARE_CONF, expect({"ns-1/pod-large-2": "node-1"}),
         differs=ALLOCATABLE_FLAG + "each queue deserves 2.5 of the 5 cpus, q-2's 3-cpu pod exceeds it and q-1 "
         "(holding 1 cpu) cannot take its 2-cpu pod either, so nothing binds"),
    Case(FAIR_SHARE,
         "queue's DRF share value will be updated and its priority will change before it is put back into the "
         "priority queue",
         (pod_group("pg-small-1", "ns-1", "q-1", 0, "Running"), pod_group("pg-large-1", "ns-1", "q-1", 0, "Inqueue"),
          pod_group("pg-small-2", "ns-1", "q-2", 0, "Inqueue"), pod_group("pg-large-2", "ns-1", "q-2", 0, "Inqueue"),
          small("ns-1", "pod-small-1", "pg-small-1", on="node-1"),
          small("ns-1", "pod-large-1", "pg-large-1", cpu="2", memory="2G"),
          small("ns-1", "pod-large-2", "pg-large-2", cpu="2", memory="2G"),
          small("ns-1", "pod-small-2", "pg-small-2"),
          node_of("node-1", "5", "5G"), queue("q-1"), queue("q-2")),
         FAIR_SHARE_CONF, expect({"ns-1/pod-large-1": "node-1", "ns-1/pod-large-2": "node-1"}),
         differs=ALLOCATABLE_FLAG + "each queue deserves 2.5 of the 5 cpus, so q-2's 2-cpu pod binds but q-1, "
         "holding 1 cpu, cannot take its 2-cpu pod (3 > 2.5)"),
    Case(FAIR_SHARE, "queue's one jobs has no pending tasks, should be put back to queues for next job",
         (pod_group("pg-1", "ns-1", "q-1", 0, "Running"), pod_group("pg-2", "ns-1", "q-1", 0, "Inqueue"),
          small("ns-1", "pod-1", "pg-1", on="node-1"), small("ns-1", "pod-2", "pg-2", cpu="2", memory="2G"),
          node_of("node-1", "5", "5G"), queue("q-1")),
         FAIR_SHARE_CONF, expect({"ns-1/pod-2": "node-1"})),
    # Upstream also checks the task is Binding (ExpectTaskStatusNums): a bound pod, here.
    Case(DRA, "Allocate normal resourceClaim successfully", dra_objects(f"device.driver == '{DRIVER}'"),
         DRA_CONF, expect({"c1/p1": "n1"})),
    Case(DRA, "claim cel runtime errors", dra_objects('device.attributes["some-driver"].healthy'),
         DRA_CONF, expect({}, phases={"c1/pg1": "Inqueue"})),
]

HYPERNODES = ("it builds HyperNodes (network-topology tiers) and PodGroups with networkTopology or subGroupPolicy "
              "for the network-topology-aware plugin; Phalanx reads no HyperNode and models no network topology")
INTERNAL = "it calls the allocate action's internals ({what}) on hand-built session objects; no input says it"
NOMINATION = ("a sub-job's NominatedHyperNode and its tasks' nominated nodes, as gangpreempt/gangreclaim leave them "
              "inside a session")
PVC = ("it creates a StorageClass, PersistentVolumes and PersistentVolumeClaims for the pods to mount; Phalanx "
       "reads none of them (its volume plugins are not implemented)")

UPSTREAM_NAMES: dict[str, tuple[str, ...]] = {
    'TestParseArgs': (
        'set cache false',  # the TestCommonStruct's Name; the function runs it once, without t.Run
    ),
    'TestAllocate': (
        'prepredicate failed: node selector does not match',
        'prepredicate failed and tasks are not used up, continue on until min member meet',
        "master's min member can not be allocated, break from allocating",
        'one Job with two Pods on one node',
        'two Jobs on one node',
        'high priority queue should not block others',
    ),
    'TestAllocateWithNetWorkTopologies': (
        'soft network topology constrain, can allocate job when resources are enough',
        'soft network topology constrain, can allocate job when minavailable < replicas',
        'soft network topology constrain, two available hyperNodes, can allocate job to nodes with affinity',
        'soft network topology constrain and tasks in job rescheduled, can allocate job when resources are enough',
        ('soft network topology constrain and tasks in job rescheduled, can allocate job when resources are enough '
         'and minavailable = replicas'),
        ('soft network topology constrain and tasks in job rescheduled, can allocate job when cross '
         'highestTierAllowed tier and hyperNodesInfo has three tier'),
        'hard network topology constrain, can not allocate job when cross highestTierAllowed tier',
        'hard network topology constrain, can allocate job when highestTierAllowed not reached',
        'hard network topology constrain, can allocate job when multi hyperNodes are available',
        'hard network topology constrain, can allocate job when minavailable < replicas',
        'hard network topology constrain, two available hyperNodes, can allocate job to nodes with affinity',
        ('hard network topology constrain and tasks in job rescheduled, can allocate job when highestTierAllowed '
         'not reached'),
        ('hard network topology constrain and tasks in job rescheduled, can allocate job when highestTierAllowed '
         'not reached and minavailable = replicas'),
        ('hard network topology constrain and tasks in job rescheduled, can allocate job when highestTierAllowed '
         'not reached and hyperNodesInfo has three tier'),
        ('hard network topology constrain and tasks in job rescheduled, can not allocate job when cross '
         'highestTierAllowed tier'),
        ('hard network topology constrain and tasks in job rescheduled, can not allocate job when cross '
         'highestTierAllowed tier and hyperNodesInfo has three tier'),
        'hard network topology constrain and tasks in job rescheduled, can allocate job when LCAHyperNode is empty',
        'hard network topology constrain, can not allocate job when cross highestTierName tier',
        'hard network topology constrain, can allocate job when the tier corresponding to highestTierName not reached',
        'hard network topology constrain, can allocate job when multi hyperNodes are available',
        ('hard network topology constrain and task in job rescheduled, can allocate job when the tier corresponding '
         'to highestTierName not reached'),
        ('hard network topology constrain and task in job rescheduled, can allocate job when the tier corresponding '
         'to highestTierName not reached and minavailable = replicas'),
        ('hard network topology constrain and task in job rescheduled, can allocate job when the tier corresponding '
         'to highestTierName not reached and hyperNodesInfo has three tier'),
        ('hard network topology constrain and tasks in job rescheduled, can not allocate job when cross the tier '
         'corresponding to highestTierName'),
        ('hard network topology with highestTierName constrain and tasks in job rescheduled, can allocate job when '
         'here is no corresponding highestTierAllowed for highestTierName'),
    ),
    'TestNodeLevelScoreWithNetWorkTopologies': (
        'hard network topology constrain, allocate job to highest score hypeNode with node level binpack',
    ),
    'TestHyperNodeBinpackWithNetWorkTopologies': (
        'hard network topology constrain, allocate task to node under LCAHyperNode',
    ),
    'TestFareShareAllocate': (
        'queue with low DRF share value has high priority, should allocate first',
        ("queue's DRF share value will be updated and its priority will change before it is put back into the "
         'priority queue'),
        "queue's one jobs has no pending tasks, should be put back to queues for next job",
    ),
    'TestAllocateWithPVC': (
        'static pv matched but node without enough resource',
        'static pv matched and node with enough resources',
    ),
    'TestAllocateWithDRA': (
        'Allocate normal resourceClaim successfully',
        'claim cel runtime errors',
    ),
    'TestWorksheetShallowCopy': (
        'TestWorksheetShallowCopy',  # no named case: the function is one
    ),
    'TestWorksheetEmpty': (
        'TestWorksheetEmpty',  # no named case: the function is one
    ),
    'TestWorksheetClone': (
        'TestWorksheetClone',  # no named case: the function is one
    ),
    'TestAllocateWithPartitionPolicyNetworkTopology': (
        ('podgroup hard network topology constrain and subGroup soft network topology constrain, can allocate job '
         'when resources are enough'),
        ('podgroup hard network topology constrain and subGroup soft network topology constrain, can allocate job '
         'when minavailable < replicas'),
        ('podgroup hard network topology constrain and subGroup soft network topology constrain, two available '
         'hyperNodes, can allocate job to nodes with affinity'),
        ('podgroup hard network topology constrain and subGroup soft network topology constrain and tasks in job '
         'rescheduled, can allocate job when resources are enough'),
        ('podgroup hard network topology constrain and subGroup soft network topology constrain and tasks in job '
         'rescheduled, can allocate job when resources are enough and minavailable = replicas'),
        ('podgroup hard network topology constrain and subGroup soft network topology constrain and tasks in job '
         'rescheduled, can allocate job when cross highestTierAllowed tier and hyperNodesInfo has three tier'),
        ('podgroup soft network topology constrain and subGroup hard network topology constrain, can allocate job '
         'when resources are enough'),
        ('podgroup soft network topology constrain and subGroup hard network topology constrain, can allocate job '
         'when minavailable < replicas'),
        ('podgroup soft network topology constrain and subGroup hard network topology constrain, can not allocate '
         'job when cross highestTierAllowed tier'),
        ('podgroup soft network topology constrain and subGroup hard network topology constrain and tasks in job '
         'rescheduled, can allocate job when resources are enough'),
        ('podgroup soft network topology constrain and subGroup hard network topology constrain and tasks in job '
         'rescheduled, can not allocate job when cross highestTierAllowed tier and hyperNodesInfo has three tier'),
        ('podgroup hard network topology constrain and subGroup hard network topology constrain, can allocate job '
         'when highestTierAllowed not reached'),
        ('podgroup hard network topology constrain and subGroup hard network topology constrain, can allocate job '
         'according to the network topology constrain of subGroup policy'),
        ('podgroup hard network topology constrain and subGroup hard network topology constrain, can allocate job '
         'when multi hyperNodes are available'),
        ('podgroup hard network topology constrain and subGroup hard network topology constrain, can allocate job '
         'when minavailable < replicas'),
        ('podgroup hard network topology constrain and subGroup hard network topology constrain and tasks in job '
         'rescheduled, two available hyperNodes, can allocate job to nodes with affinity'),
        ('podgroup hard network topology constrain and subGroup hard network topology constrain and tasks in job '
         'rescheduled, can allocate job when highestTierAllowed not reached and minavailable = replicas'),
        ('podgroup hard network topology constrain and subGroup hard network topology constrain and tasks in job '
         'rescheduled, can allocate job when highestTierAllowed not reached and hyperNodesInfo has three tier'),
        ('podgroup hard network topology constrain and subGroup hard network topology constrain and tasks in job '
         'rescheduled, can not allocate job when cross highestTierAllowed tier'),
        ('podgroup hard network topology constrain and subGroup hard network topology constrain and tasks in job '
         'rescheduled, can not allocate job when cross highestTierAllowed tier and hyperNodesInfo has three tier'),
        ('podgroup hard network topology constrain and subGroup hard network topology constrain and tasks in job '
         'rescheduled, can allocate job when LCAHyperNode is empty'),
        ('podgroup hard network topology constrain and subGroup hard network topology constrain, can allocate job '
         'according to the network topology constrain of subGroup policy with minSubGroups'),
        ('podgroup hard network topology constrain and subGroup hard network topology constrain, can allocate job '
         'according to the network topology constrain of subGroup policy with minSubGroups and minavailable = '
         'replicas'),
        ('podgroup hard network topology constrain and subGroup hard network topology constrain, can allocate job '
         'according to the network topology constrain of subGroup policy with minSubGroups and hypernode resources '
         'meet minSubGroups'),
        ('podgroup hard network topology constrain and subGroup hard network topology constrain, can not allocate '
         'job when minMember is not satisfied'),
        ('podgroup hard network topology constrain and subGroup hard network topology constrain, can not allocate '
         'job when minSubGroups is not satisfied'),
        ('podgroup hard network topology constrain and subGroup hard network topology constrain with minSubGroups '
         'and tasks in job rescheduled, two available hyperNodes, can allocate job to nodes with affinity'),
        ('podgroup hard network topology constrain and subGroup hard network topology constrain with minSubGroups '
         'and tasks in job rescheduled, can not allocate job when hypernode resources are insufficient.'),
        ('podgroup hard network topology constrain and subGroup hard network topology constrain with minSubGroups '
         'and tasks in job rescheduled, can allocate job when highestTierAllowed not reached and minAvailable = '
         'replicas'),
        ('podgroup hard network topology constrain and subGroup hard network topology constrain with minSubGroups '
         'and tasks in job rescheduled, can allocate job when subGroup is rescheduled'),
        ('rescheduling scenario: SubJob with multiple pending tasks, GetMinResources returns sum of all pending '
         'tasks resources'),
        'rescheduling scenario: SubJob with single pending task',
        'rescheduling scenario: multiple SubJobs with different pending task counts',
        'rescheduling scenario: pending tasks with different resource requirements',
        'rescheduling scenario: insufficient resources for pending tasks allocation',
        'rescheduling scenario: SubJob rescheduling within tier-2 HyperNode constraint',
        'no network topology at job or subgroup level but has SubJobPolicy, can allocate job successfully',
    ),
    'TestInvalidateSubJobNomination': (
        'nil worksheet only clears NominatedHyperNode',
        'clears Pod.Status.NominatedNodeName on every pending task',
    ),
    'TestAllocateFromNomination_FallsBackWhenHyperNodeMissing': (
        'TestAllocateFromNomination_FallsBackWhenHyperNodeMissing',  # no named case: the function is one
    ),
    'TestValidateNomination_MissBranches': (
        'task missing NominatedNodeName',
        'task NominatedNodeName outside leaf set',
        'task NominatedNodeName not in ssn.Nodes',
        'Predicate fails (task asks more than node FutureIdle)',
    ),
    'TestAllocateFromNomination_HappyPath': (
        'TestAllocateFromNomination_HappyPath',  # no named case: the function is one
    ),
    'TestAllocateFromNomination_AllocateErrorFallsBack': (
        'TestAllocateFromNomination_AllocateErrorFallsBack',  # no named case: the function is one
    ),
    'TestAllocate_FlatPathHonorsAndClearsNomination': (
        'flat path honors and clears NominatedHyperNode',  # its TestCommonStruct's Name, run without t.Run
    ),
}

UNEXPRESSED: list[Unexpressed] = [
    ("TestParseArgs", "set cache false", INTERNAL.format(
        what="enablePredicateErrorCache after parsing the action's configuration arguments")),
    *[(test, name, HYPERNODES) for test in ("TestAllocateWithNetWorkTopologies",
                                            "TestNodeLevelScoreWithNetWorkTopologies",
                                            "TestHyperNodeBinpackWithNetWorkTopologies",
                                            "TestAllocateWithPartitionPolicyNetworkTopology")
      for name in UPSTREAM_NAMES[test]],
    ("TestAllocateWithPVC", "static pv matched but node without enough resource", PVC),
    ("TestAllocateWithPVC", "static pv matched and node with enough resources", PVC),
    ("TestWorksheetShallowCopy", "TestWorksheetShallowCopy", INTERNAL.format(what="the sub-job worksheet's copy")),
    ("TestWorksheetEmpty", "TestWorksheetEmpty", INTERNAL.format(what="the sub-job worksheet's Empty")),
    ("TestWorksheetClone", "TestWorksheetClone", INTERNAL.format(what="the sub-job worksheet's Clone")),
    *[("TestInvalidateSubJobNomination", name, INTERNAL.format(what="invalidateSubJobNomination on " + NOMINATION))
      for name in UPSTREAM_NAMES["TestInvalidateSubJobNomination"]],
    *[("TestValidateNomination_MissBranches", name, INTERNAL.format(what="validateNomination on " + NOMINATION))
      for name in UPSTREAM_NAMES["TestValidateNomination_MissBranches"]],
    *[(test, test, INTERNAL.format(what="allocateFromNomination on " + NOMINATION))
      for test in ("TestAllocateFromNomination_FallsBackWhenHyperNodeMissing", "TestAllocateFromNomination_HappyPath",
                   "TestAllocateFromNomination_AllocateErrorFallsBack")],
    ("TestAllocate_FlatPathHonorsAndClearsNomination", "flat path honors and clears NominatedHyperNode",
     "it sets the default sub-job's NominatedHyperNode inside the open session before allocate runs and asserts "
     "allocate clears it: a session field no input carries"),
]


@pytest.mark.parametrize("case", params(CASES))
def test_restated(case: Case) -> None:
    case.check(run(case))


@dataclass(frozen=True)
class VcjobCase:
    """A restated case whose PodGroups and pods are what a Volcano Job's controller makes: the same case as Volcano
    Jobs, with upstream's binds named by the pods Phalanx's translation of the Job creates."""

    test: str
    name: str  # the upstream case it restates
    objects: tuple[Doc, ...]
    conf: Doc
    binds: dict[str, str]


VCJOBS = [
    # A PodGroup of minMember 0: a Job whose task asks for no minimum (Volcano's webhook sums the tasks' own).
    VcjobCase(ALLOCATE, "one Job with two Pods on one node",
              (vcjob("pg1", "c1", "c1", task("p", 2, resources("1", "1G"), min_available=0)),
               node_of("n1", "2", "4Gi"), queue("c1")),
              ALLOCATE_CONF, {"c1/pg1-0": "n1", "c1/pg1-1": "n1"}),
    VcjobCase(ALLOCATE, "high priority queue should not block others",
              (vcjob("pg1", "c1", "c1", task("p", 1, resources("3", "1G"))),
               vcjob("pg2", "c1", "c2", task("p", 1, resources("1", "1G"))),
               node_of("n1", "2", "4G"), queue("c1"), queue("c2")),
              ALLOCATE_CONF, {"c1/pg2-0": "n1"}),
    # Two tasks (a JobSet once translated, a replicated job per task, all in one gang of minAvailable 1).
    VcjobCase(ALLOCATE, "prepredicate failed: node selector does not match",
              (vcjob("pg1", "c1", "c1", task("master", 1, resources("1", "1G"), selector={"nodeRole": "master"}),
                     task("worker", 1, resources("1", "1G"), selector={"nodeRole": "worker"}), min_available=1),
               node_of("n1", "2", "4Gi", nodeRole="worker"), queue("c1")),
              ALLOCATE_CONF, {"c1/pg1-worker-0-0": "n1"}),
]


@pytest.mark.parametrize("case", [pytest.param(c, id=f"{c.test}/{c.name}") for c in VCJOBS])
def test_volcano_jobs_bind_the_same_directly_and_after_migrate(case: VcjobCase, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """The Volcano Jobs simulated as given, and `phalanx migrate`'s rewrite of them simulated: the same binds,
    upstream's."""
    direct = tmp_path / "direct"
    direct.mkdir()
    write(direct, case.objects, case.conf)
    assert main(["migrate", str(direct)]) == 0
    migrated = tmp_path / "migrated"
    migrated.mkdir()
    (migrated / "migrated.yaml").write_text(capsys.readouterr().out, encoding="utf-8")
    rewritten = list(yaml.safe_load_all((migrated / "migrated.yaml").read_text(encoding="utf-8")))
    assert not [d for d in rewritten if str(d.get("apiVersion", "")).startswith("batch.volcano.sh/")]
    assert Outcome(simulate(direct)).binds() == case.binds
    assert Outcome(simulate(migrated)).binds() == case.binds


def test_every_upstream_case_is_restated_or_unexpressed() -> None:
    check_names(CASES, UNEXPRESSED, UPSTREAM_NAMES)
