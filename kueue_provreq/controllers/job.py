"""The job reconciler (``pkg/controller/jobframework/reconciler.go``): one controller, ``job``, for
every job integration (:mod:`~kueue_provreq.controllers.integrations`), as upstream's generic
reconciler serves each of them.  It reconciles two kinds of keys.

**A job** (batch/v1 Job, JobSet, PyTorchJob), as upstream reconciles it:

* Kueue manages it when its kind's integration is enabled (``integrations.frameworks``), no job
  of a managed kind above it in its controller owner chain manages it (that job's Workload covers
  it; such child jobs are not reconciled further here), and it has the
  ``kueue.x-k8s.io/queue-name`` label or ``manageJobsWithoutQueueName`` is on (a job without the
  label then gets a Workload with an empty queue name, which no queue admits).  Anything else is
  not Kueue's: no Workload, and the job runs as its own controller runs it.
* Its Workload is the one that names it as owner (kind and name, and uid when both have one),
  used as it is, whatever its content (a cluster dump's).  When there is none, a job that still
  runs is first suspended (a Normal ``Stopped`` event, "Missing Workload; unable to restore pod
  templates"), and unless it is finished or still has active pods, its Workload is created as
  ``ConstructWorkload`` builds it (:func:`workload_for`), with a Normal ``CreatedWorkload``
  event.  Creating a Workload is not a transition of its machine: it is born Pending.
* A suspended job whose Workload is admitted is started (``RunWithPodSetsInfo``): unsuspended,
  its pod templates given the assigned flavors' node labels and tolerations, the podset label
  and the admission checks' ``podSetUpdates`` (the provisioning check's
  ``consume-provisioning-request`` annotations), and with partial admission a Job's
  ``parallelism`` becomes the admitted count; a Normal ``Started`` event "Admitted by
  clusterQueue <cq>".  A suspended job whose Workload is not admitted has its queue name copied
  to the Workload when it changed.  A running job whose Workload is not admitted is stopped
  ("Not admitted by cluster queue").  An evicted or finished Workload is left to the Workload
  reconcile below.

**A Workload** (what the conformance format calls the job integration): every Workload counts
as owned by a job; the real one is a job in the world named by one of its ownerReferences, and
when the world holds none the job is implicit: it behaves like a batch/v1 Job whose pods are
gone, so stopping it changes nothing in the world.

* **Eviction.** On ``Evicted=True`` the job is stopped (suspended, its pod templates restored
  from the Workload's podsets, a Normal ``Stopped`` event carrying the eviction message).  Pods
  are not modelled, so the stopped job is inactive at once and, while the Workload still holds
  quota, the same pass releases it in ONE status update: ``Requeued`` (True only for
  ``Preempted`` and ``NodeFailures``; reason and message copied from ``Evicted``) and
  ``UnsetQuotaReservationWithCondition`` (``PendingEvaluation``, legacy ``Pending`` with
  UnadmittedWorkloadsObservability off; the eviction message; ``Admitted`` re-synced).
  Upstream stops the job on any ``Evicted=True`` and releases only with quota held; so does
  this model.  This is the only place quota is given back after an eviction: a Workload
  whose job never runs this keeps ``QuotaReserved=True`` (upstream issues #6035, #14811).
* **PodsReady.** A ``PodsReady`` condition set from outside stands for the job's pods.  The
  integration writes ``PodsReady`` itself only when the Workload is not admitted, or is
  admitted without any ``PodsReady`` condition: both mean no pod is ready, which upstream's
  job reconciler writes as ``False``, ``WaitForStart``, "Not all pods are ready or
  succeeded".  It is written whether or not ``waitForPodsReady`` is configured: the format
  says the integration writes it and names no configuration, and under v1beta2 defaulting
  ``waitForPodsReady`` is on unless a scenario turns it off, so the condition is only
  observability there (the workload controller alone acts on the timeout, and only with
  ``waitForPodsReady`` set).
* A finished Workload: nothing.

**On create** (:func:`defaulted`), Kueue's mutating webhook for job kinds gives a job without a
queue-name label the LocalQueue ``default`` when its namespace has one, and suspends a job Kueue
will manage; the drivers (the conformance runner, ``explain``) apply it to the jobs they create
(those without a uid: one with a uid is stored already).
A job put in a world without it is suspended by the reconciler instead, as above.

Not modelled: finishing the Workload when the job finishes (a scenario patches ``Finished``),
suspending the child jobs of a managed job, ``managedJobsNamespaceSelector`` (every namespace
is taken to match; Kueue's default leaves out ``kube-system`` and its own), priority classes
(the Workload's priority is 0), elastic jobs, prebuilt Workloads, replacing a Workload that no
longer matches its job, the Workload's ``resource-in-use`` finalizer, and the
``UpdatedAdmissionCheck`` events.  Upstream finishes a Workload
whose job cannot be started (its pod set updates conflict, or its admission has another number
of podsets than the job); the model reports it as a reconcile error.
"""

