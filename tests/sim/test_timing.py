"""Outcomes left to timing (phalanx/sim/timing.py): the same inputs under every interleaving of an instant's events,
and the workloads whose outcome changes with it."""

import json
from pathlib import Path

import pytest

from phalanx.cli import main
from phalanx.inputs.load import load_paths
from phalanx.scheduler.profiles import builtin
from phalanx.sim.interleavings import AS_LISTED, BETWEEN, BOTH, ENDS, INTERLEAVINGS, REVERSED, SHUFFLED
from phalanx.sim.run import simulate
from phalanx.sim.timing import explore

DATA = Path(__file__).parent / "data"
RACE = str(DATA / "two-pods-one-node.yaml")
TAS = str(DATA / "gang-past-min-count-in-one-rack.yaml")


def _explored(path: str, profile: str = "default", **gates: bool):  # type: ignore[no-untyped-def]
    inputs = load_paths([path])
    chosen = builtin(profile)
    chosen.feature_gates.update(gates)
    return explore(lambda order: simulate(inputs, chosen, interleaving=order).sim)


def test_two_pods_of_one_instant_for_one_node_depend_on_which_reaches_the_queue_first() -> None:
    found = _explored(RACE)
    assert found.dependent() == ["Pod default/p-a", "Pod default/p-b"]
    possible = found.possible("Pod default/p-b")
    assert sorted(outcome.bound for outcome in possible) == [0, 1]
    by_order = {name: outcome.bound for outcome, names in possible.items() for name in names}
    assert by_order == {AS_LISTED.name: 0, BETWEEN.name: 0, REVERSED.name: 1, BOTH.name: 1, ENDS.name: 0,
                        **{i.name: by_order[i.name] for i in SHUFFLED}}
    assert sorted(by_order.values()).count(1) > 2  # a shuffled order put p-b first too


def test_a_gang_released_at_min_count_leaves_its_late_member_pinned_to_the_first_cycles_rack() -> None:
    """GangScheduling releases the group at minCount members; TAS then keeps a later member in the rack the first
    cycle chose (rack-a, two nodes), where it does not fit: with every member in, rack-b holds all three."""
    found = _explored(TAS, "gang", TopologyAwareWorkloadScheduling=True)
    assert found.dependent() == ["PodGroup ml/train"]
    by_order = {name: outcome for outcome, names in found.possible("PodGroup ml/train").items() for name in names}
    assert (by_order[AS_LISTED.name].bound, by_order[AS_LISTED.name].pending) == (3, 0)
    assert set(by_order[AS_LISTED.name].nodes) == {"node-b0", "node-b1", "node-b2"}
    assert (by_order[BETWEEN.name].bound, by_order[BETWEEN.name].pending) == (2, 1)
    assert set(by_order[BETWEEN.name].nodes) == {"node-a0", "node-a1"}


def test_pods_ending_one_at_a_time_let_a_small_waiting_pod_take_the_first_freed_room() -> None:
    """Two pods that end together free one node: the 8-cpu pod waiting first takes it when they go together; when
    they go one at a time, the 4-cpu pod behind it takes the first half and the big one never fits."""
    found = _explored(str(DATA / "pods-end-together.yaml"))
    by_order = {name: outcome for outcome, names in found.possible("Pod default/big").items() for name in names}
    assert (by_order[AS_LISTED.name].bound, by_order[ENDS.name].bound) == (1, 0)


def test_without_a_race_nothing_is_flagged() -> None:
    """The same gang without the topology constraint's pinning: every interleaving binds all three."""
    found = _explored(TAS, "gang")
    assert found.dependent() == []
    assert found.report()["workloads"] == 1


def test_simulate_timing_names_the_outcomes_in_the_report(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", RACE, "--timing", "-o", "json"]) == 0
    timing = json.loads(capsys.readouterr().out)["timing"]
    assert [i["name"] for i in timing["interleavings"]] == [i.name for i in INTERLEAVINGS]
    assert timing["workloads"] == 2
    rows = {row["workload"]: row["outcomes"] for row in timing["timingDependent"]}
    by_order = {name: o["bound"] for o in rows["Pod default/p-a"] for name in o["interleavings"]}
    assert sorted(by_order) == sorted(i.name for i in INTERLEAVINGS)
    assert (by_order["as-listed"], by_order["creations-reversed"]) == (1, 0)
    assert main(["simulate", RACE, "--timing"]) == 0
    table = capsys.readouterr().out
    assert "outcomes left to timing: 2 of 2 workload(s)" in table


def test_simulate_without_timing_has_no_timing_block(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", RACE, "-o", "json"]) == 0
    assert "timing" not in json.loads(capsys.readouterr().out)
