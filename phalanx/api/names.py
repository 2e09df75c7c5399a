"""Names, label keys and label values as the API server validates them (apimachinery's `IsDNS1123Subdomain`,
`IsDNS1123Label`, `IsQualifiedName` and `IsValidLabelValue`), with its words for what is wrong.

Every object's metadata.name is a DNS-1123 subdomain (ValidatePodName, ValidateNodeName and the other kinds'
name rules all come to NameIsDNSSubdomain; custom resources get the same generic rule), its namespace a
DNS-1123 label (ValidateNamespaceName), its label keys qualified names and label values valid label values
(ValidateLabels), its annotation keys qualified names once lowercased (ValidateAnnotations).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Sequence

from phalanx.errors import InputError

SUBDOMAIN_MAX_LENGTH = 253
LABEL_MAX_LENGTH = 63
_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN = re.compile(rf"{_LABEL}(\.{_LABEL})*")
_DNS_LABEL = re.compile(_LABEL)
_QUALIFIED_PART = re.compile("([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_SUBDOMAIN_RULE = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
                   "and must start and end with an alphanumeric character")
_LABEL_RULE = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
               "and end with an alphanumeric character")
_NAME_PART_RULE = ("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
                   "alphanumeric character")
_LABEL_VALUE_RULE = ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
                     "and must start and end with an alphanumeric character")
# Manifests repeat the same few names, keys and values thousands of times: each is checked once.
_CHECKED: dict[tuple[str, str], str | None] = {}
_MAX_CHECKED = 65536


def subdomain_problem(value: str) -> str | None:
    if len(value) > SUBDOMAIN_MAX_LENGTH:
        return f"must be no more than {SUBDOMAIN_MAX_LENGTH} characters"
    return None if _SUBDOMAIN.fullmatch(value) else _SUBDOMAIN_RULE


def label_problem(value: str) -> str | None:
    if len(value) > LABEL_MAX_LENGTH:
        return f"must be no more than {LABEL_MAX_LENGTH} characters"
    return None if _DNS_LABEL.fullmatch(value) else _LABEL_RULE


def qualified_name_problem(value: str) -> str | None:
    prefix, slash, name = value.rpartition("/")
    if slash and "/" in prefix:
        return f"a qualified name must consist of one optional DNS subdomain prefix, '/' and a name ({_NAME_PART_RULE})"
    if slash and not prefix:
        return "prefix part must be non-empty"
    if slash and (problem := subdomain_problem(prefix)) is not None:
        return f"prefix part {problem}"
    if not name:
        return "name part must be non-empty"
    if len(name) > LABEL_MAX_LENGTH:
        return f"name part must be no more than {LABEL_MAX_LENGTH} characters"
    return None if _QUALIFIED_PART.fullmatch(name) else _NAME_PART_RULE


def label_value_problem(value: str) -> str | None:
    if len(value) > LABEL_MAX_LENGTH:
        return f"must be no more than {LABEL_MAX_LENGTH} characters"
    return None if not value or _QUALIFIED_PART.fullmatch(value) else _LABEL_VALUE_RULE


def shown(value: str, limit: int = 80) -> str:
    """The value as the API server quotes it in a message (escaped), cut short when long."""
    return json.dumps(value if len(value) <= limit else value[:limit] + "…", ensure_ascii=False)


def check(value: str, field: str, problem: Callable[[str], str | None]) -> str:
    """`value` if the rule takes it, else InputError naming the field: `Invalid value: "…": what is wrong`."""
    key = (problem.__name__, value)
    if key in _CHECKED:
        found = _CHECKED[key]
    else:
        found = problem(value)
        if len(_CHECKED) >= _MAX_CHECKED:
            _CHECKED.clear()
        _CHECKED[key] = found
    if found is not None:
        raise InputError(f"Invalid value: {shown(value)}: {found}", field=field)
    return value


__all__ = ["LABEL_MAX_LENGTH", "SUBDOMAIN_MAX_LENGTH", "check", "label_problem", "label_value_problem",
           "qualified_name_problem", "shown", "subdomain_problem"]


def first_few(names: Sequence[str], shown: int = 3) -> str:
    """`a, b, c and 4 more`: a few names for a one-line message."""
    return ", ".join(names[:shown]) + (f" and {len(names) - shown} more" if len(names) > shown else "")


MAX_GENERATED_BASE = 58  # the API server's maxGeneratedNameLength: a name's 63 characters less the 5 it adds
_RANDOM_CHARACTERS = "bcdfghjklmnpqrstvwxz2456789"  # utilrand.String's alphabet: no vowels, no 0, 1 or 3


def generate_name_problem(prefix: str) -> str | None:
    """What is wrong with `metadata.generateName: prefix` (ValidateObjectMeta: with a trailing '-' taken for a
    letter, a subdomain; the name made from it is checked as any name), or None."""
    return subdomain_problem(prefix[:-1] + "a" if prefix.endswith("-") else prefix)


def generated_name(base: str, key: str) -> str:
    """The name `metadata.generateName: base` gets: `base` cut to 58 characters, then the 5 characters the API
    server picks at random, here derived from `key` so that a run repeats."""
    digest = int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big")
    suffix = ""
    for _ in range(5):
        digest, i = divmod(digest, len(_RANDOM_CHARACTERS))
        suffix += _RANDOM_CHARACTERS[i]
    return base[:MAX_GENERATED_BASE] + suffix
