"""Verify mode: the engine that proves it missed nothing.

``Manager(world)`` is a :class:`VerifyingManager` (the default of the runner, the explorer and
the tests); ``Manager(world, verify=False)`` is the fast engine, which runs nothing of this
module.  It checks every Workload write against the declared machines (:func:`verify_change`),
proves every reconcile the routing left out would change nothing, and that a settle ends at a
real fixed point, with the queue index equal to one built afresh.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from collections.abc import Set as AbstractSet

from kueue_provreq.api.config import Configuration
from kueue_provreq.api.evolve import same
from kueue_provreq.api.objects import Key, KubeObject
from kueue_provreq.api.workload import Workload
from kueue_provreq.controllers import queues, registry, scheduler
from kueue_provreq.controllers.context import Context
from kueue_provreq.controllers.parts import Parts
from kueue_provreq.engine.due import Item
from kueue_provreq.engine.manager import SCHEDULER, Manager, Recorder, SettleError, changes_world, describe
from kueue_provreq.engine.routing import Witness
from kueue_provreq.machines import ADMISSION_CHECK_MACHINE, MACHINES, WORKLOAD_MACHINE, IllegalTransition, Transition
from kueue_provreq.machines.phases import workload_phase
from kueue_provreq.world import Read, Result, Update, World

Evidence = tuple[float, Configuration, list[Read], float | None]
"""A reconcile that changed nothing: when, under which configuration, what it read, and the
wake-up it asked for."""


def verify_change(old: KubeObject | None, update: Update) -> None:
    """A Workload write must name, as its transitions, the fires that explain every phase and
    check-state change it makes: chained from the old phase to the new one, each a declared
    (source, trigger, target), each check's from its old state to its new one.
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


def checked_change(old: KubeObject, update: Update, diff: Parts) -> None:
    """The write path's no-op test agrees with a deep equality (``diff`` is 0 when, and only
    when, ``update`` leaves ``old`` as it is), and a write that changes something is one its
    transitions explain (:func:`verify_change`)."""
    if (not diff) != same(old, update.obj):
        raise SettleError(f"the write path found {update.obj.KIND} {update.obj.metadata.name} "
                          f"{'unchanged' if not diff else 'changed'} by a write that "
                          f"{'changes' if not diff else 'leaves'} it")
    if diff:
        verify_change(old, update)


_WORKLOAD_MACHINE = WORKLOAD_MACHINE.name
_CHECK_MACHINE = ADMISSION_CHECK_MACHINE.name


def _where(wl: Workload) -> str:
    return f"workload {wl.metadata.namespace}/{wl.metadata.name}"


class Witnessed:
    """The routing's witness: the reconciles left out since the last proof, and per pair whose
    last reconcile changed nothing, what it read and when (the manager's own state would make a
    reference cycle of it, and the engine pauses the cyclic collector)."""

    __slots__ = ("skips", "evidence")

    def __init__(self) -> None:
        self.skips: dict[Item, str] = {}
        self.evidence: dict[Item, Evidence] = {}

    def skipped(self, name: str, key: Key, why: str) -> None:
        self.skips.setdefault((name, key), why)

    def gone(self, name: str, key: Key) -> None:
        self.evidence.pop((name, key), None)


