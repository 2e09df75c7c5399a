"""The `--metrics FILE` series (CSV: time, metric, value, optional selector) and the built-in request-rate model."""

from __future__ import annotations

import csv
import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from phalanx.api.autoscaling import MetricSpec, MetricTarget
from phalanx.api.objects import LabelSelector, Requirement
from phalanx.autoscale import metrics
from phalanx.autoscale.metrics import MetricsSeries, RequestRateModel, parse_labels, series_source
from phalanx.errors import InputError


def series(text: str) -> MetricsSeries:
    return MetricsSeries.from_text(text, "metrics.csv")


def bad(text: str) -> str:
    with pytest.raises(InputError) as info:
        series(text)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("metrics.csv: ")
    return message


def test_rows_in_any_order_hold_until_the_next_row() -> None:
    data = series("time,metric,value\n15m,qps,2k\n0,qps,500m\n90s,qps,1.5\n2m,latency,3\n")
    assert data.value("qps", None, -1) is None
    assert data.value("qps", None, 0) == 0.5
    assert data.value("qps", None, 89.9) == 0.5
    assert data.value("qps", None, 90) == 1.5
    assert data.value("qps", None, 899) == 1.5
    assert data.value("qps", None, 900) == 2000.0
    assert data.value("qps", None, 1e9) == 2000.0
    assert data.value("latency", None, 119) is None
    assert data.value("latency", None, 120) == 3.0
    assert data.value("other", None, 120) is None
    assert data.metrics() == ["latency", "qps"]
    assert len(data) == 2


def test_selector_column_keys_series_in_any_label_order() -> None:
    data = series('metric,time,value,selector\nqueue,0,10,"queue=orders,env=prod"\nqueue,0,4,queue=mail\n'
                  "queue,60,0,queue=mail\n")
    assert data.value("queue", "env=prod,queue=orders", 5) == 10.0
    assert data.value("queue", "queue=orders, env=prod", 5) == 10.0
    assert data.value("queue", "queue=mail", 30) == 4.0
    assert data.value("queue", "queue=mail", 60) == 0.0
    assert data.value("queue", None, 60) is None
    assert data.value("queue", "queue=none", 60) is None


def test_total_sums_the_series_a_label_selector_selects() -> None:
    """An External metric reads every series its selector selects and sums them (GetExternalMetricReplicas)."""
    data = series("time,metric,value,selector\n0,queue,10,queue=orders\n0,queue,4,queue=mail\n30,queue,6,\n")
    assert data.total("queue", None, 0) == 14.0
    assert data.total("queue", None, 30) == 20.0
    assert data.total("queue", LabelSelector(match_labels=(("queue", "mail"),)), 30) == 4.0
    assert data.total("queue", LabelSelector(expressions=(Requirement("queue", "Exists"),)), 30) == 14.0
    assert data.total("queue", LabelSelector(match_labels=(("queue", "x"),)), 30) is None
    assert data.total("queue", None, -5) is None


def test_load_reads_a_file_and_blank_lines_and_a_bom_are_fine(tmp_path: Path) -> None:
    path = tmp_path / "metrics.csv"
    path.write_text("\ufefftime,metric,value\r\n0,qps,1\r\n\r\n1h,qps,2\r\n", encoding="utf-8")
    data = MetricsSeries.load(str(path))
    assert data.value("qps", None, 3600) == 2.0
    with pytest.raises(InputError, match="not a regular file"):
        MetricsSeries.load(str(tmp_path))


def test_lookups_are_fast_on_long_series() -> None:
    rows = "\n".join(f"{t},qps,{t % 97}" for t in range(0, 200_000, 15))
    data = series("time,metric,value\n" + rows)
    assert data.value("qps", None, 150_007) == (150_000 % 97)
    assert data.value("qps", None, 14.9) == 0.0


