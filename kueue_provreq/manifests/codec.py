"""A codec between JSON-shaped data and the frozen models, driven by their fields' types.

Each model field maps to a camelCase JSON key derived from its name (a field's
``metadata={"json": ...}`` overrides it).  The decoding and encoding plan of a
class is built once from its resolved type hints and cached, so reading a
large scenario costs one dictionary walk per object.

Rules, chosen to round-trip what ``kubectl get -o yaml`` shows:

* JSON keys a class does not model go to its ``extra`` field and are written
  back unchanged; a class without ``extra`` rejects them (nothing is dropped
  silently).
* ``null`` means absent (the API server prunes nulls before defaulting).
* On encoding, ``None`` is omitted, and so are empty strings, lists and
  objects of non-optional fields (Go's ``omitempty``).  An optional field
  (``X | None``) that holds an empty value is written, because the model uses
  ``None`` for "absent" there (``ProvisioningRequest.spec.parameters: {}``).
* ``Time`` is an RFC 3339 string truncated to whole seconds; ``Duration`` is a
  Go duration string; a ``Quantity`` keeps its original spelling.
"""

from __future__ import annotations

import calendar
import re
import time
import types
import typing
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any, TypeVar

import attrs

from kueue_provreq.api.frozen import FrozenMap, freeze, thaw
from kueue_provreq.api.meta import Duration, Time
from kueue_provreq.api.model import NOTHING, fields, is_model
from kueue_provreq.api.quantity import Quantity, QuantityError
from kueue_provreq.manifests import schema
from kueue_provreq.manifests.errors import ManifestError

T = TypeVar("T")
Decoder = Callable[[Any, str], Any]
Encoder = Callable[[Any], Any]

# --- durations (Go time.ParseDuration / Duration.String) ----------------------

_NS_PER_UNIT = {"ns": 1, "us": 10**3, "µs": 10**3, "μs": 10**3, "ms": 10**6,
                "s": 10**9, "m": 60 * 10**9, "h": 3600 * 10**9}
_DURATION_PART = re.compile(r"([0-9]*(?:\.[0-9]*)?)([^0-9.]*)")
_MAX_NS = 2**63 - 1


def parse_duration(text: str) -> float:
    """Go's ``time.ParseDuration``, in seconds.

    >>> parse_duration("1m30s"), parse_duration("300ms"), parse_duration("-1.5h")
    (90.0, 0.3, -5400.0)
    """
    body = text[1:] if text[:1] in ("+", "-") and text else text
    if body == "0":
        return 0.0
    if not body:
        raise ManifestError(f"invalid duration {text!r}")
    total = Decimal(0)
    pos = 0
    while pos < len(body):
        m = _DURATION_PART.match(body, pos)
        assert m is not None  # the pattern matches the empty string
        number, unit = m.groups()
        if number in ("", "."):
            raise ManifestError(f"invalid duration {text!r}")
        if not unit:
            raise ManifestError(f"missing unit in duration {text!r}")
        if unit not in _NS_PER_UNIT:
            raise ManifestError(f"unknown unit {unit!r} in duration {text!r} "
                             f"(use ns, us, ms, s, m or h)")
        total += Decimal(number) * _NS_PER_UNIT[unit]
        pos = m.end()
    ns = int(total)
    if ns > _MAX_NS:
        raise ManifestError(f"invalid duration {text!r}: out of range")
    return (-ns if text.startswith("-") else ns) / 1e9


def format_duration(seconds: float) -> str:
    """Go's ``Duration.String()``.

    >>> format_duration(1800), format_duration(90.5), format_duration(0.3), format_duration(0)
    ('30m0s', '1m30.5s', '300ms', '0s')
    """
    ns = int((Decimal(repr(seconds)) * 10**9).to_integral_value())
    sign, u = ("-" if ns < 0 else ""), abs(ns)
    if u == 0:
        return "0s"
    if u < 10**3:
        return f"{sign}{u}ns"
    if u < 10**6:
        return f"{sign}{_decimal(u, 3)}µs"
    if u < 10**9:
        return f"{sign}{_decimal(u, 6)}ms"
    text = _decimal(u % (60 * 10**9), 9) + "s"
    minutes = u // (60 * 10**9)
    if minutes:
        hours, minutes = divmod(minutes, 60)
        text = f"{minutes}m{text}"
        if hours:
            text = f"{hours}h{text}"
    return sign + text


def _decimal(value: int, digits: int) -> str:
    whole, fraction = divmod(value, 10**digits)
    if not fraction:
        return str(whole)
    return f"{whole}.{str(fraction).zfill(digits).rstrip('0')}"


# --- times (metav1.Time: RFC 3339, whole seconds) -------------------------------

_RFC3339 = re.compile(r"(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.\d+)?"
                      r"(?:[Zz]|([+-])(\d{2}):(\d{2}))")


