"""The quiet-reconcile bookkeeping: which Workload reconciles left nothing to do, and what they
read (the routing, :meth:`~.routing.Router.on_change`, asks whether a write wakes them).

A controller that declares what it reads of a Workload (``registry.Controller.reads``, and its
finer ``view``) is woken by a write only when the write changes a part of it (:mod:`~kueue_provreq
.controllers.parts`) that its last quiet pass read.  One representation: per controller and
Workload, the Workload as that quiet pass saw it (None once the pass no longer stands as
quiet).  What the pass read of it is the registry's answer for that Workload, asked when the
first write comes (most quiet passes meet none) and kept in its place while that pass stands.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable

from kueue_provreq.api.config import Configuration
from kueue_provreq.api.objects import Key
from kueue_provreq.api.workload import Workload
from kueue_provreq.controllers import registry
from kueue_provreq.controllers.parts import Parts

Read = tuple[Parts, Hashable]
"""What a quiet pass read of the Workload it saw: the parts, and the controller's view of them
(None without a view).  Not that Workload: a write that leaves the pass quiet replaces it in
the world, and kept here it would hold a whole superseded status per controller and Workload."""

Quiet = dict[Key, Workload | Read | None]
"""One controller's quiet passes: Workload key -> the Workload its last pass left with nothing to
do, or once a write came, what that pass read of it (:data:`Read`, asked then and kept in its
place while the pass stands), or None.  One entry per Workload holds both, so that a write asks
one map per controller.  An entry is voided, not removed, until the Workload goes: a Workload's
quiet state comes and goes at every write, and removed and added again the entry would keep the
key the write came with, a new 64-byte tuple each time."""


class QuietBook:
    """The quiet passes of every controller with a watch predicate, what the registry answered
    each read, and the configuration they were made under (another one voids them)."""

    __slots__ = ("of", "config")

    def __init__(self, controllers: Iterable[registry.Controller]) -> None:
        self.of: dict[str, Quiet] = {ctl.name: {} for ctl in controllers if ctl.reads is not None}
        self.config: Configuration | None = None

    def clear(self) -> None:
        for quiet in self.of.values():
            quiet.clear()

    def forget(self, name: str, key: Key) -> None:
        """The Workload is gone: what was kept of it would be kept forever."""
        self.of[name].pop(key, None)


def unquiet(quiet: Quiet, key: Key) -> None:
    """``key``'s pass no longer stands as quiet (and what it read is no longer kept)."""
    if quiet.get(key) is not None:
        quiet[key] = None
