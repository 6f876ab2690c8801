"""Kubernetes ``resource.Quantity``: parsed once, compared by value.

Follows the Go grammar (``k8s.io/apimachinery/pkg/api/resource``): a signed
decimal number, then either a binary suffix (Ki..Ei), a decimal suffix
(n u m "" k M G T P E) or a decimal exponent (``e3``, ``E-2``).  The two
Python clients disagree with Go (uppercase ``K``, ``Zi``), so this is our own.

>>> Quantity.parse("500m") < Quantity.parse("1")
True
>>> Quantity.parse("1Gi").value
Decimal('1073741824')
>>> Quantity.parse("1e3") == Quantity.parse("1k")
True
"""

from __future__ import annotations

import re
from decimal import Context, Decimal
from typing import Any

import attrs

from kueue_provreq.errors import KueueProvreqError

_CTX = Context(prec=60)
_NUMBER = re.compile(r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(.*)$")
_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_EXPONENT = re.compile(r"^[eE]([+-]?[0-9]+)$")


class QuantityError(KueueProvreqError, ValueError):
    """A string that is not a Kubernetes quantity."""


def parse_quantity(text: str | int | float) -> Decimal:
    """Return the exact value of a quantity string (or a bare JSON number)."""
    if isinstance(text, bool):
        raise QuantityError(f"quantities must be strings or numbers, not {text!r}")
    if isinstance(text, int):
        return Decimal(text)
    if isinstance(text, float):
        return _CTX.create_decimal(repr(text))
    if not isinstance(text, str):
        raise QuantityError(f"quantities must be strings or numbers, not {type(text).__name__}")
    s = text.strip()
    m = _NUMBER.match(s)
    if not m or s != text:
        raise QuantityError(f"quantities must match the regular expression "
                            f"'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$': {text!r}")
    number, suffix = _CTX.create_decimal(m.group(1)), m.group(2)
    if suffix in _BINARY:
        return _CTX.multiply(number, Decimal(1024) ** _BINARY[suffix])
    if suffix in _DECIMAL:
        return number.scaleb(_DECIMAL[suffix], _CTX)
    e = _EXPONENT.match(suffix)
    if e:
        return number.scaleb(int(e.group(1)), _CTX)
    raise QuantityError(f"unable to parse quantity's suffix: {text!r}")


@attrs.frozen(eq=False, repr=False, weakref_slot=False)
class Quantity:
    """A quantity that keeps its original spelling (for lossless write-back)
    and compares, hashes and adds by value (``1000m == 1``)."""

    text: str | int | float
    value: Decimal

    @classmethod
    def parse(cls, text: str | int | float) -> Quantity:
        return cls(text, parse_quantity(text))

    @classmethod
    def of(cls, value: Decimal) -> Quantity:
        return cls(format_decimal(value), value)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Quantity):
            return self.value == other.value
        return NotImplemented

    def __lt__(self, other: Quantity) -> bool:
        return self.value < other.value

    def __le__(self, other: Quantity) -> bool:
        return self.value <= other.value

    def __hash__(self) -> int:
        return hash(self.value)

    def __add__(self, other: Quantity) -> Quantity:
        return Quantity.of(self.value + other.value)

    def __mul__(self, n: int) -> Quantity:
        return Quantity.of(self.value * n)

    def __repr__(self) -> str:
        return f"Quantity({self.text!r})"

    def to_json(self) -> Any:
        return self.text


def format_decimal(value: Decimal) -> str:
    """A canonical-enough spelling of a computed value (milli units when fractional)."""
    if value == value.to_integral_value():
        return str(int(value))
    milli = value * 1000
    if milli == milli.to_integral_value():
        return f"{int(milli)}m"
    return format(value.normalize(), "f")
