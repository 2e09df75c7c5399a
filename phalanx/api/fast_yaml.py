"""A fast reader for block-style YAML, checked against PyYAML.

Most manifests (`kubectl get -o yaml`, hand-written files) use a small part of YAML: block mappings and
sequences, one-line plain and quoted scalars, one-line flow collections (`{cpu: "4"}`), comments, `---`
between documents. `read_documents` reads exactly that part line by line and hands every scalar (and every
one-line flow collection) to PyYAML's own resolver and constructors, so it returns what `yaml.load_all(text,
Loader=SafeLoader)` returns. On anything else (block scalars, anchors, aliases, tags, multi-line scalars and
collections, quoted keys, tabs, CR line breaks, directives, anything PyYAML would reject, and nesting near the
loader's bound) it gives up and the file is read by PyYAML itself, errors and all.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from phalanx.api.reading import MAX_NESTING

_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class GiveUp(Exception):
    """The text leaves the part of YAML the fast reader reads."""


# Characters the fast reader accepts (YAML's printable set less tab, CR, NEL, BOM and the line separators).
_FOREIGN = re.compile("[^\n\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]")
# The same set for ASCII text: the bytes the fast reader accepts.
_ASCII_READ = bytes([0x0A, *range(0x20, 0x7F)])
_PLAIN_KEY = re.compile(r"[A-Za-z0-9_.](?:[A-Za-z0-9_./:-]*[A-Za-z0-9_./-])?")
_SINGLE_QUOTED = re.compile(r"'((?:[^']|'')*)' *(?:#.*)?")
_DOUBLE_QUOTED = re.compile(r'"([^"\\]*)" *(?:#.*)?')
_DOUBLE_QUOTED_ESCAPES = re.compile(r'("(?:[^"\\]|\\[^\n])*") *(?:#.*)?')
_RESOLVER = yaml.resolver.Resolver()
_CONSTRUCTOR = yaml.constructor.SafeConstructor()
# First characters of the implicit types (int, float, bool, null, timestamp, …): a plain scalar starting
# with any other character resolves to a string (unless a resolver matches every first character).
_IMPLICIT_FIRST = frozenset(c for c in yaml.resolver.Resolver.yaml_implicit_resolvers if c) \
    if None not in yaml.resolver.Resolver.yaml_implicit_resolvers else frozenset(map(chr, range(0x110000)))
_SCALAR_TAGS = frozenset("tag:yaml.org,2002:" + t for t in ("str", "int", "float", "bool", "null", "timestamp"))
# Deeper one-line flow collections, or blocks, than these are left to the loader that checks nesting first (a
# value's depth is at most its brackets', so the two together stay within the bound).
_MAX_FLOW_OPENERS = 50
_MAX_BLOCK_DEPTH = MAX_NESTING - _MAX_FLOW_OPENERS


class _Fresh:
    """A collection value written on one line (`{}`, `[a, b]`, `{cpu: "4"}`): every use gets its own copy."""

    __slots__ = ("value",)

    def __init__(self, value: dict[Any, Any] | list[Any]) -> None:
        self.value = value

    def make(self) -> Any:
        return _copy(self.value)


def _copy(value: Any) -> Any:
    if type(value) is dict:
        return {k: _copy(v) for k, v in value.items()}
    if type(value) is list:
        return [_copy(v) for v in value]
    return value
_NO_KEY = object()


def _plain(text: str) -> Any:
    """A one-line plain scalar, resolved and constructed as PyYAML's SafeLoader does."""
    if text[0] not in _IMPLICIT_FIRST:
        return text  # no implicit type starts with this character: a string, as the resolver would say
    tag: str = _RESOLVER.resolve(yaml.ScalarNode, text, (True, False))  # type: ignore[no-untyped-call]
    if tag not in _SCALAR_TAGS:
        raise GiveUp
    try:
        return _CONSTRUCTOR.yaml_constructors[tag](_CONSTRUCTOR, yaml.ScalarNode(tag, text))
    except Exception:
        raise GiveUp from None