BAD_INPUT = [
    ("", "empty metrics file"),
    ("time,metric\n0,qps\n", "line 1: bad header: no value column"),
    ("time,metric,value,region\n", "line 1, column 4: bad header: unknown column 'region'"),
    ("time,metric,value,time\n", "line 1, column 4: bad header: repeated column 'time'"),
    ("Time,metric,value\n", "line 1, column 1: bad header: unknown column 'Time'"),
    ("time,metric,value\n0,qps\n", "line 2: 2 cells, the header has 3"),
    ("time,metric,value\n0,qps,1\nsoon,qps,1\n", "line 3, column 1 (time): invalid time 'soon'"),
    ("time,metric,value\n1_0,qps,1\n", "line 2, column 1 (time): invalid time '1_0'"),
    ("time,metric,value\n\uff11\uff10,qps,1\n", "line 2, column 1 (time): invalid time"),
    ("time,metric,value\nnan,qps,1\n", "line 2, column 1 (time): invalid time 'nan'"),
    ("time,metric,value\ninf,qps,1\n", "line 2, column 1 (time): invalid time 'inf'"),
    ("time,metric,value\n-5,qps,1\n", "line 2, column 1 (time): invalid time '-5'"),
    ("time,metric,value\n1e3,qps,1\n", "line 2, column 1 (time): invalid time '1e3'"),
    ("time,metric,value\n5x,qps,1\n", "line 2, column 1 (time): invalid time '5x'"),
    ("time,metric,value\n0, ,1\n", "line 2, column 2 (metric): empty metric name"),
    ("time,metric,value\n0,qps,lots\n", "line 2, column 3 (value): invalid quantity 'lots'"),
    ("time,metric,value\n0,qps,1_000\n", "line 2, column 3 (value): invalid quantity '1_000'"),
    ("time,metric,value\n0,qps,NaN\n", "line 2, column 3 (value): invalid quantity 'NaN'"),
    ("time,metric,value\n0,qps,inf\n", "line 2, column 3 (value): invalid quantity 'inf'"),
    ("time,metric,value\n0,qps,\u0661\u0662\n", "line 2, column 3 (value): invalid quantity"),
    ("time,metric,value\n0,qps,-1\n", "line 2, column 3 (value): negative quantity '-1'"),
    ("time,metric,value\n0,qps,1e400\n", "line 2, column 3 (value): quantity '1e400' is too large"),
    ("time,metric,value\n0,qps,\n", "line 2, column 3 (value): invalid quantity ''"),
    ("time,metric,value,selector\n0,qps,1,queue\n", "line 2, column 4 (selector): invalid selector 'queue'"),
    ("time,metric,value,selector\n0,qps,1,\"a=1,a=2\"\n", "line 2, column 4 (selector): invalid selector 'a=1,a=2'"),
    ("time,metric,value\n0,qps,1\n0s,qps,2\n", "line 3, column 1 (time): a second value for metric 'qps'"),
    ('time,metric,value\n0,"qps"x,1\n', "line 2: invalid CSV"),
]


@pytest.mark.parametrize(("text", "expected"), BAD_INPUT)
def test_bad_input_names_file_line_and_column(text: str, expected: str) -> None:
    assert expected in bad(text)


def test_programmatic_rows_reject_two_values_at_one_time() -> None:
    with pytest.raises(InputError, match="two values for metric 'qps'"):
        MetricsSeries([(0.0, "qps", None, 1.0), (0.0, "qps", None, 2.0)])


def test_parse_labels_sorts_and_checks() -> None:
    assert parse_labels(" b=2 , a=1") == (("a", "1"), ("b", "2"))
    assert parse_labels("") == ()
    assert parse_labels("a=") == (("a", ""),)
    for raw in ("=1", "a", "a=1,", "a b=1", "a=b c"):
        with pytest.raises(ValueError):
            parse_labels(raw)