def parse_time(text: str) -> int:
    """Seconds since the epoch; fractions are truncated, as ``metav1.Time`` does.

    >>> parse_time("2024-01-01T00:00:00Z"), parse_time("2024-01-01T02:00:00.9+02:00")
    (1704067200, 1704067200)
    """
    m = _RFC3339.fullmatch(text)
    if m is None:
        raise ManifestError(f"expected an RFC 3339 time like 2024-01-01T00:00:00Z, got {text!r}")
    y, mo, d, h, mi, s = (int(g) for g in m.groups()[:6])
    if not (y >= 1 and 1 <= mo <= 12 and 1 <= d <= calendar.monthrange(y, mo)[1]
            and h < 24 and mi < 60 and s < 60):
        raise ManifestError(f"time out of range: {text!r}")
    seconds = calendar.timegm((y, mo, d, h, mi, s, 0, 0, 0))
    if m.group(7):
        offset = int(m.group(8)) * 3600 + int(m.group(9)) * 60
        seconds += -offset if m.group(7) == "+" else offset
    if not MIN_TIME <= seconds <= MAX_TIME:
        raise ManifestError(f"{text!r} is outside RFC 3339's four-digit years (in UTC, 0001 to 9999)")
    return seconds


#: The first and last instants RFC 3339 can write (``0001-01-01T00:00:00Z``,
#: ``9999-12-31T23:59:59Z``): a time beyond is one that no reader of the output could parse.
MIN_TIME = calendar.timegm((1, 1, 1, 0, 0, 0, 0, 0, 0))
MAX_TIME = calendar.timegm((9999, 12, 31, 23, 59, 59, 0, 0, 0))


def format_time(seconds: int) -> str:
    """``2024-01-01T00:00:00Z``, as the API server writes times."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


# --- errors -----------------------------------------------------------------------

def describe(value: Any) -> str:
    """A short, JSON-flavoured rendering of a bad value for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, (list, tuple)):
        return "a list"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _expected(what: str, value: Any, path: str) -> ManifestError:
    return ManifestError(f"expected {what}, got {describe(value)}", path=path)


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


# --- scalar converters ----------------------------------------------------------------

def _dec_str(v: Any, path: str) -> str:
    if isinstance(v, str):
        return v
    raise _expected("a string", v, path)


def _dec_int(v: Any, path: str) -> int:
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    raise _expected("an integer", v, path)


def _dec_bool(v: Any, path: str) -> bool:
    if isinstance(v, bool):
        return v
    raise _expected("a boolean", v, path)


def _dec_float(v: Any, path: str) -> float:
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    raise _expected("a number", v, path)


def _dec_json(v: Any, path: str) -> Any:
    return freeze(v)


def _parsed(parse: Callable[[str], T], what: str, v: Any, path: str) -> T:
    """A string field with its own syntax: a type error or a parse error, both at ``path``."""
    if not isinstance(v, str):
        raise _expected(what, v, path)
    try:
        return parse(v)
    except ValueError as e:
        raise ManifestError(str(e), path=path) from None


def _dec_time(v: Any, path: str) -> int:
    return _parsed(parse_time, "an RFC 3339 time string", v, path)


def _dec_duration(v: Any, path: str) -> float:
    return _parsed(parse_duration, "a duration string like 1m30s", v, path)


def _dec_quantity(v: Any, path: str) -> Quantity:
    try:
        return Quantity.parse(v)
    except QuantityError as e:
        raise ManifestError(str(e), path=path) from None


def _identity(v: Any) -> Any:
    return v


def _enc_quantity(q: Quantity) -> Any:
    return q.to_json()


_SCALARS: dict[Any, tuple[Decoder, Encoder]] = {
    str: (_dec_str, _identity),
    int: (_dec_int, _identity),
    bool: (_dec_bool, _identity),
    float: (_dec_float, _identity),
    Any: (_dec_json, thaw),
    Time: (_dec_time, format_time),
    Duration: (_dec_duration, format_duration),
    Quantity: (_dec_quantity, _enc_quantity),
}


# --- composite converters ---------------------------------------------------------------

def _optional_of(tp: Any) -> Any:
    """``X`` for ``X | None``, else ``None``."""
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        inner = [a for a in args if a is not type(None)]
        if len(args) == 2 and len(inner) == 1:
            return inner[0]
        raise TypeError(f"unsupported union {tp!r}: only X | None is")
    return None


_CONVERTERS: dict[Any, tuple[Decoder, Encoder]] = {}


def _converter(tp: Any) -> tuple[Decoder, Encoder]:
    found = _CONVERTERS.get(tp)
    if found is None:
        found = _CONVERTERS[tp] = _build_converter(tp)
    return found


