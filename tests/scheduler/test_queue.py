"""The scheduling queue: activeQ by priority then last return, backoff 1 s doubling to 10 s on whole-second windows
(a group's longer), pops from backoffQ when activeQ is empty, unschedulable set."""

import math

from hypothesis import given
from hypothesis import strategies as st

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


# --- a failed group cycle: retried on its backoff, whatever the events (requeuePodGroup) ---

def _retries(failed_at: float, size: int, until: float) -> list[float]:
    """Every retry of a group that fails each time, step by step: the backoff doubles from 1 s up to 10 s × √size,
    and each retry comes when the whole-second window of the expiry has passed."""
    times, attempts, last = [], 1, failed_at
    while True:
        window = math.floor(last + min(2.0 ** (attempts - 1), 10.0 * math.sqrt(size) if size > 1 else 10.0))
        if window + 1 >= until:
            return times
        last = window + 1
        times.append(last)
        attempts += 1


def _timed(size: int = 4, failed_at: float = 0.0) -> SchedulingQueue:
    queue = SchedulingQueue()
    queue.add("group", 0, failed_at)
    assert queue.pop(failed_at) == "group"
    queue.failed("group", failed_at, size=size, timed=True)
    return queue


def test_a_failed_group_sleeps_while_nothing_changes() -> None:
    queue = _timed()
    assert queue.entries["group"].where is Where.UNSCHEDULABLE
    assert queue.next_backoff() is None  # each retry would fail as the first did: nothing is due
    assert queue.pop(1000.0) is None


def test_an_event_does_not_move_a_failed_group_it_takes_up_its_retry_schedule() -> None:
    queue = _timed(size=4)
    queue.move_all(60.0)
    entry = queue.entries["group"]
    assert entry.where is Where.BACKOFF
    assert queue.next_backoff() == 78.0  # retries at 2, 5, 10, 19, 36, 57: the next one after 60 s
    assert queue.pop(77.0) is None and queue.pop(78.0) == "group"
    assert entry.attempts == 1 + len(_retries(0.0, 4, 60.0)) == 7  # the futile retries grew the backoff
    assert entry.timestamp == 57.0  # restamped by the last of them


def test_an_event_while_a_failed_group_backs_off_leaves_its_retry_where_it_is() -> None:
    queue = _timed(size=1)
    queue.move_all(1.5)
    assert queue.next_backoff() == 2.0
    queue.move_all(1.8)
    assert queue.next_backoff() == 2.0 and queue.pop(1.9) is None and queue.pop(2.0) == "group"


def test_an_event_during_a_failed_group_cycle_makes_its_first_retry_count() -> None:
    queue = SchedulingQueue()
    queue.add("group", 0, 0.0)
    assert queue.pop(0.0) == "group"
    queue.move_all(0.0)  # room freed while the cycle ran
    queue.failed("group", 0.3, size=2, timed=True)
    assert queue.entries["group"].where is Where.BACKOFF and queue.next_backoff() == 2.0


def test_an_event_at_the_instant_of_a_retry_is_seen_by_it() -> None:
    queue = _timed(size=2)
    queue.move_all(5.0)  # retries at 2 and 5: the one at 5 s sees the event
    assert queue.next_backoff() == 5.0 and queue.entries["group"].attempts == 2


def test_a_failed_group_is_never_popped_early_from_backoff() -> None:
    queue = _timed(size=1)
    queue.move_all(1.0)
    assert queue.pop(1.0) is None  # activeQ is empty, but the error backoffQ is not popped early


@given(size=st.integers(1, 64), failed_at=st.floats(0, 1000).map(lambda t: round(t, 2)),
       gap=st.floats(0.01, 5000))
def test_the_retry_schedule_after_an_event_is_the_step_by_step_one(size: int, failed_at: float, gap: float) -> None:
    queue = _timed(size=size, failed_at=failed_at)
    now = failed_at + gap
    queue.move_all(now)
    retries = _retries(failed_at, size, now)
    following = _retries(failed_at, size, now + 10.0 * math.sqrt(size) + 2)
    assert queue.next_backoff() == following[len(retries)]
    assert queue.entries["group"].attempts == 1 + len(retries)


def test_without_backoff_a_failed_group_retries_after_the_instants_other_entries() -> None:
    queue = SchedulingQueue(initial_backoff=0.0, max_backoff=0.0)
    queue.add("group", 100, 0.0)
    assert queue.pop(0.0) == "group"
    queue.failed("group", 0.0, size=2, timed=True)
    queue.add("pod", 0, 5.0)
    queue.move_all(5.0)
    assert queue.next_backoff() is not None
    assert queue.pop(5.0) == "pod"  # the higher-priority group comes after it: as the real one, a backoff later
    queue.done("pod")
    assert queue.pop(5.0) == "group"


def test_an_errored_entry_sleeps_until_an_event_then_retries_after_its_backoff() -> None:
    queue = SchedulingQueue()
    queue.add("pod:a", 0, 0.0)
    assert queue.pop(0.0) == "pod:a"
    queue.errored("pod:a", 0, 0.0, now=0.0)
    assert queue.pop(0.0) is None and queue.next_backoff() is None  # the same state fails the same way
    queue.move_all(0.5)
    assert queue.next_backoff() == 2.0 and queue.pop(0.5) is None  # never taken early, even with activeQ empty
    assert queue.pop(2.0) == "pod:a"


def test_an_entry_its_cycle_finished_before_the_error_comes_back() -> None:
    queue = SchedulingQueue()
    queue.add("group:g", 5, 1.0)
    assert queue.pop(1.0) == "group:g"
    queue.done("group:g")
    queue.errored("group:g", 5, 1.0, now=1.0, size=4)
    assert queue.entries["group:g"].attempts == 1 and queue.entries["group:g"].size == 4
    queue.move("group:g", 1.0)
    assert queue.pop(1.0) is None and queue.pop(queue.next_backoff() or math.inf) == "group:g"


def test_reversed_ties_reverse_only_entries_of_one_timestamp_and_priority() -> None:
    """An instant's concurrent creations reaching the queue the other way round (phalanx/sim/interleavings.py):
    priority and timestamp still order first."""
    queue = SchedulingQueue(reverse_ties=True)
    queue.add("low-early", priority=0, timestamp=0.0)
    queue.add("high-late", priority=100, timestamp=50.0)
    queue.add("low-late", priority=0, timestamp=10.0)
    queue.add("low-early-2", priority=0, timestamp=0.0)
    queue.add("low-early-3", priority=0, timestamp=0.0)
    assert drain(queue) == ["high-late", "low-early-3", "low-early-2", "low-early", "low-late"]
