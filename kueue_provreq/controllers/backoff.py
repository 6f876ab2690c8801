"""Exponential backoff exactly as Kueue computes it (``pkg/util/wait`` over apimachinery's
``wait.Backoff`` with factor 2 and jitter 0.0001).

Closed form, for attempt ``n`` (1-based): ``d(1) = base`` (never capped),
``d(n) = min(base * 2**(n-1), max)``; the result is ``d * (1 + U * 1e-4)``
with ``U`` drawn from the jitter source.  The docs' ``min(base^n, max)`` is
wrong; see docs/differences.
"""

from __future__ import annotations

from collections.abc import Callable

from kueue_provreq.api.memo import memo
from kueue_provreq.controllers.context import no_jitter

NS = 1_000_000_000
_UNCAPPED = (2**63 - 1) // 2
JITTER_FACTOR = 0.0001


def wait_time_ns(base_s: int, max_s: int, n: int, draw: Callable[[], float]) -> int:
    """``wait.NewBackoff(base, max, 2, 0.0001).WaitTime(n)`` in nanoseconds."""
    if n <= 0:
        return 0
    cap = max_s * NS if max_s > 0 else _UNCAPPED
    d = base_s * NS
    capped = False
    ret = 0
    for _ in range(n):
        if not capped:
            nxt = int(float(d) * 2.0)
            if nxt > cap:
                nxt, capped = cap, True
            ret = d + int(draw() * JITTER_FACTOR * d)
            d = nxt
        else:
            ret = d + int(draw() * JITTER_FACTOR * d)
        if ret == cap:
            break
    return ret


def check_requeue_after_seconds(retry_count: int | None, base_s: int, max_s: int,
                                draw: Callable[[], float]) -> int:
    """``UpdateAdmissionCheckRequeueState``: the delay of the next attempt, truncated to seconds."""
    if draw is no_jitter:
        return _nominal_ns(base_s, max_s, (retry_count or 0) + 1) // NS
    return wait_time_ns(base_s, max_s, (retry_count or 0) + 1, draw) // NS


@memo(1024)
def _nominal_ns(base_s: int, max_s: int, n: int) -> int:
    """:func:`wait_time_ns` without jitter, which is a function of its arguments alone."""
    return wait_time_ns(base_s, max_s, n, no_jitter)


def nominal_delay_seconds(attempt: int, base_s: int, max_s: int) -> int:
    """``min(base * 2**(n-1), max)`` with the first step uncapped: the delay without jitter.

    >>> [nominal_delay_seconds(n, 60, 1800) for n in (1, 2, 3, 4, 5, 6, 7)]
    [60, 120, 240, 480, 960, 1800, 1800]
    """
    return _nominal_ns(base_s, max_s, attempt) // NS
