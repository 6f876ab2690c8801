"""What a reconcile gets besides the world: the time, the configuration and a source of jitter."""

from __future__ import annotations

import math
from collections.abc import Callable

import attrs

from kueue_provreq.api.config import Configuration
from kueue_provreq.api.meta import Time, TimeError


def no_jitter() -> float:
    """A jitter source that always draws 0: backoffs are exactly their nominal value."""
    return 0.0


def seconds(value: float) -> Time:
    """``value``, seconds since the epoch, as the core's ``Time`` (truncated to whole seconds, as
    ``metav1.Time`` keeps them).  The core reads no text and no ``datetime``: the edges do
    (:func:`kueue_provreq.timestamps.to_time`), so the core never imports ``datetime`` nor the
    manifests' time grammar."""
    if type(value) is int:
        return Time(value)
    if isinstance(value, float) and math.isfinite(value):
        return Time(math.floor(value))
    raise TimeError(f"expected seconds since the epoch, got {value!r} "
                    "(kueue_provreq.timestamps.to_time reads RFC 3339 text and datetimes)")


@attrs.frozen
class Context:
    now: Time = attrs.field(converter=seconds)
    """Seconds since the epoch (a float is truncated); read text or a ``datetime`` with
    :func:`kueue_provreq.timestamps.to_time`."""
    config: Configuration = Configuration()
    jitter: Callable[[], float] = no_jitter
    """Draws a float in [0, 1); the core never imports ``random``."""
