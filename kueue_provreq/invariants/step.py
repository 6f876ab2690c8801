"""Step invariants: what every step a driver takes must respect.

Each is ``f(before, after, ctx) -> violations`` over one step (``before`` is the
``World.snapshot()`` the step started from, ``after`` the world it left) and registers itself
with :func:`~kueue_provreq.invariants.registry.step_invariant`.  A step may chain several
reconciles, so these speak of what a step can do, not of single writes (the engine checks
those against the machines in verify mode).  Each docstring states the rule, the upstream
source it encodes (a section of ``kueue-provisioning-controller.md``, PC, of
``kueue-admission-and-requeue.md``, AR, or a KEP) and the exemptions upstream's code makes.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from kueue_provreq.api import constants as c
from kueue_provreq.api.meta import find_condition
from kueue_provreq.api.provisioning import ProvisioningRequest
from kueue_provreq.api.queues import ClusterQueue
from kueue_provreq.api.workload import AdmissionCheckState, Workload
from kueue_provreq.invariants.reading import (
    controlling_workload,
    created_requests,
    evicted_reason,
    name,
    workloads,
    workloads_by_uid,
)
from kueue_provreq.invariants.registry import CheckContext, Snapshot, step_invariant
from kueue_provreq.invariants.upstream import (
    attempt_of,
    eviction_count,
    requests_of,
    retry_deadline,
    retry_strategy,
    waited_for_another_request,
)
from kueue_provreq.machines import (
    ADMISSION_CHECK_MACHINE,
    PROVISIONING_REQUEST_MACHINE,
    WORKLOAD_MACHINE,
    MachineTable,
    RequestPhase,
)
from kueue_provreq.machines.phases import provisioning_request_phase, workload_phase
from kueue_provreq.machines.requests import ENDING_CONDITIONS
from kueue_provreq.world import World


def _reachable(machine: MachineTable[Any, Any]) -> dict[str, frozenset[str]]:
    """For each state, every state some path of declared edges leads to, itself included."""
    reach = {s: {s} for s in machine.states}
    grown = True
    while grown:
        grown = False
        for e in machine.edges:
            if e.target is not None and not reach[e.target] <= reach[e.source]:
                reach[e.source] |= reach[e.target]
                grown = True
    return {s: frozenset(r) for s, r in reach.items()}


_REACH = {m.name: _reachable(m) for m in (WORKLOAD_MACHINE, ADMISSION_CHECK_MACHINE, PROVISIONING_REQUEST_MACHINE)}


@step_invariant()
def transitions_are_declared(before: Snapshot, after: World, ctx: CheckContext) -> list[str]:
    """Every change of a workload phase, a check state or a request phase in a step is a path of
    declared transitions (a step may chain several), and new checks and requests start where
    their machine can start (``machines.declarations``)."""
    old = {o.metadata.uid: o for o in before}
    out = []
    for new in after:
        prev = old.get(new.metadata.uid)
        if isinstance(new, Workload):
            p_old = workload_phase(prev) if isinstance(prev, Workload) else WORKLOAD_MACHINE.initial
            p_new = workload_phase(new)
            if prev is not None and p_new not in _REACH["workload"][p_old]:
                out.append(f"{name(new)}: {p_old} -> {p_new}")
            states = {s.name: s.state for s in prev.status.admission_checks} if isinstance(prev, Workload) else {}
            for s in new.status.admission_checks:
                src = states.get(s.name, ADMISSION_CHECK_MACHINE.initial)
                reach = _REACH["admissioncheck"].get(src)
                if reach is not None and s.state not in reach:  # an undeclared src: states_are_declared
                    out.append(f"{name(new)} check {s.name}: {src} -> {s.state}")
        elif isinstance(new, ProvisioningRequest):
            src = provisioning_request_phase(prev) if isinstance(prev, ProvisioningRequest) else RequestPhase.NEW
            dst = provisioning_request_phase(new)
            if dst not in _REACH["provisioningrequest"][src]:
                out.append(f"request {new.metadata.name}: {src} -> {dst}")
    return out


@step_invariant()
def admitted_only_with_ready_checks(before: Snapshot, after: World, ctx: CheckContext) -> list[str]:
    """A workload becomes Admitted only with a quota reservation and every admission check it must
    carry present and Ready (``HasAllRequiredChecks`` + ``SyncAdmittedCondition``, AR A.3-A.4).
    Upstream skips the Admitted re-sync for admitted workloads, so this is checked when Admitted
    turns True, not in every state."""
    old = workloads_by_uid(before)
    out = []
    for wl in workloads(after):
        prev = old.get(wl.metadata.uid)
        if not wl.is_admitted() or (prev is not None and prev.is_admitted()):
            continue
        not_ready = [s.name for s in wl.status.admission_checks if s.state != c.CHECK_READY]
        adm = wl.status.admission
        cq = after.get(c.CLUSTER_QUEUE, "", adm.cluster_queue) if adm else None
        missing: list[str] = []
        if isinstance(cq, ClusterQueue) and adm is not None:
            used = {f for psa in adm.pod_set_assignments for f in psa.flavors.values()}
            have = {s.name for s in wl.status.admission_checks}
            missing = sorted(n for n, fl in cq.checks_with_flavors().items() if fl & used and n not in have)
        if not wl.has_quota_reservation() or not_ready or missing:
            out.append(f"{name(wl)} admitted with quota={wl.has_quota_reservation()}, "
                       f"checks not Ready {not_ready}, missing {missing}")
    return out


@step_invariant()
def finished_is_final(before: Snapshot, after: World, ctx: CheckContext) -> list[str]:
    """A finished workload never changes state again: Finished has no outgoing transition and no
    controller touches a finished workload's checks (AR A.5: finished workloads return first)."""
    out = []
    for prev in workloads(before):
        if not prev.is_finished():
            continue
        now = after.get(c.WORKLOAD, prev.metadata.namespace, prev.metadata.name)
        if not isinstance(now, Workload) or now.metadata.uid != prev.metadata.uid:
            continue
        if not now.is_finished() or now.status.admission_checks != prev.status.admission_checks:
            out.append(f"finished {name(prev)} changed: phase {workload_phase(now)}")
    return out


