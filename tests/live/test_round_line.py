"""`phalanx run` logs one info line per round that decided something (issue 24: at info it logged the client's
line per request, ~96 a minute while idle, and nothing of what it decided)."""

from __future__ import annotations

from phalanx.live.driver import round_line
from phalanx.scheduler.decisions import Bind, Decision, Evict, Nominate, Unschedulable
from tests.builders import MakePod


def test_one_line_counts_what_a_round_decided() -> None:
    pods = [MakePod(f"p{i}").req(cpu="1").obj() for i in range(5)]
    decisions: list[Decision] = [
        Bind(pods[0], "n1"), Bind(pods[1], "n2"), Unschedulable(pods[2], "0/2 nodes are available"),
        Nominate(pods[3], "n1"), Nominate(pods[4], ""), Evict(pods[4], "default/p3", "n1", "Preempted")]
    assert round_line(decisions, 0.0123) == "round: 2 bound, 1 unschedulable, 1 nominated, 1 evicted (12.3 ms)"


def test_a_round_that_decided_nothing_logs_nothing() -> None:
    assert round_line([], 0.001) is None
