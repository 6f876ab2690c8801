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
from kueue_provreq.api.evolve import same
from kueue_provreq.api.objects import Key, KubeObject, key_of
from kueue_provreq.api.workload import Workload
from kueue_provreq.controllers import registry, scheduler
from kueue_provreq.controllers.context import Context
from kueue_provreq.controllers.registry import Route, Watch
from kueue_provreq.errors import KueueProvreqError
from kueue_provreq.machines import (
    ADMISSION_CHECK_MACHINE,
    MACHINES,
    WORKLOAD_MACHINE,
    Actor,
    IllegalTransition,
    WorkloadPhase,
)
from kueue_provreq.machines.phases import workload_phase
from kueue_provreq.world import Create, Delete, Effect, Result, Update, World

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
    A plain lookup, not a second decision: the controller's fire was the decision."""
    new = update.obj
    if not isinstance(new, Workload) or not isinstance(old, Workload):
        return
    fired = update.transitions
    if old.status is new.status and old.spec is new.spec and not fired:
        return
    where = f"workload {new.metadata.namespace}/{new.metadata.name}"
    for t in fired:
        if not MACHINES[t.machine].declares(t):
            raise IllegalTransition(f"{where}: {t.describe()} is not a declared transition")
    phase = workload_phase(old)
    for t in fired:
        if t.machine == WORKLOAD_MACHINE.name:
            if t.source != phase:
                raise IllegalTransition(f"{where}: {t.describe()} fired from {phase}")
            phase = WorkloadPhase(t.target)
    after = workload_phase(new)
    if after != phase:
        raise IllegalTransition(f"{where}: the write leaves it {after}, its transitions say {phase}")
    if old.status.admission_checks is new.status.admission_checks and not fired:
        return
    before = {s.name: s.state for s in old.status.admission_checks}
    moved = {t.item: t for t in fired if t.machine == ADMISSION_CHECK_MACHINE.name}
    for s in new.status.admission_checks:
        prev = before.get(s.name)
        move = moved.get(s.name)
        if move is not None:
            if (move.source, move.target) != (prev, s.state):
                raise IllegalTransition(f"{where}: check {s.name} went {prev} -> {s.state}, "
                                        f"its transition says {move.describe()}")
        elif prev is not None and prev != s.state:
            raise IllegalTransition(f"{where}: check {s.name} {prev} -> {s.state} without a transition")


