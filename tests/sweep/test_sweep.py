"""`phalanx sweep`: grid expansion, what-if edits, the results directory (resume, atomic writes), determinism
across worker counts, agreement with `phalanx compare`, bad input, and a run on a real local Ray head."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from phalanx.cli import main
from phalanx.errors import InputError
from phalanx.inputs.load import Inputs
from phalanx.sweep import Cell, ResultStore, apply_edit, manifest_grid, parse_edit, parse_edits, run_cell, trace_grid
from phalanx.sweep import runner as runner_module
from phalanx.sweep import store as store_module
from tests.builders import MakeNode, MakePod
from tests.traces.builders import small_trace

EXAMPLE = str(Path(__file__).resolve().parents[2] / "examples" / "training-mix")
TIMING = frozenset({"replaySeconds", "replayCpuSeconds", "schedulingSeconds", "podsPerSecond"})


def untimed(value: Any) -> Any:
    """`value` without wall-clock measurements (the only numbers that differ between equal runs)."""
    if isinstance(value, dict):
        return {k: untimed(v) for k, v in value.items() if k not in TIMING}
    if isinstance(value, list):
        return [untimed(v) for v in value]
    return value


@pytest.fixture
def traces(tmp_path: Path) -> tuple[str, str, str]:
    """nodes.csv and two small pod lists of the openb format (the second in a folder of its own)."""
    nodes, first = small_trace(tmp_path, pods=40, seed=0)
    (tmp_path / "other").mkdir()
    _, second = small_trace(tmp_path / "other", pods=50, seed=1)
    renamed = tmp_path / "openb_pod_list_second.csv"
    os.replace(second, renamed)
    return nodes, first, str(renamed)


def sweep(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    status = main(["sweep", *argv, "-o", "json"])
    out, err = capsys.readouterr()
    assert status == 0, err
    document: dict[str, Any] = json.loads(out)
    return document


def trace_args(traces: tuple[str, str, str], *extra: str) -> list[str]:
    nodes, first, second = traces
    return ["--trace", "openb", "--nodes", nodes, "--pods", first, second, "--profiles", "bestfit,fgd",
            "--seeds", "1-2", *extra]


# Grid expansion


def test_trace_grid_is_pod_lists_by_loads_by_profiles_by_seeds(traces: tuple[str, str, str]) -> None:
    nodes, first, second = traces
    cells = trace_grid("openb", nodes, [first, second], ["bestfit", "fgd"], [1, 2, 3], [1.0, 1.3])
    assert len(cells) == 2 * 2 * 2 * 3
    assert [(c.name, c.load, c.profile, c.seed) for c in cells[:7]] == [
        ("pods", 1.0, "bestfit", 1), ("pods", 1.0, "bestfit", 2), ("pods", 1.0, "bestfit", 3),
        ("pods", 1.0, "fgd", 1), ("pods", 1.0, "fgd", 2), ("pods", 1.0, "fgd", 3), ("pods", 1.3, "bestfit", 1)]
    assert cells[-1].name == "second"  # openb_pod_list_ and .csv dropped
    assert len({c.key for c in cells}) == len(cells)
    # A seed named twice is one cell.
    assert len(trace_grid("openb", nodes, [first], ["fgd"], [1, 1, 2], [1.3])) == 2


def test_a_cell_key_is_stable_and_does_not_depend_on_the_working_directory(
        traces: tuple[str, str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    nodes, first, _ = traces
    absolute = trace_grid("openb", nodes, [first], ["fgd"], [7], [1.3])[0]
    monkeypatch.chdir(Path(first).parent)
    relative = trace_grid("openb", "nodes.csv", ["pods.csv"], ["fgd"], [7], [1.3])[0]
    assert relative.key == absolute.key
    other = trace_grid("openb", nodes, [first], ["fgd"], [8], [1.3])[0]
    assert other.key != absolute.key and other.group() == absolute.group()


def test_manifest_grid_is_inputs_by_edits_by_profiles_by_seeds() -> None:
    cells = manifest_grid([[EXAMPLE], [EXAMPLE, EXAMPLE + "/03-training.yaml"]], ["default", "gang"],
                          ["base", "nodes*2"], [0], None)
    assert len(cells) == 2 * 2 * 2
    assert [(c.edit, c.profile) for c in cells[:4]] == [("base", "default"), ("base", "gang"),
                                                        ("nodes*2", "default"), ("nodes*2", "gang")]
    assert cells[4].manifests == (EXAMPLE, EXAMPLE + "/03-training.yaml")


# What-if edits


def small_inputs() -> Inputs:
    nodes = [MakeNode(f"n{i}").alloc(cpu="4", memory="8Gi").label("kubernetes.io/hostname", f"n{i}")
             .label("zone", "a").obj() for i in range(3)]
    pods = [MakePod("running").req(cpu="1").node("n0").obj(),
            MakePod("late").req(cpu="1").arrival(600).obj()]
    return Inputs(nodes=nodes, pods=pods)


def test_nodes_edits_copy_or_drop_nodes() -> None:
    inputs = small_inputs()
    doubled = apply_edit(inputs, parse_edit("nodes*2"))
    assert [n.name for n in doubled.nodes] == ["n0", "n1", "n2", "n0-copy1", "n1-copy1", "n2-copy1"]
    copy = doubled.nodes[3]
    assert copy.labels == {"kubernetes.io/hostname": "n0-copy1", "zone": "a"}
    assert copy.allocatable == inputs.nodes[0].allocatable
    assert [n.name for n in apply_edit(inputs, parse_edit("nodes=4")).nodes] == ["n0", "n1", "n2", "n0-copy1"]
    assert [n.name for n in apply_edit(inputs, parse_edit("nodes*0.5")).nodes] == ["n0", "n1"]  # round(1.5)
    assert [n.name for n in inputs.nodes] == ["n0", "n1", "n2"]  # the loaded objects are left as they were
    with pytest.raises(InputError, match=r"--what-if: nodes\*0.1: leaves no node"):
        apply_edit(inputs, parse_edit("nodes*0.1"))


def test_dropping_a_node_a_pod_runs_on_is_an_error() -> None:
    inputs = small_inputs()
    inputs.pods[0] = MakePod("running").req(cpu="1").node("n2").obj()
    with pytest.raises(InputError, match="drops node n2, which pod default/running runs on"):
        apply_edit(inputs, parse_edit("nodes=2"))


def test_arrivals_edit_scales_every_arrival_and_edits_combine() -> None:
    edited = apply_edit(small_inputs(), parse_edit("arrivals*0.5+nodes=1"))
    assert [p.arrival for p in edited.pods] == [0.0, 300.0]
    assert len(edited.nodes) == 1


@pytest.mark.parametrize("text", ["nodes", "nodes*-1", "nodes=1.5", "arrivals=3", "pods*2", "base+nodes*2x"])
def test_bad_edits_name_the_flag(text: str) -> None:
    with pytest.raises(InputError, match=r"^--what-if: invalid edit"):
        parse_edits(text)


# Results directory


def test_rerun_with_results_skips_finished_cells_and_reports_all(
        traces: tuple[str, str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    results = tmp_path / "results"
    calls: list[Cell] = []

    def counting(cell: Cell) -> dict[str, Any]:
        calls.append(cell)
        return run_cell(cell)

    monkeypatch.setattr(runner_module, "run_cell", counting)
    args = trace_args(traces, "--workers", "1", "--results", str(results))
    first = sweep(capsys, *args)
    assert len(calls) == 8 and len(list(results.glob("*.json"))) == 8
    stored = sorted(results.glob("*.json"))
    stored[0].unlink()  # as if the run had been interrupted before this cell finished
    calls.clear()
    second = sweep(capsys, *args)
    assert [c.key + ".json" for c in calls] == [stored[0].name]
    # Read-back cells report exactly what they reported when they ran (timings included).
    assert untimed(second) == untimed(first)
    kept = {seed["key"]: seed for result in first["results"] for seed in result["seeds"]}
    again = {seed["key"]: seed for result in second["results"] for seed in result["seeds"]}
    assert all(again[key] == kept[key] for key in kept if key + ".json" != stored[0].name)
    calls.clear()
    sweep(capsys, *args)
    assert calls == []


def test_a_results_directory_of_another_grid_is_ignored_with_a_notice(
        traces: tuple[str, str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results = str(tmp_path / "results")
    nodes, first, _ = traces
    base = ["sweep", "--trace", "openb", "--nodes", nodes, "--pods", first, "--profiles", "fgd", "--workers", "1",
            "--results", results, "-o", "json"]
    assert main([*base, "--seeds", "1-2"]) == 0
    capsys.readouterr()
    assert main([*base, "--seeds", "3"]) == 0
    out, err = capsys.readouterr()
    assert f"phalanx: {results}: ignoring 2 stored result(s) of cells outside this grid" in err
    assert json.loads(out)["results"][0]["trace"]["seeds"] == [3]


def test_an_interrupted_write_leaves_no_partial_file(traces: tuple[str, str, str], tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    nodes, first, _ = traces
    cell = trace_grid("openb", nodes, [first], ["bestfit"], [1], [1.3])[0]
    store = ResultStore(str(tmp_path / "results"))

    def interrupted(source: str, target: str) -> None:
        assert Path(source).read_text().endswith("}\n")  # the whole record was in the temporary file
        raise KeyboardInterrupt

    monkeypatch.setattr(store_module.os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        store.save(cell, run_cell(cell))
    assert list((tmp_path / "results").iterdir()) == []  # neither <key>.json nor the temporary file
    monkeypatch.undo()
    # A temporary file left by a killed process is not a result: the cell runs again.
    (tmp_path / "results" / f".{cell.key}.abc.tmp").write_text('{"schemaVersion": 1, "ke')
    assert store.load([cell]) == {}
    store.save(cell, run_cell(cell))
    assert list(store.load([cell])) == [cell.key]


def test_a_broken_result_file_is_one_error_line_naming_it(traces: tuple[str, str, str], tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    nodes, first, _ = traces
    cell = trace_grid("openb", nodes, [first], ["fgd"], [42], [1.3])[0]
    results = tmp_path / "results"
    results.mkdir()
    (results / f"{cell.key}.json").write_text('{"schemaVersion": 1, "key": "')
    status = main(["sweep", "--trace", "openb", "--nodes", nodes, "--pods", first, "--profiles", "fgd",
                   "--results", str(results)])
    err = capsys.readouterr().err
    assert status == 2 and len(err.splitlines()) == 1
    assert err.startswith(f"phalanx: error: {results / cell.key}.json: not a sweep result")


# Determinism and agreement with compare


def test_one_and_two_local_workers_give_the_same_report(traces: tuple[str, str, str],
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    one = sweep(capsys, *trace_args(traces, "--workers", "1", "--load", "1.0,1.3"))
    two = sweep(capsys, *trace_args(traces, "--workers", "2", "--load", "1.0,1.3"))
    assert untimed(one) == untimed(two)
    assert one["grid"]["cells"] == 16 and len(one["results"]) == 8
    result = one["results"][0]
    assert result["schemaVersion"] == 1 and len(result["seeds"]) == 2
    assert result["summary"]["unallocatedGpus"] == pytest.approx(
        sum(s["unallocatedGpus"] for s in result["seeds"]) / 2, abs=1e-6)
    assert result["sd"]["unallocatedGpus"] is not None


def test_trace_means_are_compares(traces: tuple[str, str, str], capsys: pytest.CaptureFixture[str]) -> None:
    nodes, _, second = traces
    swept = sweep(capsys, "--trace", "openb", "--nodes", nodes, "--pods", second, "--profiles", "bestfit,fgd",
                  "--seeds", "1-3", "--workers", "1")
    assert main(["compare", "--trace", "openb", "--nodes", nodes, "--pods", second, "--profiles", "bestfit,fgd",
                 "--seeds", "1-3", "-o", "json"]) == 0
    compared = json.loads(capsys.readouterr().out)
    for ours, theirs in zip(swept["results"], compared["results"], strict=True):
        assert ours["profile"] == theirs["profile"]
        for key in ("unallocatedGpus", "unallocatedGpusSd", "gpuAllocationAtFullLoad", "pods", "allocated"):
            mine = ours["summary"][key]
            if isinstance(mine, dict):
                mine = {k: v for k, v in mine.items() if k in theirs["summary"][key]}
            assert mine == pytest.approx(theirs["summary"][key], abs=1e-4), key
        assert untimed([{k: v for k, v in s.items() if k not in ("key", "gpus", "profile", "featureGates")}
                        for s in ours["seeds"]]) == untimed(theirs["seeds"])


def test_manifest_cells_report_what_compare_reports(capsys: pytest.CaptureFixture[str]) -> None:
    swept = sweep(capsys, "--manifests", EXAMPLE, "--what-if", "base,nodes*0.5", "--until", "6h", "--workers", "1")
    assert [(r["input"]["edit"], r["profile"]) for r in swept["results"]] == [
        ("base", "default"), ("base", "gang"), ("nodes*0.5", "default"), ("nodes*0.5", "gang")]
    assert main(["compare", EXAMPLE, "--until", "6h", "-o", "json"]) == 0
    compared = json.loads(capsys.readouterr().out)
    for ours, theirs in zip(swept["results"][:2], compared["results"], strict=True):
        assert untimed(ours["seeds"][0]["summary"]) == untimed(theirs["summary"])
    halved = swept["results"][2]["summary"]
    assert halved["pods"]["pending"] > swept["results"][0]["summary"]["pods"]["pending"]


# Bad input: one line, exit 2


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@pytest.mark.parametrize(("extra", "parts"), [
    (["--pods", "missing.csv"], ["--pods: missing.csv: no such file"]),
    (["--seeds", "5-1"], ["--seeds: invalid seed list '5-1'"]),
    (["--load", "1.3,-1"], ["--load: must be above 0 and at most 10 (times the GPU capacity), got -1"]),
    (["--workers", "0"], ["--workers: want a whole number of processes, at least 1 and at most 1024, got '0'"]),
    (["--ray", "nowhere"], ["--ray: invalid address 'nowhere'"]),
    (["--ray", "127.0.0.1:PORT"], ["--ray: cannot reach a Ray cluster at 127.0.0.1:", "refused"]),
    (["--what-if", "nodes*2"], ["--what-if: applies to --manifests, not to a trace"]),
    (["--manifests", EXAMPLE], ["sweep: give either a trace", "not both"]),
    (["--profiles", "nosuch.yaml"], ["nosuch"]),
])
def test_bad_input_is_one_line_and_exit_2(traces: tuple[str, str, str], capsys: pytest.CaptureFixture[str],
                                          extra: list[str], parts: list[str]) -> None:
    nodes, first, _ = traces
    extra = [part.replace("PORT", str(free_port())) for part in extra]
    status = main(["sweep", "--trace", "openb", "--nodes", nodes, "--pods", first, *extra])
    out, err = capsys.readouterr()
    assert status == 2 and out == ""
    assert len(err.splitlines()) == 1 and err.startswith("phalanx: error: "), err
    at = 0
    for part in parts:
        at = err.index(part, at) + len(part)


def test_bad_manifests_name_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sweep", "--manifests", str(tmp_path / "nope.yaml")]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "nope.yaml" in err
    assert main(["sweep", "--manifests", EXAMPLE, "--what-if", "nodes*x"]) == 2
    assert capsys.readouterr().err == ("phalanx: error: --what-if: invalid edit 'nodes*x': want base, nodes=N, "
                                       "nodes*F or arrivals*F (combined with +)\n")


# Ray


@pytest.fixture(scope="module")
def ray_head(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Ray head on loopback with one CPU, in a process group of its own that teardown ends."""
    port = free_port()
    ray = Path(sys.executable).with_name("ray")
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    head = subprocess.Popen([str(ray), "start", "--head", "--block", "--node-ip-address=127.0.0.1", f"--port={port}",
                             "--num-cpus=1", "--include-dashboard=false", "--disable-usage-stats",
                             f"--temp-dir={tmp_path_factory.mktemp('ray')}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if head.poll() is not None or time.monotonic() > deadline:
                    pytest.fail("the Ray head did not start")
                time.sleep(0.2)
        yield f"127.0.0.1:{port}"
    finally:
        # Ray's daemons ignore SIGTERM at times: end the head's own process group, then make sure.
        os.killpg(head.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            head.wait(10)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(head.pid, signal.SIGKILL)
        head.wait(10)


def test_a_sweep_on_a_ray_cluster_gives_the_local_results(traces: tuple[str, str, str], ray_head: str,
                                                           tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results = tmp_path / "results"
    remote = sweep(capsys, *trace_args(traces, "--ray", ray_head, "--results", str(results)))
    local = sweep(capsys, *trace_args(traces, "--workers", "1"))
    assert untimed(remote) == untimed(local)
    assert len(list(results.glob("*.json"))) == 8
    main(["sweep", *trace_args(traces, "--ray", ray_head, "--results", str(results))])
    assert "8 cell(s): none run, 8 read from --results" in capsys.readouterr().err  # all read back: no task sent