class VerifyingManager(Manager):
    """The engine in verify mode: every reconcile it leaves out would change nothing, ask for no
    earlier wake-up and fail with no error, and after a settle every reconcile changes nothing
    (as before a settle every one it does not schedule)."""

    verify = True

    def __init__(self, world: World, record: Recorder | None = None, verify: bool = True,
                 max_reconciles: int | None = None,
                 controllers: Mapping[str, registry.Controller] | None = None) -> None:
        #: reconciles rerun to prove that one left out would change nothing
        self.proofs = 0
        #: what was left out, and what quiet reconciles read (:meth:`_check_quiet` takes it as
        #: proof while every read still answers the same)
        self._witnessed = Witnessed()
        super().__init__(world, record, verify, max_reconciles, controllers)
        self._check_change = checked_change  # a function, not a bound method: no reference cycle

    def _witness(self) -> Witness:
        return self._witnessed

    # --- the engine's steps, checked --------------------------------------------------
    def reconcile(self, controller: str, key: Key, ctx: Context) -> tuple[Result, Collection[Key]]:
        """The engine's reconcile, after the proofs of what was left out, keeping what it read
        when it changed nothing."""
        if self._witnessed.skips:
            self._prove_skipped(ctx)
        if controller == SCHEDULER:
            return super().reconcile(controller, key, ctx)
        hooks = self.world.hooks
        reads: list[Read] = []
        hooks.reads = reads
        try:
            result, changed = super().reconcile(controller, key, ctx)
        finally:
            hooks.reads = None
        self._keep(controller, key, result, reads, ctx)
        return result, changed

    def _idle(self, ctx: Context) -> bool:
        """A scheduling cycle left out runs all the same, and must change nothing."""
        if not super()._idle(ctx):
            return False
        self.proofs += 1
        result = scheduler.schedule(self.world, ctx)
        if changes_world(self.world, result) or result.effects or result.error is not None:
            raise SettleError(f"a scheduling cycle would still {describe(result) or result.error} but the "
                              "scheduler waited: nothing it reads had changed since a cycle that changed nothing")
        return True

    def _keep(self, name: str, key: Key, result: Result, reads: list[Read], ctx: Context) -> None:
        """A reconcile that changed nothing is kept with what it read, as evidence."""
        if not result.effects and result.error is None:
            self._witnessed.evidence[(name, key)] = (ctx.now, ctx.config, reads, result.requeue_after)
        else:
            self._witnessed.evidence.pop((name, key), None)

    def _settle(self, ctx: Context, controllers: Iterable[str]) -> None:
        wanted = set(controllers)
        names = [n for n in self.controllers if n in wanted]
        self._collect_due(ctx)
        self._prove_skipped(ctx)
        self._check_quiet(ctx, names, skip=self.due.queued)
        self._drain(ctx, wanted)
        self._prove_skipped(ctx)
        self._check_quiet(ctx, names)
        problem = queues.check_index(self.world)
        if problem is not None:
            raise SettleError(problem)

    def _run(self, name: str, key: Key, ctx: Context) -> Result:
        """A reconcile whose effects are not applied, kept as evidence when it changes nothing."""
        hooks = self.world.hooks
        reads: list[Read] = []
        hooks.reads = reads
        try:
            result = self.controllers[name].reconcile(self.world, key, ctx)
        finally:
            hooks.reads = None
        self._keep(name, key, result, reads, ctx)
        return result

    # --- the proofs ---------------------------------------------------------------------
    def _prove_skipped(self, ctx: Context) -> None:
        """Every reconcile left out since the last proof would change nothing now."""
        skipped, self._witnessed.skips = self._witnessed.skips, {}
        queued, world = self.due.queued, self.world
        for item, why in skipped.items():
            name, key = item
            if item not in queued and key in world:
                self._check_quiet_one(name, key, why, ctx)

    def _check_quiet(self, ctx: Context, names: list[str], skip: AbstractSet[Item] = frozenset()) -> None:
        """Every reconcile of ``names`` not in ``skip`` would change nothing: what the engine
        does not schedule needs no scheduling, and a settle ends at a real fixed point.  A
        reconcile that changed nothing earlier at this instant, under this configuration, and
        every read of which still answers the same, is proven so by that run (controllers are
        deterministic); the others run again."""
        world, evidence = self.world, self._witnessed.evidence
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

    def _timer_covers(self, name: str, key: Key, requeue_after: float | None, ctx: Context) -> bool:
        """Whether the wake-up a reconcile asks for is asked for already (no later)."""
        if requeue_after is None:
            return True
        asked = self.due.wake_at.get((name, key))
        return asked is not None and asked <= ctx.now + requeue_after

    def _check_quiet_one(self, name: str, key: Key, why: str, ctx: Context) -> None:
        """A reconcile left out (for ``why``) must change nothing, fail with no error and ask
        no wake-up earlier than one asked already."""
        self.proofs += 1
        result = self._run(name, key, ctx)
        where = f"{name} reconcile of {key[1]}/{key[2]}"
        if changes_world(self.world, result):
            raise SettleError(f"{where} would still change the world but {why}: {describe(result)}")
        if result.error is not None:
            raise SettleError(f"{where} would fail but {why}: {result.error}")
        if not self._timer_covers(name, key, result.requeue_after, ctx):
            raise SettleError(f"{where} would ask to be woken in {result.requeue_after}s but {why}")


Manager.verifying = VerifyingManager
