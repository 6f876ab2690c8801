"""The core workload controller, one reaction at a time (spec Parts A and B), then whole
flows through the Manager with only the workload controller and the job integration."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kueue_provreq.api import constants as c
from kueue_provreq.api.config import Configuration, RequeuingStrategy, WaitForPodsReady
from kueue_provreq.api.evolve import evolve
from kueue_provreq.api.frozen import FrozenMap
from kueue_provreq.api.meta import Condition, Duration, ObjectMeta, Time
from kueue_provreq.api.queues import (
    EVERY_NAMESPACE,
    AdmissionCheck,
    AdmissionChecksStrategy,
    AdmissionCheckStatus,
    AdmissionCheckStrategyRule,
    ClusterQueue,
    ClusterQueueSpec,
    FlavorQuotas,
    LocalQueue,
    LocalQueueSpec,
    ResourceFlavor,
    ResourceGroup,
)
from kueue_provreq.api.workload import (
    Admission,
    AdmissionCheckState,
    PodSetAssignment,
    RequeueState,
    Workload,
    WorkloadSpec,
)
from kueue_provreq.controllers import workload as controller
from kueue_provreq.controllers import workload_status as ws
from kueue_provreq.controllers.context import Context
from kueue_provreq.engine import Manager, Recorder
from kueue_provreq.machines.status import set_quota_reservation
from kueue_provreq.world import (
    NOTHING,
    Effect,
    Event,
    Fault,
    MetricInc,
    Result,
    Update,
    World,
)

import builders
from builders import T0, cond
from builders import check_state as check

KEY = (c.WORKLOAD, "ns", "wl")


# --- builders ----------------------------------------------------------------------------


def cluster_queue(checks: tuple[str, ...] = ("check",), flavors: tuple[str, ...] = ("default",),
                  on_flavors: dict[str, tuple[str, ...]] | None = None) -> ClusterQueue:
    on = on_flavors or {}
    strategy = AdmissionChecksStrategy(tuple(AdmissionCheckStrategyRule(n, on.get(n, ()))
                                             for n in checks)) if checks else None
    return ClusterQueue(ObjectMeta(name="cq", uid="cq"), ClusterQueueSpec(namespace_selector=EVERY_NAMESPACE,
        resource_groups=(ResourceGroup(("cpu",), tuple(FlavorQuotas(f) for f in flavors)),),
        admission_checks_strategy=strategy))


def local_queue() -> LocalQueue:
    return LocalQueue(ObjectMeta(name="lq", namespace="ns", uid="lq"), LocalQueueSpec(cluster_queue="cq"))


ADMISSION = Admission("cq", (PodSetAssignment("main", FrozenMap({"cpu": "default"})),))

RESERVED = cond(c.WORKLOAD_QUOTA_RESERVED, c.TRUE, c.REASON_QUOTA_RESERVED, "Quota reserved in ClusterQueue cq")
ADMITTED = cond(c.WORKLOAD_ADMITTED, c.TRUE, c.REASON_ADMITTED, c.MSG_ADMITTED)
UNSATISFIED = cond(c.WORKLOAD_ADMITTED, c.FALSE, c.REASON_UNSATISFIED_ADMISSION_CHECKS, c.MSG_UNSATISFIED_CHECKS)


def workload(*conditions: Condition, checks: tuple[AdmissionCheckState, ...] = (),
             admission: Admission | None = None, requeue_state: RequeueState | None = None,
             active: bool | None = None) -> Workload:
    return builders.workload(conditions=conditions, checks=checks, admission=admission,
                             requeue_state=requeue_state, active=active, pod_sets=())


def reserved(*extra: Condition, checks: tuple[AdmissionCheckState, ...] = (),
             requeue_state: RequeueState | None = None, active: bool | None = None) -> Workload:
    return workload(RESERVED, *extra, checks=checks, admission=ADMISSION, requeue_state=requeue_state,
                    active=active)


def world(wl: Workload, cq: ClusterQueue | None = None) -> World:
    """The workload, its LocalQueue and an active ClusterQueue (its flavors and checks exist)."""
    cq = cq or cluster_queue()
    active = cond(c.ADMISSION_CHECK_ACTIVE, c.TRUE, "Active")
    return World([cq, local_queue(), wl,
                  *(ResourceFlavor(ObjectMeta(name=f, uid=f"rf-{f}")) for f in dict.fromkeys(cq.flavor_names())),
                  *(AdmissionCheck(ObjectMeta(name=ac, uid=f"ac-{ac}"),
                                   status=AdmissionCheckStatus(conditions=(active,)))
                    for ac in cq.checks_with_flavors())])


PODS_READY_5M = Configuration(wait_for_pods_ready=WaitForPodsReady(timeout=Duration(300.0)))


def ctx(at: int, config: Configuration = Configuration()) -> Context:
    return Context(now=Time(at), config=config)


def run(w: World, at: int, config: Configuration = Configuration()) -> Result:
    return controller.reconcile(w, KEY, ctx(at, config))


def updates(result: Result) -> list[Workload]:
    return [e.obj for e in result.effects if isinstance(e, Update) and isinstance(e.obj, Workload)]


def only_update(result: Result) -> Workload:
    [wl] = updates(result)
    return wl


def events(result: Result) -> list[tuple[str, str, str]]:
    return [(e.type, e.reason, e.message) for e in result.effects if isinstance(e, Event)]


def metrics(result: Result) -> list[tuple[str, dict[str, str]]]:
    return [(e.name, dict(e.labels)) for e in result.effects if isinstance(e, MetricInc)]


def get(wl: Workload, type_: str) -> Condition:
    found = wl.condition(type_)
    assert found is not None, type_
    return found


def triple(wl: Workload, type_: str) -> tuple[str, str, str]:
    co = get(wl, type_)
    return co.status, co.reason, co.message


# --- nothing to do -----------------------------------------------------------------------


def test_finished_workload_is_left_alone() -> None:
    wl = reserved(cond(c.WORKLOAD_FINISHED, c.TRUE, "Succeeded"),
                  checks=(check("check", c.CHECK_RETRY, requeue_after=60),))
    assert run(world(wl), T0 + 1) is NOTHING


def test_settled_pending_workload_returns_nothing() -> None:
    wl = workload(cond(c.WORKLOAD_QUOTA_RESERVED, c.FALSE, c.REASON_PENDING_EVALUATION),
                  cond(c.WORKLOAD_ADMITTED, c.FALSE, c.REASON_NO_RESERVATION, c.MSG_NO_RESERVATION),
                  checks=(check("check"),))
    assert run(world(wl), T0 + 5) is NOTHING


def test_missing_workload_returns_nothing() -> None:
    assert run(World([cluster_queue()]), T0) is NOTHING


# --- admission checks follow the ClusterQueue (A.2) -----------------------------------------


def test_pending_workload_gets_the_checks_for_all_flavors_only() -> None:
    cq = cluster_queue(("all", "only-spot"), flavors=("default", "spot"), on_flavors={"only-spot": ("spot",)})
    new = only_update(run(world(workload(), cq), T0 + 3))
    assert [(s.name, s.state, s.last_transition_time) for s in new.status.admission_checks] == \
        [("all", c.CHECK_PENDING, T0 + 3)]


def test_reserved_workload_gets_the_checks_of_its_flavors_and_loses_others() -> None:
    cq = cluster_queue(("all", "only-spot"), flavors=("default", "spot"), on_flavors={"only-spot": ("spot",)})
    wl = reserved(UNSATISFIED, checks=(check("gone", c.CHECK_READY), check("all", c.CHECK_READY, "kept")))
    new = only_update(run(world(wl, cq), T0 + 3))
    assert [(s.name, s.state, s.message) for s in new.status.admission_checks] == [("all", c.CHECK_READY, "kept")]
    # the checks update ends the pass: Admitted is re-synced on the next one
    assert get(new, c.WORKLOAD_ADMITTED).status == c.FALSE


def test_checks_are_taken_from_the_admission_cluster_queue_not_the_local_queue() -> None:
    other = evolve(cluster_queue(("other",)), metadata=ObjectMeta(name="cq2", uid="cq2"))
    wl = evolve(reserved(UNSATISFIED), spec=WorkloadSpec(queue_name="lq-missing"))
    w = World([cluster_queue(("check",)), other, local_queue(), wl])
    assert [s.name for s in only_update(run(w, T0)).status.admission_checks] == ["check"]


def test_without_a_cluster_queue_checks_are_not_touched() -> None:
    wl = workload(checks=(check("stale"),))
    [new] = updates(run(World([wl]), T0))
    assert new.status.admission_checks == wl.status.admission_checks
    # the queue's blocker is all it writes
    assert triple(new, c.WORKLOAD_QUOTA_RESERVED) == (c.FALSE, c.REASON_MISCONFIGURED, "LocalQueue lq doesn't exist")


# --- Admitted (A.4) ------------------------------------------------------------------------


def test_all_checks_ready_admits_with_event() -> None:
    wl = reserved(UNSATISFIED, checks=(check("check", c.CHECK_READY),))
    result = run(world(wl), T0 + 42)
    new = only_update(result)
    assert triple(new, c.WORKLOAD_ADMITTED) == (c.TRUE, c.REASON_ADMITTED, c.MSG_ADMITTED)
    assert get(new, c.WORKLOAD_ADMITTED).last_transition_time == T0 + 42
    assert events(result) == [("Normal", "Admitted",
                               "Admitted by ClusterQueue cq, wait time since reservation was 42s")]


def test_pending_check_writes_unsatisfied_with_observability_gate() -> None:
    wl = reserved(checks=(check("check"),))
    new = only_update(run(world(wl), T0))
    assert triple(new, c.WORKLOAD_ADMITTED) == (c.FALSE, "UnsatisfiedAdmissionChecks",
                                                "The workload has not all checks ready")


def test_admitted_workload_is_not_unadmitted_by_a_new_pending_check() -> None:
    cq = cluster_queue(("check", "new"))
    wl = reserved(ADMITTED, cond(c.WORKLOAD_PODS_READY, c.TRUE, c.REASON_STARTED),
                  checks=(check("check", c.CHECK_READY),))
    w = world(wl, cq)
    new = only_update(run(w, T0))
    assert [(s.name, s.state) for s in new.status.admission_checks] == \
        [("check", c.CHECK_READY), ("new", c.CHECK_PENDING)]
    w.put(new)
    assert run(w, T0) is NOTHING


# --- Rejected -> deactivation (A.8) -----------------------------------------------------------


def test_rejected_check_sets_deactivation_target_and_warns() -> None:
    wl = reserved(UNSATISFIED, checks=(check("check", c.CHECK_REJECTED, "quota exceeded"),
                                       check("other", c.CHECK_RETRY)))
    cq = cluster_queue(("check", "other"))
    result = run(world(wl, cq), T0 + 1)
    new = only_update(result)
    assert triple(new, c.WORKLOAD_DEACTIVATION_TARGET) == (
        c.TRUE, "AdmissionCheck", 'AdmissionCheck in Rejected state: "check" (quota exceeded)')
    assert not new.is_evicted() and new.has_quota_reservation()
    assert events(result) == [("Warning", "AdmissionCheckRejected",
                               'Deactivated due to AdmissionCheck in Rejected state: "check" (quota exceeded)')]
    assert metrics(result) == []


def test_unadmitted_workload_with_rejected_check_gets_admitted_false_in_the_same_pass() -> None:
    wl = reserved(checks=(check("check", c.CHECK_REJECTED),))
    new = only_update(run(world(wl), T0))
    assert get(new, c.WORKLOAD_ADMITTED).reason == c.REASON_UNSATISFIED_ADMISSION_CHECKS
    assert get(new, c.WORKLOAD_DEACTIVATION_TARGET).message == 'AdmissionCheck in Rejected state: "check"'


def test_deactivation_target_turns_into_spec_active_false() -> None:
    wl = reserved(UNSATISFIED, cond(c.WORKLOAD_DEACTIVATION_TARGET, c.TRUE, "AdmissionCheck", "m"),
                  checks=(check("check", c.CHECK_REJECTED),))
    result = run(world(wl), T0 + 1)
    new = only_update(result)
    assert new.spec.active is False
    assert new.metadata.generation == 2
    assert new.status == wl.status
    assert events(result) == []


def test_inactive_workload_is_evicted_with_the_cause_and_cleaned_up() -> None:
    wl = reserved(UNSATISFIED, cond(c.WORKLOAD_DEACTIVATION_TARGET, c.TRUE, "AdmissionCheck",
                                    'AdmissionCheck in Rejected state: "check"'),
                  checks=(check("check", c.CHECK_REJECTED),), requeue_state=RequeueState(2, None),
                  active=False)
    result = run(world(wl), T0 + 7)
    new = only_update(result)
    message = 'The workload is deactivated due to AdmissionCheck in Rejected state: "check"'
    assert triple(new, c.WORKLOAD_EVICTED) == (c.TRUE, "DeactivatedDueToAdmissionCheck", message)
    assert new.condition(c.WORKLOAD_DEACTIVATION_TARGET) is None
    assert new.status.requeue_state is None
    assert new.has_quota_reservation()  # only the job releases quota
    [state] = new.status.admission_checks
    assert (state.state, state.message, state.retry_count) == (
        c.CHECK_PENDING, "Reset to Pending after eviction. Previously: Rejected", None)
    assert new.status.extra["schedulingStats"]["evictions"] == (
        {"reason": "Deactivated", "underlyingCause": "AdmissionCheck", "count": 1},)
    assert events(result) == [("Normal", "EvictedDueToDeactivatedDueToAdmissionCheck", message)]
    labels = {"cluster_queue": "cq", "reason": "Deactivated", "underlying_cause": "AdmissionCheck",
              "priority_class": ""}
    assert metrics(result) == [(c.METRIC_EVICTED_WORKLOADS, labels), (c.METRIC_EVICTED_WORKLOADS_ONCE, labels)]


def test_manual_deactivation_of_a_pending_workload_has_no_metrics() -> None:
    wl = workload(cond(c.WORKLOAD_QUOTA_RESERVED, c.FALSE, c.REASON_PENDING_EVALUATION), active=False)
    result = run(world(wl, cluster_queue(())), T0)
    new = only_update(result)
    assert triple(new, c.WORKLOAD_EVICTED) == (c.TRUE, "Deactivated", "The workload is deactivated")
    assert events(result) == [] and metrics(result) == []


def test_inactive_workload_already_evicted_keeps_its_reason_and_is_cleaned_up() -> None:
    evicted = cond(c.WORKLOAD_EVICTED, c.TRUE, c.REASON_PODS_READY_TIMEOUT, "Exceeded the PodsReady timeout ns/wl")
    wl = reserved(ADMITTED, evicted, cond(c.WORKLOAD_DEACTIVATION_TARGET, c.TRUE, "RequeuingLimitExceeded", "x"),
                  requeue_state=RequeueState(3, Time(T0 + 60)), active=False)
    result = run(world(wl, cluster_queue(())), T0)
    new = only_update(result)
    assert get(new, c.WORKLOAD_EVICTED) == evicted
    assert new.condition(c.WORKLOAD_DEACTIVATION_TARGET) is None and new.status.requeue_state is None
    assert events(result) == [] and metrics(result) == []


def test_inactive_workload_without_quota_gets_quota_reserved_false_deactivated() -> None:
    wl = workload(cond(c.WORKLOAD_EVICTED, c.TRUE, "DeactivatedDueToAdmissionCheck", "m"),
                  cond(c.WORKLOAD_QUOTA_RESERVED, c.FALSE, c.REASON_PENDING_EVALUATION, "m", at=T0 + 1),
                  cond(c.WORKLOAD_ADMITTED, c.FALSE, c.REASON_NO_RESERVATION, c.MSG_NO_RESERVATION),
                  cond(c.WORKLOAD_REQUEUED, c.FALSE, "DeactivatedDueToAdmissionCheck", "m"),
                  checks=(check("check"),), active=False)
    new = only_update(run(world(wl), T0 + 9))
    assert triple(new, c.WORKLOAD_QUOTA_RESERVED) == (c.FALSE, "Deactivated", "The workload is deactivated")
    assert get(new, c.WORKLOAD_QUOTA_RESERVED).last_transition_time == T0 + 1
    gate_off = Configuration(feature_gates=FrozenMap({c.GATE_UNADMITTED_OBSERVABILITY: False}))
    assert run(world(wl), T0 + 9, gate_off) is NOTHING


@pytest.mark.parametrize("reason", ["Deactivated", "DeactivatedDueToAdmissionCheck",
                                    "DeactivatedDueToRequeuingLimitExceeded"])
def test_reactivation_requeues_whatever_deactivated_it(reason: str) -> None:
    wl = workload(cond(c.WORKLOAD_QUOTA_RESERVED, c.FALSE, "Deactivated", "The workload is deactivated"),
                  cond(c.WORKLOAD_REQUEUED, c.FALSE, reason, "m"), checks=(check("check"),), active=True)
    new = only_update(run(world(wl), T0 + 5))
    assert triple(new, c.WORKLOAD_REQUEUED) == (c.TRUE, "Reactivated", "The workload was reactivated")
    assert get(new, c.WORKLOAD_REQUEUED).last_transition_time == T0 + 5


# --- Retry -> eviction (A.6, A.7) --------------------------------------------------------------


def test_retry_without_delay_evicts_at_once() -> None:
    wl = reserved(UNSATISFIED, checks=(check("check-1", c.CHECK_RETRY, "infrastructure not prepared",
                                             retry_count=1),
                                       check("check-2", c.CHECK_READY, retry_count=4),
                                       check("check-3", c.CHECK_RETRY, "budget exhausted")))
    result = run(world(wl, cluster_queue(("check-1", "check-2", "check-3"))), T0 + 10)
    new = only_update(result)
    message = ('Evicted due to AdmissionChecks in Retry state: "check-1" (infrastructure not prepared); '
               '"check-3" (budget exhausted)')
    assert triple(new, c.WORKLOAD_EVICTED) == (c.TRUE, "AdmissionCheck", message)
    assert get(new, c.WORKLOAD_EVICTED).last_transition_time == T0 + 10
    assert [(s.name, s.state, s.message, s.retry_count, s.last_transition_time)
            for s in new.status.admission_checks] == [
        ("check-1", c.CHECK_PENDING, "Reset to Pending after eviction. Previously: Retry", 2, T0 + 10),
        ("check-2", c.CHECK_PENDING, "Reset to Pending after eviction. Previously: Ready", None, T0 + 10),
        ("check-3", c.CHECK_PENDING, "Reset to Pending after eviction. Previously: Retry", 1, T0 + 10)]
    assert new.has_quota_reservation() and new.status.requeue_state is None
    assert events(result) == [("Normal", "EvictedDueToAdmissionCheck", message)]
    labels = {"cluster_queue": "cq", "reason": "AdmissionCheck", "underlying_cause": "", "priority_class": ""}
    assert metrics(result) == [(c.METRIC_EVICTED_WORKLOADS, labels), (c.METRIC_EVICTED_WORKLOADS_ONCE, labels)]


def test_delayed_retry_records_requeue_at_then_keeps_quota_until_it() -> None:
    wl = reserved(UNSATISFIED, checks=(check("check", c.CHECK_RETRY, "failed", at=T0, requeue_after=60),))
    w = world(wl)
    new = only_update(run(w, T0 + 1))
    assert new.status.requeue_state == RequeueState(None, Time(T0 + 60))
    assert new.status.conditions == wl.status.conditions  # quota kept, nothing else
    w.put(new)
    waiting = run(w, T0 + 20)
    assert waiting.effects == () and waiting.requeue_after == 40
    evicted = only_update(run(w, T0 + 60))
    assert get(evicted, c.WORKLOAD_EVICTED).reason == "AdmissionCheck"
    assert evicted.status.requeue_state == RequeueState(None, Time(T0 + 60))


def test_requeue_at_only_moves_forward() -> None:
    wl = reserved(UNSATISFIED, checks=(check("check", c.CHECK_RETRY, at=T0, requeue_after=60),),
                  requeue_state=RequeueState(3, Time(T0 + 100)))
    result = run(world(wl), T0 + 1)
    assert result.effects == () and result.requeue_after == 99


def test_latest_retry_deadline_wins_and_count_is_untouched() -> None:
    wl = workload(checks=(check("a", c.CHECK_RETRY, at=T0, requeue_after=100),
                          check("b", c.CHECK_RETRY, at=T0 + 50, requeue_after=60)),
                  requeue_state=RequeueState(2, Time(T0 + 10)))
    new = only_update(run(world(wl, cluster_queue(("a", "b"))), T0 + 51))
    assert new.status.requeue_state == RequeueState(2, Time(T0 + 110))


def test_retry_on_a_workload_without_quota_evicts_nothing() -> None:
    wl = workload(cond(c.WORKLOAD_QUOTA_RESERVED, c.FALSE, c.REASON_PENDING_EVALUATION),
                  cond(c.WORKLOAD_ADMITTED, c.FALSE, c.REASON_NO_RESERVATION, c.MSG_NO_RESERVATION),
                  checks=(check("check", c.CHECK_RETRY),))
    assert run(world(wl), T0) is NOTHING


def test_already_evicted_workload_is_not_evicted_again() -> None:
    wl = reserved(UNSATISFIED, cond(c.WORKLOAD_EVICTED, c.TRUE, c.REASON_PREEMPTED, "p"),
                  checks=(check("check", c.CHECK_RETRY),))
    assert run(world(wl), T0) is NOTHING


# --- backoff gate and Requeued (B.5) -------------------------------------------------------------


def test_pending_workload_in_backoff_waits_then_clears_requeue_at_then_finishes_backoff() -> None:
    wl = workload(cond(c.WORKLOAD_QUOTA_RESERVED, c.FALSE, c.REASON_PENDING_EVALUATION, "m"),
                  cond(c.WORKLOAD_ADMITTED, c.FALSE, c.REASON_NO_RESERVATION, c.MSG_NO_RESERVATION),
                  cond(c.WORKLOAD_REQUEUED, c.FALSE, c.REASON_PODS_READY_TIMEOUT, "m"),
                  checks=(check("check"),), requeue_state=RequeueState(1, Time(T0 + 60)))
    w = world(wl)
    waiting = run(w, T0 + 15)
    assert waiting.effects == () and waiting.requeue_after == 45
    cleared = only_update(run(w, T0 + 60))
    assert cleared.status.requeue_state == RequeueState(1, None)
    assert get(cleared, c.WORKLOAD_REQUEUED).status == c.FALSE
    w.put(cleared)
    done = only_update(run(w, T0 + 60))
    assert triple(done, c.WORKLOAD_REQUEUED) == (c.TRUE, "BackoffFinished", "The workload backoff was finished")
    assert done.status.requeue_state == RequeueState(1, None)


def test_backoff_finished_also_for_admission_check_and_clears_requeue_at_of_a_reserved_workload() -> None:
    wl = reserved(UNSATISFIED, cond(c.WORKLOAD_REQUEUED, c.FALSE, c.REASON_ADMISSION_CHECK, "m"),
                  checks=(check("check"),), requeue_state=RequeueState(None, Time(T0)))
    new = only_update(run(world(wl), T0 + 1))
    assert get(new, c.WORKLOAD_REQUEUED).reason == "BackoffFinished"
    assert new.status.requeue_state == RequeueState(None, None)


def test_a_stopped_queue_holds_its_workload_back_until_it_runs_again() -> None:
    """``Requeued=False`` ``ClusterQueueStopped`` waits while the queue is stopped; once it runs
    again, ``Requeued=True`` ``ClusterQueueRestarted`` puts the workload back in the queue."""
    wl = workload(cond(c.WORKLOAD_QUOTA_RESERVED, c.FALSE, c.REASON_PENDING_EVALUATION, "m"),
                  cond(c.WORKLOAD_ADMITTED, c.FALSE, c.REASON_NO_RESERVATION, c.MSG_NO_RESERVATION),
                  cond(c.WORKLOAD_REQUEUED, c.FALSE, "ClusterQueueStopped", "m"), checks=(check("check"),))
    base = cluster_queue()
    stopped = evolve(base, spec=evolve(base.spec, stop_policy=c.STOP_POLICY_HOLD))
    held = only_update(run(world(wl, stopped), T0))
    assert triple(held, c.WORKLOAD_QUOTA_RESERVED) == (c.FALSE, c.REASON_SUSPENDED, "ClusterQueue cq is inactive")
    assert triple(held, c.WORKLOAD_REQUEUED) == (c.FALSE, "ClusterQueueStopped", "m")
    restarted = only_update(run(world(wl), T0))
    assert triple(restarted, c.WORKLOAD_REQUEUED) == (c.TRUE, "ClusterQueueRestarted",
                                                      "The ClusterQueue was restarted after being stopped")


# --- PodsReady timeout (B.2-B.4) -----------------------------------------------------------------


def admitted_not_ready(*extra: Condition, count: int | None = None, admitted_at: int = T0) -> Workload:
    rs = RequeueState(count, None) if count is not None else None
    return reserved(evolve(ADMITTED, last_transition_time=Time(admitted_at)), *extra,
                    requeue_state=rs)


def test_no_timeout_before_it_is_due_and_asks_to_be_woken() -> None:
    result = run(world(admitted_not_ready(), cluster_queue(())), T0 + 100, PODS_READY_5M)
    assert result.effects == () and result.requeue_after == 200


def test_no_timeout_without_wait_for_pods_ready_or_with_pods_ready() -> None:
    w = world(admitted_not_ready(), cluster_queue(()))
    assert run(w, T0 + 10_000, Configuration(wait_for_pods_ready=None)) is NOTHING
    ready = admitted_not_ready(cond(c.WORKLOAD_PODS_READY, c.TRUE, c.REASON_STARTED))
    assert run(world(ready, cluster_queue(())), T0 + 10_000, PODS_READY_5M) is NOTHING


def test_default_timeout_is_thirty_minutes() -> None:
    result = run(world(admitted_not_ready(), cluster_queue(())), T0 + 60)
    assert result.requeue_after == 1740


def test_wait_for_start_timeout_evicts_with_backoff() -> None:
    wl = admitted_not_ready(cond(c.WORKLOAD_PODS_READY, c.FALSE, c.REASON_WAIT_FOR_START, c.MSG_PODS_NOT_READY))
    result = run(world(wl, cluster_queue(())), T0 + 300, PODS_READY_5M)
    new = only_update(result)
    assert triple(new, c.WORKLOAD_EVICTED) == (c.TRUE, "PodsReadyTimeout", "Exceeded the PodsReady timeout ns/wl")
    assert new.status.requeue_state == RequeueState(1, Time(T0 + 300 + 60))
    assert new.status.extra["schedulingStats"]["evictions"] == (
        {"reason": "PodsReadyTimeout", "underlyingCause": "WaitForStart", "count": 1},)
    assert new.is_admitted() and new.has_quota_reservation()
    assert events(result) == [("Normal", "EvictedDueToPodsReadyTimeout", "Exceeded the PodsReady timeout ns/wl")]
    labels = {"cluster_queue": "cq", "reason": "PodsReadyTimeout", "underlying_cause": "WaitForStart",
              "priority_class": ""}
    assert metrics(result) == [(c.METRIC_EVICTED_WORKLOADS, labels), (c.METRIC_EVICTED_WORKLOADS_ONCE, labels)]
    assert result.requeue_after is None


def test_backoff_grows_and_is_capped_and_jitter_is_truncated_to_seconds() -> None:
    config = Configuration(wait_for_pods_ready=WaitForPodsReady(
        timeout=Duration(300.0), requeuing_strategy=RequeuingStrategy(backoff_base_seconds=60,
                                                                      backoff_max_seconds=3600)))
    for count, wait in [(0, 60), (1, 120), (5, 1920), (6, 3600), (9, 3600)]:
        wl = admitted_not_ready(count=count)
        jittery = Context(now=Time(T0 + 300), config=config, jitter=lambda: 0.9999)
        new = only_update(controller.reconcile(world(wl, cluster_queue(())), KEY, jittery))
        # the jitter adds at most 0.36 s, which whole-second requeueAt drops
        assert new.status.requeue_state == RequeueState(count + 1, Time(T0 + 300 + wait)), count


def test_legacy_pods_ready_reason_counts_as_wait_for_start() -> None:
    wl = admitted_not_ready(cond(c.WORKLOAD_PODS_READY, c.FALSE, "PodsReady", "old"))
    new = only_update(run(world(wl, cluster_queue(())), T0 + 300, PODS_READY_5M))
    assert get(new, c.WORKLOAD_EVICTED).reason == c.REASON_PODS_READY_TIMEOUT


def test_recovery_timeout_counts_from_the_pods_ready_transition() -> None:
    recovering = cond(c.WORKLOAD_PODS_READY, c.FALSE, c.REASON_WAIT_FOR_RECOVERY, "x", at=T0 + 1000)
    w = world(admitted_not_ready(recovering), cluster_queue(()))
    assert run(w, T0 + 1200, PODS_READY_5M).requeue_after == 100
    result = run(w, T0 + 1300, PODS_READY_5M)
    new = only_update(result)
    assert new.status.extra["schedulingStats"]["evictions"] == (
        {"reason": "PodsReadyTimeout", "underlyingCause": "WaitForRecovery", "count": 1},)
    assert metrics(result)[0][1]["underlying_cause"] == "WaitForRecovery"
    disabled = Configuration(wait_for_pods_ready=WaitForPodsReady(timeout=Duration(300.0),
                                                                  recovery_timeout=Duration(0.0)))
    assert run(w, T0 + 5000, disabled) is NOTHING


def test_backoff_limit_count_deactivates_instead_of_evicting() -> None:
    config = Configuration(wait_for_pods_ready=WaitForPodsReady(
        timeout=Duration(300.0), requeuing_strategy=RequeuingStrategy(backoff_limit_count=2)))
    result = run(world(admitted_not_ready(count=2), cluster_queue(())), T0 + 300, config)
    new = only_update(result)
    assert triple(new, c.WORKLOAD_DEACTIVATION_TARGET) == (
        c.TRUE, "RequeuingLimitExceeded", "exceeding the maximum number of re-queuing retries")
    assert not new.is_evicted() and new.status.requeue_state == RequeueState(2, None)
    assert events(result) == [] and metrics(result) == []
    # below the limit it still evicts
    below = only_update(run(world(admitted_not_ready(count=1), cluster_queue(())), T0 + 300, config))
    assert below.is_evicted() and below.status.requeue_state is not None
    assert below.status.requeue_state.count == 2


def test_limit_zero_deactivates_on_the_first_timeout() -> None:
    config = Configuration(wait_for_pods_ready=WaitForPodsReady(
        timeout=Duration(300.0), requeuing_strategy=RequeuingStrategy(backoff_limit_count=0)))
    new = only_update(run(world(admitted_not_ready(), cluster_queue(())), T0 + 300, config))
    assert get(new, c.WORKLOAD_DEACTIVATION_TARGET).reason == "RequeuingLimitExceeded"


def test_a_failed_write_emits_no_event() -> None:
    wl = reserved(UNSATISFIED, checks=(check("check", c.CHECK_RETRY),))
    w = World([cluster_queue(), local_queue(), wl], faults=(Fault("update", c.WORKLOAD, "boom"),))
    result = run(w, T0)
    assert result.error == "boom" and result.effects == ()


# --- whole flows through the Manager ---------------------------------------------------------------


class Log:
    """Records events and metric increments the Manager reports."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, str, str]] = []
        self.metrics: list[tuple[str, dict[str, str]]] = []

    def __call__(self, controller: str, key: tuple[str, str, str], effect: Effect) -> None:
        if isinstance(effect, Event):
            self.events.append((effect.kind, effect.type, effect.reason, effect.message))
        elif isinstance(effect, MetricInc):
            self.metrics.append((effect.name, dict(effect.labels)))

    def take(self) -> list[tuple[str, str, str, str]]:
        out, self.events = self.events, []
        return out


