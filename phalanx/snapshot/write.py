"""Write a snapshot into DIR: one `kind: List` YAML file per served kind, all or nothing.

Every file is first written to a temporary file in DIR; only once all are written are they renamed into place
(a rename within a directory is atomic), so an error leaves no half-written file. The files of kinds the server
does not serve are removed from DIR if an earlier snapshot left them: one folder never mixes two snapshots.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import yaml

from phalanx.errors import InputError
from phalanx.snapshot.capture import Snapshot

_Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # libyaml when PyYAML has it: ten times faster


def check_directory(directory: str, flag: str = "--output") -> None:
    """DIR must be a directory or not exist yet (its parent then exists), and be writable: checked before the
    cluster is read."""
    path = Path(directory)
    if path.exists() and not path.is_dir():
        raise InputError(f"{directory} exists and is not a directory", field=flag)
    where = path if path.is_dir() else path.parent
    if not where.is_dir():
        raise InputError(f"{where} is not a directory", field=flag)
    if not os.access(where, os.W_OK | os.X_OK):
        raise InputError(f"{where} is not writable", field=flag)


def write_snapshot(directory: str, snapshot: Snapshot) -> list[Path]:
    """Write the files; returns their paths in table order."""
    path = Path(directory)
    try:
        path.mkdir(exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot create {directory}: {exc.strerror or exc}", field="--output") from None
    for entry in snapshot.objects:
        if (path / entry.file).is_dir():  # found now, before any file is renamed into place
            raise InputError(f"{path / entry.file} is a directory", field="--output")
    staged: list[tuple[Path, Path]] = []
    try:
        for entry, items in snapshot.objects.items():
            document = {"apiVersion": "v1", "kind": "List", "items": items}
            with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=path, prefix=f".{entry.file}.",
                                             suffix=".tmp", delete=False) as out:
                staged.append((Path(out.name), path / entry.file))
                yaml.dump(document, out, Dumper=_Dumper, sort_keys=False, allow_unicode=True)
        for temporary, final in staged:
            os.replace(temporary, final)
    except OSError as exc:
        raise InputError(f"cannot write {exc.filename or directory}: {exc.strerror or exc}",
                         field="--output") from None
    finally:
        for temporary, _ in staged:
            temporary.unlink(missing_ok=True)
    written = {entry.file for entry in snapshot.objects}
    for entry in snapshot.not_served:
        if entry.file not in written:
            (path / entry.file).unlink(missing_ok=True)
    return [path / entry.file for entry in snapshot.objects]
