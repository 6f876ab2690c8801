"""Kueue's core workload controller (``pkg/controller/core/workload_controller.go``).

One ``reconcile`` is one pass of upstream's ``Reconcile`` over a Workload, in
upstream's order, because the order decides what happens when several things
are due at once:

1. a finished workload: nothing (object retention is not modelled);
2. ``NeedsRequeueAtUpdate``: a ``Retry`` check with ``requeueAfterSeconds``
   pushes ``requeueState.requeueAt`` forward (count untouched) and the pass ends;
3. active workload: ``DeactivationTarget=True`` turns into ``spec.active=false``;
   a future ``requeueAt`` ends the pass with a wake-up; a passed one is cleared on
   a pending workload; ``Requeued=False`` becomes ``Reactivated`` or
   ``BackoffFinished``.  Inactive workload: the deactivation eviction;
4. a LocalQueue running again after a stop sets ``Requeued=True`` ``LocalQueueRestarted`` on
   the workloads it evicted; the ``admission-gated-by`` annotation is reflected in
   ``QuotaReserved=False`` (``AdmissionGated``, then ``PendingEvaluation`` once cleared); a
   ClusterQueue running again sets ``ClusterQueueRestarted``; the workload's admission checks
   follow its ClusterQueue (each change ends the pass);
5. not admitted: a workload without quota has its ``QuotaReserved=False`` reason recomputed
   (``syncQuotaReservedFalseCondition``: deactivated, the queue's blocker, ``PendingEvaluation``;
   ``Inadmissible`` with UnadmittedWorkloadsObservability off), then ``Admitted`` is re-synced
   (event ``Admitted``);
6. holding quota: a ``Rejected`` check sets ``DeactivationTarget``, a ``Retry``
   check evicts (``AdmissionCheck``); otherwise a ``HoldAndDrain`` LocalQueue or ClusterQueue
   evicts an admitted workload (``LocalQueueStopped`` / ``ClusterQueueStopped``), and a
   reservation not yet admitted whose queue is stopped, terminating or missing is taken back
   (the workload machine's ``set_aside``); otherwise the PodsReady timeout evicts with a
   backoff, or deactivates once ``backoffLimitCount`` is used up.

Delayed ``Retry`` is modelled **as coded**, not as KEP-3258 reads.  The KEP (and
the commit that implemented it) says a workload whose check turns ``Retry`` with
``requeueAfterSeconds`` "should still be evicted immediately to release all
reserved quota".  The code records ``requeueAt`` in step 2 and then returns at the
``requeueAt`` gate of step 3 on every pass until that time, so step 6 (the
eviction) runs only once the delay is over: the workload keeps its quota during
the delay, is evicted afterwards and requeued at once, its ``requeueAt`` being
already past.  See docs/differences.rst, "Delayed eviction on Retry".

Reactivation models the upstream fix #14874 (after the snapshot): any
``Requeued=False`` reason starting with ``Deactivated`` is reactivated, not only the
bare ``Deactivated`` the snapshot matches, which left Kueue-deactivated workloads
stuck (issue #14870).

Not modelled (no scenario in scope reaches them): ``maximumExecutionTimeSeconds``, DRA,
object retention and the scheduling equivalence cache's "Bypassed scheduling evaluation" reason.

Where upstream issues several patches in one pass (the Admitted sync, then a
check-based eviction), this pass writes one update with all of them; events
follow the write they report, as upstream emits them after a successful patch.
"""

from __future__ import annotations

from collections.abc import Callable

from kueue_provreq.api import constants as c
from kueue_provreq.api.config import WaitForPodsReady
from kueue_provreq.api.meta import Condition, Time
from kueue_provreq.api.objects import Key
from kueue_provreq.api.queues import ClusterQueue, LocalQueue
from kueue_provreq.api.workload import AdmissionCheckState, Workload, WorkloadStatus
from kueue_provreq.controllers import workload_status as ws
from kueue_provreq.controllers.activity import inactive_reason
from kueue_provreq.controllers.backoff import NS, wait_time_ns
from kueue_provreq.controllers.cohorts import in_cycle
from kueue_provreq.controllers.context import Context
from kueue_provreq.controllers.queues import cluster_queue_for
from kueue_provreq.machines import Guard, Transition, WorkloadTrigger, write_workload
from kueue_provreq.machines.phases import held_back
from kueue_provreq.world import NOTHING, Effect, Event, Result, Txn, World, truncate

