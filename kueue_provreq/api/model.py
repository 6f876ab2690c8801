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
  reads attrs classes (:class:`~kueue_provreq.api.quantity.Quantity`, the settings of the edges)
  the same way.  ``tests/test_model.py``
  checks each ``__init__`` and ``__slots__`` against it.
- ``__init__`` takes the fields with the same defaults, positionally or by name;
- ``__eq__`` compares the fields one by one, ``and``-chained, as attrs generates it (comparing
  two tuples costs more), and ``__hash__`` hashes the fields' tuple; the big ones keep it in ``_hash``
  (:data:`HASH_SLOT`, -1 until asked: ``hash`` never answers -1), as ``cache_hash`` did;
- it derives from :class:`Model`, whose ``__repr__`` prints the text attrs printed (the
  documentation shows it) and whose ``__reduce__`` pickles and copies through ``__init__``, so
  that what a class derives when it is built is derived again and the hash cache starts empty.
"""

from __future__ import annotations

import typing
from collections.abc import Mapping
from typing import Any, ClassVar, final

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


class Model:
    """The base of every hand-written model: what reads its ``FIELDS`` alike in each of them.

    ``__eq__``, ``__hash__`` and ``__init__`` stay in each class, written out field by field:
    they run on every write, and a loop over ``FIELDS`` here would cost each of them a Python
    call per field (compiled, too)."""

    __slots__ = ()

    FIELDS: ClassVar[tuple[Field, ...]]

    def __repr__(self) -> str:
        """``Name(field=value, ...)``, as attrs writes it."""
        body = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in self.FIELDS)
        return f"{type(self).__name__}({body})"

    def __reduce__(self) -> tuple[type, tuple[Any, ...]]:
        """Pickle and copy as a call of the class with the fields."""
        return type(self), tuple(getattr(self, f.name) for f in self.FIELDS)
