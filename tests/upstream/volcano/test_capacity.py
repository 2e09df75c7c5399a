"""volcano-sh/volcano `pkg/scheduler/plugins/capacity/capacity_test.go`, accounted for (see restated.py).

Every case runs Volcano's capacity plugin (queues' deserved, capability and guarantee as capacity reads them,
hierarchical queues, ancestor reclaim levels, DRA quotas) or calls its internals. Phalanx does not model the
capacity plugin: a conf naming it is listed under the report's notModelled, and none of its gates (enqueue,
allocatable, reclaimable, preemptive, queue order) apply, so no case can be restated; all are in UNEXPRESSED.
"""

from __future__ import annotations

from tests.upstream.volcano.restated import Case, Unexpressed, check_names

FILE = "pkg/scheduler/plugins/capacity/capacity_test.go"

NOT_MODELLED = ("it runs the capacity plugin ({what}); Phalanx does not model the capacity plugin (a conf naming it "
                "is listed under notModelled and none of its gates apply)")
INTERNAL = ("it calls the capacity plugin's internals ({what}) on hand-built session objects; Phalanx models no "
            "capacity plugin and no input says it")

UPSTREAM_NAMES: dict[str, tuple[str, ...]] = {
    'Test_capacityPlugin_OnSessionOpenWithoutHierarchy': (
        'case0: Pod allocatable when queue has not exceed capability',
        'case1: Pod not allocatable when queue exceed queue capability',
        'case2: Can reclaim from other queues when allocated < deserved',
        ('case3: CPU & Memory are overused, scalar resource is not overused, but candidate pod has not request CPU '
         '& Memory, reclaim should happen'),
        'case4: Pods are assigned according to the order of Queue Priority in which PGs are placed',
        'case5: Can reclaim from other queues when allocated + req <= deserved on one dimension',
        'case6: Can not reclaim from other queues when allocated + req > deserved',
        'case7: allocated does not contain scalar dimension (GPU), deserved does; should not reclaim',
        'case8: reclaimer dimensions are considered properly while evicting reclaimees',
        "case9: reclaimee has intersecting scalar dimensions with deserved shouldn't be reclaimed on cpu/memory",
        'case10: PreemptiveFn respects capability — no reclaim when futureUsed would exceed capability',
    ),
    'TestEnqueueAndAllocatable': (
        'case0: memory exceed derserved, job only request cpu can be enqueued and allocated',
        'case1: cpu exceed derserved, job only request memory can be enqueued and allocated',
        'case2: exceed capacity, can not enqueue',
        'case4: queue with non-open state, can not enqueue',
    ),
    'Test_capacityPlugin_OnSessionOpenWithHierarchy': (
        'case0: Pod allocatable when queue is leaf queue',
        'case1: Pod not allocatable when queue is not leaf queue',
        'case2: Pod allocatable when queue has not exceed capability',
        'case3: Can reclaim from other queues when allocated < deserved',
        "case4: Pod is not allocatable when ancestor queue's real capability not enough",
        'case5: If the capability cpu or memory is not specified, the value should be inherited from parent queue',
        "case6: podgroup can't be enqueued when any ancestor queue's capability is not enough",
        "case7: the sum of sub queue 71 and 72's guarantee exceeds the capacity of queue7, but should not panic",
        "case8: When the queue's deserved value has a scalar resource set, the check can pass",
        'case9: When some scalar resources are 0 in deserved, the check can still pass',
        "case10: root queue's capability > cluster total resource, but should not panic",
        'case11: If the capability scalar resources is not specified, the value should be inherited from parent queue',
        'case12: Can reclaim from other queues when allocated <= deserved on a single scalar dimension',
    ),
    'Test_capacityPlugin_AncestorReclaimScenarios': (
        'case1: Can reclaim based on parent deserved when ancestorReclaimLevel is 1',
        ('case2: Cross-parent reclaim pipelines project1 pending job when project2 child and parent are both over '
         'deserved'),
        'case3: Cross-parent reclaim can evict sibling-queue victim first',
        'case4: Cross-parent reclaim is blocked when victim child is not over deserved',
        'case5: level 0 allows reclaim based on leaf-level deserved checks',
        'case6: level 1 allows reclaim when parent-level check passes',
        'case7: level 2 blocks reclaim when grandparent-level check fails',
        'case8: level 1 blocks sibling reclaim when leaf deserved is unset and no ancestor gate applies',
        'case9: level 2 blocks reclaim when leaf deserved is unset and queues share grandparent',
        'case10: level 2 blocks reclaim in unbalanced shared-grandparent tree when leaf deserved is unset',
        'case11: unbalanced level2 blocks reclaim when depth-2 ancestor is not over deserved',
    ),
    'Test_updateQueueAttrShare': (
        'best-effort queue with allocated resources',
        'best-effort queue with pending requests only (no allocated)',
        'best-effort queue with both allocated and request',
        'best-effort queue completely idle',
        'queue with deserved but no allocated',
        'queue with deserved, allocated < deserved (CPU dimension)',
        'queue with deserved, allocated = deserved',
        'queue with deserved, allocated > deserved (CPU dimension)',
        'queue with deserved, memory is dominant resource',
        'queue with deserved, CPU is dominant resource',
        'queue with deserved, allocated exceeds on both dimensions',
        'queue with deserved, request should not affect share calculation',
        'queue with deserved but zero values',
        'queue with deserved, allocated is zero',
        'best-effort queue with only CPU allocated',
        'best-effort queue with only memory allocated',
        'best-effort queue with only CPU request (no allocated)',
    ),
    'Test_buildHierarchicalQueueAttrs_nilSafety': (
        'no-panic when root queue is absent (empty ssn.Queues)',
        'no-panic when job references a deleted queue',
    ),
    'TestNoDoubleCountingForInqueueJobWithBindingTasks': (
        'TestNoDoubleCountingForInqueueJobWithBindingTasks',  # no named case: the function is one
    ),
    'TestCapacityPluginDRA': (
        'Case 1: DRA Request within quota',
        'Case 2: DRA Request exceeds quota',
        'Case 3: Multiple Device Classes and Mixed Success/Failure',
        'Case 4: Pass-through for unconfigured DeviceClass',
        'Case 5: Job Enqueue DRA Check rejects oversize job',
    ),
    'TestParseDRAResourceListCombinesCountAndCapacity': (
        'TestParseDRAResourceListCombinesCountAndCapacity',  # no named case: the function is one
    ),
    'TestSharedResourceClaimIsChargedOnce': (
        'TestSharedResourceClaimIsChargedOnce',  # no named case: the function is one
    ),
    'TestJobEnqueueableChecksDRAWithoutMinResources': (
        'TestJobEnqueueableChecksDRAWithoutMinResources',  # no named case: the function is one
    ),
    'TestJobEnqueueableAccountsDRAInqueue': (
        'TestJobEnqueueableAccountsDRAInqueue',  # no named case: the function is one
    ),
    'TestDRAAllocatableIgnoresInqueue': (
        'TestDRAAllocatableIgnoresInqueue',  # no named case: the function is one
    ),
    'TestJobEnqueuedOnOtherPluginsReject': (
        # its one TestCommonStruct, run without t.Run
        'pgA rejected by co-tier plugin must not consume q1 capacity; pgB must be admitted',
    ),
    'TestJobEnqueuedUpdatesDRAInqueueForDRAOnlyJob': (
        # its one TestCommonStruct, run without t.Run
        'DRA-only job (MinResources==nil) must update DRA inqueue accounting on enqueue',
    ),
    'TestCheckDRAAllocatable_overflowRejected': (
        'TestCheckDRAAllocatable_overflowRejected',  # no named case: the function is one
    ),
}

