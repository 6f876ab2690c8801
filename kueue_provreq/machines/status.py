"""What Kueue's ``pkg/workload`` writes to the conditions that decide a Workload's phase.

These are the pieces the Workload machine's realisers (:mod:`.phases`) are made of; they sit
below the controllers so that the machine writes its own target.  A controller uses them
directly only for writes that move no phase (``QuotaReserved=False`` with a new reason on a
workload without quota, ``Admitted=False`` re-synced): every phase change is
:func:`~kueue_provreq.machines.phases.write_workload`'s.  Each takes a frozen Workload and
returns a new one.
"""

from __future__ import annotations

from kueue_provreq.api import constants as c
from kueue_provreq.api.config import Configuration
from kueue_provreq.api.evolve import evolve
from kueue_provreq.api.frozen import FrozenMap
from kueue_provreq.api.meta import Conditions, Json, Time, find_condition, is_true, put_condition
from kueue_provreq.api.workload import Admission, AdmissionCheckState, RequeueState, Workload


def set_cond(wl: Workload, type_: str, status: str, reason: str, message: str, now: Time,
             admission_checks: tuple[AdmissionCheckState, ...] | None = None,
             extra: FrozenMap[str, Json] | None = None) -> Workload:
    """``wl`` itself when its condition of ``type_`` already says this (``SetStatusCondition``'s
    no-op, read off the per-status index without building a Condition: the scheduler re-parks
    every waiting workload each cycle), else the workload with the condition set; with
    ``admission_checks`` or ``extra``, those replaced too, in the same new Workload (a write
    that sets a condition and more builds one Workload, not one per part)."""
    more = admission_checks is not None or extra is not None
    old = wl.status.conditions_by_type.get(type_)
    if old is not None and old.status == status and old.reason == reason and old.message == message \
            and old.observed_generation == wl.metadata.generation and not more:
        return wl
    conds = _with(wl.status.conditions, type_, status, reason, message, wl.metadata.generation, now)
    if conds is wl.status.conditions and not more:
        return wl
    return wl.with_status(conditions=conds, admission_checks=admission_checks, extra=extra)


def _with(conds: Conditions, type_: str, status: str, reason: str, message: str, generation: int | None,
          now: Time) -> Conditions:
    """``conds`` with the condition set (the very tuple when that changes nothing): the writes
    below compose their conditions first and build the Workload once."""
    return put_condition(conds, type_, status, reason, message, generation, now)


def set_quota_reservation(wl: Workload, admission: Admission, now: Time, config: Configuration | None = None,
                          preemptions_pending: bool = False) -> Workload:
    """``workload.SetQuotaReservation``; with ``config``, ``SyncAdmittedCondition`` in the same
    write (the scheduler's patch), one new Workload for both."""
    gen = wl.metadata.generation
    conds = _with(wl.status.conditions, c.WORKLOAD_QUOTA_RESERVED, c.TRUE, c.REASON_QUOTA_RESERVED,
                  c.MSG_QUOTA_RESERVED.format(cq=admission.cluster_queue), gen, now)
    # read off the workload as given: the writes here touch no other of these conditions
    for type_ in (c.WORKLOAD_EVICTED, c.WORKLOAD_PREEMPTED, c.WORKLOAD_BLOCKED_ON_PREEMPTION_GATES):
        old = wl.condition(type_)
        if old is not None and old.status == c.TRUE:
            conds = _with(conds, type_, c.FALSE, c.REASON_QUOTA_RESERVED, c.MSG_PREVIOUSLY.format(message=old.message),
                          gen, now)
    if config is not None:
        conds = _sync_admitted(conds, all_checks_ready(wl), gen, now, config, preemptions_pending)
    return wl.with_status(conditions=conds, admission=admission)


def unset_quota_reservation(wl: Workload, reason: str, message: str, now: Time,
                            config: Configuration, requeued: tuple[str, str] | None = None) -> Workload:
    """``workload.UnsetQuotaReservationWithCondition``, one new Workload (``wl`` itself when it
    changes nothing); ``requeued`` (status, reason): ``SetRequeuedCondition`` with the same
    message first, in the same new Workload."""
    gen, old = wl.metadata.generation, wl.status.conditions
    conds = old if requeued is None else _with(old, c.WORKLOAD_REQUEUED, *requeued, message, gen, now)
    conds = _with(conds, c.WORKLOAD_QUOTA_RESERVED, c.FALSE, reason, message, gen, now)
    conds = _sync_admitted(conds, all_checks_ready(wl), gen, now, config)
    if conds is old and wl.status.admission is None:
        return wl
    return wl.with_status(conditions=conds, admission=None)


