"""Integer fields of custom resources (Kueue's, Volcano's, KAI's, scheduler-plugins'), read as kube-apiserver
reads them against a CRD's structural schema (`type: integer`): a JSON integer, or a number with no fractional
part (kube-openapi's type validator lets `4.0` pass as an integer; it is stored as 4); never a string, a boolean
or a fraction. The controllers decode the fields into Go int32s, so a value past int32 cannot be read back."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import yaml

from phalanx.api.fields import Manifest, Meta, fail, mapping, text
from phalanx.api.reading import MAX_NESTING, check_nesting
from phalanx.errors import InputError

MAX_INT32 = 2**31 - 1
_MAX_JSON_INTEGER = 2**53 - 1  # swag.IsFloat64AJSONInteger: the largest float read as an integer


def crd_int(value: Any, field: str, *, minimum: int | None = None, maximum: int = MAX_INT32) -> int:
    """The integer `value`, or InputError naming `field` in the API server's words."""
    number = _integer(value, field)
    if minimum is not None and number < minimum:
        raise fail(field, f"should be greater than or equal to {minimum}, got {shown(number)}")
    if number > MAX_INT32 or number < -MAX_INT32 - 1:
        raise fail(field, f"must fit in a 32-bit integer, got {shown(number)}")
    if number > maximum:
        raise fail(field, f"should be less than or equal to {maximum}, got {shown(number)}")
    return number


def _integer(value: Any, field: str) -> int:
    if isinstance(value, bool):
        raise fail(field, f"must be of type integer, got boolean {str(value).lower()}")
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if math.isfinite(value) and value.is_integer() and abs(value) <= _MAX_JSON_INTEGER:
            return int(value)
        raise fail(field, f"must be of type integer, got number {shown(value)}")
    if isinstance(value, str):
        raise fail(field, f"must be of type integer, got string {shown(value)}")
    raise fail(field, f"must be of type integer, got {type(value).__name__}")


def shown(value: object, limit: int = 40) -> str:
    """A value for a one-line message: long numbers by their digit count, long text cut short."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**limit:
        return f"a number of about {int(abs(value).bit_length() * math.log10(2)) + 1} digits"
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def crd_header(doc: Manifest, kind: str, versions: tuple[str, ...]) -> tuple[Meta, Mapping[str, Any]]:
    """A cluster-scoped custom object's apiVersion (one of `versions`) and kind checked; its metadata and spec."""
    api = text(doc.get("apiVersion"), "apiVersion", required=True)
    if api not in versions:
        raise fail("apiVersion", f"unsupported version {api!r} (supported: {', '.join(versions)})")
    if doc.get("kind") != kind:
        raise fail("kind", f"must be {kind}, got {doc.get('kind')!r}")
    return Meta(doc, namespaced=False), mapping(doc.get("spec"), "spec")


def embedded_yaml(raw: str, where: str) -> Any:
    """A configuration file held as text (a ConfigMap key, named by `where`), parsed; bad YAML fails naming it."""
    try:
        check_nesting(raw, file="")
        return yaml.safe_load(raw)
    except InputError:
        raise fail(where, f"nests deeper than {MAX_NESTING} levels") from None
    except yaml.YAMLError as exc:
        raise fail(where, f"is not valid YAML: {str(exc).splitlines()[0]}") from None
    except (ValueError, RecursionError):  # an integer past Python's digit limit
        raise fail(where, "is not valid YAML here: a number is too long or the nesting too deep") from None
