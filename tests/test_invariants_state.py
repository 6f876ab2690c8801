"""State invariants (``kueue_provreq.invariants.state``), by invariant.

Each fires on a hand-built world that breaks it and stays silent on a healthy one.  Each
exemption is replayed through the real engine, where the invariant does not fire, and then
broken one condition at a time, where it does.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from kueue_provreq import invariants as inv
from kueue_provreq.api import constants as c
from kueue_provreq.api.evolve import evolve
from kueue_provreq.api.objects import KubeObject
from kueue_provreq.api.provisioning import RetryStrategy
from kueue_provreq.api.queues import ClusterQueue
from kueue_provreq.api.workload import AdmissionCheckState, RequeueState
from kueue_provreq.explore.search import EPOCH
from kueue_provreq.world import World

import test_invariants_preemption
from builders import at
from invariant_builders import (
    CAPACITY,
    CTX,
    GPU_CAPACITY,
    KEEP,
    LIMITED,
    NOT_READY,
    PENDING_WL,
    QUIET,
    REJECTED,
    RETRY,
    WAIT_BROKEN,
    Replay,
    base_objects,
    cond,
    good_world,
    replaced,
    request,
    stop_waiting,
    workload,
    world_with,
)

# invariant -> (the world that breaks it, its context)
CASES: dict[str, Callable[[], tuple[World, inv.CheckContext]]] = {
    "admitted_only_with_quota": lambda: (world_with(workload(
        "wl", cond(c.WORKLOAD_QUOTA_RESERVED, c.FALSE), cond(c.WORKLOAD_ADMITTED))), CTX),
    "admission_matches_reservation": lambda: (world_with(workload(admitted=False)), CTX),
    "cluster_queue_within_nominal_quota": lambda: (world_with(workload(cpu=2), workload("wl2")), CTX),
    "states_are_declared": lambda: (world_with(workload(checks=(AdmissionCheckState("check", "Maybe"),))), CTX),
    "one_live_request_per_check": lambda: (world_with(workload(), request(1), request(2)), CTX),
    "requests_and_templates_owned": lambda: (world_with(request(1)), CTX),
    "keep_quota_never_evicts_for_retry": lambda: (world_with(workload(checks=(RETRY,))), KEEP),
    "pods_ready_count_within_limit": lambda: (world_with(workload(requeue_state=RequeueState(2))), LIMITED),
    "retry_delay_is_exponential": lambda: (world_with(workload(checks=(evolve(RETRY, retry_count=1),)),
                                                      request(2, cond(c.PR_FAILED))), CTX),
    "retry_not_overdue": lambda: (world_with(workload(checks=(RETRY,))), inv.CheckContext(now=at(960))),
    "single_request_per_check": lambda: (world_with(workload(), request(1, cond(c.PR_FAILED)), request(2)), CTX),
    "finished_has_no_requests": lambda: (world_with(workload("wl", cond(c.WORKLOAD_FINISHED)),
                                                    request(1)), CTX),
    "attempts_within_backoff_limit": lambda: (world_with(workload(checks=(RETRY,)), request(4, cond(c.PR_FAILED))), CTX),
    "rejected_check_deactivates": lambda: (world_with(workload(checks=(REJECTED,))), CTX),
    "pods_ready_timeout_enforced": lambda: (world_with(workload("wl", *NOT_READY)),
                                            inv.CheckContext(now=at(1800))),
    "no_stuck_workload": lambda: (world_with(workload("wl", *PENDING_WL, checks=(RETRY,))), QUIET),
    # cq (2 cpu) alone in cohort eng: 3 cpu held is more than the cohort has
    "cohort_quota_within_limits": lambda: (World([*in_cohort(base_objects()), workload(cpu=2), workload("wl2")]), CTX),
}


def in_cohort(objs: list[KubeObject]) -> list[KubeObject]:
    return [evolve(o, spec=evolve(o.spec, cohort_name="eng")) if isinstance(o, ClusterQueue) else o
            for o in objs]


CASES.update(test_invariants_preemption.STATE_CASES)


def test_every_state_invariant_has_a_case() -> None:
    assert set(CASES) == set(inv.STATE_INVARIANTS)


@pytest.mark.parametrize("name", sorted(CASES))
def test_state_invariant_fires(name: str) -> None:
    world, ctx = CASES[name]()
    check = inv.STATE_INVARIANTS[name].state
    assert check is not None
    assert check(world, ctx), f"{name} stayed silent"
    assert check(good_world(), ctx) == []


# --- retry_delay_is_exponential, attempts_within_backoff_limit: a state decided before stays while
#     another check waits for its request ---------------------------------------------------------


def stale_state(rejected: bool) -> Replay:
    """gpu-capacity's state is decided, then capacity loses its request while Ready and
    gpu-capacity's retryStrategy changes:

    1. wl1 (one pod, 1 cpu, 1 gpu) holds quota in both flavors; wl1-capacity-1 is Provisioned.
    2. wl1-gpu-capacity-1 fails: gpu-capacity goes Retry, requeueAfterSeconds 60 (limit 2);
       the workload controller waits for requeueAt before evicting.
    3. (``rejected``) gpu-capacity's limit becomes 0: the check is Rejected; the workload
       controller still waits for requeueAt before deactivating (``rejected_check_deactivates``).
    4. capacity's class changes: its request is deleted and, the check being Ready, never made
       again (PC §1.7): from now on syncCheckStates returns before writing anything (PC §1.9).
    5. gpu-capacity's retryStrategy changes again (Retry: to limit 0 and base 0, which would
       reject; Rejected: back to limit 2, which would retry); nothing is written."""
    r = Replay()
    r.m.create_workload([(1, 1, 1)], {}, None)
    r.autoscaler("wl1-capacity-1", "provision")
    r.autoscaler("wl1-gpu-capacity-1", "fail")
    if rejected:
        r.m.change_config(GPU_CAPACITY, c.CLASS_CHECK_CAPACITY, {}, RetryStrategy(0, 60, 1800), ())
    r.m.change_config(CAPACITY, c.CLASS_BEST_EFFORT_ATOMIC, {}, RetryStrategy(2, 60, 1800), ())
    later = RetryStrategy(2, 60, 1800) if rejected else RetryStrategy(0, 0, 0)
    r.m.change_config(GPU_CAPACITY, c.CLASS_CHECK_CAPACITY, {}, later, ())  # settles, checks all
    return r


STALE = {False: (c.CHECK_RETRY, ["default/wl1 check gpu-capacity: Retry for attempt 1 > limit 0"]),
         True: (c.CHECK_REJECTED, ["default/wl1 check gpu-capacity: Rejected at attempt 1 <= limit 2"])}


@pytest.mark.parametrize("rejected", [False, True])
def test_a_state_decided_under_the_old_strategy_stays_while_another_check_waits(rejected: bool) -> None:
    r = stale_state(rejected)
    state = r.workload().check_state(GPU_CAPACITY)
    assert state is not None and state.state == STALE[rejected][0] and r.workload().is_active
    assert state.requeue_after_seconds == 60
    assert r.request("wl1-capacity-1") is None
    ctx = r.ctx()
    assert inv.retry_delay_is_exponential(r.m.world, ctx) == []
    assert inv.attempts_within_backoff_limit(r.m.world, ctx) == []


@pytest.mark.parametrize("rejected", [False, True])
@pytest.mark.parametrize("broken", WAIT_BROKEN)
def test_a_stale_state_is_reported_when_nothing_stops_the_write(broken: str, rejected: bool) -> None:
    """With capacity's request in sync, no pod set using its managedResources (PC §1.4: no
    request needed), capacity belonging to another controller, or its config gone, syncCheckStates
    does not return early: the state would have been rewritten, and the stale one is reported."""
    r = stale_state(rejected)
    world = World(stop_waiting(r.m.world, r.workload(), CAPACITY, broken))
    ctx = r.ctx()
    assert inv.attempts_within_backoff_limit(world, ctx) == STALE[rejected][1]
    if not rejected:
        assert inv.retry_delay_is_exponential(world, ctx) == [
            "default/wl1 check gpu-capacity: requeueAfterSeconds 60, want 0 (attempt 1)"]


# --- retry_not_overdue: requeueAt moves forward only -----------------------------------------------


def shortened_delay() -> Replay:
    """1. wl1 (one pod, 1 cpu) holds quota; wl1-capacity-1 fails: capacity goes Retry with
       requeueAfterSeconds 60, and the workload controller records requeueAt = now + 60.
    2. capacity's backoffBaseSeconds becomes 1: the delay is recomputed to 1 s (PC §1.9), but
       requeueAt stays (AR A.7: it moves forward only).
    3. Two seconds later the Retry's deadline has passed, requeueAt has not."""
    r = Replay()
    r.m.create_workload([(1, 1, 0)], {}, None)
    r.autoscaler("wl1-capacity-1", "fail")
    r.m.change_config(CAPACITY, c.CLASS_CHECK_CAPACITY, {}, RetryStrategy(2, 1, 1800), ())
    r.step(r.m.advance, 2)  # settles and checks every invariant
    return r


