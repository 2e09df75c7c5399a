"""Live pods' ResourceClaims as kube-scheduler's DynamicResources PreEnqueue sees them.

In a cluster, a pod's claim made from a ResourceClaimTemplate is created by the resourceclaim controller
(kube-controller-manager) under a generated name, which it records in the pod's
`status.resourceClaimStatuses` (`{name: <the pod's entry>, resourceClaimName: <generated>}`). `resolve` turns
such an entry into a plain `resourceClaimName` entry, so that the engine uses the claim the informer
delivers rather than making one of its own; an entry whose status names no claim (a valid "no claim needed")
is dropped, as upstream skips it.

A pending pod waits outside the engine, as PreEnqueue holds it, while one of its claims is not there yet or
cannot be used: `resolve` asks DynamicResources' PreEnqueue (`phalanx.scheduler.plugins.dra.pre_enqueue`, which
words the reasons as v1.37 does) about each entry.

A bound pod never waits: entries that cannot be resolved are dropped, so that its room is still counted.
`ClaimBook` keeps what the driver needs to let waiting pods in when their claims arrive: the claims it knows
and, per claim, the pending pods that name it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from phalanx.scheduler.plugins.dra.pre_enqueue import KnownClaim, entry_claim


def known_claim(obj: Mapping[str, Any]) -> KnownClaim:
    """What PreEnqueue checks of a ResourceClaim the informer delivered."""
    meta = obj.get("metadata") or {}
    owner = next((str(ref.get("uid") or "") for ref in meta.get("ownerReferences") or []
                  if isinstance(ref, Mapping) and ref.get("controller")), "")
    return KnownClaim(deleting=meta.get("deletionTimestamp") is not None, owner=owner)


@dataclass(frozen=True, slots=True)
class Resolution:
    """A pod with its claims resolved: `pod` names every claim it uses by `resourceClaimName`, `claims` are
    their `namespace/name` keys, `waiting` says why a pending pod cannot be queued yet (None: it can)."""

    pod: dict[str, Any]
    claims: tuple[str, ...]
    waiting: str | None


def _generated(pod: Mapping[str, Any]) -> dict[str, str | None]:
    """The pod's `status.resourceClaimStatuses`: entry name -> generated claim name (None: no claim)."""
    out: dict[str, str | None] = {}
    for item in (pod.get("status") or {}).get("resourceClaimStatuses") or []:
        if isinstance(item, Mapping) and item.get("name"):
            out[str(item["name"])] = str(item["resourceClaimName"]) if item.get("resourceClaimName") else None
    return out


def resolve(pod: Mapping[str, Any], known: Mapping[str, KnownClaim], *, bound: bool) -> Resolution:
    """The pod's claims checked against the `known` claims (by `namespace/name`); see the module notes."""
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    namespace = str(meta.get("namespace") or "default")
    pod_key = f"{namespace}/{meta.get('name')}"
    uid = str(meta.get("uid") or "")
    generated = _generated(pod)
    entries: list[Any] = []
    keys: list[str] = []
    waiting: str | None = None
    for entry in spec.get("resourceClaims") or []:
        if not isinstance(entry, Mapping) or not (entry.get("resourceClaimName")
                                                  or entry.get("resourceClaimTemplateName")):
            entries.append(entry)  # malformed: the parser names what is wrong
            continue
        ref = str(entry.get("name") or "")
        named = str(entry["resourceClaimName"]) if entry.get("resourceClaimName") else None
        name, problem = entry_claim(pod_key, uid, ref, named, generated, known)
        if problem is not None:
            waiting = waiting or problem
        if name is None or (problem is not None and bound):
            continue  # no claim yet, none needed (the controller decided so), or a bound pod's unusable one
        entries.append({"name": ref, "resourceClaimName": name})
        keys.append(f"{namespace}/{name}")
    rewritten = dict(pod)
    rewritten["spec"] = {**spec, "resourceClaims": entries} if spec.get("resourceClaims") else spec
    return Resolution(rewritten, tuple(keys), None if bound else waiting)


@dataclass
class ClaimBook:
    """The claims the driver knows, and the pending pods with claims (waiting, or queued in the engine)."""

    claims: dict[str, KnownClaim] = field(default_factory=dict)
    pods: dict[str, dict[str, Any]] = field(default_factory=dict)  # pod key -> its latest object
    waiting: dict[str, str] = field(default_factory=dict)  # pod key -> why it waits outside the engine
    _by_claim: defaultdict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    _claims_of: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def track(self, pod_key: str, obj: dict[str, Any], claims: tuple[str, ...]) -> None:
        """A pending pod that names `claims` (its latest object, to resolve it again when they change)."""
        self.untrack(pod_key, keep_waiting=True)
        self.pods[pod_key] = obj
        self._claims_of[pod_key] = claims
        for claim in claims:
            self._by_claim[claim].add(pod_key)

    def untrack(self, pod_key: str, *, keep_waiting: bool = False) -> None:
        """The pod is bound or gone (or about to be tracked again)."""
        self.pods.pop(pod_key, None)
        if not keep_waiting:
            self.waiting.pop(pod_key, None)
        for claim in self._claims_of.pop(pod_key, ()):
            users = self._by_claim.get(claim)
            if users is not None:
                users.discard(pod_key)
                if not users:
                    del self._by_claim[claim]

    def users(self, claim: str) -> list[str]:
        """The pending pods that name the claim."""
        return sorted(self._by_claim.get(claim, ()))