@step_invariant()
def attempts_never_decrease(before: Snapshot, after: World, ctx: CheckContext) -> list[str]:
    """A new request's attempt number is above every attempt of that (workload, check) still
    present, and (KEP-3258's semantics) at least ``retryCount+1``: names come from the last
    attempt + 1 or from ``retryCount+1`` (PC §1.7).

    Exemptions, each where upstream restarts the numbering:

    * An eviction that finds the check Ready or Rejected resets its ``retryCount`` to nil
      (``resetChecksOnEviction``, AR A.6), so a check that was Ready when another check's Retry
      or a PodsReady timeout evicted the workload starts again at attempt 1: such a check is not
      compared with older attempts in the step that resets it.
    * A request replaced because the config's class or parameters changed is named
      ``retryCount+1`` again (PC §1.6, §1.7), which under KeepQuotaForProvReqRetry
      (``retryCount`` never grows) restarts the numbering: only requests of the same class and
      parameters are compared.
    * A check whose attempts ran ahead of its ``retryCount``: while another provisioning check
      waits for its request, ``syncCheckStates`` returns early (PC §1.9, C:602-605), so a failed
      attempt leaves its check Pending and PC §1.7 (C:290-298) makes the next one at once,
      without Retry and so without ``retryCount`` growing.  An eviction then deletes the
      requests (PC §1.12), ``resetChecksOnEviction`` leaves the Pending check's ``retryCount``
      as it was (AR A.6), and on the next reservation PC §1.7 (C:284-288) names the attempt
      ``retryCount+1`` again (:func:`_numbering_restarted`)."""
    old_wls = workloads_by_uid(before)
    out = []
    for pr, wl, s, n in _new_attempts(before, after):
        prev = old_wls.get(wl.metadata.uid)
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


def _new_attempts(before: Snapshot, after: World) -> Iterator[tuple[ProvisioningRequest, Workload,
                                                                     AdmissionCheckState, int]]:
    """Each request the step created, with the workload controlling it, the check it is a
    request of, and its attempt number."""
    for pr in created_requests(before, after):
        wl = controlling_workload(after, pr)
        if wl is None:
            continue
        for s in wl.status.admission_checks:
            n = attempt_of(pr, wl.metadata.name, s.name)
            if n is not None:
                yield pr, wl, s, n


