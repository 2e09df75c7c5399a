"""Time series sampled after every event batch (phalanx.sim.series)."""

from __future__ import annotations

from typing import Any

import pytest

from phalanx.inputs.load import load_paths
from phalanx.scheduler.profiles import load_profile
from phalanx.sim.report import build_report
from phalanx.sim.series import SeriesRecorder
from phalanx.sim.simulation import Simulation

BARE_METAL = ["examples/bare-metal"]
WEB_VS_BATCH = ["examples/web-vs-batch/common", "examples/web-vs-batch/all"]


def _run(paths: list[str], profile: str, until: float | None = None,
         interval: float | None = None) -> dict[str, Any]:
    sim = Simulation(load_paths(paths), load_profile(profile), until=until)
    recorder = SeriesRecorder(interval).attach(sim)
    return build_report(sim.run(), series=recorder)


def test_bare_metal_default_series() -> None:
    series = _run(BARE_METAL, "default", until=8 * 3600)["series"]
    assert series["time"] == [0.0, 28800.0]  # one event batch at 0, then the end of the night
    assert series["allocated"]["cpu"] == [0.84375, 0.84375]
    assert series["useful"]["cpu"] == [0.71875, 0.71875]
    assert series["stranded"]["cpu"] == [0.125, 0.125]  # 8 of 64 CPUs held by two gang members
    assert series["podsRunning"] == [12, 12]
    assert series["podsPending"] == [4, 4]
    assert series["groupsPending"] == [1, 1]
    assert series["preemptions"] == [0, 0]
    assert series["sampleInterval"] is None


def test_bare_metal_gang_series_has_nothing_stranded() -> None:
    series = _run(BARE_METAL, "gang", until=8 * 3600)["series"]
    assert series["allocated"]["cpu"] == [0.84375, 0.84375]
    assert series["stranded"] == {"cpu": [0.0, 0.0], "memory": [0.0, 0.0]}
    assert series["podsPending"] == [4, 4]


@pytest.mark.parametrize("profile", ["default", "gang"])
def test_last_sample_matches_the_summary(profile: str) -> None:
    report = _run(WEB_VS_BATCH, profile)
    series, summary = report["series"], report["summary"]
    assert series["time"][-1] == report["endTime"]
    assert series["podsRunning"][-1] == summary["pods"]["running"]
    assert series["podsPending"][-1] == summary["pods"]["pending"]
    assert series["groupsPending"][-1] == summary["podGroups"]["pending"]
    assert series["preemptions"][-1] == summary["preemptions"] > 0
    for field in ("allocated", "useful", "stranded"):
        assert {name: values[-1] for name, values in series[field].items()} == summary[field]
    lengths = {len(series["time"]), *(len(series[k]) for k in ("podsRunning", "podsPending", "groupsPending",
                                                                 "preemptions"))}
    lengths |= {len(v) for field in ("allocated", "useful", "stranded") for v in series[field].values()}
    assert lengths == {len(series["time"])}
    assert series["preemptions"] == sorted(series["preemptions"])  # cumulative
    assert series["time"] == sorted(series["time"])
    assert len(series["waitSeconds"]["pods"]) == summary["waitSeconds"]["count"]
    assert len(series["waitSeconds"]["groups"]) == summary["groupWaitSeconds"]["count"]


def test_interval_sampling_takes_at_most_one_sample_per_interval() -> None:
    every = _run(WEB_VS_BATCH, "default")["series"]
    hourly = _run(WEB_VS_BATCH, "default", interval=3 * 3600)["series"]
    assert hourly["sampleInterval"] == 3 * 3600
    assert len(hourly["time"]) < len(every["time"])
    bins = [int(t // (3 * 3600)) for t in hourly["time"][:-1]]  # the last sample closes the run
    assert len(bins) == len(set(bins))
    assert set(hourly["time"]) <= set(every["time"])


def test_report_has_no_series_unless_asked() -> None:
    sim = Simulation(load_paths(BARE_METAL), load_profile("gang"), until=3600).run()
    assert "series" not in build_report(sim)


@pytest.mark.parametrize("interval", [0.0, -5.0, float("inf")])
def test_interval_must_be_positive(interval: float) -> None:
    with pytest.raises(ValueError, match="positive"):
        SeriesRecorder(interval)
