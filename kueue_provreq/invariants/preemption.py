"""Invariants of preemption within a ClusterQueue and of KEP-993's preemption policy.

Upstream's scheduler preempts only what the queue's ``preemption.withinClusterQueue`` allows
(``SatisfiesPreemptionPolicy``, AR A.1), and issues preemptions as soon as the flavor
assignment needs them.  KEP-993 (the opt-in ``kep-993-preemption`` semantics) lets a check hold
them back (``preemptionPolicy: AfterCheckPassedOrOnDemand``) until it passes, unless a check asks
for them (``PreemptionRequired``), and re-validates the quota before ``Admitted``.  Like every
invariant, these judge from the objects alone: the preemptor is the workload whose UID the
victim's ``Preempted`` message names, and the policy is read again from the AdmissionChecks.
"""

from __future__ import annotations

import re
from decimal import Decimal

from kueue_provreq.api import constants as c
from kueue_provreq.api.meta import Time
from kueue_provreq.api.queues import AdmissionCheck, ClusterQueue, Cohort, LocalQueue
from kueue_provreq.api.workload import Workload
from kueue_provreq.invariants.reading import name, workloads, workloads_by_uid
from kueue_provreq.invariants.registry import CheckContext, Snapshot, state_invariant, step_invariant
from kueue_provreq.world import World

_PREEMPTOR_UID = re.compile(r"^Preempted to accommodate a workload \(UID: ([^,]+), JobUID:")


def _nominal(cq: ClusterQueue) -> dict[tuple[str, str], Decimal]:
    return {(f.name, r.name): r.nominal_quota.value for g in cq.spec.resource_groups for f in g.flavors
            for r in f.resources}


def _held(wl: Workload) -> dict[tuple[str, str], Decimal]:
    """What a workload holds, per flavor and resource: its admission's ``resourceUsage``."""
    out: dict[tuple[str, str], Decimal] = {}
    adm = wl.status.admission
    for psa in adm.pod_set_assignments if adm is not None else ():
        for res, q in psa.resource_usage.items():
            key = (psa.flavors.get(res, ""), res)
            out[key] = out.get(key, Decimal(0)) + q.value
    return out


@state_invariant()
def running_within_nominal_quota(world: World, ctx: CheckContext) -> list[str]:
    """What may be running in a ClusterQueue, its admitted workloads and the evicted ones that
    have not released their quota yet, fits in its nominal quota (AR A.10; KEP-993: "Kueue will
    recheck that Admission settings are still valid ... and admit the workload").  Holds in
    every semantics; under KEP-993 it is what remains of ``cluster_queue_within_nominal_quota``,
    since a reservation may count on preemptions not done yet.  Queues in a cohort may borrow
    (KEP-993 with cohorts is not modelled)."""
    usage: dict[str, dict[tuple[str, str], Decimal]] = {}
    for wl in workloads(world):
        adm = wl.status.admission
        if adm is None or wl.is_finished() or not wl.has_quota_reservation() or \
                not (wl.is_admitted() or wl.is_evicted()):
            continue
        cq = world.get(c.CLUSTER_QUEUE, "", adm.cluster_queue)
        if isinstance(cq, ClusterQueue) and cq.spec.cohort_name:
            continue  # it may borrow: cohort_quota_within_limits judges it
        used = usage.setdefault(adm.cluster_queue, {})
        for key, value in _held(wl).items():
            used[key] = used.get(key, Decimal(0)) + value
    out: list[str] = []
    for cq_name, used in sorted(usage.items()):
        cq = world.get(c.CLUSTER_QUEUE, "", cq_name)
        nominal = _nominal(cq) if isinstance(cq, ClusterQueue) else {}
        out.extend(f"ClusterQueue {cq_name} runs {value} {res} of flavor {flavor!r}, nominal "
                   f"{nominal.get((flavor, res), 0)}"
                   for (flavor, res), value in sorted(used.items()) if value > nominal.get((flavor, res), 0))
    return out


@state_invariant()
def preemption_required_only_under_kep_993(world: World, ctx: CheckContext) -> list[str]:
    """No check is ``PreemptionRequired`` unless the ``kep-993-preemption`` semantics is on: the
    state exists only in KEP-993, and no controller sets it otherwise."""
    if ctx.config.kep_993_preemption:
        return []
    return [f"{name(wl)}: check {s.name} is PreemptionRequired without KEP-993"
            for wl in workloads(world) for s in wl.status.admission_checks
            if s.state == c.CHECK_PREEMPTION_REQUIRED]


