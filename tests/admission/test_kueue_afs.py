"""Kueue's admission fair sharing (phalanx.admission.kueue_afs): TestScheduleForAFS (Kueue v0.17.0
pkg/scheduler/scheduler_afs_test.go) restated case by case, the decay and penalty arithmetic, preemption order by
LocalQueue usage, the Configuration's admissionFairSharing and bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from phalanx.admission.base import Admit, EvictWorkload
from phalanx.admission.kueue import KueueAdmission, load_kueue
from phalanx.admission.kueue_config import AdmissionFairSharing, KueueConfig, parse_kueue_config
from phalanx.admission.kueue_objects import parse_kueue_object
from phalanx.api.objects import Source
from phalanx.cli import main
from phalanx.errors import InputError
from tests.admission.kueue_helpers import cluster_queue, flavor, local_queue, quotas, workload

V2 = "config.kueue.x-k8s.io/v1beta2"
# TestScheduleForAFS's afsConfig: half-life 10 s, sampling every second
AFS = AdmissionFairSharing(half_life=10.0, sampling=1.0)


def lq(name: str, weight: str = "1") -> dict[str, Any]:
    doc = local_queue(name, "cq1")
    doc["spec"]["fairSharing"] = {"weight": weight}
    return doc


def cq1(mode: str | None = "UsageBasedAdmissionFairSharing", **spec: Any) -> dict[str, Any]:
    """TestScheduleForAFS's cq1: 8 cpu and 8Gi of flavor default."""
    extra: dict[str, Any] = {"admissionScope": {"admissionMode": mode}} if mode else {}
    return cluster_queue("cq1", [quotas(["cpu", "memory"], [("default", [(8, None, None), ("8Gi", None, None)])])],
                         "", **extra, **spec)


def policy(*docs: dict[str, Any], afs: AdmissionFairSharing | None = AFS) -> KueueAdmission:
    all_docs = [*docs, flavor("default")]
    p = load_kueue([(d, Source("kueue.yaml", i)) for i, d in enumerate(all_docs)], None,
                   KueueConfig(admission_fair_sharing=afs))
    p.passes_per_cycle = 1
    return p


def initial(p: KueueAdmission, usage: dict[str, float]) -> None:
    """The test's initialUsage: consumed cpu per LocalQueue, as of now (AfsConsumedResources.Set)."""
    assert p.afs is not None
    for name, cpu in usage.items():
        p.afs.queues[f"default/{name}"].consumed = {"cpu": cpu}


def schedule(p: KueueAdmission, *wls: tuple[str, str, int, float]) -> set[str]:
    """Submit (name, LocalQueue, cpu, creation offset) and run as many scheduling passes as workloads, all at
    time 0 (the test's fake clock does not move); what was admitted."""
    for name, queue, cpu, created in wls:
        p.submit(workload(name, queue, cpu, created=created), 0)
    got: set[str] = set()
    for _ in wls:
        got |= {r.key.removeprefix("default/") for r in p.cycle(0) if isinstance(r, Admit)}
    return got


QUEUES = (lq("lq-a"), lq("lq-b"), lq("lq-c"))


def test_admits_workload_from_less_active_localqueue() -> None:
    """TestScheduleForAFS 'admits workload from less active localqueue'."""
    p = policy(cq1(), *QUEUES)
    initial(p, {"lq-a": 8, "lq-b": 2})
    assert schedule(p, ("wl-a1", "lq-a", 8, 0), ("wl-b1", "lq-b", 8, 1)) == {"wl-b1"}


def test_without_afs_classic_admission_ignores_queue_usage() -> None:
    """TestScheduleForAFS 'without AFS: classic admission decision ignores queue usage' (no admissionFairSharing
    in the Configuration: the ClusterQueue's admissionScope is ignored, and said so)."""
    p = policy(cq1(), *QUEUES, afs=None)
    assert p.afs is None
    assert schedule(p, ("wl-a1", "lq-a", 8, 0), ("wl-b1", "lq-b", 8, 1)) == {"wl-a1"}
    assert any("spec.admissionScope (ClusterQueue cq1): ignored" in n for n in p.not_modelled())


def test_admits_one_workload_from_each_localqueue_when_quota_is_limited() -> None:
    """TestScheduleForAFS 'admits one workload from each localqueue when quota is limited': equal usage, wl-a1
    first by creation; its entry penalty then puts lq-b ahead of lq-a's next."""
    p = policy(cq1(), *QUEUES)
    initial(p, {"lq-a": 4, "lq-b": 4})
    got = schedule(p, ("wl-a1", "lq-a", 4, 0), ("wl-a2", "lq-a", 4, 1), ("wl-b1", "lq-b", 4, 2),
                   ("wl-b2", "lq-b", 4, 3))
    assert got == {"wl-a1", "wl-b1"}


