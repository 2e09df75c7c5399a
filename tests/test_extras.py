"""The slim core install: a feature whose extra is missing ends with one line naming the pip command that adds
it, exit 2, before any work and with nothing written; the features of the core never need an extra."""

from __future__ import annotations

import json
from collections.abc import Callable
from importlib.machinery import ModuleSpec
from pathlib import Path
from typing import Any

import pytest

from phalanx import extras
from tests.test_cli_errors import fails_with, run

EXAMPLE = "examples/bare-metal"


def _without(monkeypatch: pytest.MonkeyPatch, *missing: str) -> None:
    real: Callable[[str], ModuleSpec | None] = extras.find_spec

    def find_spec(name: str) -> ModuleSpec | None:
        return None if name in missing else real(name)

    monkeypatch.setattr(extras, "find_spec", find_spec)


def test_exact_placement_names_its_extra(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    _without(monkeypatch, "ortools")
    fails_with(capsys, ["simulate", EXAMPLE, "--profile", "phalanx"],
               "profile 'phalanx' (exact gang placement) needs ortools", "pip install 'phalanx[exact]'")
    fails_with(capsys, ["compare", EXAMPLE, "--profiles", "gang,phalanx"], "pip install 'phalanx[exact]'")


def test_a_profile_file_asking_for_exact_placement(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    profile = tmp_path / "exact.yaml"
    profile.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
                       "profiles:\n- schedulerName: default-scheduler\nexactPlacement: {budgetSeconds: 1}\n")
    _without(monkeypatch, "ortools")
    fails_with(capsys, ["simulate", EXAMPLE, "--profile", str(profile)], "needs ortools", "phalanx[exact]")


def test_report_names_its_extra_and_writes_nothing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    _without(monkeypatch, "matplotlib")
    report = tmp_path / "report"
    fails_with(capsys, ["simulate", EXAMPLE, "--report", str(report)],
               "--report DIR (its PNG plots) needs matplotlib", "pip install 'phalanx[plots]'")
    fails_with(capsys, ["sweep", "--manifests", EXAMPLE, "--profiles", "gang", "--report", str(report)],
               "pip install 'phalanx[plots]'")
    assert not report.exists()


def test_ray_names_its_extra(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    _without(monkeypatch, "ray")
    fails_with(capsys, ["sweep", "--manifests", EXAMPLE, "--profiles", "gang", "--ray", "127.0.0.1:1"],
               "sweep --ray needs ray", "pip install 'phalanx[sweep]'")


def test_the_core_runs_without_any_extra(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    """Without Arrow a series file is read by the csv module to the same series, and the same run."""
    argv = ["simulate", "examples/autoscaling", "--metrics", "examples/autoscaling/metrics.csv", "--profile", "gang",
            "--until", "6h", "-o", "json"]
    status, with_extras, err = run(capsys, *argv)
    assert status == 0, err
    _without(monkeypatch, *extras.EXTRAS)
    status, core, err = run(capsys, *argv)
    assert status == 0, err
    assert _timeless(json.loads(core)) == _timeless(json.loads(with_extras))


_WALL_CLOCK = ("schedulingseconds", "persecond", "wall")


def _timeless(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _timeless(v) for k, v in value.items() if not any(t in k.lower() for t in _WALL_CLOCK)}
    if isinstance(value, list):
        return [_timeless(v) for v in value]
    return value


def test_every_extra_is_declared() -> None:
    text = Path(__file__).resolve().parent.parent.joinpath("pyproject.toml").read_text()
    for module, extra in extras.EXTRAS.items():
        assert f"\n{extra} = [" in text, (module, extra)
    assert "\nall = [\"phalanx[" in text
