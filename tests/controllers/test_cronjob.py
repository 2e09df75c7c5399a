"""The CronJob controller and its 5-field schedules: firing times, concurrencyPolicy, suspend."""

from __future__ import annotations

import datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from phalanx.api.cron import CronError, CronSchedule, parse_cron
from phalanx.controllers.cronjob import CronJobController
from phalanx.controllers.job import JobController
from tests.controllers.apps_manifests import cron_job, cron_obj

UTC = datetime.UTC


def _next(schedule: str, after: datetime.datetime) -> datetime.datetime | None:
    return parse_cron(schedule).next_after(after)


def test_schedules_fire_at_the_next_matching_minute() -> None:
    monday = datetime.datetime(2024, 1, 1, tzinfo=UTC)
    assert _next("*/10 * * * *", monday) == datetime.datetime(2024, 1, 1, 0, 10, tzinfo=UTC)  # strictly after
    assert _next("*/10 * * * *", monday + datetime.timedelta(seconds=61)) == monday + datetime.timedelta(minutes=10)
    assert _next("30 9 * * 1-5", datetime.datetime(2024, 1, 6, 12, tzinfo=UTC)) == \
        datetime.datetime(2024, 1, 8, 9, 30, tzinfo=UTC)  # Saturday noon -> Monday
    assert _next("0 0 1 jan,jul *", monday) == datetime.datetime(2024, 7, 1, tzinfo=UTC)
    assert _next("@hourly", monday) == datetime.datetime(2024, 1, 1, 1, tzinfo=UTC)
    assert _next("15,45 2-4/2 * * *", monday) == datetime.datetime(2024, 1, 1, 2, 15, tzinfo=UTC)
    assert _next("0 0 30 2 *", monday) is None  # 30 February never comes


def test_day_of_month_and_day_of_week_either_match_when_both_are_set() -> None:
    monday = datetime.datetime(2024, 1, 1, tzinfo=UTC)
    assert _next("0 0 13 * 5", monday) == datetime.datetime(2024, 1, 5, tzinfo=UTC)  # Friday the 5th
    assert _next("0 0 13 * *", monday) == datetime.datetime(2024, 1, 13, tzinfo=UTC)
    assert _next("0 0 * * sun", monday) == datetime.datetime(2024, 1, 7, tzinfo=UTC)


@pytest.mark.parametrize("schedule", ["61 * * * *", "* * *", "*/0 * * * *", "5-1 * * * *", "* * * * 7",
                                      "@every 5m", "x * * * *"])
def test_bad_schedules(schedule: str) -> None:
    with pytest.raises(CronError):
        parse_cron(schedule)


def test_runs_every_ten_minutes_with_job_names_in_minutes() -> None:
    controller = CronJobController(JobController())
    cj = cron_obj(cron_job("report", "*/10 * * * *"))
    assert controller.start(cj, 0.0) == 600.0
    run = controller.run(cj.key, 600.0)
    assert run.job is not None and run.next_time == 1200.0
    epoch_minutes = int(datetime.datetime(2024, 1, 1, tzinfo=UTC).timestamp() // 60)
    assert run.job.name == f"report-{epoch_minutes + 10}" and run.job.arrival == 600.0
    assert run.job.template.duration == 120.0


@pytest.mark.parametrize(("policy", "second_runs", "deleted"), [("Allow", True, False), ("Forbid", False, False),
                                                               ("Replace", True, True)])
def test_concurrency_policy(policy: str, second_runs: bool, deleted: bool) -> None:
    jobs = JobController()
    controller = CronJobController(jobs)
    cj = cron_obj(cron_job("report", "*/10 * * * *", duration=None, concurrencyPolicy=policy))
    controller.start(cj, 0.0)
    first = controller.run(cj.key, 600.0).job
    assert first is not None
    jobs.start(first, 600.0)  # runs forever (no duration): still active ten minutes later
    second = controller.run(cj.key, 1200.0)
    assert (second.job is not None) == second_runs
    assert second.delete == ([first.key] if deleted else [])
    assert (first.key in jobs.jobs) != deleted


def test_a_finished_job_does_not_block_forbid() -> None:
    jobs = JobController()
    controller = CronJobController(jobs)
    cj = cron_obj(cron_job("report", "*/10 * * * *", concurrencyPolicy="Forbid"))
    controller.start(cj, 0.0)
    first = controller.run(cj.key, 600.0).job
    assert first is not None
    (pod,) = jobs.start(first, 600.0)[1]
    jobs.succeeded(pod.owner, 720.0)
    assert controller.run(cj.key, 1200.0).job is not None


def test_suspended_never_runs_and_start_time_moves_the_clock() -> None:
    controller = CronJobController(JobController())
    assert controller.start(cron_obj(cron_job("report", "*/10 * * * *", suspend=True)), 0.0) is None
    doc = cron_job("nightly", "0 2 * * *")
    doc["metadata"]["annotations"] = {"phalanx.dev/start-time": "2024-03-01T01:30:00Z"}
    assert controller.start(cron_obj(doc), 0.0) == 1800.0  # 02:00 is half an hour after the start


@settings(max_examples=40, deadline=None)
@given(minute=st.sampled_from(["*", "0", "*/15", "5-10/2", "59"]), hour=st.sampled_from(["*", "0", "3-5", "*/6"]),
       dom=st.sampled_from(["*", "1", "13", "28-31", "?"]), month=st.sampled_from(["*", "2", "jan,jun"]),
       dow=st.sampled_from(["*", "0", "mon-fri", "6", "?"]), offset=st.integers(0, 400 * 24 * 60))
def test_next_after_agrees_with_checking_every_minute(minute: str, hour: str, dom: str, month: str, dow: str,
                                                      offset: int) -> None:
    schedule = parse_cron(f"{minute} {hour} {dom} {month} {dow}")
    after = datetime.datetime(2024, 1, 1, tzinfo=UTC) + datetime.timedelta(minutes=offset, seconds=17)
    found = schedule.next_after(after)
    moment = after.replace(second=0) + datetime.timedelta(minutes=1)
    limit = moment + datetime.timedelta(days=70)
    while moment < limit and not _matches(schedule, moment):
        moment += datetime.timedelta(minutes=1)
    if moment < limit:
        assert found == moment
    else:
        assert found is None or found >= limit


def _matches(schedule: CronSchedule, moment: datetime.datetime) -> bool:
    """Cron's rule, minute by minute: a day matches either day field when both are restricted."""
    in_month, in_week = moment.day in schedule.days, (moment.weekday() + 1) % 7 in schedule.weekdays
    day = (in_month or in_week) if schedule.days_restricted and schedule.weekdays_restricted else (in_month and in_week)
    return (moment.minute in schedule.minutes and moment.hour in schedule.hours and moment.month in schedule.months
            and day)