_BACKOFF_REASONS = (c.REASON_PODS_READY_TIMEOUT, c.REASON_ADMISSION_CHECK)
"""``Requeued=False`` reasons that end in ``BackoffFinished`` once ``requeueAt`` has passed."""

_NO_WORLD = World()
"""The world of the scratch ``Txn`` that ``workload_status.evict`` reports its metrics and event to."""

_WAIT_FOR_START_REASONS = (c.REASON_WAIT_FOR_START, c.REASON_PODS_READY_LEGACY)


def reconcile(world: World, key: Key, ctx: Context) -> Result:
    txn = Txn(world, ctx.now)
    wl = txn.get(*key)
    if not isinstance(wl, Workload):
        return NOTHING
    st = wl.status
    if c.WORKLOAD_FINISHED in st.true_types:
        return NOTHING
    now = ctx.now

    until = _needs_requeue_at_update(wl, now)
    if until is not None:
        # on a workload without quota this holds it back: the delay of KEP-3258's race.  An
        # active workload's next pass stops at step 3's gate until then: this write asks for
        # that wake-up itself
        held = wl.is_active and c.WORKLOAD_DEACTIVATION_TARGET not in st.true_types and \
            not (ctx.config.pre_kep_3258 and c.WORKLOAD_QUOTA_RESERVED in st.true_types)
        new, delaying = write_workload(wl, WorkloadTrigger.DELAY, until=until)
        return _write(txn, new, (delaying,), requeue_after=until - now if held else None, settled=held)

    early = _active_branch(txn, wl, st, ctx.config.pre_kep_3258) if wl.is_active \
        else _inactive_branch(txn, wl, st, ctx.config.pre_14309)
    if early is not None:
        return early

    lq = txn.get(c.LOCAL_QUEUE, wl.metadata.namespace, wl.spec.queue_name)
    lq = lq if isinstance(lq, LocalQueue) else None
    held_by = _requeued_false_reason(st)
    if held_by == c.REASON_LQ_STOPPED and lq is not None and not lq.spec.stopped:
        return _restarted(txn, wl, c.REASON_LQ_RESTARTED, c.MSG_LQ_RESTARTED)

    if c.WORKLOAD_QUOTA_RESERVED not in st.true_types:
        gated = _sync_admission_gate(txn, wl, st, ctx)
        if gated is not None:
            return gated

    cq = cluster_queue_for(txn, wl)
    if cq is not None:
        if held_by == c.REASON_CQ_STOPPED_EVICTION and not cq.spec.stopped:
            return _restarted(txn, wl, c.REASON_CQ_RESTARTED, c.MSG_CQ_RESTARTED)
        wanted = _wanted_checks(wl, cq)
        if not _checks_synced(st.admission_checks, wanted):
            synced = ws.sync_check_states(wl, wanted, now)
            if synced is not wl:
                return _write(txn, synced)

    new = wl
    events: list[Effect] = []
    fired: list[Transition] = []
    if c.WORKLOAD_ADMITTED not in st.true_types and not (
            ctx.config.kep_993_preemption and c.WORKLOAD_QUOTA_RESERVED in st.true_types and ws.all_checks_ready(wl)):
        # KEP-993: the scheduler re-validates the quota of a reservation whose checks are all
        # Ready before admitting it (``scheduler._Cycle.kep_993_admit``)
        new = _sync_unadmitted(wl, st, ctx, events, fired, lambda: _queue_blocker(txn, wl, lq, cq), cq)
        if new is not wl:
            st = new.status
    requeue_after: float | None = None
    if c.WORKLOAD_QUOTA_RESERVED in st.true_types:
        new, requeue_after, ends = _reconcile_quota_held(
            new, st, ctx, events, fired, lambda held: _reconcile_queue_state(held, st, lq, cq, ctx, events, fired))
        if ends:
            # the pass ends at this write; the next one finds the workload as it left it
            return _write(txn, new, tuple(fired), events)
    if new is wl:
        return NOTHING if requeue_after is None else Result(requeue_after=requeue_after)
    # The whole pass ran.  Its write settles it unless it set what an earlier step acts on:
    # a DeactivationTarget (step 3 deactivates) or a requeueState (the PodsReady timeout's
    # eviction: step 3's backoff gate).  An eviction for a Retry check resets the checks to
    # Pending and leaves Admitted as it was, which no step then acts on.
    settled = new.status.requeue_state is wl.status.requeue_state and \
        new.condition(c.WORKLOAD_DEACTIVATION_TARGET) is wl.condition(c.WORKLOAD_DEACTIVATION_TARGET)
    return _write(txn, new, tuple(fired), events, requeue_after, settled)


