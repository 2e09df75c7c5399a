"""`--report DIR`: report.json, series.csv, PNG plots and a self-contained index.html (phalanx.sim.output)."""

from __future__ import annotations

import csv
import html
import io
import json
import os
import re
import struct
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from phalanx.cli import main
from phalanx.errors import InputError
from phalanx.inputs.load import load_paths
from phalanx.scheduler.profiles import load_profile
from phalanx.sim import output
from phalanx.sim.progress import RunProgress, interactive
from phalanx.sim.simulation import Simulation
from tests.headless import body_tag, dump_dom, needs_chromium, probe

# What a card must never show: a raw summary key (camelCase with a dot, `groupCompletionSeconds.p90`) or a
# number in e-notation (`1.588e+04`).
RAW_KEY = re.compile(r"\b[a-z]+[A-Z][A-Za-z0-9]*\.[A-Za-z0-9]+|\b\d+(\.\d+)?[eE][+-]?\d+\b")


def visible_text(page: str) -> str:
    """The page's text without its style, script and tags (what a reader sees, near enough without a browser)."""
    body = re.sub(r"<(style|script)\b.*?</\1>", " ", page, flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", " ", body))


@pytest.fixture(scope="module")
def compare_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("report")
    assert main(["compare", "examples/bare-metal", "--until", "8h", "--report", str(directory)]) == 0
    return directory


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def test_files_are_written_and_not_empty(compare_dir: Path) -> None:
    names = sorted(os.listdir(compare_dir))
    assert names == ["allocation-default.png", "allocation-gang.png", "index.html", "pending.png", "report.json",
                     "series.csv", "waits.png"]
    for name in names:
        assert (compare_dir / name).stat().st_size > 0, name
    for name in names:
        if name.endswith(".png"):
            width, height = _png_size((compare_dir / name).read_bytes())
            assert width > 200 and height > 100


def test_report_json_is_the_contract_with_series(compare_dir: Path) -> None:
    document = json.loads((compare_dir / "report.json").read_text())
    assert document["schemaVersion"] == 1
    assert [r["profile"] for r in document["results"]] == ["default", "gang"]
    default = document["results"][0]
    assert default["summary"]["stranded"]["cpu"] == 0.125
    assert default["series"]["stranded"]["cpu"] == [0.125, 0.125]
    assert set(default["series"]) == {"sampleInterval", "time", "allocated", "useful", "stranded", "podsRunning",
                                      "podsPending", "groupsPending", "preemptions", "waitSeconds"}


def test_series_csv_is_long_format(compare_dir: Path) -> None:
    rows = list(csv.DictReader(io.StringIO((compare_dir / "series.csv").read_text())))
    assert list(rows[0]) == ["profile", "time", "metric", "resource", "value"]
    stranded = [r for r in rows if r["profile"] == "default" and r["metric"] == "stranded" and r["resource"] == "cpu"]
    assert [(r["time"], r["value"]) for r in stranded] == [("0.0", "0.125"), ("28800.0", "0.125")]
    pending = [r for r in rows if r["profile"] == "gang" and r["metric"] == "podsPending"]
    assert [(r["resource"], r["value"]) for r in pending] == [("", "4"), ("", "4")]
    # 2 profiles × 2 samples × (2 resources × 3 fractions + 4 counts)
    assert len(rows) == 2 * 2 * (2 * 3 + 4)


def test_html_is_self_contained_with_one_column_per_profile(compare_dir: Path) -> None:
    page = (compare_dir / "index.html").read_text()
    assert "http://" not in page and "https://" not in page
    assert not re.search(r"""(src|href)=["'](?!data:)""", page)  # every image is inline
    assert page.count('<section class="profile"') == 2
    assert re.findall(r'data-profile="([^"]+)"', page) == ["default", "gang"]
    assert page.count('src="data:image/png;base64,') == 4  # two allocation plots, pending, waits
    assert "grid-template-columns:repeat(2," in page
    assert "cpu stranded" in page and "12.5%" in page


def test_stdout_json_has_no_series(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "examples/bare-metal", "--until", "8h", "-o", "json", "--report",
                 str(tmp_path / "r")]) == 0
    captured = capsys.readouterr()
    assert "series" not in json.loads(captured.out)
    single = json.loads((tmp_path / "r" / "report.json").read_text())
    assert single["profile"] == "default" and "series" in single
    assert "wrote 6 files" in captured.err
    assert (tmp_path / "r" / "index.html").read_text().count('<section class="profile"') == 1


def test_sample_flag(tmp_path: Path) -> None:
    paths = ["examples/web-vs-batch/common", "examples/web-vs-batch/all"]
    assert main(["compare", *paths, "--sample", "2h", "--report", str(tmp_path), "-o", "json"]) == 0
    series = json.loads((tmp_path / "report.json").read_text())["results"][0]["series"]
    assert series["sampleInterval"] == 7200.0
    assert main(["compare", *paths, "--sample", "0s", "--report", str(tmp_path)]) == 2


