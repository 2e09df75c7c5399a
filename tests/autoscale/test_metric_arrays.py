"""Metric values read as arrays (SeriesTape, MetricsSeries.totals, RateModels) give what the one-value readers
give: `total` at each time, and each model's `rate`."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from phalanx.api.objects import LabelSelector
from phalanx.autoscale.metrics import MetricsSeries, RateModels, RequestRateModel

ROWS = st.lists(st.tuples(st.integers(0, 40).map(lambda t: t * 15.0), st.sampled_from(["qps", "depth"]),
                          st.sampled_from([None, "service=a", "service=b", "service=a,zone=x"]),
                          st.floats(0.0, 1000.0, allow_nan=False)), max_size=60)
SELECTORS = [None, LabelSelector(match_labels=(("service", "a"),)), LabelSelector(match_labels=(("zone", "x"),))]


def _unique(rows: list[tuple[float, str, str | None, float]]) -> list[tuple[float, str, str | None, float]]:
    seen: dict[tuple[float, str, str | None], tuple[float, str, str | None, float]] = {}
    for row in rows:
        seen.setdefault(row[:3], row)
    return list(seen.values())


def _same(array: float, value: float | None) -> bool:
    return math.isnan(array) if value is None else array == value


@settings(max_examples=100, deadline=None)
@given(ROWS, st.lists(st.integers(0, 50).map(lambda t: t * 10.0), min_size=1, max_size=20))
def test_a_tape_and_totals_read_what_total_reads(rows: list[tuple[float, str, str | None, float]],
                                                 times: list[float]) -> None:
    series = MetricsSeries(_unique(rows))
    cells = [(metric, selector) for metric in ("qps", "depth", "none") for selector in SELECTORS]
    tape = series.tape(cells)
    for now in sorted(times):
        read = tape.at(now)
        for (metric, selector), got in zip(cells, read, strict=True):
            assert _same(float(got), series.total(metric, selector, now))
    stamps = np.array(sorted(times))
    for metric, selector in cells:
        totals = series.totals(metric, selector, stamps)
        for now, got in zip(stamps, totals, strict=True):
            assert _same(float(got), series.total(metric, selector, float(now)))


def test_a_tape_reads_forward_only() -> None:
    tape = MetricsSeries([(0.0, "qps", None, 1.0)]).tape([("qps", None)])
    assert tape.at(10.0).tolist() == [1.0]
    with pytest.raises(ValueError, match="forward"):
        tape.at(5.0)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 100), st.floats(0, 900), st.sampled_from([86400.0, 3600.0, 600.0]),
                          st.floats(0, 86400), st.one_of(st.none(), st.tuples(st.floats(0, 90000),
                                                                                st.floats(0, 90000)))),
                min_size=1, max_size=5),
       st.floats(0, 7 * 86400))
def test_rate_models_read_together_match_each_model(params: list[tuple[float, float, float, float,
                                                                       tuple[float, float] | None]],
                                                    now: float) -> None:
    models = [RequestRateModel(base=b, peak=b + extra, period=period, phase=phase, night=night)
              for b, extra, period, phase, night in params]
    together = RateModels(models).rates(now)
    for model, got in zip(models, together, strict=True):
        assert float(got) == pytest.approx(model.rate(now), rel=1e-12, abs=1e-9)
