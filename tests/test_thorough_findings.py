"""Findings of the 10,000-example stateful run (``HYPOTHESIS_PROFILE=thorough``), replayed
deterministically through the real engine.

The world is the stateful tests' (``tests/test_stateful.py``): check ``capacity`` applies to
every flavor, ``gpu-capacity`` to the GPU flavor only.  Most findings come from two provisioning
checks on one workload: upstream's syncCheckStates returns early, writing no state for any
check, while a check that needs a request has none (PC §1.9, C:602-605); a failed request of
the other check then stays Pending and PC §1.7 makes its next attempt at once, without Retry, so
its ``retryCount`` does not count that attempt, and states written before stay as they are.
Each test shows that the invariant's exemption applies in the scenario and that the invariant
still fires when the same step is changed into a real violation.  The last test pins a related
consequence seen while replaying them: a check limited to some flavors loses its ``retryCount``.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs
import pytest
from kueue_provreq import invariants as inv
from kueue_provreq.api import constants as c
from kueue_provreq.api.frozen import FrozenMap
from kueue_provreq.api.meta import Condition, ObjectMeta, Time, set_condition
from kueue_provreq.api.objects import KubeObject
from kueue_provreq.api.provisioning import (
    ProvisioningRequest,
    ProvisioningRequestConfig,
    RetryStrategy,
)
from kueue_provreq.api.workload import Workload
from kueue_provreq.explore.search import EPOCH, autoscaler_step
from kueue_provreq.world import World

import test_stateful as sm

CAPACITY, GPU_CAPACITY = sm.CHECKS
NS = sm.NS


class Pick:
    """Stands in for hypothesis' ``data`` argument: ``draw`` returns the given values in order."""

    def __init__(self, *values: object) -> None:
        self.values = list(values)

    def draw(self, strategy: object) -> object:
        return self.values.pop(0)


class Replay:
    """The stateful test's machine driven by hand; every step settles and checks every invariant."""

    def __init__(self, keep_quota: bool = False, timeout: int = 300) -> None:
        self.m = sm.AdmissionMachine()
        self.m.setup(keep_quota=keep_quota, pods_ready_limit=None, timeout=timeout)
        self.before: frozenset[KubeObject] = frozenset()

    def snapshot(self) -> None:
        self.before = self.m.world.snapshot()

    def step(self, rule: Callable[..., None], *args: object) -> None:
        """A rule of the machine, remembering the world before it."""
        self.snapshot()
        rule(*args)

    def autoscaler(self, name: str, trigger: str) -> None:
        pr = self.request(name)
        assert pr is not None
        self.snapshot()
        autoscaler_step(self.m.world, pr, trigger, self.m.now)
        self.m.settle_and_check(self.before)

    def request(self, name: str) -> ProvisioningRequest | None:
        pr = self.m.world.get(c.PROVISIONING_REQUEST, NS, name)
        assert pr is None or isinstance(pr, ProvisioningRequest)
        return pr

    def workload(self) -> Workload:
        (wl,) = self.m.workloads()
        return wl

    def ctx(self) -> inv.CheckContext:
        """What the stateful test checks with after a step (settled)."""
        return inv.CheckContext(now=self.m.now, config=self.m.config, settled=True)


def lagging_check() -> Replay:
    """Up to the point where ``capacity`` made attempt 2 without going Retry.

    1. wl1 (one pod, 1 cpu, 1 gpu) holds quota in both flavors: wl1-capacity-1, wl1-gpu-capacity-1.
    2. wl1-gpu-capacity-1 is Provisioned: gpu-capacity is Ready.
    3. gpu-capacity's class changes: its request is out of sync and deleted, and a Ready check
       never gets a new one (PC §1.7), so from now on every syncCheckStates returns early.
    4. wl1-capacity-1 fails: capacity stays Pending, retryCount None, and wl1-capacity-2 is made
       at once, with the quota held (retry_moves_the_quota's exemption)."""
    r = Replay()
    r.m.create_workload([(1, 1, 1)], {}, None)
    r.autoscaler("wl1-gpu-capacity-1", "provision")
    r.m.change_config(GPU_CAPACITY, c.CLASS_BEST_EFFORT_ATOMIC, {}, RetryStrategy(2, 0, 0), ())
    r.autoscaler("wl1-capacity-1", "fail")
    return r


