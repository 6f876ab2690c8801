"""The controller manager reconciles only what is due, and in verify mode proves it missed nothing.

What is due: objects a write touched (its own reconciles' writes through the watches, writes
made by anybody else through the world's journal), wake-ups whose time has come, and
reconciles that failed.  These tests drive one Manager over a small world (the explorer's:
one ClusterQueue, one provisioning check, one workload) and count what it reconciles.
"""

from __future__ import annotations

import gc
import sys
from collections import Counter
from collections.abc import Callable
from types import FrameType
from typing import cast

import kueue_provreq.engine.verify as verify_module
import pytest
from kueue_provreq.api import constants as c
from kueue_provreq.api.evolve import evolve
from kueue_provreq.api.frozen import FrozenMap
from kueue_provreq.api.job import Job, JobSpec
from kueue_provreq.api.meta import ObjectMeta, OwnerReference, Time
from kueue_provreq.api.objects import Key
from kueue_provreq.api.provisioning import PodTemplate, ProvisioningRequest
from kueue_provreq.api.workload import Workload
from kueue_provreq.controllers import registry
from kueue_provreq.controllers.context import Context
from kueue_provreq.engine import Manager, SettleError, VerifyingManager
from kueue_provreq.explore.search import (
    NAMESPACE,
    Options,
    autoscaler_step,
    build_config,
    build_objects,
)
from kueue_provreq.machines import WORKLOAD_MACHINE, IllegalTransition, Transition
from kueue_provreq.world import NOTHING, Delete, Result, Update, World

from builders import T0

OPTS = Options(backoff_limit=2)
CONFIG = build_config(OPTS)


def ctx(at: int = 0) -> Context:
    return Context(Time(T0 + at), CONFIG)


def spied(spy: Callable[[str], None]) -> dict[str, registry.Controller]:
    """The registry's controllers, each telling ``spy`` its name before every reconcile (passed
    to the Manager: the compiled engine's methods cannot be patched)."""
    def spying(ctl: registry.Controller) -> registry.Controller:
        def reconcile(world: World, key: Key, context: Context) -> Result:
            spy(ctl.name)
            return ctl.reconcile(world, key, context)
        return evolve(ctl, reconcile=reconcile)
    return {name: spying(ctl) for name, ctl in registry.BY_NAME.items()}


def fresh(verify: bool = False) -> tuple[World, Manager, Counter[str]]:
    """A settled world and its Manager; the counter counts reconciles per controller from now on
    (the scheduler's cycles: :func:`cycles`).  Fast mode unless ``verify``: a verifying Manager
    reruns reconciles to prove the ones it leaves out, which the counter would count too (the
    two modes run the same reconciles: tests/test_fast_verify.py)."""
    world = World(build_objects(OPTS))
    counts: Counter[str] = Counter()
    manager = Manager(world, verify=verify, controllers=spied(lambda name: counts.update((name,))))
    manager.settle(ctx())
    counts.clear()
    return world, manager, counts


def cycles(manager: Manager, counts: Counter[str], before: int) -> int:
    """The scheduler cycles run since the Manager had counted ``before`` reconciles (an idle
    scheduler, whom nothing it reads has changed, runs none)."""
    return manager.reconciles - before - sum(counts.values())


def request(world: World) -> ProvisioningRequest:
    (pr,) = world.objects(c.PROVISIONING_REQUEST)
    assert isinstance(pr, ProvisioningRequest)
    return pr


def workload(world: World) -> Workload:
    (wl,) = world.objects(c.WORKLOAD)
    assert isinstance(wl, Workload)
    return wl


def test_a_settle_with_nothing_new_reconciles_no_workload() -> None:
    world, manager, counts = fresh()
    before = manager.reconciles
    manager.settle(ctx())
    assert not any(counts[ctl.name] for ctl in registry.CONTROLLERS if c.WORKLOAD in ctl.kinds)
    # the queue and check reconcilers run only when what they read changed; the scheduler,
    # asked at every settle, runs no cycle: nothing it reads changed since one changed nothing
    assert counts["clusterqueue"] == counts["localqueue"] == counts["admissioncheck"] == 0
    assert cycles(manager, counts, before) == 0


