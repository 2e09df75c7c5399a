"""kube-scheduler's own benchmark, scheduler_perf, and Phalanx on the same workloads, side by side.

Run from the repository root, after `tools/kube/build.sh` (etcd) and `tools/scheduler_perf/build.sh` (the
scheduler_perf test binaries, built from the k8s.io/kubernetes v1.37.2 Go module):

    python -m benchmarks.scheduler_perf                          # the workloads in WORKLOADS
    python -m benchmarks.scheduler_perf --label integration-test # every small workload of the four topics
    python -m benchmarks.scheduler_perf --workload GangScheduling/5000Nodes_1000Gangs_3000Pods

For each workload, upstream's binary runs it as upstream's CI does (`-bench` with `-benchtime=1x`, its
in-process API server and etcd, the workload's feature gates), in a copy of the topic's folder, and its
SchedulingThroughput (pods/s, Average) is read from the data items it writes (pods over its
SchedulingDuration when the run is too short to sample). Phalanx reads the same performance-config.yaml,
unchanged, with `phalanx generate`, and simulates the manifests under the built-in `gang` profile with the
workload's gates: its engine figure is pods bound per second inside `Scheduler.schedule`, its whole figure
the whole simulation (building the cluster included). Both must bind every pod the workload creates to
count (the preemption workloads bind the preemptors and evict the init pods).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path

import yaml

from phalanx.inputs.load import load_paths
from phalanx.scheduler.profiles import KNOWN_GATES, builtin
from phalanx.sim.perf_config import load_perf_config
from phalanx.sim.run import simulate
from phalanx.sim.scheduler_perf import generate_perf

VERSION = "v1.37.2"
ROOT = Path(__file__).resolve().parents[1]
MODULE_CACHE = Path(os.environ.get("GOMODCACHE") or Path.home() / "go" / "pkg" / "mod")
UPSTREAM = MODULE_CACHE / f"k8s.io/kubernetes@{VERSION}" / "test" / "integration" / "scheduler_perf"
TOPICS = ("podgroup/gangscheduling", "podgroup/basicscheduling", "podgroup/tas", "workload_preemption")
# topic folder -> the workloads measured by default (scheduler_perf's `performance` label, the smaller sizes)
WORKLOADS: dict[str, tuple[str, ...]] = {
    "podgroup/gangscheduling": ("GangScheduling/5000Nodes_1000Gangs_3000Pods",
                                "GangScheduling/5000Nodes_3Gangs_3000Pods_1000PerGroup"),
    "podgroup/basicscheduling": ("BasicScheduling/5000Nodes_1000Groups_3000Pods",),
    "podgroup/tas": ("TopologyAwareScheduling/5000Nodes_750Gangs_3000Pods",),
}


@dataclass(frozen=True, slots=True)
class Result:
    workload: str
    pods: int
    real_pods_per_second: float
    real_seconds: float  # the binary's whole run: API server start, setup, the measured part
    engine_pods_per_second: float
    whole_pods_per_second: float

    def row(self) -> str:
        engine = self.engine_pods_per_second / self.real_pods_per_second if self.real_pods_per_second else 0.0
        whole = self.whole_pods_per_second / self.real_pods_per_second if self.real_pods_per_second else 0.0
        return (f"| {self.workload} | {self.pods:,} | {self.real_pods_per_second:,.0f} pods/s | "
                f"{self.engine_pods_per_second:,.0f} pods/s ({engine:.0f}×) | "
                f"{self.whole_pods_per_second:,.0f} pods/s ({whole:.1f}×) |")


def binaries() -> Path:
    """The folder of the scheduler_perf binaries (tools/scheduler_perf/build.sh prints it; builds on demand)."""
    done = subprocess.run([str(ROOT / "tools" / "scheduler_perf" / "build.sh")], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(done.stderr.strip() or "tools/scheduler_perf/build.sh failed")
    return Path(done.stdout.strip().splitlines()[-1])


def kube_bin() -> Path:
    done = subprocess.run([str(ROOT / "tools" / "kube" / "build.sh")], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(done.stderr.strip() or "tools/kube/build.sh failed")
    return Path(done.stdout.strip().splitlines()[-1])


def throughput(data_dir: Path, workload: str, pods: int, duration: float | None) -> float:
    """SchedulingThroughput's Average for the workload from the data items upstream wrote; pods over
    SchedulingDuration when upstream could not sample it (a run shorter than its sampling interval)."""
    for path in glob.glob(str(data_dir / "*.json")):
        for item in json.loads(Path(path).read_text()).get("dataItems", []):
            labels = item.get("labels", {})
            if labels.get("Metric") == "SchedulingThroughput" and f"/{workload}/" in labels.get("Name", "") + "/":
                return float(item["data"]["Average"])
    if duration:
        return pods / duration
    raise RuntimeError(f"{workload}: scheduler_perf reported no SchedulingThroughput and no SchedulingDuration")


def duration_of(output: str, workload: str) -> float | None:
    found = re.search(rf"{re.escape(workload)}-\d+\s+1\s+([\d.]+) SchedulingDuration/Duration", output)
    return float(found[1]) if found else None


def run_upstream(topic: str, workload: str, pods: int, bins: Path, etcd_dir: Path) -> tuple[float, float]:
    """(pods/s, seconds) of upstream's scheduler_perf on the workload."""
    binary = bins / f"{topic.replace('/', '_')}.test"
    with tempfile.TemporaryDirectory(prefix="phalanx-scheduler-perf-") as work:
        folder = Path(work) / Path(topic).name
        shutil.copytree(UPSTREAM / topic, folder)
        shutil.copytree(UPSTREAM / "templates", Path(work) / "templates")  # `../templates` in some configs
        data = Path(work) / "data"
        data.mkdir()
        env = {**os.environ, "PATH": f"{etcd_dir}{os.pathsep}{os.environ.get('PATH', '')}",
               # the API server finds its test certificates under TEST_SRCDIR/TEST_WORKSPACE in a -trimpath build
               "TEST_SRCDIR": str(MODULE_CACHE.parent), "TEST_WORKSPACE": MODULE_CACHE.name}
        started = time.perf_counter()
        done = subprocess.run([str(binary), "-test.run=^$", f"-test.bench=BenchmarkPerfScheduling/{workload}$",
                               "-test.benchtime=1x", f"-data-items-dir={data}", "-perf-scheduling-label-filter="],
                              cwd=folder, env=env, capture_output=True, text=True, timeout=3600)
        seconds = time.perf_counter() - started
        if done.returncode != 0 or "PASS" not in done.stdout:
            tail = (done.stdout + done.stderr).strip().splitlines()[-5:]
            raise RuntimeError(f"{workload}: scheduler_perf failed: {' / '.join(tail)}")
        return throughput(data, workload, pods, duration_of(done.stdout, workload)), seconds


