"""The host ports a pod binds (util.GetHostPorts) and when two of them conflict (HostPortInfo.CheckConflict)."""

from pathlib import Path

import pytest

from phalanx.api.host_ports import conflicts, parse_host_ports
from phalanx.cli import main
from tests.builders import MakeNode, MakePod, write_manifests


def port(host_port: int | None, protocol: str | None = None, host_ip: str | None = None) -> dict[str, object]:
    entry: dict[str, object] = {"containerPort": 8080}
    if host_port is not None:
        entry["hostPort"] = host_port
    if protocol is not None:
        entry["protocol"] = protocol
    if host_ip is not None:
        entry["hostIP"] = host_ip
    return entry


def test_containers_and_sidecars_bind_their_host_ports_with_the_api_defaults() -> None:
    spec = {"initContainers": [{"name": "setup", "ports": [port(7000)]},
                               {"name": "proxy", "restartPolicy": "Always", "ports": [port(15001)]}],
            "containers": [{"name": "web", "ports": [port(8080), port(53, "UDP", "10.0.0.1"), port(None), port(0)]}]}
    assert parse_host_ports(spec, "spec") == (("0.0.0.0", "TCP", 15001), ("0.0.0.0", "TCP", 8080),
                                              ("10.0.0.1", "UDP", 53))
    assert parse_host_ports({"containers": [{"name": "c"}]}, "spec") == ()


@pytest.mark.parametrize(("used", "wanted", "conflict"), [
    ((("0.0.0.0", "TCP", 80),), ("0.0.0.0", "TCP", 80), True),
    ((("0.0.0.0", "TCP", 80),), ("0.0.0.0", "UDP", 80), False),  # another protocol
    ((("0.0.0.0", "TCP", 80),), ("0.0.0.0", "TCP", 81), False),
    ((("127.0.0.1", "TCP", 80),), ("0.0.0.0", "TCP", 80), True),  # every address covers the one in use
    ((("0.0.0.0", "TCP", 80),), ("127.0.0.1", "TCP", 80), True),  # and the other way round
    ((("127.0.0.1", "TCP", 80),), ("127.0.0.2", "TCP", 80), False),  # two addresses
    ((("127.0.0.1", "TCP", 80),), ("127.0.0.1", "TCP", 80), True),
])
def test_a_wanted_port_conflicts_as_host_port_info_check_conflict_says(
        used: tuple[tuple[str, str, int], ...], wanted: tuple[str, str, int], conflict: bool) -> None:
    assert conflicts(wanted, dict.fromkeys(used, 1)) is conflict


@pytest.mark.parametrize(("entry", "field"), [
    (port(70000), "spec.containers[0].ports[0].hostPort"),
    (port(-1), "spec.containers[0].ports[0].hostPort"),
    (port(80, "HTTP"), "spec.containers[0].ports[0].protocol"),
])
def test_a_bad_host_port_is_one_line_naming_file_object_and_field(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], entry: dict[str, object], field: str) -> None:
    pod = MakePod("web").req(cpu="1")
    pod.spec["containers"][0]["ports"] = [entry]
    path = write_manifests(tmp_path / "in.yaml", MakeNode("a").alloc(cpu="4"), pod)
    assert main(["simulate", str(path)]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert str(path) in err and "Pod default/web" in err and field in err
