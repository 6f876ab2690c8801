"""What a reconcile gets besides the world: the time, the configuration and a source of jitter."""

from __future__ import annotations

from collections.abc import Callable

import attrs

from kueue_provreq.api.config import Configuration
from kueue_provreq.api.meta import Time


def no_jitter() -> float:
    """A jitter source that always draws 0: backoffs are exactly their nominal value."""
    return 0.0


@attrs.frozen
class Context:
    now: Time
    config: Configuration = Configuration()
    jitter: Callable[[], float] = no_jitter
    """Draws a float in [0, 1); the core never imports ``random``."""
