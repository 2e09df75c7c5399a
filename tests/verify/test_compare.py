"""The comparison itself, without a control plane: what counts as agreement, ties, the replay timeline."""

from __future__ import annotations

from typing import Any

from phalanx.api.objects import Source
from phalanx.scheduler.profiles import Profile, builtin
from phalanx.verify.compare import (
    Verdict,
    _compare,
    _pair_interchangeable,
    normalise_message,
    scheduler_config,
    timeline,
)
from phalanx.verify.oracle import RealOutcome, RealPod, pod_key, prepare


def _pod(name: str, node: str | None, *, phase: str = "Running", bound: float | None = 0.0,
         group: str | None = None, preempted: int = 0, message: str | None = None) -> dict[str, Any]:
    return {"name": name, "node": node, "phase": phase, "boundAt": bound, "podGroup": group,
            "preemptedCount": preempted, "message": message, "finishedAt": None}


def _verdict(pods: list[dict[str, Any]], real: dict[str, RealPod], ties: dict[str, tuple[str, ...]] | None = None,
             prebound: set[str] | None = None) -> Verdict:
    verdict = Verdict("default")
    _compare(verdict, {"pods": pods, "podGroups": []}, RealOutcome(pods=real), ties or {}, prebound or set())
    return verdict


def test_same_decisions_agree() -> None:
    verdict = _verdict([_pod("a/p", "n1"), _pod("a/q", None, phase="Pending", bound=None, message="0/2 nodes")],
                       {"a/p": RealPod("a/p", node="n1", bound_at=0.0), "a/q": RealPod("a/q", message="0/2 nodes")})
    assert verdict.agrees and not verdict.differences
    assert verdict.total["outcome"] == 2 and verdict.total["node"] == 1


def test_a_jobs_alike_pods_pair_by_time_before_node() -> None:
    # Kueue differential seed 22: a partially admitted Job runs one pod after the other; the first ran on another
    # node than Phalanx's (the scheduler's choice), which must not swap the two pods' times.
    mine = [_pod("a/j-0", "n1", bound=698.0), _pod("a/j-1", "n2", bound=1492.0)]
    real = RealOutcome(pods={"a/j-0": RealPod("a/j-0", node="n1", bound_at=1492.0),
                             "a/j-1": RealPod("a/j-1", node="n3", bound_at=698.0)})
    _pair_interchangeable({"pods": mine}, real, {"a/j": ["a/j-0", "a/j-1"]})
    assert real.pods["a/j-0"].bound_at == 698.0 and real.pods["a/j-1"].bound_at == 1492.0
    verdict = Verdict("kueue")
    _compare(verdict, {"pods": mine, "podGroups": []}, real, {}, set())
    assert [(d.category, d.name) for d in verdict.differences] == [("node", "a/j-0"), ("node", "a/j-1")]


def _group_verdict(mine: str, real: dict[str, str]) -> Verdict:
    verdict = Verdict("gang")
    report = {"pods": [_pod("a/m-0", "n1", group="a/g")],
              "podGroups": [{"name": "a/g", "conditions": [{"type": "PodGroupInitiallyScheduled", "status": mine}]}]}
    outcome = RealOutcome(pods={"a/m-0": RealPod("a/m-0", node="n1", bound_at=0.0)},
                          groups={"a/g": {"PodGroupInitiallyScheduled": real}})
    _compare(verdict, report, outcome, {}, set())
    return verdict


def test_a_true_overwritten_by_a_retry_reads_as_true_with_a_note() -> None:
    """v1.37.2's updatePodGroupCondition race: the oracle marks a group whose members the real scheduler bound but
    whose condition stayed False; the comparison reads it as True and says so; a plain False still differs."""
    raced = _group_verdict("True", {"status": "False", "overwritten": "True"})
    assert raced.agrees and any("overwrote the True" in note for note in raced.notes)
    assert not _group_verdict("False", {"status": "False", "overwritten": "True"}).agrees
    plain = _group_verdict("True", {"status": "False"})
    assert not plain.agrees and not plain.notes


def test_a_pod_bound_on_one_side_only_differs() -> None:
    verdict = _verdict([_pod("a/p", "n1")], {"a/p": RealPod("a/p")})
    assert not verdict.agrees
    assert [(d.category, d.phalanx, d.real) for d in verdict.differences] == [("outcome", "bound", "pending")]


def test_a_node_among_the_equally_best_counts_as_a_tie() -> None:
    real = {"a/p": RealPod("a/p", node="n2", bound_at=0.0)}
    tied = _verdict([_pod("a/p", "n1")], real, ties={"a/p": ("n1", "n2")})
    assert tied.agrees and tied.ties == 1
    wrong = _verdict([_pod("a/p", "n1")], real, ties={"a/p": ("n1",)})
    assert not wrong.agrees and wrong.differences[0].category == "node"


def test_pods_bound_in_the_manifests_are_not_decisions() -> None:
    verdict = _verdict([_pod("a/p", "n1", bound=-300.0)], {"a/p": RealPod("a/p", node="n1", bound_at=0.0)},
                       prebound={"a/p"})
    assert verdict.agrees and verdict.total["boundAt"] == 0


def test_victims_are_compared_and_their_later_life_is_not() -> None:
    verdict = _verdict([_pod("a/v", "n1", preempted=1)], {"a/v": RealPod("a/v", preempted=True)})
    assert verdict.agrees and verdict.total["victims"] == 1 and verdict.total["outcome"] == 0
    missed = _verdict([_pod("a/v", "n1")], {"a/v": RealPod("a/v", preempted=True)})
    assert [d.category for d in missed.differences] == ["victims"]


