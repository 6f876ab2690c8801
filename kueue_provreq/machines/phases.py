"""Where an object stands in its declared lifecycle, read off its conditions.

Kubernetes objects carry conditions, not a state field; these functions are
the one place that says which combination of conditions is which state.
"""

from __future__ import annotations

from kueue_provreq.api import constants as c
from kueue_provreq.api.meta import is_true
from kueue_provreq.api.provisioning import ProvisioningRequest
from kueue_provreq.api.workload import Workload
from kueue_provreq.machines import declarations as d


def workload_phase(wl: Workload) -> str:
    status = wl.status
    if status.is_true(c.WORKLOAD_FINISHED):
        return d.FINISHED
    if status.is_true(c.WORKLOAD_QUOTA_RESERVED):
        if status.is_true(c.WORKLOAD_EVICTED):
            return d.EVICTED
        if status.is_true(c.WORKLOAD_ADMITTED):
            return d.ADMITTED
        return d.QUOTA_RESERVED
    if wl.spec.active is False:
        return d.INACTIVE
    rs = status.requeue_state
    requeued = status.conditions_by_type.get(c.WORKLOAD_REQUEUED)
    if (requeued is not None and requeued.status == c.FALSE) or (rs is not None and rs.requeue_at is not None):
        return d.BACKOFF
    return d.PENDING


#: Upstream's precedence when several conditions are True at once (syncCheckStates).
_PR_PRECEDENCE = (c.PR_FAILED, c.PR_CAPACITY_REVOKED, c.PR_BOOKING_EXPIRED, c.PR_PROVISIONED,
                  c.PR_ACCEPTED)


def provisioning_request_phase(pr: ProvisioningRequest) -> str:
    conds = pr.status.conditions
    for t in _PR_PRECEDENCE:
        if is_true(conds, t):
            return t
    return d.PR_NEW