def test_an_outside_write_is_picked_up_through_the_journal() -> None:
    world, manager, counts = fresh()
    autoscaler_step(world, request(world), "fail", T0)  # a write the Manager did not make
    manager.settle(ctx())
    assert counts["provisioning"] >= 1
    assert workload(world).check_state("check1").state == c.CHECK_RETRY  # type: ignore[union-attr]


def test_a_wake_up_runs_when_its_time_has_come_and_not_before() -> None:
    world, manager, counts = fresh()
    autoscaler_step(world, request(world), "fail", T0)
    manager.settle(ctx())
    assert workload(world).has_quota_reservation()  # the Retry eviction waits requeueAfterSeconds (60 s)
    assert manager.next_wake_up == T0 + 60
    counts.clear()
    manager.settle(ctx(59))
    assert counts["workload"] == 0 and workload(world).has_quota_reservation()
    manager.settle(ctx(60))
    assert counts["workload"] >= 1
    assert workload(world).check_state("check1").retry_count == 1  # type: ignore[union-attr]


def test_no_wake_up_for_an_object_that_is_gone() -> None:
    """A driver settling at ``next_wake_up`` would settle for nothing once the object is deleted."""
    world, manager, _ = fresh(verify=True)
    autoscaler_step(world, request(world), "fail", T0)
    manager.settle(ctx())
    assert manager.next_wake_up == T0 + 60
    wl = workload(world)
    world.apply(Delete(wl.KIND, wl.metadata.namespace, wl.metadata.name))
    assert manager.next_wake_up is None
    manager.settle(ctx(60))


def test_nothing_of_a_deleted_workload_is_kept() -> None:
    """A long-running driver deletes what is done with; the Manager must not hold on to it
    (its watch views reference the workload's parts)."""
    world, manager, _ = fresh(verify=True)
    manager.settle(ctx())
    wl = workload(world)
    meta = wl.metadata  # the models take no weak references (api/immutable): counted instead
    world.apply(Delete(wl.KIND, wl.metadata.namespace, wl.metadata.name))
    del wl
    manager.settle(ctx(1))
    gc.collect()
    assert sys.getrefcount(meta) == 2  # ``meta`` and the call's argument: nobody else holds it


def test_a_watch_skips_changes_its_controller_does_not_read() -> None:
    """A change to a field only the provisioning controller reads (a Pending check's message)
    wakes it (it puts the message back), never the workload controller nor the job integration."""
    world, manager, counts = fresh()
    wl = workload(world)
    state = wl.status.admission_checks[0]
    manager.world.put(wl.with_status(admission_checks=(evolve(state, message="seen by provisioning"),)))
    manager.settle(ctx())
    assert counts["provisioning"] >= 1 and counts["workload"] == 0 and counts["job"] == 0
    assert workload(world).status.admission_checks[0].message == ""


def test_verify_mode_counts_its_proofs_and_fast_mode_makes_none() -> None:
    """The skipped reconciles of the test above are each proven quiet once in verify mode; a
    fast Manager proves nothing (bench_core prints the proofs per workload)."""
    world, manager, _ = fresh(verify=True)
    assert isinstance(manager, VerifyingManager)
    wl = workload(world)
    state = wl.status.admission_checks[0]
    before = manager.proofs
    manager.world.put(wl.with_status(admission_checks=(evolve(state, message="seen by provisioning"),)))
    manager.settle(ctx())
    assert manager.proofs > before
    fast = Manager(World(build_objects(OPTS)), verify=False)
    fast.settle(ctx())
    assert fast.reconciles > 0 and not isinstance(fast, VerifyingManager)


def _functions_run(settle: Callable[[], None]) -> set[tuple[str, str]]:
    """(file, function) of every Python function ``settle`` runs."""
    ran: set[tuple[str, str]] = set()

    def profile(frame: FrameType, event: str, arg: object) -> None:
        if event == "call":
            ran.add((frame.f_code.co_filename, frame.f_code.co_name))
    sys.setprofile(profile)
    try:
        settle()
    finally:
        sys.setprofile(None)
    return ran