def test_request_rate_model_is_a_diurnal_sinusoid_with_optional_night() -> None:
    model = RequestRateModel(base=10, peak=110, phase=14 * 3600)
    assert model.rate(14 * 3600) == pytest.approx(110)
    assert model.rate(2 * 3600) == pytest.approx(10)
    assert model.rate(14 * 3600 + 86400) == pytest.approx(110)
    assert model.rate(8 * 3600) == pytest.approx(60)
    night = RequestRateModel(base=10, peak=110, phase=14 * 3600, night=(22 * 3600, 6 * 3600))
    assert night.rate(23 * 3600) == 0.0
    assert night.rate(3 * 3600 + 86400) == 0.0
    assert night.rate(6 * 3600) > 0
    assert night.rate(14 * 3600) == pytest.approx(110)
    daytime_off = RequestRateModel(base=1, peak=2, night=(3600, 7200))
    assert daytime_off.rate(3600) == 0.0 and daytime_off.rate(7200) > 0
    assert model.total("requests_per_second", None, 14 * 3600) == pytest.approx(110)
    assert model.total("other", None, 0) is None


@pytest.mark.parametrize("kwargs", [
    {"base": -1, "peak": 1}, {"base": 5, "peak": 1}, {"base": 0, "peak": 1, "period": 0},
    {"base": 0, "peak": math.nan}, {"base": 0, "peak": 1, "night": (0, math.inf)},
])
def test_request_rate_model_rejects_nonsense(kwargs: dict[str, float]) -> None:
    with pytest.raises(InputError, match="request-rate model"):
        RequestRateModel(**kwargs)  # type: ignore[arg-type]


def test_series_source_feeds_the_controller_first_source_wins() -> None:
    data = series("time,metric,value,selector\n0,queue,7,queue=orders\n0,cpu,75,\n")
    model = RequestRateModel(base=5, peak=5, metric="queue")
    values = series_source(data, model)
    external = MetricSpec(type="External", name="queue", target=MetricTarget(type="Value", value=1),
                          selector=LabelSelector(match_labels=(("queue", "orders"),)))
    other = MetricSpec(type="External", name="queue", target=MetricTarget(type="Value", value=1),
                       selector=LabelSelector(match_labels=(("queue", "mail"),)))
    cpu = MetricSpec(type="Resource", name="cpu", target=MetricTarget(type="Utilization", average_utilization=50))
    assert values(external, 10) == 7.0
    assert values(other, 10) == 5.0  # the file has no such series: the model answers
    assert values(cpu, 10) == 75.0
    assert series_source(data)(other, 10) is None


# The fast reader (Arrow, arrays) against the csv module's, which every error message comes from.

def slow(text: str) -> MetricsSeries:
    return MetricsSeries(metrics._rows(text, "metrics.csv"), file="metrics.csv")


def fast(text: str) -> MetricsSeries:
    groups = metrics._fast_groups(text.encode("utf-8"))
    assert groups is not None, "the fast reader declined the file"
    return MetricsSeries._of(groups, "metrics.csv")


def no_nan(values: np.ndarray) -> list[float | None]:
    return [None if math.isnan(x) else x for x in values.tolist()]


def contents(data: MetricsSeries) -> list[object]:
    """Everything a MetricsSeries holds and answers, as plain values (series in their order, by position)."""
    position = {id(s): i for i, s in enumerate(data._series.values())}
    held = [data.file,
            [(key, s.labels, s.times.dtype, s.values.dtype, s.times.tolist(), s.values.tolist())
             for key, s in data._series.items()],
            [(metric, [position[id(s)] for s in group]) for metric, group in data._by_metric.items()],
            [(metric, [(pair, [position[id(s)] for s in group]) for pair, group in labelled.items()])
             for metric, labelled in data._by_label.items()]]
    times = sorted({t for s in data._series.values() for t in s.times.tolist()})
    probes = sorted({-1.0, *times, *(t + 0.5 for t in times)})
    answers: list[object] = [data.metrics(), data.last_time(), len(data)]
    for metric in data.metrics():
        answers.append(data.times(metric))
        answers.append([data.total(metric, None, t) for t in probes])
        answers.append(no_nan(data.totals(metric, None, np.array(probes))))
    for metric, key in data._series:
        answers.append([data.value(metric, key, t) for t in probes])
    cells = [(metric, None) for metric in data.metrics()]
    if cells:
        tape = data.tape(cells)
        answers.append([no_nan(tape.at(t)) for t in probes])
    for answer in answers:
        for item in answer if isinstance(answer, list) else [answer]:
            assert not isinstance(item, np.generic), "answers are Python numbers"
    return [held, answers]


