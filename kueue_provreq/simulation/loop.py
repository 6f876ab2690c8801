"""Simulated time: a discrete-event loop around the engine.

Time advances here, outside the core: a heap of future events (arrivals, Cluster Autoscaler's
answers, the job model's pods becoming ready and jobs finishing) is merged with the engine's
own wake-ups (``Manager.next_wake_up``: backoffs, requeues, timeouts).  At each instant the
loop applies the events that are due, as writes from outside the controllers, and settles the
controllers; whatever the settle makes happen at the same instant (a zero delay) is applied
and settled in turn before time moves on.  The controllers never learn that time is simulated.

Everything the engine and the events change is reported, effect by effect, to the loop's
:class:`~kueue_provreq.simulation.watch.Watch`, which reads it once and calls whoever
subscribed (:meth:`Loop.subscribe`): the processes that play the rest of the cluster, and the
observers that measure or tell the run.  That is how forecasts and simulations follow a run
without instrumenting the core.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from itertools import count

from kueue_provreq.api.config import Configuration
from kueue_provreq.api.memo import clear_caches
from kueue_provreq.api.meta import Time
from kueue_provreq.api.objects import Key, KubeObject
from kueue_provreq.controllers.context import Context
from kueue_provreq.engine import Manager, Recorder
from kueue_provreq.simulation.watch import Subscriber, Watch
from kueue_provreq.world import Create, Delete, Effect, Update, World

Callback = Callable[[], None]


class Loop:
    """One simulated run: a world, its controllers, and the events still to come."""

    def __init__(self, world: World, config: Configuration, start: Time, verify: bool = False) -> None:
        # The library's memos (``api.memo``) are keyed by the models, and a run builds its own:
        # what an earlier run in this process left there is keyed by objects equal to this
        # run's and not the same, so each lookup would end in a deep equality of the queue's
        # spec (a sweep's worker runs point after point).  A run starts them empty instead.
        clear_caches()
        self.world = world
        self.config = config
        self.now = start
        self.watch = Watch(world, start)
        self.manager = Manager(world, Recorder(self._record), verify=verify)
        self._events: list[tuple[int, int, Event]] = []
        """The heap of events to come, as (time, sequence, event): compared as tuples, in C."""
        self._seq = count()
        self._after_settle: list[Callback] = []
        self._context = Context(now=start, config=config)

    def _record(self, controller: str, key: Key, effect: Effect) -> None:
        self.watch(controller, effect)

    def subscribe(self, subscriber: Subscriber) -> None:
        """Have ``subscriber``'s hooks called for every effect from now on, after those of the
        subscribers before it."""
        self.watch.subscribe(subscriber)

    def report(self, obj: KubeObject) -> None:
        """Tell the subscribers of an object the world held before the run began, as a
        creation with no actor (a request a cluster dump holds, to be answered)."""
        self.watch("", Create(obj))

    def at(self, time: int, action: Callback) -> Event:
        """Run ``action`` at ``time`` (now at the earliest), before that instant's settle."""
        event = Event(max(time, self.now), next(self._seq), action)
        heapq.heappush(self._events, (event.time, event.seq, event))
        return event

    def after_settle(self, action: Callback) -> None:
        """Run ``action`` once the current instant's next settle is over, to act on what the
        controllers did in it.  What it writes is settled with the next instant's events: it
        is for writes nobody needs to react to at once (removing a finished workload)."""
        self._after_settle.append(action)

    def write(self, actor: str, effect: Create | Update | Delete) -> None:
        """A write from outside the controllers (the engine learns of it from the world)."""
        self.world.apply(effect)
        self.watch(actor, effect)

    @property
    def context(self) -> Context:
        """The controllers' context now (one per instant, not one per settle)."""
        ctx = self._context
        if ctx.now != self.now or ctx.config is not self.config:
            ctx = self._context = Context(now=self.now, config=self.config)
        return ctx

    def run(self, until: int, done: Callable[[], bool] = lambda: False) -> bool:
        """Advance instant by instant until nothing is left to happen, the next instant lies
        past ``until``, or ``done()`` says the run has answered its question.  Returns
        whether something was still to happen after ``until``."""
        while True:
            self._instant()
            if done():
                return False
            wake = self.manager.next_wake_up
            if wake is not None and wake <= self.now:
                wake = self.now + 1  # a reconcile retrying at once: time is whole seconds
            candidates = [t for t in (self._next_event(), wake) if t is not None]
            if not candidates:
                return False
            if min(candidates) > until:
                return True
            self.now = self.watch.now = Time(int(min(candidates)))

    def _next_event(self) -> int | None:
        """When the next event not cancelled is due (cancelled ones are dropped on the way:
        an instant with nothing to do would still cost a settle)."""
        events = self._events
        while events and events[0][2].action is None:
            heapq.heappop(events)
        return events[0][0] if events else None

    def _instant(self) -> None:
        events, after = self._events, self._after_settle
        while True:
            while events and events[0][0] <= self.now:
                action = heapq.heappop(events)[2].action
                if action is not None:
                    action()
            self.manager.settle(self.context)
            while after:
                after.pop(0)()
            due = self._next_event()
            if due is None or due > self.now:
                return


class Event:
    """A scheduled action; :meth:`cancel` it when it is no longer wanted."""

    __slots__ = ("time", "seq", "action")

    def __init__(self, time: int, seq: int, action: Callback) -> None:
        self.time, self.seq = time, seq
        self.action: Callback | None = action

    def cancel(self) -> None:
        self.action = None
