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


def test_listed_events_come_first_among_their_ties_in_push_order_whatever_the_order_of_ties() -> None:
    for queue in (EventQueue[str](reverse_ties=True), EventQueue[str](shuffle_ties=3)):
        for name, listed in (("pending-a", False), ("node", True), ("pending-b", False), ("bound-pod", True)):
            queue.push(0.0, ARRIVAL, name, listed=listed)
        assert queue.pop_until(0.0)[:2] == ["node", "bound-pod"]
    plain = EventQueue[str]()
    for name, listed in (("pending-a", False), ("node", True), ("bound-pod", True)):
        plain.push(0.0, ARRIVAL, name, listed=listed)
    assert plain.pop_until(0.0) == ["pending-a", "node", "bound-pod"]  # as listed: push order alone
