"""The real v1.37.2 control plane for the tests marked `kube`: one per test session, reset between tests.

Without the binaries (`tools/kube/build.sh` not run) these tests are skipped, unless PHALANX_REQUIRE_KUBE=1
(as CI sets it), where a missing control plane is a failure.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from phalanx.verify.controlplane import ControlPlane
from phalanx.verify.oracle import Oracle
from tests.kube import control_plane_session


@pytest.fixture(scope="session")
def control_plane() -> Iterator[ControlPlane]:
    yield from control_plane_session()


@pytest.fixture
def oracle(control_plane: ControlPlane) -> Oracle:
    return Oracle(control_plane)
