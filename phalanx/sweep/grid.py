"""The cells of a sweep and their keys.

A cell is one run: a trace's pod list under one profile, seed and load (the fragmentation protocol), or a
set of manifests under one profile, seed and what-if edit. Its key is a hash of its parameters (file paths
made absolute, profile files too; built-in profile names as they are), so the same cell has the same key in
every run and from every working directory. File contents are not part of the key.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from phalanx.errors import InputError
from phalanx.scheduler.profiles import BUILTIN
from phalanx.traces.compare import parse_seeds

SCHEMA_VERSION = 1
TRACE = "trace"
MANIFESTS = "manifests"


@dataclass(frozen=True, slots=True)
class Cell:
    kind: str  # TRACE or MANIFESTS
    profile: str  # a built-in profile name, or the absolute path of a profile file
    seed: int
    trace: str = ""  # the trace format (openb)
    nodes: str = ""  # absolute paths of the trace's CSVs
    pods: str = ""
    load: float = 0.0
    manifests: tuple[str, ...] = ()  # absolute paths, loaded together as one input
    edit: str = "base"
    until: float | None = None
    name: str = field(default="", compare=False)  # how tables name the input (not part of the key)

    def params(self) -> dict[str, Any]:
        """What identifies the cell, as JSON."""
        if self.kind == TRACE:
            return {"kind": TRACE, "trace": self.trace, "nodes": self.nodes, "pods": self.pods,
                    "protocol": "fragmentation", "load": self.load, "profile": self.profile, "seed": self.seed}
        return {"kind": MANIFESTS, "manifests": list(self.manifests), "edit": self.edit, "until": self.until,
                "profile": self.profile, "seed": self.seed}

    @property
    def key(self) -> str:
        text = json.dumps({"schemaVersion": SCHEMA_VERSION, **self.params()}, sort_keys=True,
                          separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:24]

    def group(self) -> tuple[Any, ...]:
        """The cell's aggregate: every parameter but the seed."""
        return tuple(sorted((k, json.dumps(v)) for k, v in self.params().items() if k != "seed"))


def _profile_spec(spec: str) -> str:
    return spec if spec in BUILTIN or not os.path.exists(spec) else os.path.abspath(spec)


def _stem(path: str) -> str:
    stem = os.path.splitext(os.path.basename(path))[0]
    return stem.removeprefix("openb_pod_list_")


# The fragmentation protocol clones pods until the arrived GPU requests reach load × capacity: ten times the
# cluster is far past any load worth measuring (the FGD paper stops at 1.3) and keeps the clones bounded.
MAX_LOAD = 10.0
MAX_SEED = 2**64 - 1  # NumPy's generators take any non-negative seed; this many are enough
MAX_SEEDS = 10_000  # seeds in one grid: each is a run per cell


def load_factor(text: str) -> float:
    """One load: a multiple of GPU capacity above 0 and at most MAX_LOAD."""
    try:
        value = float(text)
    except ValueError:
        raise InputError(f"invalid load {text[:40]!r}: want e.g. 1.3 or 1.0,1.3", field="--load") from None
    if not (math.isfinite(value) and 0 < value <= MAX_LOAD):
        raise InputError(f"must be above 0 and at most {MAX_LOAD:g} (times the GPU capacity), got {text[:40]}",
                         field="--load")
    return value


def parse_loads(text: str) -> list[float]:
    """`1.3` or `0.9,1.0,1.3` → loads, each above 0 and at most MAX_LOAD times GPU capacity."""
    loads = [load_factor(part) for part in filter(None, (p.strip() for p in text.split(",")))]
    if not loads:
        raise InputError("name at least one load", field="--load")
    return loads


def seed_list(text: str) -> list[int]:
    """`42-51`, `1,2,5` or a mix: at most MAX_SEEDS seeds, each at most MAX_SEED (counted before a range is
    spelled out, so `0-99999999999` costs nothing)."""
    count = 0
    for part in filter(None, (p.strip() for p in text.split(","))):
        low, sep, high = part.partition("-")
        try:
            first, last = (int(low), int(high)) if sep else (int(part), int(part))
        except ValueError:
            continue  # parse_seeds names what is wrong with it
        if last > MAX_SEED:
            raise InputError(f"a seed is at most {MAX_SEED}, got {last}", field="--seeds")
        count += max(last - first + 1, 0)
        if count > MAX_SEEDS:
            raise InputError(f"names more than {MAX_SEEDS} seeds", field="--seeds")
    return parse_seeds(text)


def _unique(cells: list[Cell]) -> list[Cell]:
    """Cells in order, a repeated one (e.g. a seed named twice) kept once."""
    unique: dict[str, Cell] = {}
    for cell in cells:
        unique.setdefault(cell.key, cell)
    return list(unique.values())


def trace_grid(trace: str, nodes: str, pods: Sequence[str], profiles: Sequence[str], seeds: Sequence[int],
               loads: Sequence[float]) -> list[Cell]:
    """pod lists × loads × profiles × seeds, in that nesting order. A pod list is named by its file name without
    `openb_pod_list_` and `.csv` (`gpushare20`), or by its path when two lists share a file name."""
    stems = [_stem(pod_list) for pod_list in pods]
    names = stems if len(set(stems)) == len(set(map(os.path.abspath, pods))) else list(pods)
    return _unique([Cell(TRACE, _profile_spec(profile), seed, trace=trace, nodes=os.path.abspath(nodes),
                         pods=os.path.abspath(pod_list), load=load, name=name)
                    for pod_list, name in zip(pods, names, strict=True) for load in loads for profile in profiles
                    for seed in seeds])


def manifest_grid(manifests: Sequence[Sequence[str]], profiles: Sequence[str], edits: Sequence[str],
                  seeds: Sequence[int], until: float | None) -> list[Cell]:
    """manifest sets × edits × profiles × seeds, in that nesting order."""
    return _unique([Cell(MANIFESTS, _profile_spec(profile), seed, manifests=tuple(os.path.abspath(p) for p in paths),
                         edit=edit, until=until, name=",".join(paths))
                    for paths in manifests for edit in edits for profile in profiles for seed in seeds])
