"""The job integration (conformance format, "The job integration"): stop the job and release
quota on eviction, keep PodsReady written while no pod can be ready."""

from __future__ import annotations

import pytest
from kueue_provreq.api import constants as c
from kueue_provreq.api.config import Configuration
from kueue_provreq.api.evolve import evolve
from kueue_provreq.api.frozen import FrozenMap
from kueue_provreq.api.job import Job, JobSpec
from kueue_provreq.api.meta import Condition, ObjectMeta, OwnerReference, Time
from kueue_provreq.api.workload import (
    Admission,
    AdmissionCheckState,
    PodSetAssignment,
    RequeueState,
    Workload,
)
from kueue_provreq.controllers import job as integration
from kueue_provreq.controllers.context import Context
from kueue_provreq.engine import verify_change
from kueue_provreq.machines.phases import workload_phase
from kueue_provreq.world import NOTHING, Event, Fault, MetricInc, Result, Update, World

import builders
from builders import T0, cond

KEY = (c.WORKLOAD, "ns", "wl")
ADMISSION = Admission("cq", (PodSetAssignment("main", FrozenMap({"cpu": "default"})),))
NOT_READY = (c.FALSE, c.REASON_WAIT_FOR_START, "Not all pods are ready or succeeded")


RESERVED = cond(c.WORKLOAD_QUOTA_RESERVED, c.TRUE, c.REASON_QUOTA_RESERVED, "Quota reserved in ClusterQueue cq")
ADMITTED = cond(c.WORKLOAD_ADMITTED, c.TRUE, c.REASON_ADMITTED, c.MSG_ADMITTED)


def workload(*conditions: Condition, admission: Admission | None = ADMISSION, active: bool | None = None,
             owners: tuple[OwnerReference, ...] = (), checks: tuple[AdmissionCheckState, ...] = (),
             ) -> Workload:
    return builders.workload(conditions=conditions, admission=admission, active=active, owners=owners,
                             checks=checks, requeue_state=RequeueState(1, Time(T0 + 60)), pod_sets=())


def evicted(reason: str, message: str = "why", *extra: Condition, active: bool | None = None,
            owners: tuple[OwnerReference, ...] = ()) -> Workload:
    return workload(RESERVED, ADMITTED, cond(c.WORKLOAD_PODS_READY, c.TRUE, c.REASON_STARTED),
                    cond(c.WORKLOAD_EVICTED, c.TRUE, reason, message, at=T0 + 5), *extra,
                    active=active, owners=owners)


def job(suspend: bool | None = False) -> Job:
    return Job(ObjectMeta(name="job", namespace="ns", uid="job-uid"), JobSpec(suspend=suspend))


OWNED = (OwnerReference(c.BATCH_V1, c.JOB, "job", "job-uid", controller=True),)


def run(w: World, at: int = T0 + 10, config: Configuration = Configuration()) -> Result:
    return integration.reconcile(w, KEY, Context(now=Time(at), config=config))


def wl_updates(result: Result) -> list[Workload]:
    return [e.obj for e in result.effects if isinstance(e, Update) and isinstance(e.obj, Workload)]


def job_updates(result: Result) -> list[Job]:
    return [e.obj for e in result.effects if isinstance(e, Update) and isinstance(e.obj, Job)]


def events(result: Result) -> list[tuple[str, str, str, str, str]]:
    return [(e.kind, e.name, e.type, e.reason, e.message) for e in result.effects if isinstance(e, Event)]


def triple(wl: Workload, type_: str) -> tuple[str, str, str]:
    found = wl.condition(type_)
    assert found is not None, type_
    return found.status, found.reason, found.message


# --- eviction ---------------------------------------------------------------------------------


@pytest.mark.parametrize("reason, requeued", [
    (c.REASON_PREEMPTED, c.TRUE), (c.REASON_NODE_FAILURES, c.TRUE), (c.REASON_PODS_READY_TIMEOUT, c.FALSE),
    (c.REASON_ADMISSION_CHECK, c.FALSE), ("DeactivatedDueToAdmissionCheck", c.FALSE),
    ("ClusterQueueStopped", c.FALSE)])
def test_eviction_releases_quota_in_one_update(reason: str, requeued: str) -> None:
    wl = evicted(reason, "the message")
    result = run(World([wl]))
    [new] = wl_updates(result)
    assert triple(new, c.WORKLOAD_REQUEUED) == (requeued, reason, "the message")
    assert get_ltt(new, c.WORKLOAD_REQUEUED) == T0 + 10
    assert triple(new, c.WORKLOAD_QUOTA_RESERVED) == (c.FALSE, "PendingEvaluation", "the message")
    assert get_ltt(new, c.WORKLOAD_QUOTA_RESERVED) == T0 + 10
    assert new.status.admission is None
    assert triple(new, c.WORKLOAD_ADMITTED) == (c.FALSE, "NoReservation", "The workload has no reservation")
    # the Evicted condition and the requeue state are the workload controller's
    assert new.condition(c.WORKLOAD_EVICTED) == wl.condition(c.WORKLOAD_EVICTED)
    assert new.status.requeue_state == wl.status.requeue_state
    # implicit job: nothing else
    [update] = result.effects
    assert isinstance(update, Update)
    verify_change(wl, update)
    [release] = update.transitions
    assert (release.trigger, release.target) == ("release_quota", workload_phase(new))


def get_ltt(wl: Workload, type_: str) -> int | None:
    found = wl.condition(type_)
    return found.last_transition_time if found else None


