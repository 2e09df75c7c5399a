"""The event heap: time, then priority (completions before arrivals), then push order, or its reverse."""

from phalanx.sim.event_queue import ARRIVAL, COMPLETION, EventQueue


def _filled(queue: EventQueue[str]) -> EventQueue[str]:
    for time, priority, name in ((5.0, ARRIVAL, "a"), (5.0, ARRIVAL, "b"), (5.0, COMPLETION, "done"),
                                 (1.0, ARRIVAL, "early"), (5.0, ARRIVAL, "c")):
        queue.push(time, priority, name)
    return queue


def test_ties_come_out_in_push_order() -> None:
    assert _filled(EventQueue()).pop_until(5.0) == ["early", "done", "a", "b", "c"]


def test_reversed_ties_come_out_last_pushed_first_time_and_priority_still_first() -> None:
    assert _filled(EventQueue(reverse_ties=True)).pop_until(5.0) == ["early", "done", "c", "b", "a"]


def test_pop_one_takes_a_single_due_event() -> None:
    queue = _filled(EventQueue())
    assert queue.pop_one(0.5) is None
    assert queue.pop_one(5.0) == "early"
    assert queue.pop_one(5.0) == "done"
    assert queue.pop_until(5.0) == ["a", "b", "c"]
    assert queue.pop_one(5.0) is None