@pytest.mark.skipif(not str(verify_module.__file__).endswith(".py"),
                    reason="the engine is compiled (make test-compiled): a profiler sees no call of a compiled function")
def test_fast_mode_runs_none_of_the_verification() -> None:
    """Verification is the verifying manager's (engine/verify.py) and the index check's: a
    fast settle through a whole story (creation, provisioning, failure, retry) runs none of it,
    and a verifying one runs it."""
    def story(verify: bool) -> Callable[[], None]:
        def run() -> None:
            world = World(build_objects(OPTS))
            manager = Manager(world, verify=verify)
            manager.settle(ctx())
            autoscaler_step(world, request(world), "fail", T0)
            manager.settle(ctx())
            manager.settle(ctx(T0 + 120))
        return run

    verifying = {(f, n) for f, n in _functions_run(story(True))
                 if f == verify_module.__file__ or n == "check_index"}
    assert {"verify_change", "_prove_skipped", "_check_quiet", "check_index"} <= {n for _, n in verifying}
    fast = _functions_run(story(False))
    assert not fast & verifying, sorted(fast & verifying)
    assert all(f != verify_module.__file__ for f, _ in fast)


def test_a_watch_wakes_a_controller_when_what_it_reads_changes() -> None:
    """The same check in Retry: the workload controller reads its times and message then."""
    world, manager, counts = fresh()
    autoscaler_step(world, request(world), "fail", T0)
    manager.settle(ctx())
    counts.clear()
    wl = workload(world)
    state = wl.status.admission_checks[0]
    assert state.state == c.CHECK_RETRY
    manager.world.put(wl.with_status(admission_checks=(evolve(state, requeue_after_seconds=120),)))
    manager.settle(ctx())
    assert counts["workload"] >= 1 and counts["job"] == 0
    assert workload(world).status.requeue_state.requeue_at == T0 + 120  # type: ignore[union-attr]


def test_verify_catches_a_watch_that_ignores_what_its_controller_reads() -> None:
    # pretends to read nothing of its Workload
    manager = Manager(World(build_objects(OPTS)), controllers={**registry.BY_NAME, "provisioning": evolve(
        registry.BY_NAME["provisioning"], reads=lambda world, wl, config: 0)})
    # the scheduler reserves quota, which the provisioning controller must answer with a request
    with pytest.raises(SettleError, match="provisioning reconcile of default/wla would still change the "
                                          "world but its watch ignored a change by scheduler: Create PodTemplate"):
        manager.settle(ctx())


@pytest.mark.parametrize(("answer", "complaint"), [
    (Result(error="boom"), "would fail but its watch ignored a change by scheduler: boom"),
    (Result(requeue_after=30.0), "would ask to be woken in 30.0s but its watch ignored a change by scheduler"),
])
def test_verify_catches_a_left_out_reconcile_that_would_fail_or_ask_a_wake_up(
        answer: Result, complaint: str) -> None:
    """A proof that answers more than nothing is looked at closely: no error, no wake-up that
    is not asked already (the watch here ignores the quota reservation it must answer)."""
    real = registry.BY_NAME["provisioning"]

    def reconcile(world: World, key: Key, context: Context) -> Result:
        wl = world.get(*key)
        return answer if isinstance(wl, Workload) and wl.has_quota_reservation() else real.reconcile(world, key, context)

    manager = Manager(World(build_objects(OPTS)), controllers={**registry.BY_NAME, "provisioning": evolve(
        real, reconcile=reconcile, reads=lambda world, wl, config: 0)})
    with pytest.raises(SettleError, match=f"provisioning reconcile of default/wla {complaint}"):
        manager.settle(ctx())


def test_verify_catches_a_change_made_behind_the_managers_back() -> None:
    world, manager, _ = fresh(verify=True)
    journal, world.hooks.journal = world.hooks.journal, None  # a write the journal does not see
    autoscaler_step(world, request(world), "fail", T0)
    world.hooks.journal = journal
    with pytest.raises(SettleError, match="provisioning reconcile of default/wla would still change the "
                                          "world but it was not scheduled"):
        manager.settle(ctx())