def _newly_preempted(before: Snapshot, after: World) -> list[tuple[Workload, str]]:
    """Workloads the step preempted, with the UID of the preemptor their message names."""
    old = workloads_by_uid(before)
    out = []
    for wl in workloads(after):
        cond = wl.condition(c.WORKLOAD_PREEMPTED)
        prev = old.get(wl.metadata.uid)
        was = prev.condition(c.WORKLOAD_PREEMPTED) if prev is not None else None
        if cond is None or cond.status != c.TRUE or (was is not None and was.status == c.TRUE):
            continue
        found = _PREEMPTOR_UID.match(cond.message)
        out.append((wl, found.group(1) if found else ""))
    return out


def _priority(wl: Workload) -> int:
    return wl.spec.priority or 0


def _queued_at(wl: Workload, ctx: CheckContext) -> Time:
    """``GetQueueOrderTimestamp`` (AR B.6): the eviction time after an admission check eviction,
    and after a PodsReady timeout under the ``Eviction`` strategy; else the creation time."""
    ev = wl.condition(c.WORKLOAD_EVICTED)
    if ev is not None and ev.status == c.TRUE and ev.last_transition_time is not None and (
            ev.reason == c.REASON_ADMISSION_CHECK or
            (ev.reason == c.REASON_PODS_READY_TIMEOUT and ctx.config.requeuing_timestamp == c.TIMESTAMP_EVICTION)):
        return ev.last_transition_time
    return wl.metadata.creation_timestamp or Time(0)


@step_invariant()
def preempted_only_by_policy(before: Snapshot, after: World, ctx: CheckContext) -> list[str]:
    """A workload is preempted only by a workload its queue's policy lets take it (AR A.1,
    ``SatisfiesPreemptionPolicy``): in its own ClusterQueue under
    ``preemption.withinClusterQueue`` (``LowerPriority``, a strictly higher priority;
    ``LowerOrNewerEqualPriority``, also an equal priority queued earlier; ``Never``, none), with
    reason ``InClusterQueue``; from another queue of the same cohort tree under the preemptor
    queue's ``reclaimWithinCohort`` (``LowerPriority`` or ``Any``), with reason
    ``InCohortReclamation``, or ``InCohortReclaimWhileBorrowing`` where ``borrowWithinCohort``
    allows it for a strictly lower priority at or below its threshold (KEP-79 hierarchical
    cohorts, ``classifyPreemptionVariant``)."""
    everyone = workloads_by_uid(list(after))
    out = []
    for victim, uid in _newly_preempted(before, after):
        preemptor = everyone.get(uid)
        cond = victim.condition(c.WORKLOAD_PREEMPTED)
        cq = _cluster_queue(after, victim)
        mine = _cluster_queue(after, preemptor) if preemptor is not None else None
        if preemptor is None or cond is None or not isinstance(cq, ClusterQueue) or mine is None or \
                (mine != cq and _root(after, mine) != _root(after, cq)):
            out.append(f"{name(victim)} preempted by an unknown workload {uid!r}, or one outside its cohort")
            continue
        higher = _priority(preemptor) > _priority(victim)
        if mine == cq:
            policy = cq.spec.within_cluster_queue
            peer = _priority(preemptor) == _priority(victim) and _queued_at(preemptor, ctx) < _queued_at(victim, ctx)
            allowed = (policy == c.PREEMPTION_POLICY_LOWER_PRIORITY and higher) or \
                (policy == c.PREEMPTION_POLICY_LOWER_OR_NEWER_EQUAL_PRIORITY and (higher or peer))
            reasons = {c.REASON_IN_CLUSTER_QUEUE}
        else:
            policy = mine.spec.reclaim_within_cohort
            allowed = (policy == c.PREEMPTION_POLICY_LOWER_PRIORITY and higher) or policy == c.PREEMPTION_POLICY_ANY
            reasons = {c.REASON_IN_COHORT_RECLAMATION}
            borrow = mine.spec.borrow_within_cohort
            threshold = borrow.max_priority_threshold
            if borrow.policy != c.PREEMPTION_POLICY_NEVER and higher and \
                    (threshold is None or _priority(victim) <= threshold):
                reasons.add(c.REASON_IN_COHORT_RECLAIM_WHILE_BORROWING)
        if not allowed or cond.reason not in reasons:
            out.append(f"{name(victim)} (priority {_priority(victim)}) preempted by {name(preemptor)} "
                       f"(priority {_priority(preemptor)}) under {policy}, reason {cond.reason}")
    return out


