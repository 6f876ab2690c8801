"""State invariants: what every state a driver reaches must show.

Each is ``f(world, ctx) -> violations`` and registers itself with
:func:`~kueue_provreq.invariants.registry.state_invariant`, saying whether it holds in every
state, once the controllers have settled, or once nothing is scheduled any more.  Its docstring
states the rule, the upstream source it encodes (a section of
``kueue-provisioning-controller.md``, PC, of ``kueue-admission-and-requeue.md``, AR, or a KEP)
and the exemptions upstream's code makes.
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal

from kueue_provreq.api import constants as c
from kueue_provreq.api.provisioning import PodTemplate, ProvisioningRequest, RetryStrategy
from kueue_provreq.api.queues import ClusterQueue
from kueue_provreq.api.workload import AdmissionCheckState, Workload
from kueue_provreq.invariants.reading import evicted_reason, name, workloads
from kueue_provreq.invariants.registry import CheckContext, state_invariant
from kueue_provreq.invariants.upstream import (
    nominal_retry_delay,
    requests_of,
    retry_deadline,
    retry_strategy,
    waits_for_another_request,
)
from kueue_provreq.machines import ADMISSION_CHECK_MACHINE
from kueue_provreq.machines.phases import provisioning_request_phase
from kueue_provreq.machines.requests import ENDING_PHASES
from kueue_provreq.world import World


def _checks_with_requests(world: World) -> Iterator[
        tuple[Workload, AdmissionCheckState, RetryStrategy, list[tuple[int, ProvisioningRequest]]]]:
    """Each check with a config and at least one request, with its retryStrategy and its
    requests by attempt, oldest first."""
    for wl in workloads(world):
        for s in wl.status.admission_checks:
            rs = retry_strategy(world, s.name)
            prs = requests_of(world, wl, s.name)
            if rs is not None and prs:
                yield wl, s, rs, prs


@state_invariant()
def admitted_only_with_quota(world: World, ctx: CheckContext) -> list[str]:
    """A workload without a quota reservation never has Admitted=True: ``SyncAdmittedCondition``
    writes Admitted=True only with QuotaReserved=True, and every ``UnsetQuotaReservation`` re-syncs
    Admitted in the same patch (AR A.4, KEP-993)."""
    return [f"{name(wl)} is Admitted without QuotaReserved=True"
            for wl in workloads(world)
            if wl.is_admitted() and not wl.has_quota_reservation()]


@state_invariant()
def admission_matches_reservation(world: World, ctx: CheckContext) -> list[str]:
    """``status.admission`` is set exactly while QuotaReserved=True: ``SetQuotaReservation`` and
    ``UnsetQuotaReservationWithCondition`` write both in one patch (AR A.3, A.6)."""
    return [f"{name(wl)}: QuotaReserved={wl.has_quota_reservation()} but admission "
            f"{'present' if wl.status.admission else 'absent'}"
            for wl in workloads(world)
            if wl.has_quota_reservation() != (wl.status.admission is not None)]


@state_invariant()
def cluster_queue_within_nominal_quota(world: World, ctx: CheckContext) -> list[str]:
    """The usage of a ClusterQueue outside a cohort (the sum of ``resourceUsage`` of every workload
    holding quota in it, per flavor and resource) never exceeds its nominal quota: it has nobody
    to borrow from (AR A.3, A.10: reserved quota counts in the ClusterQueue's usage); a queue in
    a cohort is judged by :func:`~kueue_provreq.invariants.cohorts.cohort_quota_within_limits`.
    A finished workload keeps QuotaReserved=True but no longer counts: Kueue's cache drops it.
    Under KEP-993 a reservation may count on preemptions not issued yet ("assuming that
    necessary preemptions will happen"), so only ``running_within_nominal_quota`` holds there."""
    if ctx.config.kep_993_preemption:
        return []
    usage: dict[tuple[str, str, str], Decimal] = {}
    for wl in workloads(world):
        adm = wl.status.admission
        if not wl.has_quota_reservation() or adm is None or wl.is_finished():
            continue
        for psa in adm.pod_set_assignments:
            for res, q in psa.resource_usage.items():
                key = (adm.cluster_queue, psa.flavors.get(res, ""), res)
                usage[key] = usage.get(key, Decimal(0)) + q.value
    out = []
    for (cq_name, flavor, res), used in sorted(usage.items()):
        cq = world.get(c.CLUSTER_QUEUE, "", cq_name)
        nominal = Decimal(0)
        if isinstance(cq, ClusterQueue) and cq.spec.cohort_name:
            continue
        if isinstance(cq, ClusterQueue):
            for g in cq.spec.resource_groups:
                for f in g.flavors:
                    if f.name == flavor:
                        nominal += sum((r.nominal_quota.value for r in f.resources if r.name == res), Decimal(0))
        if used > nominal:
            out.append(f"ClusterQueue {cq_name} uses {used} {res} of flavor {flavor!r}, nominal {nominal}")
    return out


@state_invariant()
def states_are_declared(world: World, ctx: CheckContext) -> list[str]:
    """Every admission check state is a state of the declared admission-check machine
    (``machines.declarations``; KEP-993: Pending, Ready, Retry, Rejected)."""
    return [f"{name(wl)}: check {s.name} in undeclared state {s.state!r}"
            for wl in workloads(world) for s in wl.status.admission_checks
            if s.state not in ADMISSION_CHECK_MACHINE.states]


@state_invariant()
def one_live_request_per_check(world: World, ctx: CheckContext) -> list[str]:
    """At most one ProvisioningRequest per (workload, check) is live (not Failed or
    BookingExpired): a new attempt is created only for a failed or expired one, and unused requests
    are deleted before anything is created (PC §1.6, §1.7)."""
    out = []
    for wl in workloads(world):
        for s in wl.status.admission_checks:
            live = [pr.metadata.name for _, pr in requests_of(world, wl, s.name)
                    if provisioning_request_phase(pr) not in ENDING_PHASES]
            if len(live) > 1:
                out.append(f"{name(wl)} check {s.name}: live requests {live}")
    return out


@state_invariant()
def requests_and_templates_owned(world: World, ctx: CheckContext) -> list[str]:
    """Every ProvisioningRequest is controlled by an existing Workload and every PodTemplate by an
    existing ProvisioningRequest or Workload (PC §1.7: controller refs, ownership transfer), so
    deleting a workload garbage-collects every request and template made for it."""
    uids = {o.metadata.uid: o for o in world}
    out = []
    for o in world:
        if not isinstance(o, (ProvisioningRequest, PodTemplate)):
            continue
        ref = o.metadata.controller_ref()
        owner = uids.get(ref.uid) if ref is not None else None
        kinds = (c.WORKLOAD,) if isinstance(o, ProvisioningRequest) else (c.WORKLOAD, c.PROVISIONING_REQUEST)
        if owner is None or owner.KIND not in kinds or owner.metadata.name != (ref.name if ref else ""):
            out.append(f"{o.KIND} {o.metadata.namespace}/{o.metadata.name} has no live controlling owner")
    return out


@state_invariant()
def keep_quota_never_evicts_for_retry(world: World, ctx: CheckContext) -> list[str]:
    """Under KeepQuotaForProvReqRetry a failed attempt keeps the check Pending and the quota (the
    ``keep_quota`` guard of ``request_failed``; PC §5 v0.9): no check is ever in Retry and no
    workload is evicted for an admission check."""
    if not ctx.keep_quota or not ctx.current:
        return []
    out: list[str] = []
    for wl in workloads(world):
        out.extend(f"{name(wl)}: check {s.name} in Retry under KeepQuotaForProvReqRetry"
                   for s in wl.status.admission_checks if s.state == c.CHECK_RETRY)
        if evicted_reason(wl) == c.REASON_ADMISSION_CHECK:
            out.append(f"{name(wl)} evicted for an admission check under KeepQuotaForProvReqRetry")
    return out


@state_invariant()
def pods_ready_count_within_limit(world: World, ctx: CheckContext) -> list[str]:
    """``requeueState.count`` counts PodsReady-timeout evictions and never exceeds
    ``waitForPodsReady.requeuingStrategy.backoffLimitCount``: the timeout that would exceed it
    deactivates instead (AR B.3, B.4).  Before KEP-3258 the count was shared with admission check
    retries, so this holds for the current semantics only."""
    w = ctx.config.wait_for_pods_ready
    limit = w.requeuing_strategy.backoff_limit_count if w else None
    if limit is None or not ctx.current:
        return []
    return [f"{name(wl)}: requeueState.count {wl.status.requeue_state.count} > limit {limit}"
            for wl in workloads(world)
            if wl.status.requeue_state is not None and (wl.status.requeue_state.count or 0) > limit]


@state_invariant("settled")
def retry_delay_is_exponential(world: World, ctx: CheckContext) -> list[str]:
    """A check in Retry asks for ``requeueAfterSeconds = min(base*2^(n-1), max)`` with
    ``n = retryCount+1``, the first step uncapped, to the second (the jitter is below 1e-4 and is
    truncated away below 10000 s; PC §1.13, KEP-3258).  The delay is recomputed on every
    reconcile while the failed request exists (PC §1.9), so once settled it follows the current
    retryStrategy.

    Exemption: while another provisioning check of the workload needs a request and has none in
    sync with its config, ``syncCheckStates`` returns before writing any state (PC §1.9,
    C:602-605), and the check keeps the delay it entered Retry with
    (:func:`~kueue_provreq.invariants.upstream.waits_for_another_request`)."""
    if not ctx.current:
        return []
    out = []
    for wl, s, rs, prs in _checks_with_requests(world):
        if s.state != c.CHECK_RETRY or s.requeue_after_seconds is None or \
                provisioning_request_phase(prs[-1][1]) not in ENDING_PHASES:
            continue  # without its failed request the check is not re-evaluated (PC §1.14)
        if waits_for_another_request(world, wl, s.name):
            continue
        want = nominal_retry_delay((s.retry_count or 0) + 1, rs.backoff_base_seconds, rs.backoff_max_seconds)
        if want < 10_000 and s.requeue_after_seconds != want:
            out.append(f"{name(wl)} check {s.name}: requeueAfterSeconds {s.requeue_after_seconds}, "
                       f"want {want} (attempt {(s.retry_count or 0) + 1})")
    return out


@state_invariant("settled")
def retry_not_overdue(world: World, ctx: CheckContext) -> list[str]:
    """Once ``lastTransitionTime + requeueAfterSeconds`` of a Retry check has passed, a workload
    holding quota is evicted: the workload controller waits for ``requeueAt``, then
    ``reconcileCheckBasedEviction`` evicts (AR A.7, as coded).  The delay is honoured to the
    second, not later.

    Exemption: ``SetRequeueState`` moves ``requeueAt`` forward only (AR A.7), so while the
    ``requeueAt`` recorded for a longer delay lies ahead, a Retry whose delay a config change
    shortened still waits for it."""
    if not ctx.retry_releases_quota:
        return []
    out = []
    for wl in workloads(world):
        if not wl.has_quota_reservation() or wl.is_evicted() or wl.is_finished():
            continue
        rs = wl.status.requeue_state
        if rs is not None and rs.requeue_at is not None and rs.requeue_at > ctx.now:
            continue
        for s in wl.status.admission_checks:
            due = retry_deadline(s)
            if s.state == c.CHECK_RETRY and (due is None or due <= ctx.now):
                out.append(f"{name(wl)} still holds quota with check {s.name} in Retry due at {due}")
    return out


@state_invariant("settled")
def single_request_per_check(world: World, ctx: CheckContext) -> list[str]:
    """Once settled, a (workload, check) has at most one ProvisioningRequest: older attempts and
    requests out of sync with the config are deleted (PC §1.6)."""
    out = []
    for wl in workloads(world):
        for s in wl.status.admission_checks:
            prs = [pr.metadata.name for _, pr in requests_of(world, wl, s.name)]
            if len(prs) > 1:
                out.append(f"{name(wl)} check {s.name}: requests {prs}")
    return out


@state_invariant("settled")
def finished_has_no_requests(world: World, ctx: CheckContext) -> list[str]:
    """A finished workload owns no ProvisioningRequest once the provisioning controller has seen it
    (PC §1.2, §1.12: Finished=True deletes every owned request)."""
    out = []
    for wl in workloads(world):
        if wl.is_finished():
            prs = [pr.metadata.name for pr in world.owned_by_name(c.PROVISIONING_REQUEST,
                                                                  wl.metadata.namespace, wl.metadata.name)]
            if prs:
                out.append(f"finished {name(wl)} still owns {prs}")
    return out


@state_invariant("settled")
def attempts_within_backoff_limit(world: World, ctx: CheckContext) -> list[str]:
    """A check is in Retry only for attempts up to ``backoffLimitCount`` and is Rejected for a
    failed or expired attempt only beyond it (PC §1.9, §1.13: the failure of attempt limit+1
    rejects).

    Exemption: while another provisioning check of the workload needs a request and has none in
    sync with its config, ``syncCheckStates`` returns before writing any state (PC §1.9,
    C:602-605), so a Retry or a Rejected decided under an earlier ``backoffLimitCount`` stays
    (:func:`~kueue_provreq.invariants.upstream.waits_for_another_request`)."""
    if not ctx.current:
        return []
    out = []
    for wl, s, rs, prs in _checks_with_requests(world):
        n, pr = prs[-1]
        phase = provisioning_request_phase(pr)
        if s.state in (c.CHECK_RETRY, c.CHECK_REJECTED) and waits_for_another_request(world, wl, s.name):
            continue
        if s.state == c.CHECK_RETRY and n > rs.backoff_limit_count:
            out.append(f"{name(wl)} check {s.name}: Retry for attempt {n} > limit {rs.backoff_limit_count}")
        if s.state == c.CHECK_REJECTED and phase in ENDING_PHASES and n <= rs.backoff_limit_count:
            out.append(f"{name(wl)} check {s.name}: Rejected at attempt {n} <= limit {rs.backoff_limit_count}")
    return out


@state_invariant("settled")
def rejected_check_deactivates(world: World, ctx: CheckContext) -> list[str]:
    """A Rejected check never stays on an active workload, and a deactivated workload holds no
    quota: Rejected sets DeactivationTarget, then ``spec.active=false``, then the eviction
    (``DeactivatedDueToAdmissionCheck``) resets the check and the job integration releases the
    quota (AR A.8).

    Exemption: the workload controller first waits out a ``requeueAt`` an earlier Retry
    recorded (AR A.7, as coded: the backoff gate returns before the check-based eviction), so a
    check rejected during that delay (CapacityRevoked after BookingExpired) stays Rejected on
    the active workload until ``requeueAt``."""
    out: list[str] = []
    for wl in workloads(world):
        if wl.is_finished():
            continue
        rs = wl.status.requeue_state
        waiting = rs is not None and rs.requeue_at is not None and rs.requeue_at > ctx.now
        if wl.is_active:
            out.extend(f"active {name(wl)} keeps check {s.name} Rejected"
                       for s in wl.status.admission_checks if s.state == c.CHECK_REJECTED and not waiting)
        elif wl.has_quota_reservation():
            out.append(f"deactivated {name(wl)} still holds quota")
    return out


@state_invariant("settled")
def pods_ready_timeout_enforced(world: World, ctx: CheckContext) -> list[str]:
    """An admitted, active workload whose pods are not ready ``waitForPodsReady.timeout`` after
    admission (``recoveryTimeout`` after a pod failed: PodsReady=False, WaitForRecovery) is
    evicted (PodsReadyTimeout) or deactivated (RequeuingLimitExceeded) -- AR B.2-B.4.

    Exemption: the workload controller looks at the timeout only after its backoff gate, which
    returns while ``requeueState.requeueAt`` lies ahead (AR A.5, A.7: workload_controller.go
    l.536-569 before l.769-797).  Under KEP-3258's semantics the gate holds back a workload
    holding quota too, so an admitted workload whose check went Retry (``requeueAt`` = the
    Retry deadline) is not evicted for the timeout before ``requeueAt``."""
    w = ctx.config.wait_for_pods_ready
    if w is None:
        return []
    out = []
    for wl in workloads(world):
        adm = wl.condition(c.WORKLOAD_ADMITTED)
        if (adm is None or adm.status != c.TRUE or adm.last_transition_time is None or wl.is_evicted()
                or not wl.is_active or wl.is_finished()):
            continue
        rs = wl.status.requeue_state
        if ctx.current and rs is not None and rs.requeue_at is not None and rs.requeue_at > ctx.now:
            continue  # the backoff gate returns first
        pr = wl.condition(c.WORKLOAD_PODS_READY)
        if pr is not None and pr.status == c.TRUE:
            continue
        if pr is not None and pr.reason == c.REASON_WAIT_FOR_RECOVERY:
            limit = w.effective_recovery_timeout
            since = pr.last_transition_time
        else:
            limit, since = w.timeout, adm.last_transition_time
        if limit is not None and since is not None and ctx.now >= since + limit:
            out.append(f"{name(wl)}: pods not ready {ctx.now - since}s after admission, timeout {limit}s")
    return out


@state_invariant("quiescent")
def no_stuck_workload(world: World, ctx: CheckContext) -> list[str]:
    """Once nothing is scheduled any more, no active, unfinished workload waits without quota
    while a check is Retry or Rejected: the scheduler never reserves quota for such a workload
    ("The workload has failed admission checks") and the workload controller only acts on checks of
    workloads holding quota, so it would wait forever (KEP-3258, "Race Condition Between Admission
    Check Updates and Workload Eviction"; Kueue issues #3322, #3543)."""
    out: list[str] = []
    for wl in workloads(world):
        if wl.is_finished() or not wl.is_active or wl.has_quota_reservation():
            continue
        out.extend(f"{name(wl)} has no quota and check {s.name} stays {s.state}"
                   for s in wl.status.admission_checks if s.state in (c.CHECK_RETRY, c.CHECK_REJECTED))
    return out
