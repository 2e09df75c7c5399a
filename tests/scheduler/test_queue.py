"""The scheduling queue: activeQ by priority then last return, backoff 1 s doubling to 10 s on whole-second windows
(a group's longer), pops from backoffQ when activeQ is empty, unschedulable set."""

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


def test_backoff_doubles_from_one_second_to_ten_and_ends_on_whole_second_windows() -> None:
    """backoff_queue.go: the expiry (last failure + 1 s, 2 s, … 10 s) is truncated to its second, and the entry
    backs off until that second has passed."""
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
        ends = queue.next_backoff()
        assert ends is not None
        waits.append(ends - now)
        queue.flush_backoff(ends - 0.001)
        assert queue.entries["p"].where is Where.BACKOFF  # not before the backoff ends
        queue.flush_backoff(ends)
        assert queue.entries["p"].where is Where.ACTIVE
        now = ends
    assert waits == [2.0, 3.0, 5.0, 9.0, 11.0, 11.0, 11.0]
    entry = queue.entries["p"]
    entry.last_failure = 10.5
    assert entry.backoff_ends() == 21.0  # 10.5 + 10 = 20.5: the window of second 20 ends at 21


def test_a_group_backs_off_longer_by_the_square_root_of_its_size() -> None:
    queue = SchedulingQueue()
    queue.add("group:default/train", 0, 0.0)
    for _ in range(6):
        key = queue.pop(100.0)
        assert key == "group:default/train"
        queue.failed(key, 100.0, size=4)
        queue.move_all(100.0)
    assert queue.next_backoff() == 100.0 + 20.0 + 1.0  # 10 s × √4


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
    queue.add("q", 0, 0.0)
    assert queue.pop(5.0) == "p"
    queue.move_all(5.0)              # e.g. a pod finished while "p" was being scheduled
    queue.failed("p", 5.0)
    assert queue.entries["p"].where is Where.BACKOFF
    assert queue.next_backoff() == 7.0
    assert queue.pop(5.0) == "q"     # activeQ first
    queue.done("q")
    assert queue.pop(5.0) == "p"     # then, activeQ empty, straight from backoffQ


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
    def backed_off() -> SchedulingQueue:
        queue = SchedulingQueue()
        queue.add("low", 0, 0.0)
        queue.add("high", 10, 1.0)
        for key in ("high", "low"):
            assert queue.pop(1.0) == key
            queue.failed(key, 1.0)
        queue.move_all(1.0)
        queue.add("new-low", 0, 1.5)
        return queue

    # Backing off until 3 s: activeQ's entry first, then backoffQ's by priority (SchedulerPopFromBackoffQ).
    assert drain(backed_off(), 2.0) == ["new-low", "high", "low"]
    # Back in activeQ: by priority, then by when each last came back (1 s for both, before new-low's 1.5 s).
    assert drain(backed_off(), 3.0) == ["high", "low", "new-low"]


def test_backoff_q_pops_by_window_then_priority() -> None:
    """lessBackoffCompletedWithPriority: the earlier window first, and within a window as activeQ orders."""
    queue = SchedulingQueue()
    for key, priority, at in (("early-high", 50, 0.2), ("early-low", 0, 0.5), ("late-high", 100, 1.5)):
        queue.add(key, priority, at)
        assert queue.pop(at) == key
        queue.failed(key, at)
    queue.move_all(1.5)
    assert [queue.entries[k].where for k in ("early-high", "early-low", "late-high")] == [Where.BACKOFF] * 3
    assert drain(queue, 1.5) == ["early-high", "early-low", "late-high"]


def test_an_entry_backing_off_after_an_error_is_not_taken_early() -> None:
    queue = SchedulingQueue()
    queue.add("p", 0, 0.0)
    assert queue.pop(0.0) == "p"
    queue.backoff("p", 0, 0.0, 0.0)  # its binding failed (handleBindingCycleError)
    assert queue.entries["p"].where is Where.BACKOFF
    assert queue.pop(1.0) is None
    assert queue.next_backoff() == 2.0 and queue.pop(2.0) == "p"


def test_a_failed_entry_queues_behind_one_that_failed_before_it() -> None:
    """AddUnschedulableIfNotPresent refreshes the timestamp: among equal priorities, activeQ then orders by
    when each entry last came back, not by when it first arrived."""
    queue = SchedulingQueue()
    queue.add("first", 0, 0.0)
    assert queue.pop(0.0) == "first"
    queue.failed("first", 0.0)
    queue.add("second", 0, 5.0)
    assert queue.pop(5.0) == "second"
    queue.failed("second", 5.0)
    queue.move("first", 30.0)  # an event only "first" cares about
    assert queue.pop(30.0) == "first"
    queue.failed("first", 30.0)
    queue.move_all(60.0)
    assert drain(queue, 60.0) == ["second", "first"]


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
