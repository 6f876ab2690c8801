"""Cluster Autoscaler's side of a ProvisioningRequest, as a pure model.

Every driver that plays Cluster Autoscaler shares this module: ``kueue-provreq forecast`` and
``simulate`` (simulated time, :mod:`kueue_provreq.simulation`) and a stand-in for CA on a real
cluster (wall-clock time, :mod:`kueue_provreq.cluster.autoscaler`); it sits below both, since
neither edge imports the other.  It is pure: no clock, no randomness, no I/O; time comes in as an argument.  Two things live here:

* **the SCRIPT grammar** (:func:`parse_script`): what CA answers to each attempt, as written on
  the command line (``--autoscaler fail@1m,provision@5m``);
* **what CA does to one request now** (:func:`reconcile`): given the request, the time, the
  answer CA has decided on (:class:`Decision`, from a script item or drawn by a sampled model)
  and whether the request's pods are scheduled, the request with the conditions CA writes and
  the time CA next has something to do with it.  Every change is decided by the declared
  ProvisioningRequest machine (``PROVISIONING_REQUEST_MACHINE.fire``) and only then written,
  as :func:`~kueue_provreq.machines.requests.ca_writes` declares CA writes it for that trigger.

What CA does follows ``autoscaler-provisioningrequest-api.md`` (CA's
``processors/provreq`` and ``provisioningrequest/conditions``):

* an answer sets ``Accepted=True`` and, in the same write, ``Provisioned=True``
  (``CapacityIsFound`` for check-capacity, ``CapacityIsProvisioned`` for scale-ups) or
  ``Failed=True`` (``CapacityIsNotFound``) or ``Provisioned=False`` (``CapacityIsNotFound``:
  CA tries again after its backoff, :func:`ca_backoff`).  CA sets ``Accepted`` when its loop
  picks the request, which is also the loop that answers it unless it has to retry; Kueue does
  nothing on ``Accepted`` alone, so the model writes both at the answer's time;
* a provisioned request is *booked*: ``BookingExpired=True`` follows with
  ``CapacityBookingConsumed`` as soon as all its pods are scheduled, or with
  ``CapacityReservationTimeExpired`` :data:`BOOKING_TIME` (10 min, a CA constant; a decision
  may say otherwise for a provider's class) after the ``Provisioned`` transition;
* a request not provisioned within :data:`EXPIRATION_TIME` (7 days) of its creation gets
  ``Failed=True`` ``Expired``;
* ``CapacityRevoked`` is never set by upstream CA; provider classes set it, so the model sets it
  only when a decision says so (with the library's own reason, ``CapacityRevoked``).

Conditions are written as CA's ``AddOrUpdateCondition`` writes them: always replaced, with the
transition time set to now and ``observedGeneration`` to the request's generation.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping

import attrs

from kueue_provreq.api import constants as c
from kueue_provreq.api.evolve import evolve
from kueue_provreq.api.meta import Condition, Conditions, Time
from kueue_provreq.api.provisioning import ProvisioningRequest, ProvisioningRequestConfig
from kueue_provreq.errors import KueueProvreqError
from kueue_provreq.machines import PROVISIONING_REQUEST_MACHINE, RequestPhase, RequestTrigger, Transition
from kueue_provreq.machines.phases import provisioning_request_phase
from kueue_provreq.machines.requests import ca_writes
from kueue_provreq.manifests.codec import format_duration, parse_duration

BOOKING_TIME = 600
"""``defaultReservationTime``: how long CA books provisioned capacity for the request's pods."""
EXPIRATION_TIME = 7 * 24 * 3600
"""``defaultExpirationTime``: a request not provisioned by then fails with ``Expired``."""
INITIAL_BACKOFF = 60
"""``--provisioning-request-initial-backoff-time``: CA's first wait after ``Provisioned=False``."""
MAX_BACKOFF = 600
"""``--provisioning-request-max-backoff-time``: the most CA waits between two tries."""


class Answer(enum.StrEnum):
    """What CA answers to one try at provisioning a request."""

    PROVISION = "provision"
    """``Accepted`` and ``Provisioned=True``."""
    FAIL = "fail"
    """``Accepted`` and ``Failed=True`` ``CapacityIsNotFound``."""
    EXPIRE = "expire"
    """``Accepted``, ``Provisioned=True`` and ``BookingExpired=True``
    ``CapacityReservationTimeExpired`` in one write: the booking ran out before Kueue acted on
    it (with CA's 10-minute booking that needs Kueue to be stalled that long)."""
    NOT_FOUND = "not-found"
    """``Accepted`` and ``Provisioned=False`` ``CapacityIsNotFound``: CA tries again later
    (sampled models only; a script says what each attempt ends with)."""


