"""The controller manager: runs the sans-IO controllers over a World until nothing changes.

This is the one driver loop shared by the conformance runner, the simulator,
the benchmarks and the explorer.  It is deterministic: a FIFO queue of dirty
(controller, key) pairs, drained before each scheduler cycle, as the
conformance format's ``settle`` step specifies.  With ``verify`` every state
change it applies is checked against the declared machines, and every reconcile
it leaves out is checked to be one that would change nothing.
"""

from __future__ import annotations

import gc
import heapq
from collections import deque
from collections.abc import Callable, Hashable, Iterable
from collections.abc import Set as AbstractSet
from itertools import count

import attrs

from kueue_provreq.api import constants as c
from kueue_provreq.api.config import Configuration
from kueue_provreq.api.evolve import same
from kueue_provreq.api.objects import JOB_KINDS, Key, KubeObject, key_of
from kueue_provreq.api.workload import Workload
from kueue_provreq.controllers import queues, registry, scheduler
from kueue_provreq.controllers.context import Context
from kueue_provreq.controllers.parts import Parts, changed_parts
from kueue_provreq.controllers.registry import Route, Watch
from kueue_provreq.errors import KueueProvreqError
from kueue_provreq.machines import (
    ADMISSION_CHECK_MACHINE,
    MACHINES,
    WORKLOAD_MACHINE,
    Actor,
    IllegalTransition,
    Transition,
)
from kueue_provreq.machines.phases import workload_phase
from kueue_provreq.world import Create, Delete, Effect, Read, Result, Update, World

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


def verify_change(old: KubeObject | None, update: Update) -> None:
    """In verify mode, a Workload write must name, as its transitions, the fires that explain
    every phase and check-state change it makes: chained from the old phase to the new one,
    each a declared (source, trigger, target), each check's from its old state to its new one.
    ``write_workload`` already refuses a realised phase other than its fire's target; what only
    the stored objects show is checked here: that nothing beside the fires moved the phase or a
    check, and that the fires start from the phase the world held.  A plain lookup, not a second
    decision.  (It runs on every Workload write, so it builds no message unless one is wrong.)"""
    new = update.obj
    if not isinstance(new, Workload) or not isinstance(old, Workload):
        return
    fired = update.transitions
    if old.status is new.status and old.spec is new.spec and not fired:
        return
    for t in fired:
        if not MACHINES[t.machine].declares(t):
            raise IllegalTransition(f"{_where(new)}: {t.describe()} is not a declared transition")
    phase: str = workload_phase(old)
    moved: dict[str, Transition] = {}
    for t in fired:
        if t.machine == _WORKLOAD_MACHINE:
            if t.source != phase:
                raise IllegalTransition(f"{_where(new)}: {t.describe()} fired from {phase}")
            phase = t.target  # a declared target: a WorkloadPhase's value
        elif t.machine == _CHECK_MACHINE:
            moved[t.item] = t
    after = workload_phase(new)
    if after != phase:
        raise IllegalTransition(f"{_where(new)}: the write leaves it {after}, its transitions say {phase}")
    if old.status.admission_checks is new.status.admission_checks and not moved:
        return
    before = {s.name: s.state for s in old.status.admission_checks}
    for s in new.status.admission_checks:
        prev = before.get(s.name)
        move = moved.get(s.name)
        if move is not None:
            if (move.source, move.target) != (prev, s.state):
                raise IllegalTransition(f"{_where(new)}: check {s.name} went {prev} -> {s.state}, "
                                        f"its transition says {move.describe()}")
        elif prev is not None and prev != s.state:
            raise IllegalTransition(f"{_where(new)}: check {s.name} {prev} -> {s.state} without a transition")


_WORKLOAD_MACHINE = WORKLOAD_MACHINE.name
_CHECK_MACHINE = ADMISSION_CHECK_MACHINE.name


def _where(wl: Workload) -> str:
    return f"workload {wl.metadata.namespace}/{wl.metadata.name}"