def _numbering_restarted(prev: Workload | None, was: AdmissionCheckState | None, wl: Workload,
                         s: AdmissionCheckState, n: int, same: list[tuple[int, ProvisioningRequest]],
                         after: World) -> bool:
    """Whether attempt ``n`` of check ``s`` restarts the numbering the way upstream does after
    attempts made without Retry (:func:`attempts_never_decrease`, third exemption): all of

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
    """Under KEP-3258's semantics a retried attempt (n >= 2) is made only after the workload
    lost its quota and got it back: the failed attempt's check went Retry, the workload was
    evicted and requeued (AR A.6-A.7, KEP-3258).  The reservation must be newer than the
    failure, however the quota went; when the failed request is gone, the eviction's
    ``Evicted=False`` ("Previously: ...") stands for it.  Under KeepQuotaForProvReqRetry the next
    attempt is made in a step the workload enters and leaves with the same, unbroken
    reservation (PC §5 v0.9).

    Exemptions:

    * While another provisioning check waits for its request, ``syncCheckStates`` returns early
      (PC §1.9), the failed check stays Pending and PC §1.7 makes the next attempt with the
      quota held (:func:`~kueue_provreq.invariants.upstream.waited_for_another_request`).
    * Under KeepQuotaForProvReqRetry, a workload that entered the step without quota, not
      evicted for an admission check: the controller ignores a workload without quota (PC
      §1.2), so a failure that happened, or was still waiting out its backoff, while the quota
      was gone without an eviction (UnsetQuotaReservation keeps the requests, PC §1.12) is acted
      on with the next reservation, in the step that makes it once the backoff has passed
      (:func:`_no_quota_to_keep`)."""
    if not ctx.current:
        return []
    old_wls = workloads_by_uid(before)
    out = []
    for _, wl, s, n in _new_attempts(before, after):
        if n < 2:
            continue
        prev = {m: old for m, old in requests_of(before, wl, s.name)}.get(n - 1)
        failed_at = None
        if prev is not None:
            for t in ENDING_CONDITIONS:
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
            out.append(f"{name(wl)} check {s.name}: attempt {n} created without releasing the quota")
    return out


def _no_quota_to_keep(held: Workload | None, wl: Workload) -> bool:
    """Under KeepQuotaForProvReqRetry: whether the workload began the step without a reservation
    (so there was none to keep) that it had not lost to an admission check eviction, and holds
    one now.  An eviction for an admission check never happens under the gate
    (:func:`~kueue_provreq.invariants.state.keep_quota_never_evicts_for_retry`); were it the way
    the quota went, a next attempt made with the following reservation would be the default
    strategy's retry, and is still reported."""
    return held is not None and not held.has_quota_reservation() and \
        evicted_reason(held) != c.REASON_ADMISSION_CHECK and wl.has_quota_reservation()


@step_invariant()
def no_request_after_rejection(before: Snapshot, after: World, ctx: CheckContext) -> list[str]:
    """Once a check is Rejected, or the workload deactivated, no further attempt is made for it
    (a deactivated workload is evicted and its requests deleted, AR A.8), and (KEP-3258's
    semantics) no attempt beyond ``backoffLimitCount + 1`` is ever made, since the failure of
    that one rejects (PC §1.13).  The bound is the larger of the current limit and the check's
    ``retryCount``, which counts retries made under an older, larger limit.

    Exemptions:

    * PC §1.7 skips only Ready checks, so a Rejected check whose request a config change
      replaced while it waited to be acted on gets the same attempt number again: only an
      attempt above every existing one counts as a further attempt.
    * A step in which a user deactivated or reactivated the workload is not judged: a request
      made while it was active within the step is legitimate (AR A.8 step 5).
    * While another provisioning check waits for its request, ``syncCheckStates`` writes
      nothing, the failed check stays Pending and PC §1.7 makes the next attempt whatever the
      limit (:func:`~kueue_provreq.invariants.upstream.waited_for_another_request`)."""
    old = workloads_by_uid(before)
    out = []
    for pr in created_requests(before, after):
        wl = controlling_workload(after, pr)
        prev = old.get(wl.metadata.uid) if wl is not None else None
        if wl is None or prev is None or prev.is_active != wl.is_active:
            continue
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


_RESET_FROM_REJECTED = c.MSG_RESET_CHECK.format(state=c.CHECK_REJECTED)


