"""Reading input files safely: regular files only, a size cap, a nesting bound checked before any loader builds
objects (brackets in strings and comments do not nest), and JSON read as Kubernetes reads it (no
`NaN`/`Infinity`, no integers beyond int64)."""

from __future__ import annotations

import json
import os
import re
import stat
from typing import Any

import numpy as np
import yaml

from phalanx.errors import InputError

_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
# Larger than any snapshot worth simulating; a limit keeps `/dev/zero`-like inputs and mistakes from eating memory.
MAX_FILE_BYTES = 2 * 2**30
# Kubernetes objects nest a few dozen levels at most; deeper input overflows the parsers' recursion (and the C
# YAML loader's stack), so it is rejected before any parser builds it.
MAX_NESTING = 200
_QUOTES_AND_BRACKETS = b'"[]{}'
_NOT_QUOTES_OR_BRACKETS = bytes(b for b in range(256) if b not in _QUOTES_AND_BRACKETS)
_COLLECTION_START = (yaml.SequenceStartEvent, yaml.MappingStartEvent)
_COLLECTION_END = (yaml.SequenceEndEvent, yaml.MappingEndEvent)


def read_text(path: str) -> str:
    """The UTF-8 text of the regular file `path`; InputError for anything else or anything too large."""
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            raise InputError("not a regular file (Phalanx reads manifests from files)", file=path)
        if info.st_size > MAX_FILE_BYTES:
            raise InputError(f"is {info.st_size} bytes, more than the {MAX_FILE_BYTES // 2**30} GiB Phalanx reads",
                             file=path)
        with open(path, "rb") as handle:
            # read(n) allocates n bytes up front: ask for the size the file has, then for more only if it grew.
            chunks = [handle.read(info.st_size + 1)]
            size = len(chunks[0])
            while info.st_size < size <= MAX_FILE_BYTES and (chunk := handle.read(1 << 20)):
                chunks.append(chunk)
                size += len(chunk)
            data = b"".join(chunks) if len(chunks) > 1 else chunks[0]
    except OSError as exc:
        raise InputError(exc.strerror or str(exc), file=path) from None
    if len(data) > MAX_FILE_BYTES:  # it grew while being read
        raise InputError(f"is more than the {MAX_FILE_BYTES // 2**30} GiB Phalanx reads", file=path)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError("not a UTF-8 text file", file=path) from None


def _openers(text: str) -> int:
    return text.count("[") + text.count("{")


def _surely_shallow(text: str, *, is_yaml: bool) -> bool:
    """A cheap sufficient test: a collection nests in a flow bracket (every one counts, in strings and comments
    too) or, in YAML, in a block a column further in (or behind a `- `/`? ` on the same line): both together
    stay within the bound."""
    room = MAX_NESTING - _openers(text)
    if room < 0:
        return False
    return not is_yaml or re.search(rf"^[ \t?:-]{{{max(room - 2, 0)},}}", text, re.MULTILINE) is None


def _json_too_deep(text: str) -> tuple[int, None] | None:
    """The line where a JSON text first nests deeper than the bound, brackets in strings not counted. Dropping
    `\\\\` and then `\\"` leaves only the quotes that open and close strings (valid JSON has no backslash
    outside a string), and neither holds a line break, so lines stay where they were."""
    cleaned = text.replace("\\\\", "").replace('\\"', "").encode("utf-8", "surrogatepass")
    kept = np.frombuffer(cleaned.translate(None, _NOT_QUOTES_OR_BRACKETS), dtype=np.uint8)
    outside = np.cumsum(kept == ord('"')) % 2 == 0  # a quote's own step is 0 either way
    steps = np.select([(kept == ord("[")) | (kept == ord("{")), (kept == ord("]")) | (kept == ord("}"))],
                      [1, -1], 0).astype(np.int32)
    too_deep = np.cumsum(steps * outside) > MAX_NESTING
    if not too_deep.any():
        return None
    # The offset of the first bracket past the bound: marks (quotes and brackets) up to it, counted in `cleaned`.
    marks = np.flatnonzero(np.isin(np.frombuffer(cleaned, dtype=np.uint8),
                                   np.frombuffer(_QUOTES_AND_BRACKETS, dtype=np.uint8)))
    return cleaned.count(b"\n", 0, int(marks[int(too_deep.argmax())])) + 1, None


def _yaml_too_deep(text: str) -> tuple[int, str | None] | None:
    """The line where a YAML text first nests deeper than the bound, and the object when its document gave its
    kind and metadata.name before that line; counted on the parser's events (libyaml's parser keeps a stack of
    its own, so any depth is safe to parse this way; the loaders that build objects recurse)."""
    depth = 0
    names = _Names()
    try:
        for event in yaml.parse(text, Loader=_LOADER):
            if isinstance(event, _COLLECTION_START):
                depth += 1
                if depth > MAX_NESTING:
                    return (event.start_mark.line + 1 if event.start_mark else 0), names.object()
            elif isinstance(event, _COLLECTION_END):
                depth -= 1
            names.see(event)
    except yaml.YAMLError:
        pass  # not YAML past this point, and shallow up to it: the loader reports the error
    return None


