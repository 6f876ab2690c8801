"""What Kueue's ``pkg/workload`` does to a Workload's status, shared by every controller.

Each function takes a frozen Workload and returns a new one; none of them
writes anything.  Eviction also reports its metrics and event through the
caller's ``Txn``, because upstream emits them from the same call.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kueue_provreq.api import constants as c
from kueue_provreq.api.config import Configuration
from kueue_provreq.api.evolve import evolve
from kueue_provreq.api.frozen import EMPTY, FrozenMap, freeze
from kueue_provreq.api.memo import memo
from kueue_provreq.api.meta import Time, remove_condition, set_condition
from kueue_provreq.api.queues import ClusterQueue, ClusterQueueSpec
from kueue_provreq.api.workload import AdmissionCheckState, Workload
from kueue_provreq.machines import ADMISSION_CHECK_MACHINE, CheckTrigger, Transition, WorkloadTrigger, write_workload
from kueue_provreq.machines.status import all_checks_ready as all_checks_ready
from kueue_provreq.machines.status import reason_with_cause
from kueue_provreq.machines.status import set_cond as set_cond
from kueue_provreq.machines.status import set_requeue_state as set_requeue_state
from kueue_provreq.machines.status import sync_admitted_condition as sync_admitted_condition
from kueue_provreq.machines.status import unset_quota_reservation as unset_quota_reservation
from kueue_provreq.world import Txn

Fired = tuple[Transition, ...]
"""The fires that decided a write, carried on its ``Update``."""


# --- admission gates -------------------------------------------------------------------


def admission_gates(wl: Workload, config: Configuration) -> str | None:
    """``HasAdmissionGate``: the ``kueue.x-k8s.io/admission-gated-by`` annotation's value when it
    is set and not empty and the AdmissionGatedBy gate is on, else None."""
    gates = wl.metadata.annotations.get(c.ANNOTATION_ADMISSION_GATED_BY)
    if not gates or not config.gate(c.GATE_ADMISSION_GATED_BY):
        return None
    return gates


# --- admission checks -----------------------------------------------------------------


def set_admission_check_state(states: tuple[AdmissionCheckState, ...], new: AdmissionCheckState,
                              now: Time) -> tuple[AdmissionCheckState, ...]:
    """``SetAdmissionCheckState``: the transition time moves only with the state; message,
    podSetUpdates and requeueAfterSeconds are always copied, retryCount never."""
    out = list(states)
    for i, old in enumerate(out):
        if old.name != new.name:
            continue
        ltt = old.last_transition_time
        if old.state != new.state:
            ltt = new.last_transition_time if new.last_transition_time is not None else now
        if ltt == new.last_transition_time and new.retry_count == old.retry_count:
            out[i] = new  # already what it would be copied into
            return tuple(out)
        out[i] = AdmissionCheckState(name=old.name, state=new.state, last_transition_time=ltt,
                                     message=new.message, pod_set_updates=new.pod_set_updates,
                                     retry_count=old.retry_count,
                                     requeue_after_seconds=new.requeue_after_seconds)
        return tuple(out)
    if new.last_transition_time is None:
        new = evolve(new, last_transition_time=now)
    out.append(new)
    return tuple(out)


def checks_for_workload(wl: Workload, cq: ClusterQueue) -> list[str]:
    """``AdmissionChecksForWorkload``: with an admission, the checks whose flavors meet the
    assigned ones; without, only the checks that apply to every flavor of the queue."""
    admission = wl.status.admission
    return list(checks_for_flavors(cq.spec, None if admission is None else admission.flavor_names))


@memo(4096)
def checks_for_flavors(spec: ClusterQueueSpec, used: frozenset[str] | None) -> tuple[str, ...]:
    """:func:`checks_for_workload` from the queue's spec and the assigned flavors (None: no
    admission), on which alone it depends; memoised, since every pass of every workload asks."""
    rules = spec.admission_checks_strategy
    if rules is None:
        return ()
    every = frozenset(f.name for g in spec.resource_groups for f in g.flavors)
    applies = {r.name: frozenset(r.on_flavors) if r.on_flavors else every for r in rules.admission_checks}
    if used is None:
        return tuple(sorted(name for name, flavors in applies.items() if flavors >= every))
    return tuple(sorted(name for name, flavors in applies.items() if flavors & used))


def sync_check_states(wl: Workload, wanted: Iterable[str], now: Time) -> Workload:
    """``syncAdmissionCheckConditions``: add missing checks as Pending, drop unwanted ones, sort."""
    wanted = list(wanted)
    states = wl.status.admission_checks
    if not wanted:
        return wl.with_status(admission_checks=()) if states else wl
    have = {s.name for s in states}
    out = list(states)
    changed = False
    for name in wanted:
        if name not in have:
            out.append(AdmissionCheckState(name=name, state=c.CHECK_PENDING, last_transition_time=now))
            changed = True
    if len(out) > len(wanted):
        keep = set(wanted)
        out = [s for s in out if s.name in keep]
        changed = True
    if not changed:
        return wl
    return wl.with_status(admission_checks=tuple(sorted(out, key=lambda s: s.name)))


def checks_in(wl: Workload, state: str) -> list[AdmissionCheckState]:
    return [s for s in wl.status.admission_checks if s.state == state]


def admission_checks_message(checks: list[AdmissionCheckState], state: str) -> str:
    """``buildAdmissionChecksMessage``: sorted by name, ``"name" (message)`` parts joined by ``"; "``."""
    parts = [f'"{s.name}" ({s.message})' if s.message else f'"{s.name}"'
             for s in sorted(checks, key=lambda s: s.name)]
    noun = "AdmissionCheck" if len(parts) == 1 else "AdmissionChecks"
    return f"{noun} in {state} state: {'; '.join(parts)}"


def reset_checks_on_eviction(states: tuple[AdmissionCheckState, ...], now: Time
                             ) -> tuple[tuple[AdmissionCheckState, ...], Fired]:
    """``resetChecksOnEviction``: the only place ``retryCount`` grows (for checks in Retry)."""
    out = []
    fired = []
    for s in states:
        t = ADMISSION_CHECK_MACHINE.transition(s.state, CheckTrigger.RESET_ON_EVICTION, item=s.name)
        fired.append(t)
        if t.target == s.state:
            out.append(s)
            continue
        out.append(AdmissionCheckState(
            name=s.name, state=t.target, last_transition_time=now,
            message=c.MSG_RESET_CHECK.format(state=s.state),
            requeue_after_seconds=s.requeue_after_seconds,
            retry_count=(s.retry_count or 0) + 1 if s.state == c.CHECK_RETRY else None,
        ))
    return tuple(out), tuple(fired)


# --- eviction ---------------------------------------------------------------------------

_CLEARED_ON_EVICTION = ("clusterName", "nominatedClusterNames", "unhealthyNodes")


def _count_eviction(extra: FrozenMap[str, Any], reason: str, cause: str) -> tuple[FrozenMap[str, Any], bool]:
    """``status.schedulingStats.evictions`` with this eviction counted, and whether one for
    the same reason and cause was counted before."""
    stats = extra.get("schedulingStats", EMPTY)
    evictions = list(stats.get("evictions", ()))
    seen_before = False
    for i, e in enumerate(evictions):
        if e.get("reason") == reason and e.get("underlyingCause", "") == cause:
            seen_before = True
            evictions[i] = e.set("count", e.get("count", 0) + 1)
            break
    else:
        evictions.append(freeze({"reason": reason, "underlyingCause": cause, "count": 1}))
    return extra.set("schedulingStats", stats.set("evictions", tuple(evictions))), seen_before


@memo(64)
def _first_eviction(reason: str, cause: str) -> FrozenMap[str, Any]:
    """:func:`_count_eviction` of a status without other unmodelled fields: the same for every
    workload evicted for the same reason and cause, so built once and shared (three maps less
    per evicted workload); reasons and causes are upstream's few constants, hence the bound."""
    return _count_eviction(EMPTY, reason, cause)[0]


