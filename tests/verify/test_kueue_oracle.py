"""How the Kueue oracle tells that a step is decided, without a control plane: Kueue's queues read from its
metrics page, and the Jobs that are between states (their controller about to act)."""

from __future__ import annotations

from typing import Any, cast

from phalanx.verify.kueue_oracle import Admissions, _jobs_moving, _Queues
from phalanx.verify.kueue_plane import Kueue

# As Kueue v0.17.0 prints them (its metrics page has more: Go's, controller-runtime's).
PAGE = """\
# HELP kueue_admission_attempts_total The total number of attempts to admit workloads.
# TYPE kueue_admission_attempts_total counter
kueue_admission_attempts_total{replica_role="standalone",result="inadmissible"} 7
kueue_admission_attempts_total{replica_role="standalone",result="success"} 4
# TYPE kueue_pending_workloads gauge
kueue_pending_workloads{cluster_queue="team-a",replica_role="standalone",status="active"} 1
kueue_pending_workloads{cluster_queue="team-a",replica_role="standalone",status="inadmissible"} 2
kueue_pending_workloads{cluster_queue="team-b",replica_role="standalone",status="active"} 0
kueue_pending_workloads{cluster_queue="team-b",replica_role="standalone",status="inadmissible"} 1
kueue_local_queue_pending_workloads{local_queue="a",namespace="default",status="active"} 9
"""


class _Metrics:
    def __init__(self, page: str | None) -> None:
        self.page = page

    def metrics(self) -> str:
        if self.page is None:
            raise OSError("Kueue is not running")
        return self.page


def _admissions(page: str | None) -> Admissions:
    return Admissions(cast(Any, None), cast(Kueue, _Metrics(page)))


def test_kueue_queues_are_summed_over_cluster_queues() -> None:
    assert _admissions(PAGE)._queues() == _Queues(active=1, inadmissible=3, attempts=11)


def test_no_metrics_page_means_no_reading() -> None:
    assert _admissions(None)._queues() is None


def _job(uid: str = "u1", suspend: bool = False, **status: Any) -> dict[str, Any]:
    return {"metadata": {"name": "job-0", "namespace": "default", "uid": uid},
            "spec": {"suspend": suspend, "parallelism": 2, "completions": 2}, "status": status}


def test_a_running_job_with_its_pods_is_settled() -> None:
    assert not _jobs_moving({"Job default/job-0": _job(active=2)}, {})


def test_a_resumed_job_whose_pods_are_not_made_yet_is_moving() -> None:
    assert _jobs_moving({"Job default/job-0": _job(active=1)}, {})
    assert not _jobs_moving({"Job default/job-0": _job(active=1, succeeded=1)}, {"Job default/job-0": 1})


def test_a_pod_ended_and_not_counted_is_moving() -> None:
    job = {"Job default/job-0": _job(active=2)}
    assert _jobs_moving(job, {"Job default/job-0": 1})  # the replay ended one; the Job controller has not seen it
    assert _jobs_moving({"Job default/job-0": _job(active=1, uncountedTerminatedPods={"succeeded": ["x"]})}, {})
    assert not _jobs_moving({"Job default/job-0": _job(active=1, succeeded=1)}, {"Job default/job-0": 1})
    assert not _jobs_moving(job, {"Job default/other": 1})  # another Job's pod is not this one's


def test_a_job_complete_by_count_but_not_marked_is_moving() -> None:
    assert _jobs_moving({"Job default/job-0": _job(succeeded=2)}, {})
    assert not _jobs_moving({"Job default/job-0": _job(succeeded=2, conditions=[
        {"type": "Complete", "status": "True"}])}, {})


def test_a_suspended_job_with_pods_still_active_is_moving() -> None:
    assert _jobs_moving({"Job default/job-0": _job(suspend=True, active=2)}, {})
    assert not _jobs_moving({"Job default/job-0": _job(suspend=True)}, {})


def test_a_pod_the_replay_ended_counts_against_its_job() -> None:
    admissions = _admissions(PAGE)
    admissions.succeeded({"metadata": {"name": "job-0-a", "namespace": "team", "ownerReferences": [
        {"kind": "Job", "name": "job-0", "uid": "u1"}]}})
    admissions.succeeded({"metadata": {"name": "bare", "namespace": "team"}})
    assert dict(admissions._succeeded) == {"Job team/job-0": 1}