# --- step 2: delayed Retry checks (KEP-3258) -------------------------------------------


def _needs_requeue_at_update(wl: Workload, now: Time) -> Time | None:
    """``NeedsRequeueAtUpdate``: the latest ``LTT + requeueAfterSeconds`` of the Retry checks,
    if it lies ahead and ``requeueAt`` is not already there (it only ever moves forward)."""
    latest: int | None = None
    for s in wl.status.admission_checks:
        if s.state == c.CHECK_RETRY and s.requeue_after_seconds is not None and s.last_transition_time:
            t = s.last_transition_time + s.requeue_after_seconds
            if latest is None or t > latest:
                latest = t
    if latest is None or latest <= now:
        return None
    rs = wl.status.requeue_state
    if rs is not None and rs.requeue_at is not None and rs.requeue_at >= latest:
        return None
    return Time(latest)


# --- step 3 ---------------------------------------------------------------------------


def _active_branch(txn: Txn, wl: Workload, st: WorkloadStatus, pre_kep_3258: bool = False) -> Result | None:
    """Deactivation request, the backoff gate and the ``Requeued`` condition of an active workload.

    ``pre_kep_3258`` (Kueue v0.9 - v0.14): the provisioning controller wrote ``requeueAt`` itself
    when it set a check to Retry, and the workload was evicted at first sight of the Retry, so
    the backoff gate held back only workloads without quota."""
    now = txn.now
    if c.WORKLOAD_DEACTIVATION_TARGET in st.true_types:
        return _write(txn, *write_workload(wl, WorkloadTrigger.DEACTIVATE))

    rs = wl.status.requeue_state
    if rs is not None and rs.requeue_at is not None and \
            not (pre_kep_3258 and c.WORKLOAD_QUOTA_RESERVED in st.true_types):
        wait = rs.requeue_at - now
        if wait > 0:
            return Result(requeue_after=wait)
        if c.WORKLOAD_QUOTA_RESERVED not in st.true_types and c.WORKLOAD_ADMITTED not in st.true_types:
            # upstream Status(wl) == pending: the backoff is over, the queue takes it back,
            # unless Requeued=False still holds it
            requeued = st.conditions_by_type.get(c.WORKLOAD_REQUEUED)
            held = requeued is not None and requeued.status == c.FALSE
            return _write(txn, *write_workload(wl, WorkloadTrigger.REQUEUE, {Guard.BACKOFF: held}, now=now,
                                               clear_requeue_at=True))

    requeued = st.conditions_by_type.get(c.WORKLOAD_REQUEUED)
    if requeued is None or requeued.status != c.FALSE:
        return None
    if requeued.reason.startswith(c.REASON_DEACTIVATED):
        held = rs is not None and rs.requeue_at is not None
        return _write(txn, *write_workload(wl, WorkloadTrigger.REQUEUE, {Guard.BACKOFF: held}, now=now,
                                           clear_requeue_at=False, reason=c.REASON_REACTIVATED,
                                           message=c.MSG_REACTIVATED))
    if requeued.reason in _BACKOFF_REASONS:
        # the gate above returned while requeueAt lay ahead, so it is unset or past here
        return _write(txn, *write_workload(wl, WorkloadTrigger.REQUEUE, {Guard.BACKOFF: False}, now=now,
                                           clear_requeue_at=True, reason=c.REASON_BACKOFF_FINISHED,
                                           message=c.MSG_BACKOFF_FINISHED))
    return None