@step_invariant("settled")
def rejection_deactivates(before: Snapshot, after: World, ctx: CheckContext) -> list[str]:
    """When a step rejects a check of a workload holding quota, it ends deactivated
    (``spec.active=false``) with Evicted reason ``DeactivatedDueToAdmissionCheck``, without quota,
    and without requests where an eviction deletes them (AR A.8, PC §1.12).  The rejection shows
    in the settled world as the check's "Reset to Pending after eviction. Previously: Rejected"
    message.

    Exemption: the Evicted reason is plain ``Deactivated`` when a user deactivated the workload
    after the rejection but before the workload controller acted on it.  The controller sets
    DeactivationTarget only past its backoff gate, so a check rejected during a Retry's
    ``requeueAt`` wait has none yet, and the inactive branch then evicts as for a manual
    deactivation (AR A.7, A.8 step 3).  Exempt exactly when the check was already Rejected, on an
    active workload without DeactivationTarget, when the step began
    (:func:`_rejected_before_the_user_deactivated`)."""
    old = workloads_by_uid(before)
    out = []
    for wl in workloads(after):
        prev = old.get(wl.metadata.uid)
        fresh = [s.name for s in wl.status.admission_checks
                 if s.message == _RESET_FROM_REJECTED and
                 (prev is None or prev.check_state(s.name) != s)]
        if not fresh or wl.is_finished():
            continue
        reason = evicted_reason(wl)
        prs = [pr.metadata.name for pr in after.owned_by_name(
            c.PROVISIONING_REQUEST, wl.metadata.namespace, wl.metadata.name)]
        want = c.REASON_DEACTIVATED_DUE_TO + c.REASON_ADMISSION_CHECK
        if reason == c.REASON_DEACTIVATED and _rejected_before_the_user_deactivated(prev, fresh):
            want = c.REASON_DEACTIVATED
        if wl.is_active or reason != want or \
                wl.has_quota_reservation() or (prs and ctx.eviction_deletes_requests):
            out.append(f"{name(wl)} rejected by {fresh} ended active={wl.is_active}, evicted={reason}, "
                       f"quota={wl.has_quota_reservation()}, requests={prs}")
    return out


def _rejected_before_the_user_deactivated(prev: Workload | None, checks: list[str]) -> bool:
    """Whether ``checks`` were all Rejected already, on an active workload the workload controller
    had not yet marked with DeactivationTarget, when the step began: the deactivation in the step
    is then the user's (:func:`rejection_deactivates`' exemption)."""
    if prev is None or not prev.is_active:
        return False
    target = prev.condition(c.WORKLOAD_DEACTIVATION_TARGET)
    if target is not None and target.status == c.TRUE:
        return False
    states = [prev.check_state(n) for n in checks]
    return all(st is not None and st.state == c.CHECK_REJECTED for st in states)


@step_invariant()
def pods_ready_limit_deactivates(before: Snapshot, after: World, ctx: CheckContext) -> list[str]:
    """PodsReady timeouts requeue the workload ``backoffLimitCount`` times; the next one
    deactivates it with Evicted reason ``DeactivatedDueToRequeuingLimitExceeded`` and clears
    ``requeueState`` (AR B.3-B.4, KEP-1282)."""
    w = ctx.config.wait_for_pods_ready
    limit = w.requeuing_strategy.backoff_limit_count if w else None
    old = workloads_by_uid(before)
    out = []
    for wl in workloads(after):
        prev = old.get(wl.metadata.uid)
        reason = evicted_reason(wl)
        if prev is None or reason is None or evicted_reason(prev) == reason:
            continue
        count = wl.status.requeue_state.count if wl.status.requeue_state else None
        if reason == c.REASON_PODS_READY_TIMEOUT and limit is not None and ctx.current \
                and (count or 0) > limit:
            out.append(f"{name(wl)} requeued after timeout {count} > limit {limit}")
        if reason == c.REASON_DEACTIVATED_DUE_TO + c.REASON_REQUEUING_LIMIT_EXCEEDED and \
                (wl.is_active or wl.status.requeue_state is not None):
            out.append(f"{name(wl)} over the requeuing limit but active={wl.is_active}, "
                       f"requeueState={wl.status.requeue_state}")
    return out


@step_invariant()
def no_early_requeue(before: Snapshot, after: World, ctx: CheckContext) -> list[str]:
    """A workload in backoff gets quota again no earlier than ``requeueState.requeueAt``, and an
    admission check eviction happens no earlier than the Retry deadline recorded there (AR A.7,
    B.5: ``backoffWaitingTimeExpired``) -- the retry delay is honoured to the second, not sooner."""
    old = workloads_by_uid(before)
    out = []
    for wl in workloads(after):
        prev = old.get(wl.metadata.uid)
        if prev is None:
            continue
        rs = prev.status.requeue_state
        at = rs.requeue_at if rs is not None else None
        if wl.has_quota_reservation() and not prev.has_quota_reservation() and at is not None and ctx.now < at:
            out.append(f"{name(wl)} got quota at {ctx.now}, before requeueAt {at}")
        if ctx.retry_releases_quota and evicted_reason(wl) == c.REASON_ADMISSION_CHECK and \
                evicted_reason(prev) != c.REASON_ADMISSION_CHECK:
            dues = [t for t in map(retry_deadline, prev.status.admission_checks) if t is not None]
            if dues and ctx.now < max(dues):
                out.append(f"{name(wl)} evicted at {ctx.now}, before its Retry deadline {max(dues)}")
    return out
