"""A small schema engine: what an API server checks of a JSON object, as a tree of nodes.

One engine reads both sources of schemas the library has: its transcription of the Kueue and
autoscaler CRDs (:mod:`~kueue_provreq.manifests.validation`) and the OpenAPI schemas of the
built-in Kubernetes kinds (:mod:`~kueue_provreq.manifests.kubernetes`).  It checks as the
API server does, not as a JSON-Schema validator does:

* nulls are pruned before anything is checked;
* an object with ``properties`` is closed: a key it does not know is an *unknown field*,
  recorded apart from errors so that ``--validate=warn|ignore`` can turn it into a warning
  or drop it silently (the server prunes it), while ``strict`` rejects it;
* ``format: int32`` and ``int64`` bound integers, ``x-kubernetes-list-type: map`` and
  ``set`` make items unique;
* every problem is collected, each with its own field path, instead of stopping at the first;
* ``rules`` (CEL rules, webhook and core validation) see an object only when its fields
  passed, as a CEL rule is skipped when the schema already failed.

The library's own files (scenarios, simulation files) are described with the same nodes
(:mod:`kueue_provreq.manifests.documents` adds the few they need beyond Kubernetes' types), so
every input gets the same errors and the same grammar for durations, times and quantities.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any, Final

import attrs

from kueue_provreq.api.quantity import Quantity, QuantityError
from kueue_provreq.manifests.codec import describe, parse_duration, parse_time
from kueue_provreq.manifests.errors import ManifestError

INT32_MAX: Final = 2**31 - 1
INT64_MAX: Final = 2**63 - 1

QUANTITY: Final = re.compile(r"(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))"
                             r"(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?")


@attrs.frozen
class UnknownField:
    """A key no schema knows: where it is, the object holding it, and the keys that are known."""

    path: str
    parent: dict[str, Any]
    key: str
    known: tuple[str, ...]

    def error(self) -> ManifestError:
        return unknown(self.key, self.known, self.path)


def unknown(key: str, known: tuple[str, ...], path: str, what: str = "field") -> ManifestError:
    """``unknown field, did you mean "x"? (known: ...)``: the closest known name first."""
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.75)
    hint = f', did you mean "{close[0]}"?' if close else ""
    return ManifestError(f"unknown {what}{hint} (known: {', '.join(sorted(known)) or 'none'})", path=path)


class Problems:
    """What checking one object found: errors, unknown fields and warnings, in walk order."""

    def __init__(self) -> None:
        self.errors: list[ManifestError] = []
        self.unknown: list[UnknownField] = []
        self.warnings: list[ManifestError] = []

    def error(self, reason: str, path: str) -> None:
        self.errors.append(ManifestError(reason, path=path))

    def warn(self, reason: str, path: str) -> None:
        self.warnings.append(ManifestError(reason, path=path))

    def add(self, error: ManifestError) -> None:
        self.errors.append(error)

    def prune_unknown(self) -> None:
        """Drop the unknown fields from the checked data, as the API server does."""
        for field in self.unknown:
            field.parent.pop(field.key, None)


Rule = Callable[[Mapping[str, Any], str, Problems], None]
"""A check of one well-typed object beyond its fields' own schemas (a CEL rule, a webhook or a
core validation rule).  It reports through ``Problems``, or raises :class:`ManifestError` for a
single problem."""


def join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


class Node:
    """One node of a schema: ``check(value, path, out)`` records what is wrong in ``out``."""

    def check(self, value: Any, path: str, out: Problems) -> None:
        raise NotImplementedError


@attrs.frozen
class Str(Node):
    max_length: int | None = None
    min_length: int = 0
    pattern: re.Pattern[str] | None = None
    enum: tuple[str, ...] = ()
    what: str = ""
    """How the pattern is named in messages (``a DNS-1123 subdomain``)."""

    def check(self, value: Any, path: str, out: Problems) -> None:
        if not isinstance(value, str):
            out.error(f"expected a string, got {describe(value)}", path)
        elif self.enum and value not in self.enum:
            out.error(f"unsupported value {describe(value)}: supported values: "
                      f"{', '.join(repr(e) for e in self.enum)}", path)
        elif self.max_length is not None and len(value) > self.max_length:
            out.error(f"must be no more than {self.max_length} characters", path)
        elif len(value) < self.min_length:
            out.error("required value" if self.min_length == 1 else
                      f"must be at least {self.min_length} characters", path)
        elif self.pattern is not None and value and self.pattern.fullmatch(value) is None:
            out.error(f"{describe(value)} is not {self.what or 'of the form ' + self.pattern.pattern}", path)


@attrs.frozen
class Int(Node):
    minimum: int | None = None
    maximum: int | None = None
    bits: int = 32
    """``format: int32`` (the default) or ``int64``: the range the server's decoder accepts."""

    def check(self, value: Any, path: str, out: Problems) -> None:
        if not isinstance(value, int) or isinstance(value, bool):
            out.error(f"expected an integer, got {describe(value)}", path)
            return
        limit = 2 ** (self.bits - 1)
        if not -limit <= value < limit:
            out.error(f"must be between {-limit} and {limit - 1} (int{self.bits})", path)
        elif self.minimum is not None and value < self.minimum:
            out.error(f"must be greater than or equal to {self.minimum}", path)
        elif self.maximum is not None and value > self.maximum:
            out.error(f"must be less than or equal to {self.maximum}", path)