def _inactive_branch(txn: Txn, wl: Workload, st: WorkloadStatus, pre_14309: bool = False) -> Result | None:
    """Evict a deactivated workload (reason ``Deactivated[DueTo<Cause>]``), dropping
    ``DeactivationTarget`` and ``requeueState``.  A workload already evicted for another
    reason keeps that reason and is only cleaned up: since #14309 whenever it carries a
    ``DeactivationTarget`` or a ``requeueState``, and a ``DeactivationTarget`` it carries then
    also resets its checks, as the eviction it never reaches would have (a ``Rejected`` check
    left in place would deactivate it again as soon as it is reactivated).  ``pre_14309``:
    the cleanup only when it has a ``requeueState``, checks untouched."""
    evicted = c.WORKLOAD_EVICTED in st.true_types
    target = st.conditions_by_type.get(c.WORKLOAD_DEACTIVATION_TARGET)
    if evicted and wl.status.requeue_state is None and (pre_14309 or target is None):
        return None
    prepared = ws.remove(wl, c.WORKLOAD_DEACTIVATION_TARGET).with_status(requeue_state=None)
    if evicted:
        if pre_14309 or target is None:
            return _write(txn, prepared)
        checks, resets = ws.reset_checks_on_eviction(prepared.status.admission_checks, txn.now)
        return _write(txn, prepared.with_status(admission_checks=checks), resets)
    if target is None:
        cause, message = "", c.MSG_DEACTIVATED
    else:
        cause, message = target.reason, c.MSG_DEACTIVATED_DUE_TO.format(message=target.message)
    events: list[Effect] = []
    evicted_wl, fired = _evict(prepared, c.REASON_DEACTIVATED, message, cause, txn.now, events)
    return _write(txn, evicted_wl, fired, events)


# --- step 4 ---------------------------------------------------------------------------


def _sync_admission_gate(txn: Txn, wl: Workload, st: WorkloadStatus, ctx: Context) -> Result | None:
    """``mayUpdateConditionForAdmissionGatedBy``: the first pass that sees the
    ``admission-gated-by`` annotation writes ``QuotaReserved=False`` ``AdmissionGated``
    "Admission is gated by: <gates>" (event ``AdmissionGated``); the first that sees it gone
    after that writes ``PendingEvaluation`` "AdmissionGatedBy cleared, waiting for quota
    reservation" (event ``AdmissionGateCleared``).  Either ends the pass.  A gated workload is
    not admissible (:func:`queues.is_admissible`), so the scheduler never sees it.

    Asked only of a workload without quota: the webhook allows the annotation only on create
    (and only removing gates later), when no quota can be held, so this never differs from
    upstream for a world the API server could produce; upstream would unset a reservation."""
    config = ctx.config
    if not config.gate(c.GATE_ADMISSION_GATED_BY):
        return None
    gates = ws.admission_gates(wl, config)
    held = st.conditions_by_type.get(c.WORKLOAD_QUOTA_RESERVED)
    marked = held is not None and held.reason == c.REASON_ADMISSION_GATED
    if gates is None and marked:
        reason = c.REASON_PENDING_EVALUATION if config.gate(c.GATE_UNADMITTED_OBSERVABILITY) \
            else c.REASON_PENDING_LEGACY
        new = ws.unset_quota_reservation(wl, reason, c.MSG_ADMISSION_GATE_CLEARED, ctx.now, config)
        event = _event(wl, c.EVENT_TYPE_NORMAL, c.EVENT_ADMISSION_GATE_CLEARED, c.MSG_EVENT_ADMISSION_GATE_CLEARED)
    elif gates is not None and not marked:
        new = ws.unset_quota_reservation(wl, c.REASON_ADMISSION_GATED, c.MSG_ADMISSION_GATED.format(gates=gates),
                                         ctx.now, config)
        event = _event(wl, c.EVENT_TYPE_NORMAL, c.EVENT_ADMISSION_GATED, c.MSG_EVENT_ADMISSION_GATED.format(gates=gates))
    else:
        return None
    return _write(txn, new, (), [event])



def _wanted_checks(wl: Workload, cq: ClusterQueue) -> tuple[str, ...]:
    """``AdmissionChecksForWorkload``, sorted."""
    admission = wl.status.admission
    return ws.checks_for_flavors(cq.spec, None if admission is None else admission.flavor_names)


def _checks_synced(states: tuple[AdmissionCheckState, ...], wanted: tuple[str, ...]) -> bool:
    """Whether the workload lists exactly the wanted checks, in order (a loop, not a generator:
    every pass asks it)."""
    if len(states) != len(wanted):
        return False
    for s, name in zip(states, wanted, strict=True):  # noqa: SIM110 (a generator costs more)
        if s.name != name:
            return False
    return True


# --- step 5 ---------------------------------------------------------------------------


