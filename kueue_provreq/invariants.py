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

from collections.abc import Callable, Iterable, Iterator
from decimal import Decimal
from typing import Any

import attrs

from kueue_provreq.api import constants as c
from kueue_provreq.api import naming
from kueue_provreq.api.config import (
    SEMANTICS_CURRENT,
    SEMANTICS_PRE_KEP_3258,
    Configuration,
)
from kueue_provreq.api.frozen import FrozenMap
from kueue_provreq.api.meta import Time, find_condition
from kueue_provreq.api.objects import KubeObject
from kueue_provreq.api.provisioning import (
    PodTemplate,
    ProvisioningRequest,
    ProvisioningRequestConfig,
    RetryStrategy,
)
from kueue_provreq.api.queues import AdmissionCheck, ClusterQueue
from kueue_provreq.api.workload import AdmissionCheckState, Workload
from kueue_provreq.machines import (
    ADMISSION_CHECK_MACHINE,
    PROVISIONING_REQUEST_MACHINE,
    WORKLOAD_MACHINE,
    MachineTable,
    RequestPhase,
    requests,
)
from kueue_provreq.machines.phases import provisioning_request_phase, workload_phase
from kueue_provreq.world import World

Snapshot = frozenset[KubeObject]

CURRENT = SEMANTICS_CURRENT
PRE_KEP_3258 = SEMANTICS_PRE_KEP_3258


@attrs.frozen
class CheckContext:
    """What a predicate needs besides the world: the clock, the configuration, and how far the
    controllers have got (``settled`` / ``quiescent``, see the module docstring)."""

    now: Time
    config: Configuration = Configuration()
    settled: bool = True
    quiescent: bool = False

    @property
    def semantics(self) -> str:
        return self.config.admission_check_semantics

    @property
    def keep_quota(self) -> bool:
        return self.config.gate(c.GATE_KEEP_QUOTA_FOR_PROVREQ_RETRY)


StateCheck = Callable[[World, CheckContext], list[str]]
StepCheck = Callable[[Snapshot, World, CheckContext], list[str]]


@attrs.frozen
class Invariant:
    name: str
    doc: str
    state: StateCheck | None = None
    step: StepCheck | None = None
    when: str = "always"
    """``always``, ``settled`` or ``quiescent``: the least the driver must guarantee for it to apply."""

    def applies(self, ctx: CheckContext) -> bool:
        return self.when == "always" or (self.when == "settled" and ctx.settled) or ctx.quiescent


STATE_INVARIANTS: dict[str, Invariant] = {}
STEP_INVARIANTS: dict[str, Invariant] = {}


def state_invariant(when: str = "always") -> Callable[[StateCheck], StateCheck]:
    def register(fn: StateCheck) -> StateCheck:
        STATE_INVARIANTS[fn.__name__] = Invariant(fn.__name__, (fn.__doc__ or "").strip(), state=fn, when=when)
        return fn
    return register


def step_invariant(when: str = "always") -> Callable[[StepCheck], StepCheck]:
    def register(fn: StepCheck) -> StepCheck:
        STEP_INVARIANTS[fn.__name__] = Invariant(fn.__name__, (fn.__doc__ or "").strip(), step=fn, when=when)
        return fn
    return register


def check_state(world: World, ctx: CheckContext) -> list[str]:
    """Every applicable state invariant, each violation prefixed with the invariant's name."""
    out: list[str] = []
    for inv in STATE_INVARIANTS.values():
        if inv.applies(ctx) and inv.state is not None:
            out.extend(f"{inv.name}: {v}" for v in inv.state(world, ctx))
    return out


def check_step(before: Snapshot, after: World, ctx: CheckContext) -> list[str]:
    """Every applicable transition invariant over one step."""
    out: list[str] = []
    for inv in STEP_INVARIANTS.values():
        if inv.applies(ctx) and inv.step is not None:
            out.extend(f"{inv.name}: {v}" for v in inv.step(before, after, ctx))
    return out


# --- reading a world ---------------------------------------------------------------------------


def _workloads(objs: Iterable[KubeObject]) -> Iterator[Workload]:
    return (o for o in objs if isinstance(o, Workload))


def _requests(objs: Iterable[KubeObject]) -> Iterator[ProvisioningRequest]:
    return (o for o in objs if isinstance(o, ProvisioningRequest))


def _name(wl: Workload) -> str:
    return f"{wl.metadata.namespace}/{wl.metadata.name}"


def attempt_of(pr: ProvisioningRequest, wl_name: str, check: str) -> int | None:
    """The attempt number ``ProvisioningRequestName`` put in ``pr``'s name for this (workload,
    check), or None when the name is not one of theirs (PC §1.5, §1.7)."""
    return naming.attempt_of(pr.metadata.name, wl_name, check)


