"""The differential suite's generator: seeded, and every instant of a case holds one kind of change, so that
the real scheduler, which sees a step's deletions one at a time, meets them in the order Phalanx does."""

from __future__ import annotations

from collections import Counter
from typing import Any

from phalanx.api.quantity import parse_duration
from phalanx.verify.generator import generate_case


def _instants(manifests: list[dict[str, Any]]) -> tuple[Counter[float], set[float]]:
    """The instants at which pods started on arrival end, and the instants at which objects arrive."""
    ends: Counter[float] = Counter()
    arrivals: set[float] = set()
    for doc in manifests:
        annotations = (doc.get("metadata") or {}).get("annotations") or {}
        arrival = parse_duration(annotations.get("phalanx.dev/arrival", "0s"))
        if arrival:
            arrivals.add(arrival)
        if "phalanx.dev/duration" in annotations:
            ends[arrival + parse_duration(annotations["phalanx.dev/duration"])] += 1
    return ends, arrivals


def test_a_seed_gives_the_same_case() -> None:
    assert generate_case(17) == generate_case(17)
    assert generate_case(17) != generate_case(18)


def test_no_two_pods_end_together_and_none_ends_as_others_arrive() -> None:
    for seed in range(500):
        ends, arrivals = _instants(generate_case(seed).manifests)
        assert all(count == 1 for count in ends.values()), (seed, ends)
        assert not set(ends) & arrivals, (seed, sorted(ends), sorted(arrivals))
