"""What a fuzzed input surface is, and where the surfaces are found.

A surface turns one seed into one case (`generate`, from a `random.Random` seeded with it) and tries the case
(`run`, in a scratch directory of its own). `run` answers "ok" or "input-error" (the contract for bad input:
an InputError, or exit status 2 with one line on stderr); any other exception is a finding. The runner counts
too a hang (no answer within the timeout) and a memory blow-up (the worker grows past its bound) as findings.
Every module `tests/fuzz/surface_<name>.py` defines `SURFACE`; `surfaces()` finds them all.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import tests.fuzz
from phalanx.errors import InputError

OK = "ok"
INPUT_ERROR = "input-error"
T = TypeVar("T")


@dataclass(frozen=True)
class Surface:
    name: str
    generate: Callable[[random.Random], Any]  # a case from one seeded generator; must be picklable
    run: Callable[[Any, str], str]  # (case, scratch directory) -> OK | INPUT_ERROR; anything else raises
    show: Callable[[Any], str] = repr  # the case as a reader would want to see it (`--show`)
    description: str = ""


def surfaces() -> dict[str, Surface]:
    """Every surface of the suite, by name."""
    found: dict[str, Surface] = {}
    for module in pkgutil.iter_modules(tests.fuzz.__path__):
        if module.name.startswith("surface_"):
            surface = importlib.import_module(f"tests.fuzz.{module.name}").SURFACE
            found[surface.name] = surface
    return dict(sorted(found.items()))


def read_written(text: str, path: str, read: Callable[[list[str]], T]) -> T | None:
    """`read([path])` of `text` written to `path` (lone surrogates kept as the generator made them); None when
    it is bad input (an InputError). The file is gone afterwards either way."""
    with open(path, "w", encoding="utf-8", errors="surrogatepass") as handle:
        handle.write(text)
    try:
        return read([path])
    except InputError:
        return None
    finally:
        os.unlink(path)


def show_text(text: str) -> str:
    """A generated file for `--show`: its length and its first 4,000 characters."""
    return f"{len(text)} characters\n{text[:4000]}"