class Manager:
    """Runs controllers to a fixed point at one instant.

    Like a controller manager, it reconciles only what has reason to change: objects some write
    touched (its own reconciles' writes through the watches below, and writes made to the world
    by anybody else, which the world's journal records), reconciles whose wake-up time has come
    (``Result.requeue_after``), and reconciles that failed.  The first settle reconciles
    everything.  The ClusterQueue and AdmissionCheck reconcilers, one per queue or check and
    time-dependent through the queue counts, run at every settle.

    With ``verify`` (the default) it also proves that nothing was missed: before a settle every
    reconcile it does not schedule, and after it every reconcile, must change nothing.
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
        #: owner Workload of each ProvisioningRequest deleted by a reconcile, so that the
        #: deletion can still be routed to the owner's provisioning reconcile
        self.deleted_owners: dict[Key, str] = {}
        #: (controller, key) pairs due for a reconcile, in the order they became due; kept
        #: across settles (a settle restricted to some controllers leaves the others' work)
        self._queue: deque[tuple[str, Key]] = deque()
        self._queued: set[tuple[str, Key]] = set()
        #: wake-ups asked for: (time, sequence, controller, key)
        self._timers: list[tuple[float, int, str, Key]] = []
        self._timer_seq = count()
        self._wake_at: dict[tuple[str, Key], float] = {}  # the earliest wake-up of each pair
        self._journal: dict[Key, None] = {}
        self._swept = False
        #: per watched controller, Workload key -> what its last reconcile read, when that
        #: reconcile changed nothing (so a change elsewhere in the Workload need not wake it)
        self._quiet: dict[str, dict[Key, Hashable]] = {}
        self._cq_keys: list[Key] | None = None
        #: the controllers this Manager runs (the registry's, as it stands when it starts), and
        #: who watches each kind, in the registry's order (the order reconciles become due)
        self.controllers: dict[str, registry.Controller] = dict(registry.BY_NAME)
        self._watchers: dict[str, list[tuple[registry.Controller, Watch]]] = {}
        for ctl in self.controllers.values():
            for w in ctl.watches:
                self._watchers.setdefault(w.kind, []).append((ctl, w))
        world.journal = self._journal

    # --- what is due --------------------------------------------------------------------
    def _enqueue(self, name: str, key: Key) -> None:
        item = (name, key)
        if item not in self._queued:
            self._queued.add(item)
            self._queue.append(item)

    def _enqueue_all(self) -> None:
        self._cq_keys = None
        for ctl in self.controllers.values():
            self._enqueue_every(ctl)

    def _enqueue_every(self, ctl: registry.Controller) -> None:
        keys = self._cluster_queues() if ctl.kind == c.CLUSTER_QUEUE else self.world.keys(ctl.kind)
        for key in keys:
            self._enqueue(ctl.name, key)

    def _on_change(self, writer: str, keys: Iterable[Key], ctx: Context) -> None:
        """The watches (``controllers.registry``): which reconciles a change made by ``writer``
        makes due."""
        world = self.world
        for key in keys:
            kind = key[0]
            if kind == c.CLUSTER_QUEUE and writer != Actor.CLUSTER_QUEUE:
                self._cq_keys = None  # queues come and go only by writes from outside
            obj = world.get(*key)
            for ctl, watch in self._watchers.get(kind, ()):
                if watch.unless_written_by == writer:
                    continue
                route = watch.route
                if route is Route.SELF:
                    self._changed_self(ctl, key, obj, writer, ctx)
                elif route is Route.ALL:
                    self._enqueue_every(ctl)
                else:
                    owners = _owners(world, key, obj) if route is Route.OWNER else _owned(world, key, obj)
                    if owners is None:  # deleted: whose it was is no longer known
                        owner = self.deleted_owners.get(key) if route is Route.OWNER else None
                        if owner is None:
                            self._enqueue_all()
                            continue
                        owners = [(c.WORKLOAD, key[1], owner)]
                    for owner_key in owners:
                        self._enqueue(ctl.name, owner_key)
            self.deleted_owners.pop(key, None)

    def _changed_self(self, ctl: registry.Controller, key: Key, obj: KubeObject | None, writer: str,
                      ctx: Context) -> None:
        """An object the controller reconciles changed: due, unless its watch predicate says the
        reconcile, which changed nothing last time, reads nothing that changed."""
        view = ctl.watched
        if view is None or (ctl.name, key) in self._queued:
            self._enqueue(ctl.name, key)
            return
        quiet = self._quiet.get(ctl.name, {}).get(key)
        if quiet is None or not isinstance(obj, Workload) or quiet != view(obj):
            self._enqueue(ctl.name, key)
        elif self.verify:
            self._check_quiet_one(ctl.name, key, f"its watch ignored a change by {writer or 'a client'}", ctx)

    def _cluster_queues(self) -> list[Key]:
        """The ClusterQueues' keys, kept between calls (every Workload change asks for them)."""
        if self._cq_keys is None:
            self._cq_keys = self.world.keys(c.CLUSTER_QUEUE)
        return self._cq_keys

    def _collect_due(self, ctx: Context) -> None:
        """Make due what became due since the last settle: outside writes, ended wake-ups."""
        world = self.world
        if not self._swept or world.journal is not self._journal:
            # first settle, or another Manager took over the journal: nothing is known
            self._swept = True
            self._journal.clear()
            world.journal = self._journal
            self._enqueue_all()
        elif self._journal:
            changed = list(self._journal)
            self._journal.clear()
            self._on_change("", changed, ctx)
        timers, wake_at = self._timers, self._wake_at
        while timers and timers[0][0] <= ctx.now:
            at, _, name, key = heapq.heappop(timers)
            if wake_at.get((name, key)) == at:
                del wake_at[(name, key)]
            self._enqueue(name, key)
        for ctl in self.controllers.values():
            if ctl.every_settle:
                self._enqueue_every(ctl)

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
        if controller == SCHEDULER:
            result = scheduler.schedule(world, ctx, None if key[0] == SCHEDULER else key)
        else:
            ctl = self.controllers[controller]
            result = ctl.reconcile(world, key, ctx)
            if result.requeue_after is not None or result.error is not None:
                self._wake_up(ctx.now + (result.requeue_after or 0.0), controller, key)
            if ctl.watched is not None:
                quiet = self._quiet.setdefault(controller, {})
                wl = world.get(*key) if not result.effects and result.error is None else None
                if isinstance(wl, Workload):
                    quiet[key] = ctl.watched(wl)
                else:
                    quiet.pop(key, None)
        self.reconciles += 1
        if not result.effects:  # most reconciles change nothing
            return result, []
        changed = self._apply(controller, key, result.effects)
        if changed:
            self._on_change(controller, changed, ctx)
        return result, changed

    def _apply(self, controller: str, key: Key, effects: tuple[Effect, ...]) -> list[Key]:
        """Apply effects in order; returns the keys of the objects that really changed.
        Updates that change nothing are dropped; with ``verify``, a Workload change no
        declared transition allows raises."""
        world, verify, on_effect = self.world, self.verify, self.record.on_effect
        changed: list[Key] = []
        journal, world.journal = world.journal, None  # routed by the caller, not as an outside write
        try:
            for effect in effects:
                if isinstance(effect, Update):
                    obj = effect.obj
                    old = world.get(obj.KIND, obj.metadata.namespace, obj.metadata.name)
                    if same(old, obj):
                        continue
                    if verify:
                        verify_change(old, effect)
                elif isinstance(effect, Delete):
                    if effect.kind == c.PROVISIONING_REQUEST:
                        self._remember_owner(effect)
                elif not isinstance(effect, Create):  # an event or a metric
                    if on_effect is not None:
                        on_effect(controller, key, effect)
                    continue
                changed.extend(world.apply(effect))
                if on_effect is not None:
                    on_effect(controller, key, effect)
        finally:
            world.journal = journal
        return changed

    def _remember_owner(self, effect: Delete) -> None:
        """A deleted request's owning Workload, to route the deletion to its reconcile."""
        gone = self.world.get(c.PROVISIONING_REQUEST, effect.namespace, effect.name)
        ref = gone.metadata.controller_ref() if gone is not None else None
        if ref is not None and ref.kind == c.WORKLOAD:
            self.deleted_owners[(c.PROVISIONING_REQUEST, effect.namespace, effect.name)] = ref.name

    # --- settle -------------------------------------------------------------------
    def settle(self, ctx: Context, controllers: Iterable[str] = ALL_CONTROLLERS) -> None:
        """Reconcile what is due until nothing changes at ``ctx.now``."""
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
            self._check_quiet(ctx, names)

    def _check_quiet(self, ctx: Context, names: list[str], skip: AbstractSet[tuple[str, Key]] = frozenset()) -> None:
        """Every reconcile of ``names`` not in ``skip`` would change nothing: what the engine
        does not schedule needs no scheduling, and a settle ends at a real fixed point."""
        for name in names:
            for key in self.world.keys(self.controllers[name].kind):
                if (name, key) not in skip:
                    self._check_quiet_one(name, key, "it was not scheduled", ctx)

    def _check_quiet_one(self, name: str, key: Key, why: str, ctx: Context) -> None:
        result = self.controllers[name].reconcile(self.world, key, ctx)
        if changes_world(self.world, result):
            raise SettleError(f"{name} reconcile of {key[1]}/{key[2]} would still change the world "
                              f"but {why}: {describe(result)}")


def _owners(world: World, key: Key, obj: KubeObject | None) -> list[Key] | None:
    """The Workload that controls ``obj``: a request's controller, or a template's through the
    request that owns it (or the Workload itself, before the hand-over); None when deleted."""
    if obj is None:
        return None
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


def _owned(world: World, key: Key, obj: KubeObject | None) -> list[Key] | None:
    """The Workloads ``obj`` (a Job) owns; None when it was deleted."""
    if obj is None:
        return None
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
