"""Metric sources for the HPA: the series file given with `--metrics FILE`, and a built-in request-rate model.

The file is CSV with the header `time,metric,value` and an optional `selector` column (any column order).
`time` is seconds or a Go duration (`90s`, `15m`, `1h30m`); `value` is a Kubernetes quantity (`500m`, `2k`);
`selector` holds the series' labels as `key=value` pairs joined by commas (empty: a series without labels). Rows
may come in any order; a value holds from its time until the next row of the same (metric, selector). Input
is read strictly: a bad header, time or quantity, non-ASCII digits, `_` in numbers, NaN or infinity, or two
rows for one series at one time is an InputError naming the file, the line and the column.

A file is read with Arrow's CSV parser and arrays when its rows are certainly the csv module's (no quotes, `\r` or
blank lines) and valid; otherwise (and to report any error) with the csv module, row by row: the same series either way.
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from decimal import getcontext
from functools import lru_cache
from itertools import pairwise
from typing import TYPE_CHECKING, Protocol, TypeVar

import numpy as np
import numpy.typing as npt

from phalanx.api.autoscaling import MetricSpec
from phalanx.api.objects import LabelSelector
from phalanx.api.quantity import parse_duration, parse_quantity
from phalanx.api.reading import read_text
from phalanx.errors import InputError
from phalanx.extras import available

if TYPE_CHECKING:
    import pyarrow as pa

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


@dataclass(slots=True, eq=False)  # arrays have no truth value: a series equals only itself
class _Series:
    labels: dict[str, str]
    times: npt.NDArray[np.float64]  # increasing
    values: npt.NDArray[np.float64]

    def at(self, time: float) -> float | None:
        i = int(np.searchsorted(self.times, time, side="right")) - 1
        return None if i < 0 else float(self.values[i])


# One series: its metric, its canonical selector (None: no labels), its times (increasing) and values.
_Group = tuple[str, str | None, npt.NDArray[np.float64], npt.NDArray[np.float64]]


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
        groups: list[_Group] = []
        for (metric, key), samples in raw.items():
            samples.sort(key=lambda s: s[0])
            for (t0, _), (t1, _) in pairwise(samples):
                if t0 == t1:
                    raise InputError(f"two values for metric {metric!r} ({key or 'no selector'}) at time {t0:g}",
                                     file=file)
            groups.append((metric, key, np.array([t for t, _ in samples], dtype=np.float64),
                           np.array([v for _, v in samples], dtype=np.float64)))
        self._index(groups, file)

    @classmethod
    def _of(cls, groups: Sequence[_Group], file: str) -> MetricsSeries:
        series = cls.__new__(cls)
        series._index(groups, file)
        return series

    def _index(self, groups: Sequence[_Group], file: str) -> None:
        """Series from `groups`: distinct (metric, key), in order of first appearance."""
        self.file = file
        self._series: dict[tuple[str, str | None], _Series] = {}
        self._by_metric: dict[str, list[_Series]] = {}
        # (metric, one label pair) -> the metric's series with that label, in `_by_metric` order: a selector's
        # first matchLabels pair narrows the series `total` has to look at.
        self._by_label: dict[str, dict[tuple[str, str], list[_Series]]] = {}
        self._changes: dict[tuple[str, LabelSelector | None], npt.NDArray[np.float64]] = {}  # next_change's
        for metric, key, times, values in groups:
            series = _Series(labels=dict(parse_labels(key or "")), times=times, values=values)
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
        selected = self._selected(metric, selector)
        return np.unique(np.concatenate([series.times for series in selected])).tolist() if selected else []

    def _selected(self, metric: str, selector: LabelSelector | None) -> list[_Series]:
        if selector is None:
            return self._by_metric.get(metric, [])
        if selector.match_labels:
            candidates = self._by_label.get(metric, {}).get(selector.match_labels[0], [])
        else:
            candidates = self._by_metric.get(metric, [])
        return [series for series in candidates if selector.matches(series.labels)]

    def next_change(self, metric: str, selector: LabelSelector | None, after: float) -> float | None:
        """The first time after `after` at which some series of `metric` that `selector` selects changes (None:
        none does)."""
        key = (metric, selector)
        times = self._changes.get(key)
        if times is None:
            selected = self._selected(metric, selector)
            times = np.unique(np.concatenate([s.times for s in selected])) if selected else np.zeros(0)
            self._changes[key] = times
        return _first_after(times, after)

    def next_change_of(self, metric: str, selector: str | None, after: float) -> float | None:
        """`next_change` of the one series named by `metric` and `selector` (`a=1,b=2`)."""
        series = self._series.get((metric, _canonical(selector)))
        return None if series is None else _first_after(series.times, after)

    def tape(self, cells: Sequence[tuple[str, LabelSelector | None]]) -> SeriesTape:
        """`total(metric, selector, time)` of every cell at once, for times that never go back."""
        return SeriesTape([self._selected(metric, selector) for metric, selector in cells])

    def last_time(self) -> float | None:
        """The latest sample time of any series (None when the file has no rows)."""
        return max((float(series.times[-1]) for series in self._series.values() if len(series.times)), default=None)

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
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:  # lone surrogates (not from a file): the reader that reports them
            return cls(_rows(text, file), file=file)
        return cls._read(data, file)

    @classmethod
    def load(cls, path: str) -> MetricsSeries:
        """The series file `path`; InputError naming file, line and column for anything that is not one."""
        text = read_text(path)  # checks the file and its UTF-8
        data = text.encode("utf-8")
        del text  # a big file should not be held twice while it is parsed
        return cls._read(data, path)

    @classmethod
    def _read(cls, data: bytes, file: str) -> MetricsSeries:
        groups = _fast_groups(data) if available("pyarrow") else None  # without the `traces` extra: the csv module
        if groups is None:
            return cls(_rows(data.decode("utf-8"), file), file=file)
        return cls._of(groups, file)


def _first_after(times: npt.NDArray[np.float64], after: float) -> float | None:
    at = int(np.searchsorted(times, after, side="right"))
    return float(times[at]) if at < len(times) else None


def _where(line: int, column: int, name: str) -> str:
    return f"line {line}, column {column} ({name})"


def _rows(text: str, file: str) -> list[tuple[float, str, str | None, float]]:
    """The rows of a series file, read with the csv module one at a time: the reader every error comes from."""
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

    try:
        time = _time(cells[at["time"]].strip())
    except ValueError as exc:
        raise InputError(str(exc), file=file, obj=where("time")) from None
    metric = cells[at["metric"]].strip()
    if not metric:
        raise InputError("empty metric name", file=file, obj=where("metric"))
    try:
        value = _value(cells[at["value"]].strip())
    except ValueError as exc:
        raise InputError(str(exc), file=file, obj=where("value")) from None
    selector = None
    if "selector" in at:
        try:
            selector = _canonical(cells[at["selector"]])  # cached: a file repeats its selectors
        except ValueError as exc:
            raise InputError(str(exc), file=file, obj=where("selector")) from None
    return time, metric, selector, value


def _time(raw: str) -> float:
    """Seconds from a stripped time cell; ValueError with the message for the file's reader."""
    if raw.isascii() and raw.isdigit() and len(raw) <= 9:  # whole seconds: the common case
        return float(raw)
    if not _TIME.fullmatch(raw):
        raise ValueError(f"invalid time {raw!r}: seconds or a duration such as 90s or 15m")
    return parse_duration(raw)