def test_a_shortened_retry_delay_waits_for_the_recorded_requeue_at() -> None:
    r = shortened_delay()
    wl = r.workload()
    state = wl.check_state(CAPACITY)
    assert state is not None and (state.state, state.requeue_after_seconds) == (c.CHECK_RETRY, 1)
    assert wl.has_quota_reservation() and not wl.is_evicted()
    assert wl.status.requeue_state is not None and wl.status.requeue_state.requeue_at == EPOCH + 60
    assert r.m.now == EPOCH + 2
    assert inv.retry_not_overdue(r.m.world, r.ctx()) == []


@pytest.mark.parametrize("requeue_state", ["absent", "requeueAt reached"])
def test_an_overdue_retry_is_reported_without_a_requeue_at_ahead(requeue_state: str) -> None:
    r = shortened_delay()
    wl = r.workload()
    rs = None if requeue_state == "absent" else RequeueState(None, r.m.now)
    world = World(replaced(r.m.world, wl.with_status(requeue_state=rs)))
    assert inv.retry_not_overdue(world, r.ctx()) == [
        f"default/wl1 still holds quota with check capacity in Retry due at {EPOCH + 1}"]


# --- rejected_check_deactivates: a rejection waits out the requeueAt of an earlier Retry -------------


def rejected_during_the_retry_wait() -> Replay:
    """1. wl1 (one pod, 2 cpu, 1 gpu) holds quota; wl1-capacity-1 is Provisioned, then its booking
       expires before admission: capacity goes Retry, and the workload controller records
       requeueAt = now + 60 s (AR A.7).
    2. The capacity is revoked: capacity is Rejected (PC §1.9), but the workload controller's
       backoff gate returns before it sets DeactivationTarget, for 60 s."""
    r = Replay()
    r.m.create_workload([(1, 2, 1)], {}, None)
    r.autoscaler("wl1-capacity-1", "provision")
    r.autoscaler("wl1-capacity-1", "expire_booking")
    r.autoscaler("wl1-capacity-1", "revoke_capacity")  # settles and checks every invariant
    return r