def with_gpu_request(before: frozenset[KubeObject], klass: str = c.CLASS_BEST_EFFORT_ATOMIC) -> frozenset[KubeObject]:
    """``before`` plus a request for gpu-capacity in sync with its config (of class ``klass``):
    then syncCheckStates does not return early and capacity's failure is decided as usual."""
    failed = next(o for o in before if isinstance(o, ProvisioningRequest))
    assert failed.metadata.name == f"wl1-{CAPACITY}-1"
    gpu = attrs.evolve(failed, metadata=attrs.evolve(failed.metadata, name=f"wl1-{GPU_CAPACITY}-1", uid="u-gpu"),
                       spec=attrs.evolve(failed.spec, provisioning_class_name=klass),
                       status=attrs.evolve(failed.status, conditions=()))
    return frozenset({*before, gpu})


def test_attempt_made_without_retry_while_another_check_waits_for_its_request() -> None:
    r = lagging_check()
    state = r.workload().check_state(CAPACITY)
    assert state is not None and (state.state, state.retry_count) == (c.CHECK_PENDING, None)
    gpu = r.workload().check_state(GPU_CAPACITY)
    assert gpu is not None and gpu.state == c.CHECK_READY
    assert r.request("wl1-capacity-1") is None and r.request("wl1-capacity-2") is not None
    assert r.workload().has_quota_reservation()
    assert inv.retry_moves_the_quota(r.before, r.m.world, r.ctx()) == []
    # the same step with a request for gpu-capacity in sync with its config is a real violation:
    # syncCheckStates would have moved capacity to Retry, and attempt 2 needs the quota released
    found = inv.retry_moves_the_quota(with_gpu_request(r.before), r.m.world, r.ctx())
    assert found and "without releasing the quota" in found[0], found


def test_attempt_beyond_the_limit_while_another_check_waits_for_its_request() -> None:
    """The same early return ignores ``backoffLimitCount``: with a limit of 0 the failure of
    attempt 1 should reject capacity, but it stays Pending and attempt 2 is made
    (no_request_after_rejection's exemption); with gpu-capacity's request there it is reported."""
    r = Replay()
    r.m.create_workload([(1, 1, 1)], {}, None)
    r.m.change_config(CAPACITY, c.CLASS_CHECK_CAPACITY, {}, RetryStrategy(0, 60, 1800), ())
    r.autoscaler("wl1-gpu-capacity-1", "provision")
    r.m.change_config(GPU_CAPACITY, c.CLASS_BEST_EFFORT_ATOMIC, {}, RetryStrategy(2, 0, 0), ())
    r.autoscaler("wl1-capacity-1", "fail")
    state = r.workload().check_state(CAPACITY)
    assert state is not None and state.state == c.CHECK_PENDING and r.request("wl1-capacity-2") is not None
    assert inv.no_request_after_rejection(r.before, r.m.world, r.ctx()) == []
    found = inv.no_request_after_rejection(with_gpu_request(r.before), r.m.world, r.ctx())
    assert found and "beyond limit 0" in found[0], found