_WANTED_NAMES = {("kind",): "kind", ("metadata", "name"): "name", ("metadata", "namespace"): "namespace"}


class _Names:
    """A document's kind, metadata.name and metadata.namespace, followed on the parser's events."""

    def __init__(self) -> None:
        self.found: dict[str, str] = {}
        # The open collections: (is a mapping, the key whose value comes next or None, the path of keys to it).
        self.frames: list[tuple[bool, str | None, tuple[str, ...]]] = []

    def see(self, event: yaml.Event) -> None:
        if isinstance(event, yaml.DocumentStartEvent):
            self.found, self.frames = {}, []
        elif isinstance(event, yaml.ScalarEvent):
            self._item(event.value)
        elif isinstance(event, yaml.AliasEvent):
            self._item("")
        elif isinstance(event, _COLLECTION_START):
            path: tuple[str, ...] = ()
            if self.frames:
                mapping, key, above = self.frames[-1]
                path = (*above, key or "") if mapping else (*above, "")
            self.frames.append((isinstance(event, yaml.MappingStartEvent), None, path))
        elif isinstance(event, _COLLECTION_END) and self.frames:
            self.frames.pop()
            self._item("")

    def _item(self, value: str) -> None:
        """A key or a value (a collection counts as an empty one) in the innermost collection."""
        if not self.frames or not self.frames[-1][0]:
            return
        _, key, path = self.frames[-1]
        if key is None:
            self.frames[-1] = (True, value, path)
            return
        wanted = _WANTED_NAMES.get((*path, key))
        if wanted is not None:
            self.found.setdefault(wanted, value)
        self.frames[-1] = (True, None, path)

    def object(self) -> str | None:
        kind, name, namespace = (self.found.get(k) for k in ("kind", "name", "namespace"))
        if not kind:
            return None
        return f"{kind} {namespace + '/' if namespace else ''}{name}" if name else f"{kind} (unnamed)"


def check_nesting(text: str, *, file: str, obj: str | None = None, yaml: bool = True) -> None:
    """InputError naming the file and the line (and the object when known) when `text` (YAML, or JSON when not
    `yaml`) nests deeper than MAX_NESTING levels. Brackets in strings and comments do not count."""
    if _surely_shallow(text, is_yaml=yaml):
        return
    found = _yaml_too_deep(text) if yaml else _json_too_deep(text)
    if found is None:
        return
    line, known = found
    message = f"nests deeper than {MAX_NESTING} levels (no Kubernetes object does)"
    if obj is not None:  # a part of a file (a trace's line): its own lines mean nothing to the reader
        raise InputError(message, file=file, obj=obj)
    if known is not None:
        raise InputError(f"{message} at line {line}", file=file, obj=known)
    raise InputError(message, file=file, obj=f"line {line}")


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def parse_json(text: str, *, file: str, obj: str | None = None) -> Any:
    """One JSON value, as the API server's decoder takes it; InputError naming the line otherwise."""
    check_nesting(text, file=file, obj=obj, yaml=False)
    try:
        return json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        if obj is None:
            raise InputError(f"invalid JSON: {exc.msg}", file=file, obj=f"line {exc.lineno}") from None
        raise InputError(f"invalid JSON: {exc.msg} (column {exc.colno})", file=file, obj=obj) from None
    except ValueError as exc:  # Infinity/NaN, or an integer past Python's digit limit
        raise InputError(f"invalid JSON: {_number_problem(exc)}", file=file, obj=obj) from None
    except RecursionError:
        raise InputError(f"nests deeper than {MAX_NESTING} levels", file=file, obj=obj) from None


def _number_problem(exc: ValueError) -> str:
    message = str(exc)
    if "digits" in message:
        return "a number has too many digits (Kubernetes integers are int64)"
    return message.split(";")[0]


def read_yaml(path: str) -> Any:
    """The one YAML document of the file `path` (a profile, a workload file), read with the same limits."""
    text = read_text(path)
    check_nesting(text, file=path)
    try:
        return yaml.load(text, Loader=_LOADER)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InputError(f"invalid YAML: {problem}", file=path, obj=where) from None
    except ValueError:
        raise InputError("invalid YAML: a number has too many digits (Kubernetes integers are int64)",
                         file=path) from None
    except RecursionError:
        raise InputError(f"nests deeper than {MAX_NESTING} levels", file=path) from None