def all_checks_ready(wl: Workload) -> bool:
    """A loop, not a generator: nearly every write asks it."""
    for s in wl.status.admission_checks:  # noqa: SIM110 (a generator costs more)
        if s.state != c.CHECK_READY:
            return False
    return True


def sync_admitted_condition(wl: Workload, now: Time, config: Configuration,
                            preemptions_pending: bool = False) -> Workload:
    """``workload.SyncAdmittedCondition``: Admitted=True only with quota and every check Ready.

    ``preemptions_pending`` (KEP-993 only): the quota is still held by the workloads the
    reservation preempts, so it is ``Admitted=False`` ``WaitingForPreemptedWorkloads`` until
    they release it (the KEP's "recheck that Admission settings are still valid")."""
    wanted = _admitted(wl.status.conditions, all_checks_ready(wl), config, preemptions_pending)
    return wl if wanted is None else set_cond(wl, c.WORKLOAD_ADMITTED, *wanted, now)


def _sync_admitted(conds: Conditions, ready: bool, generation: int | None, now: Time, config: Configuration,
                   preemptions_pending: bool = False) -> Conditions:
    """:func:`sync_admitted_condition` on conditions being composed."""
    wanted = _admitted(conds, ready, config, preemptions_pending)
    return conds if wanted is None else _with(conds, c.WORKLOAD_ADMITTED, *wanted, generation, now)


def _admitted(conds: Conditions, ready: bool, config: Configuration,
              preemptions_pending: bool) -> tuple[str, str, str] | None:
    """The ``Admitted`` condition (status, reason, message) ``SyncAdmittedCondition`` writes
    given the conditions and whether every check is Ready; None when it leaves it alone."""
    has_reservation = is_true(conds, c.WORKLOAD_QUOTA_RESERVED)
    if has_reservation and ready and preemptions_pending:
        return c.FALSE, c.REASON_WAITING_FOR_PREEMPTED_WORKLOADS, c.MSG_KEP_993_PREEMPTIONS_PENDING
    observability = config.gate(c.GATE_UNADMITTED_OBSERVABILITY)
    if observability:
        if find_condition(conds, c.WORKLOAD_QUOTA_RESERVED) is None and \
                find_condition(conds, c.WORKLOAD_ADMITTED) is None:
            return None
    elif is_true(conds, c.WORKLOAD_ADMITTED) == (has_reservation and ready):
        return None
    if has_reservation and ready:
        return c.TRUE, c.REASON_ADMITTED, c.MSG_ADMITTED
    if not has_reservation and not ready:
        return ((c.FALSE, c.REASON_NO_RESERVATION, c.MSG_NO_RESERVATION) if observability else
                (c.FALSE, c.REASON_NO_RESERVATION_UNSATISFIED_CHECKS_LEGACY,
                 c.MSG_NO_RESERVATION_UNSATISFIED_CHECKS_LEGACY))
    if not has_reservation:
        return c.FALSE, c.REASON_NO_RESERVATION, c.MSG_NO_RESERVATION
    return (c.FALSE, c.REASON_UNSATISFIED_ADMISSION_CHECKS if observability else c.REASON_UNSATISFIED_CHECKS_LEGACY,
            c.MSG_UNSATISFIED_CHECKS)


def set_requeue_state(wl: Workload, until: Time | None, increment: bool) -> Workload:
    """``SetRequeueState``: requeueAt only moves forward; the count grows when asked."""
    rs = wl.status.requeue_state or RequeueState()
    if until is not None and (rs.requeue_at is None or rs.requeue_at < until):
        rs = evolve(rs, requeue_at=until)
    if increment:
        rs = evolve(rs, count=(rs.count or 0) + 1)
    return wl.with_status(requeue_state=rs)


def reason_with_cause(reason: str, cause: str) -> str:
    if reason == c.REASON_DEACTIVATED and cause:
        return c.REASON_DEACTIVATED_DUE_TO + cause
    return reason