class Manager:
    """Runs controllers to a fixed point at one instant.

    Like a controller manager, it reconciles only what has reason to change: objects some write
    touched (its own reconciles' writes through the watches below, and writes made to the world
    by anybody else, which the world's journal records), reconciles whose wake-up time has come
    (``Result.requeue_after``), and reconciles that failed.  The first settle reconciles
    everything.  The ClusterQueue and AdmissionCheck reconcilers, one per queue or check and
    time-dependent through the queue counts, run at every settle.

    A controller that declares what it reads of a Workload (``registry.Controller.reads``) is
    woken by a write only when the write changes a part of it (:mod:`~.controllers.parts`) that
    its last pass read, a pass that changed nothing or ran to its end (``Result.settled``); and
    not at all for a Workload in which it has nothing to do (``registry.Controller.idle``).

    With ``verify`` (the default) it also proves that nothing was missed: every reconcile it
    leaves out would change nothing, ask for no earlier wake-up and fail with no error, and
    after a settle every reconcile changes nothing (as before a settle every one it does not
    schedule).
    """

    def __init__(self, world: World, record: Recorder | None = None, verify: bool = True,
                 max_reconciles: int | None = None) -> None:
        self.world = world
        self.record = record or Recorder()
        self.verify = verify
        #: reconciles one settle may take before it is declared non-terminating; by default
        #: proportional to the world, since every object may legitimately need many passes
        self.max_reconciles = max_reconciles
        self.reconciles = 0
        #: of those, the ones that changed an object
        self.changing_reconciles = 0
        #: verify mode: reconciles rerun to prove that one left out would change nothing
        self.proofs = 0
        #: (controller, key) pairs due for a reconcile, in the order they became due; kept
        #: across settles (a settle restricted to some controllers leaves the others' work)
        self._queue: deque[tuple[str, Key]] = deque()
        self._queued: set[tuple[str, Key]] = set()
        #: wake-ups asked for: (time, sequence, controller, key)
        self._timers: list[tuple[float, int, str, Key]] = []
        self._timer_seq = count()
        self._wake_at: dict[tuple[str, Key], float] = {}  # the earliest wake-up of each pair
        self._journal: dict[Key, KubeObject | None] = {}
        self._swept = False
        #: the controllers this Manager runs (the registry's, as it stands when it starts), and
        #: who watches each kind, in the registry's order (the order reconciles become due)
        self.controllers: dict[str, registry.Controller] = dict(registry.BY_NAME)
        self._watchers: dict[str, list[tuple[registry.Controller, Watch]]] = {}
        for ctl in self.controllers.values():
            for w in ctl.watches:
                self._watchers.setdefault(w.kind, []).append((ctl, w))
        #: per controller with a watch predicate, Workload key -> the parts its last pass read
        #: and its view of them, when that pass left it nothing to do (kept until a write
        #: changes them), else None (:func:`_unquiet`)
        self._quiet: dict[str, dict[Key, Quiet | None]] = {
            name: {} for name, ctl in self.controllers.items() if ctl.reads is not None}
        self._workload_routes = [(ctl, w.route, w.unless_written_by, self._quiet.get(ctl.name))
                                 for ctl, w in self._watchers.get(c.WORKLOAD, ()) if w.route is not Route.QUEUES]
        #: who recounts a ClusterQueue when the queue index says a Workload change moved its counts
        self._recounters = [ctl.name for ctl, w in self._watchers.get(c.WORKLOAD, ()) if w.route is Route.QUEUES]
        self._index = queues.index(world)
        self._index.moves = []
        #: the configuration the quiet passes were made under (another one voids them)
        self._config: Configuration | None = None
        #: (controller, key) pairs left out since the last proof, to prove quiet (verify mode)
        self._skipped: dict[tuple[str, Key], str] = {}
        #: verify mode: per pair whose last reconcile changed nothing, what it read and when
        #: (:meth:`_quiet_now` takes it as proof while every read still answers the same)
        self._evidence: dict[tuple[str, Key], Evidence] = {}
        self._cq_keys: list[Key] | None = None
        world.journal = self._journal

    # --- what is due --------------------------------------------------------------------
    def _enqueue(self, name: str, key: Key) -> None:
        item = (name, key)
        if item not in self._queued:
            self._queued.add(item)
            self._queue.append(item)

    def _enqueue_all(self, config: Configuration) -> None:
        self._cq_keys = None
        for ctl in self.controllers.values():
            self._enqueue_every(ctl, config)

    def _enqueue_every(self, ctl: registry.Controller, config: Configuration) -> None:
        keys = self._cluster_queues() if ctl.kinds == (c.CLUSTER_QUEUE,) else ctl.keys(self.world)
        name = ctl.name
        idle, quiet = ctl.idle, self._quiet.get(name)
        if idle is None or quiet is None:
            for key in keys:
                self._enqueue(name, key)
            return
        world, queued = self.world, self._queued
        for key in keys:
            wl = world.get(*key)
            if isinstance(wl, Workload) and (name, key) not in queued and idle(wl, config):
                quiet[key] = wl
                self._skip(name, key, "it has nothing to do for such a Workload")
            else:
                _unquiet(quiet, key)
                self._enqueue(name, key)

    def _skip(self, name: str, key: Key, why: str) -> None:
        """Leave a reconcile out (verify mode proves it quiet before the next reconcile runs)."""
        if self.verify:
            self._skipped.setdefault((name, key), why)

    def _on_change(self, writer: str, changes: Iterable[tuple[Key, KubeObject | None]], ctx: Context,
                   origin: tuple[str, Key] | None = None) -> None:
        """The watches (``controllers.registry``): which reconciles a change made by ``writer``
        makes due.  ``changes`` are the keys changed, each with the object it held before;
        ``origin``: the reconcile that made them, when its pass settled them."""
        world, config = self.world, ctx.config
        for key, old in changes:
            kind = key[0]
            obj = world.get(*key)
            if obj is old:
                continue  # created and deleted again, or put back as it was
            if kind == c.WORKLOAD:
                self._workload_changed(writer, key, old, obj, origin, config)  # type: ignore[arg-type]
                continue
            if kind == c.CLUSTER_QUEUE and writer != Actor.CLUSTER_QUEUE:
                self._cq_keys = None  # queues come and go only by writes from outside
            for ctl, watch in self._watchers.get(kind, ()):
                if watch.unless_written_by == writer:
                    continue
                route = watch.route
                if route is Route.SELF:
                    if obj is not None:
                        self._due(ctl, key, origin)
                elif route is Route.ALL:
                    self._enqueue_every(ctl, config)
                else:
                    if route is Route.OWNER:
                        targets = _owners(world, key, obj if obj is not None else old)
                    else:
                        targets = _owned(world, key)
                    for target in targets:
                        self._due(ctl, target, origin)
        self._recounted()

    def _recounted(self) -> None:
        """The ClusterQueues whose counts the changes moved (``Route.QUEUES``, as the queue index
        saw them) are due."""
        moves = self._index.moves
        if moves:
            names = self._index.recounted(self.world)
            for name in self._recounters:
                for cq in names:
                    self._enqueue(name, (c.CLUSTER_QUEUE, "", cq))

    def _workload_changed(self, writer: str, key: Key, was: Workload | None, wl: Workload | None,
                          origin: tuple[str, Key] | None, config: Configuration) -> None:
        """:meth:`_on_change` for a Workload (most changes are): its own reconcilers are woken
        by what their last quiet pass read of it (``registry.Controller.reads``)."""
        queued, verify = self._queued, self.verify
        diff: Parts | None = None
        for ctl, route, unless, quiet in self._workload_routes:
            if unless is not None and unless == writer:
                continue
            name = ctl.name
            if route is Route.SELF:
                if wl is None:
                    if quiet is not None:
                        quiet.pop(key, None)  # what it read of a deleted object would be kept forever
                    if verify:
                        self._evidence.pop((name, key), None)
                    continue  # nothing left to reconcile
                item = (name, key)
                if item in queued:
                    if quiet is not None:
                        _unquiet(quiet, key)
                    continue
                if quiet is not None:
                    if origin == item:
                        if verify:
                            self._skipped.setdefault(item, "its own write settled it")
                        continue  # reconcile() notes what its pass left
                    last = quiet.get(key)
                    if last is not None and was is not None:
                        if diff is None:
                            diff = changed_parts(was, wl)
                        if type(last) is Workload:
                            last = quiet[key] = _quiet(ctl, self.world, last, config)
                        if type(last) is tuple:
                            unchanged = diff.isdisjoint(last[0]) or ctl.view(wl) == last[1]  # type: ignore[misc]
                        else:
                            unchanged = diff.isdisjoint(last)  # type: ignore[arg-type]
                        if unchanged:
                            if verify:
                                self._skipped.setdefault(item, f"its watch ignored a change by {writer or 'a client'}")
                            continue
                    elif last is None and was is None and ctl.idle is not None and ctl.idle(wl, config):
                        quiet[key] = wl
                        if verify:
                            self._skipped.setdefault(item, "it has nothing to do for such a Workload")
                        continue
                    if last is not None:
                        quiet[key] = None
                queued.add(item)
                self._queue.append(item)
            elif route is Route.OWNING_JOB:
                before = was.metadata.owner_references if was is not None else ()
                after = wl.metadata.owner_references if wl is not None else ()
                if before or after:
                    jobs = _owning_jobs(key, was) if before is after else \
                        list(dict.fromkeys([*_owning_jobs(key, was), *_owning_jobs(key, wl)]))
                    for job_key in jobs:
                        self._due(ctl, job_key, origin)
            elif route is Route.ALL:
                self._enqueue_every(ctl, config)
            else:
                targets = _owners(self.world, key, wl if wl is not None else was) if route is Route.OWNER \
                    else _owned(self.world, key)
                for target in targets:
                    self._due(ctl, target, origin)

    def _due(self, ctl: registry.Controller, key: Key, origin: tuple[str, Key] | None) -> None:
        """``key`` is due for ``ctl``, unless the reconcile that made the change is that very
        one and its pass settled it."""
        if origin is not None and origin == (ctl.name, key):
            self._skip(ctl.name, key, "its own write settled it")
            return
        quiet = self._quiet.get(ctl.name)
        if quiet is not None:
            _unquiet(quiet, key)
        self._enqueue(ctl.name, key)

    def _cluster_queues(self) -> list[Key]:
        """The ClusterQueues' keys, kept between calls (every Workload change asks for them)."""
        if self._cq_keys is None:
            self._cq_keys = self.world.keys(c.CLUSTER_QUEUE)
        return self._cq_keys

    def _collect_due(self, ctx: Context) -> None:
        """Make due what became due since the last settle: outside writes, ended wake-ups."""
        world = self.world
        config = ctx.config
        if self._config is not config and self._config != config:
            # what the quiet passes read was read under another configuration
            for quiet in self._quiet.values():
                quiet.clear()
            self._swept = self._swept and self._config is None
        self._config = config
        if not self._swept or world.journal is not self._journal:
            # first settle, or another Manager took over the journal: nothing is known
            self._swept = True
            self._journal.clear()
            world.journal = self._journal
            for quiet in self._quiet.values():
                quiet.clear()
            self._enqueue_all(config)
        elif self._journal:
            changed = list(self._journal.items())
            self._journal.clear()
            self._on_change("", changed, ctx)
        timers, wake_at = self._timers, self._wake_at
        while timers and timers[0][0] <= ctx.now:
            at, _, name, key = heapq.heappop(timers)
            if wake_at.get((name, key)) == at:
                del wake_at[(name, key)]
            self._due(self.controllers[name], key, None)
        for ctl in self.controllers.values():
            if ctl.every_settle:
                self._enqueue_every(ctl, config)

    def _wake_up(self, at: float, controller: str, key: Key) -> None:
        """Ask for a reconcile at ``at``.  A wake-up already asked for no later is enough: the
        reconcile it brings asks again for what it still needs, so each pair keeps one."""
        item = (controller, key)
        asked = self._wake_at.get(item)
        if asked is None or at < asked:
            self._wake_at[item] = at
            heapq.heappush(self._timers, (at, next(self._timer_seq), controller, key))

    @property
    def next_wake_up(self) -> float | None:
        """The earliest time a reconcile asked to be woken at (``requeue_after``), if any: when
        a driver should settle next, if nothing else happens first.  Wake-ups of objects that
        no longer exist are dropped on the way: their reconcile would be skipped, and a driver
        would settle for nothing."""
        timers, world, wake_at = self._timers, self.world, self._wake_at
        while timers and timers[0][3] not in world:
            at, _, name, key = heapq.heappop(timers)
            if wake_at.get((name, key)) == at:
                del wake_at[(name, key)]
        return timers[0][0] if timers else None

    # --- one reconcile (the conformance `reconcile` step) ----------------------------
    def reconcile(self, controller: str, key: Key, ctx: Context) -> tuple[Result, list[Key]]:
        """One reconcile, its effects applied; returns its Result and the keys it changed."""
        world = self.world
        if self._skipped:
            self._prove_skipped(ctx)
        settled = False
        if controller == SCHEDULER:
            result = scheduler.schedule(world, ctx, None if key[0] == SCHEDULER else key)
        else:
            ctl = self.controllers[controller]
            result = self._reconcile_kept(ctl, key, ctx) if self.verify else ctl.reconcile(world, key, ctx)
            if result.requeue_after is not None or result.error is not None:
                self._wake_up(ctx.now + (result.requeue_after or 0.0), controller, key)
            quiet = self._quiet.get(controller)
            if quiet is not None:
                _unquiet(quiet, key)
                if result.error is None:
                    if not result.effects:
                        wl = world.get(*key)
                        if isinstance(wl, Workload):
                            quiet[key] = wl
                    else:
                        settled = result.settled
            else:
                settled = result.settled and result.error is None
        self.reconciles += 1
        if not result.effects:  # most reconciles change nothing
            return result, []
        changes = self._apply(controller, key, result.effects)
        if not changes:
            return result, []
        self.changing_reconciles += 1
        self._on_change(controller, changes.items(), ctx, (controller, key) if settled else None)
        if settled:
            quiet = self._quiet.get(controller)
            wl = world.get(*key)
            if quiet is not None and isinstance(wl, Workload) and (controller, key) not in self._queued:
                quiet[key] = wl
        return result, list(changes)

    def _apply(self, controller: str, key: Key, effects: tuple[Effect, ...]) -> dict[Key, KubeObject | None]:
        """Apply effects in order; returns the keys of the objects that really changed, each
        with the object it held before the first of these effects.  Updates that change nothing
        are dropped; with ``verify``, a Workload change no declared transition allows raises."""
        world, verify, on_effect = self.world, self.verify, self.record.on_effect
        changed: dict[Key, KubeObject | None] = {}
        journal, world.journal = world.journal, None  # routed by the caller, not as an outside write
        try:
            for effect in effects:
                kind = type(effect)
                if kind is Update:
                    obj = effect.obj  # type: ignore[union-attr]
                    old = world.get(obj.KIND, obj.metadata.namespace, obj.metadata.name)
                    if same(old, obj):
                        continue
                    if verify:
                        verify_change(old, effect)  # type: ignore[arg-type]
                elif kind is not Create and kind is not Delete:  # an event or a metric
                    if on_effect is not None:
                        on_effect(controller, key, effect)
                    continue
                for k, before in world.apply_changes(effect):
                    # the reconciled object's own key rather than the world's fresh copy of it:
                    # what the engine keeps per object (quiet passes, wake-ups) then shares one
                    changed.setdefault(key if k == key else k, before)
                if on_effect is not None:
                    on_effect(controller, key, effect)
        finally:
            world.journal = journal
        return changed

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
        run_scheduler = SCHEDULER in wanted
        names = [n for n in self.controllers if n in wanted]
        self._collect_due(ctx)
        if self.verify:
            self._prove_skipped(ctx)
            self._check_quiet(ctx, names, skip=self._queued)

        queue, queued = self._queue, self._queued
        later: list[tuple[str, Key]] = []  # due for controllers this settle does not run
        errors: dict[tuple[str, Key], str] = {}
        started = self.reconciles
        budget = self.max_reconciles or 10_000 + 200 * len(self.world)
        retried = False
        world, reconcile = self.world, self.reconcile
        try:
            while True:
                changed_any = False
                while queue:
                    item = queue.popleft()
                    name, key = item
                    if name not in wanted:
                        later.append(item)
                        continue
                    queued.discard(item)
                    if key not in world:
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
                if run_scheduler:
                    _, changed = self.reconcile(SCHEDULER, (SCHEDULER, "", ""), ctx)
                    if changed:
                        retried = False
                        continue
                if errors:
                    if retried and not changed_any:
                        (name, key), error = next(iter(errors.items()))
                        raise SettleError(f"{name} reconcile of {key[1]}/{key[2]} keeps failing: {error}")
                    retried = True
                    for item in list(errors):
                        self._enqueue(*item)
                    continue
                break
        finally:
            queue.extendleft(reversed(later))
        if self.verify:
            self._prove_skipped(ctx)
            self._check_quiet(ctx, names)
            problem = queues.check_index(self.world)
            if problem is not None:
                raise SettleError(problem)

    # --- verify mode ------------------------------------------------------------------
    def _prove_skipped(self, ctx: Context) -> None:
        """Every reconcile left out since the last proof would change nothing now."""
        skipped, self._skipped = self._skipped, {}
        queued, world = self._queued, self.world
        for item, why in skipped.items():
            name, key = item
            if item not in queued and key in world:
                self._check_quiet_one(name, key, why, ctx)

    def _check_quiet(self, ctx: Context, names: list[str], skip: AbstractSet[tuple[str, Key]] = frozenset()) -> None:
        """Every reconcile of ``names`` not in ``skip`` would change nothing: what the engine
        does not schedule needs no scheduling, and a settle ends at a real fixed point.  A
        reconcile that changed nothing earlier at this instant, under this configuration, and
        every read of which still answers the same, is proven so by that run (controllers are
        deterministic); the others run again."""
        world, evidence = self.world, self._evidence
        still_reads, now, config = world.still_reads, ctx.now, ctx.config
        for name in names:
            for key in self.controllers[name].keys(world):
                item = (name, key)
                if item in skip:
                    continue
                kept = evidence.get(item)
                if kept is not None and kept[0] == now and kept[1] is config and still_reads(kept[2]) \
                        and self._timer_covers(name, key, kept[3], ctx):
                    continue
                self._check_quiet_one(name, key, "it was not scheduled", ctx)

    def _reconcile_kept(self, ctl: registry.Controller, key: Key, ctx: Context) -> Result:
        """A reconcile that keeps what it reads when it changes nothing (verify mode)."""
        world = self.world
        item = (ctl.name, key)
        reads: list[Read] = []
        world.reads = reads
        try:
            result = ctl.reconcile(world, key, ctx)
        finally:
            world.reads = None
        if not result.effects and result.error is None:
            self._evidence[item] = (ctx.now, ctx.config, reads, result.requeue_after)
        else:
            self._evidence.pop(item, None)
        return result

    def _timer_covers(self, name: str, key: Key, requeue_after: float | None, ctx: Context) -> bool:
        """Whether the wake-up a reconcile asks for is asked for already (no later)."""
        if requeue_after is None:
            return True
        asked = self._wake_at.get((name, key))
        return asked is not None and asked <= ctx.now + requeue_after

    def _check_quiet_one(self, name: str, key: Key, why: str, ctx: Context) -> None:
        self.proofs += 1
        self._judge(name, key, why, self._reconcile_kept(self.controllers[name], key, ctx), ctx)

    def _judge(self, name: str, key: Key, why: str, result: Result, ctx: Context) -> None:
        """A reconcile left out (for ``why``) must change nothing, fail with no error and ask
        no wake-up earlier than one asked already: ``result`` is what it answers now."""
        if changes_world(self.world, result):
            raise SettleError(f"{name} reconcile of {key[1]}/{key[2]} would still change the world "
                              f"but {why}: {describe(result)}")
        if result.error is not None:
            raise SettleError(f"{name} reconcile of {key[1]}/{key[2]} would fail but {why}: {result.error}")
        if not self._timer_covers(name, key, result.requeue_after, ctx):
            raise SettleError(f"{name} reconcile of {key[1]}/{key[2]} would ask to be woken in "
                                  f"{result.requeue_after}s but {why}")


