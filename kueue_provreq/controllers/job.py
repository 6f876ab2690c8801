"""The job integration: what Kueue's job reconciler (``pkg/controller/jobframework/reconciler.go``)
does to a Workload owned by a batch/v1 Job, as the conformance format defines it.

Every Workload counts as owned by a Job.  The real one is a Job in the world named by one of
the Workload's ownerReferences of kind Job; when the world holds none the Job is implicit:
it behaves like a Job whose pods are gone, so stopping it changes nothing in the world.

* **Eviction.** On ``Evicted=True`` the Job is stopped (a real Job that is not suspended yet
  gets ``spec.suspend=true`` and a Normal ``Stopped`` event carrying the eviction message).
  Pods are not modelled, so the stopped Job is inactive at once and, while the Workload
  still holds quota, the same pass releases it in ONE status update: ``Requeued`` (True only
  for ``Preempted`` and ``NodeFailures``; reason and message copied from ``Evicted``) and
  ``UnsetQuotaReservationWithCondition`` (``PendingEvaluation``, legacy ``Pending`` with
  UnadmittedWorkloadsObservability off; the eviction message; ``Admitted`` re-synced).
  Upstream stops the job on any ``Evicted=True`` and releases only with quota held; so does
  this model.  This is the only place quota is given back after an eviction: a Workload
  whose job never runs this keeps ``QuotaReserved=True`` (upstream issues #6035, #14811).
* **PodsReady.** A ``PodsReady`` condition set from outside stands for the Job's pods.  The
  integration writes ``PodsReady`` itself only when the Workload is not admitted, or is
  admitted without any ``PodsReady`` condition: both mean no pod is ready, which upstream's
  job reconciler writes as ``False``, ``WaitForStart``, "Not all pods are ready or
  succeeded".  It is written whether or not ``waitForPodsReady`` is configured: the format
  says the integration writes it and names no configuration, and under v1beta2 defaulting
  ``waitForPodsReady`` is on unless a scenario turns it off, so the condition is only
  observability there (the workload controller alone acts on the timeout, and only with
  ``waitForPodsReady`` set).
* A finished Workload: nothing.

Starting a Job on admission (``Started``) and ``UpdatedAdmissionCheck`` events are not part
of the integration the format defines and are not modelled.
"""

from __future__ import annotations

from collections.abc import Hashable

from kueue_provreq.api import constants as c
from kueue_provreq.api.evolve import evolve
from kueue_provreq.api.job import Job
from kueue_provreq.api.meta import Condition
from kueue_provreq.api.objects import Key
from kueue_provreq.api.workload import Workload
from kueue_provreq.controllers import workload_status as ws
from kueue_provreq.controllers.context import Context
from kueue_provreq.machines import Guard, WorkloadPhase, WorkloadTrigger
from kueue_provreq.machines.phases import workload_phase
from kueue_provreq.world import NOTHING, Result, Txn, World

_REQUEUED_AT_ONCE = (c.REASON_PREEMPTED, c.REASON_NODE_FAILURES)
"""Eviction reasons after which the workload goes straight back to the queue (``Requeued=True``)."""


def watched(wl: Workload) -> Hashable:
    """What a reconcile that changes nothing reads of its Workload (its watch predicate):
    when none of it changed, reconciling again changes nothing either.  The release of
    quota reads more (the admission, the checks), but it is a write, never remembered."""
    return (wl.status.conditions, wl.metadata.generation, wl.metadata.owner_references, wl.spec.active,
            wl.status.requeue_state)


def reconcile(world: World, key: Key, ctx: Context) -> Result:
    txn = Txn(world, ctx.now)
    wl = txn.get(*key)
    if not isinstance(wl, Workload):
        return NOTHING
    phase = workload_phase(wl)
    if phase == WorkloadPhase.FINISHED:
        return NOTHING
    evicted = wl.condition(c.WORKLOAD_EVICTED)
    if evicted is not None and evicted.status == c.TRUE:
        job = _owner_job(txn, wl)
        if job is not None and job.spec.suspend is not True:
            err = txn.update(evolve(job, spec=evolve(job.spec, suspend=True)))
            if err is not None:
                return txn.result(error=err)
            txn.event(c.EVENT_TYPE_NORMAL, c.EVENT_STOPPED, evicted.message, job)
        if phase == WorkloadPhase.EVICTED:
            requeued = evicted.reason in _REQUEUED_AT_ONCE
            rs = wl.status.requeue_state
            release = ws.fire(wl, WorkloadTrigger.RELEASE_QUOTA, {
                Guard.DEACTIVATED: not wl.is_active,
                Guard.REQUEUED: requeued and (rs is None or rs.requeue_at is None)})
            released = _release_quota(wl, requeued, evicted, ctx)
            return txn.result(error=txn.update(released, (release,)))
        if txn.effects:
            return txn.result()
    return _sync_pods_ready(txn, wl)


def _release_quota(wl: Workload, requeued: bool, evicted: Condition, ctx: Context) -> Workload:
    """``SetRequeuedCondition`` + ``UnsetQuotaReservationWithCondition`` in one update;
    ``Requeued`` is True for the eviction reasons that put the workload straight back in the
    queue (a ``requeueAt`` still ahead keeps it out a while longer all the same)."""
    now = ctx.now
    reason, message = evicted.reason, evicted.message
    wl = ws.set_cond(wl, c.WORKLOAD_REQUEUED, c.TRUE if requeued else c.FALSE, reason, message, now)
    release_reason = (c.REASON_PENDING_EVALUATION if ctx.config.gate(c.GATE_UNADMITTED_OBSERVABILITY)
                      else c.REASON_PENDING_LEGACY)
    return ws.unset_quota_reservation(wl, release_reason, message, now, ctx.config)


def _sync_pods_ready(txn: Txn, wl: Workload) -> Result:
    """No pod is ready while the workload is not admitted, nor while nothing says otherwise."""
    ready = wl.condition(c.WORKLOAD_PODS_READY)
    if ready is not None and (wl.is_admitted() or (
            ready.status == c.FALSE and ready.reason == c.REASON_WAIT_FOR_START
            and ready.message == c.MSG_PODS_NOT_READY and ready.observed_generation == wl.metadata.generation)):
        return NOTHING  # the second test is ``set_condition``'s no-op, without building the condition
    new = ws.set_cond(wl, c.WORKLOAD_PODS_READY, c.FALSE, c.REASON_WAIT_FOR_START,
                      c.MSG_PODS_NOT_READY, txn.now)
    if new is wl:
        return NOTHING
    return txn.result(error=txn.update(new))


def _owner_job(txn: Txn, wl: Workload) -> Job | None:
    """The Job in the world that owns the workload, or None for the implicit one."""
    for ref in wl.metadata.owner_references:
        if ref.kind == c.JOB:
            job = txn.get(c.JOB, wl.metadata.namespace, ref.name)
            if isinstance(job, Job):
                return job
    return None
