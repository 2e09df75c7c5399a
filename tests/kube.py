"""A real v1.37.2 control plane for a test session, or a skip (a failure under PHALANX_REQUIRE_KUBE=1, as in CI)
when the binaries of tools/kube/build.sh are missing."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from phalanx.verify.controlplane import ControlPlane, ControlPlaneError, find_binaries


def control_plane_session(**options: bool) -> Iterator[ControlPlane]:
    try:
        find_binaries()
    except ControlPlaneError as exc:
        if os.environ.get("PHALANX_REQUIRE_KUBE") == "1":
            pytest.fail(str(exc))
        pytest.skip(str(exc))
    with ControlPlane(**options) as plane:
        yield plane