from __future__ import annotations

from typing import Any

import attrs

from kueue_provreq.api import constants as c
from kueue_provreq.api import naming
from kueue_provreq.api.config import Configuration
from kueue_provreq.api.evolve import evolve
from kueue_provreq.api.frozen import FrozenMap
from kueue_provreq.api.job import Job, JobSet, PyTorchJob
from kueue_provreq.api.meta import Condition, ObjectMeta, OwnerReference
from kueue_provreq.api.objects import RESOURCE_NAMES, JobObject, Key, KubeObject, not_in_cache
from kueue_provreq.api.workload import Workload, WorkloadSpec
from kueue_provreq.controllers import podsets
from kueue_provreq.controllers import workload_status as ws
from kueue_provreq.controllers.context import Context
from kueue_provreq.controllers.integrations import INTEGRATIONS, Integration, JobIntegration, integration_of
from kueue_provreq.machines import Guard, WorkloadTrigger, write_workload
from kueue_provreq.world import NOTHING, Result, Txn, World, truncate

_REQUEUED_AT_ONCE = (c.REASON_PREEMPTED, c.REASON_NODE_FAILURES)
"""Eviction reasons after which the workload goes straight back to the queue (``Requeued=True``)."""

_JOB_TYPES = (Job, JobSet, PyTorchJob)


def reconcile(world: World, key: Key, ctx: Context) -> Result:
    if key[0] == c.WORKLOAD:
        return _reconcile_workload(world, key, ctx)
    return _reconcile_job(world, key, ctx)


# --- who manages a job ------------------------------------------------------------------------


def queue_name(job: KubeObject) -> str:
    """``QueueNameForObject``: the ``kueue.x-k8s.io/queue-name`` label."""
    return job.metadata.labels.get(c.LABEL_QUEUE_NAME, "")


@attrs.frozen
class Management:
    """Whether Kueue manages a job, and why (``explain`` says it in these words)."""

    managed: bool
    why: str
    error: str | None = None
    """A reconcile error instead of an answer (an owner that cannot be read)."""


def management(read: World | Txn, job: JobObject, config: Configuration) -> Management:
    """The checks ``ReconcileGenericJob`` makes before it looks for a Workload."""
    integration = integration_of(job)
    if integration.framework not in config.frameworks:
        return Management(False, f"the {integration.framework} integration is not enabled "
                                  "(Configuration integrations.frameworks)")
    ancestor, error = _managed_ancestor(read, job, config)
    if error is not None:
        return Management(False, error, error)
    if ancestor is not None:
        return Management(False, f"it runs as part of {ancestor.KIND} {ancestor.metadata.name}, "
                                 "whose Workload Kueue admits")
    name = queue_name(job)
    if name:
        return Management(True, f"LocalQueue {name} (label {c.LABEL_QUEUE_NAME})")
    if config.manage_jobs_without_queue_name:
        return Management(True, f"no {c.LABEL_QUEUE_NAME} label, and manageJobsWithoutQueueName is on: "
                                "its Workload has no queue name")
    return Management(False, f"no {c.LABEL_QUEUE_NAME} label, and manageJobsWithoutQueueName is off")


def _managed_ancestor(read: World | Txn, job: JobObject, config: Configuration) -> tuple[Any, str | None]:
    """``FindAncestorJobManagedByKueue``, over the modelled job kinds: the highest job up the
    controller owner chain whose integration is enabled and that has a queue name (or any, with
    ``manageJobsWithoutQueueName``); an owner that names a modelled job kind must exist."""
    seen = {job.metadata.uid}
    current: KubeObject = job
    top: Any = None
    while True:
        ref = current.metadata.controller_ref()
        integration = INTEGRATIONS.get(ref.kind) if ref is not None else None
        if ref is None or integration is None or ref.api_version != integration.api_version:
            return top, None
        owner = read.get(ref.kind, job.metadata.namespace, ref.name)
        if owner is None:
            return None, not_in_cache(ref.kind, ref.name)
        if ref.uid and owner.metadata.uid != ref.uid:
            return top, None
        if owner.metadata.uid in seen:
            return None, f"cyclic ownership through {RESOURCE_NAMES[ref.kind]} {ref.name!r}"
        seen.add(owner.metadata.uid)
        if integration.framework in config.frameworks and (config.manage_jobs_without_queue_name or queue_name(owner)):
            top = owner
        current = owner


