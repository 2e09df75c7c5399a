"""The engine loop and the simulator's clock: rounds at each input and retry, a horizon that ends the run,
and a driver that may hold rounds back."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from phalanx.scheduler.decisions import Bind, Decision, Unschedulable
from phalanx.scheduler.loop import VirtualClock, run_engine
from phalanx.scheduler.profiles import builtin
from phalanx.scheduler.scheduler import Scheduler
from tests.scheduler.test_preemption import node, pod


class Recorder:
    """Ends that feed pods at given times and record every round."""

    def __init__(self, scheduler: Scheduler, arrivals: dict[float, list[str]], *, may: bool = True,
                 fail_first: set[str] | None = None) -> None:
        self.scheduler = scheduler
        self.fail_first = set(fail_first or ())  # pods whose first Binding fails
        self.arrivals = dict(sorted(arrivals.items()))
        self.may = may
        self.rounds: list[tuple[float, list[str]]] = []

    def next_input(self) -> float | None:
        return next(iter(self.arrivals), None)

    def feed(self, now: float) -> None:
        for t in [t for t in self.arrivals if t <= now]:
            for name in self.arrivals.pop(t):
                self.scheduler.add_pod(pod(name, "2"), now)

    @contextmanager
    def turn(self) -> Iterator[bool]:
        yield self.may

    def carry_out(self, decisions: list[Decision], now: float, seconds: float) -> None:
        assert seconds >= 0
        for d in decisions:
            if isinstance(d, Bind) and d.pod.name in self.fail_first:
                self.fail_first.discard(d.pod.name)
                self.scheduler.bind_failed(d.pod.key, now)
            elif isinstance(d, Bind):
                self.scheduler.confirm_bind(d.pod.key)
        self.rounds.append((now, [f"{type(d).__name__}:{d.pod.name}" for d in decisions
                                  if isinstance(d, Bind | Unschedulable)]))


def test_a_round_at_each_arrival_and_at_the_retry_after_a_failed_binding() -> None:
    s = Scheduler(builtin("default"), [node("n0", "3").obj()])
    ends = Recorder(s, {0.0: ["a"], 5.0: ["b"]}, fail_first={"a"})
    clock = VirtualClock(ends.next_input)
    run_engine(s, clock, ends)
    # a's Binding fails at 0: it backs off and the loop wakes for its retry (1 s, ended with its whole-second
    # window at 2 s), not only for inputs
    assert ends.rounds == [(0.0, ["Bind:a"]), (2.0, ["Bind:a"]), (5.0, ["Unschedulable:b"])]
    assert clock.now() == 5.0 and s.next_retry() is None


def test_the_horizon_ends_the_run_before_a_later_input() -> None:
    s = Scheduler(builtin("default"), [node("n0", "8").obj()])
    ends = Recorder(s, {0.0: ["a"], 50.0: ["late"]})
    run_engine(s, VirtualClock(ends.next_input, until=10.0), ends)
    assert ends.rounds == [(0.0, ["Bind:a"])]
    assert "default/late" not in s.pods


def test_a_driver_that_may_not_schedule_feeds_inputs_but_runs_no_round() -> None:
    s = Scheduler(builtin("default"), [node("n0", "8").obj()])
    ends = Recorder(s, {0.0: ["a"], 1.0: ["b"]}, may=False)
    run_engine(s, VirtualClock(ends.next_input), ends)
    assert ends.rounds == [] and set(s.pods) == {"default/a", "default/b"} and not s.cluster.bound


def test_the_virtual_clock_never_goes_back() -> None:
    clock = VirtualClock(lambda: None)
    assert clock.wait(None) is None
    assert clock.wait(4.0) == 4.0 and clock.now() == 4.0
