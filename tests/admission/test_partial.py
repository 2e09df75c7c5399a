"""Kueue's partial admission: the search restated from Kueue's
pkg/scheduler/flavorassigner/podset_reducer_test.go (TestSearch), and the admissions from
pkg/scheduler/scheduler_test.go (TestSchedule's "partial admission …" cases), each named in its test."""

from __future__ import annotations

import pytest

from phalanx.admission.base import Admit, EvictWorkload, PodSet, QueuedWorkload
from phalanx.admission.kueue import KueueAdmission
from phalanx.admission.partial import search_counts
from tests.admission.kueue_helpers import cluster_queue, flavor, load, local_queue, quotas

# TestSearch: name -> (pod sets as (count, minCount), countLimit, wantFound, wantCount)
SEARCH_CASES: dict[str, tuple[list[tuple[int, int | None]], int, bool, int]] = {
    "empty": ([], 10, False, 0),
    "partial not available": ([(1, None), (2, 2)], 2, False, 0),
    "partial available": ([(5, 3), (5, 4), (5, 1), (5, 2)], 15, True, 15),
    "one partial available": ([(5, 3), (5, None), (5, None), (5, None)], 19, True, 19),
    "to min": ([(5, 3), (5, 4), (5, 1), (5, 2)], 10, True, 10),
    "to max": ([(5, 3), (5, 4), (5, 1), (5, 2)], 20, True, 20),
    "no overflow": ([(150_000, 1)] * 8, 150_000, True, 150_000),
    "max pods on 1.27": ([(150_000, 1), *[(1, None)] * 7], 150_000, True, 150_000),
    "podset with replica count 0": ([(0, 0)], 0, False, 0),
}


@pytest.mark.parametrize("name", list(SEARCH_CASES))
def test_search_as_podset_reducer_test_says(name: str) -> None:
    """Restates podset_reducer_test.go TestSearch: the fits function passes while the counts' total is within
    countLimit; the search returns that total."""
    pod_sets, limit, want_found, want_count = SEARCH_CASES[name]
    found = search_counts([c for c, _ in pod_sets], [m for _, m in pod_sets],
                          lambda counts: sum(counts) if sum(counts) <= limit else None)
    assert (found is not None) == want_found
    assert (found or 0) == want_count


def _sales() -> KueueAdmission:
    """TestSchedule's sales: 50 cpu of flavor default, namespace sales, LocalQueue main (its borrowingLimit 0 left
    out: it has no cohort, and Kueue's webhook, which the unit test skips, refuses one there)."""
    return load(flavor("default"), cluster_queue("sales", [quotas(["cpu"], [("default", [(50, None, None)])])]),
                local_queue("main", "sales", "sales"))


def _eng_beta() -> KueueAdmission:
    """TestSchedule's eng-beta: preemption withinClusterQueue LowerPriority, 20 example.com/gpu of model-a (alone: its
    cohort lends it no gpu)."""
    beta = cluster_queue("eng-beta", [quotas(["example.com/gpu"], [("model-a", [(20, None, None)])])],
                         preemption={"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"})
    return load(flavor("model-a"), beta, local_queue("main", "eng-beta", "eng-beta"), passes=1)


def _wl(name: str, namespace: str, *pod_sets: PodSet, priority: int = 0) -> QueuedWorkload:
    return QueuedWorkload(key=f"{namespace}/{name}", namespace=namespace, queue="main", priority=priority,
                          created=0.0, pod_sets=pod_sets)


def test_partial_admission_single_variable_pod_set() -> None:
    """Restates TestSchedule 'partial admission single variable pod set': 50 pods of 2 cpu, minCount 20, in a
    50-cpu ClusterQueue: admitted with 25."""
    policy = _sales()
    policy.submit(_wl("new", "sales", PodSet("one", 50, {"cpu": 2000}, 20)), 0)
    got = [r for r in policy.cycle(0) if isinstance(r, Admit)]
    assert [(r.key, dict(r.counts)) for r in got] == [("sales/new", {"one": 25})]


def test_partial_admission_multiple_variable_pod_sets() -> None:
    """Restates TestSchedule 'partial admission multiple variable pod sets': one (20, fixed), two (30, min 10),
    three (15, min 5), 1 cpu each, in 50 cpu: admitted with 20, 20 and 10."""
    policy = _sales()
    policy.submit(_wl("new", "sales", PodSet("one", 20, {"cpu": 1000}), PodSet("two", 30, {"cpu": 1000}, 10),
                      PodSet("three", 15, {"cpu": 1000}, 5)), 0)
    got = [r for r in policy.cycle(0) if isinstance(r, Admit)]
    assert [(r.key, dict(r.counts)) for r in got] == [("sales/new", {"two": 20, "three": 10})]


@pytest.mark.parametrize(("count", "name"), [
    (20, "partial admission single variable pod set, preempt first"),
    (30, "partial admission single variable pod set, preempt with partial admission")])
def test_partial_admission_preempts_when_only_that_makes_room(count: int, name: str) -> None:
    """Restates TestSchedule '<name>': old (10 gpus, priority -4) holds half of eng-beta's 20; new (`count`
    gpus, minCount 10, priority 4) preempts old rather than take the 10 free, whole (20) or reduced to 20 (30
    can never fit), and waits for the eviction."""
    policy = _eng_beta()
    policy.submit(_wl("old", "eng-beta", PodSet("one", 10, {"example.com/gpu": 1}), priority=-4), 0)
    assert [r.key for r in policy.cycle(0)] == ["eng-beta/old"]
    policy.submit(_wl("new", "eng-beta", PodSet("one", count, {"example.com/gpu": 1}, 10), priority=4), 1)
    results = policy.cycle(1)
    assert [(r.key, r.reason) for r in results if isinstance(r, EvictWorkload)] == [("eng-beta/old", "InClusterQueue")]
    assert not [r for r in results if isinstance(r, Admit) and r.key == "eng-beta/new"]
    policy.finished("eng-beta/old", 2)
    again = [r for r in policy.cycle(2) if isinstance(r, Admit)]
    assert [(r.key, dict(r.counts)) for r in again] == [("eng-beta/new", {} if count == 20 else {"one": 20})]
