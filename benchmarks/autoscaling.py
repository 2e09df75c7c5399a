"""Autoscaling at scale: a simulated week of 200 services with HorizontalPodAutoscalers on a 500-node autoscaled
pool, their metrics every 15 s (issue 13's measurement; target: the whole run under 60 s).

Run from the repository root:

    python -m benchmarks.autoscaling                      # 200 services, 7 days, metrics every 15 s
    python -m benchmarks.autoscaling --quick              # 20 services, 1 day (a smoke run)
    python -m benchmarks.autoscaling --services 50 --days 2 --interval 60
    python -m benchmarks.autoscaling --profile            # and a cProfile of the simulation (top 15, cumulative)

**Inputs** (deterministic for a `--seed`; YAML manifests and a metrics CSV written to a temporary folder, then
read as `phalanx simulate DIR --metrics FILE` reads them: `load_paths`, then `MetricsSeries.load`):

- `--services` Deployments (`svc-000`, ...) in namespace `serving`, each with an autoscaling/v2 HPA on two
  External metrics selected by `service=<name>`: `queue_depth` (AverageValue 10) and `requests_per_second`
  (AverageValue 50, also the HPA's `phalanx.dev/request-metric`; `phalanx.dev/when-at-zero: queue`). Every
  other service has `minReplicas: 0` (scale to zero), the rest `minReplicas: 1`. One service in five asks
  1 GPU a pod (4 cpu, 32Gi, startup 2m); the others 6 cpu and 12Gi (startup 1m).
- Nodes: 4 fixed cpu nodes (32 cpu, 128Gi) and two cluster-autoscaler node groups that make the 500-node
  pool, both with a 3m provisioning delay: `cpu-pool` (32 cpu, 128Gi; min 16, max 440) and `gpu-pool`
  (32 cpu, 256Gi, 8 GPUs; min 4, max 60).
- One gang Job a night (`train-<day>`, 4 pods of 8 GPUs, minCount 4, at 01:00 for 3 hours) on the GPU pool.
- Metrics: for every service, both series every `--interval` seconds for `--days` days. Requests per second
  follow a diurnal curve (peak 100 to 800 at about 14:00, shifted up to 2 h per service, weekends at 60 %) with
  seeded log-normal noise; the scale-to-zero services get exact zeros through the night (about 6 hours);
  the queue depth is 5 to 15 % of the rate, with its own noise.

**Timed** (wall and CPU, each step apart): writing the inputs (not counted), `load_paths` on the manifests,
`MetricsSeries.load` on the CSV, the run `simulate(inputs, builtin("gang"), until=days*86400)` makes, and the
report's `services` and `autoscaler` blocks. Counted: events pushed and popped on the simulation's event
queue (the HPAs that arrive together sync as one event, an HPA bank), events per second of the simulation step,
HPA syncs and syncs per second, pods created, HPA rescales, nodes added and removed, and the
services' totals (requests, requests that met a cold service, GPU-hours and replica-hours saved).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import math
import os
import platform
import pstats
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import numpy as np
import yaml

from phalanx.autoscale.metrics import MetricsSeries
from phalanx.inputs.load import load_paths
from phalanx.scheduler.profiles import builtin
from phalanx.sim.report_schema import Autoscaler
from phalanx.sim.run import simulate
from phalanx.sim.services import service_report
from phalanx.sim.simulation import Simulation

TARGET_SECONDS = 60.0
DAY = 86400.0
Manifest = dict[str, Any]
T = TypeVar("T")

RPS_TARGET = 50  # requests per second a replica
QUEUE_TARGET = 10  # queued requests a replica
FIXED_NODES = 4
POOLS = (  # name, min, max, allocatable
    ("cpu-pool", 16, 440, {"cpu": "32", "memory": "128Gi", "pods": "110"}),
    ("gpu-pool", 4, 60, {"cpu": "32", "memory": "256Gi", "nvidia.com/gpu": "8", "pods": "110"}),
)


def _is_gpu(index: int) -> bool:
    return index % 10 in (4, 9)  # one in five; half of them scale to zero


def _scales_to_zero(index: int) -> bool:
    return index % 2 == 0


def _peaks(services: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Each service's peak request rate and the shift of its peak from 14:00 (seconds)."""
    rng = np.random.default_rng(seed)
    return rng.uniform(100.0, 800.0, services), rng.uniform(-7200.0, 7200.0, services)


