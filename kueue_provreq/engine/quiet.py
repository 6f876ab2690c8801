"""The quiet-reconcile bookkeeping: which Workload reconciles left nothing to do, and whether a
write wakes them.

A controller that declares what it reads of a Workload (``registry.Controller.reads``, and its
finer ``view``) is woken by a write only when the write changes a part of it (:mod:`~kueue_provreq
.controllers.parts`) that its last quiet pass read.  One representation: per controller and
Workload, the Workload as that quiet pass saw it (None once the pass no longer stands as
quiet).  What the pass read of it is the registry's answer for that Workload, asked when the
first write comes (most quiet passes meet none) and kept beside it while it is the one seen.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable

from kueue_provreq.api.config import Configuration
from kueue_provreq.api.objects import Key
from kueue_provreq.api.workload import Workload
from kueue_provreq.controllers import registry
from kueue_provreq.controllers.parts import Parts
from kueue_provreq.world import World

Quiet = dict[Key, Workload | None]
"""One controller's quiet passes: Workload key -> the Workload its last pass left with nothing to
do (or the version that replaced it by a write that left the pass quiet), or None.  An entry is voided, not removed, until the Workload goes: a Workload's quiet state
comes and goes at every write, and removed and added again the entry would keep the key the write
came with, a new 64-byte tuple each time."""

Read = tuple[Workload, Parts, Hashable]
"""What a quiet pass read of the Workload it saw: the Workload standing for the pass (the one
in :data:`Quiet`), the parts, and the controller's view of them (None without a view); kept
while that pass stands."""


class QuietBook:
    """The quiet passes of every controller with a watch predicate, what the registry answered
    each read, and the configuration they were made under (another one voids them)."""

    __slots__ = ("of", "read", "config")

    def __init__(self, controllers: Iterable[registry.Controller]) -> None:
        self.of: dict[str, Quiet] = {ctl.name: {} for ctl in controllers if ctl.reads is not None}
        self.read: dict[str, dict[Key, Read]] = {name: {} for name in self.of}
        self.config: Configuration | None = None

    def clear(self) -> None:
        for quiet in self.of.values():
            quiet.clear()
        for read in self.read.values():
            read.clear()

    def forget(self, name: str, key: Key) -> None:
        """The Workload is gone: what was kept of it would be kept forever."""
        self.of[name].pop(key, None)
        self.read[name].pop(key, None)

    def still_quiet(self, ctl: registry.Controller, world: World, key: Key, seen: Workload, wl: Workload,
                    diff: Parts, config: Configuration) -> bool:
        """Whether a write that changed ``diff`` of the Workload (now ``wl``) leaves the quiet
        pass that saw ``seen`` quiet: it changed no part that pass read, or nothing of what the
        controller decides from (its ``view``).  If so, ``wl`` stands for the pass from then on,
        with what the pass read of ``seen`` (the caller enters it): an old version kept only to
        be told apart would hold a whole status per controller and Workload."""
        kept = self.read[ctl.name]
        read = kept.get(key)
        if read is None or read[0] is not seen:
            assert ctl.reads is not None
            read = kept[key] = (seen, ctl.reads(world, seen, config), None if ctl.view is None else ctl.view(seen))
        if diff & read[1] and (ctl.view is None or ctl.view(wl) != read[2]):
            return False
        kept[key] = (wl, read[1], read[2])  # the caller's ``quiet[key] = wl``: ``seen`` can go
        return True


def unquiet(quiet: Quiet, read: dict[Key, Read], key: Key) -> None:
    """``key``'s pass no longer stands as quiet (and what it read is no longer kept)."""
    if quiet.get(key) is not None:
        quiet[key] = None
        read.pop(key, None)
