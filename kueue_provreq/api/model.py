"""What the hand-written model classes share, and the one way to list any model's fields.

The hot models (those a settle builds on every write: metadata, conditions, workloads) are
plain classes written out by hand rather than ``attrs.define`` classes, so that mypyc can
compile them into native classes (issue 25, item 5): a plain ``@final`` ``__slots__`` class
with its own ``__init__``, ``__eq__`` and ``__hash__`` compiles to one that is built about 3x
and compared 2-12x faster (``benchmarks/bench_model_classes.py``), while an attrs class stays
interpreted and, worse, compiled code compares two of its instances by identity (mypyc's
``translate_eq_cmp`` lowers ``==`` to ``is`` for a class with no ``__eq__`` of its own).

Each such class is written the same way, and behaves as the attrs class it replaces:

- ``FIELDS``, a class-level tuple of :class:`Field`, is the declaration of its fields (name,
  type, default, JSON metadata) in field order.  It is data, not annotations, because a
  compiled class has neither a signature nor annotations to read; the manifest codec, the
  explorer and :func:`~kueue_provreq.api.evolve.evolve` read it through :func:`fields`, which
  reads attrs classes (the cold models stay attrs) the same way.  ``tests/test_model.py``
  checks each ``__init__`` and ``__slots__`` against it.
- ``__init__`` takes the fields with the same defaults, positionally or by name;
- ``__eq__`` compares the fields as one tuple with an object of the very same class (as attrs'
  does), and ``__hash__`` hashes that tuple; the big ones keep their hash in ``_hash``
  (:data:`HASH_SLOT`, -1 until asked: ``hash`` never answers -1), as ``cache_hash`` did;
- ``__repr__`` is :func:`model_repr`, the text attrs printed (the documentation shows it);
- ``__reduce__`` is :func:`model_reduce`: pickling and ``copy`` rebuild through ``__init__``,
  so what a class derives when it is built is derived again and the hash cache starts empty.
"""

from __future__ import annotations

import typing
from collections.abc import Mapping
from typing import Any, final

import attrs

NOTHING: Any = attrs.NOTHING
"""The default of a field that has none (the one attrs uses, so both kinds read alike)."""

HASH_SLOT = "_hash"
"""Where a hand-written model that caches its hash keeps it."""


@final
class Field:
    """One field of a model: what the codec, the explorer and ``evolve`` need to know of it."""

    __slots__ = ("name", "type", "default", "metadata")

    def __init__(self, name: str, type: Any, default: Any = NOTHING,  # noqa: A002 - attrs' name
                 metadata: Mapping[str, Any] | None = None) -> None:
        self.name = name
        self.type = type
        """The type itself (not the annotation's text): ``typing.get_type_hints`` of a field."""
        self.default = default
        self.metadata: Mapping[str, Any] = metadata or {}

    def __repr__(self) -> str:
        return f"Field({self.name!r}, {self.type!r}, default={self.default!r})"


def fields(cls: type) -> tuple[Field, ...]:
    """The fields of a model class, hand-written (its ``FIELDS``) or attrs (its init fields)."""
    declared: tuple[Field, ...] | None = getattr(cls, "FIELDS", None)
    if declared is not None:
        return declared
    return _attrs_fields(cls)


_ATTRS_FIELDS: dict[type, tuple[Field, ...]] = {}
"""Per attrs class, its fields read once (a class's fields never change)."""


def _attrs_fields(cls: type) -> tuple[Field, ...]:
    found = _ATTRS_FIELDS.get(cls)
    if found is None:
        hints = typing.get_type_hints(cls)
        found = _ATTRS_FIELDS[cls] = tuple(Field(a.name, hints[a.name], a.default, a.metadata)
                                           for a in attrs.fields(cls) if a.init)
    return found


def is_model(cls: type) -> bool:
    """Whether ``cls`` is a model class (what ``attrs.has`` answered when every model was attrs)."""
    return isinstance(getattr(cls, "FIELDS", None), tuple) or attrs.has(cls)


def model_repr(obj: Any) -> str:
    """``Name(field=value, ...)``, as attrs writes it."""
    body = ", ".join(f"{f.name}={getattr(obj, f.name)!r}" for f in obj.FIELDS)
    return f"{type(obj).__name__}({body})"


def model_reduce(obj: Any) -> tuple[type, tuple[Any, ...]]:
    """Pickle and copy ``obj`` as a call of its class with its fields."""
    return type(obj), tuple(getattr(obj, f.name) for f in obj.FIELDS)
