"""Where an object stands in its declared lifecycle, read off its conditions, and how the
Workload machine writes the phase it decides.

Kubernetes objects carry conditions, not a state field; ``workload_phase`` is the one place
that says which combination of conditions is which phase, and the realisers beside it, one per
trigger, the one place that writes each: :func:`write_workload` fires the trigger and realises
its target in one call, the only way a controller changes a Workload's phase.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from kueue_provreq.api import constants as c
from kueue_provreq.api.config import Configuration
from kueue_provreq.api.evolve import evolve
from kueue_provreq.api.frozen import FrozenMap
from kueue_provreq.api.meta import Json, Time
from kueue_provreq.api.provisioning import ProvisioningRequest
from kueue_provreq.api.workload import Admission, AdmissionCheckState, Workload
from kueue_provreq.machines.declarations import WORKLOAD_MACHINE
from kueue_provreq.machines.requests import RequestPhase, request_phase
from kueue_provreq.machines.status import (
    reason_with_cause,
    set_cond,
    set_quota_reservation,
    set_requeue_state,
    sync_admitted_condition,
    unset_quota_reservation,
)
from kueue_provreq.machines.table import IllegalTransition, Transition
from kueue_provreq.machines.vocabulary import Guard, WorkloadPhase, WorkloadTrigger


def workload_phase(wl: Workload) -> WorkloadPhase:
    true = wl.status.true_types
    if c.WORKLOAD_FINISHED in true:
        return WorkloadPhase.FINISHED
    if c.WORKLOAD_QUOTA_RESERVED in true:
        if c.WORKLOAD_EVICTED in true:
            return WorkloadPhase.EVICTED
        if c.WORKLOAD_ADMITTED in true:
            return WorkloadPhase.ADMITTED
        return WorkloadPhase.QUOTA_RESERVED
    if wl.spec.active is False:
        return WorkloadPhase.INACTIVE
    if held_back(wl):
        return WorkloadPhase.BACKOFF
    return WorkloadPhase.PENDING


def held_back(wl: Workload) -> bool:
    """A workload without quota that the queue keeps out until its backoff ends
    (``Requeued=False``, or a ``requeueAt`` set)."""
    rs = wl.status.requeue_state
    requeued = wl.status.conditions_by_type.get(c.WORKLOAD_REQUEUED)
    return (requeued is not None and requeued.status == c.FALSE) or (rs is not None and rs.requeue_at is not None)


def provisioning_request_phase(pr: ProvisioningRequest) -> RequestPhase:
    return request_phase(pr.status.conditions)


# --- the Workload machine writes -----------------------------------------------------------
# One realiser per trigger: what the trigger writes to a Workload, the inverse of
# ``workload_phase`` (a property test shows that the phase read off a realiser's result is the
# target its fire gives).  ``write_workload`` fires and realises in one call, so that no
# controller writes a phase change beside the machine.


def _reserve_quota(wl: Workload, *, admission: Admission, now: Time, config: Configuration,
                   checks_complete: bool, preemptions_pending: bool = False) -> Workload:
    """``SetQuotaReservation``, and ``SyncAdmittedCondition`` in the same patch once the
    workload lists every check its flavors need (``checks_complete``; Kueue's test helper
    does not sync it)."""
    return set_quota_reservation(wl, admission, now, config if checks_complete else None, preemptions_pending)


def _unset_quota(wl: Workload, *, reason: str, message: str, now: Time, config: Configuration) -> Workload:
    """``UnsetQuotaReservationWithCondition``."""
    return unset_quota_reservation(wl, reason, message, now, config)


def _admit(wl: Workload, *, now: Time, config: Configuration) -> Workload:
    """``SyncAdmittedCondition`` on a workload with quota and every check Ready."""
    return sync_admitted_condition(wl, now, config)


def _evict(wl: Workload, *, reason: str, message: str, now: Time, cause: str = "",
           admission_checks: tuple[AdmissionCheckState, ...] | None = None,
           extra: FrozenMap[str, Json] | None = None) -> Workload:
    """``Evicted=True`` (reason ``Deactivated`` gets its cause); the rest of ``evict.Evict``
    moves no phase (``workload_status.evict``), and the checks and unmodelled fields it resets
    are written in the same new Workload."""
    return set_cond(wl, c.WORKLOAD_EVICTED, c.TRUE, reason_with_cause(reason, cause), message, now,
                    admission_checks, extra)


def _release_quota(wl: Workload, *, requeued: bool, reason: str, message: str, now: Time,
                   config: Configuration) -> Workload:
    """``SetRequeuedCondition`` + ``UnsetQuotaReservationWithCondition`` in one update, with
    the eviction's reason and message."""
    release_reason = (c.REASON_PENDING_EVALUATION if config.gate(c.GATE_UNADMITTED_OBSERVABILITY)
                      else c.REASON_PENDING_LEGACY)
    return unset_quota_reservation(wl, release_reason, message, now, config,
                                   (c.TRUE if requeued else c.FALSE, reason))


