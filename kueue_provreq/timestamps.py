"""Times at the edges of the Python API: RFC 3339 text and ``datetime`` into the core's ``Time``.

The core keeps time as whole seconds since the epoch (:data:`kueue_provreq.api.meta.Time`, as
``metav1.Time`` serialises it) and imports no ``datetime``; the places a user hands a time in
(``explain``, ``forecast``, a scenario's clock) accept what the CLI accepts too, and come here to
read it; the core (:class:`~kueue_provreq.controllers.context.Context`, ``Manager.settle``)
takes seconds only, so a Python caller holding text or a ``datetime`` reads it here first.
Whatever is not a time is a :class:`~kueue_provreq.api.meta.TimeError`.

>>> to_time("2024-01-01T00:00:00Z"), to_time(1_704_067_200.9)
(1704067200, 1704067200)
>>> import datetime
>>> to_time(datetime.datetime(2024, 1, 1, 1, tzinfo=datetime.timezone(datetime.timedelta(hours=1))))
1704067200
"""

from __future__ import annotations

import datetime
import math

from kueue_provreq.api.meta import Time, TimeError, TimeLike
from kueue_provreq.manifests.codec import parse_time
from kueue_provreq.manifests.errors import ManifestError


def to_time(value: TimeLike) -> Time:
    """Seconds since the epoch, truncated to whole seconds as ``metav1.Time`` keeps them, from an
    integer or float, an RFC 3339 string, or a timezone-aware ``datetime`` (a naive one names no
    instant, so it is refused)."""
    if isinstance(value, bool):
        raise TimeError(f"expected a time, got {value!r}")
    if isinstance(value, int):
        return Time(value)
    if isinstance(value, float):
        return Time(math.floor(value))
    if isinstance(value, str):
        try:
            return Time(parse_time(value))
        except ManifestError as e:
            raise TimeError(e.reason) from None
    if isinstance(value, datetime.datetime):
        if value.utcoffset() is None:
            raise TimeError(f"{value.isoformat()} has no timezone: give one (datetime.timezone.utc for UTC)")
        return Time(math.floor(value.timestamp()))
    raise TimeError(f"expected seconds since the epoch, an RFC 3339 string or a datetime, got {value!r}")
