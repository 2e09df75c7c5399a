"""The results directory of `phalanx sweep --results DIR`: one `<key>.json` per finished cell.

A file is written to a temporary name in the same directory and renamed over `<key>.json` (an atomic
replace on POSIX), so a sweep that is interrupted leaves either the whole file or none. On a rerun, the
files of the grid's cells are read back and those cells skipped; files of cells that are not in the grid
(another grid, other seeds) are left alone and ignored. A `<key>.json` that is not a whole record of its
cell is an error naming the file.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Sequence
from typing import Any

from phalanx.errors import InputError
from phalanx.sim.jsonsafe import dumps
from phalanx.sweep.grid import SCHEMA_VERSION, Cell

FIELD = "--results"


def record(cell: Cell, result: dict[str, Any]) -> dict[str, Any]:
    """What a finished cell is stored as: strict JSON, so a fresh record equals one read back from a file."""
    stored = {"schemaVersion": SCHEMA_VERSION, "key": cell.key, "cell": cell.params(), "result": result}
    normalized: dict[str, Any] = json.loads(dumps(stored, indent=None))
    return normalized


class ResultStore:
    def __init__(self, directory: str) -> None:
        self.directory = directory
        if os.path.exists(directory) and not os.path.isdir(directory):
            raise InputError(f"{directory} is not a directory", field=FIELD)
        try:
            os.makedirs(directory, exist_ok=True)
        except OSError as exc:
            raise InputError(f"cannot create {directory}: {exc.strerror}", field=FIELD) from None

    def path(self, cell: Cell) -> str:
        return os.path.join(self.directory, f"{cell.key}.json")

    def load(self, cells: Sequence[Cell]) -> dict[str, dict[str, Any]]:
        """The stored records of these cells, by key."""
        found: dict[str, dict[str, Any]] = {}
        for cell in cells:
            path = self.path(cell)
            try:
                with open(path, encoding="utf-8") as handle:
                    stored = json.load(handle)
            except FileNotFoundError:
                continue
            except (OSError, ValueError) as exc:
                raise InputError(f"not a sweep result ({exc}); delete it to run the cell again", file=path) from None
            if not (isinstance(stored, dict) and stored.get("schemaVersion") == SCHEMA_VERSION
                    and stored.get("key") == cell.key and stored.get("cell") == cell.params()
                    and isinstance(stored.get("result"), dict)):
                raise InputError("not a result of this cell; delete it to run the cell again", file=path)
            found[cell.key] = stored
        return found

    def others(self, cells: Sequence[Cell]) -> int:
        """How many stored results belong to cells outside this grid."""
        keys = {f"{cell.key}.json" for cell in cells}
        return sum(1 for name in os.listdir(self.directory)
                   if name.endswith(".json") and not name.startswith(".") and name not in keys)

    def save(self, cell: Cell, result: dict[str, Any]) -> dict[str, Any]:
        """Store the cell's result atomically; returns the record."""
        stored = record(cell, result)
        handle, temporary = tempfile.mkstemp(prefix=f".{cell.key}.", suffix=".tmp", dir=self.directory)
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                out.write(dumps(stored) + "\n")
                out.flush()
                os.fsync(out.fileno())
            os.replace(temporary, self.path(cell))
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary)
            raise
        return stored