@attrs.frozen
class Num(Node):
    minimum: float | None = None
    maximum: float | None = None
    exclusive_minimum: bool = False

    def check(self, value: Any, path: str, out: Problems) -> None:
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
            out.error(f"expected a number, got {describe(value)}", path)
        elif self.minimum is not None and (value < self.minimum or self.exclusive_minimum and value == self.minimum):
            out.error(f"must be greater than {'' if self.exclusive_minimum else 'or equal to '}{self.minimum:g}", path)
        elif self.maximum is not None and value > self.maximum:
            out.error(f"must be less than or equal to {self.maximum:g}", path)


@attrs.frozen
class Bool(Node):
    def check(self, value: Any, path: str, out: Problems) -> None:
        if not isinstance(value, bool):
            out.error(f"expected a boolean, got {describe(value)}", path)


@attrs.frozen
class DateTime(Node):
    def check(self, value: Any, path: str, out: Problems) -> None:
        if not isinstance(value, str):
            out.error(f"expected an RFC 3339 time string, got {describe(value)}", path)
            return
        try:
            parse_time(value)
        except ValueError as e:
            out.error(str(e), path)


@attrs.frozen
class Duration(Node):
    """A duration, one grammar everywhere: Go's ``time.ParseDuration`` (``90s``, ``1h30m``,
    ``300ms``; a bare ``0`` needs no unit).  YAML reads an unquoted ``0`` as a number; the
    library's own files take it as that same ``0``, while a Kubernetes object (``json_string``)
    does not, as ``metav1.Duration``'s JSON decoder refuses any number."""

    minimum: float | None = None
    json_string: bool = False

    def check(self, value: Any, path: str, out: Problems) -> None:
        if isinstance(value, int) and not isinstance(value, bool) and value == 0 and not self.json_string:
            value = "0"
        if not isinstance(value, str):
            number = isinstance(value, (int, float)) and not isinstance(value, bool)
            hint = (' (write "0s": a Kubernetes duration is a JSON string)' if number and value == 0 else
                    f" (a number needs a unit: {value}s, {value}m or {value}h)" if number else "")
            out.error(f"expected a duration string like 90s or 1m30s, got {describe(value)}{hint}", path)
            return
        try:
            seconds = parse_duration(value)
        except ManifestError as e:
            out.error(e.reason, path)
            return
        if self.minimum is not None and seconds < self.minimum:
            out.error("must not be negative" if self.minimum == 0 else
                      f"must be at least {self.minimum:g}s", path)


def duration_seconds(value: Any) -> float:
    """The seconds of a duration already checked by :class:`Duration`."""
    return 0.0 if value == 0 and not isinstance(value, str) else parse_duration(value)


def quantity_value(value: Any) -> Decimal:
    """The value of a quantity already checked by :class:`Qty`."""
    return Quantity.parse(value).value


@attrs.frozen
class Qty(Node):
    """``resource.Quantity``: an integer or a string of the quantity grammar.  ``non_negative``
    is core validation of container resources and Kueue's webhook rule for quotas."""

    non_negative: bool = False

    def check(self, value: Any, path: str, out: Problems) -> None:
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            out.error(f"expected a quantity (an integer or a string like 500m), got {describe(value)}", path)
            return
        try:
            amount = Quantity.parse(value).value
        except QuantityError as e:
            out.error(str(e), path)
            return
        if isinstance(value, str) and QUANTITY.fullmatch(value) is None:
            out.error(f"{describe(value)} is not a quantity (like 500m, 1Gi or 2)", path)
        elif self.non_negative and amount < 0:
            out.error("must be greater than or equal to 0", path)


@attrs.frozen
class IntOrStr(Node):
    """``intstr.IntOrString`` (a port number or name, a percentage)."""

    def check(self, value: Any, path: str, out: Problems) -> None:
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            out.error(f"expected an integer or a string, got {describe(value)}", path)


@attrs.frozen
class Open(Node):
    """Any JSON: ``x-kubernetes-preserve-unknown-fields``, or ``type: object`` with no schema."""

    def check(self, value: Any, path: str, out: Problems) -> None:
        return None


