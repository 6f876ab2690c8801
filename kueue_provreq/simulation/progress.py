"""A progress bar on standard error, only for a person watching a long run.

tqdm draws it: maintained, light, and its ``delay`` shows the bar only once a run has taken
a couple of seconds.  It is imported only when standard error is a terminal and ``--quiet``
was not given, so pipes, files and tests never see it; without the ``sim`` extra there is no
bar (a bar is no result: the run goes on, the results are the same).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

DELAY_SECONDS = 2.0
"""Runs that finish sooner show no bar at all."""


@contextmanager
def progress_bar(total: int, unit: str, quiet: bool = False) -> Iterator[Callable[[int], None] | None]:
    """A callback taking how many of ``total`` are done, or None when no bar is shown."""
    if quiet or not sys.stderr.isatty():
        yield None
        return
    try:
        from tqdm import tqdm
    except ImportError:
        yield None
        return

    with tqdm(total=total, unit=unit, file=sys.stderr, delay=DELAY_SECONDS, leave=False,
              dynamic_ncols=True) as bar:
        def update(done: int) -> None:
            bar.update(done - bar.n)
        yield update
