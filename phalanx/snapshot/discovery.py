"""Which of the captured kinds the API server serves, and where: its discovery documents, read once per
group version (`/api/v1`, `/apis`, `/apis/GROUP/VERSION`), as `kubectl api-resources` reads them."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

from phalanx.snapshot.kinds import Captured
from phalanx.snapshot.server import Server


class Served(NamedTuple):
    api_version: str  # e.g. `apps/v1`, `v1`
    path: str  # the collection across namespaces, e.g. `/apis/apps/v1/deployments`


def discover(server: Server, entries: Iterable[Captured]) -> dict[Captured, Served | None]:
    """Each entry's served version and path, None for a kind the server does not serve."""
    entries = list(entries)
    groups = _groups(server)
    resources: dict[str, set[str] | None] = {}  # group version -> its resources that can be listed

    def listable(group_version: str) -> set[str] | None:
        if group_version not in resources:
            path = f"/api/{group_version}" if "/" not in group_version else f"/apis/{group_version}"
            resources[group_version] = _resources(server.get(path))
        return resources[group_version]

    found: dict[Captured, Served | None] = {}
    for entry in entries:
        found[entry] = None
        for version in _candidates(entry, groups):
            group_version = f"{entry.group}/{version}" if entry.group else version
            if entry.plural in (listable(group_version) or ()):
                prefix = f"/apis/{group_version}" if entry.group else f"/api/{group_version}"
                found[entry] = Served(group_version, f"{prefix}/{entry.plural}")
                break
    return found


def _groups(server: Server) -> dict[str, tuple[str, list[str]]]:
    """Group -> (preferred version, served versions), from `/apis`; the core group from `/api`."""
    groups: dict[str, tuple[str, list[str]]] = {"": ("v1", ["v1"])}
    listing = server.get("/apis") or {}
    for group in listing.get("groups") or []:
        if not isinstance(group, dict) or not isinstance(group.get("name"), str):
            continue
        versions = [str(v.get("version")) for v in group.get("versions") or [] if isinstance(v, dict)]
        preferred = group.get("preferredVersion")
        first = str(preferred.get("version")) if isinstance(preferred, dict) else (versions or [""])[0]
        groups[group["name"]] = (first, versions)
    return groups


def _candidates(entry: Captured, groups: dict[str, tuple[str, list[str]]]) -> list[str]:
    """The versions to try for an entry: its own that the group serves, or (none named) the preferred first."""
    if entry.group not in groups:
        return []
    preferred, served = groups[entry.group]
    if entry.versions:
        return [v for v in entry.versions if v in served]
    return [preferred, *(v for v in served if v != preferred)]


def _resources(document: dict[str, Any] | None) -> set[str] | None:
    """The resources of an APIResourceList that can be listed (subresources such as `pods/status` are not)."""
    if document is None:
        return None
    return {str(res["name"]) for res in document.get("resources") or []
            if isinstance(res, dict) and "/" not in str(res.get("name")) and "list" in (res.get("verbs") or [])}
