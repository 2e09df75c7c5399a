"""Mutated manifests (tests/fuzz/manifests.py): loaded, and what loads simulated for two hours under the
default and gang profiles."""

from __future__ import annotations

import random

from tests.fuzz.manifests import load_one, manifests, render
from tests.fuzz.surface import Surface


def _generate(rng: random.Random) -> tuple[str, str]:
    return render(manifests(rng), rng)


def _run(case: tuple[str, str], directory: str) -> str:
    name, text = case
    return load_one(directory, name, text, simulate=True)


def _show(case: tuple[str, str]) -> str:
    name, text = case
    return f"{name}, {len(text)} characters\n{text[:4000]}"


SURFACE = Surface("manifests", _generate, _run, _show,
                  "Node, Pod, PriorityClass, PodGroup, Job, PDB and DRA manifests with one to four mutations")
