"""A real v1.37.2 control plane of its own for the live-driver tests (marked `kube`): one per session.

The live tests kill and restart the API server and cut its connections, so they do not share the control
plane of `tests/verify`. Each test works in a namespace of its own and deletes the nodes it made.
Without the binaries the tests are skipped, unless PHALANX_REQUIRE_KUBE=1 (as CI sets it).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import pytest
from lightkube import Client, KubeConfig
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import Namespace, Node, Pod

from phalanx.live.api_writer import ApiWriter
from phalanx.verify.controlplane import ControlPlane
from tests.kube import control_plane_session
from tests.live.replica import Replica

if TYPE_CHECKING:
    from tests.live.test_driver import Running


@pytest.fixture(scope="session")
def live_plane() -> Iterator[ControlPlane]:
    yield from control_plane_session()


@pytest.fixture
def client(live_plane: ControlPlane) -> Client:
    return Client(KubeConfig.from_file(str(live_plane.kubeconfig)), field_manager="phalanx-tests")


@pytest.fixture
def namespace(client: Client) -> Iterator[str]:
    """A fresh namespace; its pods and the nodes the test made are deleted afterwards."""
    name = f"t-{uuid.uuid4().hex[:8]}"
    client.create(Namespace(metadata=ObjectMeta(name=name)))
    yield name
    for pod in client.list(Pod, namespace=name):
        if pod.metadata is not None and pod.metadata.name is not None:
            client.delete(Pod, pod.metadata.name, namespace=name, grace_period=0)
    client.delete(Namespace, name)
    for node in client.list(Node, labels={"phalanx.dev/test": name}):
        if node.metadata is not None and node.metadata.name is not None:
            client.delete(Node, node.metadata.name)


@pytest.fixture
def running(client: Client, namespace: str) -> Iterator[Callable[..., Running]]:
    """Start Phalanx's live driver in a thread (`running(writer=None)`); every one started is stopped after."""
    from tests.live.test_driver import Running

    started: list[Running] = []

    def start(writer: ApiWriter | None = None) -> Running:
        run = Running(client, namespace, writer)
        started.append(run)
        return run

    yield start
    for run in started:
        run.close()


@pytest.fixture
def replicas(live_plane: ControlPlane, namespace: str) -> Iterator[list[Replica]]:
    started: list[Replica] = []
    yield started
    for replica in started:
        if replica.proc.poll() is None:
            replica.proc.kill()
        replica.proc.wait(timeout=10)
