"""Take a snapshot: discover the served kinds, list each across all namespaces (in pages), clean every object.

Everything is read before anything is written (`write.py`), so a server that fails halfway leaves DIR as it was.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from phalanx.errors import InputError
from phalanx.snapshot.clean import clean
from phalanx.snapshot.discovery import Served, discover
from phalanx.snapshot.kinds import CAPTURED, Captured, label
from phalanx.snapshot.server import Server

PAGE = 500  # objects per list request, as kubectl's --chunk-size


@dataclass
class Snapshot:
    objects: dict[Captured, list[dict[str, Any]]] = field(default_factory=dict)  # the served kinds, in table order
    not_served: list[Captured] = field(default_factory=list)

    def summary(self, directory: str) -> str:
        """One line: the count of each kind found, the served kinds with no object, the kinds not served."""
        found = [f"{label(entry)} {len(items)}" for entry, items in self.objects.items() if items]
        empty = [label(entry) for entry, items in self.objects.items() if not items]
        total = sum(len(items) for items in self.objects.values())
        parts = [f"wrote {total} object(s) in {len(self.objects)} file(s) to {directory}: "
                 + (", ".join(found) or "no objects")]
        if empty:
            parts.append("none of " + ", ".join(empty))
        if self.not_served:
            parts.append("not served: " + ", ".join(label(entry) for entry in self.not_served))
        return "snapshot: " + "; ".join(parts) + " (Secrets are never read)"


def capture(kubeconfig: str | None, entries: tuple[Captured, ...] = CAPTURED) -> Snapshot:
    """Read every served kind of `entries` from the cluster of `kubeconfig` (None: in-cluster, else
    `$KUBECONFIG` or `~/.kube/config`)."""
    server = Server(kubeconfig)
    try:
        snapshot = Snapshot()
        for entry, served in discover(server, entries).items():
            if served is None:
                snapshot.not_served.append(entry)
            else:
                snapshot.objects[entry] = [clean(item, served.api_version, entry.kind)
                                           for item in _list(server, entry, served)]
        return snapshot
    finally:
        server.close()


def _list(server: Server, entry: Captured, served: Served) -> list[dict[str, Any]]:
    selectors: list[str | None] = [f"metadata.name={name}" for name in entry.names] or [None]
    items: list[dict[str, Any]] = []
    for selector in selectors:
        params = {"limit": str(PAGE), **({"fieldSelector": selector} if selector else {})}
        while True:
            page = server.get(served.path, params)
            if page is None:  # served at discovery, gone since (a CRD deleted meanwhile)
                raise InputError(f"{served.path}: not found any more (was the {entry.kind} CRD deleted?)",
                                 file=server.where)
            items.extend(item for item in page.get("items") or [] if isinstance(item, dict))
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                break
            params["continue"] = str(token)
    return items
