"""Pods arriving one millisecond apart onto a full node: the campaign's quadratic case (issue 28).

Run from the repository root:

    python -m benchmarks.arrivals                 # 1,000 and 3,000 pods
    python -m benchmarks.arrivals --pods 500 2000 --json

One node of 1 cpu, full: a running pod of 1 cpu that ends after 1 s. Then `--pods` pods of 1 cpu, each running
1 s, arrive 1 ms apart (`phalanx.dev/arrival: 0.001s`, `0.002s`, …). The node frees room for one pod per second,
and each time kube-scheduler v1.37.2 tries every waiting pod again (NodeResourcesFit queues them all on an
assigned pod's deletion, and SchedulerPopFromBackoffQ pops them while activeQ is empty): the first takes the
room, every other fails once more. So the attempts grow with the square of the pods, in kube-scheduler as here;
what Phalanx can make cheap is each failed attempt after the first of a round (phalanx/scheduler/failures.py).

Printed for each size: CPU seconds of the run `simulate(...)` makes under the default profile (the load and the
simulation's building not counted),
pods bound, attempts (pod cycles), and the failed attempts whose Filter ran and those answered from an
equivalent pod's failure at the same books.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections.abc import Callable
from typing import Any

import yaml

from phalanx.inputs.load import load_paths
from phalanx.scheduler.profiles import builtin
from phalanx.sim.run import simulate
from phalanx.sim.simulation import Simulation

_Dumper: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
SIZES = (1000, 3000)


def manifests(pods: int) -> list[dict[str, Any]]:
    """The node, the pod that fills it, and `pods` arrivals 1 ms apart."""
    def pod(name: str, annotations: dict[str, str], node: str | None = None) -> dict[str, Any]:
        spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}
        if node is not None:
            spec["nodeName"] = node
        return {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "namespace": "default", "annotations": annotations}, "spec": spec}

    docs = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "full"},
             "status": {"allocatable": {"cpu": "1", "memory": "16Gi", "pods": "110"}}},
            pod("filler", {"phalanx.dev/duration": "1s"}, node="full")]
    docs += [pod(f"p{i}", {"phalanx.dev/arrival": f"{(i + 1) / 1000:.3f}s", "phalanx.dev/duration": "1s"})
             for i in range(pods)]
    return docs


def measure(pods: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "arrivals.yaml")
        with open(path, "w", encoding="utf-8") as handle:
            yaml.dump_all(manifests(pods), handle, Dumper=_Dumper)
        inputs = load_paths([path])
    cycles = 0
    seconds = 0.0

    def count_cycles(sim: Simulation) -> None:
        cycle = sim.scheduler._cycle

        def counted(key: str, now: float) -> None:
            nonlocal cycles
            cycles += 1
            cycle(key, now)

        sim.scheduler._cycle = counted  # type: ignore[method-assign]

    def timed(run: Callable[[], Simulation]) -> None:
        nonlocal seconds
        start = time.process_time()
        run()
        seconds = time.process_time() - start

    sim = simulate(inputs, builtin("default"), setup=[count_cycles], around=timed).sim
    failures = sim.scheduler.failures
    return {"pods": pods, "cpuSeconds": round(seconds, 2), "bound": sim.binds, "attempts": cycles,
            "failedFiltered": failures.filtered, "failedAnswered": failures.reused}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, nargs="+", default=list(SIZES), help="sizes to run (default 1000 3000)")
    parser.add_argument("--json", action="store_true", help="print JSON lines instead of a table")
    args = parser.parse_args()
    for pods in args.pods:
        row = measure(pods)
        if args.json:
            print(json.dumps(row))
        else:
            print(f"{pods:>6} pods: {row['cpuSeconds']:>7.2f} s CPU, {row['bound']} bound, {row['attempts']} attempts "
                  f"({row['failedFiltered']} failed after the Filter ran, {row['failedAnswered']} answered from an "
                  "equivalent failure)", flush=True)


if __name__ == "__main__":
    main()