def test_schedules_normally_when_queues_have_equal_usage() -> None:
    """TestScheduleForAFS 'schedules normally when queues have equal usage'."""
    p = policy(cq1(), *QUEUES)
    initial(p, {"lq-a": 2, "lq-b": 2, "lq-c": 2})
    got = schedule(p, ("wl-a1", "lq-a", 4, 0), ("wl-b1", "lq-b", 3, 0), ("wl-c1", "lq-c", 1, 0))
    assert got == {"wl-a1", "wl-b1", "wl-c1"}


def test_admits_workload_from_lq_b_with_uninitialized_cache() -> None:
    """TestScheduleForAFS 'admits workload from lq-b with uninitialized cache'."""
    p = policy(cq1(), *QUEUES)
    initial(p, {"lq-a": 8})
    assert schedule(p, ("wl-a1", "lq-a", 8, 0), ("wl-b1", "lq-b", 8, 1)) == {"wl-b1"}


# --- the arithmetic -------------------------------------------------------------------------------------------

def test_an_admission_adds_the_entry_penalty_and_sampling_decays_toward_the_usage() -> None:
    """CalculateEntryPenalty: requests × (1 − 0.5^(sampling/half-life)); CalculateDecayedConsumed every sampling
    interval after the last update."""
    p = policy(cq1(), *QUEUES, afs=AdmissionFairSharing(half_life=60.0, sampling=60.0))
    assert p.afs is not None
    p.submit(workload("w", "lq-a", 2), 0)
    p.cycle(0)
    assert p.afs.usage("default/lq-a") == pytest.approx(2 * 0.5)  # α(60 s, 60 s) = 0.5
    p.cycle(120)  # two samples with 2 cpu in use: 1 → 1.5 → 1.75
    assert p.afs.usage("default/lq-a") == pytest.approx(1.75)
    p.finished("default/w", 150)  # its reconciler runs on the change, which the cache already has: 30 s at 0
    assert p.afs.usage("default/lq-a") == pytest.approx(1.75 * 0.5 ** 0.5)
    p.cycle(200)  # no sample yet: the next is 60 s after the last update
    assert p.afs.usage("default/lq-a") == pytest.approx(1.75 * 0.5 ** 0.5)
    p.cycle(210)
    assert p.afs.usage("default/lq-a") == pytest.approx(1.75 * 0.5 ** 0.5 * 0.5)


def test_weights_divide_and_resource_weights_multiply() -> None:
    afs = AdmissionFairSharing(half_life=60.0, sampling=60.0, weights=(("cpu", 3.0),))
    p = policy(cq1(), lq("lq-a", "2"), lq("lq-b"), afs=afs)
    assert p.afs is not None
    p.afs.queues["default/lq-a"].consumed = {"cpu": 2.0, "memory": 4.0}
    assert p.afs.usage("default/lq-a") == pytest.approx((3 * 2 + 4) / 2)


def test_a_half_life_of_zero_keeps_no_usage() -> None:
    p = policy(cq1(), *QUEUES, afs=AdmissionFairSharing(half_life=0.0, sampling=1.0))
    assert schedule(p, ("a1", "lq-a", 4, 0)) == {"a1"}
    assert p.afs is not None and p.afs.usage("default/lq-a") == 0


def test_preemption_candidates_of_the_busier_localqueue_go_first() -> None:
    """CandidatesOrdering with admission fair sharing: in one ClusterQueue, the workload of the LocalQueue with
    the higher usage is evicted before a lower-priority one of a quieter LocalQueue."""
    p = policy(cq1(preemption={"withinClusterQueue": "LowerPriority"}), *QUEUES,
               afs=AdmissionFairSharing(half_life=3600.0, sampling=3600.0))
    p.submit(workload("a-busy", "lq-a", 4, priority=10), 0)
    p.submit(workload("b-quiet", "lq-b", 4, priority=5, created=1), 0)
    p.cycle(0)
    p.cycle(0)
    assert p.afs is not None
    p.afs.queues["default/lq-a"].consumed = {"cpu": 50.0}
    p._afs_changed("default/lq-a")
    p.submit(workload("c-urgent", "lq-c", 4, priority=100, created=2), 10)
    out = p.cycle(10)
    assert [r.key for r in out if isinstance(r, EvictWorkload)] == ["default/a-busy"]


# --- the Configuration and the ClusterQueue -----------------------------------------------------------------

def test_the_configuration_reads_admission_fair_sharing() -> None:
    config = parse_kueue_config({"apiVersion": V2, "kind": "Configuration", "admissionFairSharing": {
        "usageHalfLifeTime": "168h", "usageSamplingInterval": "5m", "resourceWeights": {"nvidia.com/gpu": 10}}})
    assert config.admission_fair_sharing == AdmissionFairSharing(168 * 3600.0, 300.0, (("nvidia.com/gpu", 10.0),))
    assert config.oracle_fields()["admissionFairSharing"]["usageHalfLifeTime"] == "604800s"
    default = parse_kueue_config({"apiVersion": V2, "kind": "Configuration",
                                  "admissionFairSharing": {"usageHalfLifeTime": "1h"}})
    assert default.admission_fair_sharing is not None and default.admission_fair_sharing.sampling == 300


