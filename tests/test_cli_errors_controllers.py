"""Bad workload controller objects (Deployment, StatefulSet, DaemonSet, CronJob) end with one line naming
the file, the object and the field, exit status 2, no traceback (as tests/test_cli_errors.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.builders import MakeNode, write_manifests
from tests.controllers.apps_manifests import cron_job, daemon_set, deployment, stateful_set
from tests.test_cli_errors import fails_with


def _write(tmp_path: Path, doc: dict[str, Any]) -> str:
    return str(write_manifests(tmp_path / "input.yaml", MakeNode("node-a").alloc(cpu="4"), doc))


def test_negative_replicas(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, deployment("web", replicas=-1))
    fails_with(capsys, ["simulate", path], path, "Deployment default/web", "spec.replicas", "at least 0")


def test_a_selector_that_misses_the_template(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = stateful_set("db")
    doc["spec"]["selector"] = {"matchLabels": {"app": "other"}}
    path = _write(tmp_path, doc)
    fails_with(capsys, ["validate", path], path, "StatefulSet default/db", "spec.template.metadata.labels",
               "does not match")


def test_a_missing_selector(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = daemon_set("agent")
    del doc["spec"]["selector"]
    path = _write(tmp_path, doc)
    fails_with(capsys, ["validate", path], path, "DaemonSet default/agent", "spec.selector", "is required")


def test_a_restart_policy_other_than_always(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = deployment("web")
    doc["spec"]["template"]["spec"]["restartPolicy"] = "OnFailure"
    path = _write(tmp_path, doc)
    fails_with(capsys, ["simulate", path], path, "Deployment default/web", "spec.template.spec.restartPolicy",
               "only Always")


def test_a_bad_pod_management_policy(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, stateful_set("db", policy="Sequential"))
    fails_with(capsys, ["validate", path], path, "StatefulSet default/db", "spec.podManagementPolicy",
               "'Sequential'")


@pytest.mark.parametrize(("schedule", "why"), [("*/10 * * *", "expected 5 fields"), ("70 * * * *", "out of range"),
                                               ("*/0 * * * *", "bad step")])
def test_a_bad_cron_schedule(tmp_path: Path, capsys: pytest.CaptureFixture[str], schedule: str, why: str) -> None:
    path = _write(tmp_path, cron_job("report", schedule))
    fails_with(capsys, ["simulate", path], path, "CronJob default/report", "spec.schedule", why)


def test_a_bad_concurrency_policy(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, cron_job("report", "@hourly", concurrencyPolicy="Sometimes"))
    fails_with(capsys, ["validate", path], path, "CronJob default/report", "spec.concurrencyPolicy", "'Sometimes'")


def test_a_bad_job_template_names_the_cronjob_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = cron_job("report", "@hourly")
    doc["spec"]["jobTemplate"]["spec"]["parallelism"] = -2
    path = _write(tmp_path, doc)
    fails_with(capsys, ["validate", path], path, "CronJob default/report", "spec.jobTemplate.spec.parallelism")


def test_a_missing_priority_class_in_a_template(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = deployment("web")
    doc["spec"]["template"]["spec"]["priorityClassName"] = "gold"
    path = _write(tmp_path, doc)
    fails_with(capsys, ["simulate", path], path, "Deployment default/web",
               "spec.template.spec.priorityClassName", "no PriorityClass named 'gold'")


def test_more_replicas_than_phalanx_simulates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, stateful_set("db", replicas=2_000_000_000))
    fails_with(capsys, ["validate", path], path, "StatefulSet default/db", "spec.replicas", "at most 100000")
