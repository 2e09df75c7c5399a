"""The optional dependency groups (pyproject's extras): the core install runs simulate, compare, validate,
verify, migrate and run; the heavy stacks come only with the extra a feature needs."""

from __future__ import annotations

from importlib.util import find_spec

from phalanx.errors import PhalanxError

# module -> the extra that installs it
EXTRAS = {"ray": "sweep", "pyarrow": "traces", "ortools": "exact", "matplotlib": "plots"}


class MissingExtra(PhalanxError):
    """A feature was asked for whose optional dependency is not installed."""


def available(module: str) -> bool:
    try:
        return find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package missing, or a module stubbed out as None
        return False


def require(module: str, feature: str) -> None:
    """MissingExtra naming the pip command unless `module` (a key of EXTRAS) can be imported."""
    if not available(module):
        raise MissingExtra(f"{feature} needs {module}, which is not installed: pip install 'phalanx[{EXTRAS[module]}]'")
