"""Human labels and formatted values for the summary fields the standard rows (`tables.summary_rows`) do not
show, for the HTML report's cards: the fragmentation protocol's numbers, pod group completion times, and any
field a later report adds. No card shows a raw camelCase key or a number in e-notation: a known field has its
label and unit here; an unknown one is labelled from its words and formatted by its name's unit suffix."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import Any

from phalanx.api.quantity import format_duration

# Summary keys the standard rows already show (or, for allocatedResourceHours, that the time-averaged
# fraction rows restate): they get no card row of their own.
SHOWN = frozenset({
    "pods", "gangPodsPending", "notAdmitted", "podGroups", "allocated", "useful", "stranded",
    "strandedResourceHours", "allocatedResourceHours", "waitSeconds", "groupWaitSeconds", "preemptions",
    "evictions", "lostResourceHours", "timeAveragedAllocated", "waitSecondsIncludingPending", "makespan",
})


def plain_number(value: float, digits: int = 3) -> str:
    """A number as people write it: `digits` significant figures, never an exponent (`15885.0` → `15,885`,
    `0.000133` → `0.000133`), thousands separated."""
    if not math.isfinite(value):
        return "∞" if value > 0 else "-∞" if value < 0 else "—"
    if value == int(value) and abs(value) < 1e15:
        return f"{int(value):,}"
    magnitude = math.floor(math.log10(abs(value)))
    decimals = max(0, digits - 1 - magnitude)
    text = f"{value:,.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def count(value: float) -> str:
    return plain_number(value)


def duration(value: float) -> str:
    return format_duration(value)


def fraction(value: float) -> str:
    return f"{100 * value:.1f}%"


def percent(value: float) -> str:
    return f"{value:.1f}%"


def wall_seconds(value: float) -> str:
    """Seconds of the machine's time (a replay's), not simulated time: kept to hundredths."""
    return f"{value:.2f} s"


Format = Callable[[float], str]

# Scalar fields (and `outer.inner` fields of one-level objects): label and format.
FIELDS: dict[str, tuple[str, Format]] = {
    "gpus": ("GPUs in the cluster", count),
    "unallocatedGpus": ("GPUs unallocated at the end", plain_number),
    "unallocatedGpusSd": ("GPUs unallocated at the end, sd over seeds", plain_number),
    "unallocatedGpusAtFullLoad": ("GPUs unallocated at 100% load", plain_number),
    "unallocatedGpusFinal": ("GPUs unallocated after the last pod", plain_number),
    "gpuAllocationAtFullLoad": ("GPU allocation at 100% load", fraction),
    "gpuAllocationTimeAverage": ("GPU allocation, time-averaged", fraction),
    "fragmentationPercent.atFullLoad": ("GPU fragmentation at 100% load", percent),
    "fragmentationPercent.atEnd": ("GPU fragmentation at the end", percent),
    "replaySeconds": ("replay time", wall_seconds),
    "replaySeconds.mean": ("replay time, mean", wall_seconds),
    "replaySeconds.max": ("replay time, max", wall_seconds),
    "replaySeconds.total": ("replay time, total", wall_seconds),
    "replaySeconds.cpuMean": ("replay CPU time, mean", wall_seconds),
    "replayCpuSeconds": ("replay CPU time", wall_seconds),
}
# Distributions of simulated durations ({count, mean, p50, p90, p99, max}): one row, p50 / p90 / max.
DISTRIBUTIONS: dict[str, str] = {
    "groupCompletionSeconds": "pod group completion p50 / p90 / max",
}
_QUANTILES = ("p50", "p90", "max")


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def words(key: str) -> str:
    """`unallocatedGpusAtFullLoad` → `unallocated gpus at full load`; `outer.inner` → `outer, inner`."""
    return ", ".join(re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", part).lower() for part in key.split("."))


def guessed(key: str) -> tuple[str, Format]:
    """Label and format of a field this module does not know, from its name's unit suffix
    (`queueWaitSeconds.p50` → `queue wait, p50` as a duration)."""
    parts = key.split(".")
    for suffix, unit in (("Seconds", duration), ("Percent", percent), ("Fraction", fraction)):
        for i, part in enumerate(parts):
            if part.endswith(suffix) and len(part) > len(suffix):
                parts[i] = part[:-len(suffix)]
                return words(".".join(parts)), unit
    return words(key), plain_number


def label_and_format(key: str) -> tuple[str, Format]:
    return FIELDS.get(key) or guessed(key)


def extra_rows(summary: Any) -> dict[str, str]:
    """The card rows (label → formatted value) of a summary's fields the standard rows do not show, in the
    summary's order; nested objects are read one level deep. Fields without a number (null) are left out."""
    rows: dict[str, str] = {}
    if not isinstance(summary, Mapping):
        return rows
    for key, value in summary.items():
        if key in SHOWN:
            continue
        if key in DISTRIBUTIONS and isinstance(value, Mapping):
            if not value.get("count"):
                rows[DISTRIBUTIONS[key]] = "none"
            elif all(_is_number(value.get(q)) for q in _QUANTILES):
                rows[DISTRIBUTIONS[key]] = " / ".join(duration(float(value[q])) for q in _QUANTILES)
        elif _is_number(value):
            label, render = label_and_format(key)
            rows[label] = render(float(value))
        elif isinstance(value, Mapping):
            for inner, number in value.items():
                if _is_number(number):
                    label, render = label_and_format(f"{key}.{inner}")
                    rows[label] = render(float(number))
    return rows