def _sync_unadmitted(wl: Workload, st: WorkloadStatus, ctx: Context, events: list[Effect],
                     fired: list[Transition], blocker: Callable[[], tuple[str, str] | None],
                     cq: ClusterQueue | None) -> Workload:
    """``syncQuotaReservedFalseCondition`` for a workload without quota (its ``QuotaReserved=False``
    reason recomputed, :func:`_pending_reason`; one without a queue name is told that the
    LocalQueue named "" does not exist, as upstream's lookup of it answers), then
    ``SyncAdmittedCondition`` with its event;
    with quota and every check Ready that is the workload machine's ``admit``."""
    now = ctx.now
    config = ctx.config
    observability = config.gate(c.GATE_UNADMITTED_OBSERVABILITY)
    new = wl
    if c.WORKLOAD_QUOTA_RESERVED not in st.true_types:
        wanted = _pending_reason(wl, st, observability, blocker, cq)
        if wanted is not None:
            new = ws.set_cond(new, c.WORKLOAD_QUOTA_RESERVED, c.FALSE, wanted[0],
                              truncate(wanted[1], c.CONDITION_MESSAGE_LIMIT), now)
    if new is wl and _admitted_false_is_current(wl, st, observability):
        return wl
    if c.WORKLOAD_QUOTA_RESERVED in st.true_types and ws.all_checks_ready(wl):
        new, admitting = write_workload(new, WorkloadTrigger.ADMIT, now=now, config=config)
        fired.append(admitting)
    else:
        new = ws.sync_admitted_condition(new, now, config)  # Admitted=False: no phase moves
    if new.is_admitted() and new.status.admission is not None:
        reserved = _ltt(st.conditions_by_type.get(c.WORKLOAD_QUOTA_RESERVED))
        events.append(_event(new, c.EVENT_TYPE_NORMAL, c.EVENT_ADMITTED, c.MSG_EVENT_ADMITTED.format(
            cq=new.status.admission.cluster_queue, seconds=now - reserved)))
    return new


#: ``schedulerSetReasons``: what the scheduler wrote stays until its next cycle.
_SCHEDULER_REASONS = frozenset({c.REASON_WAITING_FOR_QUOTA, c.REASON_NO_MATCHING_FLAVOR, c.REASON_EXCEEDS_MAX_QUOTA,
                                c.REASON_WAITING_FOR_PREEMPTED_WORKLOADS, c.REASON_WAITING_FOR_PODS_READY,
                                c.REASON_PENDING_EVALUATION})


def _pending_reason(wl: Workload, st: WorkloadStatus, observability: bool,
                    blocker: Callable[[], tuple[str, str] | None], cq: ClusterQueue | None
                    ) -> tuple[str, str] | None:
    """The ``QuotaReserved=False`` (reason, message) a workload without quota should carry, in
    upstream's precedence (``resolveGranularUnadmittedQuotaReservedCondition``): deactivated; on
    hold as it is; the queue's blocker (:func:`_queue_blocker`); ``Misconfigured`` when the
    ClusterQueue ``cq``'s ``namespaceSelector`` leaves the namespace out
    (``ValidateAdmissibility``); gated by an annotation as it is
    (the gate's own sync writes it); a reason the scheduler wrote as it is; otherwise
    ``PendingEvaluation``, unless there is no condition yet.  With UnadmittedWorkloadsObservability
    off only a blocker is written, as ``Inadmissible``.  None: leave the condition as it is."""
    if not observability:
        found = blocker()
        return None if found is None else (c.REASON_INADMISSIBLE, found[1])
    cond = st.conditions_by_type.get(c.WORKLOAD_QUOTA_RESERVED)
    if not wl.is_active:
        return c.REASON_DEACTIVATED, c.MSG_DEACTIVATED
    if cond is not None and cond.reason == c.REASON_ON_HOLD:
        return None
    found = blocker()
    if found is not None:
        return found
    if cq is not None and not cq.spec.admits_namespace(wl.metadata.namespace):
        return c.REASON_MISCONFIGURED, c.MSG_NAMESPACE_MISMATCH
    if cond is None or cond.reason in _SCHEDULER_REASONS or cond.reason == c.REASON_ADMISSION_GATED:
        return None
    return c.REASON_PENDING_EVALUATION, c.MSG_PENDING_EVALUATION


