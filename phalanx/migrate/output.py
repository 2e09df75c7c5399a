"""`phalanx migrate` output: the rewritten manifests as multi-document YAML, each change written as a
comment above the document it made, or as one `List` in JSON (the changes then go to stderr only)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import yaml

from phalanx.api.documents import raw_documents
from phalanx.api.fields import object_name
from phalanx.errors import InputError
from phalanx.migrate.foreign import Change
from phalanx.migrate.leftovers import leftovers
from phalanx.migrate.rewrite import Migrator

Pair = tuple[Mapping[str, Any], Change | None]


def migrate_paths(paths: Sequence[str]) -> tuple[list[Pair], list[Change]]:
    """Every document under `paths` rewritten (documents already native unchanged), and the changes made."""
    migrator = Migrator(applications=True)
    out: list[Pair] = []
    for source, doc in raw_documents(paths):
        try:
            out.extend(migrator.feed(doc))
        except InputError as exc:
            raise exc.at(file=source.file) from None
    out.extend(migrator.finish())
    return _warned(out, migrator), migrator.changes


def _warned(pairs: list[Pair], migrator: Migrator) -> list[Pair]:
    """Every document with what it keeps that v1.37 alone does not act on (phalanx.migrate.leftovers) added to
    its change's warnings (a change of its own when nothing else changed it)."""
    out: list[Pair] = []
    for doc, change in pairs:
        found = leftovers(doc, own_metadata=id(doc) not in migrator.made)
        if found:
            if change is None:
                change = Change(object_name(doc) if "kind" in doc else "volcano-scheduler.conf")
                migrator.changes.append(change)
            change.warnings.extend(w for w in found if w not in change.warnings)
        out.append((doc, change))
    return out



def _comments(change: Change) -> list[str]:
    lines = [f"# phalanx migrate: {change.what}"]
    lines += [f"#   {note}" for note in change.notes]
    lines += [f"#   warning: {warning}" for warning in change.warnings]
    return lines


def render_yaml(pairs: Iterable[Pair]) -> str:
    parts: list[str] = []
    commented: set[int] = set()
    for doc, change in pairs:
        text = yaml.safe_dump(_plain(doc), sort_keys=False)
        if change is not None and id(change) not in commented:
            commented.add(id(change))
            text = "\n".join(_comments(change)) + "\n" + text
        parts.append(text)
    return "---\n".join(parts)


def render_json(pairs: Iterable[Pair]) -> str:
    items = [_plain(doc) for doc, _ in pairs]
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": items}, indent=2) + "\n"


def _plain(value: Any) -> Any:
    """Mappings and sequences as plain dicts and lists, for the dumpers."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value
