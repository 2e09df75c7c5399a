"""Try seeds of fuzz surfaces in worker processes, each input under a timeout and a memory bound.

A worker is a forked child that answers one (surface, seed) at a time: it generates the case from the seed and
runs it. The parent waits for the answer while it watches the worker's resident memory; a worker that does not
answer in time is killed (a hang), one that grows past its bound is killed (a memory blow-up), one that dies is
replaced (a crash). The outcomes:

- `ok` and `input-error`: the contract (the case ran, or ended as bad input should);
- `failure`: any other exception, with its type and message;
- `crash`, `hang`, `memory`: the worker died, did not answer in time, or outgrew `memory_mb`.

The same seed gives the same case, so a finding replays with `python -m benchmarks.fuzz --surface NAME
--inputs 1 --seed SEED --show`.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import random
import tempfile
import threading
import time
import traceback
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

from tests.fuzz.surface import INPUT_ERROR, OK, surfaces

BAD = ("failure", "crash", "hang", "memory")
POLL = 0.05  # how often the parent reads the worker's resident memory
RECYCLE = 500  # a worker is replaced after this many inputs, so one input's garbage never counts against another


def _rss_mb(pid: int) -> float:
    """Resident memory of a process in MiB (0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except (OSError, ValueError):
        pass
    return 0.0


def _work(conn: Connection) -> None:
    registry = surfaces()
    directory = tempfile.mkdtemp(prefix="phalanx-fuzz-")
    conn.send("ready")
    while True:
        job = conn.recv()
        if job is None:
            return
        name, seed = job
        surface = registry[name]
        started = time.perf_counter()
        scratch = tempfile.mkdtemp(dir=directory)
        try:
            outcome = surface.run(surface.generate(random.Random(seed)), scratch)
            detail = "" if outcome in (OK, INPUT_ERROR) else f"run answered {outcome!r}"
            if detail:
                outcome = "failure"
        except BaseException as exc:  # a finding: anything that is not the contract
            frame = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
            where = f" at {os.path.basename(frame.filename)}:{frame.lineno}" if frame else ""
            outcome, detail = "failure", f"{type(exc).__name__}{where}: {str(exc)[:300]}"
        finally:
            for entry in os.scandir(scratch):
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)
            with contextlib.suppress(OSError):
                os.rmdir(scratch)
        conn.send((outcome, detail, time.perf_counter() - started))


class Worker:
    """One child process that runs inputs; replaced when it dies, hangs, grows too big or has run RECYCLE."""

    def __init__(self, memory_mb: float) -> None:
        self.memory_mb = memory_mb
        self.served = 0
        self._start()

    def _start(self) -> None:
        context = multiprocessing.get_context("fork")
        self.conn, child = context.Pipe()
        self.process = context.Process(target=_work, args=(child,), daemon=True)
        self.process.start()
        child.close()
        self.conn.recv()  # "ready": the surfaces are imported
        self.baseline = _rss_mb(self.process.pid or 0)
        self.served = 0

    def _replace(self) -> None:
        self.process.kill()
        self.process.join(5)
        self._start()

    def run(self, surface: str, seed: int, timeout: float) -> tuple[str, str, float]:
        if self.served >= RECYCLE:
            self.stop()
            self._start()
        self.served += 1
        started = time.perf_counter()
        self.conn.send((surface, seed))
        peak = 0.0
        while not self.conn.poll(POLL):
            peak = max(peak, _rss_mb(self.process.pid or 0) - self.baseline)
            if peak > self.memory_mb:
                self._replace()
                return "memory", f"grew by more than {self.memory_mb:g} MiB", time.perf_counter() - started
            if time.perf_counter() - started > timeout:
                self._replace()
                return "hang", f"no answer within {timeout:g} s", time.perf_counter() - started
            if not self.process.is_alive() and not self.conn.poll(0):
                break
        try:
            outcome, detail, seconds = self.conn.recv()
            return outcome, detail, seconds
        except EOFError:
            self.process.join(5)
            code = self.process.exitcode
            self._start()
            return "crash", f"worker exited with status {code}", time.perf_counter() - started

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            self.conn.send(None)
        self.process.join(5)
        if self.process.is_alive():
            self.process.kill()


@dataclass
class Results:
    """Counts per surface and outcome, the findings, and the slowest input of each surface."""

    outcomes: dict[str, Counter[str]] = field(default_factory=dict)
    findings: list[dict[str, Any]] = field(default_factory=list)
    slowest: dict[str, tuple[float, int]] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, surface: str, seed: int, outcome: str, detail: str, seconds: float) -> None:
        with self.lock:
            self.outcomes.setdefault(surface, Counter())[outcome] += 1
            self.seconds[surface] = self.seconds.get(surface, 0.0) + seconds
            if outcome in BAD:
                self.findings.append({"surface": surface, "seed": seed, "outcome": outcome, "detail": detail})
            if seconds > self.slowest.get(surface, (0.0, -1))[0]:
                self.slowest[surface] = (seconds, seed)

    def bad(self) -> int:
        return sum(counts[o] for counts in self.outcomes.values() for o in BAD)


def run(names: Sequence[str], seeds: Iterable[int], *, workers: int = 2, timeout: float = 10.0,
        memory_mb: float = 1024.0) -> Results:
    """Every seed of every named surface, `workers` at a time."""
    results = Results()
    jobs = iter([(name, seed) for name in names for seed in seeds])
    take = threading.Lock()

    def drive() -> None:
        worker = Worker(memory_mb)
        try:
            while True:
                with take:
                    job = next(jobs, None)
                if job is None:
                    return
                results.add(job[0], job[1], *worker.run(job[0], job[1], timeout))
        finally:
            worker.stop()

    threads = [threading.Thread(target=drive, name=f"fuzz-{i}") for i in range(max(1, workers))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    results.findings.sort(key=lambda f: (f["surface"], f["seed"]))
    return results
