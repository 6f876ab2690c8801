"""What a reconcile gets besides the world: the time, the configuration and a source of jitter."""

from __future__ import annotations

from collections.abc import Callable

import attrs

from kueue_provreq.api.config import Configuration
from kueue_provreq.api.meta import Time, TimeLike


def no_jitter() -> float:
    """A jitter source that always draws 0: backoffs are exactly their nominal value."""
    return 0.0


def as_time(value: TimeLike) -> Time:
    """``value`` as the core's ``Time``.  Seconds pass through; text and ``datetime`` are read by
    the edge module :mod:`kueue_provreq.timestamps`, imported only then, so that the core itself
    never imports ``datetime``."""
    if type(value) is int:
        return Time(value)
    from kueue_provreq.timestamps import to_time
    return to_time(value)


@attrs.frozen
class Context:
    now: Time = attrs.field(converter=as_time)
    """Seconds since the epoch; RFC 3339 text and ``datetime`` are accepted too."""
    config: Configuration = Configuration()
    jitter: Callable[[], float] = no_jitter
    """Draws a float in [0, 1); the core never imports ``random``."""
