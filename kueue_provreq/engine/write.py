"""The engine's write path: a reconcile's effects applied to the world, each change recorded once.

The fused write path: a write's key is built once, the object it replaces looked up once, and
for a Workload the parts it changes computed once (:func:`~kueue_provreq.controllers.parts
.changed_parts`, exact, so that it is the no-op test too, in place of a deep equality); the
change goes on to the routing as one :data:`~.routing.Change` record, which neither looks the
object up again nor diffs it again.  Verify mode passes a ``check`` that proves the no-op test
against a deep equality and every Workload write against the declared machines.
"""

from __future__ import annotations

from collections.abc import Callable

from kueue_provreq.api.evolve import same
from kueue_provreq.api.objects import Key, KubeObject
from kueue_provreq.api.workload import Workload
from kueue_provreq.controllers.parts import EVERYTHING, Parts, changed_parts
from kueue_provreq.engine.routing import Change, change
from kueue_provreq.world import Create, Delete, Effect, Update, World

OnEffect = Callable[[str, Key, Effect], None]
"""Told of every effect applied (by controller, for the reconciled key)."""

Check = Callable[[KubeObject, Update, Parts], None]
"""What an update is checked by before it is applied, with the parts the write path found it
changes (0: none, and the write is dropped)."""


def apply_effects(world: World, stored: Callable[[Key], KubeObject | None], controller: str, key: Key,
                  effects: tuple[Effect, ...], on_effect: OnEffect | None, check: Check | None) -> dict[Key, Change]:
    """Apply effects in order; returns a :data:`~.routing.Change` per object that really
    changed (its object before the first of these effects, after the last).  Updates that
    change nothing are dropped.  Nothing is journaled: the caller routes what it applied.
    ``stored`` is the world's :meth:`~kueue_provreq.world.World.lookup`, which the caller holds."""
    changed: dict[Key, Change] = {}
    for effect in effects:
        if isinstance(effect, Update):
            obj = effect.obj
            meta = obj.metadata
            k = (obj.KIND, meta.namespace, meta.name)
            if k == key:
                k = key  # as below: what the world's indexes keep then shares one tuple
            old = stored(k)
            if old is obj:
                continue
            if old is None:
                done = world.apply_unjournaled(effect)  # refused: not found
            else:
                if type(obj) is Workload and type(old) is Workload:
                    diff = changed_parts(old, obj)
                else:
                    diff = 0 if same(old, obj) else EVERYTHING
                if check is not None:
                    check(old, effect, diff)
                if not diff:
                    continue
                gone = world.replace(k, old, obj, diff)
                if gone is None:  # the common case: ``obj`` stored
                    if k not in changed:
                        changed[k] = (k, old, obj, diff)
                    else:  # written twice: one change from the first object to the last
                        changed[k] = change(k, changed[k][1], obj)
                    if on_effect is not None:
                        on_effect(controller, key, effect)
                    continue
                done = gone
        elif isinstance(effect, (Create, Delete)):
            done = world.apply_unjournaled(effect)
        else:  # an event or a metric
            if on_effect is not None:
                on_effect(controller, key, effect)
            continue
        for k, before in done:
            # the reconciled object's own key rather than the world's fresh copy of it:
            # what the engine keeps per object (quiet passes, wake-ups) then shares one
            if k == key:
                k = key
            first = changed.get(k)
            if first is not None:
                before = first[1]
            changed[k] = change(k, before, stored(k))
        if on_effect is not None:
            on_effect(controller, key, effect)
    return changed
