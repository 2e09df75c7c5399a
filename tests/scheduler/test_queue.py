"""The scheduling queue: activeQ by priority then arrival, backoff 1 s doubling to 10 s, unschedulable set."""

from phalanx.scheduler.queue import INITIAL_BACKOFF, MAX_BACKOFF, SchedulingQueue, Where


def drain(queue: SchedulingQueue, now: float = 0.0) -> list[str]:
    out = []
    while (key := queue.pop(now)) is not None:
        out.append(key)
        queue.done(key)
    return out


def test_priority_then_arrival_then_insertion() -> None:
    queue = SchedulingQueue()
    queue.add("low-early", priority=0, timestamp=0.0)
    queue.add("high-late", priority=100, timestamp=50.0)
    queue.add("low-late", priority=0, timestamp=10.0)
    queue.add("high-early", priority=100, timestamp=5.0)
    queue.add("low-early-2", priority=0, timestamp=0.0)
    queue.add("negative", priority=-5, timestamp=0.0)
    assert drain(queue) == ["high-early", "high-late", "low-early", "low-early-2", "low-late", "negative"]


def test_adding_twice_keeps_the_first_place() -> None:
    queue = SchedulingQueue()
    queue.add("a", 0, 0.0)
    queue.add("b", 0, 1.0)
    queue.add("a", 1000, 99.0)
    assert drain(queue) == ["a", "b"]


def test_backoff_doubles_from_one_second_to_ten() -> None:
    assert (INITIAL_BACKOFF, MAX_BACKOFF) == (1.0, 10.0)
    queue = SchedulingQueue()
    queue.add("p", 0, 0.0)
    now = 0.0
    waits: list[float] = []
    for _ in range(7):
        assert queue.pop(now) == "p"
        queue.failed("p", now)
        entry = queue.entries["p"]
        assert entry.where is Where.UNSCHEDULABLE
        queue.move_all(now)  # something changed in the cluster at once
        assert queue.entries["p"].where.value == "backoff"
        expiry = queue.next_backoff()
        assert expiry is not None
        waits.append(expiry - now)
        assert queue.pop(expiry - 0.001) is None  # not before the backoff expires
        now = expiry
    assert waits == [1.0, 2.0, 4.0, 8.0, 10.0, 10.0, 10.0]


def test_unschedulable_entries_wait_for_an_event() -> None:
    queue = SchedulingQueue()
    queue.add("p", 0, 0.0)
    assert queue.pop(0.0) == "p"
    queue.failed("p", 0.0)
    assert queue.pop(100.0) is None  # no event: it stays parked however long we wait
    assert queue.next_backoff() is None
    queue.move_all(100.0)            # backoff (1 s after the failure) has long expired → straight to activeQ
    assert queue.entries["p"].where is Where.ACTIVE
    assert queue.pop(100.0) == "p"


def test_an_event_during_the_attempt_sends_the_entry_to_backoff() -> None:
    queue = SchedulingQueue()
    queue.add("p", 0, 0.0)
    assert queue.pop(5.0) == "p"
    queue.move_all(5.0)              # e.g. a pod finished while "p" was being scheduled
    queue.failed("p", 5.0)
    assert queue.entries["p"].where is Where.BACKOFF
    assert queue.next_backoff() == 6.0
    assert queue.pop(6.0) == "p"


def test_move_one_entry() -> None:
    queue = SchedulingQueue()
    queue.add("a", 0, 0.0)
    queue.add("b", 0, 0.0)
    for key in ("a", "b"):
        assert queue.pop(0.0) == key
        queue.failed(key, 0.0)
    queue.move("b", 3.0)
    assert queue.entries["a"].where is Where.UNSCHEDULABLE
    assert queue.pop(3.0) == "b"


def test_backed_off_entries_keep_priority_order_when_they_return() -> None:
    queue = SchedulingQueue()
    queue.add("low", 0, 0.0)
    queue.add("high", 10, 1.0)
    for key in ("high", "low"):
        assert queue.pop(1.0) == key
        queue.failed(key, 1.0)
    queue.move_all(1.0)
    queue.add("new-low", 0, 1.5)
    assert drain(queue, 2.0) == ["high", "low", "new-low"]


def test_done_forgets_the_entry() -> None:
    queue = SchedulingQueue()
    queue.add("p", 0, 0.0)
    queue.done("p")
    assert "p" not in queue and len(queue) == 0 and queue.pop(0.0) is None
    assert not queue.has_active()


def test_backoff_after_thousands_of_attempts_stays_at_the_maximum() -> None:
    from phalanx.scheduler.queue import Entry

    entry = Entry("default/p", 0, 0.0, 0, attempts=5000, last_failure=100.0)
    assert entry.backoff_expiry() == 100.0 + MAX_BACKOFF
