"""``evolve`` and a fast ``==`` for the frozen models, hand-written or attrs.

``attrs.evolve`` works on attrs classes only, and looks the class's fields up and builds a
kwargs dict on every call, which costs several microseconds; controllers evolve objects on every
status write, so that was a large share of a reconcile.  Here each class gets, once, a generated
function that calls its ``__init__`` with every field (:func:`~kueue_provreq.api.model.fields`)
either taken from ``changes`` or read from the instance.  Going through ``__init__`` (rather
than copying slots) keeps the per-instance hash cache fresh and what a class derives when it is
built derived again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import attrs

from kueue_provreq.api.model import fields, is_model

T = TypeVar("T")

_Copier = Callable[[Any, dict[str, Any]], Any]

_COPIERS: dict[type, _Copier] = {}
"""Per model class, ``copier(inst, changes)``: the new instance; pops what it used from ``changes``."""


def _copier(cls: type) -> _Copier:
    """Generate ``cls(field=changes.pop("field", inst.field), ...)`` for the fields."""
    args = ", ".join(f"{f.name}=changes.pop({f.name!r}, inst.{f.name})" for f in fields(cls))
    namespace: dict[str, Any] = {"cls": cls}
    exec(f"def copier(inst, changes):\n    return cls({args})\n", namespace)
    copier: _Copier = namespace["copier"]
    return copier


def evolve(inst: T, **changes: Any) -> T:
    """``attrs.evolve(inst, **changes)``, the same result and the same TypeError on an
    unknown field, at little more than the cost of ``__init__``."""
    cls = type(inst)
    copier = _COPIERS.get(cls)
    if copier is None:
        copier = _COPIERS[cls] = _copier(cls)
    new: T = copier(inst, changes)
    if changes:
        raise TypeError(f"{cls.__name__} has no field(s) {', '.join(sorted(changes))}")
    return new


_EQ_FIELDS: dict[type, tuple[str, ...] | None] = {}
"""Per class, the fields its ``__eq__`` compares (attrs-generated, or a hand-written model's,
:mod:`~kueue_provreq.api.model`); None for any other class."""


def _eq_fields(cls: type) -> tuple[str, ...] | None:
    if is_model(cls) and not attrs.has(cls):
        return tuple(f.name for f in fields(cls))
    eq = getattr(cls.__eq__, "__code__", None)
    if not attrs.has(cls) or eq is None or not eq.co_filename.startswith("<attrs generated"):
        return None
    return tuple(f.name for f in attrs.fields(cls) if f.eq)


def same(a: object, b: object) -> bool:
    """``a == b``, field by field with an identity test first for models.

    A model's ``__eq__`` (attrs' generated one, or a hand-written one written alike) compares
    every field with ``==`` even when both sides hold the very same (frozen) object; an updated
    object shares most of its fields with the old one, so this answers "did the update change anything" without walking the shared parts.
    """
    if a is b:
        return True
    cls = type(a)
    if type(b) is not cls:
        return bool(a == b)
    if cls in _EQ_FIELDS:
        names = _EQ_FIELDS[cls]
    else:
        names = _EQ_FIELDS[cls] = _eq_fields(cls)
    if names is None:
        return bool(a == b)
    for name in names:
        x, y = getattr(a, name), getattr(b, name)
        if x is not y and x != y:
            return False
    return True