def reserved_with_a_new_check() -> Replay:
    """The run's trace "no_request_after_rejection: request wl1-capacity-2: attempt 2 beyond
    limit 0" (shrinking stopped at 20 steps), in fewer steps:

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
    r.m.unset_quota(Pick(r.workload()))  # type: ignore[arg-type]
    r.autoscaler("wl1-capacity-1", "fail")
    r.step(r.m.config_presence, GPU_CAPACITY, True)  # settles and checks every invariant
    return r


def test_attempt_beyond_the_limit_when_the_reservation_adds_a_check() -> None:
    r = reserved_with_a_new_check()
    prev = next(o for o in r.before if isinstance(o, Workload))
    assert [s.name for s in prev.status.admission_checks] == [CAPACITY] and not prev.has_quota_reservation()
    state = r.workload().check_state(CAPACITY)
    assert state is not None and state.state == c.CHECK_PENDING and r.workload().has_quota_reservation()
    assert r.request("wl1-capacity-2") is not None and r.request("wl1-gpu-capacity-1") is not None
    assert inv.no_request_after_rejection(r.before, r.m.world, r.ctx()) == []
    # had gpu-capacity's request been there when the step began, capacity would be Rejected
    found = inv.no_request_after_rejection(with_gpu_request(r.before, c.CLASS_CHECK_CAPACITY), r.m.world, r.ctx())
    assert found == ["request wl1-capacity-2: attempt 2 beyond limit 0"]


def restarted() -> tuple[Replay, frozenset[KubeObject]]:
    """:func:`lagging_check`, then the step the 10,000-example run shrank to
    "attempts_never_decrease: created attempt 1 after [2], retryCount None":

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
    return r, r.before


def test_numbering_restarts_after_an_attempt_made_without_retry() -> None:
    r, before = restarted()
    wl = r.workload()
    state = wl.check_state(CAPACITY)
    assert state is not None and (state.state, state.retry_count) == (c.CHECK_PENDING, None)
    new = r.request("wl1-capacity-1")
    assert new is not None and new.metadata.uid not in {o.metadata.uid for o in before}
    assert r.request("wl1-capacity-2") is None
    assert [m for m, _ in inv.requests_of(before, wl, CAPACITY)] == [2]  # a decrease from 2 to 1
    assert inv.attempts_never_decrease(before, r.m.world, r.ctx()) == []
    assert inv.check_step(before, r.m.world, r.ctx()) == inv.check_state(r.m.world, r.ctx()) == []


def _without_the_eviction(r: Replay, before: frozenset[KubeObject]) -> World:
    """The same step, but the workload was not evicted in it (its eviction count unchanged)."""
    prev = next(o for o in before if isinstance(o, Workload))
    after = r.m.world.copy()
    after.put(r.workload().with_status(extra=prev.status.extra))
    return after


def _renumbered(before: frozenset[KubeObject], old: int, new: int) -> frozenset[KubeObject]:
    """``before`` with capacity's request ``wl1-capacity-{old}`` renamed to ``-{new}``."""
    out: list[KubeObject] = []
    for o in before:
        if isinstance(o, ProvisioningRequest) and o.metadata.name == f"wl1-{CAPACITY}-{old}":
            o = attrs.evolve(o, metadata=attrs.evolve(o.metadata, name=f"wl1-{CAPACITY}-{new}"))
        out.append(o)
    return frozenset(out)


def _with_retry_count(objs: frozenset[KubeObject], count: int | None) -> frozenset[KubeObject]:
    out: list[KubeObject] = []
    for o in objs:
        if isinstance(o, Workload):
            o = o.with_status(admission_checks=tuple(
                attrs.evolve(s, retry_count=count) if s.name == CAPACITY else s for s in o.status.admission_checks))
        out.append(o)
    return frozenset(out)


@pytest.mark.parametrize("violation", ["no eviction", "older request kept", "not retryCount+1",
                                       "retryCount dropped"])