def requests_of(objs: Iterable[KubeObject], wl: Workload, check: str) -> list[tuple[int, ProvisioningRequest]]:
    """(attempt, request) for every request of ``wl``'s ``check`` controlled by ``wl``, oldest first."""
    out = []
    for pr in _requests(objs):
        ref = pr.metadata.controller_ref()
        if pr.metadata.namespace != wl.metadata.namespace or ref is None or ref.uid != wl.metadata.uid:
            continue
        n = attempt_of(pr, wl.metadata.name, check)
        if n is not None:
            out.append((n, pr))
    return sorted(out, key=lambda t: t[0])


def _retry_strategy(world: World, check: str) -> RetryStrategy | None:
    ac = world.get(c.ADMISSION_CHECK, "", check)
    if not isinstance(ac, AdmissionCheck) or ac.spec.parameters is None:
        return None
    prc = world.get(c.PROVISIONING_REQUEST_CONFIG, "", ac.spec.parameters.name)
    return prc.spec.retry_strategy if isinstance(prc, ProvisioningRequestConfig) else None


def _checks_with_requests(world: World) -> Iterator[
        tuple[Workload, AdmissionCheckState, RetryStrategy, list[tuple[int, ProvisioningRequest]]]]:
    """Each provisioning check with a config and at least one request, with its retry strategy
    and its requests by attempt (oldest first)."""
    for wl in _workloads(world):
        for s in wl.status.admission_checks:
            rs = _retry_strategy(world, s.name)
            prs = requests_of(world, wl, s.name)
            if rs is not None and prs:
                yield wl, s, rs, prs


def nominal_retry_delay(attempt: int, base: int, cap: int) -> int:
    """``min(base * 2**(n-1), max)`` with the first step never capped and ``max == 0`` meaning
    no cap (PC §1.13) -- written independently of ``controllers.backoff`` to serve as its oracle.

    >>> [nominal_retry_delay(n, 60, 1800) for n in range(1, 8)]
    [60, 120, 240, 480, 960, 1800, 1800]
    >>> nominal_retry_delay(1, 100, 50), nominal_retry_delay(2, 100, 50)
    (100, 50)
    """
    if attempt == 1:
        return base
    full: int = base << (attempt - 1)
    return full if cap == 0 else min(full, cap)


def _retry_deadline(s: AdmissionCheckState) -> int | None:
    if s.state != c.CHECK_RETRY or s.requeue_after_seconds is None or s.last_transition_time is None:
        return None
    return s.last_transition_time + s.requeue_after_seconds


def _evicted_reason(wl: Workload) -> str | None:
    cond = wl.condition(c.WORKLOAD_EVICTED)
    return cond.reason if cond is not None and cond.status == c.TRUE else None


def _default_retry(ctx: CheckContext) -> bool:
    """Retry releases the quota: current semantics without KeepQuotaForProvReqRetry."""
    return ctx.semantics == CURRENT and not ctx.keep_quota


# --- state invariants ------------------------------------------------------------------------------


@state_invariant()
def admitted_only_with_quota(world: World, ctx: CheckContext) -> list[str]:
    """A workload without a quota reservation never has Admitted=True: ``SyncAdmittedCondition``
    writes Admitted=True only with QuotaReserved=True, and every ``UnsetQuotaReservation`` re-syncs
    Admitted in the same patch (AR A.4, KEP-993)."""
    return [f"{_name(wl)} is Admitted without QuotaReserved=True"
            for wl in _workloads(world)
            if wl.is_admitted() and not wl.has_quota_reservation()]


@state_invariant()
def admission_matches_reservation(world: World, ctx: CheckContext) -> list[str]:
    """``status.admission`` is set exactly while QuotaReserved=True: ``SetQuotaReservation`` and
    ``UnsetQuotaReservationWithCondition`` write both in one patch (AR A.3, A.6)."""
    return [f"{_name(wl)}: QuotaReserved={wl.has_quota_reservation()} but admission "
            f"{'present' if wl.status.admission else 'absent'}"
            for wl in _workloads(world)
            if wl.has_quota_reservation() != (wl.status.admission is not None)]


@state_invariant()
def cluster_queue_within_nominal_quota(world: World, ctx: CheckContext) -> list[str]:
    """The usage of a ClusterQueue (the sum of ``resourceUsage`` of every workload holding quota in
    it, per flavor and resource) never exceeds its nominal quota: the model has no cohorts, so
    nothing may be borrowed (AR A.3, A.10: reserved quota counts in the ClusterQueue's usage).
    A finished workload keeps QuotaReserved=True but no longer counts: Kueue's cache drops it."""
    usage: dict[tuple[str, str, str], Decimal] = {}
    for wl in _workloads(world):
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
    """Every object is in a state of its declared machine (``machines.declarations``): the
    workload phase, each admission check state and each ProvisioningRequest phase."""
    out = []
    for wl in _workloads(world):
        if workload_phase(wl) not in WORKLOAD_MACHINE.states:
            out.append(f"{_name(wl)}: phase {workload_phase(wl)!r} undeclared")
        out.extend(f"{_name(wl)}: check {s.name} in undeclared state {s.state!r}"
                   for s in wl.status.admission_checks if s.state not in ADMISSION_CHECK_MACHINE.states)
    out.extend(f"request {pr.metadata.name}: undeclared phase {provisioning_request_phase(pr)!r}"
               for pr in _requests(world)
               if provisioning_request_phase(pr) not in PROVISIONING_REQUEST_MACHINE.states)
    return out


