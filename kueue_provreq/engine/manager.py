"""The controller manager: runs the sans-IO controllers over a World until nothing changes.

This is the one driver loop shared by the conformance runner, the simulator, the benchmarks and
the explorer.  It is deterministic: a FIFO queue of dirty (controller, key) pairs, drained
before each scheduler cycle, as the conformance format's ``settle`` step specifies.  This
module is the fast engine; ``Manager(world)`` (verify mode, the default) is its verifying
subclass (:mod:`.verify`), which checks every state change and every reconcile left out.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import ClassVar

import attrs

from kueue_provreq.api.evolve import same
from kueue_provreq.api.objects import Key, KubeObject
from kueue_provreq.api.workload import Workload
from kueue_provreq.controllers import queues, registry, scheduler
from kueue_provreq.controllers.context import Context
from kueue_provreq.engine.due import Due, Item
from kueue_provreq.engine.quiet import QuietBook
from kueue_provreq.engine.routing import Change, Router, Witness, change
from kueue_provreq.engine.write import Check, apply_effects
from kueue_provreq.errors import KueueProvreqError
from kueue_provreq.machines import Actor
from kueue_provreq.world import NOTHING, Create, Delete, Effect, Result, Update, World

SCHEDULER = Actor.SCHEDULER
ALL_CONTROLLERS: tuple[str, ...] = (SCHEDULER.value, *(ctl.name.value for ctl in registry.CONTROLLERS))


class SettleError(KueueProvreqError):
    """A settle that cannot finish: a reconcile keeps failing, or the controllers never agree."""


@attrs.define
class Recorder:
    """Where the engine reports what happened besides object changes."""

    on_effect: Callable[[str, Key, Effect], None] | None = None

    def __call__(self, controller: str, key: Key, effect: Effect) -> None:
        if self.on_effect is not None:
            self.on_effect(controller, key, effect)


class Manager:
    """Runs controllers to a fixed point at one instant.

    Like a controller manager, it reconciles only what has reason to change: objects some write
    touched (its own reconciles' writes through the registry's watches, and writes made to the
    world by anybody else, which the world's journal records), reconciles whose wake-up time has
    come (``Result.requeue_after``), and reconciles that failed.  The first settle reconciles
    everything.  The queue status reconcilers (ClusterQueue, LocalQueue) are due when a change
    moves their counts or usage (``Route.QUEUES``) or changes what they read, as the
    AdmissionCheck reconciler is: nothing else changes their status.  A write does not wake a
    Workload reconcile that last left it with nothing to do unless it changes what that pass
    read (:mod:`.quiet`); nor a reconcile whose own pass settled the write
    (``Result.settled``).

    ``Manager(world)`` verifies (:class:`~.verify.VerifyingManager`); ``verify=False`` gives
    this fast engine, which runs none of the verification.  ``controllers``: the keyed
    controllers it runs, by name (the registry's by default; a test stands a faulty one in
    here, which also works where the engine is compiled and its modules cannot be patched).
    """

    verify = False
    verifying: ClassVar[type[Manager]]
    """What ``Manager(world)`` makes in verify mode: :class:`~.verify.VerifyingManager`, which
    names itself here (the engine package imports both), so that this module imports none of
    verify mode."""

    def __new__(cls, world: World, record: Recorder | None = None, verify: bool = True,
                max_reconciles: int | None = None,
                controllers: Mapping[str, registry.Controller] | None = None) -> Manager:
        if verify and cls is Manager:  # (its own ``__new__``, not ``super()``'s: mypyc builds only ``cls``)
            return cls.verifying.__new__(cls.verifying, world, record, verify, max_reconciles, controllers)
        return super().__new__(cls)

    def __init__(self, world: World, record: Recorder | None = None, verify: bool = True,
                 max_reconciles: int | None = None,
                 controllers: Mapping[str, registry.Controller] | None = None) -> None:
        self.world = world
        #: the world's own lookup by key (:meth:`World.lookup`), held once
        self._stored = world.lookup()
        self.record = record or Recorder()
        #: reconciles one settle may take before it is declared non-terminating; by default
        #: proportional to the world, since every object may legitimately need many passes
        self.max_reconciles = max_reconciles
        self.reconciles = 0
        #: of those, the ones that changed an object
        self.changing_reconciles = 0
        #: the controllers this Manager runs (the registry's, as it stands when it starts)
        self.controllers: dict[str, registry.Controller] = dict(registry.BY_NAME if controllers is None else controllers)
        self.due = Due()
        self.quiet = QuietBook(self.controllers.values())
        self.router = Router(world, self.controllers, self.due, self.quiet, self._witness())
        self._journal: dict[Key, KubeObject | None] = {}
        self._swept = False
        world.hooks.journal = self._journal
        #: what an update is checked by before it is applied, with the parts the write path
        #: found it changes (0: none, the write is dropped): nothing, in fast mode
        self._check_change: Check | None = None

    def _witness(self) -> Witness | None:
        """Who is told of the reconciles the routing leaves out: nobody, in fast mode."""
        return None

    # --- one reconcile (the conformance `reconcile` step) ----------------------------
    def reconcile(self, controller: str, key: Key, ctx: Context) -> tuple[Result, Collection[Key]]:
        """One reconcile, its effects applied; returns its Result and the keys it changed (the
        write path's own map of them, not a copy)."""
        world = self.world
        settled = False
        quiet = None
        if controller == SCHEDULER:
            if key[0] == SCHEDULER and self._idle(ctx):
                return NOTHING, []  # no cycle: nothing it reads changed since one changed nothing
            result = scheduler.schedule(world, ctx, None if key[0] == SCHEDULER else key)
        else:
            result = self.controllers[controller].reconcile(world, key, ctx)
            if result.requeue_after is not None or result.error is not None:
                self.due.wake_up(ctx.now + (result.requeue_after or 0.0), controller, key)
            quiet = self.quiet.of.get(controller)
            if quiet is None:
                settled = result.settled and result.error is None
            elif result.error is None and not result.effects:
                wl = self._stored(key)  # (not ``world.get``: no read of the reconcile's)
                if isinstance(wl, Workload):
                    quiet[key] = wl  # a quiet pass
                elif quiet.get(key) is not None:
                    quiet[key] = None
            else:
                if quiet.get(key) is not None:  # (``unquiet``, inlined)
                    quiet[key] = None
                settled = result.settled and result.error is None
        self.reconciles += 1
        if not result.effects:  # most reconciles change nothing
            return result, ()
        changes = self._apply(controller, key, result.effects)
        if not changes:
            return result, ()
        self.changing_reconciles += 1
        self.router.on_change(controller, changes.values(), ctx.config, (controller, key) if settled else None)
        if settled and quiet is not None:
            wl = self._stored(key)
            if isinstance(wl, Workload) and (controller, key) not in self.due.queued:
                quiet[key] = wl
        return result, changes

    def _idle(self, ctx: Context) -> bool:
        """Whether the scheduler waits (:func:`queues.idle`): a cycle over every queue would
        change nothing, as the last one did, since nothing it reads has changed."""
        return queues.idle(self.world, ctx)

    def _apply(self, controller: str, key: Key, effects: tuple[Effect, ...]) -> dict[Key, Change]:
        """Apply effects in order (:func:`.write.apply_effects`); returns a change per object
        that really changed."""
        return apply_effects(self.world, self._stored, controller, key, effects, self.record.on_effect,
                             self._check_change)

    # --- settle -------------------------------------------------------------------
    def settle(self, ctx: Context | float, controllers: Iterable[str] = ALL_CONTROLLERS) -> None:
        """Reconcile what is due until nothing changes at ``ctx.now``.  ``ctx`` may be a time
        alone (seconds since the epoch): the default Configuration then."""
        if not isinstance(ctx, Context):
            ctx = Context(now=ctx)
        # The models hold no reference cycles (a test checks that), so reference counting frees
        # every object a settle drops; the cyclic collector would only walk the whole world
        # again and again, which makes large settles superlinear.  It is paused meanwhile.
        collecting = gc.isenabled()
        gc.disable()
        try:
            self._settle(ctx, controllers)
        finally:
            if collecting:
                gc.enable()

    def _settle(self, ctx: Context, controllers: Iterable[str]) -> None:
        wanted = set(controllers)
        self._collect_due(ctx)
        self._drain(ctx, wanted)

    def _drain(self, ctx: Context, wanted: set[str]) -> None:
        """Reconcile what is due to ``wanted`` controllers, then a scheduler cycle, until neither
        changes anything; failed reconciles are retried while others make progress.  The
        reconciles of ``last`` controllers (``registry.Controller.last``) wait until then."""
        run_scheduler = SCHEDULER in wanted
        queue, queued = self.due.queue, self.due.queued
        later: list[Item] = []  # due for controllers this settle does not run
        last = {name for name, ctl in self.controllers.items() if ctl.last}
        held: list[Item] = []  # due for ``last`` controllers, still queued (not enqueued twice)
        closing = False  # reconciling ``held``
        errors: dict[Item, str] = {}
        started = self.reconciles
        budget = self.max_reconciles or 10_000 + 200 * len(self.world)
        retried = False
        world, reconcile = self.world, self.reconcile
        stored = world.lookup()
        try:
            while True:
                changed_any = False
                others = False
                while queue:
                    item = queue.popleft()
                    name, key = item
                    if name not in wanted:
                        later.append(item)
                        continue
                    if name in last:
                        if not closing:
                            held.append(item)
                            continue
                    else:
                        others = True
                    queued.discard(item)
                    if stored(key) is None:  # gone
                        if errors:
                            errors.pop(item, None)
                        continue
                    result, changed = reconcile(name, key, ctx)
                    if result.error is not None:
                        errors[item] = result.error
                    elif errors:
                        errors.pop(item, None)
                    if changed:
                        changed_any = True
                        if self.reconciles - started > budget:
                            raise SettleError(f"controllers did not settle after {budget} reconciles")
                if closing:
                    closing = False
                    if not others and not errors:
                        break  # what they wrote is news to nobody
                if run_scheduler:
                    # its Result not kept: it holds every Workload the cycle wrote, as the cycle
                    # wrote them, which later writes replace
                    changed = reconcile(SCHEDULER, (SCHEDULER, "", ""), ctx)[1]
                    if changed:
                        retried = False
                        continue
                if held:
                    queue.extend(held)
                    held.clear()
                    closing = True
                    continue
                if errors:
                    if retried and not changed_any:
                        (name, key), error = next(iter(errors.items()))
                        raise SettleError(f"{name} reconcile of {key[1]}/{key[2]} keeps failing: {error}")
                    retried = True
                    for item in list(errors):
                        self.due.enqueue(*item)
                    continue
                break
        finally:
            queue.extendleft(reversed(later + held))
            self.due.drained()

    def _collect_due(self, ctx: Context) -> None:
        """Make due what became due since the last settle: outside writes, ended wake-ups."""
        world, config, quiet = self.world, ctx.config, self.quiet
        if quiet.config is not config and quiet.config != config:
            # what the quiet passes read was read under another configuration
            quiet.clear()
            self._swept = self._swept and quiet.config is None
        quiet.config = config
        if not self._swept or world.hooks.journal is not self._journal:
            # first settle, or another Manager took over the journal: nothing is known
            self._swept = True
            self._journal.clear()
            world.hooks.journal = self._journal
            quiet.clear()
            self.router.enqueue_all(config)
        elif self._journal:
            stored = world.lookup()
            changed = [change(k, before, stored(k)) for k, before in self._journal.items()]
            self._journal.clear()
            self.router.on_change("", changed, config)
        for name, key in self.due.ended(ctx.now):
            self.router.due_for(self.controllers[name], key, None)

    @property
    def next_wake_up(self) -> float | None:
        """The earliest time a reconcile asked to be woken at (``requeue_after``), if any: when
        a driver should settle next, if nothing else happens first."""
        return self.due.next_wake_up(self.world)


def changes_world(world: World, result: Result) -> bool:
    """Whether applying ``result`` would create, delete or change an object."""
    for e in result.effects:
        if isinstance(e, (Create, Delete)):
            return True
        if isinstance(e, Update) and not same(world.get(e.obj.KIND, e.obj.metadata.namespace,
                                                        e.obj.metadata.name), e.obj):
            return True
    return False


def describe(result: Result) -> str:
    return ", ".join(f"{type(e).__name__} {e.obj.KIND} {e.obj.metadata.name}" if isinstance(e, (Create, Update))
                     else f"{type(e).__name__}" for e in result.effects)