def _value(raw: str) -> float:
    """The number in a stripped value cell; ValueError (QuantityError) with the message for the file's reader."""
    if not raw.isascii():
        raise ValueError(f"invalid quantity {raw!r}: ASCII digits only")
    if raw.isdigit() and len(raw) <= 18:  # a whole number below int64's limit: the common case
        return float(int(raw))
    value = float(parse_quantity(raw))
    if not math.isfinite(value):  # pragma: no cover - parse_quantity bounds values to int64
        raise ValueError(f"invalid quantity {raw!r}")
    return value


# The fast reader: pyarrow's CSV parser, then arrays, for files whose rows it reads exactly as `_rows` does.
_BOM = "\ufeff".encode()
_BLOCK_BYTES = 16 << 20
_T = TypeVar("_T")
# Cells converted as arrays: whole seconds as `_time` reads them fast; whole numbers as `_value` reads them fast, and
# plain decimals below 10**18 with no more digits than the Decimal context's precision (parse_quantity's Decimal is
# then exact and rounded once to float, as Arrow's parser rounds; longer ones are rounded to that precision first).
_MAX_SECONDS_DIGITS = 9
_MAX_WHOLE_DIGITS = 18
_DECIMAL = r"^(?:[0-9]{1,18}\.[0-9]*|\.[0-9]+)$"