def settle(m: Manager, at: int, config: Configuration = Configuration()) -> Workload:
    m.settle(ctx(at, config), controllers=["workload", "job"])
    wl = m.world.get(*KEY)
    assert isinstance(wl, Workload)
    return wl


def test_flow_retry_eviction_release_backoff_finished() -> None:
    wl = reserved(UNSATISFIED, checks=(check("check", c.CHECK_PENDING),))
    log = Log()
    m = Manager(world(wl), Recorder(log))
    assert settle(m, T0) == evolve(
        wl, status=evolve(wl.status, conditions=wl.status.conditions + (
            cond(c.WORKLOAD_PODS_READY, c.FALSE, c.REASON_WAIT_FOR_START, c.MSG_PODS_NOT_READY),)))

    # the check controller answers Retry, to be retried after 60 s
    m.world.put(wl.with_status(admission_checks=(check("check", c.CHECK_RETRY, "try later", at=T0 + 10,
                                                       requeue_after=60),)))
    held = settle(m, T0 + 10)
    assert held.has_quota_reservation() and not held.is_evicted()
    assert held.status.requeue_state == RequeueState(None, Time(T0 + 70))

    released = settle(m, T0 + 70)
    message = 'Evicted due to AdmissionCheck in Retry state: "check" (try later)'
    assert triple(released, c.WORKLOAD_EVICTED) == (c.TRUE, "AdmissionCheck", message)
    assert triple(released, c.WORKLOAD_QUOTA_RESERVED) == (c.FALSE, "PendingEvaluation", message)
    assert triple(released, c.WORKLOAD_ADMITTED) == (c.FALSE, "NoReservation", "The workload has no reservation")
    assert released.status.admission is None
    # requeueAt was already past: requeued in the same settle
    assert triple(released, c.WORKLOAD_REQUEUED) == (c.TRUE, "BackoffFinished", "The workload backoff was finished")
    assert released.status.requeue_state == RequeueState(None, None)
    [state] = released.status.admission_checks
    assert (state.state, state.retry_count, state.requeue_after_seconds) == (c.CHECK_PENDING, 1, 60)
    assert log.take() == [("Workload", "Normal", "EvictedDueToAdmissionCheck", message)]
    assert [n for n, _ in log.metrics] == [c.METRIC_EVICTED_WORKLOADS, c.METRIC_EVICTED_WORKLOADS_ONCE]