def same_as_slow(text: str) -> MetricsSeries:
    """The fast reader's series, after checking they are the slow reader's in every respect."""
    data = fast(text)
    assert contents(data) == contents(slow(text))
    return data


FAST_FILES = {
    "durations": "time,metric,value\n15m,qps,2\n0,qps,1\n90s,qps,3\n1h30m,qps,4\n1.5,qps,5\n2d,lat,1\n.5,lat,2\n",
    "quantities": "time,metric,value\n0,cpu,500m\n1,cpu,2k\n2,cpu,1.5\n3,cpu,16Gi\n4,cpu,1e3\n5,cpu,+7\n6,cpu,.25\n"
                  "7,cpu,007\n8,cpu,123456789012345678\n9,cpu,1234567890123456789\n10,cpu,0.1\n11,cpu,3.\n",
    # Unquoted, a selector has one label (a comma would end the cell): its spaces vary, and series come in any order.
    "selectors in several orders": "time,metric,value,selector\n0,q,2,b=2\n0,r,5,a=1\n60,q,3,b=2\n30,q,4,a=1\n"
                                   "0,q,1,a=1\n0,r,6,b=2\n",
    "one series however its label is written": "time,metric,value,selector\n0,q,1,a=1\n60,q,2, a=1 \n"
                                               "120,q,3,a = 1\n180,q,4,\ta=1\n",
    "empty and blank selectors": "time,metric,value,selector\n0,q,1,\n60,q,2, \n0,q,3,a=1\n0,r,4,\n",
    "no selector column": "time,metric,value\n0,qps,1\n15,qps,2\n0,lat,3\n",
    "reordered columns": "selector,value,metric,time\nx=1,1,qps,0\nx=2,2,qps,0\nx=1,3,qps,30\n",
    "spaces in the header and cells": " value , time ,metric\n 1 , 0 , qps \n2,15,qps\n 3,  30s,qps \n",
    "metric names that strip to one": "time,metric,value\n0,qps,1\n15, qps,2\n30,qps\u00a0,3\n",
    "a byte order mark": "\ufefftime,metric,value\n0,qps,1\n15,qps,2\n",
    "no newline at the end": "time,metric,value\n0,qps,1\n15,qps,2",
    "rows in any order": "time,metric,value,selector\n30,q,3,s=a\n0,q,1,s=b\n15,q,2,s=a\n0,q,0,s=a\n45,q,9,s=b\n",
    "interleaved series in time order": "time,metric,value,selector\n0,q,1,s=a\n0,q,2,s=b\n15,q,3,s=a\n15,q,4,s=b\n",
    "the same time in other series": "time,metric,value,selector\n0,q,1,s=a\n0,r,1,s=a\n0,q,1,\n0,r,1,\n",
    "large and odd numbers": "time,metric,value\n999999999,q,999999999999999999\n1000000000,q,1\n0,q,0\n",
    "long decimals": "time,metric,value\n0,q,9007199254740993.0\n1,q,0.30000000000000004441\n"
                     "2,q,1.00000000000000011102230246251565404236316680908203125\n"
                     "3,q,1.00000000000000011102230246251565404236316680908203126\n4,q,.000000000000000000001\n"
                     "5,q,123456789012345678.99999999999999999999\n",
    "non-ASCII and odd names": "time,metric,value,selector\n0,qps\u00e9,1,app=cafe-1\n0,x\x00y,2,\n"
                               "0,\u2003\u00e9 ,3,\n",
}