def defaulted(read: World | Txn, obj: KubeObject, config: Configuration) -> KubeObject:
    """What Kueue's mutating webhook for job kinds does to ``obj`` as it is created:
    ``ApplyDefaultLocalQueue`` (no queue-name label, a LocalQueue ``default`` in the namespace,
    no owner of an enabled job kind: the label becomes ``default``) then
    ``ApplyDefaultForSuspend`` (a job Kueue manages is created suspended).  Other objects, jobs
    of integrations not enabled, and objects that carry a uid (stored already, as in a cluster
    dump: the webhook ran when they were created) are returned as they are."""
    if not isinstance(obj, _JOB_TYPES) or obj.metadata.uid or \
            integration_of(obj).framework not in config.frameworks:
        return obj
    job: JobObject = obj
    meta = job.metadata
    owner = meta.controller_ref()
    owned = owner is not None and owner.kind in INTEGRATIONS and \
        owner.api_version == INTEGRATIONS[owner.kind].api_version and \
        INTEGRATIONS[owner.kind].framework in config.frameworks
    if not queue_name(job) and not owned and \
            read.get(c.LOCAL_QUEUE, meta.namespace, c.DEFAULT_LOCAL_QUEUE_NAME) is not None:
        job = evolve(job, metadata=evolve(meta, labels=meta.labels.set(c.LABEL_QUEUE_NAME,
                                                                       c.DEFAULT_LOCAL_QUEUE_NAME)))
    ancestor, error = _managed_ancestor(read, job, config)
    integration = integration_of(job)
    if error is None and ancestor is None and (queue_name(job) or config.manage_jobs_without_queue_name) \
            and not integration.is_suspended(job):
        job = integration.with_suspend(job, True)
    return job


# --- the Workload of a job ---------------------------------------------------------------------


def workload_of(read: World | Txn, job: JobObject) -> Workload | None:
    """The Workload that names ``job`` as its owner (by kind and name, and by uid when both
    have one), the first one if there are several."""
    meta = job.metadata
    for wl in read.owned_by_name(c.WORKLOAD, meta.namespace, meta.name):
        if isinstance(wl, Workload) and any(
                r.kind == job.KIND and r.name == meta.name and (not r.uid or not meta.uid or r.uid == meta.uid)
                for r in wl.metadata.owner_references):
            return wl
    return None


def _is_label_value(text: str) -> bool:
    """A valid label value (the job uid label is only set when the uid is one)."""
    return len(text) <= 63 and (not text or (text[0].isalnum() and text[-1].isalnum() and all(
        ch.isascii() and (ch.isalnum() or ch in "-_.") for ch in text)))


def workload_for(job: JobObject, config: Configuration) -> Workload:
    """The Workload ``ConstructWorkload`` and ``prepareWorkload`` build for ``job``: named by
    :func:`~kueue_provreq.api.naming.workload_name_for_owner`, in the job's namespace, the
    ``kueue.x-k8s.io/job-uid`` label, the job's ``provreq.kueue.x-k8s.io/`` annotations (they
    become ProvisioningRequest parameters) and its ``admission-gated-by`` gate
    (``PropagateAdmissionGatedByAnnotation``, gate AdmissionGatedBy), the job as controller owner, the queue name from
    the label, the integration's podsets (``minCount`` dropped with the PartialAdmission gate
    off), priority 0 and ``active`` (the API server's default)."""
    integration = integration_of(job)
    meta = job.metadata
    pod_sets = integration.pod_sets(job)
    if not config.gate(c.GATE_PARTIAL_ADMISSION):
        pod_sets = tuple(evolve(ps, min_count=None) for ps in pod_sets)
    owner = OwnerReference(api_version=integration.api_version, kind=job.KIND, name=meta.name, uid=meta.uid,
                           controller=True, block_owner_deletion=True)
    return Workload(
        metadata=ObjectMeta(
            name=naming.workload_name_for_owner(job.KIND, integration.group, meta.name, meta.uid),
            namespace=meta.namespace,
            labels=FrozenMap({c.LABEL_JOB_UID: meta.uid} if meta.uid and _is_label_value(meta.uid) else {}),
            annotations=FrozenMap({k: v for k, v in meta.annotations.items()
                                   if k.startswith(c.ANNOTATION_PROVREQ_PREFIX) or
                                   (k == c.ANNOTATION_ADMISSION_GATED_BY and config.gate(c.GATE_ADMISSION_GATED_BY))}),
            owner_references=(owner,)),
        spec=WorkloadSpec(pod_sets=pod_sets, queue_name=queue_name(job), priority=0, active=True))