def test_messages_compare_without_the_preemption_tail() -> None:
    real = "0/4 nodes are available: 4 Insufficient cpu. preemption: 0/4 nodes are available: 4 No preemption " \
           "victims found for incoming pod."
    assert normalise_message(real) == normalise_message("0/4 nodes are available: 4 Insufficient cpu.")


def test_timeline_orders_creations_as_phalanx_tried_them() -> None:
    docs = [(Source("f", 1), {"kind": "Pod", "metadata": {"name": "low"}}),
            (Source("f", 2), {"kind": "Pod", "metadata": {"name": "high"}}),
            (Source("f", 3), {"kind": "Pod", "metadata": {"name": "late", "annotations":
                                                           {"phalanx.dev/arrival": "30s"}}}),
            (Source("f", 4), {"kind": "Pod", "metadata": {"name": "w-0"}})]
    report = {"endTime": 40.0, "pods": [
        {**_pod("default/w-0", None, group="default/g"), "name": "default/w-0"},
        {**_pod("default/done", "n"), "phase": "Succeeded", "finishedAt": 40.0}]}
    steps = timeline(docs, report, [(0.0, "pod:default/high"), (0.0, "pod:default/low"), (0.0, "group:default/g"),
                                    (5.0, "pod:default/low"), (30.0, "pod:default/late")])
    assert [s.time for s in steps] == [0.0, 5.0, 30.0, 40.0]
    assert steps[0].units == (("default/high",), ("default/low",), ("default/w-0",))
    assert steps[1].units == ()  # a retry is a step, not a creation
    assert [doc["metadata"]["name"] for _, doc in steps[2].create] == ["late"]
    assert steps[3].finish == ("default/done",)


def test_a_group_tried_again_orders_its_late_member_and_its_late_podgroup() -> None:
    late = {"phalanx.dev/arrival": "20s"}
    docs = [(Source("f", 1), {"kind": "Pod", "metadata": {"name": "w-0"}}),
            (Source("f", 2), {"kind": "Pod", "metadata": {"name": "bare", "annotations": late}}),
            (Source("f", 3), {"kind": "Pod", "metadata": {"name": "w-1", "annotations": late}}),
            (Source("f", 4), {"kind": "PodGroup", "metadata": {"name": "h", "annotations": late}})]
    report = {"endTime": 20.0, "pods": [
        {**_pod("default/w-0", "n", group="default/g"), "name": "default/w-0"},
        {**_pod("default/w-1", "n", group="default/g"), "name": "default/w-1"},
        {**_pod("default/v-0", "n", group="default/h"), "name": "default/v-0"}]}
    steps = timeline(docs, report, [(0.0, "group:default/g"), (20.0, "group:default/g"), (20.0, "pod:default/bare"),
                                    (20.0, "group:default/h"), (20.0, "group:default/g")])
    # g was first tried at 0; at 20 it is tried again, before the bare pod, for its late member w-1
    assert steps[1].units == (("default/w-0", "default/w-1"), ("default/bare",), ("default/v-0",))
    # h's PodGroup appears at 20, after its member: the oracle creates it in its unit's turn
    assert steps[1].unit_groups == ("group:default/g", "", "group:default/h")


def test_the_real_scheduler_is_configured_as_the_profile() -> None:
    assert "plugins" not in scheduler_config(builtin("default"))["profiles"][0]
    packing = Profile("p", scores={"NodeResourcesFit": 1, "TaintToleration": 3, "NodeAffinity": 2,
                                   "PodTopologySpread": 2, "InterPodAffinity": 2},
                      plugin_args={"NodeResourcesFit": {"scoringStrategy": {"type": "MostAllocated"}}})
    entry = scheduler_config(packing)["profiles"][0]
    assert entry["plugins"]["score"]["disabled"] == [{"name": "NodeResourcesBalancedAllocation"}]
    assert entry["pluginConfig"] == [{"name": "NodeResourcesFit",
                                      "args": {"scoringStrategy": {"type": "MostAllocated"}}}]


def test_job_pods_are_named_by_completion_index() -> None:
    pod = {"metadata": {"name": "train-1-x7k2p", "namespace": "ml", "labels":
                        {"batch.kubernetes.io/job-completion-index": "1"},
                        "ownerReferences": [{"kind": "Job", "name": "train"}]}}
    assert pod_key(pod) == "ml/train-1"
    assert pod_key({"metadata": {"name": "web"}}) == "default/web"


def test_nodes_are_sent_ready_with_pods_capacity() -> None:
    node = prepare({"kind": "Node", "metadata": {"name": "n", "uid": "x"},
                    "status": {"allocatable": {"cpu": "4"}}}, Source("f", 1))
    assert node["status"]["allocatable"] == {"cpu": "4", "pods": "110"}
    assert node["status"]["conditions"][0]["type"] == "Ready" and "uid" not in node["metadata"]
    pod = prepare({"kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": []},
                   "status": {"phase": "Running"}}, Source("f", 2))
    assert "status" not in pod


def test_pods_carry_the_replays_finalizer_so_the_oracle_ends_their_deletion() -> None:
    # A victim deleted with no grace period stays terminating until the replay lets it go, after the pods of
    # its instant were created (as Phalanx evicts after every pod arriving at the instant was tried).
    pod = prepare({"kind": "Pod", "metadata": {"name": "p", "finalizers": ["example.com/keep"]},
                   "spec": {"containers": []}}, Source("f", 1))
    assert pod["metadata"]["finalizers"] == ["example.com/keep", "phalanx.dev/replay"]
    assert prepare(pod, Source("f", 1))["metadata"]["finalizers"] == ["example.com/keep", "phalanx.dev/replay"]
    node = prepare({"kind": "Node", "metadata": {"name": "n"}}, Source("f", 2))
    assert "finalizers" not in node["metadata"]