SCRIPT_ANSWERS = ("provision", "fail", "expire", "revoke")
"""The words of the SCRIPT grammar (``revoke`` is a provision followed by a revocation)."""


@attrs.frozen
class Decision:
    """What CA will do with one request: answer ``answer`` at ``at``, revoke the capacity at
    ``revoke_at`` (a provider's decision; None: never), and keep provisioned capacity booked
    for ``booking_time`` seconds (CA's constant; a provider's class may book longer or shorter)."""

    answer: Answer
    at: Time
    revoke_at: Time | None = None
    booking_time: int = BOOKING_TIME


class ScriptError(KueueProvreqError, ValueError):
    """A SCRIPT that does not parse; the message names the item."""


@attrs.frozen
class ScriptItem:
    """One item of a SCRIPT: ``answer`` given ``after`` seconds after the request's creation
    (for ``revoke``: provisioned at creation, revoked ``after`` seconds after it)."""

    answer: str
    after: int = 0

    def __str__(self) -> str:
        return f"{self.answer}@{format_duration(self.after)}"

    def decision(self, created: Time) -> Decision:
        """The decision this item stands for, for a request created at ``created``."""
        if self.answer == "revoke":
            return Decision(Answer.PROVISION, created, Time(created + self.after))
        return Decision(Answer(self.answer), Time(created + self.after))


def retrying_classes(script: Script, configs: Iterable[ProvisioningRequestConfig]) -> list[str]:
    """A warning per config whose requests a ``fail`` item fails where Cluster Autoscaler would
    not: an upstream class without ``noRetry: "true"`` answers a try without capacity with
    ``Provisioned=False`` and tries again itself (:func:`no_capacity_answer`)."""
    if not any(item.answer == Answer.FAIL for item in script.items):
        return []
    out = []
    for prc in configs:
        spec = prc.spec
        if _no_capacity_answer(spec.provisioning_class_name, spec.parameters) == Answer.NOT_FOUND:
            without = ' without noRetry: "true"' if spec.provisioning_class_name == c.CLASS_CHECK_CAPACITY else ""
            out.append(f"ProvisioningRequestConfig {prc.metadata.name} ({spec.provisioning_class_name}{without}): "
                       "Cluster Autoscaler would answer a try without capacity with Provisioned=False and try "
                       "again itself, not with the Failed=True of fail@")
    return out


@attrs.frozen
class Script:
    """What CA answers to each attempt: item *i* to attempt *i* of every provisioning check,
    the last item to every later attempt."""

    items: tuple[ScriptItem, ...]

    def __str__(self) -> str:
        return ",".join(map(str, self.items))

    def item(self, attempt: int) -> ScriptItem:
        """The item for ``attempt`` (1-based)."""
        return self.items[min(max(attempt, 1), len(self.items)) - 1]

    def decision(self, pr: ProvisioningRequest) -> Decision:
        """The decision for ``pr``: its attempt's item, timed from its creation."""
        return self.item(attempt_of(pr)).decision(pr.metadata.creation_timestamp or Time(0))


PROVISION_AT_ONCE = Script((ScriptItem("provision", 0),))
"""The script without ``--autoscaler``: every attempt is provisioned as soon as it is created."""


def parse_script(text: str) -> Script:
    """A SCRIPT: comma-separated items ``ANSWER[@DURATION]``, ANSWER one of ``provision``,
    ``fail``, ``expire`` or ``revoke``, DURATION a Go duration in whole seconds (default 0s).

    >>> str(parse_script("fail@1m, provision@5m"))
    'fail@1m0s,provision@5m0s'
    >>> parse_script("fail").item(7)
    ScriptItem(answer='fail', after=0)
    >>> parse_script("provison@5m")
    Traceback (most recent call last):
    ...
    kueue_provreq.autoscaler.ScriptError: item 1 'provison@5m': unknown answer 'provison' (expected provision, fail, expire or revoke)
    """
    items = []
    for i, raw in enumerate(text.split(","), 1):
        item = raw.strip()
        answer, _, duration = item.partition("@")
        where = f"item {i} {item!r}"
        if answer not in SCRIPT_ANSWERS:
            expected = ", ".join(SCRIPT_ANSWERS[:-1]) + f" or {SCRIPT_ANSWERS[-1]}"
            what = f"unknown answer {answer!r}" if answer else "empty item"
            raise ScriptError(f"{where}: {what} (expected {expected})")
        after = 0.0
        if duration or item.endswith("@"):
            try:
                after = parse_duration(duration)
            except ValueError as e:
                raise ScriptError(f"{where}: {e}") from None
            if after < 0 or after != int(after):
                raise ScriptError(f"{where}: the delay must be a whole number of seconds, not negative")
        items.append(ScriptItem(answer, int(after)))
    return Script(tuple(items))


