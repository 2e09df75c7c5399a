"""The `--metrics FILE` series (CSV: time, metric, value, optional selector) and the built-in request-rate model."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from phalanx.api.autoscaling import MetricSpec, MetricTarget
from phalanx.api.objects import LabelSelector, Requirement
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


@pytest.mark.parametrize(("text", "expected"), [
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
])
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
