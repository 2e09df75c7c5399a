"""`phalanx run`'s live driver and the real kube-scheduler v1.37.2 on the same real API server and workload.

Run from the repository root, after `tools/kube/build.sh`:

    python -m benchmarks.live                       # 1,000 nodes, 2,000 pods: pod-at-a-time and gangs of 8
    python -m benchmarks.live --nodes 200 --pods 400 --gangs 10

The workload is `benchmarks.kube_scheduler`'s (scheduler_perf's `node-default.yaml` nodes and `pod-default.yaml`
pods; gangs of 8 with PodGroups of `minCount` 8). Every object is created on a real API server on loopback
before the scheduler starts; the clock runs from the first bind to the last, read from the pods'
`spec.nodeName` as the API server reports them (every 0.2 s), Binding calls and Events included. Phalanx runs
as `phalanx run` in a process of its own (leader election off), as kube-scheduler does. Then, with the
scheduler still running, `--gangs` more gangs of 8 are created one at a time: the latency is from the last
member's creation to the last member's bind.
"""

from __future__ import annotations

import argparse
import platform
import signal
import statistics
import subprocess
import sys
import time
from typing import Any

from lightkube.resources.core_v1 import Pod

from benchmarks.kube_scheduler import api_server_shapes, real_pods_per_second
from benchmarks.synthetic import NAMESPACE, Shape, manifests, pod_group_manifest, pod_manifest
from phalanx.api.objects import Source
from phalanx.verify.controlplane import ControlPlane, free_port
from phalanx.verify.oracle import Oracle

SCHEDULER = "phalanx"


def _ours(doc: dict[str, Any]) -> dict[str, Any]:
    if doc.get("kind") == "Pod":
        doc = {**doc, "spec": {**doc["spec"], "schedulerName": SCHEDULER}}
    return doc


def _bound(oracle: Oracle) -> set[str]:
    return {p.metadata.name for p in oracle.client.list(Pod, namespace=NAMESPACE)
            if p.spec and p.spec.nodeName and p.metadata and p.metadata.name}


def phalanx_pods_per_second(plane: ControlPlane, oracle: Oracle, shape: Shape, gangs: int,
                            timeout: float = 600.0) -> tuple[float, list[float]]:
    """Bulk pods/s of the live driver, and the latency of `gangs` gangs of 8 created one at a time."""
    oracle.reset()
    oracle.ensure_namespace(NAMESPACE)
    for i, doc in enumerate(manifests(shape)):
        oracle.create(Source("benchmark", i), _ours(dict(doc)))
    process = subprocess.Popen(
        [sys.executable, "-m", "phalanx", "run", "--kubeconfig", str(plane.kubeconfig), "--profile", "gang",
         "--scheduler-name", SCHEDULER, "--namespace", NAMESPACE, "--leader-elect", "false",
         "--metrics-bind-address", f"127.0.0.1:{free_port()}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    first = last = None
    deadline = time.monotonic() + timeout
    bound = 0
    try:
        while bound < shape.pod_count and time.monotonic() < deadline:
            bound = len(_bound(oracle))
            now = time.monotonic()
            if bound and first is None:
                first = now
            last = now
            time.sleep(0.2)
        if bound < shape.pod_count or first is None or last is None or last <= first:
            raise SystemExit(f"{shape.name}: phalanx bound {bound} of {shape.pod_count} pods in {timeout:g}s")
        latencies = []
        for g in range(gangs):
            name = f"late-{g}"
            oracle.create(Source("benchmark", 0), pod_group_manifest(name, 8))
            members = [f"{name}-{i}" for i in range(8)]
            for i, member in enumerate(members):
                doc = _ours(pod_manifest(100_000 + g * 8 + i, group=name))
                doc["metadata"] = {**doc["metadata"], "name": member}
                oracle.create(Source("benchmark", 0), doc)
            created = time.monotonic()
            while not set(members) <= _bound(oracle):
                if time.monotonic() - created > 60:
                    raise SystemExit(f"gang {name} was not bound within 60 s")
                time.sleep(0.02)
            latencies.append(time.monotonic() - created)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)
    return bound / (last - first), latencies


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.live", description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=2000)
    parser.add_argument("--gangs", type=int, default=10, help="gangs of 8 created one at a time afterwards")
    args = parser.parse_args(argv)
    shapes = api_server_shapes(args.nodes, args.pods)
    print(f"{platform.machine()}, {platform.python_implementation()} {platform.python_version()}, "
          f"{args.nodes} nodes, {args.pods} pods")
    with ControlPlane() as plane:
        oracle = Oracle(plane)
        for shape in shapes:
            mine, latencies = phalanx_pods_per_second(plane, oracle, shape, args.gangs)
            real = real_pods_per_second(plane, oracle, shape)
            gang = (f"   gang of 8, last member created to last bind: median {statistics.median(latencies):.2f} s, "
                    f"max {max(latencies):.2f} s") if latencies else ""
            print(f"  {shape.name:14s} kube-scheduler {real:7.0f} pods/s   phalanx run {mine:7.0f} pods/s   "
                  f"ratio {mine / real:5.2f}x{gang}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
