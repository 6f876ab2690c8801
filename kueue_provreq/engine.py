"""The controller manager: runs the sans-IO controllers over a World until nothing changes.

This is the one driver loop shared by the conformance runner, the simulator,
the benchmarks and the explorer.  It is deterministic: a FIFO queue of dirty
(controller, key) pairs, drained before each scheduler cycle, as the
conformance format's ``settle`` step specifies.  Every state change it applies
is checked against the declared machines (``verify``).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable

import attrs

from kueue_provreq.api import constants as c
from kueue_provreq.api.evolve import same
from kueue_provreq.api.objects import Key, KubeObject
from kueue_provreq.api.workload import Workload
from kueue_provreq.controllers import admissioncheck, clusterqueue, job, provisioning, scheduler, workload
from kueue_provreq.controllers.context import Context
from kueue_provreq.machines import ADMISSION_CHECK_MACHINE, WORKLOAD_MACHINE, IllegalTransition
from kueue_provreq.machines.phases import workload_phase
from kueue_provreq.world import Delete, Effect, Event, MetricInc, Result, Update, World

Reconcile = Callable[[World, Key, Context], Result]

#: controller name -> (the kind it reconciles, its reconcile function)
RECONCILERS: dict[str, tuple[str, Reconcile]] = {
    "workload": (c.WORKLOAD, workload.reconcile),
    "provisioning": (c.WORKLOAD, provisioning.reconcile),
    "job": (c.WORKLOAD, job.reconcile),
    "admissioncheck": (c.ADMISSION_CHECK, admissioncheck.reconcile),
    "clusterqueue": (c.CLUSTER_QUEUE, clusterqueue.reconcile),
}
SCHEDULER = "scheduler"
ALL_CONTROLLERS: tuple[str, ...] = ("scheduler", "workload", "provisioning", "job", "admissioncheck",
                                    "clusterqueue")


class SettleError(Exception):
    """A settle that cannot finish: a reconcile keeps failing, or the controllers never agree."""


@attrs.define
class Recorder:
    """Where the engine reports what happened besides object changes."""

    on_effect: Callable[[str, Key, Effect], None] | None = None

    def __call__(self, controller: str, key: Key, effect: Effect) -> None:
        if self.on_effect is not None:
            self.on_effect(controller, key, effect)


def verify_change(old: KubeObject | None, new: KubeObject) -> None:
    """Refuse a Workload change that no declared transition allows."""
    if not isinstance(new, Workload) or not isinstance(old, Workload) or old.status is new.status and old.spec is new.spec:
        return
    before, after = workload_phase(old), workload_phase(new)
    if before != after and not WORKLOAD_MACHINE.allows(before, after):
        raise IllegalTransition(f"workload {new.metadata.namespace}/{new.metadata.name}: "
                                f"{before} -> {after} is not a declared transition")
    if old.status.admission_checks is new.status.admission_checks:
        return
    states = {s.name: s.state for s in old.status.admission_checks}
    for s in new.status.admission_checks:
        prev = states.get(s.name)
        if prev is not None and prev != s.state and not ADMISSION_CHECK_MACHINE.allows(prev, s.state):
            raise IllegalTransition(f"workload {new.metadata.namespace}/{new.metadata.name}: check "
                                    f"{s.name} {prev} -> {s.state} is not a declared transition")


def apply_result(world: World, result: Result, controller: str, key: Key, record: Recorder,
                 verify: bool = True) -> list[Key]:
    """Apply a Result's effects in order; returns the keys of objects that really changed."""
    changed: list[Key] = []
    for effect in result.effects:
        if isinstance(effect, (Event, MetricInc)):
            record(controller, key, effect)
            continue
        if isinstance(effect, Update):
            obj = effect.obj
            old = world.get(obj.KIND, obj.metadata.namespace, obj.metadata.name)
            if same(old, obj):
                continue
            if verify:
                verify_change(old, obj)
        changed.extend(world.apply(effect))
        record(controller, key, effect)
    return changed


