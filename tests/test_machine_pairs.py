"""Targeted tests for the (state, trigger) pairs that random histories reach only rarely:
each drives the real code (the provisioning reconcile, or a Workload change applied to a
World) from a hand-built state and checks the upstream outcome, written out here from the
spec rather than read back from the table."""

from __future__ import annotations

import attrs
import pytest
from test_provisioning import KEY, base, check, cond, config, request, run, state_of, updated, workload

from kueue_provreq.api import constants as c
from kueue_provreq.api.config import Configuration
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
from kueue_provreq.controllers import workload_status as ws
from kueue_provreq.machines import declarations as d
from kueue_provreq.machines.phases import workload_phase
from kueue_provreq.world import World

T0 = 1_700_000_000
STATES = (c.CHECK_PENDING, c.CHECK_READY, c.CHECK_RETRY, c.CHECK_REJECTED)


def with_check(state: str) -> Workload:
    return workload(checks=(AdmissionCheckState("check1", state, Time(T0), retry_count=1),))


#: trigger -> (extra objects, config override, expected state, expected message)
DECISIONS = {
    "capacity_revoked": ([request("wl-check1-1", cond(c.PR_CAPACITY_REVOKED, message="gone"))],
                         None, c.CHECK_REJECTED, "gone"),
    "no_decision": ([request("wl-check1-1")], None, c.CHECK_PENDING, ""),
    "waiting_for_capacity": ([request("wl-check1-1", cond(c.PR_ACCEPTED),
                                      cond(c.PR_PROVISIONED, c.FALSE, "ETA: 2024-01-01T10:00:00Z"))],
                             None, c.CHECK_PENDING, "ETA: 2024-01-01T10:00:00Z"),
    "provisioned": ([request("wl-check1-1", cond(c.PR_PROVISIONED, message="ready"))],
                    None, c.CHECK_READY, "ready"),
    "request_not_needed": ([], config(managed_resources=("nvidia.com/gpu",)), c.CHECK_READY,
                           c.MSG_NO_REQUEST_NEEDED),
}


@pytest.mark.parametrize("state", STATES)
@pytest.mark.parametrize("trigger", sorted(DECISIONS))
def test_every_request_decision_from_every_check_state(state: str, trigger: str) -> None:
    extra, prc, want_state, want_message = DECISIONS[trigger]
    result = run(base(*extra, wl=with_check(state), prc=prc))
    unchanged = (state, want_state) == (c.CHECK_READY, c.CHECK_READY) or \
        (state, "") == (want_state, want_message)
    if unchanged:
        # a Ready check stays as it is (neither message nor podSetUpdates refreshed), and a
        # decision that changes nothing writes nothing
        assert not [o for o in updated(result, c.WORKLOAD)]
        return
    got = state_of(result)
    assert (got.state, got.message) == (want_state, want_message)
    assert got.retry_count == 1, "retryCount is never written by the provisioning controller"


@pytest.mark.parametrize("state", STATES)
def test_missing_config_makes_every_state_pending_and_inactive(state: str) -> None:
    objects = [o for o in base(wl=with_check(state)) if o.KIND != c.PROVISIONING_REQUEST_CONFIG]
    got = state_of(run(objects))
    assert (got.state, got.message) == (c.CHECK_PENDING, c.MSG_CHECK_INACTIVE)


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


def finish(wl: Workload) -> Workload:
    return ws.set_cond(wl, c.WORKLOAD_FINISHED, c.TRUE, "Succeeded", "Job finished successfully", Time(T0))


def deactivate(wl: Workload) -> Workload:
    return attrs.evolve(wl, spec=attrs.evolve(wl.spec, active=False))


def unset_quota(wl: Workload) -> Workload:
    return ws.unset_quota_reservation(wl, c.REASON_EVICTED_BY_TEST, c.MSG_EVICTED_BY_TEST, Time(T0),
                                      Configuration())


def check_pending_again(wl: Workload) -> Workload:
    wl = wl.with_status(admission_checks=(AdmissionCheckState("check1", c.CHECK_PENDING, Time(T0)),))
    return ws.sync_admitted_condition(wl, Time(T0), Configuration())


def delay(wl: Workload) -> Workload:
    return ws.set_requeue_state(wl, Time(T0 + 60), increment=False)


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
    (d.ADMITTED, check_pending_again, d.QUOTA_RESERVED),
    (d.PENDING, delay, d.BACKOFF),
])
def test_workload_phase_changes(phase: str, change: object, expected: str) -> None:
    world = World([phase_workload(phase)])
    old = world.get(c.WORKLOAD, "ns", "wl")
    assert isinstance(old, Workload) and callable(change)
    new = change(old)
    world.put(new)
    assert workload_phase(new) == expected
    if expected != phase:
        assert d.WORKLOAD_MACHINE.allows(phase, expected)


def test_key_is_the_provisioning_tests_workload() -> None:
    assert KEY == (c.WORKLOAD, "ns", "wl") and check().metadata.name == "check1"