def test_a_real_decrease_is_still_reported(violation: str) -> None:
    """Each condition of the exemption, broken on its own in the replayed step, is a decrease
    upstream cannot produce, and the invariant reports it."""
    r, before = restarted()
    ctx = r.ctx()
    after = r.m.world
    if violation == "no eviction":
        # e.g. a controller that restarts at retryCount+1 instead of naming the failed attempt + 1
        after = _without_the_eviction(r, before)
    elif violation == "older request kept":
        # wl1-capacity-2 survives: it would be the active request, the next name would follow it
        after = r.m.world.copy()
        after.put(next(o for o in before if isinstance(o, ProvisioningRequest)
                       and o.metadata.name == f"wl1-{CAPACITY}-2"))
    elif violation == "not retryCount+1":
        # attempt 2 after [3] with retryCount None: upstream would name it 1
        before = _renumbered(before, 2, 3)
        after = World(_renumbered(r.m.world.snapshot(), 1, 2))
    else:
        # before the step retryCount was 1, so attempt 2 did not run ahead of it; a decrease to 1
        # needs retryCount to drop, which resetChecksOnEviction never does to a Pending check
        before = _with_retry_count(before, 1)
    found = inv.attempts_never_decrease(before, after, ctx)
    assert found and "created attempt" in found[0], found


def stale_state(rejected: bool) -> Replay:
    """gpu-capacity's state is decided, then capacity loses its request while Ready and
    gpu-capacity's retryStrategy changes.  The run's shrunk traces: "retry_delay_is_exponential:
    default/wl3 check gpu-capacity: requeueAfterSeconds 60, want 0 (attempt 1)" (with
    "attempts_within_backoff_limit: ... Retry for attempt 1 > limit 0") and
    "attempts_within_backoff_limit: default/wl1 check gpu-capacity: Rejected at attempt 1 <= limit
    2"; the same mechanism in fewer steps:

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
    assert inv.check_state(r.m.world, ctx) == []


@pytest.mark.parametrize("rejected", [False, True])
@pytest.mark.parametrize("change", ["capacity has its request", "capacity needs no request"])
def test_a_stale_state_is_reported_when_nothing_stops_the_write(change: str, rejected: bool) -> None:
    """With capacity's request in sync, or with a managedResources that none of the workload's
    pod sets uses (PC §1.4: no request needed, so no early return), the state would have been
    rewritten, and the invariants report the stale one."""
    r = stale_state(rejected)
    world = r.m.world.copy()
    if change == "capacity has its request":
        gpu = r.request("wl1-gpu-capacity-1")
        assert gpu is not None
        world.put(attrs.evolve(gpu, metadata=attrs.evolve(gpu.metadata, name=f"wl1-{CAPACITY}-1", uid="u-cap"),
                               spec=attrs.evolve(gpu.spec, provisioning_class_name=c.CLASS_BEST_EFFORT_ATOMIC),
                               status=attrs.evolve(gpu.status, conditions=())))
    else:
        prc = world.get(c.PROVISIONING_REQUEST_CONFIG, "", CAPACITY)
        assert isinstance(prc, ProvisioningRequestConfig)
        world.put(attrs.evolve(prc, spec=attrs.evolve(prc.spec, managed_resources=("memory",))))
    ctx = r.ctx()
    assert inv.attempts_within_backoff_limit(world, ctx) == STALE[rejected][1]
    if not rejected:
        assert inv.retry_delay_is_exponential(world, ctx) == [
            "default/wl1 check gpu-capacity: requeueAfterSeconds 60, want 0 (attempt 1)"]


def keep_quota_reserved_again() -> Replay:
    """Under KeepQuotaForProvReqRetry, the shrunk trace of "retry_moves_the_quota: default/wl1
    check capacity: attempt 2 without keeping the quota":

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
    r.m.unset_quota(Pick(r.workload()))  # type: ignore[arg-type]
    r.autoscaler("wl1-capacity-1", "fail")
    r.step(r.m.config_presence, GPU_CAPACITY, True)  # settles and checks every invariant
    return r