_DEAD = requests.ENDING_PHASES
"""The phases of a request whose attempt is over (``machines.requests``)."""


@state_invariant()
def one_live_request_per_check(world: World, ctx: CheckContext) -> list[str]:
    """At most one ProvisioningRequest per (workload, check) is live (not Failed or
    BookingExpired): a new attempt is created only for a failed or expired one, and unused requests
    are deleted before anything is created (PC §1.6, §1.7)."""
    out = []
    for wl in _workloads(world):
        for s in wl.status.admission_checks:
            live = [pr.metadata.name for _, pr in requests_of(world, wl, s.name)
                    if provisioning_request_phase(pr) not in _DEAD]
            if len(live) > 1:
                out.append(f"{_name(wl)} check {s.name}: live requests {live}")
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
    if not ctx.keep_quota or ctx.semantics != CURRENT:
        return []
    out: list[str] = []
    for wl in _workloads(world):
        out.extend(f"{_name(wl)}: check {s.name} in Retry under KeepQuotaForProvReqRetry"
                   for s in wl.status.admission_checks if s.state == c.CHECK_RETRY)
        if _evicted_reason(wl) == c.REASON_ADMISSION_CHECK:
            out.append(f"{_name(wl)} evicted for an admission check under KeepQuotaForProvReqRetry")
    return out


@state_invariant()
def pods_ready_count_within_limit(world: World, ctx: CheckContext) -> list[str]:
    """``requeueState.count`` counts PodsReady-timeout evictions and never exceeds
    ``waitForPodsReady.requeuingStrategy.backoffLimitCount``: the timeout that would exceed it
    deactivates instead (AR B.3, B.4).  Before KEP-3258 the count was shared with admission check
    retries, so this holds for the current semantics only."""
    w = ctx.config.wait_for_pods_ready
    limit = w.requeuing_strategy.backoff_limit_count if w else None
    if limit is None or ctx.semantics != CURRENT:
        return []
    return [f"{_name(wl)}: requeueState.count {wl.status.requeue_state.count} > limit {limit}"
            for wl in _workloads(world)
            if wl.status.requeue_state is not None and (wl.status.requeue_state.count or 0) > limit]


@state_invariant("settled")
def retry_delay_is_exponential(world: World, ctx: CheckContext) -> list[str]:
    """A check in Retry asks for ``requeueAfterSeconds = min(base*2^(n-1), max)`` with
    ``n = retryCount+1``, the first step uncapped, to the second (the jitter is below 1e-4 and is
    truncated away below 10000 s) -- PC §1.13, KEP-3258.  Recomputed on every reconcile while the
    failed request exists, so it holds once the provisioning controller has seen the current config
    -- unless another provisioning check of the workload needs a request and has none: then
    syncCheckStates returns before writing any state (PC §1.9, C:602-605) and the check keeps
    the delay of the retryStrategy it entered Retry with (found by the 10,000-example run, after
    a retryStrategy change; ``_waits_for_another_request``)."""
    if ctx.semantics != CURRENT:
        return []
    out = []
    for wl, s, rs, prs in _checks_with_requests(world):
        if s.state != c.CHECK_RETRY or s.requeue_after_seconds is None or \
                provisioning_request_phase(prs[-1][1]) not in _DEAD:
            continue  # without its failed request the check is not re-evaluated (PC §1.14)
        if _waits_for_another_request(world, wl, s.name):
            continue
        want = nominal_retry_delay((s.retry_count or 0) + 1, rs.backoff_base_seconds, rs.backoff_max_seconds)
        if want < 10_000 and s.requeue_after_seconds != want:
            out.append(f"{_name(wl)} check {s.name}: requeueAfterSeconds {s.requeue_after_seconds}, "
                       f"want {want} (attempt {(s.retry_count or 0) + 1})")
    return out


@state_invariant("settled")
def retry_not_overdue(world: World, ctx: CheckContext) -> list[str]:
    """Once ``lastTransitionTime + requeueAfterSeconds`` of a Retry check has passed, a workload
    holding quota is evicted (AR A.7, as coded: the workload controller waits for ``requeueAt``,
    then ``reconcileCheckBasedEviction`` evicts) -- the delay is honoured to the second, not later."""
    if not _default_retry(ctx):
        return []
    out = []
    for wl in _workloads(world):
        if not wl.has_quota_reservation() or wl.is_evicted() or wl.is_finished():
            continue
        rs = wl.status.requeue_state
        if rs is not None and rs.requeue_at is not None and rs.requeue_at > ctx.now:
            continue  # requeueAt only moves forward: a delay shortened by a config change still waits
        for s in wl.status.admission_checks:
            due = _retry_deadline(s)
            if s.state == c.CHECK_RETRY and (due is None or due <= ctx.now):
                out.append(f"{_name(wl)} still holds quota with check {s.name} in Retry due at {due}")
    return out