def _root(world: World, cq: ClusterQueue) -> str | None:
    """The root of the queue's cohort tree (None outside a cohort or under a cycle)."""
    at = cq.spec.cohort_name
    seen: set[str] = set()
    while at:
        if at in seen:
            return None
        seen.add(at)
        parent = world.get(c.COHORT, "", at)
        if not isinstance(parent, Cohort) or not parent.spec.parent_name:
            return at
        at = parent.spec.parent_name
    return None


def _cluster_queue(world: World, wl: Workload) -> ClusterQueue | None:
    """The workload's ClusterQueue: its admission's, or (released already) its LocalQueue's.
    The oracle's own reading of ``ClusterQueueForWorkload``, not ``controllers.queues``'s: the
    oracle imports no controller (tests/test_invariants.py), so a mistake there is not mirrored."""
    adm = wl.status.admission
    if adm is not None:
        name = adm.cluster_queue
    else:
        lq = world.get(c.LOCAL_QUEUE, wl.metadata.namespace, wl.spec.queue_name)
        if not isinstance(lq, LocalQueue):
            return None
        name = lq.spec.cluster_queue
    cq = world.get(c.CLUSTER_QUEUE, "", name)
    return cq if isinstance(cq, ClusterQueue) else None


def _required_checks(wl: Workload, cq: ClusterQueue) -> list[str]:
    """``AdmissionChecksForWorkload`` with an admission (AR A.2): the checks whose flavors meet
    the assigned ones (an empty ``onFlavors`` means every flavor)."""
    rules = cq.spec.admission_checks_strategy
    adm = wl.status.admission
    if rules is None or adm is None:
        return []
    used = {f for psa in adm.pod_set_assignments for f in psa.flavors.values()}
    return sorted(r.name for r in rules.admission_checks if not r.on_flavors or used & set(r.on_flavors))


def policy_allows(world: World, wl: Workload) -> bool:
    """KEP-993: "Preemption can happen immediately if all AdmissionChecks have a
    preemptionPolicy of Anytime.  Otherwise, it will happen as soon as an AdmissionCheck
    requests preemptions using PreemptionRequired ... or all AdmissionChecks with a
    preemptionPolicy of AfterCheckPassedOrOnDemand are reported as True (Ready)" -- over the
    checks the workload's admission requires, one not listed yet counting as Pending."""
    adm = wl.status.admission
    cq = world.get(c.CLUSTER_QUEUE, "", adm.cluster_queue) if adm is not None else None
    if not isinstance(cq, ClusterQueue):
        return False
    required = _required_checks(wl, cq)
    states = {s.name: s.state for s in wl.status.admission_checks}
    if any(states.get(n) == c.CHECK_PREEMPTION_REQUIRED for n in required):
        return True
    for check in required:
        ac = world.get(c.ADMISSION_CHECK, "", check)
        if isinstance(ac, AdmissionCheck) and \
                ac.spec.preemption_policy == c.PREEMPTION_POLICY_AFTER_CHECK_PASSED_OR_ON_DEMAND and \
                states.get(check) != c.CHECK_READY:
            return False
    return True


@step_invariant()
def no_preemption_before_the_policy_allows_it(before: Snapshot, after: World, ctx: CheckContext) -> list[str]:
    """Under KEP-993 a preemption is issued only for a preemptor that holds its quota
    reservation and whose checks' ``preemptionPolicy`` allows it (:func:`policy_allows`), read in
    the world the step left or in the one it started from (the step may have moved the check
    that allowed it on)."""
    if not ctx.config.kep_993_preemption:
        return []
    old = World(list(before))
    everyone_after = workloads_by_uid(list(after))
    everyone_before = workloads_by_uid(before)
    out = []
    for victim, uid in _newly_preempted(before, after):
        views = [(after, everyone_after.get(uid)), (old, everyone_before.get(uid))]
        if not any(wl is not None and wl.has_quota_reservation() and policy_allows(world, wl) for world, wl in views):
            out.append(f"{name(victim)} preempted for {uid!r} before its preemption policy allowed it")
    return out
