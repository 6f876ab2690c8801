"""Kueue's preemptor, within one ClusterQueue (``pkg/scheduler/preemption``, classical preemption).

When a workload fits in a flavor's nominal quota only if others release what they hold, the
scheduler asks this module two questions: could preemption make room at all (the flavor
assigner's *oracle*, one flavor and resource at a time), and whom to preempt for the whole
assignment (``GetTargets``).  Both run upstream's heuristic: the candidates are the workloads
holding quota in the same ClusterQueue (admitted or only quota-reserved, evicted ones too,
since they still hold quota) that the queue's ``preemption.withinClusterQueue`` policy lets the
preemptor take and that use a flavor and resource the preemptor is short of; they are removed
in the candidates' order until the preemptor fits, then added back in reverse order while it
still fits, so the set is minimal in that order.

Issuing a preemption evicts the target (``Evicted=True`` reason ``Preempted``, ``Preempted=True``
reason ``InClusterQueue``, the message naming the preemptor, the checks reset), with the
``Preempted`` and ``PreemptedWorkload`` events and the ``preempted_workloads_total`` metric; a
target evicted already is counted as preempted and left alone ("Preemption ongoing").

Not modelled: cohorts (reclaim within a cohort, borrowing while preempting, fair sharing),
priority boosts, preemption gates and the in-memory preemption expectations (a world that
shows a target evicted needs none).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal

import attrs

from kueue_provreq.api import constants as c
from kueue_provreq.api.config import Configuration
from kueue_provreq.api.meta import Time, find_condition
from kueue_provreq.api.workload import Workload
from kueue_provreq.controllers import workload_status as ws
from kueue_provreq.world import Txn, truncate

FlavorResource = tuple[str, str]
Amounts = Mapping[FlavorResource, Decimal]
_ZERO = Decimal(0)

# ``PreemptionPossibility``, numbered as the flavor assigner ranks its modes (between no fit, 0,
# and fit, 4): no candidates, targets in the queue, targets all in other queues of the cohort.
NO_CANDIDATES, PREEMPT, RECLAIM = 1, 2, 3


def priority(wl: Workload) -> int:
    """``priority.Priority`` (``spec.priority``, nil = 0); boosts are not modelled."""
    return wl.spec.priority or 0


def may_preempt(preemptor: Workload, candidate: Workload, policy: str, config: Configuration) -> bool:
    """``SatisfiesPreemptionPolicy``: ``LowerPriority`` takes strictly lower priorities;
    ``LowerOrNewerEqualPriority`` also equal ones queued after the preemptor (KEP-1282 queue
    order timestamp); ``Never`` nothing."""
    lower = priority(preemptor) > priority(candidate)
    if policy == c.PREEMPTION_POLICY_LOWER_PRIORITY:
        return lower
    if policy == c.PREEMPTION_POLICY_LOWER_OR_NEWER_EQUAL_PRIORITY:
        newer = priority(preemptor) == priority(candidate) and \
            ws.queue_order_timestamp(preemptor, config) < ws.queue_order_timestamp(candidate, config)
        return lower or newer
    return policy == c.PREEMPTION_POLICY_ANY


def _reserved_at(wl: Workload, now: Time) -> Time:
    """``quotaReservationTime``: when QuotaReserved turned True (now if it is not)."""
    cond = find_condition(wl.status.conditions, c.WORKLOAD_QUOTA_RESERVED)
    if cond is None or cond.status != c.TRUE or cond.last_transition_time is None:
        return now
    return cond.last_transition_time


def candidates_order(wl: Workload, now: Time) -> tuple[bool, int, int, str]:
    """``CandidatesOrdering`` within one queue: workloads already evicted first, then lower
    priority first, then the most recently reserved first, then by UID."""
    return (not wl.is_evicted(), priority(wl), -_reserved_at(wl, now), wl.metadata.uid)


def find_targets(preemptor: Workload, holding: Sequence[tuple[Workload, Amounts]], needs: frozenset[FlavorResource],
                 wants: Amounts, nominal: Amounts, policy: str, config: Configuration, now: Time) -> list[Workload]:
    """The workloads to preempt so that ``wants`` (the preemptor's quota, per flavor and
    resource) fits in ``nominal`` beside the rest of ``holding`` (every workload holding quota
    in the queue, with what it holds); empty when no set of candidates makes room.  Only
    workloads holding some of ``needs`` (what the preemptor is short of) are candidates."""
    if policy == c.PREEMPTION_POLICY_NEVER:
        return []
    used: dict[FlavorResource, Decimal] = {}
    for _, amounts in holding:
        for fr, value in amounts.items():
            used[fr] = used.get(fr, _ZERO) + value
    uid = preemptor.metadata.uid
    candidates = sorted(((wl, amounts) for wl, amounts in holding
                         if wl.metadata.uid != uid and any(fr in needs for fr in amounts)
                         and may_preempt(preemptor, wl, policy, config)),
                        key=lambda pair: candidates_order(pair[0], now))

    def fits() -> bool:
        return all(value <= nominal.get(fr, _ZERO) - used.get(fr, _ZERO) for fr, value in wants.items())

    def move(amounts: Amounts, sign: int) -> None:
        for fr, value in amounts.items():
            used[fr] = used.get(fr, _ZERO) + sign * value

    chosen: list[tuple[Workload, Amounts]] = []
    for wl, amounts in candidates:
        move(amounts, -1)
        chosen.append((wl, amounts))
        if fits():
            # fillBackWorkloads: in reverse order, give back every target the preemptor can spare
            # (the last one removed is what made it fit, so it stays)
            for i in range(len(chosen) - 2, -1, -1):
                move(chosen[i][1], +1)
                if fits():
                    chosen[i] = chosen[-1]
                    chosen.pop()
                else:
                    move(chosen[i][1], -1)
            return [wl for wl, _ in chosen]
    return []


def can_make_room(preemptor: Workload, holding: Sequence[tuple[Workload, Amounts]], fr: FlavorResource,
                  amount: Decimal, nominal: Amounts, policy: str, config: Configuration, now: Time) -> bool:
    """``SimulatePreemption`` for one flavor and resource: whether preempting could free
    ``amount`` of it (the flavor assigner then ranks the flavor ``Preempt``, not "no
    candidates")."""
    return bool(find_targets(preemptor, holding, frozenset({fr}), {fr: amount}, nominal, policy, config, now))


@attrs.frozen
class QueueView:
    """What the preemptor sees of one ClusterQueue in a scheduling cycle: every workload holding
    quota there with what it holds, the nominal quota and the ``withinClusterQueue`` policy."""

    holding: tuple[tuple[Workload, Amounts], ...]
    nominal: Amounts
    policy: str
    config: Configuration
    now: Time

    def oracle(self, preemptor: Workload) -> Callable[[FlavorResource, Decimal], int]:
        """The flavor assigner's question for ``preemptor``: could preemption free this much?"""
        return lambda fr, amount: PREEMPT if can_make_room(preemptor, self.holding, fr, amount, self.nominal,
                                                           self.policy, self.config, self.now) else NO_CANDIDATES

    def targets(self, preemptor: Workload, needs: frozenset[FlavorResource], wants: Amounts) -> list[Workload]:
        """``GetTargets`` for the whole assignment."""
        return find_targets(preemptor, self.holding, needs, wants, self.nominal, self.policy, self.config, self.now)


def preemption_message(preemptor: Workload, cq: str) -> str:
    """``preemptionMessage`` within one queue: both paths are ``/<queue>`` (no cohort)."""
    uid = preemptor.metadata.uid or c.UNKNOWN_UID
    job_uid = preemptor.metadata.labels.get(c.LABEL_JOB_UID) or c.UNKNOWN_UID
    return c.MSG_PREEMPTED.format(uid=uid, job_uid=job_uid, reason=c.HUMAN_REASON_IN_CLUSTER_QUEUE,
                                  preemptor_path=f"/{cq}", preemptee_path=f"/{cq}")


def issue(txn: Txn, preemptor: Workload, targets: Sequence[Workload], cq: str) -> tuple[int, str | None]:
    """``IssuePreemptions``: evict each target not evicted yet, as Kueue does; returns how many
    count as preempted (an evicted one counts: its preemption is under way) and the first
    write error."""
    preempted = 0
    error: str | None = None
    message = preemption_message(preemptor, cq)
    for target in targets:
        if target.is_evicted():
            preempted += 1
            continue
        prepared = ws.set_cond(target, c.WORKLOAD_PREEMPTED, c.TRUE, c.REASON_IN_CLUSTER_QUEUE,
                               truncate(message, c.CONDITION_MESSAGE_LIMIT), txn.now)
        side = Txn(txn.world, txn.now)  # evict's metrics and event follow the write, as upstream's
        evicted, fired = ws.evict(side, prepared, c.REASON_PREEMPTED, message)
        failed = txn.update(evicted, fired)
        if failed is not None:
            error = error or failed
            continue
        txn.effects.extend(side.effects)
        priorities = c.MSG_PRIORITIES.format(preemptor=priority(preemptor), preemptee=priority(target))
        txn.event(c.EVENT_TYPE_NORMAL, c.EVENT_PREEMPTED, message + priorities, target)
        meta = target.metadata
        txn.event(c.EVENT_TYPE_NORMAL, c.EVENT_PREEMPTED_WORKLOAD, c.MSG_EVENT_PREEMPTED_WORKLOAD.format(
            namespace=meta.namespace, name=meta.name, uid=meta.uid, cq=cq) + priorities, preemptor)
        txn.metric(c.METRIC_PREEMPTED_WORKLOADS, {"preempting_cluster_queue": cq, "reason": c.REASON_IN_CLUSTER_QUEUE})
        preempted += 1
    return preempted, error
