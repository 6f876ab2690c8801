"""The properties every run must keep, as code: named predicates over a world or over a step.

A *state invariant* is ``f(world, ctx) -> violations`` and must hold in every
state a driver reaches; a *transition invariant* is
``f(before, after, ctx) -> violations`` over one step (``before`` is a
``World.snapshot()``, ``after`` the world the step left).  Some properties are
only meaningful once the controllers have caught up (``settled``: another
settle at the same clock would change nothing) or once nothing is scheduled
any more (``quiescent``: settled, and no reconcile asked to be woken later);
the driver says which of those hold through :class:`CheckContext`.

Each predicate's docstring names the upstream behaviour (spec section of
``kueue-provisioning-controller.md`` = PC, ``kueue-admission-and-requeue.md`` =
AR, or a KEP) it encodes.  The stateful tests, the explorer and anyone
replaying a trace call :func:`check_state` / :func:`check_step`.

This module imports no controller on purpose: the formulas and upstream predicates the
properties need (the backoff delay, attempt numbers, ``reqIsNeeded``, "in sync with the
config") are written here again from the spec, so that a controller's mistake is not
mirrored by the check meant to catch it.
"""

from __future__ import annotations

from kueue_provreq.api import constants as c
from kueue_provreq.api.meta import find_condition
from kueue_provreq.api.provisioning import (
    ProvisioningRequest,
)
from kueue_provreq.api.workload import AdmissionCheckState, Workload
from kueue_provreq.invariants.reading import (
    controlling_workload,
    created_requests,
    evicted_reason,
    name,
    workloads_by_uid,
)
from kueue_provreq.invariants.registry import (
    CURRENT,
    PRE_KEP_3258,
    STATE_INVARIANTS,
    STEP_INVARIANTS,
    CheckContext,
    Invariant,
    Snapshot,
    check_state,
    check_step,
    step_invariant,
)
from kueue_provreq.invariants.state import (
    admission_matches_reservation,
    admitted_only_with_quota,
    attempts_within_backoff_limit,
    cluster_queue_within_nominal_quota,
    finished_has_no_requests,
    keep_quota_never_evicts_for_retry,
    no_stuck_workload,
    one_live_request_per_check,
    pods_ready_count_within_limit,
    pods_ready_timeout_enforced,
    rejected_check_deactivates,
    requests_and_templates_owned,
    retry_delay_is_exponential,
    retry_not_overdue,
    single_request_per_check,
    states_are_declared,
)
from kueue_provreq.invariants.step import (
    admitted_only_with_ready_checks,
    finished_is_final,
    no_early_requeue,
    pods_ready_limit_deactivates,
    rejection_deactivates,
    transitions_are_declared,
)
from kueue_provreq.invariants.upstream import (
    attempt_of,
    eviction_count,
    nominal_retry_delay,
    requests_of,
    retry_strategy,
    waited_for_another_request,
)
from kueue_provreq.machines import (
    requests,
)
from kueue_provreq.world import World

# --- reading a world ---------------------------------------------------------------------------


# --- state invariants ------------------------------------------------------------------------------


# --- transition invariants ---------------------------------------------------------------------------


@step_invariant()
def attempts_never_decrease(before: Snapshot, after: World, ctx: CheckContext) -> list[str]:
    """A new request's attempt suffix is above every attempt of that (workload, check) still
    present, and (current semantics) at least ``retryCount+1``: names come from the last
    attempt + 1 or from ``retryCount+1`` (PC §1.7).

    Upstream resets ``retryCount`` to nil when an eviction finds the check Ready or Rejected
    (``resetChecksOnEviction``, AR A.6), so a check that was Ready when another check's Retry
    or a PodsReady timeout evicted the workload starts again at attempt 1 -- the explorer found
    this in the two-check world.  Such a check is exempt from the comparison with older attempts
    in the step that resets it.  Likewise a request replaced because the config's class or
    parameters changed is named ``retryCount+1`` again, which under KeepQuotaForProvReqRetry
    (retryCount never grows) restarts the numbering and the backoff budget -- found by the
    stateful tests; only requests of the same class and parameters are compared.

    Third exemption, for a check whose attempts ran ahead of its ``retryCount``: with several
    provisioning checks, syncCheckStates returns early while another check has no request
    (PC §1.9, C:602-605), so a failed attempt leaves its check Pending and PC §1.7 (C:290-298)
    makes the next one at once, without Retry and so without ``retryCount`` growing
    (KeepQuotaForProvReqRetry does the same by design).  An eviction then deletes the requests
    (CleanupProvisioningRequestsOnEviction, PC §1.12), ``resetChecksOnEviction`` leaves the
    Pending check's ``retryCount`` as it was (AR A.6), and on the next reservation PC §1.7
    (C:284-288) names the attempt ``retryCount+1`` again: "created attempt 1 after [2],
    retryCount None", found by the 10,000-example run.  See ``_numbering_restarted`` for the
    exact conditions; any other decrease is still reported."""
    old_wls = workloads_by_uid(before)
    out = []
    for pr in created_requests(before, after):
        wl = controlling_workload(after, pr)
        if wl is None:
            continue
        prev = old_wls.get(wl.metadata.uid)
        for s in wl.status.admission_checks:
            n = attempt_of(pr, wl.metadata.name, s.name)
            if n is None:
                continue
            was = prev.check_state(s.name) if prev is not None else None
            reset = was is not None and was.state in (c.CHECK_READY, c.CHECK_REJECTED)
            same = [(m, old) for m, old in requests_of(before, wl, s.name)
                    if old.metadata.uid != pr.metadata.uid and old.spec.provisioning_class_name
                    == pr.spec.provisioning_class_name and old.spec.parameters == pr.spec.parameters]
            older = [] if reset else [m for m, _ in same]
            floor = (s.retry_count or 0) + 1 if ctx.current else 1
            if older and n < max(older) and _numbering_restarted(prev, was, wl, s, n, same, after):
                older = []
            if (older and n < max(older)) or n < floor:
                out.append(f"{name(wl)} check {s.name}: created attempt {n} after {older}, retryCount {s.retry_count}")
    return out


