"""`run_suite` without a control plane: a disagreeing case is replayed once more, and only one that disagrees
twice counts (the differential suites' thresholds)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from tests.verify.differential import ShardResult, run_suite


def _never(seeds: Sequence[int]) -> ShardResult:
    raise AssertionError("one plane: nothing runs elsewhere")


def test_a_case_that_agrees_when_replayed_again_is_timing_not_a_difference() -> None:
    calls: list[list[int]] = []

    def here(seeds: Sequence[int]) -> ShardResult:
        calls.append(list(seeds))
        result = ShardResult()
        result.agree["outcome"] += len(seeds)
        result.total["outcome"] += len(seeds)
        result.disagreeing[2] = ["outcome default/p: 'bound' vs 'pending'"]  # every time
        if len(calls) == 1:
            result.disagreeing[1] = ["victims default/q: True vs False"]  # the first time only
        return result

    with pytest.warns(UserWarning, match=r"1 disagreeing on two replays: \[2\], 1 on one only: \[1\]") as said:
        result = run_suite("cases", 4, 1, here, _never)
    assert calls == [[0, 1, 2, 3], [1, 2]]
    assert result.disagreeing == {2: ["outcome default/p: 'bound' vs 'pending'"]}
    assert result.timing == {1: ["victims default/q: True vs False"]}
    assert result.total["outcome"] == 4  # the first replay's counts
    assert "seed 1 (agreed when replayed again): victims default/q" in str(said[0].message)


def test_no_second_replay_when_every_case_agrees() -> None:
    calls: list[list[int]] = []

    def here(seeds: Sequence[int]) -> ShardResult:
        calls.append(list(seeds))
        return ShardResult()

    with pytest.warns(UserWarning, match="0 disagreeing on two replays"):
        result = run_suite("cases", 3, 1, here, _never)
    assert calls == [[0, 1, 2]] and not result.disagreeing and not result.timing


def test_a_case_whose_differences_do_not_count_is_not_replayed_again() -> None:
    calls: list[list[int]] = []

    def here(seeds: Sequence[int]) -> ShardResult:
        calls.append(list(seeds))
        result = ShardResult()
        result.disagreeing[0] = ["node default/p-0: 'node-1' vs 'node-2'"]
        result.disagreeing[1] = ["admission Job default/j: (True, 0.0, 0) vs (False, None, 0)"]
        return result

    with pytest.warns(UserWarning, match=r"2 disagreeing on two replays: \[0, 1\]"):
        result = run_suite("cases", 2, 1, here, _never,
                           counts=lambda wrong: any(not w.startswith("node ") for w in wrong))
    assert calls == [[0, 1], [1]]  # the node-only case stays as first replayed, named, not counted again
    assert set(result.disagreeing) == {0, 1} and not result.timing
