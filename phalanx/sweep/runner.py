"""Run a sweep's cells: in this process, in local worker processes, or as Ray tasks, with a progress bar.

Every executor calls `phalanx.sweep.cell.run_cell` on each cell that the results directory does not hold
yet; each result is stored as soon as it arrives, so an interrupted sweep loses only the cells in flight.
Worker processes are spawned (not forked): a fresh interpreter per worker, whatever threads this process
runs. With Ray, one remote task per cell runs on the cluster at `--ray ADDRESS`; the cluster's Python must
have phalanx installed and see the input files at the same absolute paths.
"""

from __future__ import annotations

import logging
import multiprocessing
import socket
import sys
from collections.abc import Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from types import TracebackType
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from phalanx.errors import InputError, PhalanxError
from phalanx.extras import require
from phalanx.sweep.cell import run_cell
from phalanx.sweep.grid import Cell
from phalanx.sweep.store import ResultStore, record

Result = tuple[Cell, dict[str, Any]]


class SweepProgress:
    """A bar of finished cells on stderr, drawn only when stderr is a terminal (stdout stays clean)."""

    def __init__(self, total: int, done: int, enabled: bool | None = None) -> None:
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self._progress: Progress | None = None
        self._task: TaskID | None = None
        if self.enabled:
            self._progress = Progress(TextColumn("sweep"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                                      TextColumn("eta"), TimeRemainingColumn(), console=Console(stderr=True))
            self._task = self._progress.add_task("sweep", total=total, completed=done)

    def __enter__(self) -> SweepProgress:
        if self._progress is not None:
            self._progress.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        if self._progress is not None:
            self._progress.stop()

    def advance(self) -> None:
        if self._progress is not None and self._task is not None:
            self._progress.advance(self._task)


def run_grid(cells: Sequence[Cell], *, workers: int = 1, ray_address: str | None = None,
             store: ResultStore | None = None, progress: bool | None = None) -> tuple[list[dict[str, Any]], int]:
    """The record of every cell, in grid order, and how many of them were run now (not read back)."""
    done = store.load(cells) if store is not None else {}
    todo = [cell for cell in cells if cell.key not in done]
    if ray_address is not None:
        check_ray_address(ray_address)
    with SweepProgress(len(cells), len(done), progress) as bar:
        results = _on_ray(todo, ray_address) if ray_address is not None else _locally(todo, workers)
        for cell, result in results:
            done[cell.key] = store.save(cell, result) if store is not None else record(cell, result)
            bar.advance()
    return [done[cell.key] for cell in cells], len(todo)


def _locally(todo: Sequence[Cell], workers: int) -> Iterator[Result]:
    if workers <= 1 or len(todo) <= 1:
        for cell in todo:
            yield cell, run_cell(cell)
        return
    pool = ProcessPoolExecutor(max_workers=min(workers, len(todo)), mp_context=multiprocessing.get_context("spawn"))
    try:
        pending: dict[Future[dict[str, Any]], Cell] = {pool.submit(run_cell, cell): cell for cell in todo}
        while pending:
            finished, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in finished:
                yield pending.pop(future), future.result()
    finally:
        # On an error or an interrupt, cells not started yet are dropped; running ones finish unrecorded.
        pool.shutdown(wait=True, cancel_futures=True)


def check_ray_address(address: str) -> None:
    """HOST:PORT (the head's GCS port) or ray://HOST:PORT (Ray Client); fails fast when Ray is not installed or
    nothing listens."""
    require("ray", "sweep --ray")
    hostport = address.removeprefix("ray://")
    host, sep, port = hostport.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise InputError(f"invalid address {address!r}: want HOST:PORT or ray://HOST:PORT", field="--ray")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=5):
            pass
    except OSError as exc:
        raise InputError(f"cannot reach a Ray cluster at {address}: {exc.strerror or exc}", field="--ray") from None


def _on_ray(todo: Sequence[Cell], address: str) -> Iterator[Result]:
    if not todo:
        return
    import ray  # only a sweep with --ray pays for importing Ray

    try:
        ray.init(address=address, logging_level=logging.ERROR, log_to_driver=False)
    except Exception as exc:  # Ray raises ConnectionError, RuntimeError, ValueError… on a bad cluster
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"cannot connect to Ray at {address}: {first}", field="--ray") from None
    try:
        task = ray.remote(num_cpus=1)(run_cell)
        pending: dict[Any, Cell] = {task.remote(cell): cell for cell in todo}
        while pending:
            finished, _ = ray.wait(list(pending), num_returns=1)
            for ref in finished:
                cell = pending.pop(ref)
                try:
                    result: dict[str, Any] = ray.get(ref)
                except ray.exceptions.RayTaskError as exc:
                    # The task's own error (bad input in a file) reads as it would locally.
                    if isinstance(exc.cause, PhalanxError):
                        raise exc.cause from None
                    raise
                yield cell, result
    finally:
        ray.shutdown()
