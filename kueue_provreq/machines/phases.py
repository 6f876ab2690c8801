"""Where an object stands in its declared lifecycle, read off its conditions.

Kubernetes objects carry conditions, not a state field; these functions are the one place
that says which combination of conditions is which state.
"""

from __future__ import annotations

from kueue_provreq.api import constants as c
from kueue_provreq.api.provisioning import ProvisioningRequest
from kueue_provreq.api.workload import Workload
from kueue_provreq.machines.requests import RequestPhase, request_phase
from kueue_provreq.machines.vocabulary import WorkloadPhase


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
