"""DynamicResources' PreEnqueue rule (phalanx/scheduler/plugins/dra/pre_enqueue.py): which claim a pod's entry
uses and why the pod waits for it, in v1.37's words. The live driver's use of it (`phalanx.live.claims.resolve`)
is tested against a real control plane in tests/live/test_dra.py."""

from __future__ import annotations

import pytest

from phalanx.scheduler.plugins.dra.pre_enqueue import KnownClaim, entry_claim

POD = "ns/p"
UID = "uid-p"
OWNED = KnownClaim(deleting=False, owner=UID)


@pytest.mark.parametrize(("entry", "named", "generated", "known", "expected"), [
    ("gpu", "shared", {}, {"ns/shared": KnownClaim(False, "")}, ("shared", None)),
    ("gpu", "shared", {}, {}, ("shared", 'could not find ResourceClaim "ns/shared"')),
    ("gpu", "shared", {}, {"ns/shared": KnownClaim(True, "")}, ("shared", 'resourceclaim "shared" is being deleted')),
    ("gpu", None, {}, {}, (None, 'pod "ns/p": ResourceClaim not created yet')),
    ("gpu", None, {"gpu": None}, {}, (None, None)),
    ("gpu", None, {"gpu": "p-gpu-x"}, {"ns/p-gpu-x": OWNED}, ("p-gpu-x", None)),
    ("gpu", None, {"gpu": "p-gpu-x"}, {"ns/p-gpu-x": KnownClaim(False, "other")},
     ("p-gpu-x", "ResourceClaim ns/p-gpu-x was not created for pod ns/p (pod is not owner)")),
    ("gpu", None, {"gpu": "p-gpu-x"}, {}, ("p-gpu-x", 'could not find ResourceClaim "ns/p-gpu-x"')),
])
def test_entry_claim(entry: str, named: str | None, generated: dict[str, str | None],
                     known: dict[str, KnownClaim], expected: tuple[str | None, str | None]) -> None:
    assert entry_claim(POD, UID, entry, named, generated, known) == expected


def test_a_named_claim_need_not_be_the_pods_own() -> None:
    """Ownership is checked only for a claim made from a template (`resourceclaim.IsForPod`)."""
    assert entry_claim(POD, UID, "gpu", "shared", {}, {"ns/shared": KnownClaim(False, "someone")}) == ("shared", None)