def test_a_rejection_during_a_retry_delay_waits_for_requeue_at() -> None:
    r = rejected_during_the_retry_wait()
    wl = r.workload()
    state = wl.check_state(CAPACITY)
    assert state is not None and state.state == c.CHECK_REJECTED and wl.is_active
    assert wl.status.requeue_state is not None and wl.status.requeue_state.requeue_at == r.m.now + 60
    assert inv.rejected_check_deactivates(r.m.world, r.ctx()) == []
    r.m.advance(60)
    assert not r.workload().is_active


@pytest.mark.parametrize("requeue_state", ["absent", "requeueAt reached"])
def test_a_rejected_check_on_an_active_workload_is_reported_without_a_requeue_at_ahead(requeue_state: str) -> None:
    r = rejected_during_the_retry_wait()
    rs = None if requeue_state == "absent" else RequeueState(None, r.m.now)
    world = World(replaced(r.m.world, r.workload().with_status(requeue_state=rs)))
    assert inv.rejected_check_deactivates(world, r.ctx()) == ["active default/wl1 keeps check capacity Rejected"]


# --- pods_ready_timeout_enforced: the timeout waits behind the backoff gate ----------------------------


def timeout_behind_the_backoff_gate() -> Replay:
    """1. waitForPodsReady timeout 45 s; wl1 (one pod, 1 gpu) is admitted at 0 s (both checks
       Ready).
    2. At 30 s wl1-capacity-1 fails: the admitted workload's check goes Retry with
       requeueAfterSeconds 60, its lastTransitionTime kept at 0 s (Kueue's provisioning
       controller hands SetAdmissionCheckState a copy of the check, time included), and the
       workload controller records requeueAt = 60 s (AR A.7).
    3. At 45 s the pods are not ready 45 s after admission, but the workload controller's
       backoff gate returns before the timeout is looked at (AR A.5): no eviction yet."""
    r = Replay(timeout=45)
    r.m.create_workload([(1, 0, 1)], {}, None)
    r.autoscaler("wl1-capacity-1", "provision")
    r.autoscaler("wl1-gpu-capacity-1", "provision")
    r.m.advance(30)
    r.autoscaler("wl1-capacity-1", "fail")
    r.step(r.m.advance, 15)  # settles and checks every invariant
    return r


def test_the_pods_ready_timeout_waits_for_the_backoff_gate() -> None:
    r = timeout_behind_the_backoff_gate()
    wl = r.workload()
    adm = wl.condition(c.WORKLOAD_ADMITTED)
    assert wl.is_admitted() and not wl.is_evicted() and adm is not None and adm.last_transition_time == EPOCH
    assert r.m.now == EPOCH + 45 and wl.status.requeue_state is not None
    assert wl.status.requeue_state.requeue_at == EPOCH + 60
    assert inv.pods_ready_timeout_enforced(r.m.world, r.ctx()) == []
    # once requeueAt passes, the workload is evicted (for its Retry check, checked first)
    r.m.advance(15)
    ev = r.workload().condition(c.WORKLOAD_EVICTED)
    assert ev is not None and ev.message.startswith("Previously: Evicted due to AdmissionCheck")


@pytest.mark.parametrize("broken", ["no requeueState", "requeueAt reached", "before KEP-3258"])
def test_a_missed_timeout_is_reported_when_no_gate_holds_it_back(broken: str) -> None:
    r = timeout_behind_the_backoff_gate()
    wl = r.workload()
    world, ctx = r.m.world, r.ctx()
    if broken == "no requeueState":
        world = World(replaced(world, wl.with_status(requeue_state=None)))
    elif broken == "requeueAt reached":
        world = World(replaced(world, wl.with_status(requeue_state=RequeueState(None, r.m.now))))
    else:  # the gate held back only workloads without quota
        ctx = evolve(ctx, config=evolve(ctx.config, semantics=frozenset({inv.PRE_KEP_3258})))
    assert inv.pods_ready_timeout_enforced(world, ctx) == [
        "default/wl1: pods not ready 45s after admission, timeout 45.0s"]