def run_phalanx(topic: str, workload: str) -> tuple[int, float, float]:
    """(pods, engine pods/s, whole pods/s) of Phalanx on the manifests `phalanx generate` makes of the workload."""
    generated = generate_perf(load_perf_config(str(UPSTREAM / topic / "performance-config.yaml")), workload)
    gates = {name: bool(on) for name, on in generated.feature_gates.items() if name in KNOWN_GATES}
    profile = builtin("gang")
    profile = replace(profile, feature_gates={**profile.feature_gates, **gates})
    with tempfile.TemporaryDirectory(prefix="phalanx-generated-") as work:
        path = Path(work) / "manifests.yaml"
        dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
        path.write_text(yaml.dump_all(generated.manifests, Dumper=dumper, sort_keys=False))
        started = time.perf_counter()
        sim = simulate(load_paths([str(path)]), profile).sim
        whole = time.perf_counter() - started
    created = sum(1 for doc in generated.manifests if doc.get("kind") == "Pod")
    if sim.binds < created:
        raise RuntimeError(f"{workload}: Phalanx bound {sim.binds} of {created} pods")
    return created, sim.binds / sim.scheduling_seconds, sim.binds / whole


def listing(topic: str) -> list[tuple[str, tuple[str, ...]]]:
    return load_perf_config(str(UPSTREAM / topic / "performance-config.yaml")).listing()


def selected(args: argparse.Namespace) -> list[tuple[str, str]]:
    if args.workload:
        found = [topic for topic in TOPICS if args.workload in dict(listing(topic))]
        if not found:
            sys.exit(f"--workload {args.workload}: not a workload of {', '.join(TOPICS)} (phalanx generate "
                     f"--list names them)")
        return [(found[0], args.workload)]
    if args.label:
        return [(topic, name) for topic in TOPICS for name, labels in listing(topic) if args.label in labels]
    return [(topic, workload) for topic, names in WORKLOADS.items() for workload in names]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.scheduler_perf", description=__doc__.split("\n")[0])
    parser.add_argument("--workload", help="one TESTCASE/WORKLOAD of the topics (default: the table's)")
    parser.add_argument("--label", help="every workload of the topics with this scheduler_perf label")
    args = parser.parse_args(argv)
    if not UPSTREAM.is_dir():
        sys.exit(f"no scheduler_perf sources at {UPSTREAM}: run tools/kube/build.sh first (it downloads the module)")
    etcd_dir, bins = kube_bin(), binaries()
    print(f"# {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, {time.strftime('%Y-%m-%d')}")
    print("| workload | pods | kube-scheduler (scheduler_perf) | Phalanx engine | Phalanx whole run |")
    print("|---|---|---|---|---|")
    for topic, workload in selected(args):
        pods, engine, whole = run_phalanx(topic, workload)
        real, seconds = run_upstream(topic, workload, pods, bins, etcd_dir)
        print(Result(workload, pods, real, seconds, engine, whole).row(), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
