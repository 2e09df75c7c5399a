"""The controller registry: one controller per object kind, and every object kind the kind table files as a
workload controller's is taken by one."""

from __future__ import annotations

import dataclasses
from typing import Any

from phalanx.api.apps import CronJob, DaemonSet, Deployment, ReplicaSet, StatefulSet
from phalanx.api.collection import ApiObjects
from phalanx.api.kinds import KINDS
from phalanx.api.sets import JobSet, LeaderWorkerSet
from phalanx.api.training import TrainingJob
from phalanx.controllers.job import JobController
from phalanx.controllers.protocol import NOTHING, Actions, Controller, Given, Setup
from phalanx.controllers.registry import CONTROLLERS
from phalanx.controllers.workloads import WorkloadControllers
from tests.builders import MakePod


def test_each_kind_has_one_controller() -> None:
    kinds = [kind for controller in CONTROLLERS for kind in controller.kinds]
    assert len(kinds) == len(set(kinds))
    assert set(kinds) == {kind.controlled for kind in KINDS.values() if kind.controlled is not None}


def test_the_inputs_controller_objects_are_all_taken() -> None:
    """ApiObjects files exactly the kinds the registry's controllers take, in the kind table's order."""
    taken = {kind for controller in CONTROLLERS for kind in controller.kinds}
    assert set(ApiObjects().controlled) == taken
    assert list(ApiObjects().controlled) == list(dict.fromkeys(kind.controlled for kind in KINDS.values()
                                                               if kind.controlled is not None))
    assert {ReplicaSet, Deployment, StatefulSet, DaemonSet, CronJob, JobSet, LeaderWorkerSet, TrainingJob} <= taken


def test_a_pod_event_nobody_owns_asks_for_nothing() -> None:
    controllers = WorkloadControllers(JobController())
    pod = MakePod("bare").req(cpu="1").obj()
    assert controllers.bound(pod, 0.0) is NOTHING
    assert controllers.gone(pod, 0.0) == Actions() and controllers.terminating(pod, 0.0) == Actions()
    assert not controllers.replaces(pod)


def test_actions_extend_keeps_every_list_in_order() -> None:
    first, second = Actions(delete_pods=["a"], wake=[(1.0, "c")]), Actions(delete_pods=["b"])
    first.extend(second)
    assert first.delete_pods == ["a", "b"] and first.wake == [(1.0, "c")]
    assert [f.name for f in dataclasses.fields(Actions)] == list(Actions.__slots__)


def test_the_protocols_defaults_ignore_what_a_controller_does_not_handle() -> None:
    class Nothing(Controller):
        kinds = ()

        def arrive(self, obj: Any, now: float, given: Given) -> Actions:
            return Actions()

    controller = Nothing.build(Setup(JobController(), Given()))
    pod = MakePod("p").req(cpu="1").obj()
    assert controller.pod_bound(pod, 0.0) is NOTHING and controller.pod_gone(pod, 0.0) is NOTHING
    assert not controller.replaces(pod) and controller.woken("k", 0.0) is NOTHING