Evidence = tuple[float, Configuration, list[Read], float | None]
"""A reconcile that changed nothing: when, under which configuration, what it read, and the
wake-up it asked for."""


Quiet = Workload | Parts | tuple[Parts, Hashable]
"""What a quiet pass read of its Workload: the Workload as it was, until a change asks, then the
parts it read, with the controller's view of them when it has one (a pair per Workload and
controller costs 56 bytes, kept as long as the Workload stays quiet)."""


def _unquiet(quiet: dict[Key, Quiet | None], key: Key) -> None:
    """``key``'s pass no longer stands as quiet.  The entry is voided, not removed, until the
    Workload goes: a Workload's quiet state comes and goes at every write, and removed and added
    again the entry would keep the key the write came with, a new 64-byte tuple each time."""
    if quiet.get(key) is not None:
        quiet[key] = None


def _quiet(ctl: registry.Controller, world: World, wl: Workload, config: Configuration
           ) -> Parts | tuple[Parts, Hashable]:
    assert ctl.reads is not None
    read = ctl.reads(world, wl, config)
    return read if ctl.view is None else (read, ctl.view(wl))


def _owners(world: World, key: Key, obj: KubeObject | None) -> list[Key]:
    """The Workload that controls ``obj`` (as it is, or was before its deletion): a request's
    controller, or a template's through the request that owns it (or the Workload itself,
    before the hand-over)."""
    if obj is None:
        return []
    ns = key[1]
    out = []
    for ref in obj.metadata.owner_references:
        if ref.kind == c.PROVISIONING_REQUEST:
            owner = world.get(c.PROVISIONING_REQUEST, ns, ref.name)
            ctrl = owner.metadata.controller_ref() if owner is not None else None
        else:
            ctrl = ref if ref.controller else None
        if ctrl is not None and ctrl.kind == c.WORKLOAD:
            out.append((c.WORKLOAD, ns, ctrl.name))
    return out


def _owning_jobs(key: Key, obj: KubeObject | None) -> list[Key]:
    """The jobs ``obj`` (a Workload, as it is or was) names as owners: those whose Workload it
    is (``controllers.job.workload_of``)."""
    if obj is None:
        return []
    return [(ref.kind, key[1], ref.name) for ref in obj.metadata.owner_references if ref.kind in JOB_KINDS]


def _owned(world: World, key: Key) -> list[Key]:
    """The Workloads a job (``key``, existing or deleted) owns by name."""
    return [key_of(wl) for wl in world.owned_by_name(c.WORKLOAD, key[1], key[2])]


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
