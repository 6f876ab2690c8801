"""The single declaration of each lifecycle.

Each machine is a ``transitions.Machine`` with no model: states, triggers and
named guards only.  ``MachineTable.from_machine`` turns it into the frozen
table the controllers consult; the docs draw their diagrams from the same
objects.  Who fires each trigger is said in the comment above its transitions.
"""

from __future__ import annotations

from transitions import Machine

from kueue_provreq.api import constants as c
from kueue_provreq.machines.table import MachineTable

# --- Workload admission lifecycle ------------------------------------------------
# A phase is derived from the Workload's conditions (see phases.workload_phase).
PENDING = "Pending"
BACKOFF = "Backoff"
QUOTA_RESERVED = "QuotaReserved"
ADMITTED = "Admitted"
EVICTED = "Evicted"
INACTIVE = "Inactive"
FINISHED = "Finished"

_QUOTA_HELD = [QUOTA_RESERVED, ADMITTED]
_ALIVE = [PENDING, BACKOFF, QUOTA_RESERVED, ADMITTED, EVICTED, INACTIVE]

_workload = Machine(
    model=None, auto_transitions=False, initial=PENDING,
    states=[PENDING, BACKOFF, QUOTA_RESERVED, ADMITTED, EVICTED, INACTIVE, FINISHED],
    transitions=[
        # scheduler: SetQuotaReservation, and SyncAdmittedCondition in the same patch
        {"trigger": "reserve_quota", "source": PENDING, "dest": ADMITTED,
         "conditions": ["all_checks_ready"]},
        {"trigger": "reserve_quota", "source": PENDING, "dest": QUOTA_RESERVED},
        # workload controller: every check Ready
        {"trigger": "admit", "source": QUOTA_RESERVED, "dest": ADMITTED},
        # a check left Ready (a new Pending check while admitted does not un-admit)
        {"trigger": "unadmit", "source": ADMITTED, "dest": QUOTA_RESERVED},
        # workload controller: Retry check, deactivation, PodsReady timeout
        {"trigger": "evict", "source": _QUOTA_HELD, "dest": EVICTED},
        # job integration: stop the job and release quota in one status update
        {"trigger": "release_quota", "source": EVICTED, "dest": INACTIVE,
         "conditions": ["deactivated"]},
        {"trigger": "release_quota", "source": EVICTED, "dest": PENDING,
         "conditions": ["requeued"]},
        {"trigger": "release_quota", "source": EVICTED, "dest": BACKOFF},
        # UnsetQuotaReservationWithCondition without an eviction (tests, preemption emulation)
        {"trigger": "unset_quota", "source": _QUOTA_HELD + [EVICTED], "dest": INACTIVE,
         "conditions": ["deactivated"]},
        {"trigger": "unset_quota", "source": _QUOTA_HELD + [EVICTED], "dest": BACKOFF,
         "conditions": ["backoff"]},
        {"trigger": "unset_quota", "source": _QUOTA_HELD + [EVICTED], "dest": PENDING},
        # workload controller: Requeued=True (BackoffFinished / Reactivated)
        {"trigger": "requeue", "source": BACKOFF, "dest": PENDING},
        # workload controller: requeueAt recorded for a delayed Retry, or a backoff restarted
        {"trigger": "delay", "source": PENDING, "dest": BACKOFF},
        # spec.active=false (user, or DeactivationTarget); quota-holding workloads are then evicted
        {"trigger": "deactivate", "source": [PENDING, BACKOFF], "dest": INACTIVE},
        {"trigger": "deactivate", "source": _QUOTA_HELD + [EVICTED], "dest": None},
        # spec.active=true again
        {"trigger": "reactivate", "source": INACTIVE, "dest": BACKOFF},
        {"trigger": "reactivate", "source": INACTIVE, "dest": PENDING, "conditions": ["requeued"]},
        # the job finished (or Kueue finished the workload)
        {"trigger": "finish", "source": _ALIVE, "dest": FINISHED},
    ],
)

# --- AdmissionCheckState ---------------------------------------------------------
_CHECK_STATES = [c.CHECK_PENDING, c.CHECK_READY, c.CHECK_RETRY, c.CHECK_REJECTED]
_NOT_READY = [c.CHECK_PENDING, c.CHECK_RETRY, c.CHECK_REJECTED]
_NOT_PENDING = [c.CHECK_READY, c.CHECK_RETRY, c.CHECK_REJECTED]

