"""The quiet-reconcile bookkeeping: which Workload reconciles left nothing to do, and whether a
write wakes them.

A controller that declares what it reads of a Workload (``registry.Controller.reads``, and its
finer ``view``) is woken by a write only when the write changes a part of it (:mod:`~kueue_provreq
.controllers.parts`) that its last quiet pass read.  One representation: per controller and
Workload, the Workload as that quiet pass saw it (None once a pass no longer stands as quiet);
what it read of it is asked of the registry when a write comes, from that Workload.
"""

from __future__ import annotations

from collections.abc import Iterable

from kueue_provreq.api.config import Configuration
from kueue_provreq.api.objects import Key
from kueue_provreq.api.workload import Workload
from kueue_provreq.controllers import registry
from kueue_provreq.controllers.parts import Parts
from kueue_provreq.world import World

Quiet = dict[Key, Workload | None]
"""One controller's quiet passes: Workload key -> the Workload its last pass left with nothing to
do, or None.  An entry is voided, not removed, until the Workload goes: a Workload's quiet state
comes and goes at every write, and removed and added again the entry would keep the key the write
came with, a new 64-byte tuple each time."""


class QuietBook:
    """The quiet passes of every controller with a watch predicate, and the configuration they
    were made under (another one voids them)."""

    __slots__ = ("of", "config")

    def __init__(self, controllers: Iterable[registry.Controller]) -> None:
        self.of: dict[str, Quiet] = {ctl.name: {} for ctl in controllers if ctl.reads is not None}
        self.config: Configuration | None = None

    def clear(self) -> None:
        for quiet in self.of.values():
            quiet.clear()


def unquiet(quiet: Quiet, key: Key) -> None:
    """``key``'s pass no longer stands as quiet."""
    if quiet.get(key) is not None:
        quiet[key] = None


def still_quiet(ctl: registry.Controller, world: World, last: Workload, wl: Workload, diff: Parts,
                config: Configuration) -> bool:
    """Whether a write that changed ``diff`` of the Workload (now ``wl``) leaves the quiet pass
    that saw ``last`` quiet: it changed no part that pass read, or none of what the controller
    decides from (its ``view``)."""
    assert ctl.reads is not None
    if diff.isdisjoint(ctl.reads(world, last, config)):
        return True
    view = ctl.view
    return view is not None and view(wl) == view(last)