class Manager:
    """Runs controllers to a fixed point at one instant."""

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

    # --- one reconcile (the conformance `reconcile` step) ----------------------------
    def reconcile(self, controller: str, key: Key, ctx: Context) -> tuple[Result, list[Key]]:
        if controller == SCHEDULER:
            result = scheduler.schedule(self.world, ctx, None if key[0] == SCHEDULER else key)
        else:
            result = RECONCILERS[controller][1](self.world, key, ctx)
        self.reconciles += 1
        if not result.effects:  # most reconciles change nothing
            return result, []
        for effect in result.effects:
            if isinstance(effect, Delete) and effect.kind == c.PROVISIONING_REQUEST:
                gone = self.world.get(c.PROVISIONING_REQUEST, effect.namespace, effect.name)
                ref = gone.metadata.controller_ref() if gone is not None else None
                if ref is not None and ref.kind == c.WORKLOAD:
                    self.deleted_owners[(c.PROVISIONING_REQUEST, effect.namespace, effect.name)] = ref.name
        return result, apply_result(self.world, result, controller, key, self.record, self.verify)

    # --- settle -------------------------------------------------------------------
    def settle(self, ctx: Context, controllers: Iterable[str] = ALL_CONTROLLERS) -> None:
        names = [n for n in ALL_CONTROLLERS if n in set(controllers)]
        run_scheduler = SCHEDULER in names
        names = [n for n in names if n != SCHEDULER]
        queue: deque[tuple[str, Key]] = deque()
        queued: set[tuple[str, Key]] = set()

        def enqueue(name: str, key: Key) -> None:
            item = (name, key)
            if item not in queued:
                queued.add(item)
                queue.append(item)

        def enqueue_all() -> None:
            for name in names:
                for key in self.world.keys(RECONCILERS[name][0]):
                    enqueue(name, key)

        workload_controllers = [n for n in names if RECONCILERS[n][0] == c.WORKLOAD]

        def on_change(writer: str, keys: list[Key]) -> None:
            """The watches: which reconciles a change made by ``writer`` triggers."""
            for key in keys:
                kind = key[0]
                if kind == c.WORKLOAD:
                    for name in workload_controllers:
                        enqueue(name, key)
                    if "clusterqueue" in names:
                        for cq in self.world.keys(c.CLUSTER_QUEUE):
                            enqueue("clusterqueue", cq)
                elif kind == c.PROVISIONING_REQUEST:
                    obj = self.world.get(*key)
                    owner = obj.metadata.controller_ref() if obj is not None else None
                    if owner is not None and owner.kind == c.WORKLOAD:
                        if "provisioning" in names:
                            enqueue("provisioning", (c.WORKLOAD, key[1], owner.name))
                    elif obj is None:
                        owner_name = self.deleted_owners.pop(key, None)
                        if owner_name is None:
                            enqueue_all()
                        elif "provisioning" in names:
                            enqueue("provisioning", (c.WORKLOAD, key[1], owner_name))
                elif kind in (c.POD_TEMPLATE, c.JOB) or (kind == c.CLUSTER_QUEUE and writer == "clusterqueue"):
                    # templates are not watched; a Job's suspend and a ClusterQueue's own status
                    # are outputs, read again by the scheduler's next cycle only
                    continue
                elif kind == c.ADMISSION_CHECK and writer == "admissioncheck":
                    if "clusterqueue" in names:
                        for cq in self.world.keys(c.CLUSTER_QUEUE):
                            enqueue("clusterqueue", cq)
                else:
                    enqueue_all()

        errors: dict[tuple[str, Key], str] = {}
        started = self.reconciles
        budget = self.max_reconciles or 10_000 + 200 * len(self.world)
        enqueue_all()
        retried = False
        while True:
            changed_any = False
            while queue:
                item = queue.popleft()
                queued.discard(item)
                name, key = item
                if key not in self.world:
                    errors.pop(item, None)
                    continue
                result, changed = self.reconcile(name, key, ctx)
                if result.error is not None:
                    errors[item] = result.error
                else:
                    errors.pop(item, None)
                if changed:
                    changed_any = True
                    on_change(name, changed)
                if self.reconciles - started > budget:
                    raise SettleError(f"controllers did not settle after {budget} reconciles")
            if run_scheduler:
                _, changed = self.reconcile(SCHEDULER, (SCHEDULER, "", ""), ctx)
                if changed:
                    on_change(SCHEDULER, changed)
                    retried = False
                    continue
            if errors:
                if retried and not changed_any:
                    (name, key), error = next(iter(errors.items()))
                    raise SettleError(f"{name} reconcile of {key[1]}/{key[2]} keeps failing: {error}")
                retried = True
                for item in list(errors):
                    enqueue(*item)
                continue
            return