def test_nothing_half_written_on_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = 0
    real_replace = os.replace

    def flaky(source: str, target: str) -> None:
        nonlocal calls
        calls += 1
        if calls == 2:
            raise OSError(28, "No space left on device")
        real_replace(source, target)

    monkeypatch.setattr(os, "replace", flaky)
    with pytest.raises(InputError, match="No space left on device"):  # one line naming --report, no traceback
        output.write_files(str(tmp_path), {"a.txt": b"a", "b.txt": b"b", "c.txt": b"c"})
    assert sorted(os.listdir(tmp_path)) == ["a.txt"]  # no temporary file left, no partial b.txt


def test_report_path_that_is_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "taken"
    blocker.write_text("")
    assert main(["simulate", "examples/bare-metal", "--until", "1h", "--report", str(blocker)]) == 2
    assert capsys.readouterr().err.startswith(f"phalanx: error: {blocker}: --report: exists and is not a directory")


def _fragmentation_result(profile: str, unallocated: float) -> dict[str, Any]:
    """A result shaped like `compare --trace openb --protocol fragmentation`'s (no series)."""
    loads = list(range(131))
    allocated = [min(k, 100 - unallocated / 62.12) for k in loads]
    return {"schemaVersion": 1, "profile": profile, "featureGates": {},
            "summary": {"unallocatedGpus": unallocated, "gpuAllocationAtFullLoad": 0.9, "gpus": 6212,
                        "pods": {"total": 9000.0, "running": 8000.0, "pending": 0.0, "succeeded": 0.0,
                                 "failed": 1000.0},
                        "allocated": {"cpu": 0.5, "gpu": 0.95}, "replaySeconds": {"mean": 0.8}},
            "allocationCurve": {"arrivedPercent": loads, "allocatedPercent": allocated,
                                "unallocatedGpus": [round(6212 * (100 - a) / 100, 4) for a in allocated],
                                "fullLoadK": 100, "endK": 130}}


def test_fragmentation_protocol_results(tmp_path: Path) -> None:
    document = {"schemaVersion": 1, "results": [_fragmentation_result("bestfit", 430.0),
                                                _fragmentation_result("fgd", 286.0)]}
    written = output.write_report(str(tmp_path), document)
    assert sorted(os.path.basename(p) for p in written) == ["fragmentation.png", "index.html", "report.json"]
    _png_size((tmp_path / "fragmentation.png").read_bytes())
    page = (tmp_path / "index.html").read_text()
    assert page.count('<section class="profile"') == 2
    assert "GPUs unallocated at the end</td><td class=\"v\">430</td>" in page
    assert "GPU allocation at 100% load</td><td class=\"v\">90.0%</td>" in page
    assert "GPUs in the cluster</td><td class=\"v\">6,212</td>" in page
    assert "replay time, mean</td><td class=\"v\">0.80&nbsp;s</td>" in page
    assert not RAW_KEY.search(visible_text(page))
    assert "pod groups scheduled" not in page  # rows no result can fill are left out
    curve = output.allocation_curve(document["results"][1])
    assert curve is not None
    loads, values, in_gpus = curve
    assert in_gpus and loads[-1] == 130.0 and values[-1] == pytest.approx(286.0, abs=0.01)


@pytest.mark.parametrize("curve", [
    [0.0, 10.0, 20.0],
    [{"arrivedLoad": 0.0, "gpuAllocation": 0.0}, {"arrivedLoad": 0.1, "gpuAllocation": 0.1}],
    {"arrivedPercent": [0, 1, 2], "allocatedPercent": [None, 1.0, 2.0]},
])
def test_allocation_curve_shapes(curve: Any) -> None:
    parsed = output.allocation_curve({"allocationCurve": curve, "summary": {"gpus": 100}})
    assert parsed is not None
    loads, values, in_gpus = parsed
    assert in_gpus and loads[-1] in (2.0, 10.0) and values[-1] < 100.0


def test_progress_is_quiet_unless_on_a_terminal() -> None:
    assert not interactive()  # pytest captures stdout
    sink = io.StringIO()
    with RunProgress(enabled=False, console=Console(file=sink)) as progress:
        sim = Simulation(load_paths(["examples/bare-metal"]), load_profile("gang"), until=3600)
        progress.track(sim, "gang", 3600)
        sim.run()
    assert sink.getvalue() == "" and sim.observers == []


def test_progress_bar_draws_on_a_terminal() -> None:
    sink = io.StringIO()
    with RunProgress(enabled=True, delay=0.0, console=Console(file=sink, force_terminal=True, width=100)) as progress:
        sim = Simulation(load_paths(["examples/web-vs-batch/common", "examples/web-vs-batch/all"]),
                         load_profile("gang"))
        progress.track(sim, "gang", 6 * 3600)
        sim.run()
        progress.done()
    assert "gang" in sink.getvalue()