def attempt_of(pr: ProvisioningRequest) -> int:
    """The attempt a request stands for, as Kueue's ``getAttempt`` reads it: the number ending
    its name (``wl-check-3`` -> 3), 1 when its name carries none (a hashed long name, whose
    5-character tail may be all digits but is no attempt).

    >>> from kueue_provreq.api.meta import ObjectMeta
    >>> def named(name: str) -> ProvisioningRequest:
    ...     return ProvisioningRequest(ObjectMeta(name=name, namespace="ns"))
    >>> attempt_of(named("wl-check-3")), attempt_of(named("w" * 247 + "-12345"))
    (3, 1)
    """
    name = pr.metadata.name
    tail = name.rsplit("-", 1)[-1]
    hashed = len(name.encode()) > c.OBJECT_NAME_MAX_PREFIX
    return int(tail) if tail.isascii() and tail.isdigit() and not hashed else 1


def ca_backoff(tries: int) -> int:
    """Seconds CA waits after try ``tries`` (1-based) found no capacity before trying again:
    1 min, doubling, at most 10 min.

    >>> [ca_backoff(n) for n in range(1, 7)]
    [60, 120, 240, 480, 600, 600]
    """
    return min(INITIAL_BACKOFF << min(max(tries - 1, 0), 10), MAX_BACKOFF)


def next_look(pr: ProvisioningRequest, now: Time) -> Time | None:
    """When Cluster Autoscaler next decides on a request that already exists at ``now`` (one a
    cluster dump holds): a request it has not answered, at its next loop (now); one it answered
    ``Provisioned=False``, once its backoff since that answer is over, :data:`INITIAL_BACKOFF`
    at the earliest (how many tries came before lives in CA's memory, not in the request);
    None for a request it has answered for good (provisioned, failed, booking over)."""
    phase = provisioning_request_phase(pr)
    if phase not in (RequestPhase.NEW, RequestPhase.ACCEPTED):
        return None
    answered = next((x for x in pr.status.conditions if x.type == c.PR_PROVISIONED and x.status == c.FALSE), None)
    if answered is None or answered.last_transition_time is None:
        return now
    return Time(max(now, answered.last_transition_time + INITIAL_BACKOFF))


def resumed(pr: ProvisioningRequest, decision: Decision, now: Time) -> Decision:
    """``decision`` (timed from the request's creation) for a request that already exists at
    ``now``: an answer whose time has passed without CA giving it comes at CA's
    :func:`next_look` instead (a try is the only time CA answers)."""
    look = next_look(pr, now)
    if look is None or decision.at >= look:
        return decision
    return evolve(decision, at=look)


def no_capacity_answer(pr: ProvisioningRequest) -> Answer:
    """What a try that finds no capacity ends with: check-capacity with ``noRetry: "true"``
    fails; the upstream classes otherwise answer ``Provisioned=False`` and retry; a provider's
    class is assumed to fail (upstream CA never handles it)."""
    return _no_capacity_answer(pr.spec.provisioning_class_name, pr.spec.parameters)


def _no_capacity_answer(class_name: str, parameters: Mapping[str, str] | None) -> Answer:
    if class_name == c.CLASS_CHECK_CAPACITY:
        no_retry = parameters is not None and parameters.get(c.PARAMETER_NO_RETRY) == "true"
        return Answer.FAIL if no_retry else Answer.NOT_FOUND
    if class_name == c.CLASS_BEST_EFFORT_ATOMIC:
        return Answer.NOT_FOUND
    return Answer.FAIL


@attrs.frozen
class Reconciled:
    """What :func:`reconcile` decided: the request as CA leaves it, the conditions it wrote
    (in order), the machine's transitions that decided them, and when CA next has something
    to do with it (None: nothing more)."""

    request: ProvisioningRequest
    written: Conditions
    next_at: Time | None
    transitions: tuple[Transition, ...] = ()


