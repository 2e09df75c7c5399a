"""Labels and formats of the summary fields the HTML cards show beyond the standard rows
(phalanx.sim.summary_fields)."""

from __future__ import annotations

import pytest

from phalanx.sim.summary_fields import SHOWN, extra_rows, label_and_format, plain_number


@pytest.mark.parametrize(("value", "text"), [
    (15885.0, "15,885"), (9518.2, "9,518"), (17.102222, "17.1"), (0.533333, "0.533"), (0.000133, "0.000133"),
    (4.5e12, "4,500,000,000,000"), (0.0, "0"), (-2.5, "-2.5"), (float("inf"), "∞"),
])
def test_numbers_never_use_an_exponent(value: float, text: str) -> None:
    assert plain_number(value) == text


def test_known_fields_have_a_label_and_a_unit() -> None:
    rows = extra_rows({"unallocatedGpus": 430.25, "gpuAllocationAtFullLoad": 0.9, "gpus": 6212,
                       "fragmentationPercent": {"atFullLoad": 3.456, "atEnd": 12.0},
                       "replaySeconds": {"mean": 0.8, "cpuMean": 1.234}, "gpuAllocationTimeAverage": None})
    assert rows == {"GPUs unallocated at the end": "430", "GPU allocation at 100% load": "90.0%",
                    "GPUs in the cluster": "6,212", "GPU fragmentation at 100% load": "3.5%",
                    "GPU fragmentation at the end": "12.0%", "replay time, mean": "0.80 s",
                    "replay CPU time, mean": "1.23 s"}  # null fields are left out


def test_a_distribution_is_one_row_of_durations() -> None:
    completion = {"count": 5, "mean": 9518.2, "p50": 11434.0, "p90": 15885.0, "p99": 17834.4, "max": 18051.0}
    assert extra_rows({"groupCompletionSeconds": completion}) == {
        "pod group completion p50 / p90 / max": "3h10m34s / 4h24m45s / 5h51s"}
    assert extra_rows({"groupCompletionSeconds": {"count": 0, "p50": 0.0, "p90": 0.0, "max": 0.0}}) == {
        "pod group completion p50 / p90 / max": "none"}


def test_fields_the_standard_rows_show_get_no_second_row() -> None:
    summary = {key: {"cpu": 0.5} for key in SHOWN}
    assert extra_rows(summary) == {}
    assert extra_rows({"notAdmitted": {"workloads": 1, "podsNotCreated": 4}}) == {}


@pytest.mark.parametrize(("key", "value", "label", "text"), [
    ("queueWaitSeconds.p50", 5400.0, "queue wait, p50", "1h30m"),
    ("idlePercent", 12.345, "idle", "12.3%"),
    ("busyFraction", 0.25, "busy", "25.0%"),
    ("coldStarts", 12345.0, "cold starts", "12,345"),
])
def test_an_unknown_field_is_labelled_from_its_words_and_unit(key: str, value: float, label: str,
                                                              text: str) -> None:
    name, render = label_and_format(key)
    assert (name, render(value)) == (label, text)


def test_resource_hours_rows_never_use_an_exponent() -> None:
    """A long run's stranded hours (thousands of core-hours) read `1,234`, not `1.23e+03`."""
    from phalanx.sim.tables import summary_rows

    summary = {"allocated": {"cpu": 0.5, "memory": 0.5}, "strandedResourceHours": {"cpu": 1234.5,
                                                                                    "memory": 4275.0 * 2**30}}
    cells = {name: cell for name, cell in summary_rows([{"summary": summary}])}
    assert cells["cpu stranded hours"]({"summary": summary}) == "1,234"
    assert cells["memory stranded hours"]({"summary": summary}) == "4,275 GiB·h"