def manifests(services: int, days: int, seed: int) -> Iterator[Manifest]:
    """The nodes, node-group templates, Deployments, HPAs and nightly gang Jobs."""
    for i in range(FIXED_NODES):
        yield {"apiVersion": "v1", "kind": "Node",
               "metadata": {"name": f"fixed-{i}", "labels": {"pool": "cpu"}},
               "status": {"allocatable": {"cpu": "32", "memory": "128Gi", "pods": "110"}}}
    for name, low, high, allocatable in POOLS:
        yield {"apiVersion": "v1", "kind": "Node",
               "metadata": {"name": f"{name}-template", "labels": {"pool": name.split("-")[0]},
                            "annotations": {
                                "phalanx.dev/node-group": name,
                                "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size": str(low),
                                "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size": str(high),
                                "phalanx.dev/provisioning-delay": "3m",
                                "phalanx.dev/cost-per-hour": "32.77" if name == "gpu-pool" else "1.54"}},
               "status": {"allocatable": dict(allocatable)}}
    peaks, _ = _peaks(services, seed)
    for i in range(services):
        name = f"svc-{i:03d}"
        gpu = _is_gpu(i)
        requests: dict[str, str] = {"cpu": "4", "memory": "32Gi", "nvidia.com/gpu": "1"} if gpu \
            else {"cpu": "6", "memory": "12Gi"}
        limits = {"nvidia.com/gpu": "1"} if gpu else {"memory": "12Gi"}
        yield {"apiVersion": "apps/v1", "kind": "Deployment",
               "metadata": {"name": name, "namespace": "serving"},
               "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                        "template": {"metadata": {"labels": {"app": name},
                                                  "annotations": {"phalanx.dev/startup-time": "2m" if gpu else "1m"}},
                                     "spec": {"nodeSelector": {"pool": "gpu" if gpu else "cpu"},
                                              "containers": [{"name": "server",
                                                              "image": "registry.example.com/server:v1",
                                                              "resources": {"requests": requests,
                                                                            "limits": limits}}]}}}}
        external = [{"type": "External",
                     "external": {"metric": {"name": metric, "selector": {"matchLabels": {"service": name}}},
                                  "target": {"type": "AverageValue", "averageValue": str(target)}}}
                    for metric, target in (("queue_depth", QUEUE_TARGET), ("requests_per_second", RPS_TARGET))]
        yield {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
               "metadata": {"name": name, "namespace": "serving",
                            "annotations": {"phalanx.dev/request-metric": "requests_per_second",
                                            "phalanx.dev/when-at-zero": "queue"}},
               "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
                        "minReplicas": 0 if _scales_to_zero(i) else 1,
                        "maxReplicas": max(2, math.ceil(peaks[i] * 1.3 / RPS_TARGET)),
                        "metrics": external}}
    for day in range(days):
        yield {"apiVersion": "batch/v1", "kind": "Job",
               "metadata": {"name": f"train-{day}", "namespace": "ml",
                            "annotations": {"phalanx.dev/arrival": f"{day * 24 + 1}h", "phalanx.dev/duration": "3h"}},
               "spec": {"parallelism": 4, "completions": 4,
                        "scheduling": {"schedulingPolicy": {"gang": {"minCount": 4}}},
                        "template": {"spec": {"restartPolicy": "Never", "nodeSelector": {"pool": "gpu"},
                                              "containers": [{"name": "trainer",
                                                              "image": "registry.example.com/trainer:v3",
                                                              "resources": {
                                                                  "requests": {"cpu": "16", "memory": "128Gi",
                                                                               "nvidia.com/gpu": "8"},
                                                                  "limits": {"nvidia.com/gpu": "8"}}}]}}}}


