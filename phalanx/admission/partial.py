"""Kueue's partial admission search (pkg/scheduler/flavorassigner/podset_reducer.go, PodSetReducer): walk every
pod set down from its count toward its minCount together, and find the largest counts that pass a test."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

R = TypeVar("R")


def search_counts(counts: Sequence[int], minimums: Sequence[int | None],
                  fits: Callable[[list[int]], R | None]) -> R | None:
    """Index i of 0…Σdelta (delta: a pod set's count less its minCount, 0 without one) takes
    `count - delta·i/Σdelta` from every pod set. A binary search (Go's sort.Search) finds the first index whose
    counts `fits` (a result, or None); that result counts only if the search ended on an index that passed, as
    PodSetReducer.Search says. None without any pod set that may shrink."""
    deltas = [count - (low if low is not None else count) for count, low in zip(counts, minimums, strict=True)]
    total = sum(deltas)
    if total <= 0:
        return None
    good_index, good = 0, None
    low, high = 0, total + 1
    while low < high:
        middle = (low + high) // 2
        result = fits([count - delta * middle // total for count, delta in zip(counts, deltas, strict=True)])
        if result is not None:
            good_index, good = middle, result
            high = middle
        else:
            low = middle + 1
    return good if low == good_index else None