def test_flow_pods_ready_timeouts_up_to_deactivation_and_reactivation() -> None:
    config = Configuration(wait_for_pods_ready=WaitForPodsReady(
        timeout=Duration(300.0), requeuing_strategy=RequeuingStrategy(backoff_limit_count=2)))
    log = Log()
    m = Manager(world(admitted_not_ready(), cluster_queue(())), Recorder(log))
    now: int = T0
    settle(m, now, config)
    expected_waits = [60, 120]
    for attempt, wait in enumerate(expected_waits, start=1):
        now += 300
        wl = settle(m, now, config)
        assert triple(wl, c.WORKLOAD_REQUEUED) == (c.FALSE, "PodsReadyTimeout",
                                                    "Exceeded the PodsReady timeout ns/wl")
        assert triple(wl, c.WORKLOAD_QUOTA_RESERVED) == (c.FALSE, "PendingEvaluation",
                                                          "Exceeded the PodsReady timeout ns/wl")
        assert wl.status.requeue_state == RequeueState(attempt, Time(now + wait))
        assert log.take() == [("Workload", "Normal", "EvictedDueToPodsReadyTimeout",
                               "Exceeded the PodsReady timeout ns/wl")]
        now += wait
        wl = settle(m, now, config)
        assert triple(wl, c.WORKLOAD_REQUEUED)[:2] == (c.TRUE, "BackoffFinished")
        assert wl.status.requeue_state == RequeueState(attempt, None)
        # what the scheduler would do: reserve and admit again (no checks on this queue)
        m.world.put(_readmit(wl, now))
        settle(m, now, config)

    now += 300
    wl = settle(m, now, config)
    message = "The workload is deactivated due to exceeding the maximum number of re-queuing retries"
    assert wl.spec.active is False
    assert triple(wl, c.WORKLOAD_EVICTED) == (c.TRUE, "DeactivatedDueToRequeuingLimitExceeded", message)
    assert triple(wl, c.WORKLOAD_REQUEUED) == (c.FALSE, "DeactivatedDueToRequeuingLimitExceeded", message)
    assert triple(wl, c.WORKLOAD_QUOTA_RESERVED) == (c.FALSE, "Deactivated", "The workload is deactivated")
    assert triple(wl, c.WORKLOAD_ADMITTED) == (c.FALSE, "NoReservation", "The workload has no reservation")
    assert wl.condition(c.WORKLOAD_DEACTIVATION_TARGET) is None
    assert wl.status.requeue_state is None
    assert wl.status.extra["schedulingStats"]["evictions"] == (
        {"reason": "PodsReadyTimeout", "underlyingCause": "WaitForStart", "count": 2},
        {"reason": "Deactivated", "underlyingCause": "RequeuingLimitExceeded", "count": 1})
    assert log.take() == [("Workload", "Normal", "EvictedDueToDeactivatedDueToRequeuingLimitExceeded", message)]
    once = [labels for name, labels in log.metrics if name == c.METRIC_EVICTED_WORKLOADS_ONCE]
    assert [(x["reason"], x["underlying_cause"]) for x in once] == [
        ("PodsReadyTimeout", "WaitForStart"), ("Deactivated", "RequeuingLimitExceeded")]

    # the user reactivates it: requeued with a fresh count
    m.world.put(evolve(wl, spec=evolve(wl.spec, active=True)))
    wl = settle(m, now + 1, config)
    assert triple(wl, c.WORKLOAD_REQUEUED) == (c.TRUE, "Reactivated", "The workload was reactivated")
    assert wl.status.requeue_state is None


