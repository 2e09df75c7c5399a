"""Odd command-line arguments end as bad input does: exit 2 and one line `phalanx: error: FLAG: ...`, never a
traceback, a usage block or SystemExit; and whatever the input holds, the output is written (the campaign's
`--seed -1`, `--manifests ,`, `arrivals*<400 digits>` and the lone surrogate that stopped the table)."""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from phalanx.cli import main
from phalanx.sim import run as run_api
from phalanx.sim.report import build_report
from tests.test_cli_errors import fails_with, run

EXAMPLE = "examples/bare-metal"
NINES = "9" * 400


@pytest.mark.parametrize(("argv", "parts"), [
    (["simulate", EXAMPLE, "--seed", "-1"], ["--seed: want a whole number from 0 to 18446744073709551615, got '-1'"]),
    (["simulate", EXAMPLE, "--seed", "1" + "0" * 20], ["--seed: want a whole number"]),
    (["simulate", EXAMPLE, "--seed", "9" * 5000], ["--seed: want a whole number", "'99999"]),
    (["simulate", EXAMPLE, "--seed", "nan"], ["--seed: want a whole number"]),
    (["verify", EXAMPLE, "--seed", "-3"], ["--seed: want a whole number"]),
    (["verify", EXAMPLE, "--profile", "volcano"], ["--profile", "no real Volcano"]),
    (["compare", "--trace", "openb", "--nodes", "n.csv", "--pods", "p.csv", "--load", "nan"],
     ["--load: must be above 0 and at most 10"]),
    (["compare", "--trace", "openb", "--nodes", "n.csv", "--pods", "p.csv", "--load", "1e308"], ["--load: must be"]),
    (["compare", "--trace", "openb", "--nodes", "n.csv", "--pods", "p.csv", "--load", "-1"], ["--load: must be"]),
    (["compare", "--trace", "openb", "--nodes", "n.csv", "--pods", "p.csv", "--seeds", "0-99999999999"],
     ["--seeds: names more than 10000 seeds"]),
    (["run", "--leader-elect-lease-duration", "inf"], ["--leader-elect-lease-duration: want a positive number"]),
    (["simulate", EXAMPLE, "--until", "nan"], ["--until: invalid duration"]),
    (["simulate", EXAMPLE, "--until", NINES], ["--until: invalid duration '9999", "(402 characters)"]),
    (["simulate", EXAMPLE, "--until", "3000000d"], ["--until: duration '3000000d' is longer than Go's maximum"]),
    (["simulate", EXAMPLE, "--report", "/tmp", "--sample", "-5s"], ["--sample: expected one argument"]),
    (["simulate", EXAMPLE, "--until", "1m", "--report", "/tmp/phalanx-never", "--sample=-5s"],
     ["--sample: invalid duration '-5s'"]),
    (["simulate", "/nonexistent.yaml", "--sample=0"], ["--sample: must be a positive duration"]),  # before loading
    (["compare", "/nonexistent.yaml", "--sample=nan"], ["--sample: invalid duration"]),
    (["simulate", EXAMPLE, "-o", "html"], ["-o/--output: invalid choice: 'html'"]),
    (["simulate", EXAMPLE, "--no-such-flag"], ["unrecognized arguments: --no-such-flag"]),
    (["teleport"], ["command: invalid choice: 'teleport'"]),
    ([], ["the following arguments are required: command"]),
    (["validate"], ["validate: the following arguments are required: FILE_OR_DIR"]),
    (["simulate", "bad\npath"], ["bad\\npath: no such file or directory"]),
])
def test_odd_arguments_are_one_line_and_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str],
                                               parts: list[str]) -> None:
    fails_with(capsys, argv, *parts)


