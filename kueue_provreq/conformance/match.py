"""The subset match of an expectation against an object as ``kubectl get -o yaml`` shows it.

``match`` returns the first difference as a one-line text (a path, what was expected, what
was found) or None.  The rules are the contract's: keys not given are not checked; an
expected empty value is satisfied by a missing key; plain lists match element by element;
conditions (by ``type``) and admission check states (by ``name``) match by key in any order;
quantities compare by value; ``$absent``, ``$present`` and ``$after`` are special values.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from kueue_provreq.api.quantity import QuantityError, parse_quantity
from kueue_provreq.conformance.scenario import ScenarioError
from kueue_provreq.manifests.codec import parse_time
from kueue_provreq.manifests.errors import ManifestError
from kueue_provreq.manifests.nodes import duration_seconds


class _Missing:
    """The value of a key an object does not have (distinct from an explicit ``null``)."""

    def __repr__(self) -> str:
        return "<missing>"


MISSING: Any = _Missing()

#: List keys whose elements are matched by a key field instead of by position.
KEYED_LISTS = {"conditions": "type", "admissionChecks": "name"}

#: A scalar is a quantity when its own key is one of these ...
QUANTITY_KEYS = frozenset({"nominalQuota", "borrowingLimit", "lendingLimit", "total", "borrowed"})
#: ... or when it is a value of a map stored under one of these (resource name -> quantity).
QUANTITY_MAPS = frozenset({"requests", "limits", "resourceUsage", "resources", "overhead",
                           "capacity", "allocatable"})


def is_empty(value: object) -> bool:
    """What ``omitempty`` leaves out: missing, null, ``""``, ``{}`` and ``[]``."""
    return value is MISSING or value is None or (isinstance(value, (str, dict, list, tuple, Mapping))
                                                 and len(value) == 0)


def show(value: object) -> str:
    """A value as a one-line flow-style text for a difference report."""
    if value is MISSING:
        return "<missing>"
    return json.dumps(value, default=str, ensure_ascii=False)


class Matcher:
    """Subset matching with the scenario's start clock (for ``$after``)."""

    def __init__(self, start: float) -> None:
        self.start = start

    def match(self, expected: Any, actual: Any, path: str = "") -> str | None:
        return self._match(expected, actual, path, (None, None))

    # ``where`` is (this value's key, its parent's key): what makes a scalar a quantity.
    def _match(self, expected: Any, actual: Any, path: str, where: tuple[str | None, str | None]) -> str | None:
        if isinstance(expected, Mapping) and len(expected) == 1:
            special = next(iter(expected))
            if isinstance(special, str) and special.startswith("$"):
                return self._special(special, expected[special], actual, path)
        if expected is None or (is_empty(expected) and (actual is MISSING or actual is None)):
            if is_empty(actual):
                return None
            return f"{_at(path)}expected no value, got {show(actual)}"
        if isinstance(expected, Mapping):
            if actual is MISSING or actual is None:
                actual = {}  # each expected key is then missing, and says so with its own path
            if not isinstance(actual, Mapping):
                return f"{_at(path)}expected a mapping {show(expected)}, got {show(actual)}"
            for key, value in expected.items():
                diff = self._match(value, actual.get(key, MISSING), _join(path, key), (key, where[0]))
                if diff is not None:
                    return diff
            return None
        if isinstance(expected, (list, tuple)):
            field = KEYED_LISTS.get(where[0] or "")
            if field is not None and all(isinstance(e, Mapping) and field in e for e in expected):
                return self._keyed(expected, [] if actual is MISSING or actual is None else actual, path, field)
            if actual is MISSING:
                return f"{_at(path)}expected {show(expected)}, but it is missing"
            if not isinstance(actual, (list, tuple)):
                return f"{_at(path)}expected a list {show(expected)}, got {show(actual)}"
            if len(expected) != len(actual):
                return (f"{_at(path)}expected {len(expected)} elements {show(expected)}, "
                        f"got {len(actual)} {show(actual)}")
            for i, (e, a) in enumerate(zip(expected, actual, strict=True)):
                diff = self._match(e, a, f"{path}[{i}]", (None, where[0]))
                if diff is not None:
                    return diff
            return None
        if actual is MISSING:
            return f"{_at(path)}expected {show(expected)}, but it is missing"
        if scalar_equal(expected, actual, where):
            return None
        return f"{_at(path)}expected {show(expected)}, got {show(actual)}"

    def _keyed(self, expected: Any, actual: Any, path: str, field: str) -> str | None:
        if not isinstance(actual, (list, tuple)):
            return f"{_at(path)}expected a list {show(expected)}, got {show(actual)}"
        by_key = {a.get(field): a for a in actual if isinstance(a, Mapping)}
        for e in expected:
            key = e[field]
            element = by_key.get(key)
            here = f"{path}[{field}={key}]"
            if e.get("$absent") is True:
                if element is not None:
                    return f"{here}: expected no such element, got {show(element)}"
                continue
            if element is None:
                have = ", ".join(str(k) for k in by_key) or "none"
                return f"{_at(path)}expected an element with {field}={key} (have: {have})"
            diff = self._match(e, element, here, (None, None))
            if diff is not None:
                return diff
        return None

    def _special(self, special: str, arg: Any, actual: Any, path: str) -> str | None:
        if special == "$absent":
            return None if is_empty(actual) else f"{_at(path)}expected no value, got {show(actual)}"
        if special == "$present":
            return None if actual is not MISSING and actual is not None else \
                f"{_at(path)}expected a value, but it is {'missing' if actual is MISSING else 'null'}"
        if special == "$after":
            want = math.floor(self.start + duration_seconds(arg))  # the scenario's schema checked it
            try:
                got = parse_time(actual) if isinstance(actual, str) else None
            except ManifestError:
                got = None
            if got is None:
                return f"{_at(path)}expected a timestamp (start + {arg}), got {show(actual)}"
            if got == want:
                return None
            return f"{_at(path)}expected start + {arg}, got {show(actual)} (start + {_seconds(got - self.start)})"
        raise ScenarioError(f'unknown key "{path}.{special}"')


def scalar_equal(expected: Any, actual: Any, where: tuple[str | None, str | None] = (None, None)) -> bool:
    """Equal scalars; booleans equal only booleans (except a condition ``status``, where
    YAML's unquoted ``True`` means the string); quantities by value."""
    if isinstance(expected, bool) and where[0] == "status" and actual in ("True", "False"):
        return bool(("True" if expected else "False") == actual)
    if isinstance(expected, bool) or isinstance(actual, bool):
        return expected is actual
    if expected == actual:
        return True
    if (where[0] in QUANTITY_KEYS or where[1] in QUANTITY_MAPS) and \
            isinstance(expected, (str, int, float)) and isinstance(actual, (str, int, float)):
        try:
            return parse_quantity(expected) == parse_quantity(actual)
        except QuantityError:
            return False
    return False


def _join(path: str, key: object) -> str:
    return f"{path}.{key}" if path else str(key)


def _at(path: str) -> str:
    return f"{path}: " if path else ""


def _seconds(seconds: float) -> str:
    return f"{seconds:g}s"