@state_invariant("settled")
def single_request_per_check(world: World, ctx: CheckContext) -> list[str]:
    """Once settled, a (workload, check) has at most one ProvisioningRequest: older attempts and
    requests out of sync with the config are deleted (PC §1.6)."""
    out = []
    for wl in _workloads(world):
        for s in wl.status.admission_checks:
            prs = [pr.metadata.name for _, pr in requests_of(world, wl, s.name)]
            if len(prs) > 1:
                out.append(f"{_name(wl)} check {s.name}: requests {prs}")
    return out


@state_invariant("settled")
def finished_has_no_requests(world: World, ctx: CheckContext) -> list[str]:
    """A finished workload owns no ProvisioningRequest once the provisioning controller has seen it
    (PC §1.2, §1.12: Finished=True deletes every owned request)."""
    out = []
    for wl in _workloads(world):
        if wl.is_finished():
            prs = [pr.metadata.name for pr in world.owned_by_name(c.PROVISIONING_REQUEST,
                                                                  wl.metadata.namespace, wl.metadata.name)]
            if prs:
                out.append(f"finished {_name(wl)} still owns {prs}")
    return out


@state_invariant("settled")
def attempts_within_backoff_limit(world: World, ctx: CheckContext) -> list[str]:
    """A check is in Retry only for attempts up to ``backoffLimitCount`` and is Rejected for a
    failed or expired attempt only beyond it (PC §1.9, §1.13: the failure of attempt limit+1
    rejects).  A Retry or Rejected decided under an earlier limit stays while another provisioning
    check of the workload needs a request and has none, since syncCheckStates then returns before
    writing any state (PC §1.9, C:602-605; found by the 10,000-example run, both ways, after
    retryStrategy changes; ``_waits_for_another_request``)."""
    if ctx.semantics != CURRENT:
        return []
    out = []
    for wl, s, rs, prs in _checks_with_requests(world):
        n, pr = prs[-1]
        phase = provisioning_request_phase(pr)
        if s.state in (c.CHECK_RETRY, c.CHECK_REJECTED) and _waits_for_another_request(world, wl, s.name):
            continue
        if s.state == c.CHECK_RETRY and n > rs.backoff_limit_count:
            out.append(f"{_name(wl)} check {s.name}: Retry for attempt {n} > limit {rs.backoff_limit_count}")
        if s.state == c.CHECK_REJECTED and phase in _DEAD and n <= rs.backoff_limit_count:
            out.append(f"{_name(wl)} check {s.name}: Rejected at attempt {n} <= limit {rs.backoff_limit_count}")
    return out


@state_invariant("settled")
def rejected_check_deactivates(world: World, ctx: CheckContext) -> list[str]:
    """A Rejected check never stays on an active workload, and a deactivated workload holds no
    quota: Rejected sets DeactivationTarget, then ``spec.active=false``, then the eviction
    (``DeactivatedDueToAdmissionCheck``) resets the check and the job integration releases the
    quota (AR A.8).  As coded, the workload controller first waits out a ``requeueAt`` an
    earlier Retry recorded (AR A.7: the backoff gate returns before the check-based eviction),
    so a check rejected during that delay (CapacityRevoked after BookingExpired) is acted on
    when the delay ends -- the explorer found this; the invariant allows exactly that wait."""
    out: list[str] = []
    for wl in _workloads(world):
        if wl.is_finished():
            continue
        rs = wl.status.requeue_state
        waiting = rs is not None and rs.requeue_at is not None and rs.requeue_at > ctx.now
        if wl.is_active:
            out.extend(f"active {_name(wl)} keeps check {s.name} Rejected"
                       for s in wl.status.admission_checks if s.state == c.CHECK_REJECTED and not waiting)
        elif wl.has_quota_reservation():
            out.append(f"deactivated {_name(wl)} still holds quota")
    return out