def _numbering_restarted(prev: Workload | None, was: AdmissionCheckState | None, wl: Workload,
                         s: AdmissionCheckState, n: int, same: list[tuple[int, ProvisioningRequest]],
                         after: World) -> bool:
    """Whether attempt ``n`` of check ``s`` restarts the numbering the way upstream does after
    attempts made without Retry (``attempts_never_decrease``, third exemption): all of

    * before the step the check's attempts had already run ahead of its ``retryCount`` (an
      attempt of the same class and parameters above ``retryCount+1``) -- the trace of attempts
      made while the check stayed Pending; without it a decrease has no upstream explanation;
    * the workload was evicted in this step (its eviction count grew), which is what deletes
      the requests and leaves a Pending check's ``retryCount`` untouched;
    * none of those older requests is left: a surviving one would be the active request and
      the next attempt would be named after it;
    * the new attempt is exactly ``retryCount+1``, the name PC §1.7 gives without a request."""
    if prev is None or not same:
        return False
    ran_ahead = max(m for m, _ in same) > ((was.retry_count if was is not None else None) or 0) + 1
    evicted = eviction_count(wl) > eviction_count(prev)
    left = any(_still_there(after, old) for _, old in same)
    return ran_ahead and evicted and not left and n == (s.retry_count or 0) + 1


def _still_there(after: World, pr: ProvisioningRequest) -> bool:
    now = after.get(c.PROVISIONING_REQUEST, pr.metadata.namespace, pr.metadata.name)
    return now is not None and now.metadata.uid == pr.metadata.uid


@step_invariant()
def retry_moves_the_quota(before: Snapshot, after: World, ctx: CheckContext) -> list[str]:
    """Under the default semantics a retried attempt (n >= 2) is made only after the workload lost
    its quota and got it back: normally the failed attempt's check went Retry, the workload was
    evicted and requeued (AR A.6-A.7, KEP-3258); with several provisioning checks the check may
    skip Retry (syncCheckStates returns early while another check has no request, PC §1.9) and the
    next attempt is then made with the quota it holds (see ``waited_for_another_request``).  Under
    KeepQuotaForProvReqRetry the next attempt is made in a step the workload enters and leaves
    with the same, unbroken reservation (PC §5 v0.9) -- unless it entered the step without quota,
    not evicted for an admission check: the controller ignores a workload without quota (PC
    §1.2), so a failure that happened or was still waiting out its backoff while the quota was
    gone without an eviction (a test's UnsetQuotaReservation keeps the requests, PC §1.12) is
    acted on with the next reservation, in the step that makes it if the backoff has passed
    (found by the 10,000-example run; ``_no_quota_to_keep``)."""
    if not ctx.current:
        return []
    old_wls = workloads_by_uid(before)
    out = []
    for pr in created_requests(before, after):
        wl = controlling_workload(after, pr)
        if wl is None:
            continue
        for s in wl.status.admission_checks:
            n = attempt_of(pr, wl.metadata.name, s.name)
            if n is None or n < 2:
                continue
            prev = {m: old for m, old in requests_of(before, wl, s.name)}.get(n - 1)
            failed_at = None
            if prev is not None:
                for t in requests.ENDING_CONDITIONS:
                    cond = find_condition(prev.status.conditions, t)
                    if cond is not None and cond.status == c.TRUE:
                        failed_at = cond.last_transition_time
            qr = wl.condition(c.WORKLOAD_QUOTA_RESERVED)
            reserved_at = qr.last_transition_time if qr is not None else None
            ev = wl.condition(c.WORKLOAD_EVICTED)
            if ctx.keep_quota:
                held = old_wls.get(wl.metadata.uid)
                qr_before = held.condition(c.WORKLOAD_QUOTA_RESERVED) if held is not None else None
                if (qr_before is None or qr_before.status != c.TRUE or qr != qr_before) and \
                        not _no_quota_to_keep(held, wl):
                    out.append(f"{name(wl)} check {s.name}: attempt {n} without keeping the quota")
            elif not (failed_at is not None and reserved_at is not None and reserved_at >= failed_at) and \
                    not (failed_at is None and ev is not None and ev.status == c.FALSE) and \
                    not waited_for_another_request(before, after, old_wls.get(wl.metadata.uid), wl, s.name):
                # the reservation must be newer than the failure (however the quota was lost: an
                # eviction, or a test's UnsetQuotaReservation); without the failed request, the
                # eviction's Evicted=False "Previously: ..." is the evidence
                out.append(f"{name(wl)} check {s.name}: attempt {n} created without releasing the quota")
    return out


