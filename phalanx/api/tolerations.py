"""Tolerations as manifests write them, for pods (node taints) and claim requests (device taints, KEP-5055)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, TypeVar, cast

from phalanx.api.fields import fail, integer, mapping, text
from phalanx.api.objects import TaintLike, Toleration

T = TypeVar("T", bound=TaintLike)


def parse_toleration(raw: Any, field: str, effects: tuple[str, ...]) -> Toleration:
    """One toleration; `effects` are the taint effects it may name (empty: every effect)."""
    item = mapping(raw, field)
    op = text(item.get("operator"), f"{field}.operator") or "Equal"
    if op not in ("Equal", "Exists"):
        raise fail(f"{field}.operator", f"unsupported value {op!r}: one of Equal, Exists")
    key = text(item.get("key"), f"{field}.key")
    value = text(item.get("value"), f"{field}.value")
    if op == "Exists" and value:
        raise fail(f"{field}.value", "must be empty when operator is Exists")
    if not key and op != "Exists":
        raise fail(f"{field}.operator", "must be Exists when key is empty")
    effect = text(item.get("effect"), f"{field}.effect")
    if effect and effect not in effects:
        raise fail(f"{field}.effect", f"unsupported value {effect!r}: one of {', '.join(effects)}")
    raw_seconds = item.get("tolerationSeconds")
    seconds = None if raw_seconds is None else float(integer(raw_seconds, f"{field}.tolerationSeconds"))
    if seconds is not None and effect != "NoExecute":
        raise fail(f"{field}.tolerationSeconds", "may only be set when effect is NoExecute")
    return Toleration(key=key, operator=cast(Any, op), value=value, effect=effect, toleration_seconds=seconds)


def first_untolerated(taints: Iterable[T], tolerations: Sequence[Toleration], *, harmless: str) -> T | None:
    """The first taint that blocks and that no toleration matches (kube's FindMatchingUntoleratedTaint).

    `harmless` is the effect that never blocks: PreferNoSchedule for node taints, None for device taints.
    """
    for taint in taints:
        if taint.effect == harmless:
            continue
        if not any(t.tolerates(taint) for t in tolerations):
            return taint
    return None
