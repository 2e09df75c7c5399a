"""The openb CSV loaders: nodes, 11- and 5-column pod lists, and malformed rows (file and line, exit 2)."""

from pathlib import Path

import pytest

from phalanx.api.objects import GpuRequest
from phalanx.cli import main
from phalanx.cluster.gpus import GPU_COUNT, GPU_MILLI, GPU_MODEL_LABEL
from phalanx.errors import InputError
from phalanx.traces.openb import load_nodes, load_pods, load_trace
from tests.traces.builders import NODE_HEADER, POD_HEADER, SHORT_POD_HEADER, write

MIB = 2**20


def test_nodes_carry_cpu_memory_gpus_and_model(tmp_path: Path) -> None:
    path = write(tmp_path / "n.csv", NODE_HEADER + "openb-node-0001,64000,262144,2,P100\nopenb-node-0002,32000,"
                 "131072,0,\n")
    gpu, cpu_only = load_nodes(path)
    assert gpu.name == "openb-node-0001"
    assert gpu.allocatable == {"cpu": 64000, "memory": 262144 * MIB, "pods": 1001, GPU_COUNT: 2, GPU_MILLI: 2000}
    assert gpu.labels == {GPU_MODEL_LABEL: "P100"}
    assert cpu_only.labels == {} and cpu_only.allocatable[GPU_COUNT] == 0
    trace = load_trace(path, write(tmp_path / "p.csv", SHORT_POD_HEADER))
    assert [n.name for n in trace.gpu_nodes] == ["openb-node-0001"]


def test_eleven_column_pods(tmp_path: Path) -> None:
    path = write(tmp_path / "p.csv", POD_HEADER + "\n".join([
        "openb-pod-0000,12000,16384,1,1000,,LS,Running,0,12537496,0",
        "openb-pod-0001,6000,12288,1,460,,LS,Running,427061,12902960,427070",
        "openb-pod-0002,88000,327680,8,1000,V100M16|V100M32,LS,Running,10,20,",
        "openb-pod-0003,8000,30517,0,0,,BE,Failed,5,9,6",
        "openb-pod-0004,4000,1000,1,1500,|T4|,LS,Pending,5,,",
        "openb-pod-0005,4000,1000,2,0,,LS,Pending,,,",
    ]) + "\n")
    pods = load_pods(path)
    assert [p.name for p in pods] == [f"openb-pod-000{i}" for i in range(6)]
    whole, share, eight, cpu, clipped, zero = pods
    assert whole.requests == {"cpu": 12000, "memory": 16384 * MIB, GPU_MILLI: 1000}
    assert whole.gpu == GpuRequest(1, 1000, ())
    assert (whole.arrival, whole.duration) == (0.0, 12537496.0)
    assert share.gpu == GpuRequest(1, 460, ()) and share.requests[GPU_MILLI] == 460
    assert (share.arrival, share.duration) == (427061.0, 12902960.0 - 427070)
    assert eight.gpu == GpuRequest(8, 1000, ("V100M16", "V100M32"))
    assert eight.duration == 10.0  # no scheduled_time: counted from creation
    assert cpu.gpu is None and GPU_MILLI not in cpu.requests
    assert clipped.gpu == GpuRequest(1, 1000, ("T4",)) and clipped.duration is None
    assert zero.gpu == GpuRequest(2, 0, ()) and zero.arrival == 0.0


def test_five_column_pods_have_no_times_and_no_model(tmp_path: Path) -> None:
    path = write(tmp_path / "p.csv", SHORT_POD_HEADER + "openb-pod-0000,12000,16384,4,1000\nopenb-pod-0001,"
                 "6000,12288,1,460\n")
    four, share = load_pods(path)
    assert four.gpu == GpuRequest(4, 1000, ()) and four.requests[GPU_MILLI] == 4000
    assert share.gpu == GpuRequest(1, 460, ())
    assert four.arrival == 0.0 and four.duration is None


@pytest.mark.parametrize(("text", "line", "message"), [
    (POD_HEADER + "p0,1000,10,0,0,,LS,Running,0,1,0\np1,1000,10,0,0,,LS\n", 3, "expected 11 fields, got 7"),
    (POD_HEADER + "p0,lots,10,0,0,,LS,Running,0,1,0\n", 2, "cpu_milli must be an integer, got 'lots'"),
    (POD_HEADER + "p0,1000,10,-1,0,,LS,Running,0,1,0\n", 2, "num_gpu must not be negative"),
    (POD_HEADER + "p0,1000,10,0,0,,LS,Running,0,1,0\np0,1000,10,0,0,,LS,Running,0,1,0\n", 3, "duplicate pod 'p0'"),
    (POD_HEADER + "p0,,10,0,0,,LS,Running,0,1,0\n", 2, "cpu_milli is empty"),
    (POD_HEADER + "p0,1000,10,0,0,,LS,Running,50,10,20\n", 2, "deletion_time 10 is before"),
    ("name,cpu\np0,1\n", 1, "unexpected header"),
])
def test_malformed_pod_rows_name_file_and_line(tmp_path: Path, text: str, line: int, message: str) -> None:
    path = write(tmp_path / "pods.csv", text)
    with pytest.raises(InputError) as caught:
        load_pods(path)
    assert str(caught.value).startswith(f"{path}: line {line}: ")
    assert message in str(caught.value)


def test_malformed_node_rows(tmp_path: Path) -> None:
    path = write(tmp_path / "nodes.csv", NODE_HEADER + "n0,1000,10,2,T4\nn1,1000,10,2.5,T4\n")
    with pytest.raises(InputError, match=r"nodes.csv: line 3: gpu must be an integer, got '2.5'"):
        load_nodes(path)
    with pytest.raises(InputError, match="empty file"):
        load_nodes(write(tmp_path / "empty.csv", ""))
    with pytest.raises(InputError, match="cannot read"):
        load_nodes(str(tmp_path / "missing.csv"))


def test_cli_reports_a_malformed_row_on_one_line_with_exit_2(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    nodes = write(tmp_path / "nodes.csv", NODE_HEADER + "n0,96000,1000,8,G2\n")
    pods = write(tmp_path / "pods.csv", SHORT_POD_HEADER + "p0,1000,10,1,500\np1,1000,10,1\n")
    status = main(["compare", "--trace", "openb", "--nodes", nodes, "--pods", pods, "--seeds", "1",
                   "--profiles", "bestfit"])
    _out, err = capsys.readouterr()
    assert status == 2
    assert err.splitlines() == [f"phalanx: error: {pods}: line 3: expected 5 fields, got 4"]
    assert "Traceback" not in err


@pytest.mark.parametrize(("cell", "message"), [
    ("1_000", "cpu_milli must be an integer, got '1_000'"),
    ("٣", "cpu_milli must be an integer, got '٣'"),
    ("３２", "cpu_milli must be an integer"),
    ("9" * 5000, "cpu_milli must be an integer"),
    ("10000000000", "cpu_milli must be at most 1000000000"),
    ("1e12", "cpu_milli must be at most 1000000000"),
])
def test_numbers_take_ascii_digits_within_bounds(tmp_path: Path, cell: str, message: str) -> None:
    path = write(tmp_path / "nodes.csv", NODE_HEADER + f"n0,{cell},10,2,T4\n")
    with pytest.raises(InputError, match=f"nodes.csv: line 2: {message}"):
        load_nodes(path)


def test_only_regular_csv_files_are_read() -> None:
    with pytest.raises(InputError, match="/dev/zero: cannot read: not a regular file"):
        load_nodes("/dev/zero")