def test_release_reason_without_the_observability_gate_is_legacy_pending() -> None:
    config = Configuration(feature_gates=FrozenMap({c.GATE_UNADMITTED_OBSERVABILITY: False}))
    [new] = wl_updates(run(World([evicted(c.REASON_ADMISSION_CHECK)]), config=config))
    assert triple(new, c.WORKLOAD_QUOTA_RESERVED)[:2] == (c.FALSE, "Pending")


def test_a_real_job_is_suspended_with_a_stopped_event() -> None:
    wl = evicted(c.REASON_PODS_READY_TIMEOUT, "Exceeded the PodsReady timeout ns/wl", owners=OWNED)
    result = run(World([job(), wl]))
    [stopped] = job_updates(result)
    assert stopped.spec.suspend is True
    assert events(result) == [("Job", "job", "Normal", "Stopped", "Exceeded the PodsReady timeout ns/wl")]
    [new] = wl_updates(result)
    assert triple(new, c.WORKLOAD_QUOTA_RESERVED)[1] == "PendingEvaluation"
    # the job is stopped before the quota is released
    assert [type(e.obj).__name__ for e in result.effects if isinstance(e, Update)] == ["Job", "Workload"]


def test_an_already_suspended_job_is_not_stopped_again() -> None:
    result = run(World([job(suspend=True), evicted(c.REASON_PREEMPTED, owners=OWNED)]))
    assert job_updates(result) == [] and events(result) == []
    assert len(wl_updates(result)) == 1


def test_an_owner_reference_to_a_missing_job_means_the_implicit_job() -> None:
    result = run(World([evicted(c.REASON_PREEMPTED, owners=OWNED)]))
    assert job_updates(result) == [] and events(result) == [] and len(wl_updates(result)) == 1


def test_a_failed_job_update_stops_the_pass() -> None:
    w = World([job(), evicted(c.REASON_PREEMPTED, owners=OWNED)], faults=(Fault("update", c.JOB, "conflict"),))
    result = run(w)
    assert result.error == "conflict" and result.effects == ()


def test_evicted_workload_without_quota_still_has_its_job_stopped() -> None:
    wl = workload(cond(c.WORKLOAD_EVICTED, c.TRUE, "Deactivated", "The workload is deactivated"),
                  admission=None, active=False, owners=OWNED)
    result = run(World([job(), wl]))
    assert [j.spec.suspend for j in job_updates(result)] == [True]
    assert wl_updates(result) == []
    # once stopped, PodsReady follows
    w = World([job(suspend=True), wl])
    [new] = wl_updates(run(w))
    assert triple(new, c.WORKLOAD_PODS_READY) == NOT_READY


def test_no_metric_and_no_workload_event_from_the_job_integration() -> None:
    result = run(World([job(), evicted(c.REASON_PREEMPTED, owners=OWNED)]))
    assert not any(isinstance(e, MetricInc) for e in result.effects)
    assert all(e.kind == c.JOB for e in result.effects if isinstance(e, Event))


# --- PodsReady --------------------------------------------------------------------------------


def test_pending_workload_gets_pods_ready_false_wait_for_start() -> None:
    wl = workload(admission=None)
    [new] = wl_updates(run(World([wl])))
    assert triple(new, c.WORKLOAD_PODS_READY) == NOT_READY
    assert get_ltt(new, c.WORKLOAD_PODS_READY) == T0 + 10
    assert run(World([new])) is NOTHING


def test_not_admitted_workload_has_pods_ready_turned_false() -> None:
    wl = workload(RESERVED, cond(c.WORKLOAD_PODS_READY, c.TRUE, c.REASON_STARTED, "All pods ready"))
    [new] = wl_updates(run(World([wl])))
    assert triple(new, c.WORKLOAD_PODS_READY) == NOT_READY


def test_admitted_workload_without_pods_ready_gets_it() -> None:
    [new] = wl_updates(run(World([workload(RESERVED, ADMITTED)])))
    assert triple(new, c.WORKLOAD_PODS_READY) == NOT_READY


@pytest.mark.parametrize("pods_ready", [
    cond(c.WORKLOAD_PODS_READY, c.TRUE, c.REASON_STARTED, "All pods reached readiness"),
    cond(c.WORKLOAD_PODS_READY, c.FALSE, c.REASON_WAIT_FOR_RECOVERY, "At least one pod has failed")])
def test_admitted_workload_keeps_the_pods_ready_it_was_given(pods_ready: Condition) -> None:
    assert run(World([workload(RESERVED, ADMITTED, pods_ready)])) is NOTHING


def test_pods_ready_is_written_without_wait_for_pods_ready_too() -> None:
    config = Configuration(wait_for_pods_ready=None)
    [new] = wl_updates(run(World([workload(admission=None)]), config=config))
    assert triple(new, c.WORKLOAD_PODS_READY) == NOT_READY


def test_finished_workload_is_left_alone() -> None:
    wl = evicted(c.REASON_PREEMPTED, "p", cond(c.WORKLOAD_FINISHED, c.TRUE, "Succeeded"), owners=OWNED)
    assert run(World([job(), wl])) is NOTHING
    assert run(World([workload(cond(c.WORKLOAD_FINISHED, c.TRUE, "Failed"), admission=None)])) \
        is NOTHING


def test_missing_workload() -> None:
    assert run(World([job()])) is NOTHING


def test_released_workload_is_a_declared_transition_into_backoff_pending_or_inactive() -> None:
    for wl in (evicted(c.REASON_PREEMPTED), evicted(c.REASON_ADMISSION_CHECK),
               evicted("DeactivatedDueToAdmissionCheck", active=False)):
        [update] = run(World([wl])).effects
        assert isinstance(update, Update)
        verify_change(wl, update)
        assert update.transitions[0].trigger == "release_quota"
        assert evolve(update.obj, status=wl.status) == wl
