"""What the oracle's JobSet and LWS set-up reads from their releases (phalanx/verify/integrations_plane.py) and
how it names a LeaderWorkerSet group's Kueue Workload (phalanx/verify/kueue_oracle.py): no control plane."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from phalanx.verify.controlplane import ControlPlaneError
from phalanx.verify.integrations_plane import find_integrations, patched
from phalanx.verify.kueue_oracle import _group_index, _workload_key

HOOKS: dict[str, Any] = {"kind": "MutatingWebhookConfiguration", "metadata": {"name": "m"},
         "webhooks": [{"name": "mjobset.kb.io"}, {"name": "mpod.kb.io"}]}


def test_a_release_patch_replaces_its_pod_webhook_with_an_object_selector() -> None:
    selector = {"matchExpressions": [{"key": "jobset.sigs.k8s.io/jobset-name", "operator": "Exists"}]}
    out = patched(HOOKS, [{"op": "replace", "path": "/webhooks/1",
                           "value": {"name": "mpod.kb.io", "objectSelector": selector}}], Path("p.yaml"))
    assert out["webhooks"][1]["objectSelector"] == selector and out["webhooks"][0] == {"name": "mjobset.kb.io"}
    assert HOOKS["webhooks"][1] == {"name": "mpod.kb.io"}  # the manifest read is not changed


@pytest.mark.parametrize("op", [{"op": "add", "path": "/webhooks/1", "value": {}},
                                {"op": "replace", "path": "/webhooks/5", "value": {}},
                                {"op": "replace", "path": "/metadata/name", "value": "x"}])
def test_a_patch_the_oracle_does_not_apply_is_an_error_not_skipped(op: dict[str, object]) -> None:
    with pytest.raises(ControlPlaneError, match=r"p\.yaml: a patch the oracle does not apply"):
        patched(HOOKS, [op], Path("p.yaml"))


def test_a_missing_build_names_the_script(tmp_path: Path) -> None:
    with pytest.raises(ControlPlaneError, match=r"run tools/integrations/build\.sh"):
        find_integrations(tmp_path)


@pytest.mark.parametrize(("name", "index"), [
    ("leaderworkerset-nginx-0-1a2b3", "0"), ("leaderworkerset-nginx-12-1a2b3", "12"),
    ("leaderworkerset-nginx-x-0-1a2b3", None), ("leaderworkerset-ngi-1a2b3", None), ("jobset-nginx-0-1a2b3", None)])
def test_a_groups_workload_is_named_after_its_index(name: str, index: str | None) -> None:
    assert _group_index(name, "leaderworkerset-nginx-") == index


def test_workloads_are_keyed_by_their_owner_as_phalanx_names_them() -> None:
    def meta(kind: str, owner: str, name: str = "w") -> dict[str, object]:
        return {"namespace": "ns", "name": name, "ownerReferences": [{"kind": kind, "name": owner}]}

    sets = {"ns/lws": "leaderworkerset-lws-"}
    assert _workload_key(meta("JobSet", "js"), {}, sets) == "JobSet ns/js"
    assert _workload_key(meta("LeaderWorkerSet", "lws", "leaderworkerset-lws-1-abcde"), {}, sets) == \
        "PodGroup ns/lws-1"
    assert _workload_key(meta("LeaderWorkerSet", "other", "leaderworkerset-other-1-abcde"), {}, sets) is None
    assert _workload_key(meta("Pod", "p"), {"ns/p": "Pod ns/p"}, sets) == "Pod ns/p"