def test_a_restricted_settle_leaves_the_other_controllers_work_for_later() -> None:
    world, manager, counts = fresh()
    autoscaler_step(world, request(world), "fail", T0)
    manager.settle(ctx(), ["provisioning"])
    assert workload(world).check_state("check1").state == c.CHECK_RETRY  # type: ignore[union-attr]
    assert counts["workload"] == 0 and workload(world).status.requeue_state is None
    manager.settle(ctx())
    assert counts["workload"] >= 1
    assert workload(world).status.requeue_state.requeue_at == T0 + 60  # type: ignore[union-attr]


def test_a_second_manager_takes_the_journal_and_the_first_then_sweeps() -> None:
    world, first, counts = fresh()
    second = Manager(world)
    assert world.hooks.journal is not None
    autoscaler_step(world, request(world), "fail", T0)
    second.settle(ctx())
    assert workload(world).check_state("check1").state == c.CHECK_RETRY  # type: ignore[union-attr]
    first.settle(ctx())  # knows nothing of what happened: reconciles everything, changes nothing
    assert counts["provisioning"] == 1 and counts["workload"] == 1 and counts["job"] == 1


def test_an_outside_change_to_a_template_wakes_its_workloads_provisioning() -> None:
    """Templates are the provisioning controller's output, so its own writes wake nobody; a
    change made by somebody else (here: the ownership handed back to the workload) does."""
    world, manager, counts = fresh()
    (pt,) = world.objects(c.POD_TEMPLATE)
    assert isinstance(pt, PodTemplate)
    wl = workload(world).metadata
    owned_by_workload = OwnerReference(c.KUEUE_V1BETA2, c.WORKLOAD, wl.name, wl.uid, True, True)
    world.put(evolve(pt, metadata=evolve(pt.metadata, owner_references=(owned_by_workload,))))
    manager.settle(ctx())
    assert counts["provisioning"] >= 1
    pt = world.get(c.POD_TEMPLATE, pt.metadata.namespace, pt.metadata.name)  # type: ignore[assignment]
    ref = pt.metadata.controller_ref()
    assert ref is not None and (ref.kind, ref.name) == (c.PROVISIONING_REQUEST, request(world).metadata.name)


def test_an_outside_change_to_a_job_wakes_the_job_integration_of_its_workload() -> None:
    objects = build_objects(OPTS)
    (wl,) = (o for o in objects if isinstance(o, Workload))
    job = Job(ObjectMeta(name="job1", namespace=NAMESPACE, uid="job1-uid"), JobSpec(suspend=False))
    owned = evolve(wl, metadata=evolve(wl.metadata, owner_references=(
        OwnerReference("batch/v1", c.JOB, "job1", "job1-uid", True, True),)))
    world = World([*(o for o in objects if o is not wl), owned, job])
    manager = Manager(world)
    manager.settle(ctx())
    wl = workload(world)
    world.put(evolve(wl, spec=evolve(wl.spec, active=False)))
    manager.settle(ctx())  # deactivated, evicted: the job is stopped
    assert world.get(c.JOB, NAMESPACE, "job1").spec.suspend is True  # type: ignore[union-attr]
    world.put(job)  # somebody resumes it while the workload is still evicted
    manager.settle(ctx())
    assert workload(world).is_evicted()
    assert world.get(c.JOB, NAMESPACE, "job1").spec.suspend is True  # type: ignore[union-attr]


def test_settle_pauses_the_cyclic_collector_and_restores_it() -> None:
    seen: list[bool] = []
    world = World(build_objects(OPTS))
    manager = Manager(world, controllers=spied(lambda _: seen.append(gc.isenabled())))
    manager.settle(ctx())
    seen.clear()
    assert gc.isenabled()
    autoscaler_step(world, request(world), "fail", T0)
    manager.settle(ctx())
    assert seen and not any(seen)
    assert gc.isenabled()
    gc.disable()
    try:
        manager.settle(ctx())
        assert not gc.isenabled()  # a caller's own choice is kept
    finally:
        gc.enable()


