"""Hashable, immutable containers for the JSON-shaped parts of Kubernetes objects.

Models are immutable value classes (:mod:`~kueue_provreq.api.immutable` says why they are
not declared frozen) and must stay hashable, because the explorer stores whole worlds in a
visited set.  Pod templates and fields the library does not model are kept as frozen JSON:
``FrozenMap`` for objects, ``tuple`` for arrays.
"""

from __future__ import annotations

from collections.abc import ItemsView, Iterator, KeysView, Mapping, ValuesView
from typing import Any, TypeVar, overload

K = TypeVar("K")
V = TypeVar("V")
T = TypeVar("T")


class FrozenMap(Mapping[K, V]):
    """An immutable, hashable mapping that keeps insertion order."""

    __slots__ = ("_d", "_h")

    def __init__(self, items: Mapping[K, V] | None = None) -> None:
        self._d: dict[K, V] = dict(items) if items else {}
        self._h: int | None = None

    def __getitem__(self, key: K) -> V:
        return self._d[key]

    def __iter__(self) -> Iterator[K]:
        return iter(self._d)

    def __len__(self) -> int:
        return len(self._d)

    def __contains__(self, key: object) -> bool:
        return key in self._d

    # The Mapping mixins go through ``__getitem__`` and ``try/except`` in Python; every
    # controller reads FrozenMaps on its hot path, so these delegate to the dict directly.
    @overload
    def get(self, key: K, /) -> V | None: ...
    @overload
    def get(self, key: K, default: V | T, /) -> V | T: ...
    def get(self, key: K, default: Any = None, /) -> Any:
        return self._d.get(key, default)

    def keys(self) -> KeysView[K]:
        return self._d.keys()

    def values(self) -> ValuesView[V]:
        return self._d.values()

    def items(self) -> ItemsView[K, V]:
        return self._d.items()

    def __hash__(self) -> int:
        if self._h is None:
            self._h = hash(frozenset(self._d.items()))
        return self._h

    def __eq__(self, other: object) -> bool:
        if other is self:
            return True
        if isinstance(other, FrozenMap):
            return self._d == other._d
        if isinstance(other, Mapping):
            return self._d == dict(other)
        return NotImplemented

    def __repr__(self) -> str:
        return f"FrozenMap({self._d!r})"

    def set(self, key: K, value: V) -> FrozenMap[K, V]:
        d = dict(self._d)
        d[key] = value
        return FrozenMap(d)

    def without(self, key: K) -> FrozenMap[K, V]:
        if key not in self._d:
            return self
        d = dict(self._d)
        del d[key]
        return FrozenMap(d)

    def merged(self, other: Mapping[K, V]) -> FrozenMap[K, V]:
        if not other:
            return self
        d = dict(self._d)
        d.update(other)
        return FrozenMap(d)


EMPTY: FrozenMap[Any, Any] = FrozenMap()


def freeze(value: Any) -> Any:
    """Turn JSON-shaped data (dicts, lists, scalars) into FrozenMap/tuple form."""
    if isinstance(value, FrozenMap):
        return value
    if isinstance(value, Mapping):
        return FrozenMap({k: freeze(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v) for v in value)
    return value


@overload
def thaw(value: FrozenMap[Any, Any]) -> dict[str, Any]: ...
@overload
def thaw(value: Any) -> Any: ...
def thaw(value: Any) -> Any:
    """The inverse of :func:`freeze`: plain dicts and lists, ready for YAML or JSON."""
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [thaw(v) for v in value]
    return value