@pytest.mark.parametrize("name", FAST_FILES)
@pytest.mark.parametrize("block", [None, 64])
def test_the_fast_reader_gives_the_slow_readers_series(name: str, block: int | None,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    if block is not None:  # Arrow then reads the rows in several chunks, each with its own dictionaries
        monkeypatch.setattr(metrics, "_BLOCK_BYTES", block)
    text = FAST_FILES[name]
    expected = contents(same_as_slow(text))
    monkeypatch.setattr(metrics, "_rows", None)  # `from_text` must not need the slow reader
    assert contents(series(text)) == expected


def test_the_fast_reader_reads_files_from_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "metrics.csv"
    text = "\ufeffmetric,time,value,selector\n" + "".join(f"q,{t},{t % 7},s={t % 3}\n" for t in range(0, 9000, 15))
    path.write_text(text, encoding="utf-8")
    expected = contents(MetricsSeries(metrics._rows(text, str(path)), file=str(path)))
    monkeypatch.setattr(metrics, "_rows", None)  # any use of the slow reader fails
    assert contents(MetricsSeries.load(str(path))) == expected


SLOW_FILES = {
    "quoted cells": 'time,metric,value,selector\n0,qps,1,"a=1,b=2"\n',
    "CRLF line ends": "time,metric,value\r\n0,qps,1\r\n15,qps,2\r\n",
    "a blank line": "time,metric,value\n0,qps,1\n\n15,qps,2\n",
    "blank lines at the end": "time,metric,value\n0,qps,1\n\n\n",
    "a line of spaces": "time,metric,value\n0,qps,1\n   \n15,qps,2\n",
    "only a header": "time,metric,value\n",
    "a header without a line end": "time,metric,value",
}


@pytest.mark.parametrize("name", SLOW_FILES)
def test_files_the_fast_reader_cannot_vouch_for_go_to_the_slow_reader(name: str) -> None:
    text = SLOW_FILES[name]
    assert metrics._fast_groups(text.encode("utf-8")) is None
    assert contents(series(text)) == contents(slow(text))


def test_a_cell_past_the_csv_modules_field_limit_goes_to_the_slow_reader(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(csv, "field_size_limit", lambda: 8)
    text = "time,metric,value\n0,qps_total_per_second,1\n"
    assert metrics._fast_groups(text.encode("utf-8")) is None
    fine = "time,metric,value\n0,qps,1\n"
    assert metrics._fast_groups(fine.encode("utf-8")) is not None


def error(read: Callable[[], object]) -> str:
    with pytest.raises(InputError) as info:
        read()
    return str(info.value)


MANY = "".join(f"{t},qps,{t}\n" for t in range(0, 1500, 15))
ERROR_FILES = [
    "time,metric,value\n" + MANY + "15m,qps,1\n",  # a duplicate late in the file, as a duration
    "time,metric,value\n" + MANY + "10,qps,x\n",
    "time,metric,value\n" + MANY + "soon,qps,1\n",
    "time,metric,value\n" + MANY + "10, ,1\n",
    "time,metric,value\n" + MANY + "10,qps\n",
    "time,metric,value\n" + MANY + "10,qps,1,2\n",
    "time,metric,value,selector\n0,q,1,a=1\n0,q,2,a=1 \n",
    "time,metric,value,selector\n0,q,1,a=1\n5,q,x,bad\n",  # the first bad cell of a row: the value
    "time,metric,value,selector\n0,q,1,a=1\n5,q,1,bad\n3,q,x,a=1\n",  # the first bad row in the file
    "time,metric,value\n0,q,1\n5,q,-1\n",
    "time,metric,value\n0,q,1\n5,q,1e400\n",
    "time,metric,value\n0,q,1\n5,q,99999999999999999999\n",
    "time,metric,value\n0,q,1\n5,q,100000000000000000000.5\n",
    "time,metric,value\n0,q,1\n99999999999999999999999999999999999999999,q,1\n",
    "time,metric,value\n0,q,1\n9223372037,q,1\n",  # ten digits: past Go's longest duration
    "time,metric,value\n0,q,1\n5,q,\u0661\n",
    "time,metric,value\n0,q,1\n\uff15,q,1\n",
    "time,metric,value\n0,q,1\n1000000000000000000000d,q,1\n",
    "time,metric,value\n15,q,1\n30,q,1\n15,q,1\n",
    "\ntime,metric,value\n0,qps,1\n",
    "time,metric,value\n0,qps,1\n\n0,qps,1\n",
]


@pytest.mark.parametrize("text", ERROR_FILES + [text for text, _ in BAD_INPUT])
def test_errors_are_the_slow_readers_word_for_word(text: str) -> None:
    expected = error(lambda: slow(text))
    assert error(lambda: series(text)) == expected
    assert metrics._fast_groups(text.encode("utf-8")) is None


def test_load_reports_errors_as_the_slow_reader_does(tmp_path: Path) -> None:
    path = tmp_path / "metrics.csv"
    text = "time,metric,value\n" + MANY + "15m,qps,1\n"
    path.write_text(text, encoding="utf-8")
    message = error(lambda: MetricsSeries.load(str(path)))
    assert message == error(lambda: MetricsSeries(metrics._rows(text, str(path)), file=str(path)))
    assert message.startswith(f"{path}: line 102, column 1 (time): a second value for metric 'qps' "
                              "(no selector) at time 900 (the first is on line 62)")


def test_text_with_lone_surrogates_is_read_by_the_slow_reader() -> None:
    assert "invalid selector" in error(lambda: series("time,metric,value,selector\n0,q,1,a=\ud800\n"))


GOOD = {
    "time": st.one_of(st.integers(0, 10**12).map(str),
                      st.sampled_from(["15s", "1m", "1h30m", "90s", "1.5", ".5", "2.", " 30", "45 ", "00"])),
    "value": st.one_of(st.integers(0, 10**20).map(str),
                       st.integers(0, 40).flatmap(lambda places: st.decimals(0, 10**19, places=places)).map(str),
                       st.sampled_from(["500m", "2k", "1Ki", "1e3", "3.", ".5", " 7", "8 ", "+1", "0.1",
                                        "1.00000000000000011102230246251565404236316680908203125"])),
    "metric": st.sampled_from(["qps", "lat", " qps", "qps\u2003", "q\u00e9"]),
    "selector": st.sampled_from(["", " ", "a=1", "b=2", " a = 1 ", "c=3"]),
}
QUOTED = st.sampled_from(['"a=1,b=2"', '"b=2, a=1"', '"b=2"'])  # multi-label selectors are quoted: the slow reader
BAD = {
    "time": st.sampled_from(["x", "", "-1", "1e3", "\uff11", "1_0", "nan"]),
    "value": st.sampled_from(["-1", "x", "", "1_0", "NaN", "1e400", "\u0661"]),
    "metric": st.sampled_from(["", "  "]),
    "selector": st.sampled_from(["bad", '"a=1,a=2"', "a=\u00e9"]),
}


@st.composite
def csv_files(draw: st.DrawFn) -> str:
    """Small series files, valid about half the time (one bad cell, or two rows for one series at one time)."""
    columns = draw(st.permutations(["time", "metric", "value", *draw(st.sampled_from([[], ["selector"]]))]))
    good = {**GOOD, "selector": GOOD["selector"] | QUOTED} if draw(st.booleans()) else GOOD
    rows = draw(st.lists(st.fixed_dictionaries({c: good[c] for c in columns}), min_size=1, max_size=12))
    if draw(st.booleans()):  # distinct times: no duplicates
        rows = [{**row, "time": str(15 * i)} for i, row in enumerate(rows)]
    if draw(st.booleans()):
        column = draw(st.sampled_from(columns))
        rows[draw(st.integers(0, len(rows) - 1))][column] = draw(BAD[column])
    bom = "\ufeff" if draw(st.booleans()) else ""
    return bom + ",".join(columns) + "\n" + "".join(",".join(row[c] for c in columns) + "\n" for row in rows)


@settings(max_examples=300, deadline=None)
@given(csv_files())
def test_the_fast_reader_agrees_with_the_slow_one(text: str) -> None:
    try:
        expected = contents(slow(text))
    except InputError as exc:
        assert metrics._fast_groups(text.encode("utf-8")) is None
        assert error(lambda: series(text)) == str(exc)
        return
    assert contents(series(text)) == expected
    if '"' not in text:  # a file the fast reader takes
        assert contents(fast(text)) == expected