def _readmit(wl: Workload, now: int) -> Workload:
    wl = set_quota_reservation(wl, ADMISSION, Time(now))
    return ws.sync_admitted_condition(wl, Time(now), Configuration())


def test_flow_rejected_check_deactivates_and_releases() -> None:
    wl = reserved(UNSATISFIED, checks=(check("check", c.CHECK_REJECTED, "no capacity"),))
    log = Log()
    m = Manager(world(wl), Recorder(log))
    wl = settle(m, T0 + 5)
    dt_message = 'AdmissionCheck in Rejected state: "check" (no capacity)'
    message = "The workload is deactivated due to " + dt_message
    assert wl.spec.active is False
    assert triple(wl, c.WORKLOAD_EVICTED) == (c.TRUE, "DeactivatedDueToAdmissionCheck", message)
    assert triple(wl, c.WORKLOAD_REQUEUED) == (c.FALSE, "DeactivatedDueToAdmissionCheck", message)
    assert triple(wl, c.WORKLOAD_QUOTA_RESERVED) == (c.FALSE, "Deactivated", "The workload is deactivated")
    assert log.take() == [
        ("Workload", "Warning", "AdmissionCheckRejected", "Deactivated due to " + dt_message),
        ("Workload", "Normal", "EvictedDueToDeactivatedDueToAdmissionCheck", message)]


