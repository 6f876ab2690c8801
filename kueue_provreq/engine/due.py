"""What is due: the FIFO of (controller, key) reconciles and the wake-ups asked for."""

from __future__ import annotations

import heapq
from collections import deque
from itertools import count

from kueue_provreq.api.objects import Key
from kueue_provreq.world import World

Item = tuple[str, Key]
"""A reconcile: (controller, key)."""


class Due:
    """The reconciles due, in the order they became due (kept across settles: a settle restricted
    to some controllers leaves the others' work), and the wake-ups asked for, each pair keeping
    its earliest one."""

    __slots__ = ("queue", "queued", "_timers", "_seq", "wake_at")

    def __init__(self) -> None:
        self.queue: deque[Item] = deque()
        self.queued: set[Item] = set()
        self._timers: list[tuple[float, int, str, Key]] = []
        self._seq = count()
        self.wake_at: dict[Item, float] = {}
        """The earliest wake-up of each pair."""

    def enqueue(self, name: str, key: Key) -> None:
        item = (name, key)
        if item not in self.queued:
            self.queued.add(item)
            self.queue.append(item)

    def drained(self) -> None:
        """The queue is drained (a settle ends): an emptied set keeps the room it grew to, for
        every object when all are due (the first settle), so a new one takes its place."""
        if not self.queued:
            self.queued = set()

    def wake_up(self, at: float, name: str, key: Key) -> None:
        """Ask for a reconcile at ``at``.  A wake-up already asked for no later is enough: the
        reconcile it brings asks again for what it still needs."""
        item = (name, key)
        asked = self.wake_at.get(item)
        if asked is None or at < asked:
            self.wake_at[item] = at
            heapq.heappush(self._timers, (at, next(self._seq), name, key))

    def ended(self, now: float) -> list[Item]:
        """The wake-ups whose time has come, taken off."""
        timers, wake_at, out = self._timers, self.wake_at, []
        while timers and timers[0][0] <= now:
            at, _, name, key = heapq.heappop(timers)
            if wake_at.get((name, key)) == at:
                del wake_at[(name, key)]
            out.append((name, key))
        return out

    def next_wake_up(self, world: World) -> float | None:
        """The earliest wake-up asked for, those of objects no longer in ``world`` dropped on
        the way (their reconcile would be skipped, and a driver would settle for nothing)."""
        timers, wake_at = self._timers, self.wake_at
        while timers and timers[0][3] not in world:
            at, _, name, key = heapq.heappop(timers)
            if wake_at.get((name, key)) == at:
                del wake_at[(name, key)]
        return timers[0][0] if timers else None
