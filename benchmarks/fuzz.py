"""Fuzz Phalanx's input surfaces (tests/fuzz/surface_*.py): each seed one generated input, run in a worker
process with a timeout and a memory bound, counting what happened.

Run from the repository root:

    python -m benchmarks.fuzz --list                          # the surfaces
    python -m benchmarks.fuzz --inputs 10000                  # every surface, seeds 0..9999
    python -m benchmarks.fuzz --surface hpa --inputs 500 --seed 7000
    python -m benchmarks.fuzz --inputs 2000 --json            # the counts as JSON
    python -m benchmarks.fuzz --surface trees --inputs 1 --seed 42 --show

Outcomes: `ok`, `input error` (the contract for bad input), `failure` (any other exception), `crash` (the
worker died), `hang` (no answer within `--timeout`) and `memory` (the worker grew past `--memory-mb`). Exit
status 1 when any input failed, crashed, hung or blew up memory.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import time

from tests.fuzz import runner
from tests.fuzz.surface import INPUT_ERROR, OK, surfaces


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.fuzz", description=__doc__.splitlines()[0])
    parser.add_argument("--surface", action="append", default=[],
                        help="a surface to fuzz (repeatable; default: every one, see --list)")
    parser.add_argument("--inputs", type=int, default=1000, help="inputs (seeds) per surface (default 1000)")
    parser.add_argument("--seed", type=int, default=0, help="the first seed (default 0)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="worker processes (default: CPUs)")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds per input before it counts as a hang")
    parser.add_argument("--memory-mb", type=float, default=1024.0,
                        help="MiB a worker may grow by on one input before it counts as a blow-up (default 1024)")
    parser.add_argument("--json", action="store_true", help="print the counts as JSON")
    parser.add_argument("--list", action="store_true", help="list the surfaces and exit")
    parser.add_argument("--show", action="store_true", help="print the input of each seed instead of running it")
    args = parser.parse_args(argv)
    registry = surfaces()
    if args.list:
        for name, surface in registry.items():
            print(f"{name:14} {surface.description}")
        return 0
    unknown = [name for name in args.surface if name not in registry]
    if unknown:
        parser.error(f"unknown surface {unknown[0]!r}; known: {', '.join(registry)}")
    names = args.surface or list(registry)
    seeds = range(args.seed, args.seed + args.inputs)
    if args.show:
        for name in names:
            for seed in seeds:
                print(f"# {name} seed {seed}: {registry[name].show(registry[name].generate(random.Random(seed)))}")
        return 0
    started = time.perf_counter()
    results = runner.run(names, seeds, workers=args.workers, timeout=args.timeout, memory_mb=args.memory_mb)
    wall = time.perf_counter() - started
    machine = f"{platform.machine()}, {os.cpu_count()} CPUs, CPython {platform.python_version()}"
    rows = {name: {"inputs": args.inputs, "ok": results.outcomes[name][OK],
                   "inputErrors": results.outcomes[name][INPUT_ERROR],
                   **{outcome: results.outcomes[name][outcome] for outcome in runner.BAD},
                   "cpuSeconds": round(results.seconds.get(name, 0.0), 1),
                   "slowest": {"seed": results.slowest.get(name, (0.0, -1))[1],
                               "seconds": round(results.slowest.get(name, (0.0, -1))[0], 3)}}
            for name in names}
    if args.json:
        print(json.dumps({"seeds": [seeds.start, seeds.stop - 1], "surfaces": rows, "findings": results.findings[:50],
                          "wallSeconds": round(wall, 1), "workers": args.workers, "timeoutSeconds": args.timeout,
                          "memoryMiB": args.memory_mb, "machine": machine}, indent=2))
    else:
        print(f"# {machine}; {args.workers} workers, {args.timeout:g} s and {args.memory_mb:g} MiB per input; "
              f"seeds {seeds.start}..{seeds.stop - 1}")
        print(f"{'surface':14} {'inputs':>7} {'ok':>7} {'input err':>9} {'failure':>7} {'crash':>5} {'hang':>5} "
              f"{'memory':>6} {'slowest':>12}")
        for name, row in rows.items():
            slowest = row["slowest"]
            print(f"{name:14} {row['inputs']:>7} {row['ok']:>7} {row['inputErrors']:>9} {row['failure']:>7} "
                  f"{row['crash']:>5} {row['hang']:>5} {row['memory']:>6} "
                  f"{slowest['seconds']:>6.2f} s #{slowest['seed']}")
        print(f"wall time {wall:.1f} s")
        for finding in results.findings[:20]:
            print(f"  {finding['surface']} seed {finding['seed']}: {finding['outcome']}: {finding['detail']}")
    return 1 if results.bad() else 0


if __name__ == "__main__":
    sys.exit(main())
