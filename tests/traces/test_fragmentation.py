"""The fragmentation protocol driver: tuning, node order, metrics, determinism per seed, and small replays
through the engine (FGD-PROTOCOL §2–§3)."""

import json
from pathlib import Path

import numpy as np
import pytest

from phalanx.cli import main
from phalanx.cluster.gpus import TargetWorkload
from phalanx.errors import InputError
from phalanx.scheduler.profiles import GPU_POLICIES, builtin
from phalanx.traces.compare import compare_trace, parse_seeds
from phalanx.traces.fragmentation import (
    allocation_curve,
    gpu_milli_of,
    prefixed_nodes,
    replay_fragmentation,
    seeded_profile,
    tune,
)
from phalanx.traces.openb import load_trace
from tests.traces.builders import gpu_node, gpu_pod, small_trace


def test_tune_resamples_with_replacement_until_the_next_pod_would_overshoot() -> None:
    pods = [gpu_pod("a", count=1, milli=500), gpu_pod("b", count=1), gpu_pod("c", cpu=2000)]
    out = tune(pods, 1.3, 4000, np.random.default_rng(0))
    requested = sum(gpu_milli_of(p) for p in out)
    assert sorted(p.name for p in out[:3]) == ["a", "b", "c"]  # the originals first, shuffled
    assert all("-tuned-" in p.name for p in out[3:])
    assert requested <= 5200 < requested + 1000  # stopped by a draw that would cross 1.3 × 4000
    assert len({p.name for p in out}) == len(out)


def test_tune_thins_at_random_when_the_trace_asks_for_more() -> None:
    pods = [gpu_pod(f"p{i}", count=2) for i in range(10)]  # 20 GPUs asked of 10
    out = tune(pods, 1.3, 10000, np.random.default_rng(0))
    assert sum(gpu_milli_of(p) for p in out) == 12000
    assert len(out) == 6


def test_tune_is_a_function_of_the_seed() -> None:
    pods = [gpu_pod(f"p{i}", count=1, milli=100 * (i % 10 + 1)) for i in range(30)]
    names = [[p.name for p in tune(pods, 1.3, 20000, np.random.default_rng(s))] for s in (5, 5, 6)]
    assert names[0] == names[1] != names[2]


def test_nodes_get_a_random_prefix_and_come_in_prefix_order() -> None:
    nodes = [gpu_node(f"node-{i}", 2) for i in range(12)]
    out = prefixed_nodes(nodes, np.random.default_rng(3))
    assert [n.name for n in out] == sorted(n.name for n in out)
    assert sorted(n.name[5:] for n in out) == sorted(n.name for n in nodes)
    assert sorted(int(n.name[:4]) for n in out) == list(range(12))
    assert [n.name for n in out] != [n.name for n in prefixed_nodes(nodes, np.random.default_rng(4))]


def test_allocation_curve_bins_by_rounded_arrived_percent() -> None:
    # 10 GPUs: arrive% = round(A / 100), alloc% = round(U / 100, 2)
    arrived = np.array([0, 40, 60, 990, 1000, 1010, 1300])
    allocated = np.array([0, 40, 60, 900, 900, 950, 1000])
    curve = allocation_curve(arrived, allocated, 10, max_k=13)
    assert curve[0] == pytest.approx((0 + 0.4) / 2)      # 0 and 0.4 round to 0
    assert curve[1] == pytest.approx(0.6)                # 0.6 → 1
    assert curve[10] == pytest.approx((9 + 9 + 9.5) / 3)  # 9.9, 10, 10.1 → 10
    assert curve[13] == pytest.approx(10.0)
    assert curve[5] is None                              # no attempt within ±1
    assert curve[2] == pytest.approx(0.6)                # fallback: within ±1 of k = 2 (1 only)


def test_seeded_profile_adds_seed_and_workload_but_keeps_explicit_args() -> None:
    workload = TargetWorkload.from_pods([gpu_pod("a", count=1)])
    fgd = seeded_profile(builtin("fgd"), 9, workload)
    assert fgd.plugin_args["GpuShare"] == {"deviceSelection": "fgd", "seed": 9, "targetWorkload": workload}
    assert fgd.plugin_args["FGDScore"] == {"targetWorkload": workload}
    profile = builtin("random")
    profile.plugin_args["RandomScore"] = {"seed": 1}
    assert seeded_profile(profile, 9, workload).plugin_args["RandomScore"] == {"seed": 1}
    assert "seed" not in builtin("random").plugin_args.get("RandomScore", {})


