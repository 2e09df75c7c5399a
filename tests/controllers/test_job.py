"""The Job controller: pods up to parallelism until completions succeeded; a gang Job's PodGroup."""

from __future__ import annotations

from phalanx.controllers.job import JobController
from tests.builders import MakeJob


def test_pods_up_to_parallelism_until_completions() -> None:
    controller = JobController()
    group, pods = controller.start(MakeJob("train").parallelism(2).completions(3).req(cpu="1").obj(), 0.0)
    assert group is None
    assert [p.name for p in pods] == ["train-0", "train-1"]
    assert [p.name for p in controller.succeeded("default/train", 5.0)] == ["train-2"]
    assert controller.succeeded("default/train", 6.0) == []  # three created: no more
    assert controller.succeeded("default/train", 7.0) == []
    assert controller.succeeded("default/other", 8.0) == [] and controller.succeeded(None, 8.0) == []


def test_a_gang_job_brings_its_pod_group() -> None:
    group, pods = JobController().start(MakeJob("train").parallelism(4).completions(4).gang(4).req(cpu="1").obj(), 0.0)
    assert group is not None and group.min_count == 4
    assert len(pods) == 4 and all(p.pod_group == group.name for p in pods)
