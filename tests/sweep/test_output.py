"""`phalanx sweep --report DIR`: report.json (the `-o json` document), cells.csv, the plots and a self-contained
index.html (phalanx.sweep.output), and a bad DIR failing before any cell runs."""

from __future__ import annotations

import base64
import contextlib
import csv
import html
import io
import json
import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from phalanx.cli import main
from phalanx.sweep import Cell, run_cell
from phalanx.sweep import runner as runner_module
from phalanx.sweep.report import MANIFEST_COLUMNS, TRACE_COLUMNS
from tests.headless import needs_chromium, probe
from tests.traces.builders import small_trace

EXAMPLE = str(Path(__file__).resolve().parents[2] / "examples" / "training-mix")


@dataclass
class Run:
    directory: Path
    out: str
    err: str

    @property
    def document(self) -> dict[str, Any]:
        document: dict[str, Any] = json.loads(self.out)
        return document


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(["sweep", *argv])
    return status, out.getvalue(), err.getvalue()


def report_run(directory: Path, *argv: str) -> Run:
    status, out, err = run(*argv, "--workers", "1", "--report", str(directory), "-o", "json")
    assert status == 0, err
    return Run(directory, out, err)


@pytest.fixture(scope="module")
def trace_run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """Two pod lists × loads 1.0, 1.3 × bestfit, fgd × seeds 1-2: 16 cells of a small openb-like trace."""
    data = tmp_path_factory.mktemp("trace")
    nodes, first = small_trace(data, pods=40, seed=0)
    (data / "other").mkdir()
    _, second = small_trace(data / "other", pods=50, seed=1)
    renamed = data / "openb_pod_list_second.csv"
    os.replace(second, renamed)
    return report_run(tmp_path_factory.mktemp("report") / "trace", "--trace", "openb", "--nodes", nodes,
                      "--pods", first, str(renamed), "--profiles", "bestfit,fgd", "--seeds", "1-2",
                      "--load", "1.0,1.3")


@pytest.fixture(scope="module")
def manifests_run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """training-mix × base, nodes*0.5 × default, gang × seeds 0-1: 8 cells."""
    return report_run(tmp_path_factory.mktemp("report") / "manifests", "--manifests", EXAMPLE, "--what-if",
                      "base,nodes*0.5", "--profiles", "default,gang", "--seeds", "0-1", "--until", "6h")


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def rows_of(directory: Path) -> list[dict[str, str]]:
    with open(directory / "cells.csv", newline="") as handle:
        return list(csv.DictReader(handle))


