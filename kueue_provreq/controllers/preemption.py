"""Kueue's preemptor (``pkg/scheduler/preemption``, classical preemption), within a ClusterQueue
and within its cohort.

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

In a cohort (:class:`CohortView`, ``classical/hierarchical_preemption.go`` and
``candidate_generator.go``), the candidates are also the workloads of other queues that use more
than their nominal quota of what the preemptor is short of, where ``reclaimWithinCohort`` lets the
preemptor take them: ones it has a hierarchical advantage over (its own subtree holds the quota
they borrow) whatever their priority, and the others by priority, with ``borrowWithinCohort``
deciding whether the preemptor may still borrow once they are gone (only below its
``maxPriorityThreshold``).  Evicted candidates come first, then the other queues' ones before the
preemptor's own; the search tries with borrowing allowed and without, in upstream's order, and
the reasons are ``InClusterQueue``, ``InCohortReclamation`` and ``InCohortReclaimWhileBorrowing``.

Not modelled: fair sharing, priority boosts, preemption gates and the in-memory preemption
expectations (a world that shows a target evicted needs none).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal
from functools import partial

import attrs

from kueue_provreq.api import constants as c
from kueue_provreq.api.config import Configuration
from kueue_provreq.api.meta import Time, find_condition
from kueue_provreq.api.queues import BorrowWithinCohort
from kueue_provreq.api.workload import Workload
from kueue_provreq.controllers import cohorts
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
    cq: str = ""

    def oracle(self, preemptor: Workload) -> Callable[[FlavorResource, Decimal], int]:
        """The flavor assigner's question for ``preemptor``: could preemption free this much?"""
        return partial(self._ask, preemptor)

    def _ask(self, preemptor: Workload, fr: FlavorResource, amount: Decimal) -> int:
        return PREEMPT if can_make_room(preemptor, self.holding, fr, amount, self.nominal,
                                        self.policy, self.config, self.now) else NO_CANDIDATES

    def targets(self, preemptor: Workload, needs: frozenset[FlavorResource], wants: Amounts) -> list[Target]:
        """``GetTargets`` for the whole assignment."""
        cq = self.cq
        return within_queue(find_targets(preemptor, self.holding, needs, wants, self.nominal, self.policy,
                                         self.config, self.now), cq)


@attrs.frozen
class Target:
    """A workload to preempt, why (``InClusterQueue``, ``InCohortReclamation``,
    ``InCohortReclaimWhileBorrowing``), its queue and that queue's path in the cohort tree."""

    workload: Workload
    reason: str
    cq: str
    path: str


def within_queue(targets: Sequence[Workload], cq: str) -> list[Target]:
    """Targets in the preemptor's own queue, outside any cohort."""
    return [Target(wl, c.REASON_IN_CLUSTER_QUEUE, cq, f"/{cq}") for wl in targets]


_HUMAN_REASONS = {
    c.REASON_IN_CLUSTER_QUEUE: c.HUMAN_REASON_IN_CLUSTER_QUEUE,
    c.REASON_IN_COHORT_RECLAMATION: c.HUMAN_REASON_IN_COHORT_RECLAMATION,
    c.REASON_IN_COHORT_RECLAIM_WHILE_BORROWING: c.HUMAN_REASON_IN_COHORT_RECLAIM_WHILE_BORROWING,
}


def preemption_message(preemptor: Workload, reason: str, preemptor_path: str, preemptee_path: str) -> str:
    """``preemptionMessage``: who preempts, why, and both queues' paths in the cohort tree."""
    uid = preemptor.metadata.uid or c.UNKNOWN_UID
    job_uid = preemptor.metadata.labels.get(c.LABEL_JOB_UID) or c.UNKNOWN_UID
    return c.MSG_PREEMPTED.format(uid=uid, job_uid=job_uid, reason=_HUMAN_REASONS[reason],
                                  preemptor_path=preemptor_path, preemptee_path=preemptee_path)