def _fast_groups(data: bytes) -> list[_Group] | None:
    """The series of the UTF-8 series file `data` as `_rows` and `MetricsSeries` make them, or None when this
    reader cannot be sure of that: `"` or `\\r` anywhere or blank lines (where the csv module's rows and lines may
    differ from Arrow's), an invalid header, no rows, or anything `_rows` would reject (which then reads the file
    again and reports the error)."""
    start = len(_BOM) if data.startswith(_BOM) else 0
    if b'"' in data or b"\r" in data:
        return None
    end = data.find(b"\n", start)
    if end <= start or end + 1 == len(data):
        return None
    names = [h.strip() for h in data[start:end].decode("utf-8").split(",")]
    if (len(set(names)) != len(names) or not set(names) <= {*COLUMNS, *OPTIONAL_COLUMNS}
            or not set(COLUMNS) <= set(names)):
        return None
    import pyarrow as pa  # only a fast read pays for importing Arrow
    import pyarrow.csv as pacsv

    keys = [f"c{i}" for i in range(len(names))]
    few = pa.dictionary(pa.int32(), pa.string())  # metric and selector: a few distinct cells, each read once
    types = {f"c{i}": pa.string() if name in ("time", "value") else few for i, name in enumerate(names)}
    # No quoting (a file with `"` went to `_rows`). Arrow reads a blank line as a row of empty cells where `_rows`
    # skips it: its empty time cell, which `_time` rejects, sends such a file to `_rows` too. The bytes come from a
    # str: valid UTF-8.
    parse = pacsv.ParseOptions(quote_char=False, double_quote=False, escape_char=False, newlines_in_values=False,
                               ignore_empty_lines=False)
    convert = pacsv.ConvertOptions(column_types=types, null_values=[], strings_can_be_null=False,
                                   quoted_strings_can_be_null=False, check_utf8=False)
    try:  # ArrowInvalid: e.g. a row with more or fewer cells than the header
        table = pacsv.read_csv(pa.BufferReader(pa.py_buffer(data)[end + 1:]), parse_options=parse,
                               read_options=pacsv.ReadOptions(column_names=keys, block_size=_BLOCK_BYTES),
                               convert_options=convert)
        table = table.unify_dictionaries()
        rows = table.num_rows
        columns = dict(zip(names, table.columns, strict=True))
        del table  # the cells of each column go once they are converted
        if any(_longest(column) >= csv.field_size_limit() for column in columns.values()):
            return None  # the csv module stops at its field size limit
        times = _numbers(columns.pop("time"), _MAX_SECONDS_DIGITS, None, _time)
        values = _numbers(columns.pop("value"), _MAX_WHOLE_DIGITS, _DECIMAL, _value)
        metrics = _codes(columns.pop("metric"), _metric_name)
        no_selector: tuple[npt.NDArray[np.int64], list[str | None]] = (np.zeros(rows, dtype=np.int64), [None])
        selectors = _codes(columns.pop("selector"), _canonical) if "selector" in columns else no_selector
        if times is None or values is None or metrics is None or selectors is None:
            return None
        return _group(times, values, metrics, selectors)
    except pa.ArrowInvalid:
        return None


def _longest(cells: pa.ChunkedArray) -> int:
    """The most bytes in one cell of a column (of strings, or dictionary-encoded with one dictionary)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_dictionary(cells.type):
        cells = cells.chunk(0).dictionary if cells.num_chunks else pa.array([], pa.string())
    longest = pc.max(pc.binary_length(cells)).as_py()
    return 0 if longest is None else int(longest)


def _metric_name(raw: str) -> str:
    name = raw.strip()
    if not name:
        raise ValueError("empty metric name")
    return name


def _numbers(cells: pa.ChunkedArray, digits: int, decimal: str | None,
             parse: Callable[[str], float]) -> npt.NDArray[np.float64] | None:
    """The numbers in a column of time or value cells: whole numbers of up to `digits` ASCII digits (and cells
    that match the regex `decimal`) converted as arrays, any other cell by `parse` (None when it rejects one)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    out = np.empty(len(cells), dtype=np.float64)
    offset = 0
    odd: list[npt.NDArray[np.intp]] = []
    for chunk in cells.chunks:
        part = out[offset:offset + len(chunk)]
        whole = pc.and_(pc.ascii_is_decimal(chunk), pc.less_equal(pc.binary_length(chunk), digits))
        if pc.all(whole).as_py() is not False:  # None: an empty chunk
            part[:] = pc.cast(chunk, pa.int64()).to_numpy()
        else:
            at = whole.to_numpy(zero_copy_only=False)
            part[at] = pc.cast(chunk.filter(whole), pa.int64()).to_numpy()
            odd.append(offset + np.flatnonzero(~at))
        offset += len(chunk)
    if not odd:
        return out
    rest = np.concatenate(odd)
    if decimal is not None:
        odd_cells = cells.take(rest)
        plain = pc.and_(pc.match_substring_regex(odd_cells, decimal),
                        pc.less_equal(pc.binary_length(odd_cells), getcontext().prec + 1)  # + 1: the point
                        ).to_numpy(zero_copy_only=False)
        out[rest[plain]] = pc.cast(cells.take(rest[plain]), pa.float64()).to_numpy()
        rest = rest[~plain]
    try:
        out[rest] = [parse(raw.strip()) for raw in cells.take(rest).to_pylist()]
    except ValueError:
        return None
    return out