def _build_converter(tp: Any) -> tuple[Decoder, Encoder]:
    if tp in _SCALARS:
        return _SCALARS[tp]
    inner = _optional_of(tp)
    if inner is not None:
        dec_inner, enc_inner = _converter(inner)
        return ((lambda v, path: None if v is None else dec_inner(v, path)),
                (lambda v: None if v is None else enc_inner(v)))
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        dec_item, enc_item = _converter(args[0])

        def dec_tuple(v: Any, path: str) -> tuple[Any, ...]:
            if not isinstance(v, (list, tuple)):
                raise _expected("a list", v, path)
            return tuple(dec_item(x, f"{path}[{i}]") for i, x in enumerate(v))

        return dec_tuple, (lambda v: [enc_item(x) for x in v])
    if origin is frozenset and len(args) == 1:
        dec_member, enc_member = _converter(args[0])

        def dec_set(v: Any, path: str) -> frozenset[Any]:
            if not isinstance(v, (list, tuple)):
                raise _expected("a list", v, path)
            return frozenset(dec_member(x, f"{path}[{i}]") for i, x in enumerate(v))

        # sorted: a set has no order, and the same set must always be written the same way
        return dec_set, (lambda v: sorted(enc_member(x) for x in v))
    if origin is FrozenMap and len(args) == 2 and args[0] is str:
        dec_value, enc_value = _converter(args[1])

        def dec_map(v: Any, path: str) -> FrozenMap[str, Any]:
            if not isinstance(v, Mapping):
                raise _expected("an object", v, path)
            out = {}
            for k, x in v.items():
                if not isinstance(k, str):
                    raise ManifestError(f"keys must be strings, got {describe(k)}", path=path)
                out[k] = dec_value(x, f"{path}[{k}]")
            return FrozenMap(out)

        return dec_map, (lambda v: {k: enc_value(x) for k, x in v.items()})
    if isinstance(tp, type) and is_model(tp):
        cls = tp
        return ((lambda v, path: _decode_object(_plan(cls), v, path)),
                (lambda v: _encode_object(_plan(cls), v)))
    raise TypeError(f"the manifest codec has no rule for {tp!r}")


# --- model classes ---------------------------------------------------------------------

@attrs.frozen
class _Field:
    name: str
    key: str
    decode: Decoder
    encode: Encoder
    required: bool
    optional: bool
    """``X | None``: ``None`` is absence, so present empty values are kept."""
    omitempty: bool


@attrs.frozen
class _Plan:
    cls: type
    fields: tuple[_Field, ...]
    by_key: Mapping[str, _Field]
    has_extra: bool


_PLANS: dict[type, _Plan] = {}


def _camel(name: str) -> str:
    """``pod_template_ref`` -> ``podTemplateRef``."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _plan(cls: type) -> _Plan:
    plan = _PLANS.get(cls)
    if plan is None:
        plan = _PLANS[cls] = _build_plan(cls)
    return plan


def _build_plan(cls: type) -> _Plan:
    required = schema.REQUIRED.get(cls, ())
    always_written = schema.ALWAYS_WRITTEN.get(cls, ())
    planned: list[_Field] = []
    has_extra = False
    for a in fields(cls):
        if a.name == "extra":
            has_extra = True
            continue
        key = a.metadata.get("json", _camel(a.name))
        dec, enc = _converter(a.type)
        is_required = a.default is NOTHING or key in required
        planned.append(_Field(a.name, key, dec, enc, required=is_required,
                             optional=_optional_of(a.type) is not None,
                             omitempty=not is_required and key not in always_written))
    return _Plan(cls, tuple(planned), {f.key: f for f in planned}, has_extra)


def _is_empty(encoded: Any) -> bool:
    return isinstance(encoded, (str, list, dict)) and not encoded


def _decode_object(plan: _Plan, data: Any, path: str) -> Any:
    if not isinstance(data, Mapping):
        raise _expected("an object", data, path)
    kwargs: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for key, value in data.items():
        f = plan.by_key.get(key)
        if f is None:
            if not plan.has_extra or not isinstance(key, str):
                known = ", ".join(plan.by_key)
                raise ManifestError(f"unknown field (known: {known})", path=_join(path, str(key)))
            extra[key] = freeze(value)
        elif value is not None or f.optional:
            kwargs[f.name] = f.decode(value, _join(path, key))
    for f in plan.fields:
        if f.required and (f.name not in kwargs or kwargs[f.name] in ("", ())):
            raise ManifestError("required value", path=_join(path, f.key))
    if extra:
        kwargs["extra"] = FrozenMap(extra)
    return plan.cls(**kwargs)


def _encode_object(plan: _Plan, obj: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in plan.fields:
        value = getattr(obj, f.name)
        if value is None:
            continue
        encoded = f.encode(value)
        if f.omitempty and not f.optional and _is_empty(encoded):
            continue
        out[f.key] = encoded
    if plan.has_extra:
        for key, value in obj.extra.items():
            out.setdefault(key, thaw(value))
    return out


# --- public entry points -------------------------------------------------------------

def decode(cls: type[T], data: Any, path: str = "") -> T:
    """Read ``data`` (plain JSON: dicts, lists, scalars) as ``cls``; ``path`` prefixes
    error paths when ``data`` is a fragment of a larger object."""
    result: T = _converter(cls)[0](data, path)
    return result


def encode(obj: Any) -> Any:
    """Plain JSON for a model (or a Quantity, FrozenMap, tuple or scalar).

    Bare ``Time``/``Duration`` values are plain numbers at run time, so they
    encode as such; inside a model they are written as strings.
    """
    if is_model(type(obj)):
        return _encode_object(_plan(type(obj)), obj)
    if isinstance(obj, Quantity):
        return obj.to_json()
    return thaw(obj)