@pytest.fixture(scope="module")
def peers_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """examples/peers under its three profiles (docs/peers.md's command): the cards with the most rows."""
    directory = tmp_path_factory.mktemp("peers")
    assert main(["compare", "examples/peers", "--profiles", "gang,kueue,volcano", "--report", str(directory)]) == 0
    return directory


def test_cards_show_human_labels_and_formatted_values(compare_dir: Path, peers_report: Path) -> None:
    """Issue 24: raw keys (`groupCompletionSeconds.p90 1.588e+04`) sat among the labels; every extra summary
    field now has a label and a formatted value, and fields a standard row shows get no second row."""
    for directory in (compare_dir, peers_report):
        text = visible_text((directory / "index.html").read_text())
        assert not RAW_KEY.search(text), RAW_KEY.search(text)
        assert "notAdmitted" not in text and "workloads not admitted (pods not created)" in text
    page = (peers_report / "index.html").read_text()
    # gang's pod groups complete at p50 11,434 s, p90 15,885 s, max 18,051 s (report.json).
    assert ("pod group completion p50 / p90 / max</td><td class=\"v\">3h10m34s&nbsp;/ 4h24m45s&nbsp;/ 5h51s"
            in page)
    assert "137&nbsp;GiB·h" in page  # a number stays with its unit when a card wraps
    assert '<td class="sub">of them gang members</td>' in page  # indented under pods pending, as on a terminal
    bare = (compare_dir / "index.html").read_text()
    assert "pod group completion p50 / p90 / max</td><td class=\"v\">none</td>" in bare  # nothing completed


@needs_chromium
def test_html_renders_side_by_side_in_headless_chromium(tmp_path: Path) -> None:
    directory = tmp_path / "report"
    assert main(["compare", "examples/bare-metal", "--until", "8h", "--profiles", "default,gang,default",
                 "--report", str(directory)]) == 0
    dom = dump_dom(directory / "index.html", 1400, tmp_path / "chromium")
    # The page's own layout probe: profile sections at 3 distinct x positions, all on one row.
    body = body_tag(dom)
    assert 'data-columns="3"' in body and 'data-rows="1"' in body, body
    assert dom.count('class="profile"') == 3


@needs_chromium
@pytest.mark.parametrize("width", [1400, 1920])
@pytest.mark.parametrize(("example", "profiles"), [("bare-metal", 2), ("peers", 3)])
def test_html_reads_well_in_headless_chromium(example: str, profiles: int, width: int, compare_dir: Path,
                                               peers_report: Path, tmp_path: Path) -> None:
    """Issue 24: at 1,400 px the summary cards overflowed (kueue's `36s / 1h50m36s / 1h50m36s` by 18 px) and
    raw keys sat among the labels. At 1,400 and 1,920 px: the cards side by side, neither the page nor any
    card wider than its box, and no raw key or e-notation in the text a reader sees."""
    directory = {"bare-metal": compare_dir, "peers": peers_report}[example]
    body, found = probe(directory / "index.html", width, "section.profile", tmp_path)
    assert f'data-columns="{profiles}"' in body and 'data-rows="1"' in body, body[:300]
    assert found["window"] == width
    assert found["page"] <= found["window"], found["page"]
    assert len(found["boxes"]) == profiles
    for name, content, box in found["boxes"]:
        assert content <= box, f"{name}: {content} px of content in a {box} px card"
    assert "pod group completion p50 / p90 / max" in found["text"]
    assert not RAW_KEY.search(found["text"]), RAW_KEY.search(found["text"])


@pytest.mark.parametrize(("waits", "limits"), [([0.0, 0.0], (-0.02, 1.0)), ([0.0, 5400.0], (-1.89, 94.5))])
def test_wait_axes_never_degenerate(waits: list[float], limits: tuple[float, float]) -> None:
    """examples/bare-metal binds every pod at once: its wait axis read −0.04 to 0.04 minutes."""
    from matplotlib.figure import Figure

    from phalanx.sim.output import _ecdf, _wait_axis

    ax = Figure().add_subplot()
    _ecdf(ax, waits, "default", {})
    _wait_axis(ax)
    assert ax.get_xlim() == pytest.approx(limits)


@pytest.mark.parametrize(("ends", "limits"), [([0.0], (0.0, 1.0)), ([30.0], (0.0, 1.0)),
                                              ([600.0, 5400.0], (0.0, 90.0))])
def test_time_axes_never_degenerate(ends: list[float], limits: tuple[float, float]) -> None:
    """A run that ends at 0 (pods without durations under --default-duration none) plotted from −0.04 to 0.04
    minutes; the time axis now spans 0 to the latest end, at least one unit."""
    from matplotlib.figure import Figure

    from phalanx.sim.output import _time_axis

    ax = Figure().add_subplot()
    _time_axis(ax, [{"endTime": end} for end in ends], ("minutes", 60.0))
    assert ax.get_xlim() == limits
