"""Standard 5-field cron schedules (`minute hour day-of-month month day-of-week`) as a CronJob's `spec.schedule`
takes them: `*`, `?` (as `*`), numbers, names (jan-dec, sun-sat), lists, ranges and `/` steps, and the
descriptors @yearly, @annually, @monthly, @weekly, @daily, @midnight and @hourly. Times are UTC.

Day of month and day of week combine as cron's do: when both are restricted (neither starts with `*` or `?`)
a day matches either one; otherwise both must match (the unrestricted one matches every day).
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass

_DESCRIPTORS = {"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *",
                "@weekly": "0 0 * * 0", "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *"}
_MONTHS = {name: i + 1 for i, name in enumerate(
    ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"))}
_DAYS = {name: i for i, name in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))}
# (name, lowest, highest, names)
_FIELDS: tuple[tuple[str, int, int, dict[str, int]], ...] = (
    ("minute", 0, 59, {}), ("hour", 0, 23, {}), ("day of month", 1, 31, {}), ("month", 1, 12, _MONTHS),
    ("day of week", 0, 6, _DAYS))
_HORIZON_DAYS = 5 * 366  # no fire within five years: the schedule never fires (e.g. `0 0 30 2 *`)


class CronError(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class CronSchedule:
    text: str
    minutes: tuple[int, ...]
    hours: tuple[int, ...]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]  # 0 = Sunday
    days_restricted: bool
    weekdays_restricted: bool

    def _day_matches(self, day: datetime.date) -> bool:
        if day.month not in self.months:
            return False
        in_month = day.day in self.days
        in_week = (day.weekday() + 1) % 7 in self.weekdays
        if self.days_restricted and self.weekdays_restricted:
            return in_month or in_week
        return in_month and in_week

    def next_after(self, moment: datetime.datetime) -> datetime.datetime | None:
        """The first matching minute strictly after `moment` (UTC), or None within five years (or before the
        calendar ends)."""
        try:
            return self._next_after(moment)
        except OverflowError:  # past year 9999
            return None

    def _next_after(self, moment: datetime.datetime) -> datetime.datetime | None:
        start = moment.astimezone(datetime.UTC).replace(second=0, microsecond=0) + datetime.timedelta(minutes=1)
        day = start.date()
        for _ in range(_HORIZON_DAYS):
            if self._day_matches(day):
                for hour in self.hours:
                    for minute in self.minutes:
                        fire = datetime.datetime(day.year, day.month, day.day, hour, minute, tzinfo=datetime.UTC)
                        if fire >= start:
                            return fire
            day += datetime.timedelta(days=1)
        return None


def _value(raw: str, name: str, low: int, high: int, names: dict[str, int]) -> int:
    lowered = raw.lower()
    if lowered in names:
        return names[lowered]
    if not (raw.isascii() and raw.isdigit()):
        raise CronError(f"{name}: {raw!r} is not a number")
    value = int(raw)
    if not low <= value <= high:
        raise CronError(f"{name}: {value} is out of range {low}-{high}")
    return value


def _field(raw: str, name: str, low: int, high: int, names: dict[str, int]) -> set[int]:
    values: set[int] = set()
    for part in raw.split(","):
        base, slash, step_raw = part.partition("/")
        step = 1
        if slash:
            if not (step_raw.isascii() and step_raw.isdigit()) or int(step_raw) == 0:
                raise CronError(f"{name}: bad step {step_raw!r}")
            step = int(step_raw)
        if base in ("*", "?"):
            first, last = low, high
        elif "-" in base:
            a, _, b = base.partition("-")
            first, last = _value(a, name, low, high, names), _value(b, name, low, high, names)
            if first > last:
                raise CronError(f"{name}: range {base!r} runs backwards")
        else:
            first = _value(base, name, low, high, names)
            last = high if slash else first
        values.update(range(first, last + 1, step))
    return values


def parse_cron(text: str) -> CronSchedule:
    """A schedule; raises CronError saying what is wrong."""
    spec = _DESCRIPTORS.get(text.strip().lower(), text) if text.strip().startswith("@") else text
    if spec.strip().startswith("@"):
        raise CronError(f"unsupported descriptor {text.strip()!r}")
    if spec.strip().upper().startswith(("TZ=", "CRON_TZ=")):
        raise CronError("a time zone in the schedule is not supported: use spec.timeZone")
    parts = spec.split()
    if len(parts) != 5:
        raise CronError(f"expected 5 fields (minute hour day-of-month month day-of-week), found {len(parts)}")
    sets = [_field(raw, name, low, high, names) for raw, (name, low, high, names) in zip(parts, _FIELDS, strict=True)]
    return CronSchedule(text=text, minutes=tuple(sorted(sets[0])), hours=tuple(sorted(sets[1])),
                        days=frozenset(sets[2]), months=frozenset(sets[3]), weekdays=frozenset(sets[4]),
                        days_restricted=not parts[2].startswith(("*", "?")),
                        weekdays_restricted=not parts[4].startswith(("*", "?")))
