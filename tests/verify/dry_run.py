"""Phalanx's parser against the real kube-apiserver's validation: create a manifest with dryRun=All and parse it;
both must accept or both reject, and a rejection must name a field the API server names."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from lightkube import ApiError, Client

from phalanx.errors import InputError
from tests.builders import kube_object


def judged_alike(client: Client, resource: Any, doc: Mapping[str, Any], parse: Callable[[Mapping[str, Any]], object],
                 case: str) -> tuple[str | None, InputError | None]:
    """The API server's rejection message (None if it accepts) and Phalanx's InputError (None if it parses),
    after asserting that they agree as the module says."""
    try:
        client.create(kube_object(resource, dict(doc)), dry_run=True)
        real_error = None
    except ApiError as exc:
        real_error = exc.status
    try:
        parse(doc)
        ours = None
    except InputError as exc:
        ours = exc
    assert (real_error is None) == (ours is None), f"{case}: API server {real_error}, Phalanx {ours}"
    if real_error is not None and ours is not None:
        causes = [c.field for c in (real_error.details.causes or []) if c.field] if real_error.details else []
        assert any(field in str(ours) for field in causes), f"{case}: API server names {causes}, Phalanx: {ours}"
    return (None if real_error is None else str(real_error.message)), ours
