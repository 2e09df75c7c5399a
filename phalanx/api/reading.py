"""Reading input files safely: regular files only, a size cap, a nesting bound checked before any parser runs,
and JSON read as Kubernetes reads it (no `NaN`/`Infinity`, no integers beyond int64)."""

from __future__ import annotations

import json
import os
import stat
from typing import Any

import numpy as np
import yaml

from phalanx.errors import InputError

_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
# Larger than any snapshot worth simulating; a limit keeps `/dev/zero`-like inputs and mistakes from eating memory.
MAX_FILE_BYTES = 2 * 2**30
# Kubernetes objects nest a few dozen levels at most; deeper input overflows the parsers' recursion (and the C
# YAML loader's stack), so it is rejected before any parser sees it.
MAX_NESTING = 200
# Bytes that are not brackets, deleted before the brackets are counted.
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
# Deep block nesting: a line indented (or compactly nested, `- - - x`) past the bound.
_DEEP_BLOCK = ("\n" + " " * (2 * MAX_NESTING), "- " * MAX_NESTING, "? " * MAX_NESTING, "\t" * MAX_NESTING)


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


def nesting_depth(text: str) -> int:
    """An estimate of how deep `text` nests flow collections (`[`, `{`), counted without parsing (brackets in
    strings count too: a bound for rejecting input, not a parser)."""
    openers = text.count("[") + text.count("{")
    if openers <= MAX_NESTING:
        return openers  # cannot be deeper than the number of openers
    brackets = np.frombuffer(text.encode("utf-8", "surrogatepass").translate(None, _NOT_BRACKETS), dtype=np.uint8)
    steps = np.where((brackets == ord("[")) | (brackets == ord("{")), 1, -1).astype(np.int32)
    return int(np.cumsum(steps).max())


def check_nesting(text: str, *, file: str, obj: str | None = None, yaml: bool = True) -> None:
    """InputError when `text` (YAML, or JSON when not `yaml`) nests deeper than MAX_NESTING levels."""
    if nesting_depth(text) > MAX_NESTING or (yaml and any(deep in text for deep in _DEEP_BLOCK)):
        raise InputError(f"nests deeper than {MAX_NESTING} levels (no Kubernetes object does)", file=file, obj=obj)


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