def _value(raw: str) -> Any:
    """The scalar (or empty flow collection marker) written as `raw`, a value with no leading spaces."""
    first = raw[0]
    if first == "'":
        match = _SINGLE_QUOTED.fullmatch(raw)
        if match is None:
            raise GiveUp
        return match.group(1).replace("''", "'")
    if first == '"':
        match = _DOUBLE_QUOTED.fullmatch(raw)
        if match is not None:
            return match.group(1)
        match = _DOUBLE_QUOTED_ESCAPES.fullmatch(raw)
        if match is None:
            raise GiveUp
        try:
            value = yaml.load(match.group(1), Loader=_Loader)
        except (yaml.YAMLError, ValueError):  # ValueError: an integer past Python's digit limit
            raise GiveUp from None
        if not isinstance(value, str):
            raise GiveUp
        return value
    if first in "[{":
        # A one-line flow collection reads the same on its own as in its place; PyYAML reads it (anchors
        # and aliases excepted: they could tie it to other nodes).
        if "&" in raw or "*" in raw or raw.count("[") + raw.count("{") > _MAX_FLOW_OPENERS:
            raise GiveUp
        try:
            value = yaml.load(raw, Loader=_Loader)
        except (yaml.YAMLError, ValueError):  # ValueError: an integer past Python's digit limit
            raise GiveUp from None
        if type(value) is not (dict if first == "{" else list):
            raise GiveUp
        return _Fresh(value)
    if first in ",]}#&*!|>%@`" or (first in "-?:" and (len(raw) == 1 or raw[1] == " ")):
        raise GiveUp
    end = raw.find(" #")
    text = (raw if end < 0 else raw[:end]).rstrip(" ")
    if ": " in text or text.endswith(":"):
        raise GiveUp
    return _plain(text)


_SKIP, _DOCUMENT, _ENTRY, _ITEM, _ITEM_ENTRY = range(5)
_NESTED = object()  # an entry's value is the block on the next lines


def _entry(text: str, keys: dict[str, Any], values: dict[str, Any]) -> tuple[Any, Any]:
    """`key: value` (or `key:` with the value nested below) with a plain key."""
    name, sep, raw = text.partition(": ")
    if not sep:
        if not text.endswith(":"):
            raise GiveUp
        name, raw = text[:-1], ""
    key = keys.get(name, _NO_KEY)
    if key is _NO_KEY:
        if _PLAIN_KEY.fullmatch(name) is None:
            raise GiveUp
        key = keys[name] = _plain(name)
    raw = raw.lstrip(" ")
    if not raw or raw[0] == "#":
        return key, _NESTED
    value = values.get(raw, _NO_KEY)
    if value is _NO_KEY:
        value = values[raw] = _value(raw)
    return key, value


def _line(line: str, keys: dict[str, Any], values: dict[str, Any]) -> tuple[Any, ...]:
    """What one line says, whatever surrounds it: (_SKIP,), (_DOCUMENT,), (_ENTRY, column, key, value),
    (_ITEM, column, value) or (_ITEM_ENTRY, column, column of the entry, key, value)."""
    s = line.lstrip(" ")
    if not s or s[0] == "#":
        return (_SKIP,)
    col = len(line) - len(s)
    if col == 0 and s[0] in "-.":
        if s.startswith("---") and (len(s) == 3 or s[3] == " "):
            rest = s[3:].lstrip(" ")
            if rest and rest[0] != "#":
                raise GiveUp
            return (_DOCUMENT,)
        if s.startswith("..."):
            raise GiveUp
    if s[0] == "-" and (len(s) == 1 or s[1] == " "):
        item = s[1:].lstrip(" ")
        if not item or item[0] == "#" or (item[0] == "-" and (len(item) == 1 or item[1] == " ")):
            raise GiveUp
        if item[0] in "'\"" or (": " not in item and not item.endswith(":")):
            value = values.get(item, _NO_KEY)
            if value is _NO_KEY:
                value = values[item] = _value(item)
            return (_ITEM, col, value)
        return (_ITEM_ENTRY, col, col + len(s) - len(item), *_entry(item, keys, values))
    return (_ENTRY, col, *_entry(s, keys, values))