def _no_quota_to_keep(held: Workload | None, wl: Workload) -> bool:
    """Under KeepQuotaForProvReqRetry: whether the workload began the step without a reservation
    (so there was none to keep) that it had not lost to an admission check eviction, and holds
    one now.  An eviction for an admission check never happens under the gate
    (``keep_quota_never_evicts_for_retry``); were it the way the quota went, a next attempt made
    with the following reservation would be the default strategy's retry, and is still reported."""
    return held is not None and not held.has_quota_reservation() and \
        evicted_reason(held) != c.REASON_ADMISSION_CHECK and wl.has_quota_reservation()


@step_invariant()
def no_request_after_rejection(before: Snapshot, after: World, ctx: CheckContext) -> list[str]:
    """Once a check is Rejected, or the workload deactivated, no further attempt is made for it
    (a deactivated workload is evicted and its requests deleted, AR A.8; PC §1.7 skips only Ready
    checks, so a Rejected check whose request a config change replaced during the requeueAt wait
    gets the same attempt again -- found by the stateful tests); and no attempt beyond ``backoffLimitCount + 1``
    is ever made, since the failure of that one rejects (PC §1.13).  The bound is the larger of
    the current limit and the check's ``retryCount``, which counts retries made under an older,
    larger limit.  Upstream's own exception: while another provisioning check has no request,
    syncCheckStates writes nothing, the failed check stays Pending and PC §1.7 creates the next
    attempt whatever the limit (found by the 10,000-example run; ``waited_for_another_request``)."""
    old = workloads_by_uid(before)
    out = []
    for pr in created_requests(before, after):
        wl = controlling_workload(after, pr)
        prev = old.get(wl.metadata.uid) if wl is not None else None
        if wl is None or prev is None or prev.is_active != wl.is_active:
            continue  # a user (re)activated the workload in this very step
        for s in wl.status.admission_checks:
            n = attempt_of(pr, wl.metadata.name, s.name)
            rs = retry_strategy(after, s.name)
            if ctx.current and n is not None and rs is not None and \
                    n > max(rs.backoff_limit_count, s.retry_count or 0) + 1 and \
                    not waited_for_another_request(before, after, prev, wl, s.name):
                out.append(f"request {pr.metadata.name}: attempt {n} beyond limit {rs.backoff_limit_count}")
        if not prev.is_active:
            out.append(f"request {pr.metadata.name} created for deactivated {name(prev)}")
        for s in prev.status.admission_checks:
            n = attempt_of(pr, prev.metadata.name, s.name)
            older = [m for m, _ in requests_of(before, prev, s.name)]
            if s.state == c.CHECK_REJECTED and n is not None and older and n > max(older):
                out.append(f"request {pr.metadata.name} created for Rejected check {s.name}")
    return out


__all__ = ["CURRENT", "CheckContext", "Invariant", "PRE_KEP_3258", "STATE_INVARIANTS", "STEP_INVARIANTS", "Snapshot", "attempt_of", "check_state", "check_step", "nominal_retry_delay", "requests_of", "admission_matches_reservation", "admitted_only_with_quota", "attempts_within_backoff_limit", "cluster_queue_within_nominal_quota", "finished_has_no_requests", "keep_quota_never_evicts_for_retry", "no_stuck_workload", "one_live_request_per_check", "pods_ready_count_within_limit", "pods_ready_timeout_enforced", "rejected_check_deactivates", "requests_and_templates_owned", "retry_delay_is_exponential", "retry_not_overdue", "single_request_per_check", "states_are_declared", "admitted_only_with_ready_checks", "finished_is_final", "no_early_requeue", "pods_ready_limit_deactivates", "rejection_deactivates", "transitions_are_declared"]