def evict(txn: Txn, wl: Workload, reason: str, message: str, cause: str = "") -> tuple[Workload, Fired]:
    """``evict.Evict`` after its CustomPrepare: Evicted=True (the workload machine's ``evict``),
    checks reset (each check's ``reset_on_eviction``), scheduling stats, and (only for a
    workload that had an admission) the metrics and the event."""
    now = txn.now
    full_reason = reason_with_cause(reason, cause)
    extra = wl.status.extra
    if extra:  # (most statuses keep no unmodelled field)
        for k in _CLEARED_ON_EVICTION:
            extra = extra.without(k)
    if extra:
        extra, seen_before = _count_eviction(extra, reason, cause)
    else:
        extra, seen_before = _first_eviction(reason, cause), False
    checks, resets = reset_checks_on_eviction(wl.status.admission_checks, now)
    # one new Workload for the condition, the checks and the stats
    wl, evicting = write_workload(wl, WorkloadTrigger.EVICT, reason=reason, message=message, cause=cause, now=now,
                                  admission_checks=checks, extra=extra)
    gated = wl.condition(c.WORKLOAD_BLOCKED_ON_PREEMPTION_GATES)
    if gated is not None and gated.status == c.TRUE:
        conds, _ = set_condition(wl.status.conditions, evolve(gated, status=c.FALSE, last_transition_time=None), now)
        wl = wl.with_status(conditions=conds)
    if wl.status.admission is not None:
        labels = {"cluster_queue": wl.status.admission.cluster_queue, "reason": reason,
                  "underlying_cause": cause, "priority_class": priority_class(wl)}
        txn.metric(c.METRIC_EVICTED_WORKLOADS, labels)
        if not seen_before:
            txn.metric(c.METRIC_EVICTED_WORKLOADS_ONCE, labels)
        txn.event(c.EVENT_TYPE_NORMAL, c.EVENT_EVICTED_DUE_TO + full_reason, message, wl)
    return wl, (evicting,) + resets


def priority_class(wl: Workload) -> str:
    ref = wl.spec.extra.get("priorityClassRef")
    if isinstance(ref, FrozenMap):
        return str(ref.get("name", ""))
    return ""


# --- requeueing ------------------------------------------------------------------------


def queue_order_timestamp(wl: Workload, config: Configuration) -> Time:
    """``GetQueueOrderTimestamp`` (KEP-1282): eviction time for AdmissionCheck evictions always,
    and for PodsReady timeouts under the Eviction strategy; otherwise the creation time."""
    ev = wl.condition(c.WORKLOAD_EVICTED)
    if ev is not None and ev.status == c.TRUE and ev.last_transition_time is not None:
        if ev.reason == c.REASON_ADMISSION_CHECK:
            return ev.last_transition_time
        if ev.reason == c.REASON_PODS_READY_TIMEOUT and config.requeuing_timestamp == c.TIMESTAMP_EVICTION:
            return ev.last_transition_time
    return wl.metadata.creation_timestamp or Time(0)


def remove(wl: Workload, type_: str) -> Workload:
    conds, changed = remove_condition(wl.status.conditions, type_)
    return wl.with_status(conditions=conds) if changed else wl

