from decimal import Decimal

import pytest
from kueue_provreq.api.quantity import (
    Quantity,
    QuantityError,
    format_decimal,
    parse_quantity,
)


@pytest.mark.parametrize("text,value", [
    ("1", 1), ("500m", Decimal("0.5")), ("1000m", 1), ("1k", 1000), ("1Ki", 1024),
    ("1Gi", 1024**3), ("1.5Gi", Decimal("1.5") * 1024**3), ("1e3", 1000), ("1E3", 1000),
    ("2e-3", Decimal("0.002")), ("100n", Decimal("0.0000001")), ("5u", Decimal("0.000005")),
    ("1M", 10**6), ("1G", 10**9), ("1T", 10**12), ("1P", 10**15), ("1E", 10**18),
    ("1Ei", 1024**6), (".5", Decimal("0.5")), ("+3", 3), ("-1", -1), ("0", 0), (3, 3), (0.25, Decimal("0.25")),
])
def test_parse(text: str, value: Decimal) -> None:
    assert parse_quantity(text) == Decimal(value)


@pytest.mark.parametrize("text", ["", "1K", "1Zi", "ki", "1ki", "abc", "1 ", " 1", "1.2.3", "1e", "--1", "1mi"])
def test_rejects(text: str) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(text)


def test_rejects_bool() -> None:
    with pytest.raises(QuantityError):
        parse_quantity(True)  # type: ignore[arg-type]


def test_compares_and_hashes_by_value_but_keeps_spelling() -> None:
    a, b = Quantity.parse("1000m"), Quantity.parse("1")
    assert a == b and hash(a) == hash(b)
    assert a.text == "1000m" and b.text == "1"
    assert Quantity.parse("500m") < Quantity.parse("1")
    assert (Quantity.parse("500m") + Quantity.parse("1500m")).text == "2"
    assert (Quantity.parse("1Gi") * 2).value == 2 * 1024**3


def test_format_decimal() -> None:
    assert format_decimal(Decimal("0.5")) == "500m"
    assert format_decimal(Decimal("3")) == "3"
    assert format_decimal(Decimal("0.0005")) == "0.0005"
