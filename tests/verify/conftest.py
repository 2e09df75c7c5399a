"""The real v1.37.2 control plane for the tests marked `kube`: one per test session, reset between tests.

Without the binaries (`tools/kube/build.sh` not run) these tests are skipped, unless PHALANX_REQUIRE_KUBE=1
(as CI sets it), where a missing control plane is a failure.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from phalanx.verify.controlplane import ControlPlane, ControlPlaneError, find_binaries
from phalanx.verify.oracle import Oracle


@pytest.fixture(scope="session")
def control_plane() -> Iterator[ControlPlane]:
    try:
        find_binaries()
    except ControlPlaneError as exc:
        if os.environ.get("PHALANX_REQUIRE_KUBE") == "1":
            pytest.fail(str(exc))
        pytest.skip(str(exc))
    with ControlPlane() as plane:
        yield plane


@pytest.fixture
def oracle(control_plane: ControlPlane) -> Oracle:
    return Oracle(control_plane)
