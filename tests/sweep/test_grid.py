"""Loads and seeds of a grid: bounded before anything is spelled out (`--seeds 0-99999999999` made a list of
100 billion seeds; `--load 1e300` cloned pods without end)."""

from __future__ import annotations

import pytest

from phalanx.errors import InputError
from phalanx.sweep.grid import MAX_LOAD, MAX_SEED, MAX_SEEDS, load_factor, parse_loads, seed_list


@pytest.mark.parametrize("text", ["nan", "inf", "-inf", "0", "-1", "1e300", "10.000001", "x", "9" * 5000])
def test_loads_out_of_range(text: str) -> None:
    with pytest.raises(InputError, match=r"^--load: "):
        parse_loads(f"1.3,{text}")


def test_loads_within_range() -> None:
    assert parse_loads("0.001, 1.3,10") == [0.001, 1.3, MAX_LOAD]
    assert load_factor("1") == 1.0


@pytest.mark.parametrize(("text", "problem"), [
    ("0-99999999999", f"names more than {MAX_SEEDS} seeds"),
    ("0-9999,10000-10000,5", f"names more than {MAX_SEEDS} seeds"),
    ("٣-٩٩٩٩٩٩٩٩٩٩٩٩", f"names more than {MAX_SEEDS} seeds"),  # int() reads any decimal digits
    (str(MAX_SEED + 1), f"a seed is at most {MAX_SEED}"),
    ("1-" + "9" * 30, f"a seed is at most {MAX_SEED}"),
    ("-1", "invalid seed list"),
    ("5-1", "invalid seed list"),
    ("9" * 5000, "invalid seed list"),
])
def test_seed_lists_out_of_range(text: str, problem: str) -> None:
    with pytest.raises(InputError, match=f"^--seeds: {problem}"):
        seed_list(text)


def test_seed_lists_within_range() -> None:
    assert seed_list("1,4-6") == [1, 4, 5, 6]
    assert len(seed_list(f"0-{MAX_SEEDS - 1}")) == MAX_SEEDS
    assert seed_list(str(MAX_SEED)) == [MAX_SEED]
