"""The single declaration of each lifecycle.

Each machine is a ``transitions.Machine`` with no model: states, triggers and named guards
only.  ``MachineTable.from_machine`` turns it into the frozen table the controllers fire; the
docs draw their diagrams from the same objects.  Beside each declaration, ``fired_by`` says
which actor fires each trigger.  Where several edges share a source and a trigger, the first
whose guards hold is taken, so guarded edges come before their fallback.

Parts that belong to an opt-in semantics switch (KEP-993's ``PreemptionRequired`` check state,
which upstream never implemented) are declared like the rest and listed in each table's
``opt_in``: the diagrams mark them, and no controller fires them unless the switch is on.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from enum import StrEnum
from typing import Any

from transitions import Machine

from kueue_provreq.api.config import SEMANTICS_KEP_993_PREEMPTION
from kueue_provreq.machines.requests import REQUEST_CONDITIONS, RequestPhase, RequestTrigger
from kueue_provreq.machines.table import MachineTable, OptIn
from kueue_provreq.machines.vocabulary import (
    Actor,
    CheckState,
    CheckTrigger,
    Guard,
)
from kueue_provreq.machines.vocabulary import WorkloadPhase as P
from kueue_provreq.machines.vocabulary import WorkloadTrigger as W


def _declare(initial: StrEnum, states: Iterable[StrEnum], transitions: Iterable[Mapping[str, Any]]) -> Machine:
    """A model-less ``transitions.Machine``, given plain strings: ``transitions`` would name
    enum states by their member names, and every reader knows them by their values."""

    def plain(v: Any) -> Any:
        if isinstance(v, StrEnum):
            return v.value
        if isinstance(v, list):
            return [plain(x) for x in v]
        return v

    return Machine(model=None, auto_transitions=False, initial=initial.value, states=[s.value for s in states],
                   transitions=[{k: plain(v) for k, v in t.items()} for t in transitions])


# --- Workload admission lifecycle ------------------------------------------------
# A phase is read off the Workload's conditions (see phases.workload_phase).
_QUOTA_HELD = [P.QUOTA_RESERVED, P.ADMITTED]
_ALIVE = [P.PENDING, P.BACKOFF, P.QUOTA_RESERVED, P.ADMITTED, P.EVICTED, P.INACTIVE]

_workload = _declare(
    P.PENDING, P, [
        # scheduler: SetQuotaReservation, and SyncAdmittedCondition in the same patch
        # (a workload whose requeueAt has passed is admissible before the workload controller
        # clears it: it may be reserved straight from Backoff)
        # (KEP-993: not while the preemptions the reservation counts on still hold quota)
        {"trigger": W.RESERVE_QUOTA, "source": [P.PENDING, P.BACKOFF], "dest": P.ADMITTED,
         "conditions": [Guard.ALL_CHECKS_READY], "unless": [Guard.PREEMPTIONS_PENDING]},
        {"trigger": W.RESERVE_QUOTA, "source": [P.PENDING, P.BACKOFF], "dest": P.QUOTA_RESERVED},
        # KEP-993 only: the scheduler re-validates a reservation that counted on preemptions;
        # when they can no longer happen, the reservation is taken back
        {"trigger": W.REVOKE_RESERVATION, "source": P.QUOTA_RESERVED, "dest": P.BACKOFF,
         "conditions": [Guard.BACKOFF]},
        {"trigger": W.REVOKE_RESERVATION, "source": P.QUOTA_RESERVED, "dest": P.PENDING},
        # workload controller (KEP-993: the scheduler, re-validating the quota): quota and every
        # check Ready (an admitted workload is never
        # un-admitted while it keeps its quota: the Admitted sync skips admitted workloads).
        # An evicted one still holding quota may be marked Admitted until the job releases it.
        {"trigger": W.ADMIT, "source": P.QUOTA_RESERVED, "dest": P.ADMITTED},
        {"trigger": W.ADMIT, "source": P.EVICTED, "dest": None},
        # workload controller: Retry check, deactivation, PodsReady timeout; scheduler: preemption
        # (quota-reserved workloads are candidates as much as admitted ones); a deactivated
        # workload without quota is marked Evicted all the same
        {"trigger": W.EVICT, "source": _QUOTA_HELD, "dest": P.EVICTED},
        {"trigger": W.EVICT, "source": P.INACTIVE, "dest": None},
        # job integration: stop the job and release quota in one status update
        {"trigger": W.RELEASE_QUOTA, "source": P.EVICTED, "dest": P.INACTIVE,
         "conditions": [Guard.DEACTIVATED]},
        {"trigger": W.RELEASE_QUOTA, "source": P.EVICTED, "dest": P.PENDING,
         "conditions": [Guard.REQUEUED]},
        {"trigger": W.RELEASE_QUOTA, "source": P.EVICTED, "dest": P.BACKOFF},
        # UnsetQuotaReservationWithCondition without an eviction (Kueue's test helpers)
        {"trigger": W.UNSET_QUOTA, "source": _QUOTA_HELD + [P.EVICTED], "dest": P.INACTIVE,
         "conditions": [Guard.DEACTIVATED]},
        {"trigger": W.UNSET_QUOTA, "source": _QUOTA_HELD + [P.EVICTED], "dest": P.BACKOFF,
         "conditions": [Guard.BACKOFF]},
        {"trigger": W.UNSET_QUOTA, "source": _QUOTA_HELD + [P.EVICTED], "dest": P.PENDING},
        # workload controller: a reservation not yet admitted whose LocalQueue or ClusterQueue is
        # stopped, terminating or missing goes back to the queue (reconcileOn*QueueActiveState)
        # (an evicted one is left to the job integration, which releases its quota)
        {"trigger": W.SET_ASIDE, "source": P.QUOTA_RESERVED, "dest": P.BACKOFF, "conditions": [Guard.BACKOFF]},
        {"trigger": W.SET_ASIDE, "source": P.QUOTA_RESERVED, "dest": P.PENDING},
        # workload controller: the backoff ends (requeueAt passed and cleared, or Requeued=True
        # with BackoffFinished / Reactivated), unless the other half still holds it back
        {"trigger": W.REQUEUE, "source": P.BACKOFF, "dest": P.PENDING, "unless": [Guard.BACKOFF]},
        # (a stopped queue running again sets Requeued=True on a workload in any phase)
        {"trigger": W.REQUEUE, "source": [P.BACKOFF, P.QUOTA_RESERVED, P.ADMITTED, P.EVICTED, P.INACTIVE],
         "dest": None},
        # workload controller: requeueAt recorded for a delayed Retry; it holds back a workload
        # without quota (KEP-3258's race), and waits beside the quota of one that has it
        {"trigger": W.DELAY, "source": P.PENDING, "dest": P.BACKOFF},
        {"trigger": W.DELAY, "source": [P.BACKOFF, P.QUOTA_RESERVED, P.ADMITTED, P.EVICTED, P.INACTIVE],
         "dest": None},
        # spec.active=false (a user, or the workload controller for DeactivationTarget);
        # quota-holding workloads are then evicted
        {"trigger": W.DEACTIVATE, "source": [P.PENDING, P.BACKOFF], "dest": P.INACTIVE},
        {"trigger": W.DEACTIVATE, "source": _QUOTA_HELD + [P.EVICTED], "dest": None},
        # spec.active=true again: straight back to the queue unless Requeued=False holds it;
        # a workload still holding quota keeps it (its eviction, if begun, runs its course)
        {"trigger": W.REACTIVATE, "source": P.INACTIVE, "dest": P.PENDING,
         "conditions": [Guard.REQUEUED]},
        {"trigger": W.REACTIVATE, "source": P.INACTIVE, "dest": P.BACKOFF},
        {"trigger": W.REACTIVATE, "source": _QUOTA_HELD + [P.EVICTED], "dest": None},
        # the job finished (or Kueue finished the workload: a job that cannot start, FailedToStart)
        {"trigger": W.FINISH, "source": _ALIVE, "dest": P.FINISHED},
    ],
)

#: What the kep-993-preemption switch adds (upstream never implemented it): declared always,
#: fired only with the switch on, marked in the diagrams.
_KEP_993 = SEMANTICS_KEP_993_PREEMPTION
_KEP_993_ONLY = "KEP-993 only"

WORKLOAD_MACHINE: MachineTable[P, W] = MachineTable.from_machine(
    "workload", "Workload admission lifecycle", _workload, P, W, {
        W.RESERVE_QUOTA: (Actor.SCHEDULER, Actor.USER),
        W.REVOKE_RESERVATION: (Actor.SCHEDULER,),
        W.ADMIT: (Actor.WORKLOAD, Actor.SCHEDULER),
        W.EVICT: (Actor.WORKLOAD, Actor.SCHEDULER),
        W.RELEASE_QUOTA: (Actor.JOB,),
        W.UNSET_QUOTA: (Actor.USER,),
        W.SET_ASIDE: (Actor.WORKLOAD,),
        W.REQUEUE: (Actor.WORKLOAD,),
        W.DELAY: (Actor.WORKLOAD,),
        W.DEACTIVATE: (Actor.WORKLOAD, Actor.USER),
        W.REACTIVATE: (Actor.USER,),
        W.FINISH: (Actor.USER, Actor.JOB),
    }, opt_in=(OptIn(_KEP_993, _KEP_993_ONLY, triggers=frozenset({W.REVOKE_RESERVATION}),
                     guards=frozenset({Guard.PREEMPTIONS_PENDING})),))

# --- AdmissionCheckState ---------------------------------------------------------
_CHECK_STATES = list(CheckState)
_NOT_READY = [CheckState.PENDING, CheckState.RETRY, CheckState.REJECTED, CheckState.PREEMPTION_REQUIRED]
_NOT_PENDING = [CheckState.READY, CheckState.RETRY, CheckState.REJECTED, CheckState.PREEMPTION_REQUIRED]

_check = _declare(
    CheckState.PENDING, _CHECK_STATES, [
        # provisioning controller: the ProvisioningRequestConfig is missing
        {"trigger": CheckTrigger.CONFIG_MISSING, "source": _CHECK_STATES, "dest": CheckState.PENDING},
        # provisioning controller: no podset of interest, or zero counts
        {"trigger": CheckTrigger.REQUEST_NOT_NEEDED, "source": _NOT_READY, "dest": CheckState.READY},
        {"trigger": CheckTrigger.REQUEST_NOT_NEEDED, "source": CheckState.READY, "dest": None},
        # provisioning controller: the request's attempt is over (requests.REQUEST_CONDITIONS)
        {"trigger": CheckTrigger.REQUEST_FAILED, "source": _CHECK_STATES, "dest": CheckState.REJECTED,
         "unless": [Guard.WITHIN_BACKOFF_LIMIT]},
        # KeepQuotaForProvReqRetry: no Retry, no eviction; the check waits in Pending
        {"trigger": CheckTrigger.REQUEST_FAILED, "source": _CHECK_STATES, "dest": CheckState.PENDING,
         "conditions": [Guard.KEEP_QUOTA]},
        {"trigger": CheckTrigger.REQUEST_FAILED, "source": _CHECK_STATES, "dest": CheckState.RETRY,
         "conditions": [Guard.NEWER_ATTEMPT]},
        {"trigger": CheckTrigger.REQUEST_FAILED, "source": _CHECK_STATES, "dest": None},
        # provisioning controller: CapacityRevoked=True on an active, unfinished workload
        {"trigger": CheckTrigger.CAPACITY_REVOKED, "source": _CHECK_STATES, "dest": CheckState.REJECTED},
        # provisioning controller: Provisioned=True
        {"trigger": CheckTrigger.PROVISIONED, "source": _NOT_READY, "dest": CheckState.READY},
        {"trigger": CheckTrigger.PROVISIONED, "source": CheckState.READY, "dest": None},
        # provisioning controller: Accepted=True with a Provisioned condition (the ETA message)
        {"trigger": CheckTrigger.WAITING_FOR_CAPACITY, "source": _CHECK_STATES, "dest": CheckState.PENDING},
        # KEP-993 only: the check asks for the workload's pending preemptions (the provisioning
        # controller when Cluster Autoscaler reports Provisioned=False: capacity not found)
        {"trigger": CheckTrigger.REQUEST_PREEMPTION, "source": _CHECK_STATES,
         "dest": CheckState.PREEMPTION_REQUIRED},
        # provisioning controller: no deciding condition yet
        {"trigger": CheckTrigger.NO_DECISION, "source": _CHECK_STATES, "dest": CheckState.PENDING},
        # workload controller (resetChecksOnEviction)
        {"trigger": CheckTrigger.RESET_ON_EVICTION, "source": _NOT_PENDING, "dest": CheckState.PENDING},
        {"trigger": CheckTrigger.RESET_ON_EVICTION, "source": CheckState.PENDING, "dest": None},
    ],
)

_BY_PROVISIONING = (Actor.PROVISIONING,)
ADMISSION_CHECK_MACHINE: MachineTable[CheckState, CheckTrigger] = MachineTable.from_machine(
    "admissioncheck", "AdmissionCheckState (one entry of status.admissionChecks)", _check,
    CheckState, CheckTrigger, {
        **{t: _BY_PROVISIONING for t in CheckTrigger if t != CheckTrigger.RESET_ON_EVICTION},
        CheckTrigger.RESET_ON_EVICTION: (Actor.WORKLOAD,),
    }, opt_in=(OptIn(_KEP_993, _KEP_993_ONLY, states=frozenset({CheckState.PREEMPTION_REQUIRED}),
                     triggers=frozenset({CheckTrigger.REQUEST_PREEMPTION})),))

# --- ProvisioningRequest (as Cluster Autoscaler drives it) -----------------------
# Declared from the table of request conditions (requests.REQUEST_CONDITIONS): each condition
# is set by one trigger, from the phases its row names; listed in the order of a request's life
# (RequestTrigger's order), which is also the order the explorer tries them in.
_request_transitions = {
    # Provisioned=False (CapacityIsNotFound): CA accepts, backs off and tries again
    RequestTrigger.NOT_PROVISIONED: {"trigger": RequestTrigger.NOT_PROVISIONED, "dest": RequestPhase.ACCEPTED,
                                     "source": [RequestPhase.NEW, RequestPhase.ACCEPTED]},
    **{row.set_by: {"trigger": row.set_by, "source": list(row.set_from), "dest": row.phase}
       for row in REQUEST_CONDITIONS},
}
_provisioning_request = _declare(RequestPhase.NEW, RequestPhase, [_request_transitions[t] for t in RequestTrigger])

PROVISIONING_REQUEST_MACHINE: MachineTable[RequestPhase, RequestTrigger] = MachineTable.from_machine(
    "provisioningrequest", "ProvisioningRequest, as Cluster Autoscaler drives it", _provisioning_request,
    RequestPhase, RequestTrigger, {t: (Actor.CLUSTER_AUTOSCALER,) for t in RequestTrigger})

MACHINES: dict[str, MachineTable] = {  # type: ignore[type-arg]
    m.name: m for m in (WORKLOAD_MACHINE, ADMISSION_CHECK_MACHINE, PROVISIONING_REQUEST_MACHINE)
}
