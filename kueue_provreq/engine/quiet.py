"""The quiet-reconcile bookkeeping: which Workload reconciles left nothing to do, and whether a
write wakes them.

A controller that declares what it reads of a Workload (``registry.Controller.reads``, and its
finer ``view``) is woken by a write only when the write changes a part of it (:mod:`~kueue_provreq
.controllers.parts`) that its last quiet pass read.  One representation: per controller and
Workload, a :class:`QuietPass`, the Workload as that pass saw it, with what it read of it asked
of the registry when the first write comes (most quiet passes meet none).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable

from kueue_provreq.api.config import Configuration
from kueue_provreq.api.objects import Key
from kueue_provreq.api.workload import Workload
from kueue_provreq.controllers import registry
from kueue_provreq.controllers.parts import Parts
from kueue_provreq.world import World

_UNSEEN: Hashable = object()
"""A view not computed yet."""


class QuietPass:
    """A reconcile of a Workload that left it nothing to do: the Workload it saw, and, once a
    write asks, the parts it read of it and the controller's view of them."""

    __slots__ = ("seen", "read", "view")

    def __init__(self, seen: Workload) -> None:
        self.seen = seen
        self.read: Parts | None = None
        self.view: Hashable = _UNSEEN

    def still_quiet(self, ctl: registry.Controller, world: World, wl: Workload, diff: Parts,
                    config: Configuration) -> bool:
        """Whether a write that changed ``diff`` of the Workload (now ``wl``) leaves this pass
        quiet: it changed no part the pass read, or nothing of what the controller decides from
        (its ``view``)."""
        read = self.read
        if read is None:
            assert ctl.reads is not None
            read = self.read = ctl.reads(world, self.seen, config)
        if diff.isdisjoint(read):
            return True
        view = ctl.view
        if view is None:
            return False
        if self.view is _UNSEEN:
            self.view = view(self.seen)
        return bool(view(wl) == self.view)


Quiet = dict[Key, QuietPass | None]
"""One controller's quiet passes by Workload key (None: its last pass no longer stands as quiet).
An entry is voided, not removed, until the Workload goes: a Workload's quiet state comes and
goes at every write, and removed and added again the entry would keep the key the write came
with, a new 64-byte tuple each time."""


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