def test_keep_quota_acts_on_a_failure_with_the_next_reservation() -> None:
    r = keep_quota_reserved_again()
    prev = next(o for o in r.before if isinstance(o, Workload))
    assert not prev.has_quota_reservation() and r.workload().has_quota_reservation()
    state = r.workload().check_state(CAPACITY)
    assert state is not None and state.state == c.CHECK_PENDING
    assert r.request("wl1-capacity-2") is not None
    assert inv.retry_moves_the_quota(r.before, r.m.world, r.ctx()) == []
    assert inv.check_step(r.before, r.m.world, r.ctx()) == inv.check_state(r.m.world, r.ctx()) == []


@pytest.mark.parametrize("violation", ["quota held and reserved anew", "evicted for an admission check"])
def test_keep_quota_still_reports_an_attempt_after_losing_the_quota(violation: str) -> None:
    """The same step, started with a reservation that the step replaced, or without quota after
    an eviction for an admission check (the default strategy's retry), is reported."""
    r = keep_quota_reserved_again()
    prev = next(o for o in r.before if isinstance(o, Workload))
    if violation == "quota held and reserved anew":
        held = Condition(c.WORKLOAD_QUOTA_RESERVED, c.TRUE, "QuotaReserved", "earlier", Time(r.m.now - 1))
        conds, _ = set_condition(prev.status.conditions, held, Time(r.m.now - 1))
        changed = prev.with_status(conditions=conds)
    else:
        evicted = Condition(c.WORKLOAD_EVICTED, c.TRUE, c.REASON_ADMISSION_CHECK, "Evicted due to AdmissionCheck")
        conds, _ = set_condition(prev.status.conditions, evicted, r.m.now)
        changed = prev.with_status(conditions=conds)
    before = frozenset({*(o for o in r.before if o is not prev), changed})
    found = inv.retry_moves_the_quota(before, r.m.world, r.ctx())
    assert found and "without keeping the quota" in found[0], found


def timeout_behind_the_backoff_gate() -> Replay:
    """The shrunk trace of "pods_ready_timeout_enforced: default/wl2: pods not ready 121s after
    admission, timeout 120.0s", re-timed:

    1. waitForPodsReady timeout 120 s; wl1 (one pod, 1 gpu) is admitted at 0 s (both checks Ready).
    2. At 61 s wl1-capacity-1 fails: the admitted workload's check goes Retry with
       requeueAfterSeconds 60, and the workload controller records requeueAt = 121 s (AR A.7).
    3. At 120 s the pods are not ready 120 s after admission, but the workload controller's
       backoff gate returns before the timeout is looked at (workload_controller.go:536-569,
       then l.769-797): no eviction yet."""
    r = Replay(timeout=120)
    r.m.create_workload([(1, 0, 1)], {}, None)
    r.autoscaler("wl1-capacity-1", "provision")
    r.autoscaler("wl1-gpu-capacity-1", "provision")
    r.m.advance(61)
    r.autoscaler("wl1-capacity-1", "fail")
    r.step(r.m.advance, 59)  # settles and checks every invariant
    return r


def test_the_pods_ready_timeout_waits_for_the_backoff_gate() -> None:
    r = timeout_behind_the_backoff_gate()
    wl = r.workload()
    adm = wl.condition(c.WORKLOAD_ADMITTED)
    assert wl.is_admitted() and not wl.is_evicted() and adm is not None and adm.last_transition_time == EPOCH
    assert r.m.now == EPOCH + 120 and wl.status.requeue_state is not None
    assert wl.status.requeue_state.requeue_at == EPOCH + 121
    ctx = r.ctx()
    assert inv.pods_ready_timeout_enforced(r.m.world, ctx) == []
    # without the gate the same world is a missed timeout
    world = r.m.world.copy()
    world.put(wl.with_status(requeue_state=None))
    assert inv.pods_ready_timeout_enforced(world, ctx) == [
        "default/wl1: pods not ready 120s after admission, timeout 120.0s"]
    # once requeueAt passes, the workload is evicted (for its Retry check, checked first)
    r.m.advance(1)
    ev = r.workload().condition(c.WORKLOAD_EVICTED)
    assert ev is not None and ev.message.startswith("Previously: Evicted due to AdmissionCheck")


