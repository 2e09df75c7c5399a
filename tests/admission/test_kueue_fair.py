"""Kueue's fair sharing (phalanx.admission.kueue_fair, kueue_config): the Configuration read as Kueue v0.17.0 reads
it, dominant resource shares, the admission tournament and fair-sharing preemption; through the CLI, the
Configuration among the manifests (bare or in its ConfigMap) and its bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from phalanx.admission.base import Admit, EvictWorkload
from phalanx.admission.kueue import KueueAdmission, load_kueue
from phalanx.admission.kueue_config import KueueConfig, parse_kueue_config
from phalanx.admission.kueue_fair import compare, share
from phalanx.api.objects import Source
from phalanx.cli import main
from phalanx.errors import InputError
from tests.admission.kueue_helpers import cpu_cq, flavor, local_queue, workload

BOTH = ("LessThanOrEqualToFinalShare", "LessThanInitialShare")
V2 = "config.kueue.x-k8s.io/v1beta2"


def policy(*docs: dict[str, Any], fair: tuple[str, ...] | None = BOTH) -> KueueAdmission:
    all_docs = [*docs, flavor("default")]
    all_docs += [local_queue(d["metadata"]["name"], d["metadata"]["name"]) for d in docs if d["kind"] == "ClusterQueue"]
    return load_kueue([(d, Source("kueue.yaml", i)) for i, d in enumerate(all_docs)], None, KueueConfig(fair))


def admitted(results: list[Admit | EvictWorkload]) -> list[str]:
    return [r.key for r in results if isinstance(r, Admit)]


def evicted(results: list[Admit | EvictWorkload]) -> dict[str, str]:
    return {r.key: r.reason for r in results if isinstance(r, EvictWorkload)}


# --- the Configuration ----------------------------------------------------------------------------------------

def test_v1beta2_fair_sharing_is_on_when_present() -> None:
    config = parse_kueue_config({"apiVersion": V2, "kind": "Configuration",
                                 "fairSharing": {"preemptionStrategies": ["LessThanInitialShare"]}})
    assert config.fair_sharing == ("LessThanInitialShare",)
    assert config.oracle_fields() == {"fairSharing": {"preemptionStrategies": ["LessThanInitialShare"]}}
    assert parse_kueue_config({"apiVersion": V2, "kind": "Configuration"}).fair_sharing is None


def test_v1beta1_needs_enable_and_defaults_the_strategies() -> None:
    """apis/config/v1beta1 defaults.go: enable with no strategies gets both; enable false is off."""
    v1 = "config.kueue.x-k8s.io/v1beta1"
    assert parse_kueue_config({"apiVersion": v1, "kind": "Configuration",
                               "fairSharing": {"enable": True}}).fair_sharing == BOTH
    assert parse_kueue_config({"apiVersion": v1, "kind": "Configuration", "fairSharing": {
        "enable": False, "preemptionStrategies": ["LessThanInitialShare"]}}).fair_sharing is None


def test_the_configmap_holds_it_under_its_key() -> None:
    inner = yaml.safe_dump({"apiVersion": V2, "kind": "Configuration", "fairSharing": {
        "preemptionStrategies": list(BOTH)}, "waitForPodsReady": {"timeout": "5m"}})
    config = parse_kueue_config({"apiVersion": "v1", "kind": "ConfigMap",
                                 "metadata": {"name": "kueue-manager-config", "namespace": "kueue-system"},
                                 "data": {"controller_manager_config.yaml": inner}})
    assert config.fair_sharing == BOTH
    assert config.name == "ConfigMap kueue-system/kueue-manager-config"
    assert any(n.startswith("waitForPodsReady") for n in config.not_modelled)


@pytest.mark.parametrize(("fair", "field", "words"), [
    ({"preemptionStrategies": []}, "fairSharing.preemptionStrategies", "Required value"),
    ({}, "fairSharing.preemptionStrategies", "Required value"),
    ({"preemptionStrategies": ["LessThanInitialShare", "LessThanOrEqualToFinalShare"]},
     "fairSharing.preemptionStrategies", "Unsupported value"),
    ({"preemptionStrategies": ["Fastest"]}, "fairSharing.preemptionStrategies", "Unsupported value"),
    ({"preemptionStrategies": "LessThanInitialShare"}, "fairSharing.preemptionStrategies", "list"),
], ids=["empty", "missing", "reversed", "unknown", "not-a-list"])
def test_strategies_kueue_refuses_are_errors(fair: dict[str, Any], field: str, words: str) -> None:
    """pkg/config/validation.go validateFairSharing: one of three lists, required."""
    with pytest.raises(InputError) as info:
        parse_kueue_config({"apiVersion": V2, "kind": "Configuration", "fairSharing": fair})
    assert info.value.field == field and words in str(info.value)


def test_a_configmap_with_broken_yaml_names_its_key() -> None:
    with pytest.raises(InputError) as info:
        parse_kueue_config({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kueue-manager-config"},
                            "data": {"controller_manager_config.yaml": "fairSharing: [unclosed"}})
    assert info.value.field == "data[controller_manager_config.yaml]"
    assert info.value.obj == "ConfigMap kueue-manager-config"


# --- shares ---------------------------------------------------------------------------------------------------

def test_share_is_what_is_borrowed_per_mille_of_what_the_parent_lends_over_the_weight() -> None:
    p = policy(cpu_cq("a", 2, "org"), cpu_cq("b", 2, "org", fairSharing={"weight": "2"}), cpu_cq("c", 4, "org"))
    p.tree.add("a", {("default", "cpu"): 5000})  # borrows 3 of the cohort's 8
    p.tree.add("b", {("default", "cpu"): 3000})  # borrows 1, weight 2
    a, b, c = (share(p.tree.cqs[n]) for n in "abc")
    assert a.precise() == pytest.approx(375.0) and a.resource == "cpu" and a.borrowing
    assert b.precise() == pytest.approx(62.5)
    assert c.precise() == 0 and not c.borrowing
    assert compare(a, b) == 1 and compare(c, b) == -1
    assert next(r for r in p.queue_rows() if r["name"] == "a")["weighted_share"] == 375


def test_a_weight_of_zero_that_borrows_sorts_last() -> None:
    p = policy(cpu_cq("a", 2, "org", fairSharing={"weight": "0"}), cpu_cq("b", 2, "org"))
    p.tree.add("a", {("default", "cpu"): 2500})
    p.tree.add("b", {("default", "cpu"): 4000})
    assert compare(share(p.tree.cqs["a"]), share(p.tree.cqs["b"])) == 1
    assert next(r for r in p.queue_rows() if r["name"] == "a")["weighted_share"] is None


# --- admission order ------------------------------------------------------------------------------------------

def borrowing_pair(fair: tuple[str, ...] | None) -> list[str]:
    """Cohort org: a (2 cpu), b (none), c (6, idle). a fills the cohort at 0; a's second head (created at 10) and
    b's (at 20) wait; one of a's workloads ends. Classically both heads borrow alike, so the older goes first;
    with fair sharing b's share with its head (1 of 8) is below a's (6 of 8)."""
    p = policy(cpu_cq("a", 2, "org"), cpu_cq("b", 0, "org"), cpu_cq("c", 6, "org"), fair=fair)
    for i in range(8):
        p.submit(workload(f"a{i}", "a", 1), 0)
    assert len(admitted(p.cycle(0))) == 8
    p.submit(workload("a-late", "a", 1, created=10), 10)
    p.submit(workload("b-late", "b", 1, created=20), 20)
    assert admitted(p.cycle(20)) == []
    p.finished("default/a0", 3600)
    return admitted(p.cycle(3600))


def test_fair_sharing_admits_the_lower_share_first() -> None:
    assert borrowing_pair(None) == ["default/a-late"]
    assert borrowing_pair(BOTH) == ["default/b-late"]


def test_a_head_that_needs_not_borrow_wins_the_tournament() -> None:
    """FairSharingPrioritizeNonBorrowing: a head within its subtree's quota first, whatever the shares."""
    p = policy(cpu_cq("a", 4, "org"), cpu_cq("b", 1, "org"), cpu_cq("c", 3, "org"))
    p.submit(workload("a0", "a", 4), 0)
    p.submit(workload("c0", "c", 3), 0)
    assert sorted(admitted(p.cycle(0))) == ["default/a0", "default/c0"]
    p.submit(workload("a1", "a", 1, created=1), 1)
    p.submit(workload("b0", "b", 1, priority=-5, created=2), 2)
    assert admitted(p.cycle(2)) == ["default/b0"]  # 1 cpu left: b's own, though a asked first


