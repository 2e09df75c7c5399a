"""`verify --profile kueue` on Kueue's JobSet and LeaderWorkerSet samples, unchanged: the real JobSet v0.11.1 and
LeaderWorkerSet v0.8.0 controllers (tools/integrations/build.sh) run beside the real Kueue v0.17.0, which admits
a JobSet as one Workload and each group of a LeaderWorkerSet as its own.

Without the builds these tests are skipped, unless PHALANX_REQUIRE_KUBE=1 (as CI sets it), where a missing
build is a failure.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from phalanx.scheduler.profiles import builtin
from phalanx.verify.compare import Verdict, verify
from phalanx.verify.integrations_plane import find_integrations
from phalanx.verify.kueue_plane import find_kueue
from phalanx.verify.oracle import Oracle
from tests.kube import require
from tests.verify.test_kueue import KUEUE, assert_agrees, job, node, run

pytestmark = pytest.mark.kube

SETUP = KUEUE / "single-clusterqueue-setup.yaml"  # 9 cpu


@pytest.fixture(autouse=True)
def _built() -> None:
    require(find_kueue)
    require(find_integrations)


def _bound_at(verdict: Verdict) -> dict[str, float | None]:
    return {p["name"]: p["kubeScheduler"]["boundAt"] for p in verdict.pods}


def test_kueues_jobset_sample_waits_for_quota_as_one_workload(tmp_path: Path, oracle: Oracle) -> None:
    """sample-jobset.yaml (a 1-cpu and a 2-cpu replicated job) behind an 8-cpu Job written before it, in the
    9-cpu ClusterQueue: Kueue admits the JobSet whole when the Job ends (30 min), on both; the JobSet
    controller's pods are `<jobset>-<replicated job>-<index>-<completion index>` on both sides."""
    verdict = run(tmp_path, oracle, [node(), job("first", "user-queue", 4, "2")], SETUP,
                  KUEUE / "sample-jobset.yaml")
    assert_agrees(verdict)
    assert verdict.to_json()["oracles"] == ["kube-scheduler v1.37.2", "Kueue v0.17.0", "JobSet v0.11.1"]
    assert verdict.total["admission"] == 2
    sets = {name: at for name, at in _bound_at(verdict).items() if "sleep-job-" in name}
    assert len(sets) == 2 and set(sets.values()) == {1800.0}
    assert any(name.endswith("-driver-0-0") for name in sets) and any(name.endswith("-workers-0-0") for name in sets)


def test_kueues_leaderworkerset_sample_is_admitted_group_by_group(tmp_path: Path, oracle: Oracle) -> None:
    """sample-leaderworkerset.yaml (2 groups of a 100m leader and two 200m workers) behind an 8.4-cpu Job, in the
    9-cpu ClusterQueue: one group fits at once, the other is admitted when the Job ends, on both (Kueue makes a
    Workload per group). Which group Kueue takes first is its draw (same-second Workloads), not counted; the
    PodGroups Phalanx's LWS controller makes are named in a note, not compared."""
    verdict = run(tmp_path, oracle, [node(), job("first", "user-queue", 4, "2100m")], SETUP,
                  KUEUE / "sample-leaderworkerset.yaml")
    assert_agrees(verdict)
    assert verdict.to_json()["oracles"] == ["kube-scheduler v1.37.2", "Kueue v0.17.0", "LeaderWorkerSet v0.8.0"]
    assert verdict.total["admission"] == 3
    lws = {name: at for name, at in _bound_at(verdict).items() if "nginx-leaderworkerset" in name}
    assert sorted(at for at in lws.values() if at is not None) == [0.0] * 3 + [1800.0] * 3
    assert any("PodGroup(s) that Phalanx's LeaderWorkerSet controller makes" in note for note in verdict.notes)


def test_kueues_job_jobset_and_leaderworkerset_samples_share_the_quota(tmp_path: Path, oracle: Oracle) -> None:
    """Kueue's sample Job (3 cpu), JobSet (3 cpu) and LeaderWorkerSet (1 cpu) samples, unchanged, in the 9-cpu
    ClusterQueue: all admitted at once, on both, with both controllers running."""
    verdict = run(tmp_path, oracle, [node()], SETUP, KUEUE / "sample-job.yaml", KUEUE / "sample-jobset.yaml",
                  KUEUE / "sample-leaderworkerset.yaml")
    assert_agrees(verdict)
    assert verdict.to_json()["oracles"][2:] == ["JobSet v0.11.1", "LeaderWorkerSet v0.8.0"]
    assert verdict.total["admission"] == 4
    assert set(_bound_at(verdict).values()) == {0.0}


def test_without_kueue_the_real_controllers_make_the_samples_pods(tmp_path: Path, oracle: Oracle) -> None:
    """The same samples under `gang` on one node: no Kueue; the real JobSet and LWS controllers make the pods, all
    bound at once on both (their queue-name labels are left to a Kueue that does not run). On several nodes the
    LWS pods' nodes differ: Phalanx places each group as a gang (docs/fidelity.md)."""
    nodes = tmp_path / "node.yaml"
    nodes.write_text(yaml.safe_dump(node()), encoding="utf-8")
    paths = [str(KUEUE / "sample-jobset.yaml"), str(KUEUE / "sample-leaderworkerset.yaml"), str(nodes)]
    verdict = verify(paths, builtin("gang"), oracle)
    assert_agrees(verdict)
    assert verdict.to_json()["oracles"] == ["kube-scheduler v1.37.2", "JobSet v0.11.1", "LeaderWorkerSet v0.8.0"]
    assert verdict.total["admission"] == 0
    assert sum(1 for p in verdict.pods if "sleep-job-" in p["name"] or "nginx-leaderworkerset" in p["name"]) == 8


def test_an_inorder_jobset_starts_its_workers_once_the_driver_runs(tmp_path: Path, oracle: Oracle) -> None:
    """examples/training-mix's JobSet (`InOrder`: a driver, then two worker Jobs whose template names the
    PodGroup sweep-workers), without the PyTorchJob beside it: the real JobSet controller makes the worker Jobs
    once the driver's pod is ready, at 10 min as Phalanx does (the oracle waits for it: `sets_starting`).
    JobSet v0.11.1's CRD predates v1.37's `schedulingGroup` and the API server prunes it from the JobSet, so
    the real workers join no PodGroup: the group's status is the one difference counted, and the workers'
    nodes may differ (the real kube-scheduler places them one by one)."""
    training = Path(__file__).resolve().parents[2] / "examples" / "training-mix"
    docs = [d for d in yaml.safe_load_all((training / "03-training.yaml").read_text(encoding="utf-8"))
            if d and d["kind"] != "PyTorchJob"]
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(yaml.safe_dump_all(docs), encoding="utf-8")
    verdict = verify([str(training / "01-nodes.yaml"), str(sweep)], builtin("gang"), oracle)
    for category in ("outcome", "boundAt", "victims"):
        assert verdict.agree[category] == verdict.total[category] == 5, category
    assert set(_bound_at(verdict).values()) == {600.0}
    groups = [d.to_json() for d in verdict.differences if d.category == "podGroups"]
    assert groups == [{"category": "podGroups", "name": "research/sweep-workers PodGroupInitiallyScheduled",
                       "phalanx": "True", "kubeScheduler": None}]
    stored = oracle.plane.items("/apis/jobset.x-k8s.io/v1alpha2/namespaces/research/jobsets", "JobSet",
                                "jobset.x-k8s.io/v1alpha2")[0]
    workers = stored["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]["spec"]
    assert "schedulingGroup" not in workers and workers["containers"][0]["name"] == "worker"