def deactivated_by_the_user_after_a_rejection() -> Replay:
    """The shrunk trace of "rejection_deactivates: default/wl3 rejected by ['capacity'] ended
    active=False, evicted=Deactivated, quota=False, requests=[]", in fewer steps:

    1. wl1 (one pod, 2 cpu, 1 gpu) holds quota; wl1-capacity-1 is Provisioned, then its booking
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
    prev = next(o for o in r.before if isinstance(o, Workload))
    was = prev.check_state(CAPACITY)
    assert was is not None and was.state == c.CHECK_REJECTED and prev.is_active
    assert prev.condition(c.WORKLOAD_DEACTIVATION_TARGET) is None
    wl = r.workload()
    ev = wl.condition(c.WORKLOAD_EVICTED)
    assert not wl.is_active and ev is not None and (ev.status, ev.reason) == (c.TRUE, c.REASON_DEACTIVATED)
    assert inv.rejection_deactivates(r.before, r.m.world, r.ctx()) == []


@pytest.mark.parametrize("before_the_step", ["DeactivationTarget set", "check still in Retry"])
def test_a_plain_deactivated_reason_is_still_reported_otherwise(before_the_step: str) -> None:
    """Had the workload controller already marked the workload, or had the rejection come in this
    very step, the eviction would have named the admission check; plain ``Deactivated`` is then
    reported."""
    r = deactivated_by_the_user_after_a_rejection()
    prev = next(o for o in r.before if isinstance(o, Workload))
    if before_the_step == "DeactivationTarget set":
        target = Condition(c.WORKLOAD_DEACTIVATION_TARGET, c.TRUE, c.REASON_ADMISSION_CHECK, "rejected")
        conds, _ = set_condition(prev.status.conditions, target, r.m.now)
        changed = prev.with_status(conditions=conds)
    else:
        changed = prev.with_status(admission_checks=tuple(
            attrs.evolve(s, state=c.CHECK_RETRY) if s.name == CAPACITY else s for s in prev.status.admission_checks))
    before = frozenset({*(o for o in r.before if o is not prev), changed})
    assert inv.rejection_deactivates(before, r.m.world, r.ctx()) == [
        "default/wl1 rejected by ['capacity'] ended active=False, evicted=Deactivated, quota=False, requests=[]"]


def test_eviction_count_reads_scheduling_stats() -> None:
    wl = Workload(ObjectMeta(name="w", namespace=NS))
    assert inv._eviction_count(wl) == 0
    stats = FrozenMap({"evictions": (FrozenMap({"reason": "Preempted", "underlyingCause": "", "count": 2}),
                                     FrozenMap({"reason": "AdmissionCheck", "underlyingCause": "", "count": 1}))})
    assert inv._eviction_count(wl.with_status(extra=FrozenMap({"schedulingStats": stats}))) == 3


def test_a_check_for_some_flavors_forgets_its_retries_with_the_quota() -> None:
    """Not a failing invariant but a consequence worth pinning (docs/differences.rst,
    ``retryCount``): without an admission a workload carries only the checks for every flavor
    (AR A.2), so gpu-capacity's entry, retryCount included, goes when the evicted workload's
    quota is released.  With ``backoffLimitCount: 1`` it is never rejected and every retry is
    attempt 1 again, while capacity (every flavor) counts its retry and is rejected."""
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
        assert inv._eviction_count(r.workload()) == evictions
        assert new is not None and new.metadata.uid != old.metadata.uid
        assert state is not None and (state.state, state.retry_count) == (c.CHECK_PENDING, None)
    r.autoscaler(f"wl1-{CAPACITY}-1", "fail")
    state = r.workload().check_state(CAPACITY)
    assert state is not None and state.retry_count == 1 and r.request(f"wl1-{CAPACITY}-2") is not None
    r.autoscaler(f"wl1-{CAPACITY}-2", "fail")
    assert not r.workload().is_active
