"""The watches at work: which reconciles a change makes due (``controllers.registry``: each
controller's ``Watch`` of a kind and its ``Route``, the routes to other objects implemented
there), with the quiet passes a write leaves alone.

A change comes as one record, :data:`Change`, made once by the write path that applied it: the
key (built once), the object before and after, and for a Workload the parts it changed (the
write path's no-op test computed them), so that no watch looks the object up or diffs it again.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from kueue_provreq.api import constants as c
from kueue_provreq.api.config import Configuration
from kueue_provreq.api.objects import Key, KubeObject
from kueue_provreq.api.workload import Workload
from kueue_provreq.controllers import queues, registry
from kueue_provreq.controllers.parts import EVERYTHING, Parts, changed_parts
from kueue_provreq.controllers.registry import ROUTE_TARGETS, Route, Watch
from kueue_provreq.engine.due import Due, Item
from kueue_provreq.engine.quiet import Quiet, QuietBook, unquiet
from kueue_provreq.machines import Actor
from kueue_provreq.world import World

Change = tuple[Key, KubeObject | None, KubeObject | None, Parts]
"""One object's change: (key, the object before or None, after or None, the parts changed: for
an update of a Workload its :func:`~kueue_provreq.controllers.parts.changed_parts`, else
``EVERYTHING``)."""


def change(key: Key, before: KubeObject | None, after: KubeObject | None) -> Change:
    """The record of a change found after the fact (an outside write, from the journal)."""
    if type(before) is Workload and type(after) is Workload:
        return key, before, after, changed_parts(before, after)
    return key, before, after, EVERYTHING


_WorkloadRoute = tuple[registry.Controller, str, Route | None, Quiet | None, str | None]
"""A watch of Workloads (but ``Route.QUEUES``): its controller and the controller's name, its
route (None for ``Route.SELF``, the route nearly every write takes), the controller's quiet
passes (None without a watch predicate), and ``unless_written_by``."""


_SELF, _ALL = Route.SELF, Route.ALL
"""The routes writes ask about, bound once: an enum member read off its class costs a trip
through ``EnumType.__getattr__``'s hook (about 70 ns against 10 for a global)."""


class Witness(Protocol):
    """Told of every reconcile the routing leaves out (verify mode proves it quiet)."""

    def skipped(self, name: str, key: Key, why: str) -> None: ...

    def gone(self, name: str, key: Key) -> None: ...


