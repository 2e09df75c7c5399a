"""A real v1.37.2 control plane for a test session, or a skip (a failure under PHALANX_REQUIRE_KUBE=1, as in CI)
when the binaries of tools/kube/build.sh are missing; and waiting for what it does."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator

import pytest

from phalanx.verify.controlplane import ControlPlane, ControlPlaneError, find_binaries


def require(find: Callable[[], object]) -> None:
    """Skip the test when `find` says a build is missing (ControlPlaneError), or fail it under
    PHALANX_REQUIRE_KUBE=1, as CI runs."""
    try:
        find()
    except ControlPlaneError as exc:
        if os.environ.get("PHALANX_REQUIRE_KUBE") == "1":
            pytest.fail(str(exc))
        pytest.skip(str(exc))


def control_plane_session(*, aggregation: bool = False) -> Iterator[ControlPlane]:
    require(find_binaries)
    with ControlPlane(aggregation=aggregation) as plane:
        yield plane


def until(check: Callable[[], bool], timeout: float = 30.0, what: str = "condition", poll: float = 0.1) -> None:
    """Wait until `check()` holds, asking every `poll` seconds; fail the test after `timeout`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(poll)
    raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