ANY: Final = Open()


@attrs.frozen
class Obj(Node):
    properties: Mapping[str, Node] = attrs.field(factory=dict)
    required: tuple[str, ...] = ()
    values: Node | None = None
    """The schema of every value of a map (``additionalProperties``)."""
    max_properties: int | None = None
    rules: tuple[Rule, ...] = ()
    closed: bool = True
    """Keys outside ``properties`` are unknown fields (unless ``values`` takes them)."""

    def check(self, value: Any, path: str, out: Problems) -> None:
        if not isinstance(value, Mapping):
            out.error(f"expected an object, got {describe(value)}", path)
            return
        mark = len(out.errors)
        for key in self.required:
            if value.get(key) is None:
                out.error("required value", join(path, key))
        if self.max_properties is not None and len(value) > self.max_properties:
            out.error(f"must have at most {self.max_properties} items", path)
        for key, item in value.items():
            if not isinstance(key, str):
                out.error(f"keys must be strings, got {describe(key)}", path)
                continue
            node = self.properties.get(key)
            if node is not None:
                if item is not None:  # the server prunes nulls before validating
                    node.check(item, join(path, key), out)
            elif self.values is not None:
                if item is not None:
                    self.values.check(item, f"{path}[{key}]", out)
            elif self.closed and self.properties and isinstance(value, dict):
                out.unknown.append(UnknownField(join(path, key), value, key, tuple(self.properties)))
        if self.rules and len(out.errors) == mark:
            for rule in self.rules:
                try:
                    rule(value, path, out)
                except ManifestError as e:
                    out.add(e)


@attrs.frozen
class Arr(Node):
    items: Node = ANY
    min_items: int = 0
    max_items: int | None = None
    map_keys: tuple[str, ...] = ()
    """``x-kubernetes-list-type: map``: items are unique by these keys."""
    is_set: bool = False
    """``x-kubernetes-list-type: set``: items are unique."""

    def check(self, value: Any, path: str, out: Problems) -> None:
        if not isinstance(value, (list, tuple)):
            out.error(f"expected a list, got {describe(value)}", path)
            return
        if not value and self.min_items:
            out.error("required value", path)
        elif len(value) < self.min_items:
            out.error(f"must have at least {self.min_items} item{'s' * (self.min_items > 1)}", path)
        if self.max_items is not None and len(value) > self.max_items:
            out.error(f"must have at most {self.max_items} items", path)
        seen: set[Any] = set()
        for i, item in enumerate(value):
            where = f"{path}[{i}]"
            if item is None:
                out.error("expected a value, got null", where)
                continue
            self.items.check(item, where, out)
            if self.map_keys and isinstance(item, Mapping):
                key: Any = tuple(repr(item.get(k)) for k in self.map_keys)
                shown = item.get(self.map_keys[0])
            elif self.is_set:
                key = shown = item if isinstance(item, (str, int, float, bool)) else repr(item)
            else:
                continue
            if key in seen:
                out.error(f"duplicate value {describe(shown)}", where)
            seen.add(key)


@attrs.frozen
class Choice(Node):
    """A mapping with exactly one key, which says what the value is (a scenario's step kind, a
    random distribution); each key has its own node.  ``null`` under a key that takes an object
    reads as the empty object (YAML's bare ``settle:``)."""

    choices: Mapping[str, Node]
    what: str = "field"

    def check(self, value: Any, path: str, out: Problems) -> None:
        if not isinstance(value, Mapping) or not value:
            out.error(f"expected an object with one of {', '.join(self.choices)}, got {describe(value)}", path)
            return
        if len(value) != 1:
            out.error(f"expected exactly one of {', '.join(self.choices)}, got {', '.join(map(str, value))}", path)
            return
        ((key, body),) = value.items()
        node = self.choices.get(key) if isinstance(key, str) else None
        if node is None:
            out.add(unknown(str(key), tuple(self.choices), join(path, str(key)), self.what))
        elif body is None and isinstance(node, Obj):
            node.check({}, join(path, key), out)
        elif body is None:
            out.error("required value", join(path, key))
        else:
            node.check(body, join(path, key), out)


class Ref(Node):
    """A node built on first use: the OpenAPI schemas refer to each other, some in cycles."""

    def __init__(self, build: Callable[[], Node]) -> None:
        self._build: Callable[[], Node] | None = build
        self._node: Node | None = None

    @property
    def node(self) -> Node:
        if self._node is None:
            assert self._build is not None
            self._node, self._build = self._build(), None
        return self._node

    def check(self, value: Any, path: str, out: Problems) -> None:
        self.node.check(value, path, out)