def test_a_whole_story_creates_no_reference_cycles() -> None:
    """Why pausing the collector is safe: reference counting alone frees what a settle drops."""
    gc.collect()
    gc.disable()
    try:
        world = World(build_objects(OPTS))
        manager = Manager(world)
        manager.settle(ctx())
        for at, trigger in ((0, "fail"), (60, None), (60, "provision")):
            if trigger:
                autoscaler_step(world, max(world.objects(c.PROVISIONING_REQUEST),  # type: ignore[arg-type]
                                           key=lambda p: p.metadata.creation_timestamp or 0), trigger, Time(T0 + at))
            manager.settle(ctx(at))
        assert workload(world).is_admitted()
        del world, manager
        assert gc.collect() == 0
    finally:
        gc.enable()


# --- verify mode: a write must say which fires decided it -----------------------------------------


def _standing_in(write: Callable[[Workload], Update]) -> dict[str, registry.Controller]:
    """The controllers, the workload controller replaced by one that makes ``write`` of the
    workload, once."""
    def reconcile(world: World, key: Key, context: Context) -> Result:
        wl = world.get(*key)
        assert isinstance(wl, Workload)
        if wl.spec.extra.get("written"):
            return NOTHING
        update = write(wl)
        return Result((Update(evolve(update.obj, spec=evolve(
            cast(Workload, update.obj).spec, extra=FrozenMap({"written": True}))), update.transitions),))
    return {**registry.BY_NAME, "workload": evolve(registry.BY_NAME["workload"], reconcile=reconcile)}


def _deactivate(wl: Workload) -> Workload:
    return evolve(wl, spec=evolve(wl.spec, active=False))


@pytest.mark.parametrize("fired, error", [
    ((), "the write leaves it Inactive, its transitions say Pending"),
    # the trigger the controller fired gives another state than the one it wrote
    ((Transition("workload", "Pending", "delay", "Backoff"),), "leaves it Inactive, its transitions say Backoff"),
    # a fire the declaration does not have
    ((Transition("workload", "Pending", "admit", "Inactive"),), "Pending -admit-> Inactive is not a declared"),
])
def test_verify_refuses_a_write_its_transitions_do_not_explain(
        fired: tuple[Transition, ...], error: str) -> None:
    controllers = _standing_in(lambda wl: Update(_deactivate(wl), fired))
    world = World(build_objects(OPTS))  # a new workload: deactivating it is Pending -> Inactive
    with pytest.raises(IllegalTransition, match=error):
        Manager(world, controllers=controllers).settle(ctx())
    # fast mode takes the controllers' word for it
    world = World(build_objects(OPTS))
    Manager(world, verify=False, controllers=controllers).settle(ctx())
    assert not workload(world).is_active


def test_verify_accepts_the_write_its_fire_decided() -> None:
    controllers = _standing_in(lambda wl: Update(_deactivate(wl), (
        WORKLOAD_MACHINE.transition("Pending", "deactivate"),)))
    world = World(build_objects(OPTS))
    Manager(world, controllers=controllers).settle(ctx())
    assert not workload(world).is_active


def test_verify_refuses_a_check_state_changed_without_its_fire() -> None:
    def ready_behind_the_machines_back(wl: Workload) -> Update:
        (check,) = wl.status.admission_checks
        return Update(wl.with_status(admission_checks=(evolve(check, state=c.CHECK_READY),)))
    world = World(build_objects(OPTS))
    Manager(world).settle(ctx())  # quota reserved, the check Pending
    controllers = _standing_in(ready_behind_the_machines_back)
    world.put(workload(world))  # news to the stand-in
    with pytest.raises(IllegalTransition, match="check check1 Pending -> Ready without a transition"):
        Manager(world, controllers=controllers).settle(ctx())


def test_the_engine_is_rooms_of_small_classes() -> None:
    """The engine package keeps every class under 250 lines (issue 20: the accelerator does not
    swamp the specification)."""
    import ast
    from pathlib import Path

    import kueue_provreq.engine as engine_package
    sizes = {f"{path.name}:{node.name}": node.end_lineno - node.lineno + 1  # type: ignore[operator]
             for path in Path(engine_package.__file__).parent.glob("*.py")
             for node in ast.parse(path.read_text()).body if isinstance(node, ast.ClassDef)}
    assert "manager.py:Manager" in sizes and "verify.py:VerifyingManager" in sizes
    assert max(sizes.values()) < 250, sizes