WHAT = {
    "Test_capacityPlugin_OnSessionOpenWithoutHierarchy": (NOT_MODELLED, "flat queues' deserved and capability, "
                                                          "through allocate and reclaim"),
    "TestEnqueueAndAllocatable": (NOT_MODELLED, "its JobEnqueueable and Allocatable, through enqueue and allocate"),
    "Test_capacityPlugin_OnSessionOpenWithHierarchy": (NOT_MODELLED, "hierarchical queues, enableHierarchy"),
    "Test_capacityPlugin_AncestorReclaimScenarios": (NOT_MODELLED, "ancestor reclaim levels in a queue hierarchy"),
    "Test_updateQueueAttrShare": (INTERNAL, "updateQueueAttrShare on a queue attribute"),
    "Test_buildHierarchicalQueueAttrs_nilSafety": (INTERNAL, "buildHierarchicalQueueAttrs with missing queues"),
    "TestNoDoubleCountingForInqueueJobWithBindingTasks": (NOT_MODELLED, "its inqueue accounting across two "
                                                          "sessions"),
    "TestCapacityPluginDRA": (NOT_MODELLED, "DRA device quotas in queues' deserved and capability"),
    "TestParseDRAResourceListCombinesCountAndCapacity": (INTERNAL, "parsing DRA quota resource names"),
    "TestSharedResourceClaimIsChargedOnce": (INTERNAL, "charging a shared ResourceClaim to a queue"),
    "TestJobEnqueueableChecksDRAWithoutMinResources": (INTERNAL, "JobEnqueueable's DRA check on a hand-built job"),
    "TestJobEnqueueableAccountsDRAInqueue": (INTERNAL, "JobEnqueueable's DRA inqueue accounting"),
    "TestDRAAllocatableIgnoresInqueue": (INTERNAL, "the DRA allocatable check"),
    "TestJobEnqueuedOnOtherPluginsReject": (NOT_MODELLED, "its JobEnqueued next to a test-only rejecter plugin"),
    "TestJobEnqueuedUpdatesDRAInqueueForDRAOnlyJob": (NOT_MODELLED, "its DRA inqueue accounting on enqueue"),
    "TestCheckDRAAllocatable_overflowRejected": (INTERNAL, "checkDRAAllocatable with an overflowing quantity"),
}

CASES: list[Case] = []

UNEXPRESSED: list[Unexpressed] = [(test, name, WHAT[test][0].format(what=WHAT[test][1]))
                                  for test, names in UPSTREAM_NAMES.items() for name in names]


def test_every_upstream_case_is_restated_or_unexpressed() -> None:
    assert set(WHAT) == set(UPSTREAM_NAMES)
    check_names(CASES, UNEXPRESSED, UPSTREAM_NAMES)