def test_gpu_profiles_score_every_node_and_break_ties_by_node_order() -> None:
    for name, (scorer, selection) in GPU_POLICIES.items():
        profile = builtin(name)
        assert profile.filters == ["NodeResourcesFit", "GpuShare"]
        assert profile.scores == {scorer: 1}
        assert profile.reserve == ["GpuShare"]
        assert profile.plugin_args["GpuShare"]["deviceSelection"] == selection
        assert profile.percentage_of_nodes_to_score == 100 and profile.tie_break == "first"


@pytest.mark.parametrize("policy", sorted(GPU_POLICIES))
def test_small_replay_is_deterministic_per_seed_and_consistent(tmp_path: Path, policy: str) -> None:
    nodes_csv, pods_csv = small_trace(tmp_path, pods=80)
    trace = load_trace(nodes_csv, pods_csv)
    runs = [replay_fragmentation(trace.gpu_nodes, trace.pods, builtin(policy), seed, 1.3) for seed in (1, 1, 2)]
    first, again, other = (r.describe() for r in runs)
    for run in (first, again, other):
        run.pop("replaySeconds")
        run.pop("replayCpuSeconds")
    assert first == again
    assert first != other
    result = runs[0]
    assert result.gpus == 28 and result.capacity_milli == 28000
    assert result.arrived[0] == 0 and np.all(np.diff(result.arrived) >= 0)
    assert np.all(np.diff(result.allocated) >= 0) and np.all(result.allocated <= result.arrived)
    assert result.arrived[-1] <= 1.3 * 28000
    assert result.bound + sum(result.failed_by_kind.values()) == result.pods
    assert 0 <= result.unallocated_gpus <= 28
    assert len(result.curve) == 131


def test_replay_leaves_no_device_or_node_overcommitted(tmp_path: Path) -> None:
    from phalanx.cluster.gpus import device_table
    from phalanx.cluster.state import ClusterState
    from phalanx.scheduler.cycle import PodCycle
    nodes_csv, pods_csv = small_trace(tmp_path, pods=150, seed=4)
    trace = load_trace(nodes_csv, pods_csv)
    cluster = ClusterState(trace.gpu_nodes)
    cycle = PodCycle(seeded_profile(builtin("fgd"), 0, TargetWorkload.from_pods(trace.pods)), cluster)
    for pod in trace.pods:
        result = cycle.schedule(pod)
        if result.node is not None:
            cycle.reserve(pod, result.node)
    table = device_table(cluster)
    assert not cluster.overcommitted().any()
    assert not table.overallocated()
    gpu_col = cluster.column["alibabacloud.com/gpu-milli"]
    assert (table.count * 1000 - table.idle).tolist() == cluster.requested[:, gpu_col].tolist()


def test_fgd_leaves_fewer_gpus_unallocated_than_random_on_a_small_trace(tmp_path: Path) -> None:
    nodes_csv, pods_csv = small_trace(tmp_path, pods=300, seed=2)
    trace = load_trace(nodes_csv, pods_csv)
    mean = {p: np.mean([replay_fragmentation(trace.gpu_nodes, trace.pods, builtin(p), s).unallocated_gpus
                        for s in range(6)]) for p in ("random", "fgd")}
    assert mean["fgd"] < mean["random"]


def test_parse_seeds() -> None:
    assert parse_seeds("42-45") == [42, 43, 44, 45]
    assert parse_seeds("1,4-5, 9") == [1, 4, 5, 9]
    for bad in ("", "a", "5-3", "1-"):
        with pytest.raises(InputError, match="--seeds"):
            parse_seeds(bad)