def read_documents(text: str) -> list[Any]:
    """The documents of `text`, as yaml.load_all gives them; raises GiveUp outside the subset read."""
    if text.isascii():
        if text.encode("ascii").translate(None, _ASCII_READ):
            raise GiveUp
    elif _FOREIGN.search(text) is not None:
        raise GiveUp
    docs: list[Any] = []
    keys: dict[str, Any] = {}
    values: dict[str, Any] = {}
    seen: dict[str, tuple[Any, ...]] = {}  # most lines of a manifest repeat (`kind: Pod`, `cpu: 100m`, …)
    root: Any = None
    explicit = False  # the current document began with `---`
    stack: list[tuple[int, Any, bool]] = []  # the enclosing blocks: (column, container, is a sequence)
    top: Any = None  # the innermost block, at column top_col
    top_col = -1
    top_is_seq = False
    pending: dict[Any, Any] | None = None  # a mapping whose last key waits for a nested value
    pending_key: Any = None
    pending_col = 0
    for line in text.split("\n"):
        parsed = seen.get(line)
        if parsed is None:
            parsed = seen[line] = _line(line, keys, values)
        kind = parsed[0]
        if kind == _ENTRY and parsed[1] == top_col and pending is None and not top_is_seq:
            value = parsed[3]  # the common case: one more key of the current mapping
            if value is _NESTED:
                pending, pending_key, pending_col = top, parsed[2], top_col
            else:
                top[parsed[2]] = value.make() if type(value) is _Fresh else value
            continue
        if kind == _SKIP:
            continue
        if kind == _DOCUMENT:
            if pending is not None:
                pending[pending_key] = None
                pending = None
            if root is not None or explicit:
                docs.append(root)
            root, explicit, stack, top, top_col = None, True, [], None, -1
            continue
        col = parsed[1]
        is_item = kind != _ENTRY
        if root is None:
            if col != 0:
                raise GiveUp
            root = top = [] if is_item else {}
            top_col, top_is_seq = 0, is_item
        elif pending is not None:
            if is_item and col >= pending_col:
                child: Any = []
            elif not is_item and col > pending_col:
                child = {}
            else:
                child = None
            pending[pending_key] = child
            pending = None
            if child is not None:
                if len(stack) >= _MAX_BLOCK_DEPTH:
                    raise GiveUp
                stack.append((top_col, top, top_is_seq))
                top, top_col, top_is_seq = child, col, is_item
        # Close the blocks the line is outside of (a sequence at its key's column ends at the next key).
        while top_col > col or (top_col == col and top_is_seq and not is_item):
            if not stack:
                raise GiveUp
            top_col, top, top_is_seq = stack.pop()
        if top_col != col or top_is_seq != is_item:
            raise GiveUp
        if kind == _ITEM:
            value = parsed[2]
            top.append(value.make() if type(value) is _Fresh else value)
            continue
        if kind == _ITEM_ENTRY:
            if len(stack) >= _MAX_BLOCK_DEPTH:
                raise GiveUp
            child = {}
            top.append(child)
            stack.append((top_col, top, top_is_seq))
            top, top_col, top_is_seq = child, parsed[2], False
            key, value = parsed[3], parsed[4]
        else:
            key, value = parsed[2], parsed[3]
        if value is _NESTED:
            pending, pending_key, pending_col = top, key, top_col
            continue
        top[key] = value.make() if type(value) is _Fresh else value
    if pending is not None:
        pending[pending_key] = None
    if root is not None or explicit:
        docs.append(root)
    return docs
