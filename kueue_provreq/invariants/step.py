"""Step invariants: what every step a driver takes must respect.

Each is ``f(before, after, ctx) -> violations`` over one step (``before`` is the
``World.snapshot()`` the step started from, ``after`` the world it left) and registers itself
with :func:`~kueue_provreq.invariants.registry.step_invariant`.  A step may chain several
reconciles, so these speak of what a step can do, not of single writes (the engine checks
those as they happen).  Each docstring states the rule and the upstream source it encodes: a
section of ``kueue-provisioning-controller.md`` (PC), of ``kueue-admission-and-requeue.md``
(AR), or a KEP.
"""

from __future__ import annotations

from typing import Any

from kueue_provreq.api import constants as c
from kueue_provreq.api.provisioning import ProvisioningRequest
from kueue_provreq.api.queues import ClusterQueue
from kueue_provreq.api.workload import Workload
from kueue_provreq.invariants.reading import (
    evicted_reason,
    name,
    workloads,
    workloads_by_uid,
)
from kueue_provreq.invariants.registry import CheckContext, Snapshot, step_invariant
from kueue_provreq.invariants.upstream import (
    retry_deadline,
)
from kueue_provreq.machines import (
    ADMISSION_CHECK_MACHINE,
    PROVISIONING_REQUEST_MACHINE,
    WORKLOAD_MACHINE,
    MachineTable,
    RequestPhase,
)
from kueue_provreq.machines.phases import provisioning_request_phase, workload_phase
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