def _queue_blocker(txn: Txn, wl: Workload, lq: LocalQueue | None, cq: ClusterQueue | None) -> tuple[str, str] | None:
    """``getQueueBlocker``: what keeps the workload's queue from admitting it, if anything."""
    name = wl.spec.queue_name
    if lq is None:
        return c.REASON_MISCONFIGURED, c.MSG_LQ_NOT_FOUND.format(lq=name)
    if lq.spec.stopped:
        return c.REASON_SUSPENDED, c.MSG_LQ_INACTIVE.format(lq=name)
    if cq is None:
        return c.REASON_MISCONFIGURED, c.MSG_CQ_MISSING.format(cq=lq.spec.cluster_queue)
    if inactive_reason(txn.world, cq) is not None or in_cycle(txn.world, cq):
        # under a cohort cycle the scheduler's snapshot leaves the queue out as inactive too
        return c.REASON_SUSPENDED, c.MSG_CQ_INACTIVE.format(cq=cq.metadata.name)
    return None


def _admitted_false_is_current(wl: Workload, st: WorkloadStatus, observability: bool) -> bool:
    """A fast "nothing to do" for ``SyncAdmittedCondition`` on a workload that is not admitted:
    True only when the sync would leave it unchanged (a test checks the two agree)."""
    reserved = c.WORKLOAD_QUOTA_RESERVED in st.true_types
    if reserved and ws.all_checks_ready(wl):
        return False  # it becomes admitted
    if not observability:
        return True  # legacy: Admitted=False is written only on a True -> False transition
    admitted = st.conditions_by_type.get(c.WORKLOAD_ADMITTED)
    if admitted is None:
        return c.WORKLOAD_QUOTA_RESERVED not in st.conditions_by_type
    if reserved:
        reason, message = c.REASON_UNSATISFIED_ADMISSION_CHECKS, c.MSG_UNSATISFIED_CHECKS
    else:
        reason, message = c.REASON_NO_RESERVATION, c.MSG_NO_RESERVATION
    return (admitted.status == c.FALSE and admitted.reason == reason and admitted.message == message
            and admitted.observed_generation == wl.metadata.generation)


# --- step 6 ---------------------------------------------------------------------------


def _reconcile_quota_held(wl: Workload, st: WorkloadStatus, ctx: Context, events: list[Effect],
                          fired: list[Transition], queue_state: Callable[[Workload], Workload | None]
                          ) -> tuple[Workload, float | None, bool]:
    """Check-based eviction, else what the workload's stopped or missing queues do
    (``queue_state``: :func:`_reconcile_queue_state`, whose write ends the pass), else the
    PodsReady timeout; returns the workload, the delay until the timeout is due, and whether
    the pass ends at this write.

    ``reconcileCheckBasedEviction``: a ``Rejected`` check sets ``DeactivationTarget`` even on a
    workload whose eviction is already in flight (#14309: rejection is terminal, and the
    condition is idempotent, so repeated passes write nothing); only a ``Retry`` check leaves an
    evicted workload alone, an eviction being under way.  ``pre-14309``: both wait for
    ``Evicted`` to be False."""
    evicted = c.WORKLOAD_EVICTED in st.true_types
    rejected = retry = False
    for s in wl.status.admission_checks:  # one loop for both questions: every pass asks them
        if s.state == c.CHECK_REJECTED:
            rejected = True
        elif s.state == c.CHECK_RETRY:
            retry = True
    if rejected and not (evicted and ctx.config.pre_14309):
        message = ws.admission_checks_message(ws.checks_in(wl, c.CHECK_REJECTED), c.CHECK_REJECTED)
        new = _set_deactivation_target(wl, c.REASON_ADMISSION_CHECK, message, ctx.now)
        if new is not wl:
            events.append(_event(wl, c.EVENT_TYPE_WARNING, c.EVENT_ADMISSION_CHECK_REJECTED,
                                 c.DEACTIVATED_DUE_TO_EVENT_PREFIX + message))
        return new, None, False
    if not evicted and retry:
        message = c.EVICTED_RETRY_PREFIX + ws.admission_checks_message(ws.checks_in(wl, c.CHECK_RETRY),
                                                                       c.CHECK_RETRY)
        wl, evicting = _evict(wl, c.REASON_ADMISSION_CHECK, message, "", ctx.now, events)
        fired.extend(evicting)
        return wl, None, False
    held = queue_state(wl)
    if held is not None:
        return held, None, True
    cfg = ctx.config.wait_for_pods_ready
    if cfg is None or evicted or not wl.is_active or c.WORKLOAD_ADMITTED not in st.true_types:
        return wl, None, False
    return (*_reconcile_not_ready_timeout(wl, st, cfg, ctx, events, fired), False)