@state_invariant("settled")
def pods_ready_timeout_enforced(world: World, ctx: CheckContext) -> list[str]:
    """An admitted, active workload whose pods are not ready ``waitForPodsReady.timeout`` after
    admission is evicted (PodsReadyTimeout) or deactivated (RequeuingLimitExceeded) -- AR B.2-B.4.
    As coded, the workload controller checks the timeout after its backoff gate, which returns
    while ``requeueState.requeueAt`` lies ahead (AR A.7, workload_controller.go:536-569, before
    l.769-797); since KEP-3258 that holds back quota-holding workloads too, so an admitted
    workload whose check went Retry (``requeueAt`` = the Retry deadline) is not evicted for the
    timeout before ``requeueAt`` -- found by the 10,000-example run; the invariant allows exactly
    that wait."""
    w = ctx.config.wait_for_pods_ready
    if w is None:
        return []
    out = []
    for wl in _workloads(world):
        adm = wl.condition(c.WORKLOAD_ADMITTED)
        if (adm is None or adm.status != c.TRUE or adm.last_transition_time is None or wl.is_evicted()
                or not wl.is_active or wl.is_finished()):
            continue
        rs = wl.status.requeue_state
        if ctx.semantics == CURRENT and rs is not None and rs.requeue_at is not None and rs.requeue_at > ctx.now:
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
            out.append(f"{_name(wl)}: pods not ready {ctx.now - since}s after admission, timeout {limit}s")
    return out


@state_invariant("quiescent")
def no_stuck_workload(world: World, ctx: CheckContext) -> list[str]:
    """Once nothing is scheduled any more, no active, unfinished workload waits without quota
    while a check is Retry or Rejected: the scheduler never reserves quota for such a workload
    ("The workload has failed admission checks") and the workload controller only acts on checks of
    workloads holding quota, so it would wait forever (KEP-3258, "Race Condition Between Admission
    Check Updates and Workload Eviction"; Kueue issues #3322, #3543)."""
    out: list[str] = []
    for wl in _workloads(world):
        if wl.is_finished() or not wl.is_active or wl.has_quota_reservation():
            continue
        out.extend(f"{_name(wl)} has no quota and check {s.name} stays {s.state}"
                   for s in wl.status.admission_checks if s.state in (c.CHECK_RETRY, c.CHECK_REJECTED))
    return out


# --- transition invariants ---------------------------------------------------------------------------


def _reachable(machine: MachineTable[Any, Any]) -> dict[str, frozenset[str]]:
    out = {}
    for s in machine.states:
        seen, todo = {s}, [s]
        while todo:
            x = todo.pop()
            for e in machine.edges:
                if e.source == x and e.target not in seen:
                    seen.add(e.target)
                    todo.append(e.target)
        out[s] = frozenset(seen)
    return out


_REACH = {m.name: _reachable(m) for m in (WORKLOAD_MACHINE, ADMISSION_CHECK_MACHINE, PROVISIONING_REQUEST_MACHINE)}


def _by_uid(objs: Iterable[KubeObject]) -> dict[str, KubeObject]:
    return {o.metadata.uid: o for o in objs}


@step_invariant()
def transitions_are_declared(before: Snapshot, after: World, ctx: CheckContext) -> list[str]:
    """Every change of a workload phase, a check state or a request phase is a path of declared
    transitions (a step may chain several), and new objects start where their machine can start
    (``machines.declarations``; the engine refuses single undeclared changes as they happen)."""
    old = _by_uid(before)
    out = []
    for new in after:
        prev = old.get(new.metadata.uid)
        if isinstance(new, Workload):
            p_old = workload_phase(prev) if isinstance(prev, Workload) else WORKLOAD_MACHINE.initial
            p_new = workload_phase(new)
            if prev is not None and p_new not in _REACH["workload"][p_old]:
                out.append(f"{_name(new)}: {p_old} -> {p_new}")
            states = {s.name: s.state for s in prev.status.admission_checks} if isinstance(prev, Workload) else {}
            for s in new.status.admission_checks:
                src = states.get(s.name, ADMISSION_CHECK_MACHINE.initial)
                if s.state not in _REACH["admissioncheck"][src]:
                    out.append(f"{_name(new)} check {s.name}: {src} -> {s.state}")
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
    old = _by_uid(before)
    out = []
    for wl in _workloads(after):
        prev = old.get(wl.metadata.uid)
        if not wl.is_admitted() or (isinstance(prev, Workload) and prev.is_admitted()):
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
            out.append(f"{_name(wl)} admitted with quota={wl.has_quota_reservation()}, "
                       f"checks not Ready {not_ready}, missing {missing}")
    return out


@step_invariant()
def finished_is_final(before: Snapshot, after: World, ctx: CheckContext) -> list[str]:
    """A finished workload never changes state again: Finished has no outgoing transition and no
    controller touches a finished workload's checks (AR A.5: finished workloads return first)."""
    out = []
    for prev in _workloads(before):
        if not prev.is_finished():
            continue
        now = after.get(c.WORKLOAD, prev.metadata.namespace, prev.metadata.name)
        if not isinstance(now, Workload) or now.metadata.uid != prev.metadata.uid:
            continue
        if not now.is_finished() or now.status.admission_checks != prev.status.admission_checks:
            out.append(f"finished {_name(prev)} changed: phase {workload_phase(now)}")
    return out


