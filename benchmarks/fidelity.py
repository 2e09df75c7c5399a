"""The differential suite as a measurement: Phalanx against the real kube-scheduler v1.37.2, per category.

Run from the repository root, after `tools/kube/build.sh`:

    python -m benchmarks.fidelity                  # 500 generated clusters (seeds 0-499)
    python -m benchmarks.fidelity --cases 50       # fewer
    python -m benchmarks.fidelity --seeds 17,42    # just these seeds, with their differences
    python -m benchmarks.fidelity --spread --pod-affinity   # spread and pod affinity in every case, not the mix

One control plane (etcd, kube-apiserver) serves every case; kube-scheduler restarts for each (so that the
pods of time 0 all wait in its queue before the first cycle, as Phalanx's do). Prints agreement per category
(outcome, node, boundAt, victims, podGroups, messages), how many node choices differed only among equally
best nodes, the seeds that disagree, and the two schedulers' summed scheduling times.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

from phalanx.scheduler.profiles import builtin
from phalanx.verify.compare import CATEGORIES, Verdict, verify
from phalanx.verify.controlplane import ControlPlane
from phalanx.verify.generator import generate_case
from phalanx.verify.oracle import Oracle


def run_case(oracle: Oracle, seed: int, folder: Path, *, spread: bool | None, pod_affinity: bool | None) -> Verdict:
    case = generate_case(seed, spread=spread, pod_affinity=pod_affinity)
    path = folder / f"case-{seed}.yaml"
    path.write_text(yaml.safe_dump_all(case.manifests, sort_keys=False))
    return verify([str(path)], builtin(case.profile), oracle, seed=seed)


def _seeds(args: argparse.Namespace) -> list[int]:
    if args.seeds:
        return [int(s) for s in args.seeds.split(",") if s.strip()]
    return list(range(args.first, args.first + args.cases))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.fidelity", description=__doc__.split("\n")[0])
    parser.add_argument("--cases", type=int, default=500)
    parser.add_argument("--first", type=int, default=0, help="first seed (default 0)")
    parser.add_argument("--seeds", help="comma-separated seeds instead of a range")
    parser.add_argument("--spread", action="store_true", default=None,
                        help="spread constraints in every case (default: the suite's mix, odd seeds)")
    parser.add_argument("--pod-affinity", action="store_true", default=None,
                        help="pod (anti-)affinity in every case (default: the suite's mix, every third seed)")
    parser.add_argument("--json", action="store_true", help="print the totals as JSON")
    args = parser.parse_args(argv)
    seeds = _seeds(args)
    agree: Counter[str] = Counter()
    total: Counter[str] = Counter()
    ties = 0
    disagreeing: dict[int, list[dict[str, Any]]] = {}
    phalanx_seconds = real_seconds = 0.0
    binds = 0
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="phalanx-fidelity-") as tmp, ControlPlane() as plane:
        oracle = Oracle(plane)
        for done, seed in enumerate(seeds, start=1):
            verdict = run_case(oracle, seed, Path(tmp), spread=args.spread, pod_affinity=args.pod_affinity)
            agree.update(verdict.agree)
            total.update(verdict.total)
            ties += verdict.ties
            phalanx_seconds += verdict.phalanx_seconds
            real_seconds += verdict.real_seconds
            binds += verdict.binds
            wrong = [d.to_json() for d in verdict.differences if d.category != "messages"]
            if wrong:
                disagreeing[seed] = wrong
            print(f"\r{done}/{len(seeds)} cases, {len(disagreeing)} disagreeing", end="", file=sys.stderr)
    print(file=sys.stderr)
    summary = {
        "machine": f"{platform.machine()}, {platform.python_implementation()} {platform.python_version()}",
        "cases": len(seeds), "wallSeconds": round(time.monotonic() - started, 1),
        "categories": {c: {"agree": agree[c], "total": total[c]} for c in CATEGORIES},
        "nodeTies": ties, "disagreeingSeeds": sorted(disagreeing),
        "podsBoundByPhalanx": binds, "phalanxSeconds": round(phalanx_seconds, 3),
        "kubeSchedulerSecondsToQuiet": round(real_seconds, 1),
    }
    if args.json:
        print(json.dumps({**summary, "differences": {str(k): v for k, v in disagreeing.items()}}, indent=2))
        return 0
    print(f"{len(seeds)} generated clusters, {summary['wallSeconds']} s ({summary['machine']})")
    for c in CATEGORIES:
        share = 100.0 * agree[c] / total[c] if total[c] else 100.0
        print(f"  {c:10s} {agree[c]:6d} / {total[c]:6d}  {share:6.2f}%")
    print(f"  node choices that differ only among equally best nodes: {ties}")
    for seed, wrong in sorted(disagreeing.items())[:20]:
        print(f"  seed {seed}: " + "; ".join(f"{d['category']} {d['name']}: phalanx {d['phalanx']!r}, "
                                             f"kube-scheduler {d['kubeScheduler']!r}" for d in wrong[:4]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
