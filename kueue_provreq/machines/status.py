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
from kueue_provreq.api.meta import Condition, Time, find_condition, is_true, set_condition
from kueue_provreq.api.workload import Admission, RequeueState, Workload


def condition(wl: Workload, type_: str, status: str, reason: str, message: str) -> Condition:
    return Condition(type_, status, reason, message, None, wl.metadata.generation)


def set_cond(wl: Workload, type_: str, status: str, reason: str, message: str, now: Time) -> Workload:
    return _set(wl, condition(wl, type_, status, reason, message), now)


def _set(wl: Workload, cond: Condition, now: Time) -> Workload:
    conds, changed = set_condition(wl.status.conditions, cond, now)
    return wl.with_status(conditions=conds) if changed else wl


def set_quota_reservation(wl: Workload, admission: Admission, now: Time) -> Workload:
    """``workload.SetQuotaReservation``."""
    # read off the workload as given: the writes below touch no other of these conditions
    previous = [(type_, wl.condition(type_)) for type_ in
                (c.WORKLOAD_EVICTED, c.WORKLOAD_PREEMPTED, c.WORKLOAD_BLOCKED_ON_PREEMPTION_GATES)]
    wl = wl.with_status(admission=admission)
    wl = _set(wl, condition(wl, c.WORKLOAD_QUOTA_RESERVED, c.TRUE, c.REASON_QUOTA_RESERVED,
                            c.MSG_QUOTA_RESERVED.format(cq=admission.cluster_queue)), now)
    for type_, old in previous:
        if old is not None and old.status == c.TRUE:
            wl = _set(wl, condition(wl, type_, c.FALSE, c.REASON_QUOTA_RESERVED,
                                    c.MSG_PREVIOUSLY.format(message=old.message)), now)
    return wl


def unset_quota_reservation(wl: Workload, reason: str, message: str, now: Time,
                            config: Configuration) -> Workload:
    """``workload.UnsetQuotaReservationWithCondition``."""
    wl = _set(wl, condition(wl, c.WORKLOAD_QUOTA_RESERVED, c.FALSE, reason, message), now)
    if wl.status.admission is not None:
        wl = wl.with_status(admission=None)
    return sync_admitted_condition(wl, now, config)


def all_checks_ready(wl: Workload) -> bool:
    return all(s.state == c.CHECK_READY for s in wl.status.admission_checks)


def sync_admitted_condition(wl: Workload, now: Time, config: Configuration,
                            preemptions_pending: bool = False) -> Workload:
    """``workload.SyncAdmittedCondition``: Admitted=True only with quota and every check Ready.

    ``preemptions_pending`` (KEP-993 only): the quota is still held by the workloads the
    reservation preempts, so it is ``Admitted=False`` ``WaitingForPreemptedWorkloads`` until
    they release it (the KEP's "recheck that Admission settings are still valid")."""
    conds = wl.status.conditions
    has_reservation = is_true(conds, c.WORKLOAD_QUOTA_RESERVED)
    ready = all_checks_ready(wl)
    if has_reservation and ready and preemptions_pending:
        return _set(wl, condition(wl, c.WORKLOAD_ADMITTED, c.FALSE, c.REASON_WAITING_FOR_PREEMPTED_WORKLOADS,
                                  c.MSG_KEP_993_PREEMPTIONS_PENDING), now)
    is_admitted = is_true(conds, c.WORKLOAD_ADMITTED)
    observability = config.gate(c.GATE_UNADMITTED_OBSERVABILITY)
    if observability:
        if find_condition(conds, c.WORKLOAD_QUOTA_RESERVED) is None and \
                find_condition(conds, c.WORKLOAD_ADMITTED) is None:
            return wl
    elif is_admitted == (has_reservation and ready):
        return wl
    if has_reservation and ready:
        new = condition(wl, c.WORKLOAD_ADMITTED, c.TRUE, c.REASON_ADMITTED, c.MSG_ADMITTED)
    elif not has_reservation and not ready:
        new = (condition(wl, c.WORKLOAD_ADMITTED, c.FALSE, c.REASON_NO_RESERVATION, c.MSG_NO_RESERVATION)
               if observability else
               condition(wl, c.WORKLOAD_ADMITTED, c.FALSE, c.REASON_NO_RESERVATION_UNSATISFIED_CHECKS_LEGACY,
                         c.MSG_NO_RESERVATION_UNSATISFIED_CHECKS_LEGACY))
    elif not has_reservation:
        new = condition(wl, c.WORKLOAD_ADMITTED, c.FALSE, c.REASON_NO_RESERVATION, c.MSG_NO_RESERVATION)
    else:
        new = condition(wl, c.WORKLOAD_ADMITTED, c.FALSE,
                        c.REASON_UNSATISFIED_ADMISSION_CHECKS if observability else c.REASON_UNSATISFIED_CHECKS_LEGACY,
                        c.MSG_UNSATISFIED_CHECKS)
    return _set(wl, new, now)


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