# --- the job reconcile -------------------------------------------------------------------------


def _reconcile_job(world: World, key: Key, ctx: Context) -> Result:
    txn = Txn(world, ctx.now)
    job = txn.get(*key)
    if not isinstance(job, _JOB_TYPES):
        return NOTHING
    verdict = management(txn, job, ctx.config)
    if verdict.error is not None:
        return txn.result(error=verdict.error)
    if not verdict.managed:
        return NOTHING
    integration = integration_of(job)
    wl = workload_of(txn, job)
    if wl is None:
        return _create_workload(txn, integration, job, ctx.config)
    if wl.is_finished() or integration.finished(job):
        return NOTHING
    evicted = wl.condition(c.WORKLOAD_EVICTED)
    if evicted is not None and evicted.status == c.TRUE:
        return NOTHING  # the Workload's own reconcile stops the job and releases the quota
    if integration.is_suspended(job):
        if wl.is_admitted():
            return txn.result(error=_start(txn, integration, job, wl, ctx.config))
        if wl.spec.queue_name != queue_name(job):
            return txn.result(error=txn.update(evolve(wl, spec=evolve(wl.spec, queue_name=queue_name(job)))))
        return NOTHING
    if not wl.is_admitted():
        return txn.result(error=stop_job(txn, job, wl, c.MSG_NOT_ADMITTED))
    return NOTHING


def _create_workload(txn: Txn, integration: Integration[Any], job: JobObject, config: Configuration) -> Result:
    """``ensureOneWorkload`` and ``handleJobWithNoWorkload`` for a job with no Workload."""
    finished = integration.finished(job)
    if not integration.is_suspended(job) and not finished:
        err = stop_job(txn, job, None, c.MSG_MISSING_WORKLOAD)
        if err is not None:
            return txn.result(error=err)
    if finished or integration.active(job):
        return txn.result()  # finished: nothing to queue; active pods: wait until they are gone
    wl, err = txn.create(workload_for(job, config))
    if wl is None:
        return txn.result(error=err)
    txn.event(c.EVENT_TYPE_NORMAL, c.EVENT_CREATED_WORKLOAD,
              c.MSG_CREATED_WORKLOAD.format(namespace=wl.metadata.namespace, name=wl.metadata.name), job)
    return txn.result()


def _start(txn: Txn, integration: Integration[Any], job: JobObject, wl: Workload,
           config: Configuration) -> str | None:
    """``startJob``; returns the error, if any.  What can never be put in the job's pod
    templates (``podset.IsPermanent``: podSetUpdates that conflict with each other, with the
    flavors' node labels or with the job's own) finishes the Workload instead
    (``Finished=True`` ``FailedToStart``, the error as message; ``workloadfinish.Finish``) and
    leaves the job suspended; a missing flavor is an error to retry."""
    assert wl.status.admission is not None
    try:
        started = integration.started(job, podsets.from_status(txn, wl, config))
    except podsets.BadPodSetsInfo as e:
        finished, finishing = write_workload(wl, WorkloadTrigger.FINISH, reason=c.REASON_FAILED_TO_START,
                                             message=truncate(str(e), c.CONDITION_MESSAGE_LIMIT), now=txn.now)
        return txn.update(finished, (finishing,))
    except LookupError as e:
        return str(e)
    err = txn.update(started)
    if err is None:
        txn.event(c.EVENT_TYPE_NORMAL, c.EVENT_STARTED,
                  c.MSG_JOB_ADMITTED.format(cq=wl.status.admission.cluster_queue), job)
    return err


