"""Metric sources for the HPA: the series file given with `--metrics FILE`, and a built-in request-rate model.

The file is CSV with the header `time,metric,value` and an optional `selector` column (any column order).
`time` is seconds or a Go duration (`90s`, `15m`, `1h30m`); `value` is a Kubernetes quantity (`500m`, `2k`);
`selector` holds the series' labels as `key=value` pairs joined by commas (empty: a series without labels). Rows
may come in any order; a value holds from its time until the next row of the same (metric, selector). Input
is read strictly: a bad header, time or quantity, non-ASCII digits, `_` in numbers, NaN or infinity, or two
rows for one series at one time is an InputError naming the file, the line and the column.
"""

from __future__ import annotations

import csv
import io
import math
import re
from bisect import bisect_right
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import pairwise
from typing import Protocol

import numpy as np
import numpy.typing as npt

from phalanx.api.autoscaling import MetricSpec
from phalanx.api.objects import LabelSelector
from phalanx.api.quantity import QuantityError, parse_duration, parse_quantity
from phalanx.api.reading import read_text
from phalanx.errors import InputError

COLUMNS = ("time", "metric", "value")
OPTIONAL_COLUMNS = ("selector",)
# Seconds (`90`, `1.5`) or a Go duration of ASCII digits and units; float() alone would take `1_0`, `nan`, `１`.
_TIME = re.compile(r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)|(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:ns|us|µs|ms|s|m|h|d))+")
_LABEL = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_./]*[A-Za-z0-9])?")
_LABEL_VALUE = re.compile(r"([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?")


def parse_labels(raw: str) -> tuple[tuple[str, str], ...]:
    """`b=2,a=1` → (("a", "1"), ("b", "2")); ValueError for anything but `key=value` pairs."""
    if not raw.strip():
        return ()
    pairs: dict[str, str] = {}
    for part in raw.split(","):
        key, sep, value = part.strip().partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not _LABEL.fullmatch(key) or not _LABEL_VALUE.fullmatch(value):
            raise ValueError(f"invalid selector {raw!r}: write key=value pairs joined by commas")
        if key in pairs:
            raise ValueError(f"invalid selector {raw!r}: label {key!r} given twice")
        pairs[key] = value
    return tuple(sorted(pairs.items()))


def selector_key(labels: Iterable[tuple[str, str]]) -> str | None:
    """The canonical text of a series' labels (`a=1,b=2`), None for none."""
    text = ",".join(f"{k}={v}" for k, v in sorted(labels))
    return text or None


@lru_cache(maxsize=4096)
def _canonical(selector: str | None) -> str | None:
    return None if selector is None else selector_key(parse_labels(selector))


@dataclass(slots=True)
class _Series:
    labels: dict[str, str]
    times: list[float]
    values: list[float]

    def at(self, time: float) -> float | None:
        i = bisect_right(self.times, time) - 1
        return None if i < 0 else self.values[i]


class MetricSource(Protocol):
    """Anything the HPA reads metric values from."""

    def total(self, metric: str, selector: LabelSelector | None, time: float) -> float | None: ...


