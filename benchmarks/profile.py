"""Where the time goes: cProfile over one engine run or one YAML load, top entries printed.

    python -m benchmarks.profile pod-at-a-time          # or gangs-of-3, gangs-of-500
    python -m benchmarks.profile load                   # 15,000 objects from YAML
    python -m benchmarks.profile gangs-of-3 --sort cumulative --top 40

cProfile adds a fixed cost to every Python call, so absolute times are several times the unprofiled
ones; the order and the shares are what to read.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import tempfile

from benchmarks.synthetic import SHAPES, inputs, manifests, write_yaml
from phalanx.inputs.load import load_paths
from phalanx.scheduler.profiles import builtin
from phalanx.sim.run import simulate


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.profile", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=[*SHAPES, "load"])
    parser.add_argument("--sort", default="tottime", choices=["tottime", "cumulative"])
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args(argv)
    profiler = cProfile.Profile()
    if args.what == "load":
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "cluster.yaml")
            write_yaml(path, manifests(SHAPES["pod-at-a-time"]))
            profiler.enable()
            load_paths([path])
            profiler.disable()
    else:
        shape = SHAPES[args.what]
        sim = simulate(inputs(shape), builtin(shape.profile), around=profiler.runcall).sim
        print(f"{shape.name}: {sim.binds} pods bound, {sim.scheduling_seconds:.2f} s in Scheduler.schedule "
              "(profiled)")
    stats = pstats.Stats(profiler, stream=sys.stdout)
    stats.strip_dirs().sort_stats(args.sort).print_stats(args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