def write_metrics(path: str, services: int, days: int, interval: int, seed: int) -> int:
    """The metrics CSV (both series of every service, every `interval` s); returns the number of rows."""
    peaks, shifts = _peaks(services, seed)
    rng = np.random.default_rng(seed + 1)
    times = np.arange(0, days * DAY, interval, dtype=np.int64)
    weekday = np.where((times // int(DAY)) % 7 >= 5, 0.6, 1.0)
    stamps = times.astype(str).tolist()
    rows = 0
    with open(path, "w", encoding="ascii", newline="") as out:
        out.write("time,metric,value,selector\n")
        for i in range(services):
            swing = (1.0 + np.cos(2.0 * np.pi * (times - 50400.0 - shifts[i]) / DAY)) / 2.0
            rate = peaks[i] * (0.05 + 0.95 * swing) * weekday * rng.lognormal(0.0, 0.1, times.size)
            if _scales_to_zero(i):
                rate[swing < 0.13] = 0.0  # night: about 6 hours without a request
            queue = rate * rng.uniform(0.05, 0.15) * rng.lognormal(0.0, 0.2, times.size)
            selector = f"service=svc-{i:03d}"
            for metric, values in (("requests_per_second", rate), ("queue_depth", queue)):
                tail = f",{metric},"
                out.write("".join(f"{t}{tail}{v},{selector}\n"
                                  for t, v in zip(stamps, np.rint(values).astype(np.int64).tolist(), strict=True)))
                rows += times.size
    return rows


def _timed(step: Callable[[], T]) -> tuple[T, dict[str, float]]:
    started, cpu = time.perf_counter(), time.process_time()
    value = step()
    return value, {"wall": time.perf_counter() - started, "cpu": time.process_time() - cpu}


class _Counted:
    """Counts what goes through a simulation's EventQueue and its scale subresource (instance attributes
    shadowing the methods: the simulation calls them through the instance)."""

    def __init__(self) -> None:
        self.pushed = self.popped = self.batches = self.rescales = 0

    def attach(self, sim: Simulation) -> None:
        queue, push, pop_until, scale = sim.events, sim.events.push, sim.events.pop_until, sim.scale

        def counted_push(when: float, priority: int, event: Any) -> None:
            self.pushed += 1
            push(when, priority, event)

        def counted_pop(until: float) -> list[Any]:
            out = pop_until(until)
            self.popped += len(out)
            self.batches += 1
            return out

        def counted_scale(kind: str, key: str, replicas: int) -> None:
            self.rescales += 1
            scale(kind, key, replicas)

        queue.push = counted_push  # type: ignore[method-assign, assignment]
        queue.pop_until = counted_pop  # type: ignore[method-assign, assignment]
        sim.scale = counted_scale  # type: ignore[method-assign]


def _machine() -> str:
    load = os.getloadavg()
    return (f"{platform.python_implementation()} {platform.python_version()}, NumPy {np.__version__}, "
            f"PyYAML {yaml.__version__} (libyaml: {yaml.__with_libyaml__}), {platform.machine()}, "
            f"{os.cpu_count()} cpu, load average {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}")


def run(services: int, days: int, interval: int, seed: int, profile: bool) -> dict[str, Any]:
    results: dict[str, Any] = {"services": services, "days": days, "interval": interval, "seed": seed,
                               "machineAtStart": _machine()}
    with tempfile.TemporaryDirectory() as tmp:
        manifests_path = os.path.join(tmp, "cluster.yaml")
        metrics_path = os.path.join(tmp, "metrics.csv")

        def write_inputs() -> int:
            with open(manifests_path, "w", encoding="utf-8") as out:
                yaml.dump_all(list(manifests(services, days, seed)), out, Dumper=yaml.CSafeDumper, sort_keys=False)
            return write_metrics(metrics_path, services, days, interval, seed)

        results["metricRows"], results["write"] = _timed(write_inputs)
        results["csvBytes"] = os.path.getsize(metrics_path)
        inputs, results["loadManifests"] = _timed(lambda: load_paths([manifests_path]))
        inputs.metrics, results["loadMetrics"] = _timed(lambda: MetricsSeries.load(metrics_path))
    until = days * DAY
    counted = _Counted()
    profiler = cProfile.Profile() if profile else None

    def timed(run: Callable[[], Simulation]) -> None:
        _, results["simulate"] = _timed(run if profiler is None else lambda: profiler.runcall(run))

    sim = simulate(inputs, builtin("gang"), until=until, setup=[counted.attach], around=timed).sim
    if profiler is not None:
        text = io.StringIO()
        pstats.Stats(profiler, stream=text).sort_stats("cumulative").print_stats(15)
        results["profileText"] = text.getvalue()
    assert sim.hpas is not None and sim.autoscaling is not None

    def reports() -> tuple[list[dict[str, Any]], Autoscaler]:
        assert sim.hpas is not None and sim.autoscaling is not None
        return ([service_report(sim, state, sim.end_time) for _, state in sorted(sim.hpas.states.items())],
                sim.autoscaling.report(sim.end_time))

    (rows, autoscaler), results["report"] = _timed(reports)
    results["total"] = {k: sum(results[s][k] for s in ("loadManifests", "loadMetrics", "simulate", "report"))
                        for k in ("wall", "cpu")}
    results["eventsPushed"], results["eventsPopped"] = counted.pushed, counted.popped
    results["eventBatches"] = counted.batches
    results["eventsPerSecond"] = counted.popped / results["simulate"]["wall"]
    results["podsCreated"] = len(sim.pods)
    results["hpaRescales"] = counted.rescales
    results["hpaSyncs"] = sim.hpas.syncs
    results["hpaSyncsPerSecond"] = sim.hpas.syncs / results["simulate"]["wall"]
    results["nodesAdded"], results["nodesRemoved"] = autoscaler["nodesAdded"], autoscaler["nodesRemoved"]
    results["nodeHours"], results["totalCost"] = autoscaler["nodeHours"], autoscaler["totalCost"]
    results["endTime"] = sim.end_time
    totals: dict[str, float] = {}
    for key in ("requests", "requestsCold", "requestsDropped", "gpuHoursSaved", "replicaHoursSaved",
                "gpuHours", "replicaHours", "coldSeconds", "scaledToZero", "wokeFromZero"):
        totals[key] = round(sum(float(r[key] or 0.0) for r in rows), 3)
    totals["maxAddedLatencyP99"] = max((r["addedLatencySeconds"]["p99"] for r in rows
                                        if r["addedLatencySeconds"] is not None), default=0.0)
    results["servicesTotals"] = totals
    results["machineAtEnd"] = _machine()
    return results


def _print(results: dict[str, Any]) -> None:
    print(f"# {results['machineAtStart']}")
    print(f"# {results['services']} services with HPAs, {results['days']} days, metrics every "
          f"{results['interval']} s: {results['metricRows']:,} rows, CSV {results['csvBytes'] / 2**20:.0f} MiB")
    print(f"{'step':<32} {'wall':>9} {'CPU':>9}")
    for key, label in (("write", "write inputs (not counted)"), ("loadManifests", "load manifests"),
                       ("loadMetrics", "load metrics CSV"), ("simulate", "simulate (construct + run)"),
                       ("report", "services + autoscaler report"), ("total", "total (counted steps)")):
        print(f"{label:<32} {results[key]['wall']:8.2f}s {results[key]['cpu']:8.2f}s")
    print(f"events: {results['eventsPopped']:,} popped ({results['eventsPushed']:,} pushed) in "
          f"{results['eventBatches']:,} batches; {results['eventsPerSecond']:,.0f} events/s (simulate wall); "
          f"HPA syncs {results['hpaSyncs']:,} ({results['hpaSyncsPerSecond']:,.0f}/s)")
    print(f"pods created {results['podsCreated']:,}; HPA rescales {results['hpaRescales']:,}; "
          f"nodes added {results['nodesAdded']}, removed {results['nodesRemoved']}; "
          f"node-hours {results['nodeHours']}; cost {results['totalCost']:.2f}")
    print("services: " + ", ".join(f"{k} {v:,}" for k, v in results["servicesTotals"].items()))
    print(f"# at the end: {results['machineAtEnd']}")
    seconds = results["total"]["wall"]
    print(f"whole run {seconds:.1f} s: {'meets' if seconds < TARGET_SECONDS else 'misses'} "
          f"the {TARGET_SECONDS:.0f} s target")
    if "profileText" in results:
        print(results["profileText"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.autoscaling", description=__doc__.splitlines()[0])
    parser.add_argument("--services", type=int, default=200, help="Deployments with HPAs (default 200)")
    parser.add_argument("--days", type=int, default=7, help="simulated days (default 7)")
    parser.add_argument("--interval", type=int, default=15, help="seconds between metric samples (default 15)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="20 services for 1 day (a smoke run)")
    parser.add_argument("--profile", action="store_true", help="cProfile the simulation: top 15 by cumulative")
    parser.add_argument("--json", action="store_true", help="print the results as JSON too")
    args = parser.parse_args(argv)
    if args.quick:
        args.services, args.days = 20, 1
    if args.services < 1 or args.days < 1 or args.interval < 1:
        parser.error("--services, --days and --interval must be positive")
    results = run(args.services, args.days, args.interval, args.seed, args.profile)
    _print(results)
    if args.json:
        print(json.dumps({k: v for k, v in results.items() if k != "profileText"}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
