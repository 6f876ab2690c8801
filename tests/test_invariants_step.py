"""Step invariants (``kueue_provreq.invariants.step``), by invariant.

Each fires on a hand-built step that breaks it and stays silent on a healthy one.  Each
exemption is replayed through the real engine, where the invariant does not fire, and then
broken one condition at a time, where it does.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from kueue_provreq import invariants as inv
from kueue_provreq.api import constants as c
from kueue_provreq.api.evolve import evolve
from kueue_provreq.api.meta import Condition, Time, set_condition
from kueue_provreq.api.objects import KubeObject
from kueue_provreq.api.provisioning import ProvisioningRequest, RetryStrategy
from kueue_provreq.api.workload import AdmissionCheckState, RequeueState, Workload
from kueue_provreq.world import World

import test_invariants_preemption
from builders import at
from invariant_builders import (
    CAPACITY,
    CTX,
    FAILED_1,
    GPU_CAPACITY,
    KEEP,
    LIMITED,
    NOT_READY,
    NOW,
    PENDING,
    PENDING_WL,
    REJECTED,
    WAIT_BROKEN,
    Pick,
    Replay,
    cond,
    good_world,
    replaced,
    request,
    step,
    stop_waiting,
    with_check_states,
    workload,
)

PENDING_AFTER_RESET = AdmissionCheckState("check", c.CHECK_PENDING, NOW, c.MSG_RESET_CHECK.format(state="Rejected"))

# invariant -> (the step that breaks it, its context)
CASES: dict[str, Callable[[], tuple[frozenset[KubeObject], World, inv.CheckContext]]] = {
    "transitions_are_declared": lambda: (*step([workload("wl", cond(c.WORKLOAD_FINISHED))], [workload()]), CTX),
    "admitted_only_with_ready_checks": lambda: (*step(
        [workload("wl", cond(c.WORKLOAD_QUOTA_RESERVED), checks=PENDING)],
        [workload(checks=PENDING)]), CTX),
    "finished_is_final": lambda: (*step([workload("wl", cond(c.WORKLOAD_FINISHED))],
                                        [workload("wl", cond(c.WORKLOAD_FINISHED), checks=PENDING)]), CTX),
    "attempts_never_decrease": lambda: (*step(
        [workload(checks=PENDING), request(3, cond(c.PR_FAILED))],
        [workload(checks=PENDING), request(3, cond(c.PR_FAILED)), request(2)]), CTX),
    "retry_moves_the_quota": lambda: (*step(
        [workload("wl", cond(c.WORKLOAD_QUOTA_RESERVED, seconds=100), checks=PENDING), FAILED_1],
        [workload("wl", cond(c.WORKLOAD_QUOTA_RESERVED, seconds=100), checks=PENDING), FAILED_1, request(2)]),
        CTX),
    "no_request_after_rejection": lambda: (*step(
        [workload("wl", cond(c.WORKLOAD_QUOTA_RESERVED), checks=(REJECTED,)), FAILED_1],
        [workload("wl", cond(c.WORKLOAD_QUOTA_RESERVED), checks=(REJECTED,)), FAILED_1, request(2)]), CTX),
    "rejection_deactivates": lambda: (*step(
        [workload("wl", cond(c.WORKLOAD_QUOTA_RESERVED), checks=(REJECTED,))],
        [workload("wl", cond(c.WORKLOAD_QUOTA_RESERVED),
                  cond(c.WORKLOAD_EVICTED, reason="DeactivatedDueToAdmissionCheck"),
                  checks=(PENDING_AFTER_RESET,))]), CTX),
    "pods_ready_limit_deactivates": lambda: (*step(
        [workload("wl", *NOT_READY, requeue_state=RequeueState(1))],
        [workload("wl", *NOT_READY, cond(c.WORKLOAD_EVICTED, reason=c.REASON_PODS_READY_TIMEOUT),
                  requeue_state=RequeueState(2))]), LIMITED),
    "no_early_requeue": lambda: (*step(
        [workload("wl", *PENDING_WL, requeue_state=RequeueState(None, at(2_000)))],
        [workload("wl", cond(c.WORKLOAD_QUOTA_RESERVED))]), CTX),
}


CASES.update(test_invariants_preemption.STEP_CASES)


def test_every_step_invariant_has_a_case() -> None:
    assert set(CASES) == set(inv.STEP_INVARIANTS)


@pytest.mark.parametrize("name", sorted(CASES))
def test_step_invariant_fires(name: str) -> None:
    before, after, ctx = CASES[name]()
    check = inv.STEP_INVARIANTS[name].step
    assert check is not None
    assert check(before, after, ctx), f"{name} stayed silent"
    good = good_world()
    assert check(good.snapshot(), good, ctx) == []


def without_the_wait(r: Replay, broken: str) -> tuple[frozenset[KubeObject], World]:
    """The replay's last step, with gpu-capacity no longer waiting for its request (one of
    ``WAIT_BROKEN``) both when the step began and in the first reconcile that saw its change
    (which reads the requests as the step found them, the rest as the step left it)."""
    before = stop_waiting(r.before, r.workload(), GPU_CAPACITY, broken, configs=r.m.world)
    if broken == "request in sync":
        return before, r.m.world
    return before, World(stop_waiting(r.m.world, r.workload(), GPU_CAPACITY, broken))


# --- retry_moves_the_quota ---------------------------------------------------------------------------


def test_quota_kept_under_keep_quota_and_released_by_default() -> None:
    """The rule's two faces: attempt 2 made while holding the quota is right under
    KeepQuotaForProvReqRetry, and made after an eviction and re-reservation is right by default."""
    held = workload("wl", cond(c.WORKLOAD_QUOTA_RESERVED, seconds=100), checks=PENDING)
    before, after = step([held, FAILED_1], [held, FAILED_1, request(2)])
    assert inv.retry_moves_the_quota(before, after, KEEP) == []
    waiting = workload("wl", cond(c.WORKLOAD_QUOTA_RESERVED, c.FALSE, seconds=960),
                       cond(c.WORKLOAD_EVICTED, reason=c.REASON_ADMISSION_CHECK, seconds=960), checks=PENDING)
    again = workload("wl", cond(c.WORKLOAD_QUOTA_RESERVED, seconds=980),
                     cond(c.WORKLOAD_EVICTED, c.FALSE, c.REASON_QUOTA_RESERVED, seconds=980), checks=PENDING)
    before, after = step([waiting, FAILED_1], [again, FAILED_1, request(2)])
    assert inv.retry_moves_the_quota(before, after, CTX) == []
    assert inv.retry_moves_the_quota(before, after, KEEP)


def lagging_check(capacity_limit: int = 2) -> Replay:
    """Up to the point where ``capacity`` made attempt 2 without going Retry.

    1. capacity's backoffLimitCount becomes ``capacity_limit``; wl1 (one pod, 1 cpu, 1 gpu)
       holds quota in both flavors: wl1-capacity-1, wl1-gpu-capacity-1.
    2. wl1-gpu-capacity-1 is Provisioned: gpu-capacity is Ready.
    3. gpu-capacity's class changes: its request is out of sync and deleted, and a Ready check
       never gets a new one (PC §1.7), so from now on every syncCheckStates returns early.
    4. wl1-capacity-1 fails: capacity stays Pending, retryCount None, and wl1-capacity-2 is made
       at once, with the quota held, whatever the limit."""
    r = Replay()
    r.m.change_config(CAPACITY, c.CLASS_CHECK_CAPACITY, {}, RetryStrategy(capacity_limit, 60, 1800), ())
    r.m.create_workload([(1, 1, 1)], {}, None)
    r.autoscaler("wl1-gpu-capacity-1", "provision")
    r.m.change_config(GPU_CAPACITY, c.CLASS_BEST_EFFORT_ATOMIC, {}, RetryStrategy(2, 0, 0), ())
    r.autoscaler("wl1-capacity-1", "fail")
    return r


def test_an_attempt_made_without_retry_while_another_check_waits_for_its_request() -> None:
    r = lagging_check()
    state = r.workload().check_state(CAPACITY)
    assert state is not None and (state.state, state.retry_count) == (c.CHECK_PENDING, None)
    gpu = r.workload().check_state(GPU_CAPACITY)
    assert gpu is not None and gpu.state == c.CHECK_READY
    assert r.request("wl1-capacity-1") is None and r.request("wl1-capacity-2") is not None
    assert r.workload().has_quota_reservation()
    assert inv.retry_moves_the_quota(r.before, r.m.world, r.ctx()) == []


@pytest.mark.parametrize("broken", WAIT_BROKEN)
def test_an_attempt_with_the_quota_held_is_reported_when_nothing_waits(broken: str) -> None:
    """syncCheckStates would have moved capacity to Retry, and attempt 2 needs the quota released."""
    r = lagging_check()
    before, after = without_the_wait(r, broken)
    assert inv.retry_moves_the_quota(before, after, r.ctx()) == [
        "default/wl1 check capacity: attempt 2 created without releasing the quota"]


def keep_quota_reserved_again() -> Replay:
    """Under KeepQuotaForProvReqRetry:

    1. capacity's retryStrategy becomes ``{backoffLimitCount: 1, backoffBaseSeconds: 0}``.
    2. wl1 (one pod, 1 gpu) holds quota; wl1-capacity-1 is Provisioned: capacity is Ready.
    3. gpu-capacity's config is deleted: its AdmissionCheck turns inactive and so does the
       ClusterQueue, so nothing gets quota any more.
    4. The quota is taken away without an eviction (UnsetQuotaReservation, as upstream's tests
       emulate preemption): the requests stay (PC §1.12) and the workload cannot get quota back.
    5. wl1-capacity-1 fails; the controller ignores a workload without quota (PC §1.2).
    6. gpu-capacity's config comes back: the workload gets quota, the controller sees the
       failure, capacity goes Pending (keep quota) and, the backoff of 0 s having passed, PC §1.7
       makes wl1-capacity-2 in this same step."""
    r = Replay(keep_quota=True)
    r.m.change_config(CAPACITY, c.CLASS_CHECK_CAPACITY, {}, RetryStrategy(1, 0, 0), ())
    r.m.create_workload([(1, 0, 1)], {}, None)
    r.autoscaler("wl1-capacity-1", "provision")
    r.m.config_presence(GPU_CAPACITY, False)
    r.m.unset_quota(Pick(r.workload()))
    r.autoscaler("wl1-capacity-1", "fail")
    r.step(r.m.config_presence, GPU_CAPACITY, True)  # settles and checks every invariant
    return r


def test_keep_quota_acts_on_a_failure_with_the_next_reservation() -> None:
    r = keep_quota_reserved_again()
    assert not r.workload_before().has_quota_reservation() and r.workload().has_quota_reservation()
    state = r.workload().check_state(CAPACITY)
    assert state is not None and state.state == c.CHECK_PENDING
    assert r.request("wl1-capacity-2") is not None
    assert inv.retry_moves_the_quota(r.before, r.m.world, r.ctx()) == []


@pytest.mark.parametrize("broken", ["quota held and reserved anew", "evicted for an admission check",
                                    "no quota after the step", "workload new in the step"])
def test_keep_quota_still_reports_an_attempt_after_losing_the_quota(broken: str) -> None:
    """The same step, started with a reservation that the step replaced, without quota after an
    eviction for an admission check (the default strategy's retry), ended without quota, or
    with a workload the step created, is reported."""
    r = keep_quota_reserved_again()
    prev = r.workload_before()
    before, after = r.before, r.m.world
    if broken == "quota held and reserved anew":
        held = Condition(c.WORKLOAD_QUOTA_RESERVED, c.TRUE, "QuotaReserved", "earlier", Time(r.m.now - 1))
        before = replaced(before, prev.with_status(conditions=set_condition(prev.status.conditions, held,
                                                                            Time(r.m.now - 1))[0]))
    elif broken == "evicted for an admission check":
        evicted = Condition(c.WORKLOAD_EVICTED, c.TRUE, c.REASON_ADMISSION_CHECK, "Evicted due to AdmissionCheck")
        before = replaced(before, prev.with_status(conditions=set_condition(prev.status.conditions, evicted,
                                                                            r.m.now)[0]))
    elif broken == "no quota after the step":
        after = World(replaced(after, r.workload().with_status(conditions=prev.status.conditions)))
    else:
        before = frozenset(o for o in before if o is not prev)
    found = inv.retry_moves_the_quota(before, after, r.ctx())
    assert found == ["default/wl1 check capacity: attempt 2 without keeping the quota"], found


# --- no_request_after_rejection ------------------------------------------------------------------------


def test_an_attempt_beyond_the_limit_while_another_check_waits_for_its_request() -> None:
    """The same early return ignores ``backoffLimitCount``: with a limit of 0 the failure of
    attempt 1 should reject capacity, but it stays Pending and attempt 2 is made."""
    r = lagging_check(capacity_limit=0)
    state = r.workload().check_state(CAPACITY)
    assert state is not None and state.state == c.CHECK_PENDING and r.request("wl1-capacity-2") is not None
    assert inv.no_request_after_rejection(r.before, r.m.world, r.ctx()) == []


@pytest.mark.parametrize("broken", WAIT_BROKEN)
def test_an_attempt_beyond_the_limit_is_reported_when_nothing_waits(broken: str) -> None:
    r = lagging_check(capacity_limit=0)
    before, after = without_the_wait(r, broken)
    assert inv.no_request_after_rejection(before, after, r.ctx()) == [
        "request wl1-capacity-2: attempt 2 beyond limit 0"]


def reserved_with_a_new_check() -> Replay:
    """The wait can come from a check the step itself added:

    1. capacity's limit becomes 0; wl1 (one pod, 1 cpu, 1 gpu) holds quota: wl1-capacity-1 and
       wl1-gpu-capacity-1.
    2. gpu-capacity's config is deleted: that check turns inactive, its request goes, and the
       ClusterQueue turns inactive (no more reservations).
    3. The quota is taken away without an eviction: the request stays (PC §1.12); without an
       admission wl1 carries only the check for every flavor, capacity (AR A.2).
    4. wl1-capacity-1 fails; the controller ignores a workload without quota (PC §1.2).
    5. gpu-capacity's config comes back: wl1 gets quota and gpu-capacity is added, Pending, with
       no request.  The first reconcile's syncCheckStates returns early on it, so capacity is
       not rejected, and PC §1.7 makes wl1-capacity-2 (and wl1-gpu-capacity-1).  Before the step
       the workload did not even carry gpu-capacity."""
    r = Replay()
    r.m.change_config(CAPACITY, c.CLASS_CHECK_CAPACITY, {}, RetryStrategy(0, 60, 1800), ())
    r.m.create_workload([(1, 1, 1)], {}, None)
    r.m.config_presence(GPU_CAPACITY, False)
    r.m.unset_quota(Pick(r.workload()))
    r.autoscaler("wl1-capacity-1", "fail")
    r.step(r.m.config_presence, GPU_CAPACITY, True)  # settles and checks every invariant
    return r


def test_an_attempt_beyond_the_limit_when_the_reservation_adds_a_check() -> None:
    r = reserved_with_a_new_check()
    assert [s.name for s in r.workload_before().status.admission_checks] == [CAPACITY]
    assert not r.workload_before().has_quota_reservation()
    state = r.workload().check_state(CAPACITY)
    assert state is not None and state.state == c.CHECK_PENDING and r.workload().has_quota_reservation()
    assert r.request("wl1-capacity-2") is not None and r.request("wl1-gpu-capacity-1") is not None
    assert inv.no_request_after_rejection(r.before, r.m.world, r.ctx()) == []


@pytest.mark.parametrize("broken", WAIT_BROKEN)
def test_an_attempt_beyond_the_limit_is_reported_when_the_added_check_does_not_wait(broken: str) -> None:
    """gpu-capacity's request in sync from the start, or gpu-capacity needing none, being another
    controller's or having no config in the world the step left: capacity would be Rejected."""
    r = reserved_with_a_new_check()
    before, after = without_the_wait(r, broken)
    assert inv.no_request_after_rejection(before, after, r.ctx()) == [
        "request wl1-capacity-2: attempt 2 beyond limit 0"]


def rejected_then_reconfigured() -> Replay:
    """1. wl1 (one pod, 2 cpu, 1 gpu) holds quota; wl1-capacity-1 is Provisioned, its booking
       expires (capacity Retry, requeueAt = now + 60 s), and the capacity is revoked: capacity
       is Rejected while the workload controller waits for requeueAt (AR A.7).
    2. capacity's class changes: wl1-capacity-1 is out of sync and deleted (PC §1.6), and PC
       §1.7, which skips only Ready checks, makes wl1-capacity-1 again (``retryCount+1``)."""
    r = Replay()
    r.m.create_workload([(1, 2, 1)], {}, None)
    r.autoscaler("wl1-capacity-1", "provision")
    r.autoscaler("wl1-capacity-1", "expire_booking")
    r.autoscaler("wl1-capacity-1", "revoke_capacity")
    r.step(r.m.change_config, CAPACITY, c.CLASS_BEST_EFFORT_ATOMIC, {}, RetryStrategy(2, 60, 1800), ())
    return r


def test_a_rejected_check_gets_the_same_attempt_again_after_a_config_change() -> None:
    r = rejected_then_reconfigured()
    assert r.check_before(CAPACITY).state == c.CHECK_REJECTED
    old = next(o for o in r.before if isinstance(o, ProvisioningRequest) and o.metadata.name == "wl1-capacity-1")
    new = r.request("wl1-capacity-1")
    assert new is not None and new.metadata.uid != old.metadata.uid
    assert inv.no_request_after_rejection(r.before, r.m.world, r.ctx()) == []


def test_a_further_attempt_for_a_rejected_check_is_reported() -> None:
    r = rejected_then_reconfigured()
    new = r.request("wl1-capacity-1")
    assert new is not None
    after = World([*(o for o in r.m.world if o is not new),
                   evolve(new, metadata=evolve(new.metadata, name="wl1-capacity-2"))])
    assert inv.no_request_after_rejection(r.before, after, r.ctx()) == [
        "request wl1-capacity-2 created for Rejected check capacity"]


def reactivated() -> Replay:
    """wl1 (one pod, 1 cpu) is deactivated (evicted, its request deleted), then reactivated: in
    that step it is requeued, gets quota, and wl1-capacity-1 is made again."""
    r = Replay()
    r.m.create_workload([(1, 1, 0)], {}, None)
    r.m.set_active(Pick(r.workload()), False)
    r.step(r.m.set_active, Pick(r.workload()), True)  # settles and checks every invariant
    return r


def test_a_request_for_a_workload_reactivated_in_the_step() -> None:
    r = reactivated()
    assert not r.workload_before().is_active and r.workload().is_active
    assert r.request("wl1-capacity-1") is not None
    assert inv.no_request_after_rejection(r.before, r.m.world, r.ctx()) == []


def test_a_request_for_a_workload_still_deactivated_is_reported() -> None:
    r = reactivated()
    wl = r.workload()
    after = World(replaced(r.m.world, evolve(wl, spec=evolve(wl.spec, active=False))))
    assert inv.no_request_after_rejection(r.before, after, r.ctx()) == [
        "request wl1-capacity-1 created for deactivated default/wl1"]


# --- attempts_never_decrease -----------------------------------------------------------------------------


def ready_check_reset() -> Replay:
    """Both checks retry at once (``backoffBaseSeconds: 0``):

    1. wl1 (one pod, 1 cpu, 1 gpu) holds quota; wl1-capacity-1 fails: capacity goes Retry, the
       workload is evicted at once (retryCount 1) and reserved again: wl1-capacity-2.
    2. wl1-capacity-2 is Provisioned: capacity is Ready.
    3. wl1-gpu-capacity-1 fails: gpu-capacity goes Retry and the workload is evicted; the
       eviction finds capacity Ready and resets its retryCount to nil (AR A.6), so with the
       next reservation capacity's attempt is named 1 again, after 2."""
    r = Replay()
    r.m.change_config(GPU_CAPACITY, c.CLASS_CHECK_CAPACITY, {}, RetryStrategy(2, 0, 0), ())
    r.m.change_config(CAPACITY, c.CLASS_CHECK_CAPACITY, {}, RetryStrategy(2, 0, 0), ())
    r.m.create_workload([(1, 1, 1)], {}, None)
    r.autoscaler("wl1-capacity-1", "fail")
    r.autoscaler("wl1-capacity-2", "provision")
    r.autoscaler("wl1-gpu-capacity-1", "fail")  # settles and checks every invariant
    return r


def test_an_eviction_that_finds_the_check_ready_restarts_its_numbering() -> None:
    r = ready_check_reset()
    assert (r.check_before(CAPACITY).state, r.check_before(CAPACITY).retry_count) == (c.CHECK_READY, 1)
    state = r.workload().check_state(CAPACITY)
    assert state is not None and state.retry_count is None
    assert r.request("wl1-capacity-2") is None and r.request("wl1-capacity-1") is not None
    assert inv.attempts_never_decrease(r.before, r.m.world, r.ctx()) == []


def test_a_decrease_for_a_check_the_eviction_did_not_reset_is_reported() -> None:
    """Had capacity been Pending (retryCount 1) when the eviction came, its retryCount would have
    stayed and the next attempt followed attempt 2."""
    r = ready_check_reset()
    prev = with_check_states(r.workload_before(), CAPACITY, state=c.CHECK_PENDING)
    found = inv.attempts_never_decrease(replaced(r.before, prev), r.m.world, r.ctx())
    assert found == ["default/wl1 check capacity: created attempt 1 after [2], retryCount None"], found


def reconfigured_under_keep_quota() -> Replay:
    """Under KeepQuotaForProvReqRetry (retryCount never grows), with ``backoffBaseSeconds: 0``:

    1. wl1 (one pod, 1 cpu) holds quota; wl1-capacity-1 fails: capacity stays Pending and
       wl1-capacity-2 is made at once.
    2. capacity's class changes: wl1-capacity-2 is out of sync and deleted (PC §1.6), and the
       next request is named ``retryCount+1`` = 1 (PC §1.7)."""
    r = Replay(keep_quota=True)
    r.m.change_config(CAPACITY, c.CLASS_CHECK_CAPACITY, {}, RetryStrategy(2, 0, 0), ())
    r.m.create_workload([(1, 1, 0)], {}, None)
    r.autoscaler("wl1-capacity-1", "fail")
    r.step(r.m.change_config, CAPACITY, c.CLASS_BEST_EFFORT_ATOMIC, {}, RetryStrategy(2, 0, 0), ())
    return r


def test_a_request_of_another_class_restarts_the_numbering() -> None:
    r = reconfigured_under_keep_quota()
    new = r.request("wl1-capacity-1")
    assert new is not None and new.spec.provisioning_class_name == c.CLASS_BEST_EFFORT_ATOMIC
    assert [m for m, _ in inv.requests_of(r.before, r.workload(), CAPACITY)] == [2]
    assert inv.attempts_never_decrease(r.before, r.m.world, r.ctx()) == []


def test_a_decrease_within_one_class_is_reported() -> None:
    r = reconfigured_under_keep_quota()
    new = r.request("wl1-capacity-1")
    assert new is not None
    after = World(replaced(r.m.world, evolve(new, spec=evolve(
        new.spec, provisioning_class_name=c.CLASS_CHECK_CAPACITY))))
    assert inv.attempts_never_decrease(r.before, after, r.ctx()) == [
        "default/wl1 check capacity: created attempt 1 after [2], retryCount None"]


def restarted() -> Replay:
    """:func:`lagging_check`, then:

    5. gpu-capacity's config is deleted (its check becomes Pending, "not active": no more early
       return) and created again with ``backoffBaseSeconds: 0``; wl1-gpu-capacity-1 is made.
    6. wl1-gpu-capacity-1 fails: gpu-capacity goes Retry with requeueAfterSeconds 0, the workload
       is evicted at once (capacity is Pending, so resetChecksOnEviction leaves its retryCount
       None, AR A.6), both requests are deleted (PC §1.12), the quota is released and reserved
       again, and PC §1.7 names capacity's next attempt retryCount+1 = 1 (C:284-288)."""
    r = lagging_check()
    r.m.config_presence(GPU_CAPACITY, False)
    r.m.change_config(GPU_CAPACITY, c.CLASS_CHECK_CAPACITY, {}, RetryStrategy(2, 0, 0), ())
    assert r.request("wl1-capacity-2") is not None and r.request("wl1-gpu-capacity-1") is not None
    r.autoscaler("wl1-gpu-capacity-1", "fail")  # settles and checks every invariant
    return r


def test_numbering_restarts_after_an_attempt_made_without_retry() -> None:
    r = restarted()
    state = r.workload().check_state(CAPACITY)
    assert state is not None and (state.state, state.retry_count) == (c.CHECK_PENDING, None)
    new = r.request("wl1-capacity-1")
    assert new is not None and new.metadata.uid not in {o.metadata.uid for o in r.before}
    assert r.request("wl1-capacity-2") is None
    assert [m for m, _ in inv.requests_of(r.before, r.workload(), CAPACITY)] == [2]  # a decrease from 2 to 1
    assert inv.attempts_never_decrease(r.before, r.m.world, r.ctx()) == []


def _renumbered(objs: frozenset[KubeObject], old: int, new: int) -> frozenset[KubeObject]:
    """``objs`` with capacity's request ``wl1-capacity-{old}`` renamed to ``-{new}``."""
    out: list[KubeObject] = []
    for o in objs:
        if isinstance(o, ProvisioningRequest) and o.metadata.name == f"wl1-{CAPACITY}-{old}":
            o = evolve(o, metadata=evolve(o.metadata, name=f"wl1-{CAPACITY}-{new}"))
        out.append(o)
    return frozenset(out)


@pytest.mark.parametrize("broken", ["no eviction", "older request kept", "not retryCount+1",
                                    "attempts not ahead of retryCount"])
def test_a_real_decrease_is_still_reported(broken: str) -> None:
    """Each condition of the exemption, broken on its own in the replayed step, is a decrease
    upstream cannot produce, and the invariant reports it."""
    r = restarted()
    before, after = r.before, r.m.world
    if broken == "no eviction":
        # e.g. a controller that restarts at retryCount+1 instead of naming the failed attempt + 1
        after = World(replaced(after, r.workload().with_status(extra=r.workload_before().status.extra)))
    elif broken == "older request kept":
        # wl1-capacity-2 survives: it would be the active request, the next name would follow it
        after = World(replaced(after, next(o for o in before if isinstance(o, ProvisioningRequest)
                                           and o.metadata.name == f"wl1-{CAPACITY}-2")))
    elif broken == "not retryCount+1":
        # attempt 2 after [3] with retryCount None: upstream would name it 1
        before = _renumbered(before, 2, 3)
        after = World(_renumbered(after.snapshot(), 1, 2))
    else:
        # before the step retryCount was 1, so attempt 2 did not run ahead of it; a decrease to 1
        # needs retryCount to drop, which resetChecksOnEviction never does to a Pending check
        before = replaced(before, with_check_states(r.workload_before(), CAPACITY, retry_count=1))
    found = inv.attempts_never_decrease(before, after, r.ctx())
    assert found and "created attempt" in found[0], found


def test_a_check_for_some_flavors_forgets_its_retries_with_the_quota() -> None:
    """Without an admission a workload carries only the checks for every flavor (AR A.2), so
    gpu-capacity's entry, retryCount included, goes when the evicted workload's quota is
    released (docs/differences.rst, ``retryCount``): with ``backoffLimitCount: 1`` it is never
    rejected and every retry is attempt 1 again, which is no decrease, while capacity (every
    flavor) counts its retry and is rejected."""
    r = Replay()
    r.m.change_config(GPU_CAPACITY, c.CLASS_CHECK_CAPACITY, {}, RetryStrategy(1, 0, 0), ())
    r.m.change_config(CAPACITY, c.CLASS_CHECK_CAPACITY, {}, RetryStrategy(1, 0, 0), ())
    r.m.create_workload([(1, 0, 1)], {}, None)
    for evictions in range(1, 4):
        old = r.request(f"wl1-{GPU_CAPACITY}-1")
        assert old is not None
        r.autoscaler(f"wl1-{GPU_CAPACITY}-1", "fail")  # Retry, evicted at once (delay 0), reserved again
        new = r.request(f"wl1-{GPU_CAPACITY}-1")
        state = r.workload().check_state(GPU_CAPACITY)
        assert inv.upstream.eviction_count(r.workload()) == evictions
        assert new is not None and new.metadata.uid != old.metadata.uid
        assert state is not None and (state.state, state.retry_count) == (c.CHECK_PENDING, None)
    r.autoscaler(f"wl1-{CAPACITY}-1", "fail")
    state = r.workload().check_state(CAPACITY)
    assert state is not None and state.retry_count == 1 and r.request(f"wl1-{CAPACITY}-2") is not None
    r.autoscaler(f"wl1-{CAPACITY}-2", "fail")
    assert not r.workload().is_active


# --- rejection_deactivates -------------------------------------------------------------------------------


def deactivated_by_the_user_after_a_rejection() -> Replay:
    """1. wl1 (one pod, 2 cpu, 1 gpu) holds quota; wl1-capacity-1 is Provisioned, then its booking
       expires before admission: capacity goes Retry, and the workload controller records
       requeueAt = now + 60 s (AR A.7).
    2. The capacity is revoked: capacity is Rejected (PC §1.9), but the workload controller sets
       DeactivationTarget only past its backoff gate, so nothing more happens for 60 s.
    3. A user deactivates the workload: it is evicted as for a manual deactivation, reason
       ``Deactivated`` (AR A.8 step 3), and the checks are reset ("Previously: Rejected")."""
    r = Replay()
    r.m.create_workload([(1, 2, 1)], {}, None)
    r.autoscaler("wl1-capacity-1", "provision")
    r.autoscaler("wl1-capacity-1", "expire_booking")
    r.autoscaler("wl1-capacity-1", "revoke_capacity")
    r.step(r.m.set_active, Pick(r.workload()), False)  # settles and checks every invariant
    return r


def test_a_user_deactivating_after_a_rejection_gives_the_manual_reason() -> None:
    r = deactivated_by_the_user_after_a_rejection()
    prev = r.workload_before()
    assert r.check_before(CAPACITY).state == c.CHECK_REJECTED and prev.is_active
    assert prev.condition(c.WORKLOAD_DEACTIVATION_TARGET) is None
    wl = r.workload()
    ev = wl.condition(c.WORKLOAD_EVICTED)
    assert not wl.is_active and ev is not None and (ev.status, ev.reason) == (c.TRUE, c.REASON_DEACTIVATED)
    assert inv.rejection_deactivates(r.before, r.m.world, r.ctx()) == []


@pytest.mark.parametrize("before_the_step", ["DeactivationTarget set", "check still in Retry", "already inactive"])
def test_a_plain_deactivated_reason_is_still_reported_otherwise(before_the_step: str) -> None:
    """Had the workload controller already marked the workload, had the rejection come in this
    very step, or had the workload been inactive already, the eviction would have named the
    admission check; plain ``Deactivated`` is then reported."""
    r = deactivated_by_the_user_after_a_rejection()
    prev: Workload = r.workload_before()
    if before_the_step == "DeactivationTarget set":
        target = Condition(c.WORKLOAD_DEACTIVATION_TARGET, c.TRUE, c.REASON_ADMISSION_CHECK, "rejected")
        prev = prev.with_status(conditions=set_condition(prev.status.conditions, target, r.m.now)[0])
    elif before_the_step == "check still in Retry":
        prev = with_check_states(prev, CAPACITY, state=c.CHECK_RETRY)
    else:
        prev = evolve(prev, spec=evolve(prev.spec, active=False))
    assert inv.rejection_deactivates(replaced(r.before, prev), r.m.world, r.ctx()) == [
        "default/wl1 rejected by ['capacity'] ended active=False, evicted=Deactivated, quota=False, requests=[]"]