_check = Machine(
    model=None, auto_transitions=False, initial=c.CHECK_PENDING,
    states=_CHECK_STATES,
    transitions=[
        # provisioning controller: the ProvisioningRequestConfig is missing
        {"trigger": "config_missing", "source": _CHECK_STATES, "dest": c.CHECK_PENDING},
        # provisioning controller: no podset of interest, or zero counts
        {"trigger": "request_not_needed", "source": _NOT_READY, "dest": c.CHECK_READY},
        {"trigger": "request_not_needed", "source": c.CHECK_READY, "dest": None},
        # provisioning controller: Failed=True, or BookingExpired=True before admission
        {"trigger": "request_failed", "source": _CHECK_STATES, "dest": c.CHECK_REJECTED,
         "unless": ["within_backoff_limit"]},
        # KeepQuotaForProvReqRetry: no Retry, no eviction; the check waits in Pending
        {"trigger": "request_failed", "source": _CHECK_STATES, "dest": c.CHECK_PENDING,
         "conditions": ["keep_quota"]},
        {"trigger": "request_failed", "source": _CHECK_STATES, "dest": c.CHECK_RETRY,
         "conditions": ["newer_attempt"]},
        {"trigger": "request_failed", "source": _CHECK_STATES, "dest": None},
        # provisioning controller: CapacityRevoked=True on an active, unfinished workload
        {"trigger": "capacity_revoked", "source": _CHECK_STATES, "dest": c.CHECK_REJECTED},
        # provisioning controller: Provisioned=True
        {"trigger": "provisioned", "source": _NOT_READY, "dest": c.CHECK_READY},
        {"trigger": "provisioned", "source": c.CHECK_READY, "dest": None},
        # provisioning controller: Accepted=True with a Provisioned condition (the ETA message)
        {"trigger": "waiting_for_capacity", "source": _CHECK_STATES, "dest": c.CHECK_PENDING},
        # provisioning controller: no deciding condition yet
        {"trigger": "no_decision", "source": _CHECK_STATES, "dest": c.CHECK_PENDING},
        # workload controller (resetChecksOnEviction)
        {"trigger": "reset_on_eviction", "source": _NOT_PENDING, "dest": c.CHECK_PENDING},
        {"trigger": "reset_on_eviction", "source": c.CHECK_PENDING, "dest": None},
    ],
)

# --- ProvisioningRequest (as Cluster Autoscaler drives it) -----------------------
PR_NEW = "New"
_PR_STATES = [PR_NEW, c.PR_ACCEPTED, c.PR_PROVISIONED, c.PR_BOOKING_EXPIRED, c.PR_FAILED,
              c.PR_CAPACITY_REVOKED]

_provisioning_request = Machine(
    model=None, auto_transitions=False, initial=PR_NEW,
    states=_PR_STATES,
    transitions=[
        {"trigger": "accept", "source": PR_NEW, "dest": c.PR_ACCEPTED},
        # Provisioned=False (CapacityIsNotFound): CA backs off and tries again
        {"trigger": "not_provisioned", "source": [PR_NEW, c.PR_ACCEPTED], "dest": c.PR_ACCEPTED},
        {"trigger": "provision", "source": [PR_NEW, c.PR_ACCEPTED], "dest": c.PR_PROVISIONED},
        {"trigger": "fail", "source": [PR_NEW, c.PR_ACCEPTED, c.PR_PROVISIONED], "dest": c.PR_FAILED},
        {"trigger": "expire_booking", "source": c.PR_PROVISIONED, "dest": c.PR_BOOKING_EXPIRED},
        {"trigger": "revoke_capacity", "source": [c.PR_PROVISIONED, c.PR_BOOKING_EXPIRED],
         "dest": c.PR_CAPACITY_REVOKED},
    ],
)

WORKLOAD_MACHINE = MachineTable.from_machine("workload", "Workload admission lifecycle", _workload)
ADMISSION_CHECK_MACHINE = MachineTable.from_machine(
    "admissioncheck", "AdmissionCheckState (one entry of status.admissionChecks)", _check)
PROVISIONING_REQUEST_MACHINE = MachineTable.from_machine(
    "provisioningrequest", "ProvisioningRequest, as Cluster Autoscaler drives it", _provisioning_request)

MACHINES: dict[str, MachineTable] = {
    m.name: m for m in (WORKLOAD_MACHINE, ADMISSION_CHECK_MACHINE, PROVISIONING_REQUEST_MACHINE)
}
