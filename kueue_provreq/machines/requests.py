"""What a ProvisioningRequest's conditions mean, declared once.

Cluster Autoscaler reports on a request through conditions; Kueue's provisioning controller
(``syncCheckStates``) reads the first one that is True, in a fixed precedence, and turns it
into a trigger of the admission-check machine.  This table says, for each condition, in that
precedence:

* the request's phase while that condition decides (the ProvisioningRequest machine's states),
* what Cluster Autoscaler does to set it (its trigger, from which phases, and the reason and
  message it writes), from which the ProvisioningRequest machine is declared,
* the admission-check trigger it fires, when the workload's state lets it decide at all
  (BookingExpired is ignored once the workload is admitted, CapacityRevoked once it is
  deactivated), and the message the check gets,
* whether the attempt is over: the request can no longer succeed and a new attempt is needed,
* under the opt-in kep-993-preemption semantics, the trigger that replaces it (capacity not
  found asks for the workload's pending preemptions: ``PreemptionRequired``).

The provisioning controller, ``explain``, the invariants and the explorer's autoscaler all
read this table; adding a condition is one row here (with its phase and the trigger that sets it,
in the two enums below) and its strings in ``api/constants.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum

import attrs

from kueue_provreq.api import constants as c
from kueue_provreq.api.meta import Condition
from kueue_provreq.machines.vocabulary import CheckTrigger


class RequestPhase(StrEnum):
    """Where a ProvisioningRequest stands: its deciding condition (``requests.request_phase``)."""

    NEW = "New"
    ACCEPTED = c.PR_ACCEPTED
    PROVISIONED = c.PR_PROVISIONED
    BOOKING_EXPIRED = c.PR_BOOKING_EXPIRED
    FAILED = c.PR_FAILED
    CAPACITY_REVOKED = c.PR_CAPACITY_REVOKED


class RequestTrigger(StrEnum):
    """What Cluster Autoscaler does to a request."""

    ACCEPT = "accept"
    NOT_PROVISIONED = "not_provisioned"
    PROVISION = "provision"
    FAIL = "fail"
    EXPIRE_BOOKING = "expire_booking"
    REVOKE_CAPACITY = "revoke_capacity"


@attrs.frozen
class RequestCondition:
    condition: str
    """The condition type Cluster Autoscaler sets to True."""
    phase: RequestPhase
    set_by: RequestTrigger
    """Cluster Autoscaler's trigger that sets it ..."""
    set_from: tuple[RequestPhase, ...]
    """... and the phases it may set it from."""
    ca_reason: str
    ca_message: str
    check_trigger: CheckTrigger
    retry_message: str | None = None
    """For conditions that end the attempt: the check's message while retries are left
    (``str.format`` with the condition's ``message``)."""
    while_admitted: bool = True
    """False: the condition changes nothing once the workload is admitted."""
    while_inactive: bool = True
    """False: the condition changes nothing once the workload is deactivated."""
    message_from: str | None = None
    """Take the check's message from this other condition, and decide only when it is present."""
    kep_993_trigger: CheckTrigger | None = None
    """The check trigger instead, under the kep-993-preemption semantics (KEP-993 only)."""

    @property
    def ends_attempt(self) -> bool:
        return self.check_trigger == CheckTrigger.REQUEST_FAILED

    def applies(self, admitted: bool, active: bool) -> bool:
        return (self.while_admitted or not admitted) and (self.while_inactive or active)


_BEFORE_PROVISIONED = (RequestPhase.NEW, RequestPhase.ACCEPTED)

#: In upstream's precedence: the first True condition decides, even when it then changes nothing.
REQUEST_CONDITIONS: tuple[RequestCondition, ...] = (
    RequestCondition(
        c.PR_FAILED, RequestPhase.FAILED, RequestTrigger.FAIL, _BEFORE_PROVISIONED + (RequestPhase.PROVISIONED,),
        c.CA_REASON_CAPACITY_IS_NOT_FOUND, c.CA_MSG_FAILED_CAPACITY_NOT_FOUND,
        CheckTrigger.REQUEST_FAILED, retry_message=c.MSG_RETRY_AFTER_FAILURE),
    RequestCondition(
        c.PR_CAPACITY_REVOKED, RequestPhase.CAPACITY_REVOKED, RequestTrigger.REVOKE_CAPACITY,
        (RequestPhase.PROVISIONED, RequestPhase.BOOKING_EXPIRED),
        c.CA_REASON_CAPACITY_REVOKED, c.CA_MSG_CAPACITY_REVOKED,
        CheckTrigger.CAPACITY_REVOKED, while_inactive=False),
    RequestCondition(
        c.PR_BOOKING_EXPIRED, RequestPhase.BOOKING_EXPIRED, RequestTrigger.EXPIRE_BOOKING,
        (RequestPhase.PROVISIONED,),
        c.CA_REASON_CAPACITY_RESERVATION_TIME_EXPIRED, c.CA_MSG_CAPACITY_RESERVATION_TIME_EXPIRED,
        CheckTrigger.REQUEST_FAILED, retry_message=c.MSG_RETRY_AFTER_BOOKING_EXPIRED, while_admitted=False),
    RequestCondition(
        c.PR_PROVISIONED, RequestPhase.PROVISIONED, RequestTrigger.PROVISION, _BEFORE_PROVISIONED,
        c.CA_REASON_CAPACITY_IS_FOUND, c.CA_MSG_CAPACITY_IS_FOUND, CheckTrigger.PROVISIONED),
    RequestCondition(
        c.PR_ACCEPTED, RequestPhase.ACCEPTED, RequestTrigger.ACCEPT, (RequestPhase.NEW,),
        c.CA_REASON_ACCEPTED, c.CA_MSG_ACCEPTED, CheckTrigger.WAITING_FOR_CAPACITY,
        message_from=c.PR_PROVISIONED,
        # KEP-993 only: Cluster Autoscaler finds no capacity, which preempting lower-priority
        # workloads may free, so the check asks for the pending preemptions
        kep_993_trigger=CheckTrigger.REQUEST_PREEMPTION),
)