def issue(txn: Txn, preemptor: Workload, targets: Sequence[Target], cq: str,
          preemptor_path: str | None = None) -> tuple[int, str | None]:
    """``IssuePreemptions``: evict each target not evicted yet, as Kueue does; returns how many
    count as preempted (an evicted one counts: its preemption is under way) and the first
    write error.  ``preemptor_path``: the preemptor's queue in its cohort tree (``/cq`` alone
    outside a cohort)."""
    preempted = 0
    error: str | None = None
    for target in targets:
        wl = target.workload
        if wl.is_evicted():
            preempted += 1
            continue
        message = preemption_message(preemptor, target.reason, preemptor_path or f"/{cq}", target.path)
        prepared = ws.set_cond(wl, c.WORKLOAD_PREEMPTED, c.TRUE, target.reason,
                               truncate(message, c.CONDITION_MESSAGE_LIMIT), txn.now)
        side = Txn(txn.world, txn.now)  # evict's metrics and event follow the write, as upstream's
        evicted, fired = ws.evict(side, prepared, c.REASON_PREEMPTED, message)
        failed = txn.update(evicted, fired)
        if failed is not None:
            error = error or failed
            continue
        txn.effects.extend(side.effects)
        priorities = c.MSG_PRIORITIES.format(preemptor=priority(preemptor), preemptee=priority(wl))
        txn.event(c.EVENT_TYPE_NORMAL, c.EVENT_PREEMPTED, message + priorities, wl)
        meta = wl.metadata
        txn.event(c.EVENT_TYPE_NORMAL, c.EVENT_PREEMPTED_WORKLOAD, c.MSG_EVENT_PREEMPTED_WORKLOAD.format(
            namespace=meta.namespace, name=meta.name, uid=meta.uid, cq=target.cq) + priorities, preemptor)
        txn.metric(c.METRIC_PREEMPTED_WORKLOADS, {"preempting_cluster_queue": cq, "reason": target.reason})
        preempted += 1
    return preempted, error


# --- within a cohort -----------------------------------------------------------------------------

# preemptionVariant: how a candidate in another queue may be taken
_HIERARCHICAL_RECLAIM, _RECLAIM_WITHOUT_BORROWING, _RECLAIM_WHILE_BORROWING = 1, 2, 3
_VARIANT_REASONS = {_HIERARCHICAL_RECLAIM: c.REASON_IN_COHORT_RECLAMATION,
                    _RECLAIM_WITHOUT_BORROWING: c.REASON_IN_COHORT_RECLAMATION,
                    _RECLAIM_WHILE_BORROWING: c.REASON_IN_COHORT_RECLAIM_WHILE_BORROWING}


@attrs.frozen
class _Candidate:
    workload: Workload
    amounts: Amounts
    cq: str
    lca: cohorts.Node | None
    variant: int


