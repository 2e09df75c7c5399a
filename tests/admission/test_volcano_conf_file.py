"""`volcano-scheduler.conf` as Volcano ships it (installer/helm/chart/volcano/config/volcano-scheduler.conf,
unchanged in tests/upstream/volcano: YAML with `actions` and `tiers`, no apiVersion or kind) is read where the
ConfigMap holding it is: by `--queues FILE`, named among the manifests, or in a folder of them under its own
name. Its tiers enable binpack, so the volcano profile packs two small pods onto one node, where Volcano's
default conf (no binpack) spreads them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.builders import MakeNode, MakePod, write_manifests
from tests.test_cli_errors import fails_with, run

CONF = Path(__file__).resolve().parents[1] / "upstream" / "volcano" / "volcano-scheduler.conf"


def cluster(folder: Path) -> Path:
    folder.mkdir(exist_ok=True)
    return write_manifests(folder / "in.yaml", MakeNode("n1").alloc(cpu="8", memory="16Gi", pods="110"),
                           MakeNode("n2").alloc(cpu="8", memory="16Gi", pods="110"),
                           MakePod("p0").req(cpu="1", memory="1Gi"), MakePod("p1").req(cpu="1", memory="1Gi"))


def nodes_used(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    status, out, err = run(capsys, "simulate", "--profile", "volcano", *argv, "-o", "json")
    assert status == 0, err
    return len({pod["node"] for pod in json.loads(out)["pods"]}), err


def test_without_a_conf_volcanos_default_spreads(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert nodes_used(capsys, str(cluster(tmp_path / "in")))[0] == 2


def test_the_shipped_file_is_read_by_queues(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    used, err = nodes_used(capsys, str(cluster(tmp_path / "in")), "--queues", str(CONF))
    assert used == 1
    assert ("read 1 queueing object(s) for the peer profiles (kueue, volcano, kai, yunikorn) "
            "(volcano-scheduler.conf: 1)") in err


def test_the_shipped_file_is_read_among_the_manifests(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert nodes_used(capsys, str(cluster(tmp_path / "in")), str(CONF))[0] == 1


def test_the_shipped_file_is_read_in_a_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cluster(tmp_path / "in")
    shutil.copy(CONF, tmp_path / "in" / "volcano-scheduler.conf")
    used, err = nodes_used(capsys, str(tmp_path / "in"))
    assert used == 1
    assert "skipped" not in err


def test_validate_counts_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys, "validate", str(cluster(tmp_path / "in")), "--queues", str(CONF))
    assert status == 0, err
    assert "1 queueing object(s)" in out


@pytest.mark.parametrize(("text", "field", "what"), [
    ('actions: "enqueue, bogus"\ntiers: []\n', "actions", "unknown action 'bogus'"),
    ('actions: "enqueue, allocate"\ntiers: 3\n', "tiers", "must be a list"),
])
def test_a_bad_file_is_one_line_naming_it(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str,
                                          field: str, what: str) -> None:
    conf = tmp_path / "volcano-scheduler.conf"
    conf.write_text(text)
    fails_with(capsys, ["simulate", "--profile", "volcano", str(cluster(tmp_path / "in")), "--queues", str(conf)],
               f"phalanx: error: {conf}: volcano-scheduler.conf: {field}: {what}")
