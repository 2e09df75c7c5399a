"""A worst-case cost estimate for a DRA device selector's CEL expression, so that one too costly to run is
refused when it is read, as the API server refuses it.

kube-apiserver compiles every `CELDeviceSelector.expression` and estimates its worst-case cost over the
largest device the API allows (k8s.io/dynamic-resource-allocation/cel: the `device` variable's maps hold at
most ResourceSliceMaxAttributesAndCapacitiesPerDevice = 32 entries, its strings at most 64 characters);
above CELSelectorExpressionMaxCost = 1,000,000 the object is rejected: `Forbidden: too complex, exceeds cost
limit`. The `cel` package Phalanx evaluates with has a parser and an interpreter but no cost estimator, and its
interpreter cannot be interrupted (it holds the GIL and takes no step limit), so this module parses the
expression itself and bounds its cost in the same spirit:

- every value has a *shape*: at most how many entries it has (a list or a map), how long it is (a string),
  and the shape of any of its entries. Literals have what is written; `device` has the API's maps of at most
  32 entries and strings of at most 64 characters; `+` adds counts and lengths; a comprehension's variable has
  its range's entry shape, and `map` gives a list as long as its range;
- a comprehension (`all`, `exists`, `exists_one`, `map`, `filter`) over a range of count n costs n times its
  body, plus the range: nested comprehensions multiply; `map` and `filter` also cost n²/2 copies of an entry,
  as the `cel` package copies the list it builds at every step;
- every other step costs 1, string and list work a tenth of the characters or elements it reads (cel-go's
  traversal factor), a regular expression the string's tenth times the pattern's quarter;
- the result costs its size: the interpreter hands it back whole (kube would refuse a selector that is not a
  bool; here a list of a thousand device maps costs their conversion).

An expression's estimate bounds the interpreter's steps on any device within the API's limits (which
ResourceSlice parsing enforces), so the limit checked at load is the run time bound too: nothing runs whose
worst case exceeds it. Estimates are close to cel-go's for ordinary selectors and never below the steps
taken; near the limit the two may disagree by a small factor.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

MAX_COST = 1_000_000  # resource.k8s.io CELSelectorExpressionMaxCost
DEVICE_ENTRIES = 32  # ResourceSliceMaxAttributesAndCapacitiesPerDevice: the most entries a `device` map holds
DEVICE_LENGTH = 64  # DeviceAttributeMaxValueLength: the longest string `device` reaches (names are shorter)
MAX_DEPTH = 100  # nesting levels parsed; the `cel` package's own parser refuses more than about 95
T = TypeVar("T")
_CAP = 2**62  # costs and sizes are counted up to here (any more is as refused as this much)
_TOKEN = re.compile(r"""
    (?P<space>\s+|//[^\n]*)
  | (?P<string>(?:[rR][bB]?|[bB][rR]?)?(?:'''[\s\S]*?'''|\"\"\"[\s\S]*?\"\"\"|'(?:\\[\s\S]|[^'\\\n])*'
                                         |"(?:\\[\s\S]|[^"\\\n])*"))
  | (?P<number>0[xX][0-9a-fA-F]+[uU]?|[0-9]*\.[0-9]+(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+|[0-9]+[uU]?)
  | (?P<ident>[_a-zA-Z][_a-zA-Z0-9]*)
  | (?P<op>\|\||&&|==|!=|<=|>=|[-+*/%<>!?:.,()\[\]{}])
""", re.VERBOSE)
_MACROS = frozenset({"all", "exists", "exists_one", "map", "filter"})
# Binding powers: the ternary is lowest (right-associative), then ||, &&, the relations, + -, * / %.
_BINARY = {"||": 2, "&&": 3, "==": 4, "!=": 4, "<": 4, "<=": 4, ">": 4, ">=": 4, "in": 4, "+": 5, "-": 5,
           "*": 6, "/": 6, "%": 6}
_TERNARY = 1
_SCALAR_FUNCTIONS = frozenset({"size", "int", "uint", "double", "bool", "type", "duration", "timestamp", "has",
                               "quantity", "isQuantity", "isSemver", "compareTo", "isGreaterThan", "isLessThan",
                               "asInteger", "asApproximateFloat", "isInteger", "sign", "major", "minor", "patch",
                               "contains", "startsWith", "endsWith", "matches", "add", "sub"})


class CostError(ValueError):
    """The expression's cost cannot be bounded (it nests too deeply, or it is not CEL this parser reads)."""


@dataclass(frozen=True, slots=True)
class Estimate:
    """What evaluating an expression costs at most, and how large its value is at most."""

    cost: int  # steps
    count: int = 0  # entries, if the value is a list or a map
    length: int = 0  # characters or bytes, if it is a string
    element: Estimate | None = None  # any of its entries (a map's keys and values alike)
    weight: int = 0  # entries and characters all the way down: what reading the whole value visits
    fields: tuple[tuple[str, Estimate], ...] = ()  # `device`'s fields, by name

    @staticmethod
    def of(cost: int, count: int = 0, length: int = 0, element: Estimate | None = None) -> Estimate:
        inner = 0 if element is None else element.weight
        return Estimate(cost, count, length, element, _add(length, _times(count, _add(inner, 1))))

    def priced(self, cost: int) -> Estimate:
        return Estimate(cost, self.count, self.length, self.element, self.weight)

    def inside(self, cost: int, field: str | None = None) -> Estimate:
        """An entry of the value (`[...]`, or `.field` of a map or of `device`), at `cost`."""
        if self.fields:
            return dict(self.fields).get(field or "", _NOTHING).priced(cost)
        return (self.element or _NOTHING).priced(cost)


_NOTHING = Estimate(0)


def _join(*values: Estimate | None, cost: int = 0) -> Estimate:
    """A value that may be any of `values`: the largest of each."""
    present = [v for v in values if v is not None]
    elements = [v.element for v in present if v.element is not None]
    return Estimate.of(cost, max((v.count for v in present), default=0), max((v.length for v in present), default=0),
                       _join(*elements) if elements else None)




def _add(*values: int) -> int:
    return min(sum(values), _CAP)


def _times(a: int, b: int) -> int:
    return min(a * b, _CAP)


def _tenth(size: int) -> int:
    return math.ceil(size / 10)


# The `device` variable as the API server declares it: a driver name, and maps of at most 32 domains each
# holding at most 32 attributes (or capacities) whose values are at most 64 characters long.
_NAME = Estimate.of(0, length=DEVICE_LENGTH)
_DOMAIN = Estimate.of(0, DEVICE_ENTRIES, DEVICE_LENGTH, _NAME)
_DEVICE_MAP = Estimate.of(0, DEVICE_ENTRIES, DEVICE_LENGTH, _join(_NAME, _DOMAIN))
DEVICE = Estimate(1, 4, 0, _join(_NAME, _DEVICE_MAP), _DEVICE_MAP.weight * 2,
                  (("driver", _NAME), ("attributes", _DEVICE_MAP), ("capacity", _DEVICE_MAP),
                   ("allowMultipleAllocations", _NOTHING)))


def estimate(expression: str) -> Estimate:
    """The worst-case cost and result size of `expression` (CEL that the `cel` package compiled)."""
    parser = _Parser(expression)
    try:
        result = parser.expression(0)
    except RecursionError:
        raise CostError(f"nests more than {MAX_DEPTH} levels deep") from None
    if parser.peek() is not None:
        raise CostError(f"cannot estimate its cost: unexpected {parser.peek()!r}")
    # The interpreter hands the whole value back (a selector that makes a list of a thousand device maps costs
    # their conversion, whatever the list's own cost).
    return result.priced(_add(result.cost, result.weight))


def estimate_cost(expression: str) -> int:
    return estimate(expression).cost


class _Parser:
    """A Pratt parser over CEL's grammar that computes each subexpression's Estimate as it goes."""

    def __init__(self, text: str) -> None:
        self.tokens: list[tuple[str, str]] = []
        at = 0
        while at < len(text):
            match = _TOKEN.match(text, at)
            if match is None:
                raise CostError(f"cannot estimate its cost: unexpected {text[at]!r}")
            if match.lastgroup != "space":
                self.tokens.append((match.lastgroup or "", match.group()))
            at = match.end()
        self.at = 0
        self.depth = 0
        self.bound: dict[str, list[Estimate]] = {}  # comprehension variables in scope: an element each

    # --- tokens ---

    def peek(self, ahead: int = 0) -> str | None:
        index = self.at + ahead
        return self.tokens[index][1] if index < len(self.tokens) else None

    def kind(self, ahead: int = 0) -> str | None:
        index = self.at + ahead
        return self.tokens[index][0] if index < len(self.tokens) else None

    def take(self, expected: str | None = None) -> str:
        token = self.peek()
        if token is None or (expected is not None and token != expected):
            raise CostError(f"cannot estimate its cost: expected {expected or 'more'!r}, got {token!r}")
        self.at += 1
        return token

    def nested(self, parse: Callable[[], T]) -> T:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise CostError(f"nests more than {MAX_DEPTH} levels deep")
        try:
            return parse()
        finally:
            self.depth -= 1

    # --- expressions ---

    def expression(self, min_power: int) -> Estimate:
        left = self.unary()
        while True:
            token = self.peek()
            if token == "?" and min_power < _TERNARY:
                self.take()
                then = self.nested(lambda: self.expression(0))
                self.take(":")
                otherwise = self.nested(lambda: self.expression(_TERNARY - 1))
                left = _join(then, otherwise, cost=_add(left.cost, max(then.cost, otherwise.cost)))
                continue
            power = _BINARY.get(token or "") if self.kind() in ("op", "ident") else None
            if power is None or power <= min_power:
                return left
            self.take()
            right = self.nested(functools.partial(self.expression, power))
            left = _binary(token or "", left, right)

    def unary(self) -> Estimate:
        operators = 0
        while self.peek() in ("-", "!") and self.kind() == "op":
            self.take()
            operators += 1
        value = self.member()
        return value.priced(_add(value.cost, operators)) if operators else value

    def member(self) -> Estimate:
        value = self.primary()
        while True:
            token = self.peek()
            if token == "." and self.kind() == "op":
                self.take()
                name = self.take()
                if self.peek() == "(":
                    value = self.call(name, value)
                elif self.peek() == "{":
                    value = self.message(value)
                else:
                    value = value.inside(_add(value.cost, 1), name)
            elif token == "[":
                self.take()
                index = self.nested(lambda: self.expression(0))
                self.take("]")
                value = value.inside(_add(value.cost, index.cost, 1))
            else:
                return value

    def primary(self) -> Estimate:
        kind, token = self.kind(), self.peek()
        if kind == "number":
            self.take()
            return Estimate(0)
        if kind == "string":
            self.take()
            return Estimate.of(0, length=len(token or ""))
        if token == "(":
            self.take()
            value = self.nested(lambda: self.expression(0))
            self.take(")")
            return value
        if token == "[":
            self.take()
            items = self.nested(lambda: self.items("]", self.list_item))
            return _collection(items)
        if token == "{":
            self.take()
            entries = self.nested(lambda: self.items("}", self.map_entry))
            return _collection(entries)
        if token == "." and self.kind(1) == "ident":
            self.take()
        if self.kind() == "ident":
            name = self.take()
            if self.peek() == "(":
                return self.call(name, None)
            if self.peek() == "{":
                return self.message(Estimate(0))
            return self.identifier(name)
        raise CostError(f"cannot estimate its cost: unexpected {token!r}")

    def identifier(self, name: str) -> Estimate:
        if self.bound.get(name):
            return self.bound[name][-1].priced(1)
        if name in ("true", "false", "null"):
            return Estimate(0)
        # `device` is the one variable; any other name fails when it is evaluated
        return DEVICE if name == "device" else Estimate(1)

    def items(self, close: str, item: Callable[[], Estimate]) -> list[Estimate]:
        found: list[Estimate] = []
        while self.peek() != close:
            if self.peek() == ",":  # an empty item, which the `cel` package reads (`[,]`)
                self.take()
                continue
            found.append(item())
            if self.peek() != close:
                self.take(",")
        self.take(close)
        return found

    def list_item(self) -> Estimate:
        return self.expression(0)

    def map_entry(self) -> Estimate:
        key = self.expression(0)
        self.take(":")
        value = self.expression(0)
        return _join(key, value, cost=_add(key.cost, value.cost))

    def message(self, type_name: Estimate) -> Estimate:
        self.take("{")

        def field() -> Estimate:
            self.take()
            self.take(":")
            return self.expression(0)

        fields = self.nested(lambda: self.items("}", field))
        built = _collection(fields)
        return built.priced(_add(type_name.cost, built.cost))

    def call(self, name: str, target: Estimate | None) -> Estimate:
        self.take("(")
        if target is not None and name in _MACROS and self.kind() == "ident" and self.peek(1) == ",":
            return self.nested(lambda: self.comprehension(name, target))
        args = self.nested(lambda: self.items(")", self.list_item))
        return _function(name, target, args)

    def comprehension(self, macro: str, target: Estimate) -> Estimate:
        """`range.macro(x, ...)`: the body runs once per element of the range, x bound to an element."""
        variable = self.take()
        self.take(",")
        self.bound.setdefault(variable, []).append(target.inside(1))
        try:
            parts = [self.expression(0)]
            while self.peek() == ",":
                self.take()
                parts.append(self.expression(0))
            self.take(")")
        finally:
            self.bound[variable].pop()
        body = _add(*(part.cost for part in parts), 2)
        cost = _add(target.cost, _times(target.count, body), 1)
        if macro in ("all", "exists", "exists_one"):
            return Estimate(cost)
        # map and filter build their list one entry at a time, and the `cel` package copies the list built so
        # far at each step: n entries cost n²/2 copies of an entry (measured: 4,000 entries of 1, 0.38 s).
        entry = parts[-1] if macro == "map" else (target.element or _NOTHING)
        copies = _times(_times(target.count, _add(target.count, 1)) // 2, _add(entry.weight, 1))
        if macro == "filter":
            return target.priced(_add(cost, copies))
        return Estimate.of(_add(cost, copies), target.count, 0, parts[-1])  # map: one value per entry


def _reads(*values: Estimate) -> int:
    """What reading the values through costs: a tenth of the entries and characters they hold."""
    return _tenth(_add(*(v.weight for v in values)))


def _binary(operator: str, left: Estimate, right: Estimate) -> Estimate:
    cost = _add(left.cost, right.cost)
    if operator in ("&&", "||"):
        return Estimate(cost)
    if operator == "+":  # numbers, or strings and lists joined: copying reads both
        joined = _join(left.element, right.element) if left.element or right.element else None
        return Estimate.of(_add(cost, 1, _reads(left, right)), _add(left.count, right.count),
                           _add(left.length, right.length), joined)
    if operator == "in":  # a list searched, each entry compared
        return Estimate(_add(cost, 1, _times(right.count, _add(1, _reads(left)))))
    if operator in ("==", "!=", "<", "<=", ">", ">="):
        return Estimate(_add(cost, 1, _reads(left, right)))
    return Estimate(_add(cost, 1))


def _collection(items: list[Estimate]) -> Estimate:
    return Estimate.of(_add(*(item.cost for item in items), len(items), 1), len(items), 0,
                       _join(*items) if items else None)


def _function(name: str, target: Estimate | None, args: list[Estimate]) -> Estimate:
    operands = [*([target] if target is not None else []), *args]
    cost = _add(*(operand.cost for operand in operands), 1)
    if name == "matches" and len(operands) == 2:
        cost = _add(cost, _times(_tenth(operands[0].length), math.ceil(operands[1].length / 4)))
    else:  # string functions read their strings; size() and the like read no further than the top
        cost = _add(cost, _tenth(_add(*(operand.length for operand in operands), *(o.count for o in operands))))
    if name in _SCALAR_FUNCTIONS:
        return Estimate(cost)
    # string(), dyn(), semver() and functions the interpreter does not know: as large as what they read
    return _join(*operands, Estimate.of(0, length=32), cost=cost)


__all__ = ["DEVICE_ENTRIES", "DEVICE_LENGTH", "MAX_COST", "MAX_DEPTH", "CostError", "Estimate", "estimate",
           "estimate_cost"]