# --- the Admitted fast path agrees with SyncAdmittedCondition ------------------------------------

_QR = st.sampled_from([None, RESERVED, cond(c.WORKLOAD_QUOTA_RESERVED, c.FALSE, c.REASON_PENDING_EVALUATION)])
_ADM = st.sampled_from([
    None, UNSATISFIED, evolve(UNSATISFIED, observed_generation=0),
    evolve(UNSATISFIED, message="other"),
    cond(c.WORKLOAD_ADMITTED, c.FALSE, c.REASON_NO_RESERVATION, c.MSG_NO_RESERVATION),
    cond(c.WORKLOAD_ADMITTED, c.FALSE, "NoReservationUnsatisfiedChecks", "legacy"),
    cond(c.WORKLOAD_ADMITTED, c.UNKNOWN, "x")])
_CHECKS = st.lists(st.sampled_from([c.CHECK_PENDING, c.CHECK_READY, c.CHECK_RETRY]), max_size=2)


@given(_QR, _ADM, _CHECKS, st.booleans())
def test_admitted_fast_path_only_skips_what_the_sync_would_not_change(
        qr: Condition | None, adm: Condition | None, states: list[str], observability: bool) -> None:
    wl = workload(*(x for x in (qr, adm) if x is not None),
                  checks=tuple(check(f"c{i}", s) for i, s in enumerate(states)))
    config = Configuration(feature_gates=FrozenMap({c.GATE_UNADMITTED_OBSERVABILITY: observability}))
    if controller._admitted_false_is_current(wl, wl.status, observability):
        assert ws.sync_admitted_condition(wl, Time(T0 + 1), config) == wl
