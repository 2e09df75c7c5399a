"""volcano-sh/volcano `pkg/scheduler/actions/enqueue/enqueue_test.go` (TestEnqueue), restated (see restated.py).

Every case runs the enqueue action alone with the plugins drf, gang, sla and proportion registered, in the tier
drf (job order, job enqueued), proportion (queue order, job enqueued), sla (`sla-waiting-time: 3m`; job order,
job enqueued), gang (job order). No case has a node. Upstream checks the PodGroups' phases (ExpectStatus); its
CheckAll also holds that nothing binds and nothing is evicted.
"""

from __future__ import annotations

import pytest

from tests.upstream.volcano.restated import (
    Case,
    Doc,
    Unexpressed,
    check_names,
    conf,
    expect,
    params,
    plugin,
    pod,
    pod_group,
    queue,
    resources,
    run,
)

FILE = "pkg/scheduler/actions/enqueue/enqueue_test.go"
TEST = "TestEnqueue"

CONF = conf("enqueue",
            plugin("drf", "enableJobOrder", "enableJobEnqueued"),
            plugin("proportion", "enableQueueOrder", "enableJobEnqueued"),
            plugin("sla", "enableJobOrder", "enableJobEnqueued", arguments={"sla-waiting-time": "3m"}),
            plugin("gang", "enableJobOrder"))

NO_STATUS = ("Phalanx reads no PodGroup status: phalanx/migrate/foreign.py volcano_group translates the Volcano "
             "PodGroup into a v1.37 one from its spec alone, so a PodGroup upstream builds {phase} is offered to "
             "VolcanoAdmission as a new Pending job")
NO_MIN_RESOURCES = ("enqueue.go Execute moves a Pending PodGroup without minResources to Inqueue without asking "
                    "JobEnqueueable (`MinResources == nil || ssn.JobEnqueueable(job)`), and proportion's and "
                    "overcommit's JobEnqueueable permit one too; Phalanx drops minResources (foreign.py) and "
                    "VolcanoAdmission._enqueue always gates on the pods' requests (minimum_resources) against the "
                    "queue's realCapability, here 0 in a cluster without nodes, so it stays Pending")


def queues() -> tuple[Doc, Doc]:
    return queue("c1", 1, resources("4", "4G")), queue("c2", 1, resources("4", "4G"))


CASES = [
    Case(TEST, "when podgroup status is inqueue",
         (pod_group("pg1", "c1", "c1", 2, "Inqueue"),
          pod("c1", "p1", resources("1", "1G"), "pg1"), pod("c1", "p2", resources("1", "1G"), "pg1"), *queues()),
         CONF, expect({}, phases={"c1/pg1": "Inqueue"}),
         differs=NO_STATUS.format(phase="Inqueue") + " (enqueue.go leaves a job that is not Pending alone); "
         + NO_MIN_RESOURCES),
    Case(TEST, "when podgroup status is pending",
         (pod_group("pg1", "c1", "c1", 1, "Pending"), pod_group("pg2", "c1", "c2", 1, "Pending"),
          pod("c1", "p1", resources("3", "1G"), "pg1"), pod("c1", "p2", resources("1", "1G"), "pg2"), *queues()),
         CONF, expect({}, phases={"c1/pg1": "Inqueue", "c1/pg2": "Inqueue"}), differs=NO_MIN_RESOURCES),
    Case(TEST, "when podgroup status is running",
         (pod_group("pg1", "c1", "c1", 2, "Running"),
          pod("c1", "p1", resources("1", "1G"), "pg1", phase="Running"),
          pod("c1", "p2", resources("1", "1G"), "pg1", phase="Running"), queue("c1", 1, resources("4", "4G"))),
         CONF, expect({}, phases={"c1/pg1": "Running"}),
         differs=NO_STATUS.format(phase="Running") + ", and a pod's status.phase Running means nothing to Phalanx "
         "without spec.nodeName (it is a pending pod); enqueue.go leaves a Running job alone, Phalanx "
         "gates it as a new job and, without nodes, keeps it Pending"),
    # The PodGroup names queue c1, which does not exist: Volcano's session drops the job, so upstream expects no
    # status at all; CheckAll still holds that nothing binds and nothing is evicted.
    Case(TEST, "pggroup cannot enqueue because the specified queue is c1, but there is only c2",
         (pod_group("pg1", "c1", "c1", 0, "Pending"), queue("c2", 1, resources("4", "4G"))),
         CONF, expect({})),
    # minResources 8 cpu 8G against a queue of 1 cpu 1G, and no pod: the PodGroup stays Pending. Phalanx drops
    # minResources; its gate never offers a PodGroup before minMember members exist, so it is Pending too.
    Case(TEST, "pggroup cannot enqueue because queue resources are less than podgroup MinResources",
         (pod_group("pg1", "c1", "c1", 1, "Pending", min_resources=resources("8", "8G")),
          queue("c1", 1, resources("1", "1G"))),
         CONF, expect({}, phases={"c1/pg1": "Pending"})),
]

UNEXPRESSED: list[Unexpressed] = []


@pytest.mark.parametrize("case", params(CASES))
def test_restated(case: Case) -> None:
    case.check(run(case))


UPSTREAM_NAMES = {
    TEST: (
        "when podgroup status is inqueue",
        "when podgroup status is pending",
        "when podgroup status is running",
        "pggroup cannot enqueue because the specified queue is c1, but there is only c2",
        "pggroup cannot enqueue because queue resources are less than podgroup MinResources",
    ),
}


def test_every_upstream_case_is_restated_or_unexpressed() -> None:
    check_names(CASES, UNEXPRESSED, UPSTREAM_NAMES)