# --- preemption -----------------------------------------------------------------------------------------------

def test_the_most_borrowing_queue_gives_back_first() -> None:
    """Cohort of three 3-cpu queues, preemption Any: a borrows 2, b borrows 1; c's 3-cpu workload within its
    nominal reclaims (FairSharingPreemptWithinNominal) from the higher share first: a's newest, then more."""
    reclaim = {"reclaimWithinCohort": "Any", "withinClusterQueue": "Never"}
    p = policy(cpu_cq("a", 3, "org", preemption=reclaim), cpu_cq("b", 3, "org", preemption=reclaim),
               cpu_cq("c", 3, "org", preemption=reclaim))
    for i in range(5):
        p.submit(workload(f"a{i}", "a", 1), 0)
    for i in range(4):
        p.submit(workload(f"b{i}", "b", 1), 0)
    assert len(admitted(p.cycle(0))) == 9
    p.submit(workload("c0", "c", 3, created=5), 5)
    out = p.cycle(5)
    victims = evicted(out)
    assert set(victims.values()) == {"InCohortReclamation"}
    assert len(victims) == 3
    assert sum(k.startswith("default/a") for k in victims) == 2  # a's share drops to b's, then they alternate


def two_borrowers(a_running: int, b_running: int) -> KueueAdmission:
    """a and b (2 cpu each, reclaim Any) and c (4, idle) in cohort org, LessThanOrEqualToFinalShare only; a and b
    run that many 1-cpu workloads."""
    reclaim = {"reclaimWithinCohort": "Any", "withinClusterQueue": "Never"}
    p = policy(cpu_cq("a", 2, "org", preemption=reclaim), cpu_cq("b", 2, "org", preemption=reclaim),
               cpu_cq("c", 4, "org"), fair=("LessThanOrEqualToFinalShare",))
    for queue, count in (("a", a_running), ("b", b_running)):
        for i in range(count):
            p.submit(workload(f"{queue}{i}", queue, 1), 0)
    assert len(admitted(p.cycle(0))) == a_running + b_running
    return p