@attrs.frozen
class CohortView:
    """What the preemptor sees of its cohort in a scheduling cycle: the cycle's tree (usage is
    taken out and put back while targets are tried), who holds what in each queue, and its
    queue's policies."""

    tree: cohorts.Tree
    cq: str
    holding: Callable[[str], Sequence[tuple[Workload, Amounts]]]
    within: str
    reclaim: str
    borrow: BorrowWithinCohort
    config: Configuration
    now: Time

    @property
    def node(self) -> cohorts.Node:
        return cohorts.cq_node(self.cq)

    def oracle(self, preemptor: Workload) -> Callable[[FlavorResource, Decimal], int]:
        """``SimulatePreemption``: ``RECLAIM`` when every target is in another queue."""
        return partial(self._ask, preemptor)

    def _ask(self, preemptor: Workload, fr: FlavorResource, amount: Decimal) -> int:
        found = self.targets(preemptor, frozenset({fr}), {fr: amount})
        if not found:
            return NO_CANDIDATES
        return PREEMPT if any(t.cq == self.cq for t in found) else RECLAIM

    def _candidate(self, preemptor: Workload, wl: Workload, amounts: Amounts, cq: str, needs: frozenset[FlavorResource],
                   lca: cohorts.Node | None, advantage: bool) -> _Candidate | None:
        """``classifyPreemptionVariant``."""
        if wl.metadata.uid == preemptor.metadata.uid or not any(fr in needs for fr in amounts):
            return None
        policy = self.within if cq == self.cq else self.reclaim
        if not may_preempt(preemptor, wl, policy, self.config):
            return None
        if cq == self.cq:
            return _Candidate(wl, amounts, cq, lca, 0)
        if advantage:
            return _Candidate(wl, amounts, cq, lca, _HIERARCHICAL_RECLAIM)
        if self.borrow.policy == c.PREEMPTION_POLICY_NEVER:
            return _Candidate(wl, amounts, cq, lca, _RECLAIM_WITHOUT_BORROWING)
        threshold = self.borrow.max_priority_threshold
        if priority(wl) >= priority(preemptor) or (threshold is not None and priority(wl) > threshold):
            return _Candidate(wl, amounts, cq, lca, _RECLAIM_WITHOUT_BORROWING)
        return _Candidate(wl, amounts, cq, lca, _RECLAIM_WHILE_BORROWING)

    def _within_nominal(self, node: cohorts.Node, needs: frozenset[FlavorResource]) -> bool:
        """``IsWithinNominalInResources``."""
        t = self.tree
        return all(t.usage[node].get(fr, _ZERO) <= t.subtree[node].get(fr, _ZERO) for fr in needs)

    def _collect(self, preemptor: Workload, needs: frozenset[FlavorResource],
                 wants: Amounts) -> tuple[list[_Candidate], list[_Candidate]]:
        """``collectCandidatesForHierarchicalReclaim``: walking up from the queue, the other
        queues over their quota in each subtree, with a hierarchical advantage once a subtree
        holds what the preemptor asks."""
        hierarchy: list[_Candidate] = []
        by_priority: list[_Candidate] = []
        t, node = self.tree, self.node
        if node not in t.parent or self.reclaim == c.PREEMPTION_POLICY_NEVER:
            return hierarchy, by_priority
        advantage, remaining = self._fit_in(node, wants)
        previous: cohorts.Node | None = None
        for root in t.ancestors(node):
            self._visit(preemptor, needs, root, root, previous, advantage, hierarchy if advantage else by_priority)
            fits, remaining = self._fit_in(root, remaining)
            advantage = advantage or fits
            previous = root
        return hierarchy, by_priority

    def _fit_in(self, at: cohorts.Node,
                requests: Mapping[FlavorResource, Decimal]) -> tuple[bool, dict[FlavorResource, Decimal]]:
        """Whether ``requests`` fit in ``at``'s subtree, and what of them is left beyond what
        ``at`` has locally."""
        t = self.tree
        fits = all(t.subtree[at].get(fr, _ZERO) >= t.usage[at].get(fr, _ZERO) + v for fr, v in requests.items())
        return fits, {fr: max(_ZERO, v - t.local_available(at, fr)) for fr, v in requests.items()}

    def _visit(self, preemptor: Workload, needs: frozenset[FlavorResource], current: cohorts.Node,
               root: cohorts.Node, skip: cohorts.Node | None, advantage: bool, into: list[_Candidate]) -> None:
        """The candidates under ``current`` (but not under ``skip`` nor the preemptor's queue)
        in queues over their quota, into ``into``."""
        node = self.node
        for child in self.tree.children.get(current, ()):
            if child in (skip, node) or self._within_nominal(child, needs):
                continue
            if child[0] == c.COHORT:
                self._visit(preemptor, needs, child, root, skip, advantage, into)
                continue
            for wl, amounts in self.holding(child[1]):
                found = self._candidate(preemptor, wl, amounts, child[1], needs, root, advantage)
                if found is not None:
                    into.append(found)

    def _valid(self, candidate: _Candidate, borrowing: bool, needs: frozenset[FlavorResource]) -> bool:
        """``candidateIsValid``: another queue's workload only while that queue (and every
        cohort up to the common ancestor) still uses more than its quota."""
        if candidate.cq == self.cq:
            return True
        if borrowing and candidate.variant == _RECLAIM_WITHOUT_BORROWING:
            return False
        node = cohorts.cq_node(candidate.cq)
        if self._within_nominal(node, needs):
            return False
        for ancestor in self.tree.ancestors(node):
            if ancestor == candidate.lca:
                break
            if self._within_nominal(ancestor, needs):
                return False
        return True

    def _fits(self, wants: Amounts, borrowing: bool) -> bool:
        """``workloadFits``."""
        t, node = self.tree, self.node
        return all((borrowing or not t.borrowing_with(node, fr, v)) and v <= t.available(node, fr)
                   for fr, v in wants.items())

    def _order(self, cand: _Candidate) -> tuple[bool, bool, int, int, str]:
        """``CandidatesOrdering`` across the cohort: evicted first, the other queues' before
        the preemptor's own, then lower priority, the most recently reserved, by UID."""
        return (not cand.workload.is_evicted(), cand.cq == self.cq, priority(cand.workload),
                -_reserved_at(cand.workload, self.now), cand.workload.metadata.uid)

    def targets(self, preemptor: Workload, needs: frozenset[FlavorResource], wants: Amounts) -> list[Target]:
        """``classicalPreemptions``: the candidates in order, removed until the preemptor fits,
        then given back in reverse while it still fits; with borrowing allowed and without, in
        upstream's order."""
        same = [] if self.within == c.PREEMPTION_POLICY_NEVER else [
            found for wl, amounts in self.holding(self.cq)
            if (found := self._candidate(preemptor, wl, amounts, self.cq, needs, None, False)) is not None]
        hierarchy, by_priority = self._collect(preemptor, needs, wants)
        lists = [sorted(group, key=self._order) for group in (hierarchy, by_priority, same)]
        ordered = [cand for group in lists for cand in group if cand.workload.is_evicted()] + \
            [cand for group in lists for cand in group if not cand.workload.is_evicted()]
        forbidden = self.borrow.policy == c.PREEMPTION_POLICY_NEVER
        under_nominal = all(self.tree.usage[self.node].get(fr, _ZERO) < self.tree.nominal(self.node, fr)
                            for fr in needs)
        attempts: tuple[bool, ...]
        if (not hierarchy and not by_priority) or (forbidden and not under_nominal):
            attempts = (True,)
        elif forbidden and not hierarchy:
            attempts = (False, True)
        else:
            attempts = (True, False)
        for borrowing in attempts:
            chosen: list[_Candidate] = []
            for cand in ordered:
                if not self._valid(cand, borrowing, needs):
                    continue
                self.tree.add_all(cohorts.cq_node(cand.cq), cand.amounts, -1)
                chosen.append(cand)
                if self._fits(wants, borrowing):
                    for i in range(len(chosen) - 2, -1, -1):
                        self.tree.add_all(cohorts.cq_node(chosen[i].cq), chosen[i].amounts)
                        if self._fits(wants, borrowing):
                            chosen[i] = chosen[-1]
                            chosen.pop()
                        else:
                            self.tree.add_all(cohorts.cq_node(chosen[i].cq), chosen[i].amounts, -1)
                    for cand_back in chosen:
                        self.tree.add_all(cohorts.cq_node(cand_back.cq), cand_back.amounts)
                    return [Target(cand.workload, _VARIANT_REASONS.get(cand.variant, c.REASON_IN_CLUSTER_QUEUE),
                                   cand.cq, self.tree.path(cohorts.cq_node(cand.cq))) for cand in chosen]
            for cand_back in chosen:
                self.tree.add_all(cohorts.cq_node(cand_back.cq), cand_back.amounts)
        return []
