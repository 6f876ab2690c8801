"""Every memo the library keeps, in one place, so that all of them can be cleared at once.

The models are frozen, so a pure function of them may keep its answers; the hot ones do
(``functools.lru_cache``, bounded).  Each is declared with :func:`memo`, which registers it;
:func:`clear_caches` empties them all: tests use it to show answers do not depend on what was
kept, benchmarks to start cold.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

R = TypeVar("R")

_CACHES: list[functools._lru_cache_wrapper[Any]] = []


def memo(maxsize: int) -> Callable[[Callable[..., R]], functools._lru_cache_wrapper[R]]:
    """``functools.lru_cache(maxsize)``, registered for :func:`clear_caches`."""
    def wrap(fn: Callable[..., R]) -> functools._lru_cache_wrapper[R]:
        cached = functools.lru_cache(maxsize=maxsize)(fn)
        _CACHES.append(cached)
        return cached
    return wrap


def clear_caches() -> None:
    """Empty every memo of the library."""
    for cache in _CACHES:
        cache.cache_clear()


def cache_count() -> int:
    """How many memos are registered (the tests check none is left out)."""
    return len(_CACHES)
