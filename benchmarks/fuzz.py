"""Fuzz the loader: random mutations of valid manifests (tests/fuzz_manifests.py), each loaded in a worker
process with a timeout, counting what happened.

Run from the repository root:

    python -m benchmarks.fuzz --inputs 10000            # seeds 0..9999, one worker per CPU
    python -m benchmarks.fuzz --inputs 500 --seed 7000  # seeds 7000..7499
    python -m benchmarks.fuzz --inputs 10000 --json     # the counts as JSON
    python -m benchmarks.fuzz --inputs 2000 --simulate  # also simulate every input that loads

Each input is one seed: the same seed gives the same manifests, so a finding replays with
`--inputs 1 --seed SEED --show`. Outcomes: `ok` (loaded), `input error` (an InputError: the contract for bad
input), `failure` (any other exception), `crash` (the worker died: a segfault, an abort) and `hang` (no answer
within `--timeout` seconds; the worker is killed and replaced). Exit status 1 when any input failed, crashed
or hung.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import os
import platform
import random
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

from tests.fuzz.manifests import load_one, manifests, render

BAD = ("failure", "crash", "hang")


def _work(conn: Connection, simulate: bool) -> None:
    directory = tempfile.mkdtemp(prefix="phalanx-fuzz-")
    while True:
        seed = conn.recv()
        if seed is None:
            return
        rng = random.Random(seed)
        name, text = render(manifests(rng), rng)
        started = time.perf_counter()
        try:
            outcome, detail = load_one(directory, name, text, simulate=simulate).replace("-", " "), ""
        except BaseException as exc:  # a finding: anything but InputError
            outcome, detail = "failure", f"{type(exc).__name__}: {str(exc)[:200]}"
        conn.send((outcome, detail, time.perf_counter() - started))


class _Worker:
    """One child process that loads inputs; replaced when it dies or hangs."""

    def __init__(self, simulate: bool) -> None:
        self.simulate = simulate
        self._start()

    def _start(self) -> None:
        context = multiprocessing.get_context("fork")
        self.conn, child = context.Pipe()
        self.process = context.Process(target=_work, args=(child, self.simulate), daemon=True)
        self.process.start()
        child.close()

    def run(self, seed: int, timeout: float) -> tuple[str, str, float]:
        started = time.perf_counter()
        self.conn.send(seed)
        if self.conn.poll(timeout):
            try:
                outcome, detail, seconds = self.conn.recv()
                return outcome, detail, seconds
            except EOFError:
                pass
            self.process.join(5)
            code = self.process.exitcode
            self._start()
            return "crash", f"worker exited with status {code}", time.perf_counter() - started
        self.process.kill()
        self.process.join(5)
        self._start()
        return "hang", f"no answer within {timeout:g} s", time.perf_counter() - started

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            self.conn.send(None)
        self.process.join(5)
        if self.process.is_alive():
            self.process.kill()


@dataclass
class Results:
    outcomes: Counter[str] = field(default_factory=Counter)
    findings: list[dict[str, Any]] = field(default_factory=list)
    slowest: tuple[float, int] = (0.0, -1)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, seed: int, outcome: str, detail: str, seconds: float) -> None:
        with self.lock:
            self.outcomes[outcome] += 1
            if outcome in BAD:
                self.findings.append({"seed": seed, "outcome": outcome, "detail": detail})
            if seconds > self.slowest[0]:
                self.slowest = (seconds, seed)


def run(first: int, count: int, workers: int, timeout: float, simulate: bool = False) -> Results:
    results = Results()
    seeds = iter(range(first, first + count))
    take = threading.Lock()

    def drive() -> None:
        worker = _Worker(simulate)
        try:
            while True:
                with take:
                    seed = next(seeds, None)
                if seed is None:
                    return
                results.add(seed, *worker.run(seed, timeout))
        finally:
            worker.stop()

    threads = [threading.Thread(target=drive) for _ in range(max(1, workers))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    results.findings.sort(key=lambda f: f["seed"])
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.fuzz", description=__doc__.splitlines()[0])
    parser.add_argument("--inputs", type=int, default=1000, help="how many inputs (seeds) to try (default 1000)")
    parser.add_argument("--seed", type=int, default=0, help="the first seed (default 0)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="worker processes (default: CPUs)")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds per input before it counts as a hang")
    parser.add_argument("--simulate", action="store_true",
                        help="also simulate what loads (2 h, profiles default and gang)")
    parser.add_argument("--json", action="store_true", help="print the counts as JSON")
    parser.add_argument("--show", action="store_true", help="print the input of each seed instead of loading it")
    args = parser.parse_args(argv)
    if args.show:
        for seed in range(args.seed, args.seed + args.inputs):
            rng = random.Random(seed)
            name, text = render(manifests(rng), rng)
            print(f"# seed {seed}: {name}, {len(text)} characters\n{text[:4000]}")
        return 0
    started = time.perf_counter()
    results = run(args.seed, args.inputs, args.workers, args.timeout, args.simulate)
    wall = time.perf_counter() - started
    summary = {
        "inputs": args.inputs, "seeds": [args.seed, args.seed + args.inputs - 1],
        "ok": results.outcomes["ok"], "inputErrors": results.outcomes["input error"],
        "failures": results.outcomes["failure"], "crashes": results.outcomes["crash"],
        "hangs": results.outcomes["hang"], "timeoutSeconds": args.timeout, "workers": args.workers,
        "simulated": args.simulate,
        "wallSeconds": round(wall, 1), "slowestInput": {"seed": results.slowest[1],
                                                        "seconds": round(results.slowest[0], 3)},
        "findings": results.findings[:20],
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, CPython {platform.python_version()}",
    }
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(f"# {summary['machine']}; {args.workers} workers, {args.timeout:g} s per input"
              + ("; loaded inputs simulated" if args.simulate else ""))
        print(f"inputs tried      {args.inputs} (seeds {args.seed}..{args.seed + args.inputs - 1})")
        print(f"loaded            {summary['ok']}")
        print(f"input errors      {summary['inputErrors']}")
        print(f"failures          {summary['failures']}")
        print(f"crashes           {summary['crashes']}")
        print(f"hangs             {summary['hangs']}")
        print(f"slowest input     {results.slowest[0]:.2f} s (seed {results.slowest[1]})")
        print(f"wall time         {wall:.1f} s ({args.inputs / wall:.0f} inputs/s)")
        for finding in results.findings[:20]:
            print(f"  seed {finding['seed']}: {finding['outcome']}: {finding['detail']}")
    return 1 if any(results.outcomes[o] for o in BAD) else 0


if __name__ == "__main__":
    sys.exit(main())