def reconcile(pr: ProvisioningRequest, now: Time, decision: Decision, pods_scheduled: bool = False) -> Reconciled:
    """What CA does to ``pr`` at ``now``, having decided ``decision`` for it.

    ``pods_scheduled``: whether every pod of the request is scheduled on its capacity (the
    booking is then consumed).  Calling it again at the same time changes nothing more, so a
    driver may call it whenever it likes.  Raises ``IllegalTransition`` if the machine refuses
    a move (which would be a bug in this model).
    """
    written: list[Condition] = []
    fired: list[Transition] = []
    conditions = pr.status.conditions
    phase = provisioning_request_phase(pr)
    created = pr.metadata.creation_timestamp or Time(0)
    generation = pr.metadata.generation

    def move(trigger: RequestTrigger, reason: str | None = None, answer: bool = False) -> None:
        """Fire ``trigger`` and write what the declaration says CA writes for it."""
        nonlocal conditions, phase
        target = RequestPhase(PROVISIONING_REQUEST_MACHINE.fire(phase, trigger))
        fired.append(Transition(PROVISIONING_REQUEST_MACHINE.name, phase, trigger, target))
        phase = target
        for type_, status, why, message in ca_writes(trigger, reason, answer):
            cond = Condition(type_, status, why, message, now, generation)
            conditions = tuple(x for x in conditions if x.type != type_) + (cond,)
            written.append(cond)

    next_at: list[int] = []
    if phase in (RequestPhase.NEW, RequestPhase.ACCEPTED):
        if now >= created + EXPIRATION_TIME:
            move(RequestTrigger.FAIL, c.CA_REASON_EXPIRED, answer=True)
        elif _answered_since(conditions, decision.at):
            next_at.append(created + EXPIRATION_TIME)  # answered "not found": a new decision comes
        elif now < decision.at:
            next_at += [decision.at, created + EXPIRATION_TIME]
        elif decision.answer == Answer.NOT_FOUND:
            move(RequestTrigger.NOT_PROVISIONED, answer=True)
        elif decision.answer == Answer.FAIL:
            move(RequestTrigger.FAIL, answer=True)
        else:
            scale_up = pr.spec.provisioning_class_name != c.CLASS_CHECK_CAPACITY
            move(RequestTrigger.PROVISION, c.CA_REASON_CAPACITY_IS_PROVISIONED if scale_up else None, answer=True)
            if decision.answer == Answer.EXPIRE:
                move(RequestTrigger.EXPIRE_BOOKING)
    revoke_at = decision.revoke_at
    if phase in (RequestPhase.PROVISIONED, RequestPhase.BOOKING_EXPIRED) and revoke_at is not None:
        if now >= revoke_at:
            move(RequestTrigger.REVOKE_CAPACITY)
        else:
            next_at.append(revoke_at)
    if phase == RequestPhase.PROVISIONED:
        since = _transition_time(conditions, c.PR_PROVISIONED, now)
        if pods_scheduled:
            move(RequestTrigger.EXPIRE_BOOKING, c.CA_REASON_CAPACITY_BOOKING_CONSUMED)
        elif now >= since + decision.booking_time:
            move(RequestTrigger.EXPIRE_BOOKING)
        else:
            next_at.append(since + decision.booking_time)
    if written:
        pr = evolve(pr, status=evolve(pr.status, conditions=conditions))
    return Reconciled(pr, tuple(written), Time(min(next_at)) if next_at else None, tuple(fired))


def _answered_since(conditions: Conditions, at: Time) -> bool:
    """Whether CA already answered "not found" at or after ``at`` (the decision is used up)."""
    for cond in conditions:
        if cond.type == c.PR_PROVISIONED and cond.status == c.FALSE:
            return cond.last_transition_time is not None and cond.last_transition_time >= at
    return False


def _transition_time(conditions: Conditions, type_: str, default: Time) -> Time:
    for cond in conditions:
        if cond.type == type_ and cond.last_transition_time is not None:
            return cond.last_transition_time
    return default


__all__ = ["BOOKING_TIME", "EXPIRATION_TIME", "INITIAL_BACKOFF", "MAX_BACKOFF", "PROVISION_AT_ONCE",
           "SCRIPT_ANSWERS", "Answer", "Decision", "Reconciled", "Script", "ScriptError",
           "ScriptItem", "attempt_of", "ca_backoff", "next_look", "no_capacity_answer", "parse_script",
           "reconcile", "resumed"]
