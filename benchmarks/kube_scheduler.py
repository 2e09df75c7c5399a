"""The real kube-scheduler v1.37.2 and Phalanx on the same workload: pods bound per second, side by side.

Run from the repository root, after `tools/kube/build.sh`:

    python -m benchmarks.kube_scheduler                   # 1,000 nodes, 2,000 pods, pod-at-a-time and gangs of 8
    python -m benchmarks.kube_scheduler --nodes 500 --pods 1000

The workload is scheduler_perf's (benchmarks/synthetic.py: `node-default.yaml` nodes, `pod-default.yaml`
pods, `gang-pod.yaml` members with PodGroups of `minCount` 8). Every object is created on a real API server
on loopback before kube-scheduler starts (leader election off, the default profile, `GenericWorkload` as the
shape needs); the clock runs from its first bind to its last, read from the pods' `spec.nodeName` as the
API server reports them (every 0.2 s), so its pods/s includes the Binding calls, as scheduler_perf's
SchedulingThroughput does. Phalanx's figure is its engine's (time inside `Scheduler.schedule`) on the same
manifests.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from dataclasses import replace

from lightkube.resources.core_v1 import Pod

from benchmarks.measure import run_engine
from benchmarks.synthetic import NAMESPACE, SHAPES, Shape, inputs, manifests
from phalanx.api.objects import Source
from phalanx.scheduler.profiles import builtin
from phalanx.verify.compare import scheduler_config, scheduler_gates
from phalanx.verify.controlplane import ControlPlane
from phalanx.verify.oracle import Oracle


def real_pods_per_second(plane: ControlPlane, oracle: Oracle, shape: Shape, timeout: float = 600.0) -> float:
    oracle.reset()
    oracle.ensure_namespace(NAMESPACE)
    for i, doc in enumerate(manifests(shape)):
        oracle.create(Source("benchmark", i), doc)
    profile = builtin(shape.profile)
    plane.start_scheduler(scheduler_config(profile), scheduler_gates(profile))
    first = last = None
    deadline = time.monotonic() + timeout
    bound = 0
    while bound < shape.pod_count and time.monotonic() < deadline:
        bound = sum(1 for p in oracle.client.list(Pod, namespace=NAMESPACE) if p.spec and p.spec.nodeName)
        now = time.monotonic()
        if bound and first is None:
            first = now
        last = now
        time.sleep(0.2)
    plane.stop_scheduler()
    if bound < shape.pod_count or first is None or last is None or last <= first:
        raise SystemExit(f"{shape.name}: kube-scheduler bound {bound} of {shape.pod_count} pods in {timeout:g}s")
    return bound / (last - first)


def api_server_shapes(nodes: int, pods: int) -> list[Shape]:
    """The two shapes run on a real API server: pod-at-a-time, and gangs of 8."""
    return [replace(SHAPES["pod-at-a-time"], nodes=nodes, pods=pods),
            replace(SHAPES["gangs-of-3"], name="gangs-of-8", nodes=nodes, pods=pods, gang_size=8)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.kube_scheduler", description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=2000)
    args = parser.parse_args(argv)
    shapes = api_server_shapes(args.nodes, args.pods)
    print(f"{platform.machine()}, {platform.python_implementation()} {platform.python_version()}, "
          f"{args.nodes} nodes, {args.pods} pods")
    with ControlPlane() as plane:
        oracle = Oracle(plane)
        for shape in shapes:
            real = real_pods_per_second(plane, oracle, shape)
            mine = run_engine(shape, inputs(shape)).engine_pods_per_second
            print(f"  {shape.name:14s} kube-scheduler {real:8.0f} pods/s   Phalanx engine {mine:8.0f} pods/s   "
                  f"ratio {mine / real:5.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
