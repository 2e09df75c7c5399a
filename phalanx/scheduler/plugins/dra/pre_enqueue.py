"""DynamicResources.PreEnqueue: a pending pod waits, outside the queue, while one of its ResourceClaims is not
there yet or cannot be used. The reason is worded as v1.37 does (`dynamicresources.go` foreachPodResourceClaim,
`resourceclaim.Name` and `IsForPod`, the assume cache's NotFoundError):

- `pod "<ns>/<pod>": ResourceClaim not created yet` (a template entry its `status.resourceClaimStatuses` does
  not list yet: the resourceclaim controller has not made the claim),
- `could not find ResourceClaim "<ns>/<claim>"` (no such claim known),
- `resourceclaim "<claim>" is being deleted`,
- `ResourceClaim <ns>/<claim> was not created for pod <ns>/<pod> (pod is not owner)`.

`entry_claim` is the rule for one `spec.resourceClaims` entry. The live driver runs it on every pending pod
with claims (`phalanx.live.claims.resolve`). The simulator needs no wait: it makes a template's claim the
moment a pod first uses it (`DeviceState.pod_claims`, the resourceclaim controller without delay), so no
entry is ever "not created yet", and it rejects a named claim or template that does not exist when it loads
its inputs (`phalanx.api.resolve`); it never deletes a claim.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

CLAIM_NOT_CREATED = 'pod "{pod}": ResourceClaim not created yet'
CLAIM_NOT_FOUND = 'could not find ResourceClaim "{claim}"'
CLAIM_DELETING = 'resourceclaim "{name}" is being deleted'
CLAIM_NOT_OWNED = "ResourceClaim {claim} was not created for pod {pod} (pod is not owner)"


@dataclass(frozen=True, slots=True)
class KnownClaim:
    """What PreEnqueue checks of a ResourceClaim that exists."""

    deleting: bool
    owner: str  # the UID of its controller owner ("" for none)


def _problem(claim: KnownClaim | None, namespace: str, name: str, pod_key: str, pod_uid: str,
             from_template: bool) -> str | None:
    if claim is None:
        return CLAIM_NOT_FOUND.format(claim=f"{namespace}/{name}")
    if claim.deleting:
        return CLAIM_DELETING.format(name=name)
    if from_template and claim.owner != pod_uid:
        return CLAIM_NOT_OWNED.format(claim=f"{namespace}/{name}", pod=pod_key)
    return None


def entry_claim(pod_key: str, pod_uid: str, entry: str, claim_name: str | None,
                generated: Mapping[str, str | None], known: Mapping[str, KnownClaim]) -> tuple[str | None, str | None]:
    """For the pod's entry named `entry` (`claim_name`: its resourceClaimName; None: from a template), the claim
    it uses and why the pod waits for it: (claim name, None) when it can go on; (None, None) when the
    resourceclaim controller decided it needs no claim (`generated` maps it to None); (None, reason) while its
    claim is not created yet; (claim name, reason) while that claim is missing, being deleted or not the pod's.
    `generated` is the pod's `status.resourceClaimStatuses` (entry -> claim made from the template), `known` the
    claims that exist, by `namespace/name`."""
    namespace = pod_key.partition("/")[0]
    from_template = claim_name is None
    if claim_name is None:
        if entry not in generated:
            return None, CLAIM_NOT_CREATED.format(pod=pod_key)
        claim_name = generated[entry]
        if claim_name is None:
            return None, None
    return claim_name, _problem(known.get(f"{namespace}/{claim_name}"), namespace, claim_name, pod_key, pod_uid,
                                from_template)