class Router:
    """Routes changes to the reconciles they make due."""

    def __init__(self, world: World, controllers: dict[str, registry.Controller], due: Due, quiet: QuietBook,
                 witness: Witness | None) -> None:
        self.world, self.controllers, self.due, self.quiet, self.witness = world, controllers, due, quiet, witness
        #: who watches each kind, in the registry's order (the order reconciles become due)
        self.watchers: dict[str, list[tuple[registry.Controller, Watch]]] = {}
        for ctl in controllers.values():
            for w in ctl.watches:
                self.watchers.setdefault(w.kind, []).append((ctl, w))
        workload_watches = self.watchers.get(c.WORKLOAD, ())
        self._workload_routes: list[_WorkloadRoute] = [
            (ctl, ctl.name, None if w.route is Route.SELF else w.route, quiet.of.get(ctl.name), w.unless_written_by)
            for ctl, w in workload_watches if w.route is not Route.QUEUES]
        #: of those, the ones each writer's changes take (those whose ``unless_written_by`` is
        #: not the writer), made on a writer's first change
        self._workload_routes_by: dict[str, list[_WorkloadRoute]] = {}
        #: who recounts a ClusterQueue or LocalQueue when the queue index says a Workload change
        #: moved its counts, each with whether it reconciles LocalQueues
        self._recounters = [(ctl.name, ctl.kinds == (c.LOCAL_QUEUE,))
                            for ctl, w in workload_watches if w.route is Route.QUEUES]
        self.index = queues.index(world)
        self.index.moves = []
        self._cq_keys: list[Key] | None = None

    def _skip(self, name: str, key: Key, why: str) -> None:
        if self.witness is not None:
            self.witness.skipped(name, key, why)

    def enqueue_all(self, config: Configuration) -> None:
        self._cq_keys = None
        for ctl in self.controllers.values():
            self.enqueue_every(ctl, config)

    def enqueue_every(self, ctl: registry.Controller, config: Configuration) -> None:
        """Every object ``ctl`` reconciles is due, but the Workloads in which it has nothing
        to do (``registry.Controller.idle``)."""
        keys = self._cluster_queues() if ctl.kinds == (c.CLUSTER_QUEUE,) else ctl.keys(self.world)
        name, enqueue = ctl.name, self.due.enqueue
        idle, quiet = ctl.idle, self.quiet.of.get(name)
        if idle is None or quiet is None:
            for key in keys:
                enqueue(name, key)
            return
        world, queued = self.world, self.due.queued
        for key in keys:
            wl = world.get(*key)
            if isinstance(wl, Workload) and (name, key) not in queued and idle(wl, config):
                quiet[key] = wl
                self._skip(name, key, "it has nothing to do for such a Workload")
            else:
                unquiet(quiet, key)
                enqueue(name, key)

    def on_change(self, writer: str, changes: Iterable[Change], config: Configuration,
                  origin: Item | None = None) -> None:
        """Which reconciles the changes made by ``writer`` make due; ``origin``: the reconcile
        that made them, when its pass settled them."""
        world = self.world
        for key, old, obj, diff in changes:
            if obj is old:
                continue  # created and deleted again, or put back as it was
            kind = key[0]
            if kind == c.WORKLOAD:
                self._workload_changed(writer, key, old, obj, diff, origin, config)
                continue
            if kind == c.CLUSTER_QUEUE and (writer != Actor.CLUSTER_QUEUE or obj is None):
                # queues come by writes from outside, and go by them or by their last finalizer
                self._cq_keys = None
            for ctl, watch in self.watchers.get(kind, ()):
                if watch.unless_written_by == writer and obj is not None:
                    # its own status write is no news; the object's going (its last finalizer
                    # removed) is
                    continue
                route = watch.route
                if route is _SELF:
                    if obj is not None:
                        self.due_for(ctl, key, origin)
                elif route is _ALL:
                    self.enqueue_every(ctl, config)
                else:
                    for target in ROUTE_TARGETS[route](world, key, old, obj):
                        self.due_for(ctl, target, origin)
        if self.index.moves:
            self._recounted()

    def _recounted(self) -> None:
        """The ClusterQueues and LocalQueues whose counts the changes moved (``Route.QUEUES``, as
        the queue index saw them) are due."""
        names, refs = self.index.recounted(self.world)
        enqueue = self.due.enqueue
        for name, local in self._recounters:
            if local:
                for ref in refs:
                    enqueue(name, (c.LOCAL_QUEUE, *ref))
            else:
                for cq in names:
                    enqueue(name, (c.CLUSTER_QUEUE, "", cq))

    def _workload_changed(self, writer: str, key: Key, was: KubeObject | None, wl: KubeObject | None,
                          diff: Parts, origin: Item | None, config: Configuration) -> None:
        """:meth:`on_change` for a Workload (most changes are): its own reconcilers are woken
        by what their last quiet pass read of it (``registry.Controller.reads``, asked once per
        Workload that pass saw and kept in the :class:`~.quiet.QuietBook`), which the parts
        ``diff`` the change made must meet, or else change what it decides from (``view``)."""
        routes = self._workload_routes_by.get(writer)
        if routes is None:
            routes = self._workload_routes_by[writer] = [
                r for r in self._workload_routes if r[4] is None or r[4] != writer]
        queued, witness, world = self.due.queued, self.witness, self.world
        for ctl, name, route, quiet, _ in routes:
            if route is not None:
                if route is _ALL:
                    self.enqueue_every(ctl, config)
                else:
                    for target in ROUTE_TARGETS[route](world, key, was, wl):
                        self.due_for(ctl, target, origin)
                continue
            if wl is None:
                if quiet is not None:
                    self.quiet.forget(name, key)
                if witness is not None:
                    witness.gone(name, key)
                continue  # nothing left to reconcile
            item = (name, key)
            if origin is not None and origin == item and quiet is not None:
                # (asked before the queue: the reconcile that wrote was taken off it, and its
                # quiet entry voided, before its changes came here; verify mode proves no
                # skipped reconcile that is queued)
                if witness is not None:
                    witness.skipped(name, key, "its own write settled it")
                continue  # reconcile() notes what its pass left
            if item in queued:
                if quiet is not None:
                    unquiet(quiet, key)
                continue
            if quiet is not None:
                last = quiet.get(key)
                if last is not None:
                    if was is not None:
                        # what the quiet pass that saw ``last`` read: asked when the first
                        # write after it comes (most quiet passes meet none), kept in its place
                        view = ctl.view
                        if isinstance(last, Workload):
                            assert ctl.reads is not None
                            last = quiet[key] = (ctl.reads(world, last, config), None if view is None else view(last))
                        if not diff & last[0] or (view is not None and isinstance(wl, Workload) and view(wl) == last[1]):
                            if witness is not None:
                                witness.skipped(name, key, f"its watch ignored a change by {writer or 'a client'}")
                            continue
                    quiet[key] = None  # (``unquiet``, inlined: ``last`` is not None)
                elif was is None and ctl.idle is not None and isinstance(wl, Workload) and ctl.idle(wl, config):
                    quiet[key] = wl
                    if witness is not None:
                        witness.skipped(name, key, "it has nothing to do for such a Workload")
                    continue
            queued.add(item)
            self.due.queue.append(item)

    def due_for(self, ctl: registry.Controller, key: Key, origin: Item | None) -> None:
        """``key`` is due for ``ctl``, unless the reconcile that made the change is that very
        one and its pass settled it."""
        if origin is not None and origin == (ctl.name, key):
            self._skip(ctl.name, key, "its own write settled it")
            return
        quiet = self.quiet.of.get(ctl.name)
        if quiet is not None:
            unquiet(quiet, key)
        self.due.enqueue(ctl.name, key)

    def _cluster_queues(self) -> list[Key]:
        """The ClusterQueues' keys, kept between calls (every Workload change asks for them)."""
        if self._cq_keys is None:
            self._cq_keys = self.world.keys(c.CLUSTER_QUEUE)
        return self._cq_keys