def seeds_of(document: dict[str, Any]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    return [(result, seed) for result in document["results"] for seed in result["seeds"]]


def number(text: str) -> float | None:
    return float(text) if text else None


# The files


def test_trace_report_files(trace_run: Run) -> None:
    names = sorted(os.listdir(trace_run.directory))
    assert names == ["cells.csv", "index.html", "report.json", "unallocated-by-load.png", "unallocated.png"]
    for name in names:
        assert (trace_run.directory / name).stat().st_size > 0, name
    width, height = png_size((trace_run.directory / "unallocated.png").read_bytes())
    assert width > 500 and height > 600  # a panel per load, one above the other
    assert png_size((trace_run.directory / "unallocated-by-load.png").read_bytes())[0] > 500
    assert f"phalanx: wrote 5 files to {trace_run.directory}" in trace_run.err


def test_manifests_report_files(manifests_run: Run) -> None:
    names = sorted(os.listdir(manifests_run.directory))
    assert names == ["cells.csv", "index.html", "pending.png", "report.json"]
    width, height = png_size((manifests_run.directory / "pending.png").read_bytes())
    assert width > 500 and height > 200


@pytest.mark.parametrize("name", ["trace_run", "manifests_run"])
def test_report_json_is_the_json_document(name: str, request: pytest.FixtureRequest) -> None:
    ran: Run = request.getfixturevalue(name)
    assert (ran.directory / "report.json").read_text() == ran.out  # byte for byte what -o json printed
    assert ran.document["schemaVersion"] == 1


def test_a_single_load_has_no_load_plot(tmp_path: Path) -> None:
    nodes, pods = small_trace(tmp_path, pods=30, seed=2)
    report_run(tmp_path / "r", "--trace", "openb", "--nodes", nodes, "--pods", pods, "--profiles", "fgd")
    assert sorted(os.listdir(tmp_path / "r")) == ["cells.csv", "index.html", "report.json", "unallocated.png"]


# cells.csv


def test_trace_cells_csv(trace_run: Run) -> None:
    rows = rows_of(trace_run.directory)
    assert list(rows[0]) == ["variant", "load", "profile", "seed", "key", "unallocatedGpus",
                             "gpuAllocationAtFullLoad", "fragmentationPercent.atEnd", "pods.failed", "pods.total",
                             "replaySeconds"]
    cells = seeds_of(trace_run.document)
    assert len(rows) == len(cells) == 16
    assert {row["variant"] for row in rows} == {"pods", "second"}
    assert {row["load"] for row in rows} == {"1.0", "1.3"}
    for row, (result, seed) in zip(rows, cells, strict=True):
        assert (row["variant"], float(row["load"]), row["profile"], int(row["seed"]), row["key"]) == (
            result["trace"]["variant"], result["trace"]["load"], result["profile"], seed["seed"], seed["key"])
        assert number(row["unallocatedGpus"]) == seed["unallocatedGpus"]
        assert number(row["gpuAllocationAtFullLoad"]) == seed["gpuAllocationAtFullLoad"]
        assert number(row["fragmentationPercent.atEnd"]) == seed["fragmentationPercent"]["atEnd"]
        assert (number(row["pods.failed"]), number(row["pods.total"])) == (seed["pods"]["failed"],
                                                                           seed["pods"]["total"])
        assert number(row["replaySeconds"]) == seed["replaySeconds"]


def test_manifests_cells_csv(manifests_run: Run) -> None:
    rows = rows_of(manifests_run.directory)
    assert list(rows[0]) == ["manifests", "edit", "profile", "seed", "key", "pods.running", "pods.pending",
                             "gangPodsPending", "notAdmitted.workloads", "notAdmitted.podsNotCreated",
                             "podGroups.scheduled", "waitSeconds.p90", "preemptions"]
    cells = seeds_of(manifests_run.document)
    assert len(rows) == len(cells) == 8
    assert [(row["edit"], row["profile"], row["seed"]) for row in rows[:4]] == [
        ("base", "default", "0"), ("base", "default", "1"), ("base", "gang", "0"), ("base", "gang", "1")]
    for row, (result, seed) in zip(rows, cells, strict=True):
        summary = seed["summary"]
        assert (row["manifests"], row["edit"], row["key"]) == (EXAMPLE, result["input"]["edit"], seed["key"])
        assert number(row["pods.running"]) == summary["pods"]["running"]
        assert number(row["pods.pending"]) == summary["pods"]["pending"]
        assert number(row["gangPodsPending"]) == summary["gangPodsPending"]
        assert number(row["notAdmitted.workloads"]) == summary["notAdmitted"]["workloads"]
        assert number(row["notAdmitted.podsNotCreated"]) == summary["notAdmitted"]["podsNotCreated"]
        assert number(row["podGroups.scheduled"]) == summary["podGroups"]["scheduled"]
        assert number(row["waitSeconds.p90"]) == summary["waitSeconds"]["p90"]
        assert number(row["preemptions"]) == summary["preemptions"]
    assert {row["pods.pending"] for row in rows if row["edit"] == "nodes*0.5"} != {"0"}


# index.html


@pytest.mark.parametrize("name", ["trace_run", "manifests_run"])
def test_index_html_is_self_contained_with_the_tables(name: str, request: pytest.FixtureRequest) -> None:
    ran: Run = request.getfixturevalue(name)
    page = (ran.directory / "index.html").read_text()
    pngs = sorted(p for p in os.listdir(ran.directory) if p.endswith(".png"))
    assert page.count('src="data:image/png;base64,') == len(pngs)
    for png in pngs:  # each plot is embedded as it was written
        assert base64.b64encode((ran.directory / png).read_bytes()).decode() in page
    assert "http://" not in page and "https://" not in page and "<link" not in page
    document = ran.document
    trace = document["grid"]["kind"] == "trace"
    columns = TRACE_COLUMNS if trace else MANIFEST_COLUMNS
    for column, _ in columns:  # the aggregate table's columns, as `render_sweep` names them
        assert f"<th>{html.escape(column)}</th>" in page
    for result in document["results"]:  # and its values: mean ± sd over the seeds
        for _, cell in columns:
            assert f">{html.escape(cell(result['summary'], result['sd']))}</td>" in page
        for seed in result["seeds"]:  # the per-cell table
            assert f">{seed['key']}</td>" in page
    for profile in document["grid"]["profiles"]:
        assert f"<td>{profile}</td>" in page


def test_index_html_shows_the_grid(trace_run: Run, manifests_run: Run) -> None:
    page = (trace_run.directory / "index.html").read_text()
    assert "A trace grid of 16 cells" in page and "1, 1.3" in page
    assert html.escape(trace_run.document["grid"]["nodes"]) in page
    page = (manifests_run.directory / "index.html").read_text()
    assert "A manifests grid of 8 cells" in page and "base, nodes*0.5" in page and "<td>6h</td>" in page


def test_the_table_on_stdout_is_unchanged_by_report(tmp_path: Path) -> None:
    argv = ["--manifests", EXAMPLE, "--profiles", "default", "--workers", "1"]
    status, plain, _ = run(*argv)
    assert status == 0
    status, with_report, err = run(*argv, "--report", str(tmp_path / "r"))
    assert status == 0 and with_report == plain and "sweep: 1 cells" in plain
    assert err.endswith(f"phalanx: wrote 4 files to {tmp_path / 'r'} (open {tmp_path / 'r'}/index.html)\n")


# A bad DIR: one line, exit 2, before any cell runs


def blocked_by_a_file(tmp_path: Path) -> tuple[Path, str]:
    target = tmp_path / "taken"
    target.write_text("")
    return target, "exists and is not a directory"


def blocked_cells_csv(tmp_path: Path) -> tuple[Path, str]:
    target = tmp_path / "report"
    (target / "cells.csv").mkdir(parents=True)
    return target, "cells.csv is a directory: the report writes a file there"


def under_a_file(tmp_path: Path) -> tuple[Path, str]:
    (tmp_path / "file").write_text("")
    return tmp_path / "file" / "report", f"{tmp_path / 'file'} is not a directory"


@pytest.mark.parametrize("bad", [blocked_by_a_file, blocked_cells_csv, under_a_file])
def test_a_bad_report_directory_fails_before_any_cell_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           bad: Any) -> None:
    target, message = bad(tmp_path)
    before = sorted(str(p) for p in tmp_path.rglob("*"))
    calls: list[Cell] = []

    def counting(cell: Cell) -> dict[str, Any]:
        calls.append(cell)
        return run_cell(cell)

    monkeypatch.setattr(runner_module, "run_cell", counting)
    status, out, err = run("--manifests", EXAMPLE, "--profiles", "default", "--workers", "1",
                           "--report", str(target), "-o", "json")
    assert status == 2 and out == "" and calls == []
    assert err == f"phalanx: error: {target}: --report: {message}\n"
    assert sorted(str(p) for p in tmp_path.rglob("*")) == before  # nothing written


@needs_chromium
@pytest.mark.parametrize("width", [1400, 1920])
@pytest.mark.parametrize("name", ["trace_run", "manifests_run"])
def test_index_html_fits_the_window_in_headless_chromium(name: str, width: int, request: pytest.FixtureRequest,
                                                         tmp_path: Path) -> None:
    """Issue 24: at 1,400 px the manifests grid's tables scrolled sideways (their headers never wrapped); now
    neither the page nor a table is wider than its box at 1,400 and 1,920 px."""
    ran: Run = request.getfixturevalue(name)
    _, found = probe(ran.directory / "index.html", width, ".wide", tmp_path)
    assert found["window"] == width and found["page"] <= width, found["page"]
    assert len(found["boxes"]) == 2  # the aggregate table and the per-cell table
    for _, content, box in found["boxes"]:
        assert content <= box, f"a table {content} px wide in a {box} px box"