def _codes(cells: pa.ChunkedArray, meaning: Callable[[str], _T]) -> tuple[npt.NDArray[np.int64], list[_T]] | None:
    """A dictionary-encoded column (one dictionary for every chunk) as codes into the distinct meanings of its
    cells, each computed once (None when `meaning` rejects one)."""
    if not cells.num_chunks:
        return np.zeros(0, dtype=np.int64), []
    try:
        meanings = [meaning(raw) for raw in cells.chunk(0).dictionary.to_pylist()]
    except ValueError:
        return None
    distinct: dict[_T, int] = {}
    lookup = np.array([distinct.setdefault(m, len(distinct)) for m in meanings], dtype=np.int64)
    codes = np.empty(len(cells), dtype=np.int64)
    offset = 0
    for chunk in cells.chunks:
        codes[offset:offset + len(chunk)] = lookup[chunk.indices.to_numpy()]
        offset += len(chunk)
    return codes, list(distinct)


def _group(times: npt.NDArray[np.float64], values: npt.NDArray[np.float64],
           metrics: tuple[npt.NDArray[np.int64], list[str]],
           selectors: tuple[npt.NDArray[np.int64], list[str | None]]) -> list[_Group] | None:
    """Rows grouped by series in order of first appearance, each sorted by time; None when a series has two rows
    at one time."""
    import pyarrow as pa
    import pyarrow.compute as pc

    width = len(selectors[1])
    # Codes of (metric, selector) in order of first appearance, as Arrow's hash table numbers them.
    encoded = pc.dictionary_encode(pa.array(metrics[0] * width + selectors[0]))
    series = encoded.indices.to_numpy()
    firsts = encoded.dictionary.to_numpy()
    count = len(firsts)
    bounds = np.concatenate(([0], np.cumsum(np.bincount(series, minlength=count))))
    together = not bool((series[1:] < series[:-1]).any())  # each series' rows in one run, the runs in order
    if not together or _steps(times, bounds, strict=False):
        # Stable: each series' rows stay in file order (NumPy radix-sorts 8- and 16-bit keys).
        narrow = series.astype(np.uint8 if count <= 1 << 8 else np.uint16 if count <= 1 << 16 else np.int32)
        order = np.argsort(narrow, kind="stable")
        if _steps(times[order], bounds, strict=False):  # some series' rows are not in time order
            by_time = np.argsort(times, kind="stable")
            order = by_time[np.argsort(narrow[by_time], kind="stable")]
        times, values = times[order], values[order]
    if _steps(times, bounds, strict=True):
        return None
    groups: list[_Group] = []
    for k, first in enumerate(firsts.tolist()):
        metric, selector = divmod(first, width)
        part = slice(bounds[k], bounds[k + 1])
        groups.append((metrics[1][metric], selectors[1][selector], times[part], values[part]))
    return groups


def _steps(times: npt.NDArray[np.float64], bounds: npt.NDArray[np.int64], *, strict: bool) -> bool:
    """Whether a series (rows bounds[k]:bounds[k+1] of `times`) goes back in time (or stays, when `strict`)."""
    back = times[1:] <= times[:-1] if strict else times[1:] < times[:-1]
    back[bounds[1:-1] - 1] = False  # the first row of each next series
    return bool(back.any())


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

    def rates(self, time: float | npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        """Each model's rate at `time` (times as a column: a row of rates per time)."""
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