def _reconcile_not_ready_timeout(wl: Workload, st: WorkloadStatus, cfg: WaitForPodsReady, ctx: Context,
                                 events: list[Effect], fired: list[Transition]
                                 ) -> tuple[Workload, float | None]:
    """``reconcileNotReadyTimeout`` for an admitted, active, not evicted workload: WaitForStart
    counts from the Admitted transition, WaitForRecovery from the PodsReady one; on expiry
    deactivate past ``backoffLimitCount``, else evict with ``requeueAt = now + backoff(count + 1)``
    and ``count + 1``."""
    now = ctx.now
    ready = st.conditions_by_type.get(c.WORKLOAD_PODS_READY)
    if ready is not None and ready.status == c.TRUE:
        return wl, None
    if ready is None or ready.reason in _WAIT_FOR_START_REASONS:
        cause = c.REASON_WAIT_FOR_START
        remaining = cfg.timeout - (now - _ltt(st.conditions_by_type.get(c.WORKLOAD_ADMITTED)))
    elif ready.reason == c.REASON_WAIT_FOR_RECOVERY and cfg.effective_recovery_timeout is not None:
        cause = c.REASON_WAIT_FOR_RECOVERY
        remaining = cfg.effective_recovery_timeout - (now - _ltt(ready))
    else:
        return wl, None
    if remaining > 0:
        return wl, remaining

    strategy = cfg.requeuing_strategy
    rs = wl.status.requeue_state
    count = (rs.count or 0) if rs is not None else 0
    limit = strategy.backoff_limit_count
    if limit is not None and count + 1 > limit:
        return _set_deactivation_target(wl, c.REASON_REQUEUING_LIMIT_EXCEEDED,
                                        c.MSG_REQUEUING_LIMIT_EXCEEDED, now), None
    wait_ns = wait_time_ns(strategy.backoff_base_seconds, strategy.backoff_max_seconds, count + 1,
                           ctx.jitter)
    # metav1.Time keeps whole seconds
    wl = ws.set_requeue_state(wl, Time((now * NS + wait_ns) // NS), increment=True)
    message = c.MSG_PODS_READY_TIMEOUT.format(namespace=wl.metadata.namespace, name=wl.metadata.name)
    wl, evicting = _evict(wl, c.REASON_PODS_READY_TIMEOUT, message, cause, now, events)
    fired.extend(evicting)
    return wl, None


# --- queues that stop or go away ----------------------------------------------------------


def _requeued_false_reason(st: WorkloadStatus) -> str | None:
    """The reason of a ``Requeued=False`` condition, None without one: what
    ``isDisabledRequeuedByReason`` compares (read once per pass, asked twice)."""
    found = st.conditions_by_type.get(c.WORKLOAD_REQUEUED)
    return found.reason if found is not None and found.status == c.FALSE else None


def _restarted(txn: Txn, wl: Workload, reason: str, message: str) -> Result:
    """A stopped queue runs again: ``Requeued=True``, and the workload it held back returns to
    the queue (unless a ``requeueAt`` still holds it)."""
    rs = wl.status.requeue_state
    held = rs is not None and rs.requeue_at is not None
    return _write(txn, *write_workload(wl, WorkloadTrigger.REQUEUE, {Guard.BACKOFF: held}, now=txn.now,
                                       clear_requeue_at=False, reason=reason, message=message))


def _reconcile_queue_state(wl: Workload, st: WorkloadStatus, lq: LocalQueue | None, cq: ClusterQueue | None,
                           ctx: Context, events: list[Effect], fired: list[Transition]) -> Workload | None:
    """``reconcileOnLocalQueueActiveState`` then ``reconcileOnClusterQueueActiveState`` for a
    workload holding quota: an admitted one is evicted by a ``HoldAndDrain`` queue
    (``LocalQueueStopped`` / ``ClusterQueueStopped``, once); a reservation not yet admitted is
    taken back when its queue is missing or terminating (``Misconfigured``) or stopped
    (``Suspended``; both ``Inadmissible`` with UnadmittedWorkloadsObservability off).  The
    ClusterQueue ``cq`` is the admission's (:func:`cluster_queue_for`'s answer for a workload
    with an admission; a workload holding quota without one has none).  None: nothing to do."""
    admission = wl.status.admission
    if admission is None:
        cq_name, cq = "", None
    else:
        cq_name = admission.cluster_queue
    name = wl.spec.queue_name
    if c.WORKLOAD_ADMITTED in st.true_types:
        if c.WORKLOAD_EVICTED in st.true_types:
            return None
        if lq is not None and lq.spec.stop_policy == c.STOP_POLICY_HOLD_AND_DRAIN:
            reason, message = c.REASON_LQ_STOPPED, c.MSG_EVICTED_LQ_STOPPED
        elif cq is not None and cq.spec.stop_policy == c.STOP_POLICY_HOLD_AND_DRAIN:
            reason, message = c.REASON_CQ_STOPPED_EVICTION, c.MSG_EVICTED_CQ_STOPPED
        else:
            return None
        new, evicting = _evict(wl, reason, message, "", ctx.now, events)
        fired.extend(evicting)
        return new
    if c.WORKLOAD_EVICTED in st.true_types:
        return None  # an eviction under way: the job integration releases the quota
    if lq is None or lq.metadata.terminating:
        reason, message = c.REASON_MISCONFIGURED, c.MSG_LQ_GONE.format(lq=name)
    elif lq.spec.stopped:
        reason, message = c.REASON_SUSPENDED, c.MSG_LQ_HELD.format(lq=name)
    elif cq is None or cq.metadata.terminating:
        reason, message = c.REASON_MISCONFIGURED, c.MSG_CQ_GONE.format(cq=cq_name)
    elif cq.spec.stopped:
        reason, message = c.REASON_SUSPENDED, c.MSG_CQ_HELD.format(cq=cq_name)
    else:
        return None
    if not ctx.config.gate(c.GATE_UNADMITTED_OBSERVABILITY):
        reason = c.REASON_INADMISSIBLE
    # (unsetting the reservation leaves what holds a workload back as it was)
    new, aside = write_workload(wl, WorkloadTrigger.SET_ASIDE, {Guard.BACKOFF: held_back(wl)}, reason=reason,
                                message=message, now=ctx.now, config=ctx.config)
    fired.append(aside)
    return new


# --- helpers ---------------------------------------------------------------------------


def _evict(wl: Workload, reason: str, message: str, cause: str, now: Time, events: list[Effect]
           ) -> tuple[Workload, ws.Fired]:
    """``evict.Evict``; its metrics and event are held back until the write succeeds."""
    side = Txn(_NO_WORLD, now)  # collects effects only: evict reads nothing
    new, fired = ws.evict(side, wl, reason, message, cause)
    events.extend(side.effects)
    return new, fired


def _set_deactivation_target(wl: Workload, reason: str, message: str, now: Time) -> Workload:
    return ws.set_cond(wl, c.WORKLOAD_DEACTIVATION_TARGET, c.TRUE, reason, message, now)


def _event(wl: Workload, type_: str, reason: str, message: str) -> Effect:
    """An event to emit after the write (``Txn.event`` would record it at once)."""
    m = wl.metadata
    return Event(type_, reason, truncate(message, c.EVENT_MESSAGE_LIMIT), wl.KIND, m.namespace, m.name)


def _ltt(cond: Condition | None) -> Time:
    """A condition's transition time; a missing one reads as the zero time, as in Go."""
    if cond is None or cond.last_transition_time is None:
        return Time(0)
    return cond.last_transition_time


def _write(txn: Txn, wl: Workload, fired: ws.Fired | Transition = (), events: list[Effect] | None = None,
           requeue_after: float | None = None, settled: bool = False) -> Result:
    """One workload write, carrying the fires that decided it; the events it reports follow it
    only if it succeeds.  Unless ``settled``, the pass ended early at the write (as upstream
    returns after each patch), and its own write wakes it again."""
    err = txn.update(wl, (fired,) if isinstance(fired, Transition) else fired)
    if err is not None:
        return txn.result(error=err)
    if events:
        txn.effects.extend(events)
    return txn.result(requeue_after=requeue_after, settled=settled)
