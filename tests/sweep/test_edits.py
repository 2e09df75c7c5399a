"""What-if edits take numbers within a documented range only: a factor of 400 digits is an error naming
--what-if, not an infinite arrival time that hangs the run (the campaign's finding), nor a million node copies."""

from __future__ import annotations

import pytest

from phalanx.api.quantity import MAX_DURATION_SECONDS
from phalanx.errors import InputError
from phalanx.inputs.load import Inputs
from phalanx.sweep.edits import MAX_FACTOR, MAX_NODES, apply_edit, parse_edit
from tests.builders import MakeNode, MakePod

NINES = "9" * 400


def inputs(nodes: int = 3, arrival: float = 600.0) -> Inputs:
    return Inputs(nodes=[MakeNode(f"n{i}").alloc(cpu="4").obj() for i in range(nodes)],
                  pods=[MakePod("late").req(cpu="1").arrival(int(arrival)).obj()])


@pytest.mark.parametrize(("text", "problem"), [
    ("arrivals*" + NINES, "arrivals*F takes a factor from 0 to 1000"),
    ("arrivals*1000.5", "arrivals*F takes a factor from 0 to 1000"),
    ("nodes*" + NINES, "nodes*F takes a factor above 0 and at most 1000"),
    ("nodes*0", "nodes*F takes a factor above 0"),
    ("nodes=" + NINES, "nodes=N takes a whole number from 1 to 50000"),
    ("nodes=50001", "nodes=N takes a whole number from 1 to 50000"),
    ("nodes=0", "nodes=N takes a whole number from 1"),
    ("nodes=٣", "want base, nodes=N"),  # digits are ASCII digits
    ("arrivals*1e3", "want base, nodes=N"),
])
def test_numbers_out_of_range_name_the_flag(text: str, problem: str) -> None:
    with pytest.raises(InputError, match=r"^--what-if: invalid edit .*: " + problem.replace("*", r"\*")):
        parse_edit(text)


def test_a_long_edit_is_shown_cut_short() -> None:
    with pytest.raises(InputError) as err:
        parse_edit("nodes*" + NINES)
    assert len(str(err.value)) < 200


def test_the_edges_of_the_ranges_are_taken() -> None:
    assert parse_edit("arrivals*0").terms == (("arrivals", "*", 0.0),)
    assert parse_edit(f"arrivals*{MAX_FACTOR:g}").terms == (("arrivals", "*", MAX_FACTOR),)
    assert parse_edit(f"nodes={MAX_NODES}").terms == (("nodes", "=", float(MAX_NODES)),)
    assert len(apply_edit(inputs(nodes=2), parse_edit("nodes*1000")).nodes) == 2000


def test_a_factor_that_makes_too_many_nodes_is_refused_before_copying() -> None:
    with pytest.raises(InputError, match=r"^--what-if: nodes\*1000: makes 60000 nodes, more than the 50000"):
        apply_edit(inputs(nodes=60), parse_edit("nodes*1000"))
    with pytest.raises(InputError, match="makes 80000 nodes"):  # terms compound: each one is bounded
        apply_edit(inputs(nodes=40), parse_edit("nodes*1000+nodes*2"))


def test_scaled_arrivals_stay_within_gos_longest_duration() -> None:
    late = inputs(arrival=MAX_DURATION_SECONDS / 2)
    assert apply_edit(late, parse_edit("arrivals*1.5")).pods[0].arrival <= MAX_DURATION_SECONDS
    with pytest.raises(InputError, match=r"^--what-if: arrivals\*3: moves an arrival at .*s past Go's longest"):
        apply_edit(late, parse_edit("arrivals*3"))