@pytest.mark.parametrize(("argv", "parts"), [
    (["--manifests", ","], ["--manifests: names no file or directory: ','"]),
    (["--manifests", EXAMPLE, "--manifests", " , "], ["--manifests: names no file or directory"]),
    (["--manifests", EXAMPLE, "--what-if", "arrivals*" + NINES], ["--what-if: invalid edit 'arrivals*9999",
                                                                  "takes a factor from 0 to 1000"]),
    (["--manifests", EXAMPLE, "--what-if", "nodes=" + NINES], ["--what-if: invalid edit", "from 1 to 50000"]),
    (["--manifests", EXAMPLE, "--workers", "²"], ["--workers: want a whole number of processes, at least 1"]),
    (["--manifests", EXAMPLE, "--workers", "-1"], ["--workers: want a whole number"]),
    (["--manifests", EXAMPLE, "--workers", "9" * 5000], ["--workers: want a whole number", "at most 1024"]),
    (["--manifests", EXAMPLE, "--seeds", "٣-٩٩٩٩٩٩٩٩٩٩٩٩"], ["--seeds: names more than 10000 seeds"]),
    (["--manifests", EXAMPLE, "--seeds", "1" + "0" * 20], ["--seeds: a seed is at most 18446744073709551615"]),
])
def test_odd_sweep_arguments_are_one_line_and_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str],
                                                     parts: list[str]) -> None:
    fails_with(capsys, ["sweep", *argv], *parts)


@pytest.mark.parametrize(("operation", "parts"), [
    ("{opcode: createNodes, count: 2147483648}",
     ["workloadTemplate[0]: count: the workload would create more than 200000"]),
    ("{opcode: createPodGroups, count: 1000, minCount: 1000}", ["count: the workload would create more than 200000"]),
    ("{opcode: createPods, count: 3, interval: 1500000h}", ["interval: puts arrivals past Go's longest duration"]),
])
def test_a_workload_too_large_to_generate_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                         operation: str, parts: list[str]) -> None:
    workload = tmp_path / "workload.yaml"
    workload.write_text(f"workloadTemplate:\n- {operation}\n")
    fails_with(capsys, ["generate", str(workload)], str(workload), *parts)


def test_help_and_version_return_instead_of_exiting(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys, "--version")
    assert (status, err) == (0, "") and out.startswith("phalanx ")
    status, out, err = run(capsys, "sweep", "--help")
    assert (status, err) == (0, "") and "--what-if" in out


def test_the_largest_seed_runs(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys, "simulate", EXAMPLE, "--until", "10m", "--seed", str(2**64 - 1), "-o", "json")
    assert status == 0, err
    assert json.loads(out)["summary"]


# --- output the encoding cannot hold ---

class StrictStdout(io.TextIOWrapper):
    """A UTF-8 stdout with strict errors, as a terminal's is with PYTHONIOENCODING=utf-8."""

    def __init__(self) -> None:
        super().__init__(io.BytesIO(), encoding="utf-8", errors="strict")

    def text(self) -> str:
        self.flush()
        buffer = self.buffer
        assert isinstance(buffer, io.BytesIO)
        return buffer.getvalue().decode("utf-8")


def with_a_lone_surrogate(build: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
    """build_report, with a pod renamed to hold what no encoder writes (a string the input could carry)."""
    def wrapped(*args: Any, **kwargs: Any) -> dict[str, Any]:
        report = build(*args, **kwargs)
        report["profile"] += "\udcff"
        for pod in report.get("pods", []):
            pod["name"] += "\udcff"
            pod["message"] = "waiting for \udcff"
        return report
    return wrapped


@pytest.mark.parametrize("output", ["table", "wide", "json", "yaml"])
def test_output_escapes_what_stdout_cannot_encode(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str], output: str) -> None:
    stdout = StrictStdout()
    monkeypatch.setattr(sys, "stdout", stdout)
    monkeypatch.setattr(run_api, "build_report", with_a_lone_surrogate(build_report))
    status = main(["simulate", EXAMPLE, "--until", "10m", "-o", output, "--report", str(tmp_path / "report")])
    assert status == 0, capsys.readouterr().err
    written = stdout.text()
    assert "\\udcff" in written or "\\uDCFF" in written or "\\xed\\xb3\\xbf" in written
    assert (tmp_path / "report" / "index.html").read_bytes().count(b"\\udcff") > 0