#: Cluster Autoscaler's "not yet": Accepted, and Provisioned=False while it keeps trying.
NOT_PROVISIONED = (
    (c.PR_ACCEPTED, c.TRUE, c.CA_REASON_ACCEPTED, c.CA_MSG_ACCEPTED),
    (c.PR_PROVISIONED, c.FALSE, c.CA_REASON_CAPACITY_IS_NOT_FOUND, c.CA_MSG_CAPACITY_IS_NOT_FOUND),
)

BY_CONDITION = {row.condition: row for row in REQUEST_CONDITIONS}

CaWrite = tuple[str, str, str, str]
"""One condition Cluster Autoscaler writes: (type, status, reason, message)."""

#: What Cluster Autoscaler writes for each trigger, for the row's own reason.
CA_WRITES: dict[RequestTrigger, tuple[CaWrite, ...]] = {
    RequestTrigger.NOT_PROVISIONED: NOT_PROVISIONED,
    **{row.set_by: ((row.condition, c.TRUE, row.ca_reason, row.ca_message),) for row in REQUEST_CONDITIONS},
}

#: The other reasons Cluster Autoscaler fires a trigger for, each with the message it writes:
#: a request that outlived ``defaultExpirationTime`` fails ``Expired``; a scale-up class is
#: provisioned ``CapacityIsProvisioned`` (check-capacity, the row's own reason, ``CapacityIsFound``);
#: a booking ends ``CapacityBookingConsumed`` once every pod is scheduled (the row's own reason:
#: it ran out).
CA_REASONS: dict[RequestTrigger, dict[str, str]] = {
    RequestTrigger.FAIL: {c.CA_REASON_EXPIRED: c.CA_MSG_EXPIRED},
    RequestTrigger.PROVISION: {c.CA_REASON_CAPACITY_IS_PROVISIONED: c.CA_MSG_CAPACITY_IS_PROVISIONED},
    RequestTrigger.EXPIRE_BOOKING: {c.CA_REASON_CAPACITY_BOOKING_CONSUMED: c.CA_MSG_CAPACITY_BOOKING_CONSUMED},
}

#: Cluster Autoscaler accepts a request in the loop that answers it: ``Accepted=True``.
CA_ACCEPTED: CaWrite = NOT_PROVISIONED[0]


def ca_writes(trigger: RequestTrigger, reason: str | None = None, answer: bool = False) -> tuple[CaWrite, ...]:
    """What Cluster Autoscaler writes when it fires ``trigger`` for ``reason`` (None: the
    row's own); ``answer``: it answers a request it has not accepted yet, so ``Accepted``
    comes first, in the same write.

    >>> [w[2] for w in ca_writes(RequestTrigger.PROVISION, c.CA_REASON_CAPACITY_IS_PROVISIONED, answer=True)]
    ['Accepted', 'CapacityIsProvisioned']
    """
    writes = CA_WRITES[trigger]
    if reason is not None:
        ((type_, status, _, _),) = writes
        writes = ((type_, status, reason, CA_REASONS[trigger][reason]),)
    return (CA_ACCEPTED, *writes) if answer and writes[0] != CA_ACCEPTED else writes


def deciding(conditions: Sequence[Condition]) -> tuple[RequestCondition, Condition] | None:
    """The row of the first True condition in precedence, with that condition; None when no
    condition decides yet (a new request)."""
    true = {cd.type: cd for cd in conditions if cd.status == c.TRUE}
    if not true:
        return None
    for row in REQUEST_CONDITIONS:
        found = true.get(row.condition)
        if found is not None:
            return row, found
    return None


def request_phase(conditions: Sequence[Condition]) -> RequestPhase:
    found = deciding(conditions)
    return RequestPhase.NEW if found is None else found[0].phase


def attempt_over(conditions: Sequence[Condition], admitted: bool) -> bool:
    """The request can no longer bring the check to Ready, so a check waiting in Pending gets a
    new attempt: a True condition that ends attempts and applies to the workload (upstream's
    ``isFailed(req) || (isBookingExpired(req) && !isAdmitted(wl))``, whatever the precedence)."""
    return any(cd.status == c.TRUE and cd.type in _ENDING and _ENDING[cd.type].applies(admitted, True)
               for cd in conditions)


_ENDING = {row.condition: row for row in REQUEST_CONDITIONS if row.ends_attempt}
#: The conditions that end an attempt (the request is then dead to Kueue), and their phases.
ENDING_CONDITIONS = tuple(_ENDING)
ENDING_PHASES = frozenset(row.phase for row in _ENDING.values())
