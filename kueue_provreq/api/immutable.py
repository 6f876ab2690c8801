"""Why the models are not frozen classes, and what keeps them immutable.

The models are values: equal and hashed by their fields (the explorer keeps whole worlds in a
visited set, and the big ones keep their hash), never changed once built; every write builds a
new one (the constructors, :func:`~kueue_provreq.api.evolve.evolve`).  They are hand-written slots
classes (:mod:`~kueue_provreq.api.model` says why), not frozen ones: a frozen class's ``__init__``
sets each field through ``object.__setattr__``, which makes a model about four times as dear to
build, and a settle builds a dozen per write (as plain slotted classes a settled workload cost
1.135x fewer instructions than as frozen attrs ones, ``benchmarks/bench_ab.py --instructions``,
issue 25).

They have no ``__weakref__`` slot: nothing takes a weak reference to a model, and a settled
world holds some 25 of them per workload (about 200 bytes per settled workload,
``benchmarks/bench_core.py``).

Immutable by convention, then, and checked: under :func:`guard`, assigning a field that is
already set raises ``attrs.exceptions.FrozenInstanceError`` as a frozen class would.  The test
suite runs with it in force (``tests/conftest.py``), so a write that changes a model in place
fails every test that reaches it.
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from kueue_provreq.api.model import HASH_SLOT


def _refuse_reassignment(self: object, name: str, value: object) -> None:
    if name != HASH_SLOT:  # the cached hash: set on construction, then once more when first asked
        try:
            object.__getattribute__(self, name)
        except AttributeError:
            pass  # being built: the field is not set yet
        else:
            raise attrs.exceptions.FrozenInstanceError  # as a frozen class raises it
    object.__setattr__(self, name, value)


def guard(classes: Iterable[type]) -> None:
    """Make each class refuse to change a field once set (its ``__init__`` then goes through a
    Python-level ``__setattr__``: for tests, not for speed)."""
    for cls in classes:
        cls.__setattr__ = _refuse_reassignment  # type: ignore[assignment]