def test_fair_sharing_preempts_a_borrower_only_while_the_preemptor_stays_below_it() -> None:
    """Both borrow; LessThanOrEqualToFinalShare: b (borrowing with its new workload) may take from a only if its
    share is at most a's after the removal."""
    p = two_borrowers(5, 3)
    p.submit(workload("b-big", "b", 2, created=5), 5)
    # b with b-big borrows 3 (375); a borrows 3 (375), after giving one back 2 (250): refused. Nothing fits.
    assert evicted(p.cycle(5)) == {}
    p = two_borrowers(6, 2)
    p.submit(workload("b-one", "b", 1, created=5), 5)
    # b would borrow 1 (125); a borrows 4 (500) and 3 (375) without one: one of a's goes.
    assert evicted(p.cycle(5)) == {"default/a5": "InCohortFairSharing"}


# --- through the CLI --------------------------------------------------------------------------------------------

def _manifests(config: dict[str, Any] | None) -> list[dict[str, Any]]:
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
            "status": {"allocatable": {"cpu": "32", "memory": "64Gi", "pods": "110"}}}
    docs: list[dict[str, Any]] = [node, flavor("default"), cpu_cq("a", 2, "org"), cpu_cq("b", 0, "org"),
                                  cpu_cq("c", 6, "org"), local_queue("a", "a"), local_queue("b", "b")]
    for i, (queue, arrival, duration) in enumerate([*(("a", "0s", f"{3600 + i}s") for i in range(8)),
                                                    ("a", "10s", "1h"), ("b", "20s", "1h")]):
        docs.append({"apiVersion": "batch/v1", "kind": "Job", "metadata": {
            "name": f"{queue}-{i}", "namespace": "default", "labels": {"kueue.x-k8s.io/queue-name": queue},
            "annotations": {"phalanx.dev/arrival": arrival, "phalanx.dev/duration": duration}},
            "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [
                {"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}]}}}})
    return docs + ([config] if config else [])


def _admitted_at(tmp_path: Path, capsys: pytest.CaptureFixture[str], docs: list[dict[str, Any]]) -> dict[str, Any]:
    path = tmp_path / "in.yaml"
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False), encoding="utf-8")
    assert main(["simulate", str(path), "--profile", "kueue", "-o", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    arrival = {"Job default/a-8": 10, "Job default/b-9": 20}
    return {w["name"]: arrival.get(w["name"], 0) + w["admissionWaits"][0] for w in report["admission"]["workloads"]}


def test_the_configuration_among_the_manifests_turns_fair_sharing_on(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    classical = _admitted_at(tmp_path, capsys, _manifests(None))
    assert classical["Job default/a-8"] == 3600 and classical["Job default/b-9"] == 3601
    config = {"apiVersion": V2, "kind": "Configuration", "fairSharing": {"preemptionStrategies": list(BOTH)}}
    fair = _admitted_at(tmp_path, capsys, _manifests(config))
    assert fair["Job default/b-9"] == 3600 and fair["Job default/a-8"] == 3601
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kueue-manager-config",
                                                                       "namespace": "kueue-system"},
                  "data": {"controller_manager_config.yaml": yaml.safe_dump(config)}}
    assert _admitted_at(tmp_path, capsys, _manifests(config_map)) == fair


def test_a_bad_configuration_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "in.yaml"
    bad = {"apiVersion": V2, "kind": "Configuration", "metadata": {"name": "kueue"},
           "fairSharing": {"preemptionStrategies": ["LessThanInitialShare", "LessThanInitialShare"]}}
    path.write_text(yaml.safe_dump_all(_manifests(bad), sort_keys=False), encoding="utf-8")
    assert main(["simulate", str(path), "--profile", "kueue"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert str(path) in err and "Configuration kueue" in err and "fairSharing.preemptionStrategies" in err


def test_two_configurations_are_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "in.yaml"
    config = {"apiVersion": V2, "kind": "Configuration", "fairSharing": {"preemptionStrategies": list(BOTH)}}
    path.write_text(yaml.safe_dump_all([*_manifests(config), config], sort_keys=False), encoding="utf-8")
    assert main(["simulate", str(path), "--profile", "kueue"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "a second Kueue Configuration" in err


def test_weights_without_fair_sharing_are_named_as_ignored() -> None:
    p = policy(cpu_cq("a", 2, "org", fairSharing={"weight": "2"}), cpu_cq("b", 2, "org"), fair=None)
    [note] = p.not_modelled()
    assert "ignored" in note and "ClusterQueue a" in note
    assert policy(cpu_cq("a", 2, "org", fairSharing={"weight": "2"}), cpu_cq("b", 2, "org")).not_modelled() == []
