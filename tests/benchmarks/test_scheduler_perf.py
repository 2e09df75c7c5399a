"""benchmarks/scheduler_perf.py's reading of upstream's results, and Phalanx's side on upstream's own
performance-config.yaml files (the small, `integration-test`-labelled workloads); the side by side with the
real binaries is the benchmark itself (docs/benchmarks.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import scheduler_perf as bench

pytestmark = pytest.mark.skipif(not bench.UPSTREAM.is_dir(), reason="the k8s.io/kubernetes module is not downloaded")


def test_throughput_is_upstreams_average(tmp_path: Path) -> None:
    name = "BenchmarkPerfScheduling/GangScheduling/5000Nodes_1000Gangs_3000Pods/gang-ns-0"
    items = [{"labels": {"Metric": "SchedulingThroughput", "Name": name}, "data": {"Average": 123.9, "Perc50": 125}},
             {"labels": {"Metric": "not applicable", "Name": name}}]
    (tmp_path / "BenchmarkPerfScheduling_benchmark.json").write_text(json.dumps({"dataItems": items}))
    assert bench.throughput(tmp_path, "GangScheduling/5000Nodes_1000Gangs_3000Pods", 3000, None) == 123.9
    # Too short to sample: pods over the SchedulingDuration the benchmark line reports.
    assert bench.throughput(tmp_path, "GangScheduling/100Nodes_10Gangs", 30, 1.5) == 20.0
    with pytest.raises(RuntimeError, match="no SchedulingThroughput"):
        bench.throughput(tmp_path, "GangScheduling/100Nodes_10Gangs", 30, None)


def test_the_duration_is_read_from_the_benchmark_line() -> None:
    line = ("BenchmarkPerfScheduling/GangScheduling/100Nodes_10Gangs-2         \t       1\t         1.051 "
            "SchedulingDuration/Duration\t       136.8 heap_memory_usage/Average")
    assert bench.duration_of(line, "GangScheduling/100Nodes_10Gangs") == 1.051
    assert bench.duration_of(line, "GangScheduling/10Nodes_3Gangs") is None


@pytest.mark.parametrize("topic", bench.TOPICS)
def test_phalanx_binds_every_pod_of_upstreams_small_workloads(topic: str) -> None:
    for workload, labels in bench.listing(topic):
        if "integration-test" in labels:
            pods, engine, whole = bench.run_phalanx(topic, workload)
            assert pods > 0 and engine > 0 and whole > 0, workload