def _created(before: Snapshot, after: World) -> list[ProvisioningRequest]:
    old = {o.metadata.uid for o in before}
    return [pr for pr in _requests(after) if pr.metadata.uid not in old]


def _owner(after: World, pr: ProvisioningRequest) -> Workload | None:
    ref = pr.metadata.controller_ref()
    wl = after.get(c.WORKLOAD, pr.metadata.namespace, ref.name) if ref is not None else None
    return wl if isinstance(wl, Workload) else None


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
    old_wls = {o.metadata.uid: o for o in _workloads(before)}
    out = []
    for pr in _created(before, after):
        wl = _owner(after, pr)
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
            floor = (s.retry_count or 0) + 1 if ctx.semantics == CURRENT else 1
            if older and n < max(older) and _numbering_restarted(prev, was, wl, s, n, same, after):
                older = []
            if (older and n < max(older)) or n < floor:
                out.append(f"{_name(wl)} check {s.name}: created attempt {n} after {older}, retryCount {s.retry_count}")
    return out


def _eviction_count(wl: Workload) -> int:
    """How many times ``wl`` was evicted: the sum of ``status.schedulingStats.evictions[*].count``,
    which ``Evict`` increments on every eviction (AR A.6 step 4)."""
    stats = wl.status.extra.get("schedulingStats")
    evictions = stats.get("evictions", ()) if isinstance(stats, FrozenMap) else ()
    return sum(int(e.get("count", 0)) for e in evictions if isinstance(e, FrozenMap))


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
    evicted = _eviction_count(wl) > _eviction_count(prev)
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
    next attempt is then made with the quota it holds (see ``_waited_for_another_request``).  Under
    KeepQuotaForProvReqRetry the next attempt is made in a step the workload enters and leaves
    with the same, unbroken reservation (PC §5 v0.9) -- unless it entered the step without quota,
    not evicted for an admission check: the controller ignores a workload without quota (PC
    §1.2), so a failure that happened or was still waiting out its backoff while the quota was
    gone without an eviction (a test's UnsetQuotaReservation keeps the requests, PC §1.12) is
    acted on with the next reservation, in the step that makes it if the backoff has passed
    (found by the 10,000-example run; ``_no_quota_to_keep``)."""
    if ctx.semantics != CURRENT:
        return []
    old_wls = {o.metadata.uid: o for o in _workloads(before)}
    out = []
    for pr in _created(before, after):
        wl = _owner(after, pr)
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
                    out.append(f"{_name(wl)} check {s.name}: attempt {n} without keeping the quota")
            elif not (failed_at is not None and reserved_at is not None and reserved_at >= failed_at) and \
                    not (failed_at is None and ev is not None and ev.status == c.FALSE) and \
                    not _waited_for_another_request(before, after, old_wls.get(wl.metadata.uid), wl, s.name):
                # the reservation must be newer than the failure (however the quota was lost: an
                # eviction, or a test's UnsetQuotaReservation); without the failed request, the
                # eviction's Evicted=False "Previously: ..." is the evidence
                out.append(f"{_name(wl)} check {s.name}: attempt {n} created without releasing the quota")
    return out


def _no_quota_to_keep(held: Workload | None, wl: Workload) -> bool:
    """Under KeepQuotaForProvReqRetry: whether the workload began the step without a reservation
    (so there was none to keep) that it had not lost to an admission check eviction, and holds
    one now.  An eviction for an admission check never happens under the gate
    (``keep_quota_never_evicts_for_retry``); were it the way the quota went, a next attempt made
    with the following reservation would be the default strategy's retry, and is still reported."""
    return held is not None and not held.has_quota_reservation() and \
        _evicted_reason(held) != c.REASON_ADMISSION_CHECK and wl.has_quota_reservation()


def _waits_for_another_request(objs: Iterable[KubeObject], wl: Workload | None, check: str) -> bool:
    """Whether another provisioning check of ``wl`` needs a request and has none in sync with its
    config, so that upstream's syncCheckStates returns early and writes no state for any check
    (PC §1.9, §1.14: with several provisioning checks the outcome depends on this).  "Needs" and
    "in sync" are decided as upstream does (``_needs_request``, ``_in_sync``)."""
    if wl is None:
        return False
    objs = list(objs)
    configs = {o.metadata.name: o for o in objs if isinstance(o, ProvisioningRequestConfig)}
    checks = {o.metadata.name: o for o in objs if isinstance(o, AdmissionCheck)}
    for s in wl.status.admission_checks:
        ac = checks.get(s.name)
        if s.name == check or ac is None or ac.spec.parameters is None or \
                ac.spec.controller_name != c.PROVISIONING_REQUEST_CONTROLLER_NAME:
            continue
        prc = configs.get(ac.spec.parameters.name)
        if prc is not None and _needs_request(wl, prc) and \
                not any(_in_sync(pr, prc) for _, pr in requests_of(objs, wl, s.name)):
            return True
    return False


def _waited_for_another_request(before: Snapshot, after: World, prev: Workload | None, wl: Workload,
                                check: str) -> bool:
    """Whether a reconcile during the step found another provisioning check of the workload
    needing a request without one in sync, so that syncCheckStates returned early: either at the
    start of the step (``before`` as it was), or in the first reconcile that saw the step's
    change -- the workload, its checks and the configs as the step left them, the requests as the
    step found them.  The second view covers a check that the step added or whose config it
    changed: a request is only made after syncCheckStates has run, so one made in this step was
    missing from that reconcile (found by the 10,000-example run: a reservation adds a check for
    the GPU flavor, which has no request yet)."""
    if _waits_for_another_request(before, prev, check):
        return True
    first: list[KubeObject] = [o for o in before if isinstance(o, ProvisioningRequest)]
    first += [o for o in after if not isinstance(o, ProvisioningRequest)]
    return _waits_for_another_request(first, wl, check)


def _needs_request(wl: Workload, prc: ProvisioningRequestConfig) -> bool:
    """``reqIsNeeded`` (PC §1.4): a pod set with a positive count (the admitted one if set) whose
    containers or init containers request or limit one of the config's managedResources (any
    resource when there are none).  A pod set without an assignment makes upstream's reconcile
    fail before it writes anything, which counts as needing a request here."""
    managed = frozenset(prc.spec.managed_resources)
    admission = wl.status.admission
    assigned = {psa.name: psa for psa in admission.pod_set_assignments} if admission else {}
    for ps in wl.spec.pod_sets:
        if ps.count <= 0 or (managed and not _uses(ps.template, managed)):
            continue
        psa = assigned.get(ps.name)
        if psa is None or (psa.count if psa.count is not None else ps.count) > 0:
            return True
    return False


def _uses(template: FrozenMap[str, object], managed: frozenset[str]) -> bool:
    """``podUses`` (PC §1.4): requests or limits of any container or init container."""
    spec = template.get("spec")
    if not isinstance(spec, FrozenMap):
        return False
    for field in ("initContainers", "containers"):
        for ctr in spec.get(field) or ():
            res = ctr.get("resources") if isinstance(ctr, FrozenMap) else None
            for kind in ("requests", "limits"):
                named = res.get(kind) if isinstance(res, FrozenMap) else None
                if isinstance(named, FrozenMap) and not managed.isdisjoint(named):
                    return True
    return False


def _in_sync(pr: ProvisioningRequest, prc: ProvisioningRequestConfig) -> bool:
    """``provReqSyncedWithConfig`` (PC §1.5): same class, and every config parameter has the same
    value on the request (extra request parameters, from annotations, do not matter)."""
    return pr.spec.provisioning_class_name == prc.spec.provisioning_class_name and \
        all((pr.spec.parameters or FrozenMap()).get(k) == v for k, v in prc.spec.parameters.items())


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
    attempt whatever the limit (found by the 10,000-example run; ``_waited_for_another_request``)."""
    old = {o.metadata.uid: o for o in _workloads(before)}
    out = []
    for pr in _created(before, after):
        wl = _owner(after, pr)
        prev = old.get(wl.metadata.uid) if wl is not None else None
        if wl is None or prev is None or prev.is_active != wl.is_active:
            continue  # a user (re)activated the workload in this very step
        for s in wl.status.admission_checks:
            n = attempt_of(pr, wl.metadata.name, s.name)
            rs = _retry_strategy(after, s.name)
            if ctx.semantics == CURRENT and n is not None and rs is not None and \
                    n > max(rs.backoff_limit_count, s.retry_count or 0) + 1 and \
                    not _waited_for_another_request(before, after, prev, wl, s.name):
                out.append(f"request {pr.metadata.name}: attempt {n} beyond limit {rs.backoff_limit_count}")
        if not prev.is_active:
            out.append(f"request {pr.metadata.name} created for deactivated {_name(prev)}")
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
    (``spec.active=false``) with Evicted reason ``DeactivatedDueToAdmissionCheck``, without quota
    and without requests (AR A.8, PC §1.12).  The rejection shows in the settled world as the
    check's "Reset to Pending after eviction. Previously: Rejected" message.

    The Evicted reason is plain ``Deactivated`` when a user deactivates the workload after the
    rejection but before the workload controller acted on it: the controller sets
    DeactivationTarget only past its backoff gate, so a check rejected during a Retry's requeueAt
    wait has none yet, and the inactive branch then evicts as for a manual deactivation (AR A.7,
    A.8 step 3) -- found by the 10,000-example run.  Exempt exactly then: the check was already
    Rejected on an active workload without DeactivationTarget when the step began."""
    old = {o.metadata.uid: o for o in _workloads(before)}
    out = []
    for wl in _workloads(after):
        prev = old.get(wl.metadata.uid)
        fresh = [s.name for s in wl.status.admission_checks
                 if s.message == _RESET_FROM_REJECTED and
                 (prev is None or prev.check_state(s.name) != s)]
        if not fresh or wl.is_finished():
            continue
        reason = _evicted_reason(wl)
        prs = [pr.metadata.name for pr in after.owned_by_name(
            c.PROVISIONING_REQUEST, wl.metadata.namespace, wl.metadata.name)]
        want = c.REASON_DEACTIVATED_DUE_TO + c.REASON_ADMISSION_CHECK
        if reason == c.REASON_DEACTIVATED and _rejected_before_the_user_deactivated(prev, fresh):
            want = c.REASON_DEACTIVATED
        if wl.is_active or reason != want or \
                wl.has_quota_reservation() or (prs and _cleans_up(ctx)):
            out.append(f"{_name(wl)} rejected by {fresh} ended active={wl.is_active}, evicted={reason}, "
                       f"quota={wl.has_quota_reservation()}, requests={prs}")
    return out


def _rejected_before_the_user_deactivated(prev: Workload | None, checks: list[str]) -> bool:
    """Whether ``checks`` were all Rejected already, on an active workload the workload controller
    had not yet marked with DeactivationTarget, when the step began: the deactivation in the step
    is then the user's (``rejection_deactivates``)."""
    if prev is None or not prev.is_active:
        return False
    target = prev.condition(c.WORKLOAD_DEACTIVATION_TARGET)
    if target is not None and target.status == c.TRUE:
        return False
    states = [prev.check_state(n) for n in checks]
    return all(st is not None and st.state == c.CHECK_REJECTED for st in states)


def _cleans_up(ctx: CheckContext) -> bool:
    return ctx.semantics == CURRENT and ctx.config.gate(c.GATE_CLEANUP_ON_EVICTION)


@step_invariant()
def pods_ready_limit_deactivates(before: Snapshot, after: World, ctx: CheckContext) -> list[str]:
    """PodsReady timeouts requeue the workload ``backoffLimitCount`` times; the next one
    deactivates it with Evicted reason ``DeactivatedDueToRequeuingLimitExceeded`` and clears
    ``requeueState`` (AR B.3-B.4, KEP-1282)."""
    w = ctx.config.wait_for_pods_ready
    limit = w.requeuing_strategy.backoff_limit_count if w else None
    old = {o.metadata.uid: o for o in _workloads(before)}
    out = []
    for wl in _workloads(after):
        prev = old.get(wl.metadata.uid)
        reason = _evicted_reason(wl)
        if prev is None or reason is None or _evicted_reason(prev) == reason:
            continue
        count = wl.status.requeue_state.count if wl.status.requeue_state else None
        if reason == c.REASON_PODS_READY_TIMEOUT and limit is not None and ctx.semantics == CURRENT \
                and (count or 0) > limit:
            out.append(f"{_name(wl)} requeued after timeout {count} > limit {limit}")
        if reason == c.REASON_DEACTIVATED_DUE_TO + c.REASON_REQUEUING_LIMIT_EXCEEDED and \
                (wl.is_active or wl.status.requeue_state is not None):
            out.append(f"{_name(wl)} over the requeuing limit but active={wl.is_active}, "
                       f"requeueState={wl.status.requeue_state}")
    return out


@step_invariant()
def no_early_requeue(before: Snapshot, after: World, ctx: CheckContext) -> list[str]:
    """A workload in backoff gets quota again no earlier than ``requeueState.requeueAt``, and an
    admission check eviction happens no earlier than the Retry deadline recorded there (AR A.7,
    B.5: ``backoffWaitingTimeExpired``) -- the retry delay is honoured to the second, not sooner."""
    old = {o.metadata.uid: o for o in _workloads(before)}
    out = []
    for wl in _workloads(after):
        prev = old.get(wl.metadata.uid)
        if prev is None:
            continue
        rs = prev.status.requeue_state
        at = rs.requeue_at if rs is not None else None
        if wl.has_quota_reservation() and not prev.has_quota_reservation() and at is not None and ctx.now < at:
            out.append(f"{_name(wl)} got quota at {ctx.now}, before requeueAt {at}")
        if _default_retry(ctx) and _evicted_reason(wl) == c.REASON_ADMISSION_CHECK and \
                _evicted_reason(prev) != c.REASON_ADMISSION_CHECK:
            dues = [t for t in map(_retry_deadline, prev.status.admission_checks) if t is not None]
            if dues and ctx.now < max(dues):
                out.append(f"{_name(wl)} evicted at {ctx.now}, before its Retry deadline {max(dues)}")
    return out


__all__ = ["CURRENT", "CheckContext", "Invariant", "PRE_KEP_3258", "STATE_INVARIANTS", "STEP_INVARIANTS",
           "Snapshot", "attempt_of", "check_state", "check_step", "nominal_retry_delay", "requests_of"]
