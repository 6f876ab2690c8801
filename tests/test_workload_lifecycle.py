"""The Workload lifecycle from every phase it can be in: what users and Kueue's test helpers do
(finish, (de)activate, drop the quota) and what the workload controller does from the phases
the random histories reach only rarely.  Each drives the real code from a hand-built workload
and checks the phase upstream gives, written out here from the spec, and the fire the write
carries."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from kueue_provreq.api import constants as c
from kueue_provreq.api.config import Configuration
from kueue_provreq.api.evolve import evolve
from kueue_provreq.api.frozen import FrozenMap
from kueue_provreq.api.meta import Condition, ObjectMeta, Time
from kueue_provreq.api.workload import (
    Admission,
    AdmissionCheckState,
    PodSet,
    RequeueState,
    Workload,
    WorkloadSpec,
    WorkloadStatus,
)
from kueue_provreq.conformance.runner import quota_step, user_changes
from kueue_provreq.controllers import workload as workload_controller
from kueue_provreq.controllers import workload_status as ws
from kueue_provreq.controllers.context import Context
from kueue_provreq.engine import verify_change
from kueue_provreq.machines import WORKLOAD_MACHINE
from kueue_provreq.machines import WorkloadPhase as d
from kueue_provreq.machines.phases import workload_phase
from kueue_provreq.world import Update, World

from builders import T0
from test_provisioning import (
    KEY,
    check,
)

# --- workload phases a user or a test step moves -------------------------------------------


def phase_workload(phase: str) -> Workload:
    """A workload standing in ``phase`` (machines/phases.py reads it off the conditions)."""
    conds: list[Condition] = []
    admission = None
    requeue = None
    if phase in (d.QUOTA_RESERVED, d.ADMITTED, d.EVICTED):
        conds.append(Condition(c.WORKLOAD_QUOTA_RESERVED, c.TRUE, c.REASON_QUOTA_RESERVED, "", Time(T0)))
        admission = Admission("cq")
    if phase == d.ADMITTED:
        conds.append(Condition(c.WORKLOAD_ADMITTED, c.TRUE, c.REASON_ADMITTED, c.MSG_ADMITTED, Time(T0)))
    if phase == d.EVICTED:
        conds.append(Condition(c.WORKLOAD_EVICTED, c.TRUE, c.REASON_ADMISSION_CHECK, "", Time(T0)))
    if phase == d.BACKOFF:
        conds.append(Condition(c.WORKLOAD_REQUEUED, c.FALSE, c.REASON_ADMISSION_CHECK, "", Time(T0)))
        requeue = RequeueState(requeue_at=Time(T0 + 60))
    wl = Workload(ObjectMeta(name="wl", namespace="ns", uid="wl-uid", generation=1, creation_timestamp=Time(T0)),
                  WorkloadSpec((PodSet("main", 1, FrozenMap()),), "lq", active=phase != d.INACTIVE),
                  WorkloadStatus(tuple(conds), admission, (AdmissionCheckState("check1", c.CHECK_READY, Time(T0)),),
                                 requeue))
    assert workload_phase(wl) == phase
    return wl


def finish(wl: Workload) -> Update:
    new = ws.set_cond(wl, c.WORKLOAD_FINISHED, c.TRUE, "Succeeded", "Job finished successfully", Time(T0))
    return Update(new, user_changes(wl, new))


def deactivate(wl: Workload) -> Update:
    new = evolve(wl, spec=evolve(wl.spec, active=False))
    return Update(new, user_changes(wl, new))


def unset_quota(wl: Workload) -> Update:
    return quota_step(wl, None, Time(T0), Configuration())


def delay(wl: Workload) -> Update:
    """The workload controller records requeueAt for a Retry check of a workload without quota
    (the check went Retry after the eviction: KEP-3258's race)."""
    retry = AdmissionCheckState("check1", c.CHECK_RETRY, Time(T0), requeue_after_seconds=60)
    wl = wl.with_status(admission_checks=(retry,))
    [update] = workload_controller.reconcile(World([wl]), KEY, Context(Time(T0))).effects
    assert isinstance(update, Update)
    verify_change(wl, update)
    return update


#: Pairs that otherwise only the random histories of test_stateful.py reach: every one must be
#: driven by a deterministic test, or the machine-coverage check would depend on the examples drawn.
@pytest.mark.parametrize("phase,change,expected", [
    (d.PENDING, finish, d.FINISHED),
    (d.BACKOFF, finish, d.FINISHED),
    (d.QUOTA_RESERVED, finish, d.FINISHED),
    (d.ADMITTED, finish, d.FINISHED),
    (d.EVICTED, finish, d.FINISHED),
    (d.INACTIVE, finish, d.FINISHED),
    (d.ADMITTED, unset_quota, d.PENDING),        # a test's UnsetQuotaReservation, no eviction
    (d.BACKOFF, deactivate, d.INACTIVE),
    (d.EVICTED, deactivate, d.EVICTED),          # quota still held: the eviction runs its course
    (d.EVICTED, unset_quota, d.PENDING),         # the job integration's release, minus Requeued
    (d.PENDING, delay, d.BACKOFF),
])
def test_workload_phase_changes(phase: str, change: Callable[[Workload], Update], expected: str) -> None:
    old = phase_workload(phase)
    update = change(old)
    assert isinstance(update.obj, Workload) and workload_phase(update.obj) == expected
    [fired] = [t for t in update.transitions if t.machine == WORKLOAD_MACHINE.name]
    assert (fired.source, fired.target) == (phase, expected)
    if change is not delay:
        verify_change(old, update)


def reactivate(wl: Workload) -> Update:
    new = evolve(wl, spec=evolve(wl.spec, active=True))
    return Update(new, user_changes(wl, new))


@pytest.mark.parametrize("requeued,expected", [(None, d.PENDING), (c.FALSE, d.BACKOFF)])
def test_reactivation(requeued: str | None, expected: str) -> None:
    """A deactivated workload goes straight back to the queue, unless the release of its quota
    left ``Requeued=False`` (the workload controller then writes ``Reactivated``)."""
    old = phase_workload(d.INACTIVE)
    if requeued is not None:
        old = ws.set_cond(old, c.WORKLOAD_REQUEUED, requeued, "DeactivatedDueToAdmissionCheck", "", Time(T0))
    update = reactivate(old)
    verify_change(old, update)
    assert [(t.source, t.trigger, t.target) for t in update.transitions] == [(d.INACTIVE, "reactivate", expected)]


@pytest.mark.parametrize("phase", [d.QUOTA_RESERVED, d.ADMITTED, d.EVICTED])
def test_reactivated_before_the_eviction_completes(phase: str) -> None:
    """A user flips ``spec.active`` back while the workload still holds its quota: it keeps its
    phase (an eviction already begun runs its course)."""
    old = evolve(phase_workload(phase), spec=evolve(phase_workload(phase).spec, active=False))
    update = reactivate(old)
    verify_change(old, update)
    assert [(t.source, t.trigger, t.target) for t in update.transitions] == [(phase, "reactivate", phase)]


def _workload_pass(wl: Workload) -> Update:
    [update] = workload_controller.reconcile(World([wl]), KEY, Context(Time(T0))).effects
    assert isinstance(update, Update)
    verify_change(wl, update)
    return update


@pytest.mark.parametrize("phase", [d.EVICTED, d.INACTIVE])
def test_requeue_at_is_recorded_whatever_the_phase(phase: str) -> None:
    """``NeedsRequeueAtUpdate`` comes first in a pass, so a Retry check's delay is recorded on an
    evicted or deactivated workload too; neither leaves its phase for it."""
    retry = AdmissionCheckState("check1", c.CHECK_RETRY, Time(T0), requeue_after_seconds=60)
    update = _workload_pass(phase_workload(phase).with_status(admission_checks=(retry,)))
    assert update.obj.status.requeue_state == RequeueState(requeue_at=Time(T0 + 60))
    assert [(t.source, t.trigger, t.target) for t in update.transitions] == [(phase, "delay", phase)]


@pytest.mark.parametrize("phase", [d.ADMITTED, d.EVICTED])
def test_reactivated_while_holding_quota(phase: str) -> None:
    """``Requeued=False`` from a deactivation on a workload that holds quota again (a test
    helper reserved it): the workload controller still writes ``Reactivated``, in place."""
    wl = ws.set_cond(phase_workload(phase), c.WORKLOAD_REQUEUED, c.FALSE, "DeactivatedDueToAdmissionCheck", "",
                     Time(T0))
    update = _workload_pass(wl)
    requeued = update.obj.condition(c.WORKLOAD_REQUEUED)
    assert requeued is not None and (requeued.status, requeued.reason) == (c.TRUE, c.REASON_REACTIVATED)
    assert [(t.source, t.trigger, t.target) for t in update.transitions] == [(phase, "requeue", phase)]


def test_key_is_the_provisioning_tests_workload() -> None:
    assert KEY == (c.WORKLOAD, "ns", "wl") and check().metadata.name == "check1"


def test_evicted_with_every_check_ready_is_marked_admitted_in_place() -> None:
    """An evicted workload that still holds its quota, with every check Ready and no Admitted
    condition yet, is marked Admitted until the job releases the quota (the search reached it
    only through the pre-KEP-3258 race)."""
    wl = phase_workload(d.EVICTED)
    [update] = [e for e in workload_controller.reconcile(World([wl]), KEY, Context(Time(T0))).effects
                if isinstance(e, Update)]
    verify_change(wl, update)
    assert (d.EVICTED, "admit", d.EVICTED) in [(t.source, t.trigger, t.target) for t in update.transitions]
