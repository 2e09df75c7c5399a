"""A real v1.37.2 control plane for the snapshot tests (marked `kube`), one per session; skipped without the
binaries unless PHALANX_REQUIRE_KUBE=1."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from lightkube import Client, KubeConfig

from phalanx.verify.controlplane import ControlPlane
from tests.kube import control_plane_session


@pytest.fixture(scope="session")
def snapshot_plane() -> Iterator[ControlPlane]:
    yield from control_plane_session()


@pytest.fixture
def client(snapshot_plane: ControlPlane) -> Client:
    return Client(KubeConfig.from_file(str(snapshot_plane.kubeconfig)), field_manager="phalanx-tests")