@pytest.mark.parametrize(("afs", "field"), [
    ({"usageHalfLifeTime": "-1s"}, "admissionFairSharing.usageHalfLifeTime"),
    ({"usageHalfLifeTime": "1h", "usageSamplingInterval": "0s"}, "admissionFairSharing.usageSamplingInterval"),
    ({"usageHalfLifeTime": "soon"}, "admissionFairSharing.usageHalfLifeTime"),
    ({"usageHalfLifeTime": "1h", "resourceWeights": {"cpu": -1}}, "admissionFairSharing.resourceWeights[cpu]"),
    ({"usageHalfLifeTime": "1h", "resourceWeights": {"cpu": "high"}}, "admissionFairSharing.resourceWeights[cpu]"),
], ids=["negative-half-life", "zero-sampling", "not-a-duration", "negative-weight", "weight-not-a-number"])
def test_admission_fair_sharing_kueue_refuses_is_an_error(afs: dict[str, Any], field: str) -> None:
    """pkg/config/validation.go validateAdmissionFairSharing."""
    with pytest.raises(InputError) as info:
        parse_kueue_config({"apiVersion": V2, "kind": "Configuration", "admissionFairSharing": afs})
    assert info.value.field == field


@pytest.mark.parametrize(("scope", "words"), [({}, "Required value"),
                                              ({"admissionMode": "Fairest"}, "unsupported value")])
def test_a_bad_admission_scope_is_an_error(scope: dict[str, Any], words: str) -> None:
    doc = cq1(None)
    doc["spec"]["admissionScope"] = scope
    with pytest.raises(InputError) as info:
        parse_kueue_object(doc, Source("kueue.yaml", 0))
    assert info.value.field == "spec.admissionScope.admissionMode" and words in str(info.value)


def test_localqueue_rows_show_the_usage() -> None:
    p = policy(cq1(), *QUEUES)
    schedule(p, ("a1", "lq-a", 2, 0))
    row = next(r for r in p.queue_rows() if r["kind"] == "LocalQueue" and r["name"] == "default/lq-a")
    assert row["afs_consumed"] == {"cpu": pytest.approx(2 * (1 - 0.5 ** 0.1), abs=1e-6)}
    assert p.not_modelled() == []


# --- through the CLI --------------------------------------------------------------------------------------------

def _cli_manifests(with_afs: bool) -> list[dict[str, Any]]:
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
            "status": {"allocatable": {"cpu": "32", "memory": "64Gi", "pods": "110"}}}
    docs: list[dict[str, Any]] = [node, flavor("default"), cq1(), lq("lq-a"), lq("lq-b")]
    for name, queue, arrival in (("a1", "lq-a", "0s"), ("a2", "lq-a", "10s"), ("b1", "lq-b", "20s")):
        docs.append({"apiVersion": "batch/v1", "kind": "Job", "metadata": {
            "name": name, "namespace": "default", "labels": {"kueue.x-k8s.io/queue-name": queue},
            "annotations": {"phalanx.dev/arrival": arrival, "phalanx.dev/duration": "1h"}},
            "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [
                {"name": "c", "image": "x", "resources": {"requests": {"cpu": "8"}}}]}}}})
    if with_afs:
        docs.append({"apiVersion": V2, "kind": "Configuration",
                     "admissionFairSharing": {"usageHalfLifeTime": "1h", "usageSamplingInterval": "5m"}})
    return docs


def test_the_configuration_among_the_manifests_orders_by_localqueue_usage(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """lq-a ran a1 for an hour: when it ends, lq-b's b1 goes before lq-a's older a2 with admission fair sharing,
    after it without."""
    first: dict[bool, str] = {}
    for with_afs in (False, True):
        path = tmp_path / f"in-{with_afs}.yaml"
        path.write_text(yaml.safe_dump_all(_cli_manifests(with_afs), sort_keys=False), encoding="utf-8")
        assert main(["simulate", str(path), "--profile", "kueue", "-o", "json"]) == 0
        report = json.loads(capsys.readouterr().out)
        waits = {w["name"]: w["admissionWaits"] for w in report["admission"]["workloads"]}
        first[with_afs] = "a2" if waits["Job default/a2"][0] < waits["Job default/b1"][0] else "b1"
        rows = {q["name"]: q for q in report["queues"] if q["kind"] == "LocalQueue"}
        if with_afs:
            assert rows["default/lq-a"]["details"]["afs_usage"] > rows["default/lq-b"]["details"]["afs_usage"] > 0
            assert report["admission"]["notModelled"] == []
        else:
            assert "afs_usage" not in rows["default/lq-a"]["details"]
            [note] = report["admission"]["notModelled"]
            assert note.startswith("spec.admissionScope (ClusterQueue cq1): ignored")
    assert first == {False: "a2", True: "b1"}
