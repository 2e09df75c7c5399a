"""`verify --profile kueue`: the real Kueue v0.17.0 (tools/kueue/build.sh) in front of the real kube-scheduler,
against Phalanx's kueue profile: per Job, admitted or held and when first admitted; per pod as for every profile.

Without the Kueue build these tests are skipped, unless PHALANX_REQUIRE_KUBE=1 (as CI sets it), where a missing
build is a failure.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from phalanx.errors import InputError
from phalanx.scheduler.profiles import builtin
from phalanx.sim.scenario import scenario_for
from phalanx.verify.compare import CATEGORIES, Verdict, verify
from phalanx.verify.kueue_plane import find_kueue
from phalanx.verify.oracle import Oracle
from tests.kube import require

pytestmark = pytest.mark.kube

ROOT = Path(__file__).resolve().parents[2]
KUEUE = ROOT / "tests" / "upstream" / "kueue"
Doc = dict[str, Any]


@pytest.fixture(autouse=True)
def _kueue_built() -> None:
    require(find_kueue)


def node(name: str = "n1", cpu: str = "16") -> Doc:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
            "status": {"allocatable": {"cpu": cpu, "memory": "64Gi", "pods": "110"}}}


def job(name: str, queue: str, pods: int, cpu: str, duration: str = "30m", namespace: str = "default",
        arrival: str = "0s") -> Doc:
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": namespace, "labels": {"kueue.x-k8s.io/queue-name": queue},
                         "annotations": {"phalanx.dev/duration": duration, "phalanx.dev/arrival": arrival}},
            "spec": {"parallelism": pods, "completions": pods, "template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu,
                                                                                      "memory": "1Gi"}}}]}}}}


def cluster_queue(name: str, cpu: str, cohort: str | None = None, **extra: Any) -> Doc:
    spec: Doc = {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu", "memory"], "flavors": [
        {"name": "default-flavor", "resources": [{"name": "cpu", "nominalQuota": cpu, **extra},
                                                 {"name": "memory", "nominalQuota": "256Gi"}]}]}]}
    if cohort:
        spec["cohortName"] = cohort
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": name}, "spec": spec}


def local_queue(name: str, cq: str, namespace: str = "default") -> Doc:
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
            "metadata": {"name": name, "namespace": namespace}, "spec": {"clusterQueue": cq}}


FLAVOR: Doc = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "default-flavor"}}


def run(tmp_path: Path, oracle: Oracle, docs: list[Doc], *files: Path) -> Verdict:
    path = tmp_path / "input.yaml"
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False), encoding="utf-8")
    return verify([str(path), *(str(f) for f in files)], builtin("kueue"), oracle, scenario=scenario_for("kueue"))


def assert_agrees(verdict: Verdict) -> None:
    differing = {c for c in CATEGORIES if c != "messages" and verdict.agree[c] != verdict.total[c]}
    assert not differing, [d.to_json() for d in verdict.differences if d.category != "messages"]


def test_kueues_sample_job_and_a_second_job_share_the_quota(tmp_path: Path, oracle: Oracle) -> None:
    """Kueue's sample Job and its single-ClusterQueue setup (9 cpu), unchanged, with an 8-cpu Job written
    before them: the 8-cpu Job is admitted at once, the sample Job (3 cpu) when it finishes, on both."""
    verdict = run(tmp_path, oracle, [node(), job("second", "user-queue", 4, "2")],
                  KUEUE / "sample-job.yaml", KUEUE / "single-clusterqueue-setup.yaml")
    assert_agrees(verdict)
    assert verdict.total["admission"] == 2 and verdict.total["outcome"] + verdict.total["victims"] >= 7
    assert verdict.to_json()["oracles"] == ["kube-scheduler v1.37.2", "Kueue v0.17.0"]
    admitted = {d["name"]: d for d in verdict.pods}
    assert admitted["default/second-0"]["kubeScheduler"]["boundAt"] == 0.0
    assert all(p["kubeScheduler"]["boundAt"] == 1800.0 for name, p in admitted.items() if "sample-job" in name)


def test_kueues_partial_admission_sample_is_admitted_with_what_is_left(tmp_path: Path, oracle: Oracle) -> None:
    """Kueue's sample-job-partial-admission.yaml and its single-ClusterQueue setup (9 cpu), unchanged, behind a
    4-cpu Job written before them: the sample (20 pods of 1 cpu, job-min-parallelism 5) is admitted at once
    with parallelism 5, the 5 cpu left (PodSetReducer), on both; its pods run 5 at a time."""
    verdict = run(tmp_path, oracle, [node(), job("first", "user-queue", 2, "2")],
                  KUEUE / "single-clusterqueue-setup.yaml", KUEUE / "sample-job-partial-admission.yaml")
    assert_agrees(verdict)
    assert verdict.total["admission"] == 2
    at_zero = [p for p in verdict.pods if p["name"].startswith("default/sample-job-partial-admission")
               and p["kubeScheduler"]["boundAt"] == 0.0]
    assert len(at_zero) == 5


def test_a_cohort_lends_idle_quota_and_a_missing_local_queue_holds(tmp_path: Path, oracle: Oracle) -> None:
    """team-a (4 cpu) borrows team-b's idle 4 cpu in cohort org for a 6-cpu Job; a Job naming a LocalQueue
    that does not exist is held on both."""
    docs = [node(), FLAVOR, cluster_queue("team-a", "4", "org"), cluster_queue("team-b", "4", "org"),
            local_queue("a", "team-a"), local_queue("b", "team-b"),
            job("borrower", "a", 3, "2"), job("lost", "nowhere", 1, "1")]
    verdict = run(tmp_path, oracle, docs)
    assert_agrees(verdict)
    assert verdict.total["admission"] == 2


def test_a_namespace_selector_matches_the_namespaces_labels(tmp_path: Path, oracle: Oracle) -> None:
    """The ClusterQueue selects namespaces labelled team=a: the Job in team-a is admitted, the one in team-b
    is not, on both (Phalanx read only kubernetes.io/metadata.name before)."""
    selective = cluster_queue("cq", "8")
    selective["spec"]["namespaceSelector"] = {"matchLabels": {"team": "a"}}
    docs = [node(),
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a", "labels": {"team": "a"}}},
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-b", "labels": {"team": "b"}}},
            FLAVOR, selective, local_queue("q", "cq", "team-a"), local_queue("q", "cq", "team-b"),
            job("in", "q", 2, "1", namespace="team-a"), job("out", "q", 2, "1", namespace="team-b")]
    verdict = run(tmp_path, oracle, docs)
    assert_agrees(verdict)
    assert verdict.total["admission"] == 2


def _bad_queues() -> list[tuple[str, Doc, str]]:
    """(what, a Kueue object the real Kueue refuses, the field both name)."""
    lending = cluster_queue("cq", "8", lendingLimit="2")
    negative = cluster_queue("cq", "-1")
    twice = cluster_queue("cq", "8")
    twice["spec"]["resourceGroups"][0]["flavors"].append(twice["spec"]["resourceGroups"][0]["flavors"][0])
    uncovered = cluster_queue("cq", "8")
    uncovered["spec"]["resourceGroups"][0]["coveredResources"] = ["cpu"]
    bad_label = {**FLAVOR, "spec": {"nodeLabels": {"not a key!": "x"}}}
    too_many = job("partial", "user-queue", 4, "1")
    too_many["metadata"]["annotations"]["kueue.x-k8s.io/job-min-parallelism"] = "4"
    not_indexed = job("sync", "user-queue", 4, "1")
    not_indexed["metadata"]["annotations"]["kueue.x-k8s.io/job-completions-equal-parallelism"] = "true"
    return [("a borrowingLimit without a cohort", cluster_queue("cq", "8", borrowingLimit="2"), "borrowingLimit"),
            ("a lendingLimit without a cohort", lending, "lendingLimit"),
            ("a negative nominalQuota", negative, "nominalQuota"),
            ("a flavor listed twice", twice, "flavors"),
            ("resources not in coveredResources", uncovered, "resources"),
            ("a node label key that is not a label key", bad_label, "nodeLabels"),
            ("a job-min-parallelism not below the Job's pods", too_many, "kueue.x-k8s.io/job-min-parallelism"),
            ("completions following parallelism on a NonIndexed Job", not_indexed,
             "kueue.x-k8s.io/job-completions-equal-parallelism")]


@pytest.mark.parametrize(("what", "bad", "field"), _bad_queues(), ids=[b[0] for b in _bad_queues()])
def test_what_kueues_webhook_rejects_phalanx_rejects(what: str, bad: Doc, field: str, tmp_path: Path,
                                                     oracle: Oracle) -> None:
    """The real Kueue (its webhooks and CRD validation) refuses the object, and Phalanx refuses it too, naming
    file, object and field."""
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump_all([node(), bad]), encoding="utf-8")
    with pytest.raises(InputError) as mine:
        verify([str(path)], builtin("kueue"), oracle, scenario=scenario_for("kueue"))
    named = "/".join(filter(None, (bad["metadata"].get("namespace"), bad["metadata"]["name"])))
    assert f"{bad['kind']} {named}" in str(mine.value) and field in str(mine.value)
    oracle.use_kueue(True)
    assert oracle.admissions is not None
    oracle.admissions.start()
    with pytest.raises(InputError) as real:
        oracle.create(_sources(path)[1], bad)
    assert "rejected" in str(real.value)


def _sources(path: Path) -> list[Any]:
    from phalanx.api.documents import raw_documents

    return [source for source, _ in raw_documents([str(path)])]


def test_the_peers_night_agrees_with_the_real_kueue(oracle: Oracle) -> None:
    """examples/peers under kueue: two ClusterQueues in a cohort with reclaimWithinCohort, five gang Jobs. Every
    admission, Kueue's reclaim of sweep-b (evicted once, readmitted), every victim and every binding time agree.
    Nodes may differ for the sweep that starts as eval ends: the oracle's kubelet ends eval's pods one at a
    time and kube-scheduler places sweep-c at the first freed node (docs/fidelity.md, Known differences)."""
    verdict = verify([str(ROOT / "examples" / "peers")], builtin("kueue"), oracle, scenario=scenario_for("kueue"))
    differing = {c for c in CATEGORIES if c != "messages" and verdict.agree[c] != verdict.total[c]}
    assert differing <= {"node"}, [d.to_json() for d in verdict.differences if d.category != "messages"]
    assert verdict.total["admission"] == 5 and verdict.total["victims"] == 18
    assert {d.name for d in verdict.differences if d.category == "node"} <= {
        f"research/sweep-c-{i}" for i in range(4)}
