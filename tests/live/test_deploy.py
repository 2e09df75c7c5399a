"""deploy/ on the real v1.37.2 API server: the manifests apply, and the live driver does its whole job (gangs
bound, a preemption, a DRA claim allocated and reserved, PodScheduled and PodGroup conditions, Events, the
Lease) with nothing but the ServiceAccount's token, so the ClusterRole grants all it needs."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import pytest
from lightkube import ApiError, Client, KubeConfig
from lightkube.codecs import load_all_yaml
from lightkube.models.authentication_v1 import TokenRequestSpec
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import ServiceAccount

from phalanx.live.driver import Driver
from phalanx.live.leader import LeaderElector
from phalanx.scheduler.profiles import Profile, load_profile
from phalanx.verify.controlplane import ControlPlane
from tests.builders import MakePriorityClass
from tests.kube import until
from tests.live.test_dra import Devices, reserved
from tests.live.test_driver import make_gang, make_node, make_pod, node_of, pods

pytestmark = pytest.mark.kube
DEPLOY = Path(__file__).resolve().parents[2] / "deploy"


def service_account_client(plane: ControlPlane, admin: Client) -> Client:
    for name in ("namespace.yaml", "rbac.yaml", "profile.yaml"):
        for obj in load_all_yaml((DEPLOY / name).read_text()):
            try:
                admin.create(obj)
            except ApiError as exc:
                if exc.status.code != 409:
                    raise
    request = ServiceAccount.Token(metadata=ObjectMeta(name="phalanx-scheduler", namespace="phalanx-system"),
                                   spec=TokenRequestSpec(audiences=[], expirationSeconds=3600))
    status = admin.create(request, "phalanx-scheduler", namespace="phalanx-system").status
    assert status is not None
    token = status.token
    config = plane.client_config()
    config["users"] = [{"name": "admin", "user": {"token": token}}]
    return Client(KubeConfig.from_dict(config), field_manager="phalanx")


def deploy_profile(tmp_path: Path) -> Profile:
    """The profile deploy/profile.yaml's ConfigMap carries, as `phalanx run` reads it."""
    profile_doc = next(iter(load_all_yaml((DEPLOY / "profile.yaml").read_text())))
    path = tmp_path / "profile.yaml"
    path.write_text(profile_doc.data["profile.yaml"])
    return load_profile(str(path))


def test_the_service_account_of_deploy_is_enough_for_the_live_driver(
        live_plane: ControlPlane, client: Client, namespace: str, tmp_path: Path,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    sa = service_account_client(live_plane, client)
    profile = deploy_profile(tmp_path)
    make_node(client, namespace, "a", cpu="4")
    devices = Devices(client, namespace)
    devices.slice(make_node(client, namespace, "d", cpu="1"), 1)  # room for the DRA pod only
    devices.claim("gpu")
    high = f"{namespace}-high"
    client.create(MakePriorityClass(high, 1000).kube())

    stop, leading = threading.Event(), threading.Event()
    elector = LeaderElector(sa, namespace="phalanx-system", name="phalanx-scheduler", identity="test",
                            lease_duration=3, renew_deadline=2, retry_period=0.5)
    driver = Driver(sa, profile, namespaces={namespace})
    loop = threading.Thread(target=driver.run, args=(stop, leading), daemon=True)
    election = threading.Thread(target=elector.run, args=(stop, leading.set, leading.clear), daemon=True)
    loop.start()
    election.start()
    try:
        until(leading.is_set, 30, "the Lease")
        devices.pod("dra", claim="gpu")
        until(lambda: bool(node_of(pods(client, namespace)["dra"])), 30, "the DRA pod bound")
        assert [name for name, _ in reserved(devices.read("gpu"))] == ["dra"]
        make_gang(client, namespace, "g", 2)
        for i in range(2):
            make_pod(client, namespace, f"g-{i}", cpu="2", group="g")
        until(lambda: all(node_of(p) for p in pods(client, namespace).values()), 30, "the gang bound")
        make_pod(client, namespace, "urgent", cpu="2", priority_class=high)
        until(lambda: bool(node_of(pods(client, namespace).get("urgent", {}))), 30, "the preemptor bound")
        assert driver.counters.evictions >= 1
        assert not driver.counters.skipped
        refused = [r.getMessage() for r in caplog.records if "forbidden" in r.getMessage().lower()]
        assert not refused, refused
    finally:
        stop.set()
        loop.join(timeout=10)
        election.join(timeout=10)
        devices.cleanup()
