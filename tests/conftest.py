"""Under pytest-xdist (`-n`, as pyproject's addopts run the suite), every test that needs the real control plane
goes to one worker (`--dist loadgroup`): they start control planes of their own and wait on them, and side by
side on two cores their timing would be each other's. The fast tier spreads over the other workers."""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("kube") is not None:
            item.add_marker(pytest.mark.xdist_group("kube"))