def _requeue(wl: Workload, *, now: Time, clear_requeue_at: bool, reason: str = "", message: str = "") -> Workload:
    """The backoff ends: ``requeueAt`` cleared, and/or ``Requeued=True`` with ``reason``."""
    rs = wl.status.requeue_state
    if clear_requeue_at and rs is not None and rs.requeue_at is not None:
        wl = wl.with_status(requeue_state=evolve(rs, requeue_at=None))
    return set_cond(wl, c.WORKLOAD_REQUEUED, c.TRUE, reason, message, now) if reason else wl


def _delay(wl: Workload, *, until: Time) -> Workload:
    """``requeueAt`` recorded (``SetRequeueState``, the count untouched)."""
    return set_requeue_state(wl, until, increment=False)


def _activate(active: bool) -> Callable[[Workload], Workload]:
    def realise(wl: Workload) -> Workload:
        """``spec.active`` set: a spec write, so the API server bumps the generation."""
        meta = wl.metadata
        return evolve(wl, spec=evolve(wl.spec, active=active),
                      metadata=evolve(meta, generation=(meta.generation or 0) + 1))
    return realise


def _finish(wl: Workload, *, reason: str, message: str, now: Time) -> Workload:
    return set_cond(wl, c.WORKLOAD_FINISHED, c.TRUE, reason, message, now)


Realiser = Callable[..., Workload]
"""What a trigger writes: the Workload, and keyword arguments (the ``what`` of
:func:`write_workload`), to the new Workload."""

REALISERS: Mapping[WorkloadTrigger, Realiser] = MappingProxyType({
    WorkloadTrigger.RESERVE_QUOTA: _reserve_quota,
    WorkloadTrigger.REVOKE_RESERVATION: _unset_quota,
    WorkloadTrigger.ADMIT: _admit,
    WorkloadTrigger.EVICT: _evict,
    WorkloadTrigger.RELEASE_QUOTA: _release_quota,
    WorkloadTrigger.UNSET_QUOTA: _unset_quota,
    WorkloadTrigger.SET_ASIDE: _unset_quota,
    WorkloadTrigger.REQUEUE: _requeue,
    WorkloadTrigger.DELAY: _delay,
    WorkloadTrigger.DEACTIVATE: _activate(False),
    WorkloadTrigger.REACTIVATE: _activate(True),
    WorkloadTrigger.FINISH: _finish,
})


def write_workload(wl: Workload, trigger: WorkloadTrigger, guards: Mapping[Guard, bool] | None = None,
                   **what: Any) -> tuple[Workload, Transition]:
    """Fire ``trigger`` from the phase ``wl`` stands in and write what it realises: the new
    Workload and the :class:`Transition` its ``Update`` carries.  The phase of the new Workload
    is the fire's target, checked here at every write (a few lookups), so that a realiser and
    the declaration cannot drift apart unnoticed."""
    fired = WORKLOAD_MACHINE.transition(workload_phase(wl), trigger, guards)
    new = REALISERS[trigger](wl, **what)
    phase = workload_phase(new)
    if phase != fired.target:
        raise IllegalTransition(f"workload {wl.metadata.namespace}/{wl.metadata.name}: {fired.describe()} "
                                f"wrote {phase}")
    return new, fired