class MetricsSeries:
    """Step series by (metric, selector): `value` is the latest sample at or before `time` (None before the
    first). `total` sums every series of a metric whose labels a LabelSelector selects, as the external
    metrics API answers an External metric."""

    def __init__(self, rows: Iterable[tuple[float, str, str | None, float]], *, file: str = "<metrics>") -> None:
        """Rows are (time, metric, selector, value); `selector` as in the file (`a=1,b=2`) or None."""
        raw: dict[tuple[str, str | None], list[tuple[float, float]]] = {}
        for time, metric, selector, value in rows:
            raw.setdefault((metric, _canonical(selector)), []).append((time, value))
        self.file = file
        self._series: dict[tuple[str, str | None], _Series] = {}
        self._by_metric: dict[str, list[_Series]] = {}
        # (metric, one label pair) -> the metric's series with that label, in `_by_metric` order: a selector's
        # first matchLabels pair narrows the series `total` has to look at.
        self._by_label: dict[str, dict[tuple[str, str], list[_Series]]] = {}
        for (metric, key), samples in raw.items():
            samples.sort(key=lambda s: s[0])
            for (t0, _), (t1, _) in pairwise(samples):
                if t0 == t1:
                    raise InputError(f"two values for metric {metric!r} ({key or 'no selector'}) at time {t0:g}",
                                     file=file)
            series = _Series(labels=dict(parse_labels(key or "")), times=[t for t, _ in samples],
                             values=[v for _, v in samples])
            self._series[(metric, key)] = series
            self._by_metric.setdefault(metric, []).append(series)
            labelled = self._by_label.setdefault(metric, {})
            for pair in series.labels.items():
                labelled.setdefault(pair, []).append(series)

    def __len__(self) -> int:
        return len(self._series)

    def metrics(self) -> list[str]:
        return sorted(self._by_metric)

    def times(self, metric: str, selector: LabelSelector | None = None) -> list[float]:
        """Every time at which some series of `metric` (that `selector` selects, when given) changes, sorted (for
        integrating a rate exactly)."""
        return sorted({t for series in self._selected(metric, selector) for t in series.times})

    def _selected(self, metric: str, selector: LabelSelector | None) -> list[_Series]:
        if selector is None:
            return self._by_metric.get(metric, [])
        if selector.match_labels:
            candidates = self._by_label.get(metric, {}).get(selector.match_labels[0], [])
        else:
            candidates = self._by_metric.get(metric, [])
        return [series for series in candidates if selector.matches(series.labels)]

    def tape(self, cells: Sequence[tuple[str, LabelSelector | None]]) -> SeriesTape:
        """`total(metric, selector, time)` of every cell at once, for times that never go back."""
        return SeriesTape([self._selected(metric, selector) for metric, selector in cells])

    def last_time(self) -> float | None:
        """The latest sample time of any series (None when the file has no rows)."""
        return max((series.times[-1] for series in self._series.values() if series.times), default=None)

    def value(self, metric: str, selector: str | None, time: float) -> float | None:
        """The value of the one series named by `metric` and `selector` (`a=1,b=2`, any order) at `time`."""
        series = self._series.get((metric, _canonical(selector)))
        return None if series is None else series.at(time)

    def total(self, metric: str, selector: LabelSelector | None, time: float) -> float | None:
        """The sum over the metric's series that `selector` selects (all of them when None); None when no
        selected series has a value yet."""
        found = False
        total = 0.0
        for series in self._selected(metric, selector):
            value = series.at(time)
            if value is not None:
                found = True
                total += value
        return total if found else None

    def totals(self, metric: str, selector: LabelSelector | None,
               times: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        """`total` at each of `times` (NaN where it is None), as arrays."""
        found = np.zeros(len(times), dtype=bool)
        out = np.zeros(len(times))
        for series in self._selected(metric, selector):
            stamps = np.asarray(series.times, dtype=np.float64)
            at = np.searchsorted(stamps, times, side="right") - 1
            has = at >= 0
            out = out + np.where(has, np.asarray(series.values, dtype=np.float64)[np.maximum(at, 0)], 0.0)
            found |= has
        return np.where(found, out, np.nan)

    @classmethod
    def from_text(cls, text: str, file: str) -> MetricsSeries:
        return cls(_rows(text, file), file=file)

    @classmethod
    def load(cls, path: str) -> MetricsSeries:
        """The series file `path`; InputError naming file, line and column for anything that is not one."""
        return cls.from_text(read_text(path), path)


def _where(line: int, column: int, name: str) -> str:
    return f"line {line}, column {column} ({name})"


def _rows(text: str, file: str) -> list[tuple[float, str, str | None, float]]:
    reader = csv.reader(io.StringIO(text.removeprefix("\ufeff"), newline=""), strict=True)
    rows: list[tuple[float, str, str | None, float]] = []
    seen: dict[tuple[str, str | None, float], int] = {}
    try:
        header = next(reader, None)
        if header is None:
            raise InputError("empty metrics file: expected the header time,metric,value", file=file)
        names = [h.strip() for h in header]
        allowed = COLUMNS + OPTIONAL_COLUMNS
        for i, name in enumerate(names):
            if name not in allowed or names.index(name) != i:
                problem = "repeated" if name in allowed else "unknown"
                raise InputError(f"bad header: {problem} column {name!r}; expected time,metric,value[,selector]",
                                 file=file, obj=f"line 1, column {i + 1}")
        missing = [c for c in COLUMNS if c not in names]
        if missing:
            raise InputError(f"bad header: no {', '.join(missing)} column; expected time,metric,value[,selector]",
                             file=file, obj="line 1")
        at = {name: names.index(name) for name in names}
        for cells in reader:
            line = reader.line_num
            if not cells or (len(cells) == 1 and not cells[0].strip()):
                continue
            if len(cells) != len(names):
                raise InputError(f"{len(cells)} cells, the header has {len(names)}", file=file, obj=f"line {line}")
            row = _row(cells, at, line, file)
            first = seen.setdefault((row[1], row[2], row[0]), line)
            if first != line:
                raise InputError(f"a second value for metric {row[1]!r} ({row[2] or 'no selector'}) at time "
                                 f"{row[0]:g} (the first is on line {first})", file=file,
                                 obj=_where(line, at["time"] + 1, "time"))
            rows.append(row)
    except csv.Error as exc:
        raise InputError(f"invalid CSV: {exc}", file=file, obj=f"line {reader.line_num}") from None
    return rows


def _row(cells: list[str], at: dict[str, int], line: int, file: str) -> tuple[float, str, str | None, float]:
    def where(name: str) -> str:
        return _where(line, at[name] + 1, name)

    raw_time = cells[at["time"]].strip()
    if raw_time.isascii() and raw_time.isdigit() and len(raw_time) <= 9:  # whole seconds: the common case
        time = float(raw_time)
    elif not _TIME.fullmatch(raw_time):
        raise InputError(f"invalid time {raw_time!r}: seconds or a duration such as 90s or 15m",
                         file=file, obj=where("time"))
    else:
        try:
            time = parse_duration(raw_time)
        except ValueError as exc:
            raise InputError(str(exc), file=file, obj=where("time")) from None
    metric = cells[at["metric"]].strip()
    if not metric:
        raise InputError("empty metric name", file=file, obj=where("metric"))
    raw_value = cells[at["value"]].strip()
    if not raw_value.isascii():
        raise InputError(f"invalid quantity {raw_value!r}: ASCII digits only", file=file, obj=where("value"))
    if raw_value.isdigit() and len(raw_value) <= 18:  # a whole number below int64's limit: the common case
        value = float(int(raw_value))
    else:
        try:
            value = float(parse_quantity(raw_value))
        except QuantityError as exc:
            raise InputError(str(exc), file=file, obj=where("value")) from None
    if not math.isfinite(value):  # pragma: no cover - parse_quantity bounds values to int64
        raise InputError(f"invalid quantity {raw_value!r}", file=file, obj=where("value"))
    selector = None
    if "selector" in at:
        try:
            selector = _canonical(cells[at["selector"]])  # cached: a file repeats its selectors
        except ValueError as exc:
            raise InputError(str(exc), file=file, obj=where("selector")) from None
    return time, metric, selector, value


class SeriesTape:
    """Cells that each sum some series (`MetricsSeries.tape`), read at non-decreasing times as one array: the
    samples of every series involved are merged in time order once, and each read applies the samples up to
    its time."""

    def __init__(self, cells: Sequence[Sequence[_Series]]) -> None:
        ids: dict[int, int] = {}
        series: list[_Series] = []
        pair_cell: list[int] = []
        pair_series: list[int] = []
        for cell, selected in enumerate(cells):
            for one in selected:
                sid = ids.setdefault(id(one), len(series))
                if sid == len(series):
                    series.append(one)
                pair_cell.append(cell)
                pair_series.append(sid)
        self.cells = len(cells)
        self.pair_cell = np.array(pair_cell, dtype=np.int64)
        self.pair_series = np.array(pair_series, dtype=np.int64)
        times = [np.asarray(s.times, dtype=np.float64) for s in series]
        order_ids = [np.full(len(t), sid, dtype=np.int64) for sid, t in enumerate(times)]
        all_times = np.concatenate(times) if times else np.zeros(0)
        order = np.argsort(all_times, kind="stable")
        self.times = all_times[order]
        self.series = (np.concatenate(order_ids) if times else np.zeros(0, dtype=np.int64))[order]
        self.values = (np.concatenate([np.asarray(s.values, dtype=np.float64) for s in series])
                       if series else np.zeros(0))[order]
        self.current = np.zeros(len(series))
        self.known = np.zeros(len(series), dtype=bool)
        self.position = 0
        self.last = -math.inf

    def at(self, time: float) -> npt.NDArray[np.float64]:
        """Each cell's total at `time` (NaN where none of its series has a sample yet)."""
        if time < self.last:
            raise ValueError("a SeriesTape reads forward only")
        self.last = time
        end = int(np.searchsorted(self.times, time, side="right"))
        if end > self.position:
            rows = slice(self.position, end)
            # Repeated indices: the last assignment wins, and rows are in time order.
            self.current[self.series[rows]] = self.values[rows]
            self.known[self.series[rows]] = True
            self.position = end
        totals = np.bincount(self.pair_cell, weights=self.current[self.pair_series], minlength=self.cells)
        found = np.bincount(self.pair_cell, weights=self.known[self.pair_series], minlength=self.cells) > 0
        return np.where(found, totals, np.nan)


@dataclass(frozen=True, slots=True)
class RequestRateModel:
    """A diurnal request rate for an External metric: a sinusoid between `base` and `peak` over `period`
    seconds, highest at `phase` seconds into each period, and zero during `night` (start, end) seconds into the
    period when given (the end may wrap past the period's end). Answers `total` for the metric `metric` whatever
    the selector."""

    base: float
    peak: float
    period: float = 86400.0
    phase: float = 50400.0  # 14:00 when the period is a day starting at midnight
    night: tuple[float, float] | None = None
    metric: str = "requests_per_second"

    def __post_init__(self) -> None:
        numbers = [self.base, self.peak, self.period, self.phase, *(self.night or ())]
        if not all(math.isfinite(x) for x in numbers):
            raise InputError("request-rate model: every number must be finite")
        if self.base < 0 or self.peak < self.base:
            raise InputError(f"request-rate model: need 0 <= base <= peak, got base {self.base:g}, peak {self.peak:g}")
        if self.period <= 0:
            raise InputError(f"request-rate model: period must be positive, got {self.period:g}")

    def rate(self, time: float) -> float:
        into = time % self.period
        if self.night is not None:
            start, end = (x % self.period for x in self.night)
            if (start <= into < end) if start <= end else (into >= start or into < end):
                return 0.0
        swing = (1.0 + math.cos(2.0 * math.pi * (time - self.phase) / self.period)) / 2.0
        return self.base + (self.peak - self.base) * swing

    def total(self, metric: str, selector: LabelSelector | None, time: float) -> float | None:
        return self.rate(time) if metric == self.metric else None


class RateModels:
    """Several request-rate models read at once: `rates(time)` is each model's `rate(time)`."""

    def __init__(self, models: Sequence[RequestRateModel]) -> None:
        self.base = np.array([m.base for m in models], dtype=np.float64)
        self.peak = np.array([m.peak for m in models], dtype=np.float64)
        self.period = np.array([m.period for m in models], dtype=np.float64)
        self.phase = np.array([m.phase for m in models], dtype=np.float64)
        self.has_night = np.array([m.night is not None for m in models], dtype=bool)
        nights = [m.night or (0.0, 0.0) for m in models]
        self.start = np.mod(np.array([n[0] for n in nights], dtype=np.float64), self.period)
        self.end = np.mod(np.array([n[1] for n in nights], dtype=np.float64), self.period)

    def rates(self, time: float) -> npt.NDArray[np.float64]:
        into = np.mod(time, self.period)
        night = self.has_night & np.where(self.start <= self.end, (self.start <= into) & (into < self.end),
                                          (into >= self.start) | (into < self.end))
        swing = (1.0 + np.cos(2.0 * np.pi * (time - self.phase) / self.period)) / 2.0
        return np.where(night, 0.0, self.base + (self.peak - self.base) * swing)


def series_source(*sources: MetricSource) -> Callable[[MetricSpec, float], float | None]:
    """The HPA controller's `metric_values` over these sources (the first with a value wins). The lookup key is
    the resource name for Resource and ContainerResource metrics (the value is then the average utilization in
    percent for a Utilization target, else the per-pod average), the metric name for Pods (the per-pod
    average), Object and External metrics (the total over series the metric's selector selects)."""

    def values(spec: MetricSpec, now: float) -> float | None:
        for source in sources:
            value = source.total(spec.name, spec.selector, now)
            if value is not None:
                return value
        return None

    return values