def stop_job(txn: Txn, job: JobObject, wl: Workload | None, message: str) -> str | None:
    """``stopJob``: suspend the job and put its pod templates back as its Workload recorded them,
    with a Normal ``Stopped`` event when it was running.  A suspended job is left as it is,
    except a batch/v1 Job, whose own ``Stop`` restores it all the same."""
    integration = integration_of(job)
    running = not integration.is_suspended(job)
    if not running and not isinstance(integration, JobIntegration):
        return None
    infos = tuple(podsets.from_pod_set(ps) for ps in wl.spec.pod_sets) if wl is not None else None
    stopped = integration.stopped(job, infos)
    if stopped != job:
        err = txn.update(stopped)
        if err is not None:
            return err
    if running:
        txn.event(c.EVENT_TYPE_NORMAL, c.EVENT_STOPPED, message, job)
    return None


# --- the Workload reconcile --------------------------------------------------------------------


def _reconcile_workload(world: World, key: Key, ctx: Context) -> Result:
    txn = Txn(world, ctx.now)
    wl = txn.get(*key)
    if not isinstance(wl, Workload):
        return NOTHING
    status = wl.status
    if c.WORKLOAD_FINISHED in status.true_types:
        return NOTHING
    evicted = status.conditions_by_type.get(c.WORKLOAD_EVICTED)
    if evicted is not None and evicted.status == c.TRUE:
        job = _owner_job(txn, wl)
        if job is not None:
            err = stop_job(txn, job, wl, evicted.message)
            if err is not None:
                return txn.result(error=err)
        if status.is_true(c.WORKLOAD_QUOTA_RESERVED):  # the Evicted phase: its quota to release
            requeued = evicted.reason in _REQUEUED_AT_ONCE
            rs = wl.status.requeue_state
            # ``SetRequeuedCondition`` + ``UnsetQuotaReservationWithCondition`` in one update:
            # ``Requeued`` is True for the eviction reasons that put the workload straight back
            # in the queue (a ``requeueAt`` still ahead keeps it out a while longer all the same)
            released, release = write_workload(wl, WorkloadTrigger.RELEASE_QUOTA, {
                Guard.DEACTIVATED: not wl.is_active,
                Guard.REQUEUED: requeued and (rs is None or rs.requeue_at is None)},
                requeued=requeued, reason=evicted.reason, message=evicted.message, now=ctx.now, config=ctx.config)
            # the next pass stops the (stopped) job again and syncs PodsReady: settled unless
            # the release left PodsReady to write
            return txn.result(error=txn.update(released, (release,)), settled=pods_ready_current(released))
        if txn.effects:
            return txn.result(settled=pods_ready_current(wl))
    return _sync_pods_ready(txn, wl)


def _pods_not_ready_already(wl: Workload, ready: Condition) -> bool:
    """``ready`` is what :func:`_sync_pods_ready` writes (``set_condition``'s no-op, without
    building the condition)."""
    return (ready.status == c.FALSE and ready.reason == c.REASON_WAIT_FOR_START
            and ready.message == c.MSG_PODS_NOT_READY and ready.observed_generation == wl.metadata.generation)


def pods_ready_current(wl: Workload) -> bool:
    """Whether :func:`_sync_pods_ready` leaves ``wl`` as it is (asked of every write the job
    reconciler's watch sees: read straight off the status's index)."""
    status = wl.status
    ready = status.conditions_by_type.get(c.WORKLOAD_PODS_READY)
    return ready is not None and (c.WORKLOAD_ADMITTED in status.true_types or _pods_not_ready_already(wl, ready))


def _sync_pods_ready(txn: Txn, wl: Workload) -> Result:
    """No pod is ready while the workload is not admitted, nor while nothing says otherwise."""
    if pods_ready_current(wl):
        return NOTHING
    new = ws.set_cond(wl, c.WORKLOAD_PODS_READY, c.FALSE, c.REASON_WAIT_FOR_START,
                      c.MSG_PODS_NOT_READY, txn.now)
    if new is wl:
        return NOTHING
    return txn.result(error=txn.update(new), settled=True)


def _owner_job(txn: Txn, wl: Workload) -> JobObject | None:
    """The job in the world that owns the workload, or None for the implicit one."""
    for ref in wl.metadata.owner_references:
        if ref.kind in INTEGRATIONS:
            job = txn.get(ref.kind, wl.metadata.namespace, ref.name)
            if isinstance(job, _JOB_TYPES):
                return job
    return None