def test_compare_trace_result_contract(tmp_path: Path) -> None:
    nodes_csv, pods_csv = small_trace(tmp_path)
    results = compare_trace("openb", nodes_csv, pods_csv, "fragmentation", 1.3, [1, 2], ["bestfit", "fgd"])
    assert [r["profile"] for r in results] == ["bestfit", "fgd"]
    for result in results:
        assert result["schemaVersion"] == 1
        assert result["featureGates"] == {"GenericWorkload": False}
        summary = result["summary"]
        per_seed = [s["unallocatedGpus"] for s in result["seeds"]]
        assert summary["unallocatedGpus"] == pytest.approx(np.mean(per_seed), abs=1e-4)
        assert 0 <= summary["gpuAllocationAtFullLoad"] <= 1
        assert set(summary["pods"]) == {"total", "running", "pending", "succeeded", "failed"}
        assert set(summary["allocated"]) == {"cpu", "memory", "gpu"}
        assert [s["seed"] for s in result["seeds"]] == [1, 2]
        curve = result["allocationCurve"]
        assert curve["arrivedPercent"] == list(range(131))
        assert len(curve["allocatedPercent"]) == 131
    with pytest.raises(InputError, match="--trace"):
        compare_trace("philly", nodes_csv, pods_csv, "fragmentation", 1.3, [1], ["fgd"])
    with pytest.raises(InputError, match="--protocol"):
        compare_trace("openb", nodes_csv, pods_csv, "poisson", 1.3, [1], ["fgd"])


def test_timed_protocol_runs_the_simulator_on_the_trace_clock(tmp_path: Path) -> None:
    nodes_csv, pods_csv = small_trace(tmp_path, pods=40)
    (result,) = compare_trace("openb", nodes_csv, pods_csv, "timed", 1.0, [1], ["fgd"])
    summary = result["summary"]
    assert summary["pods"]["total"] == 40
    assert summary["pods"]["succeeded"] + summary["pods"]["failed"] + summary["pods"]["pending"] + \
        summary["pods"]["running"] == 40
    assert summary["pods"]["succeeded"] > 0
    assert 0 < summary["gpuAllocationTimeAverage"] < 1
    assert summary["unallocatedGpus"] is None


def test_cli_compare_trace_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    nodes_csv, pods_csv = small_trace(tmp_path)
    status = main(["compare", "--trace", "openb", "--nodes", nodes_csv, "--pods", pods_csv, "--protocol",
                   "fragmentation", "--load", "1.3", "--seeds", "3-4", "--profiles", "random,bestfit", "-o", "json"])
    out, err = capsys.readouterr()
    assert status == 0, err
    document = json.loads(out)
    assert document["schemaVersion"] == 1
    assert [r["profile"] for r in document["results"]] == ["random", "bestfit"]
    assert [s["seed"] for s in document["results"][0]["seeds"]] == [3, 4]
    status = main(["compare", "--trace", "openb", "--nodes", nodes_csv, "--pods", pods_csv, "--seeds", "3",
                   "--profiles", "fgd"])
    out, _ = capsys.readouterr()
    assert status == 0 and "fgd" in out


@pytest.mark.parametrize(("argv", "message"), [
    (["compare"], "give manifests (FILE_OR_DIR...) or a trace"),
    (["compare", "--trace", "openb", "--pods", "p.csv"], "--nodes: is required"),
    (["compare", "x.yaml", "--trace", "openb", "--nodes", "n.csv", "--pods", "p.csv"], "not both"),
    (["compare", "--trace", "openb", "--nodes", "n.csv", "--pods", "p.csv", "--seeds", "x"], "--seeds"),
])
def test_cli_compare_trace_usage_errors(capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    status = main(argv)
    _, err = capsys.readouterr()
    assert status == 2
    assert len(err.splitlines()) == 1 and message in err


def test_a_profile_file_can_enable_the_gpu_plugins(tmp_path: Path) -> None:
    from phalanx.scheduler.profiles import load_profile
    path = tmp_path / "gpu-fgd.yaml"
    path.write_text("""\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
percentageOfNodesToScore: 100
profiles:
- schedulerName: my-fgd
  plugins:
    filter:
      enabled: [{name: GpuShare}]
    score:
      disabled: [{name: "*"}]
      enabled: [{name: FGDScore, weight: 1}]
  pluginConfig:
  - name: GpuShare
    args: {deviceSelection: fgd}
  - name: FGDScore
    args:
      targetWorkload:
      - {cpu: 8000, milli: 1000, count: 1, popularity: 0.5}
      - {cpu: 4000, milli: 500, count: 1, models: [T4], popularity: 0.5}
""", encoding="utf-8")
    profile = load_profile(str(path))
    assert profile.name == "my-fgd"
    assert "GpuShare" in profile.filters and "GpuShare" in profile.reserve
    assert profile.scores == {"FGDScore": 1}
    nodes_csv, pods_csv = small_trace(tmp_path)
    (result,) = compare_trace("openb", nodes_csv, pods_csv, "fragmentation", 1.3, [1], [str(path)])
    assert result["profile"] == "my-fgd"
    assert result["summary"]["pods"]["running"] > 0
