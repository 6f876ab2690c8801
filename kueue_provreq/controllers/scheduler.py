"""Kueue's scheduler (``pkg/scheduler``): phase 1 of two-phase admission, quota reservation.

One call is one scheduling cycle over every ClusterQueue (or, with a key, over the queue of
that workload).  Each queue is walked in order (:mod:`queues`): a head with failed checks is
set aside (``PendingEvaluation``); otherwise flavors are assigned against the nominal quota
left by the workloads already holding quota, and a fitting workload gets its ``Admission``,
``QuotaReserved=True`` and — when every check its flavors require is already listed —
``Admitted`` synced in the same write (``prepareWorkload``).

Kueue admits one head per ClusterQueue per cycle and pops the next head in the next cycle.
This model admits, in queue order, every workload that fits in one cycle, adding each
admission to the usage before trying the next.  That is the same outcome as Kueue's loop
when nothing else changes between its cycles: the next head sees exactly the usage the
previous admissions left, a StrictFIFO queue stops at its first head that does not fit, and
a BestEffortFIFO queue moves past it.  A workload set aside by BestEffortFIFO is tried again
in every later cycle rather than waiting in the inadmissible set for a requeue event; as the
usage only grows between such events, the verdict is the same and nothing is rewritten.  It is
tried after the queue's other workloads, though (:func:`queues.scan`): upstream returns the
inadmissible set to the heap a batch period (1 s) after the event that requeues it, by which time
the scheduler has tried what waits in the heap, such as a workload evicted for a Retry check and
requeued at once, which so takes its released quota back ahead of a higher-priority one that
waited (specs/stories/retry-evicted-workload-takes-its-quota-back-first.yaml).

**Equivalent workloads** (gate ``SchedulingEquivalenceHashing``, on by default since 0.18):
when a workload of a BestEffortFIFO queue does not fit (``NoFit`` or ``PreemptionNoCandidates``),
upstream's queue moves every workload behind it with the same scheduling hash (priority and pod
sets) to the inadmissible set, and one that arrives while that hash is recorded goes there at
once (``cluster_queue.go``, ``requeueIfNotPresent``, ``handleInadmissibleHash``,
``AddOrUpdateWorkload``): the scheduler never tries it, so it gets no ``QuotaReserved``
condition of its own (or keeps the one it had) until the queue's inadmissible workloads are
requeued, which clears the hashes.  The walk skips such a workload the same way: the earlier
one of its shape, tried first in queue order, fails again in each cycle until the usage changes.

**Partial admission** (gate ``PartialAdmission``, on by default): a workload that does not fit
whole and has a podset whose ``minCount`` is below its ``count`` gets the largest counts that
fit, found as upstream's ``PodSetReducer`` finds them (:func:`reduced_assignment`); when none
fits, the full workload's reason and message stand.

**Preemption within the ClusterQueue** (``preemption.withinClusterQueue``,
:mod:`~kueue_provreq.controllers.preemption`): the flavor assigner asks, for a flavor short of
quota, whether preempting could make room (a flavor without candidates ranks below one with
them; ``whenCanPreempt: MayStopSearch`` takes the first flavor preemption can make room in,
``TryNextFlavor`` goes on looking for one that fits). A workload that fits only by preempting
issues the preemptions (``Evicted=True`` ``Preempted``, ``Preempted=True`` ``InClusterQueue``)
and waits without a reservation, ``QuotaReserved=False`` ``WaitingForPreemptedWorkloads`` "...
Pending the preemption of N workload(s)"; as Kueue keeps such a preemptor at the head of its
queue, the walk of that queue stops there until the targets have released their quota.
Quota-reserved workloads are candidates as much as admitted ones. Partial admission that needs
preemption is not modelled (the reduced counts must fit without it).

**KEP-993** (the opt-in ``kep-993-preemption`` semantics,
:mod:`~kueue_provreq.controllers.kep993`): a workload that fits only by preempting gets its
reservation at once and claims its targets; each cycle first replays the queue's reservations,
issues the preemptions whose preemptor's checks now allow them, takes back reservations whose
preemptions can no longer happen, and admits the reservations whose checks are all Ready once
they fit beside what may still run.

**Cohorts** (:mod:`~kueue_provreq.controllers.cohorts`): a queue in a cohort takes what the
cycle's cohort tree says it may (its own quota, what the others lend, within borrowing and
lending limits); each flavor is tried at a *borrowing level* (0: within the queue's nominal
quota, else the height of the lowest cohort whose quota holds it), ``whenCanBorrow:
MayStopSearch`` stops at the first flavor that fits by borrowing and ``TryNextFlavor`` goes on
looking for one that fits with less, and the ``QuotaReserved`` event ends with "; Flavors
considered: ..." (every flavor tried that did not simply fit without borrowing).  Preemption in
a cohort (``reclaimWithinCohort``, ``borrowWithinCohort``) is
:class:`~kueue_provreq.controllers.preemption.CohortView`'s.  A queue whose cohort has a cycle
admits nothing ("ClusterQueue <cq> is inactive").  Upstream takes one head per queue per cycle
and tries first the heads that need no borrowing, then by priority and queue time; the model
walks a cohort's queues twice per cycle: first each queue up to its first workload that would
borrow, then the rest one workload at a time across the queues, always the queues' next
workload with the highest priority, then the earliest in queue order.  So borrowing never goes
before a workload within its queue's quota, and the spare quota goes to the higher priority;
upstream also prefers, among borrowing heads, the one borrowing from the lower cohort level,
which the model does not.

Not modelled: fair sharing and ``flavorFungibility.preference``, KEP-993 reservations in a
cohort, topology, node affinity and taints against flavors, and ``status.resourceRequests``.
A ClusterQueue's ``namespaceSelector`` is matched against the labels a namespace always has
(``kubernetes.io/metadata.name``): the world holds no Namespace objects.  Upstream emits the Warning of a set-aside workload on every cycle;
the model emits it only when the ``QuotaReserved`` condition changes, so that repeated cycles
settle.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from decimal import ROUND_CEILING, Decimal
from functools import partial

import attrs

from kueue_provreq.api import constants as c
from kueue_provreq.api.evolve import same
from kueue_provreq.api.frozen import FrozenMap
from kueue_provreq.api.memo import memo
from kueue_provreq.api.meta import find_condition
from kueue_provreq.api.objects import Key, key_of
from kueue_provreq.api.quantity import Quantity
from kueue_provreq.api.queues import ClusterQueue, ClusterQueueSpec
from kueue_provreq.api.workload import Admission, PodSet, PodSetAssignment, Workload
from kueue_provreq.controllers import cohorts, kep993, preemption, queues, workload_status
from kueue_provreq.controllers.activity import inactive_reason
from kueue_provreq.controllers.context import Context
from kueue_provreq.controllers.usage import FlavorResource, Usage, podset_requests
from kueue_provreq.machines import Guard, Transition, WorkloadTrigger, write_workload
from kueue_provreq.machines.phases import held_back
from kueue_provreq.world import NOTHING, Event, MetricInc, Result, Txn, Update, World, truncate

# Flavor assignment modes, ordered from worst to best as upstream's preemption modes: no fit,
# short of quota with no preemption candidates, short with candidates in the queue (preemption
# can make room), short with candidates only in other queues of the cohort (reclaim), fit.
_NO_FIT, _FIT = 0, 4
_NO_CANDIDATES, _PREEMPT, _RECLAIM = preemption.NO_CANDIDATES, preemption.PREEMPT, preemption.RECLAIM
_MODE_NAMES = {_NO_FIT: "NoFit", _NO_CANDIDATES: "Preempt", _PREEMPT: "Preempt", _RECLAIM: "Preempt", _FIT: "Fit"}
_POSSIBILITY_NAMES = {_NO_CANDIDATES: "NoCandidates", _PREEMPT: "Preempt", _RECLAIM: "Reclaim"}
_NO_BORROW_LEVEL = 1 << 30

Oracle = Callable[[FlavorResource, Decimal], int]
"""``SimulatePreemption``: whether preemption could free this much of a flavor's resource
(``_PREEMPT``, ``_RECLAIM`` when every target is in another queue, else ``_NO_CANDIDATES``)."""
_ZERO = Decimal(0)


@memo(4096)
def _quantity(value: Decimal) -> Quantity:
    return Quantity.of(value)


@memo(4096)
def _flavor_map(flavors: tuple[tuple[str, str], ...]) -> FrozenMap[str, str]:
    """A podset assignment's flavors (resource -> flavor), one instance per value: look-alike
    workloads then share one map instead of holding a copy each (about 180 bytes)."""
    return FrozenMap(dict(flavors))


@memo(4096)
def _usage_map(usage: tuple[tuple[str, Decimal], ...]) -> FrozenMap[str, Quantity]:
    """A podset assignment's resource usage, shared like :func:`_flavor_map` (its quantities
    are :func:`_quantity`'s, shared already)."""
    return FrozenMap({r: _quantity(amount) for r, amount in usage})


# --- quantities in messages -------------------------------------------------------------------

_DECIMAL_SUFFIXES = {-3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}
_BINARY_SUFFIXES = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")


def format_amount(resource: str, value: Decimal) -> str:
    """``resources.ResourceQuantityString``: CPU in milli-units, byte resources in binary SI,
    everything else in decimal SI, each in Go's canonical spelling (``1500m``, ``2``, ``1Gi``)."""
    if resource == "cpu":
        return _decimal_si(int((value * 1000).to_integral_value(ROUND_CEILING)), -3)
    units = int(value.to_integral_value(ROUND_CEILING))
    if (resource in ("memory", "ephemeral-storage") or resource.startswith("hugepages-")) and abs(units) >= 1024:
        k = 0
        while units % 1024 == 0 and k < len(_BINARY_SUFFIXES) - 1:
            units //= 1024
            k += 1
        return f"{units}{_BINARY_SUFFIXES[k]}"
    return _decimal_si(units, 0)


def _decimal_si(mantissa: int, exponent: int) -> str:
    if mantissa == 0:
        return "0"
    while mantissa % 1000 == 0 and exponent < 18:
        mantissa //= 1000
        exponent += 3
    return f"{mantissa}{_DECIMAL_SUFFIXES[exponent]}"


# --- flavor assignment -------------------------------------------------------------------------


@attrs.frozen
class QuotaTable:
    """A ClusterQueue's resource groups, indexed for the flavor assigner."""

    groups: tuple[tuple[frozenset[str], tuple[str, ...]], ...]
    group_of: FrozenMap[str, int]
    nominal: FrozenMap[FlavorResource, Decimal]

    @staticmethod
    def of(cq: ClusterQueue) -> QuotaTable:
        """The table of ``cq``'s spec (memoised on it: every walk of the queue asks it)."""
        return _quota_table(cq.spec)


@memo(256)
def _quota_table(spec: ClusterQueueSpec) -> QuotaTable:
    """:meth:`QuotaTable.of`, built afresh."""
    groups = []
    group_of: dict[str, int] = {}
    nominal: dict[FlavorResource, Decimal] = {}
    for i, rg in enumerate(spec.resource_groups):
        groups.append((frozenset(rg.covered_resources), tuple(f.name for f in rg.flavors)))
        for name in rg.covered_resources:
            group_of.setdefault(name, i)
        for fq in rg.flavors:
            for rq in fq.resources:
                nominal[(fq.name, rq.name)] = rq.nominal_quota.value
    return QuotaTable(tuple(groups), FrozenMap(group_of), FrozenMap(nominal))


@attrs.frozen
class Attempt:
    """One flavor tried for one podset (``FlavorAssignmentAttempt``)."""

    flavor: str
    mode: int
    borrow: int = 0
    reasons: tuple[str, ...] = ()

    def text(self) -> str:
        mode = _MODE_NAMES[self.mode] if self.mode not in _POSSIBILITY_NAMES \
            else f"preemptionMode={_POSSIBILITY_NAMES[self.mode]}"
        borrow = f";borrow={self.borrow}" if self.borrow > 0 else ""
        reasons = ";" + ";".join(self.reasons) if self.reasons else ""
        return f"{self.flavor}({mode}{borrow}{reasons})"


@attrs.frozen
class Cohort:
    """What the flavor assigner sees of a queue in a cohort: the cycle's tree, the queue's
    node, and whether its policy lets it preempt while borrowing."""

    tree: cohorts.Tree
    node: cohorts.Node
    preempt_while_borrowing: bool


@attrs.frozen
class Assignment:
    """The flavor assigner's answer: podset assignments when the workload fits, else the
    ``QuotaReserved=False`` reason and message; when it is short of quota (``WaitingForQuota``),
    also the assignment it would take and what it is short of, for the preemptor."""

    pod_sets: tuple[PodSetAssignment, ...] = ()
    reason: str | None = None
    message: str = ""
    needs: frozenset[FlavorResource] = frozenset()
    """The flavors' resources short of quota (upstream's ``flavorResourcesNeedPreemption``)."""
    attempts: tuple[tuple[str, tuple[Attempt, ...]], ...] = ()
    """Per podset, the flavors tried (``FlavorAssignmentAttempts``), for the event."""
    borrows: int = 0
    """The borrowing level of the assignment (0: within the queue's nominal quota)."""

    def considered(self) -> str:
        """``FormatFlavorAssignmentAttemptsForEvents``: per podset, every flavor tried that did
        not simply fit without borrowing."""
        parts = []
        for podset, attempts in self.attempts:
            shown = [a.text() for a in attempts if a.mode != _FIT or a.borrow > 0]
            if shown:
                parts.append(f"{podset}: {', '.join(shown)}")
        return " | ".join(parts)

    @property
    def wants(self) -> Usage:
        """The quota the podset assignments take, per flavor and resource."""
        out: Usage = {}
        for psa in self.pod_sets:
            for resource, flavor in psa.flavors.items():
                out[(flavor, resource)] = out.get((flavor, resource), _ZERO) + psa.resource_usage[resource].value
        return out


def _try_flavor(flavor: str, resources: list[str], requests: Mapping[str, Decimal], own: Usage,
                table: QuotaTable, used: Usage, oracle: Oracle | None,
                cohort: Cohort | None) -> tuple[int, int, list[str], str, list[str]]:
    """``fitsResourceQuota`` for each resource of one group in one flavor: the worst mode and
    the largest borrowing level, the reasons, the reason it does not fit at all
    (``ExceedsMaxQuota`` above the most the queue could hold, ``WaitingForQuota`` when it could
    fit later) and the resources short of quota.  Outside a cohort the most the queue could
    hold is its nominal quota; above what is left needs preemption, which the ``oracle`` says
    could make room or not (no oracle: it could not).  In a cohort, the tree says what the
    queue may take (borrowing included) and at which level it borrows; a flavor that would
    borrow is tried for preemption only when the queue may reclaim below the root or preempt
    while borrowing."""
    mode, borrow = _FIT, 0
    reasons: list[str] = []
    short: list[str] = []
    for name in resources:
        fr = (flavor, name)
        want = requests[name] + own.get(fr, _ZERO)
        level = 0
        if cohort is None:
            nominal = table.nominal.get(fr, _ZERO)
            capacity, available, may_try = nominal, max(_ZERO, nominal - used.get(fr, _ZERO)), True
        else:
            tree, node = cohort.tree, cohort.node
            capacity, available = tree.potential(node, fr), tree.available(node, fr)
            level, reclaim = tree.borrow_level(node, fr, want)
            may_try = table.nominal.get(fr, _ZERO) >= want or reclaim or cohort.preempt_while_borrowing
        if want > capacity:
            reasons.append(c.MSG_REQUEST_EXCEEDS_CAPACITY.format(
                resource=name, flavor=flavor, assumed=format_amount(name, own.get(fr, _ZERO)),
                request=format_amount(name, requests[name]), capacity=format_amount(name, capacity)))
            return _NO_FIT, 0, reasons, c.REASON_EXCEEDS_MAX_QUOTA, short
        borrow = max(borrow, level)
        if want > available:
            reasons.append(c.MSG_INSUFFICIENT_UNUSED_QUOTA.format(
                resource=name, flavor=flavor, more=format_amount(name, want - available)))
            short.append(name)
            if not may_try:
                return _NO_FIT, borrow, reasons, c.REASON_WAITING_FOR_QUOTA, short
            mode = min(mode, oracle(fr, want) if oracle is not None else _NO_CANDIDATES)
    return mode, borrow, reasons, "", short


def _preferred(a: tuple[int, int], b: tuple[int, int]) -> bool:
    """``isPreferred`` (``BorrowingOverPreemption``): a fitting flavor is worse than none, one
    without preemption candidates worse than any other; then the better mode, then the lower
    borrowing level."""
    if a[0] == _NO_FIT:
        return False
    if b[0] == _NO_FIT:
        return True
    if (a[0] == _NO_CANDIDATES) != (b[0] == _NO_CANDIDATES):
        return a[0] != _NO_CANDIDATES
    if a[0] != b[0]:
        return a[0] > b[0]
    return a[1] < b[1]


def _try_next(mode: int, borrow: int, stop_at_preempt: bool, stop_at_borrow: bool) -> bool:
    """``shouldTryNextFlavor``: go on past a flavor that does not fit, that needs preemption
    (unless ``whenCanPreempt: MayStopSearch``) or borrowing (unless ``whenCanBorrow:
    MayStopSearch``)."""
    if mode in (_NO_FIT, _NO_CANDIDATES):
        return True
    if mode in (_PREEMPT, _RECLAIM) and not stop_at_preempt:
        return True
    return borrow > 0 and not stop_at_borrow


def assign_flavors(pod_sets: Sequence[PodSet], table: QuotaTable, used: Usage, counts: Sequence[int] | None = None,
                   oracle: Oracle | None = None, stop_at_preempt: bool = False,
                   cohort: Cohort | None = None, stop_at_borrow: bool = True) -> Assignment:
    """``FlavorAssigner.Assign``: podset by podset, each resource group tries its flavors in
    order and stops at the first one ``shouldTryNextFlavor`` does not go past (one that fits
    without borrowing; one that fits by borrowing under ``whenCanBorrow: MayStopSearch``; one
    preemption can make room in under ``whenCanPreempt: MayStopSearch``), else takes the best
    of those tried (:func:`_preferred`); earlier podsets' assignments count against later ones.
    ``counts`` (partial admission) replaces the podsets' counts; the ``oracle`` tells a flavor
    preemption can make room in from one it cannot; ``cohort`` is the queue's place in its
    cohort (None: the queue has only its nominal quota)."""
    own: Usage = {}
    assigned: list[PodSetAssignment] = []
    messages: list[str] = []
    attempts: list[tuple[str, tuple[Attempt, ...]]] = []
    waiting = False
    needs: set[FlavorResource] = set()
    borrows = 0
    counts_pods = "pods" in table.group_of
    for i, ps in enumerate(pod_sets):
        count = ps.count if counts is None else counts[i]
        requests = podset_requests(ps, count, counts_pods)
        names = sorted(requests)
        flavors: dict[str, str] = {}
        reasons: list[str] = []
        mode = _FIT
        failure: str | None = None
        tried_here: dict[str, Attempt] = {}
        for name in names:
            if name in flavors:
                continue
            index = table.group_of.get(name)
            if index is None:
                reasons, failure = [c.MSG_RESOURCE_UNAVAILABLE.format(resource=name)], c.REASON_NO_MATCHING_FLAVOR
                break
            covered, group_flavors = table.groups[index]
            resources = [r for r in names if r in covered]
            best: str | None = None
            best_mode = (_NO_FIT, _NO_BORROW_LEVEL)
            best_short: list[str] = []
            tried: list[str] = []
            no_fit = c.REASON_EXCEEDS_MAX_QUOTA
            for flavor in group_flavors:
                flavor_mode, level, why, why_not, short = _try_flavor(
                    flavor, resources, requests, own, table, used, oracle, cohort)
                if flavor_mode != _FIT or level > 0:  # a plain fit is never shown, merged or not
                    _merge_attempt(tried_here, Attempt(flavor, flavor_mode, level, tuple(sorted(why))))
                if flavor_mode == _NO_FIT and why_not == c.REASON_WAITING_FOR_QUOTA:
                    no_fit = why_not
                if not _try_next(flavor_mode, level, stop_at_preempt, stop_at_borrow):
                    best, best_mode, best_short = flavor, (flavor_mode, level), short
                    if flavor_mode != _FIT:
                        tried.extend(why)
                    break
                tried.extend(why)
                if _preferred((flavor_mode, level), best_mode):
                    best, best_mode, best_short = flavor, (flavor_mode, level), short
            if best is None:
                reasons, failure = tried, no_fit
                break
            reasons.extend(tried if best_mode[0] != _FIT else [])
            mode = min(mode, best_mode[0])
            borrows = max(borrows, best_mode[1])
            flavors.update({r: best for r in resources})
            needs.update((best, r) for r in best_short)
        if tried_here:
            attempts.append((ps.name, tuple(tried_here[f] for f in sorted(tried_here))))
        if failure is not None or mode != _FIT:
            messages.append(c.MSG_ASSIGN_FLAVORS_FAILED.format(podset=ps.name, reasons=", ".join(sorted(reasons))))
        if failure is not None:
            return Assignment(reason=failure, message="; ".join(messages), attempts=tuple(attempts))
        waiting = waiting or mode != _FIT
        for name, flavor in flavors.items():
            own[(flavor, name)] = own.get((flavor, name), _ZERO) + requests[name]
        assigned.append(PodSetAssignment(
            name=ps.name, flavors=_flavor_map(tuple((r, flavors[r]) for r in sorted(flavors))),
            resource_usage=_usage_map(tuple((r, requests[r]) for r in names)), count=count))
    if waiting:
        return Assignment(tuple(assigned), c.REASON_WAITING_FOR_QUOTA, "; ".join(messages), frozenset(needs),
                          tuple(attempts), borrows)
    return Assignment(pod_sets=tuple(assigned), attempts=tuple(attempts), borrows=borrows)


@memo(1024)
def _plain_assignment(pod_sets: tuple[PodSet, ...], table: QuotaTable, used: tuple[tuple[FlavorResource, Decimal], ...],
                      stop_at_preempt: bool, stop_at_borrow: bool) -> Assignment:
    """:func:`assign_flavors` of a queue outside a cohort that does not preempt, memoised on the
    podsets and the usage's items: every cycle tries its queue's head again, mostly on a usage
    it was tried on already.  1,024 entries: the cycles of ``bench_sim``'s 5,000 arrivals meet
    26 usages, while a settle of many workloads meets a new one at each admission, which no
    bound would keep (4,096 entries held about 190 bytes per workload at 10,000,
    ``bench_memory.py``); ``bench_ab.py``'s settles of 600 still find their second pass kept."""
    return assign_flavors(pod_sets, table, dict(used), stop_at_preempt=stop_at_preempt, stop_at_borrow=stop_at_borrow)


def _merge_attempt(into: dict[str, Attempt], attempt: Attempt) -> None:
    """``mergeFlavorAttempts``: a flavor tried for several resource groups of a podset shows
    its worst mode, its largest borrowing level and all its reasons."""
    have = into.get(attempt.flavor)
    if have is None:
        into[attempt.flavor] = attempt
        return
    into[attempt.flavor] = Attempt(attempt.flavor, min(have.mode, attempt.mode), max(have.borrow, attempt.borrow),
                                   tuple(sorted(set(have.reasons) | set(attempt.reasons))))


def can_be_partially_admitted(wl: Workload) -> bool:
    """``CanBePartiallyAdmitted``: some podset's ``minCount`` is below its ``count``."""
    return any(ps.min_count is not None and ps.count > ps.min_count for ps in wl.spec.pod_sets)


def reduced_assignment(wl: Workload, table: QuotaTable, used: Usage, cohort: Cohort | None = None,
                       stop_at_borrow: bool = True) -> Assignment | None:
    """``PodSetReducer.Search``: the podsets' counts walk down together from ``count`` to
    ``minCount``, step ``i`` of ``total`` taking ``delta * i // total`` off each podset (``delta``
    its count less its minCount, ``total`` the sum of the deltas); a binary search
    (``sort.Search``) finds the first step whose counts fit, and that answer stands only when the
    search ended on it.  None when no step fits."""
    deltas = [ps.count - (ps.count if ps.min_count is None else ps.min_count) for ps in wl.spec.pod_sets]
    total = sum(deltas)
    if total <= 0:
        return None
    best: tuple[int, Assignment] | None = None
    low, high = 0, total + 1
    while low < high:
        step = (low + high) // 2
        counts = [ps.count - d * step // total for ps, d in zip(wl.spec.pod_sets, deltas, strict=True)]
        found = assign_flavors(wl.spec.pod_sets, table, used, counts, cohort=cohort, stop_at_borrow=stop_at_borrow)
        if found.reason is None:
            best = (step, found)
            high = step
        else:
            low = step + 1
    if best is None or best[0] != low:
        return None
    return best[1]


# --- one cycle ------------------------------------------------------------------------------------


@attrs.define
class _Cycle:
    """The writes of one cycle, and what it has learnt so far (usage grows as it admits)."""

    txn: Txn
    ctx: Context
    error: str | None = None
    not_ready: int = 0
    """Workloads holding quota without PodsReady=True (blockAdmission only)."""
    held: dict[str, list[tuple[Workload, preemption.Amounts]]] = attrs.Factory(dict)
    """Per queue, who holds what (read once per cycle, then kept as the cycle admits)."""
    read_holding: bool = False
    """Whether the cycle read the workloads holding quota, not only the quota they hold."""
    set_aside: bool = False
    """Whether the cycle has set aside a workload (whether that wrote or not)."""
    admitted_after: bool = False
    """Whether the cycle admitted a workload after it set one aside."""

    def holding_of(self, world: World, scan: queues.Scan, name: str) -> list[tuple[Workload, preemption.Amounts]]:
        self.read_holding = True
        found = self.held.get(name)
        if found is None:
            found = self.held[name] = [(wl, scan.index.held(key_of(wl))) for wl in scan.holding(world, name)]
        return found

    def view(self, world: World, scan: queues.Scan, cq: ClusterQueue, table: QuotaTable,
             holding: list[tuple[Workload, preemption.Amounts]],
             cohort: Cohort | None) -> preemption.QueueView | preemption.CohortView:
        """What a preemptor of this queue sees: the queue alone, or its cohort."""
        spec, name = cq.spec, cq.metadata.name
        if cohort is None:
            return preemption.QueueView(tuple(holding), table.nominal, spec.within_cluster_queue,
                                        self.ctx.config, self.ctx.now, name)
        return preemption.CohortView(cohort.tree, name, partial(self.holding_of, world, scan),
                                     spec.within_cluster_queue, spec.reclaim_within_cohort, spec.borrow_within_cohort,
                                     self.ctx.config, self.ctx.now)

    def write(self, wl: Workload, fired: tuple[Transition, ...] = ()) -> bool:
        failed = self.txn.update(wl, fired)
        if failed is not None:
            self.error = self.error or failed
            return False
        return True

    def park(self, wl: Workload, reason: str, message: str) -> None:
        """``requeueAndUpdate`` for a workload not admitted: QuotaReserved=False with the
        reason and a Warning event, written only when the condition changes.  A workload told
        the same message already (by the workload controller's queue blocker, which with
        UnadmittedWorkloadsObservability off names it ``Inadmissible``) keeps its reason: the two
        writers would otherwise take turns (docs/differences.rst, "Who says a queue blocks")."""
        self.set_aside = True
        message = truncate(message, c.CONDITION_MESSAGE_LIMIT)
        held = wl.condition(c.WORKLOAD_QUOTA_RESERVED)
        if wl.status.admission is None and held is not None and \
                (held.status, held.message, held.observed_generation) == (c.FALSE, message, wl.metadata.generation):
            # Already parked so: only Admitted can still move (cheap check, every cycle).
            new = workload_status.sync_admitted_condition(wl, self.ctx.now, self.ctx.config)
        else:
            new = workload_status.unset_quota_reservation(wl, reason, message, self.ctx.now, self.ctx.config)
        # the status helpers hand back the workload itself when they change nothing: an identity
        # test, not attrs' field-by-field ``!=``, which for a workload already parked so (every
        # waiting one, every cycle) walked the whole object only to find it equal
        if new is not wl and not same(new, wl) and self.write(new):
            self.txn.event(c.EVENT_TYPE_WARNING, reason, message, wl)

    def admit(self, wl: Workload, cq: ClusterQueue, pod_sets: tuple[PodSetAssignment, ...],
              preemptions_pending: bool = False, considered: str = "") -> Workload | None:
        """``admit`` / ``prepareWorkload`` and the events of ``recordWorkloadAdmissionMetrics``;
        ``preemptions_pending`` (KEP-993 only): the quota is still held by workloads being
        preempted, so the reservation is not admitted in the same write."""
        now, name = self.ctx.now, cq.metadata.name
        admission = Admission(name, pod_sets)
        # ``AdmissionChecksForWorkload`` of the workload with this admission (memoised on the
        # queue's spec and the assigned flavors: no copy of the workload built to ask it)
        required = workload_status.checks_for_flavors(cq.spec, admission.flavor_names)
        present = {s.name for s in wl.status.admission_checks}
        complete = all(check in present for check in required)
        # Admitted synced in the same patch once every check is listed: True when the machine
        # says so, else Admitted=False with its reason
        new, reserve = write_workload(wl, WorkloadTrigger.RESERVE_QUOTA, {
            Guard.ALL_CHECKS_READY: complete and workload_status.all_checks_ready(wl),
            Guard.PREEMPTIONS_PENDING: preemptions_pending},
            admission=admission, now=now, config=self.ctx.config, checks_complete=complete,
            preemptions_pending=preemptions_pending)
        if not self.write(new, (reserve,)):
            return None
        self.admitted_after = self.set_aside
        requeued = find_condition(wl.status.conditions, c.WORKLOAD_REQUEUED)
        queued_at = requeued.last_transition_time if requeued is not None else wl.metadata.creation_timestamp
        waited = now - (queued_at if queued_at is not None else now)
        message = c.MSG_EVENT_QUOTA_RESERVED.format(cq=name, seconds=waited)
        if considered:
            message += c.MSG_FLAVORS_CONSIDERED.format(attempts=considered)
        self.txn.event(c.EVENT_TYPE_NORMAL, c.EVENT_QUOTA_RESERVED, message, new)
        if new.is_admitted():
            self.txn.event(c.EVENT_TYPE_NORMAL, c.EVENT_ADMITTED, c.MSG_EVENT_ADMITTED.format(cq=name, seconds=0), new)
        return new

    def assign(self, wl: Workload, table: QuotaTable, used: Usage,
               view: preemption.QueueView | preemption.CohortView | None, stop_at_preempt: bool,
               cohort: Cohort | None = None, stop_at_borrow: bool = True) -> tuple[Assignment, list[preemption.Target]]:
        """``getInitialAssignments``: the whole workload when it fits, or when it fits by
        preempting (with the targets, ``view`` being what the preemptor sees of the queue);
        else (partial admission) the largest counts that fit; else the whole workload's reason.
        Partial admission that needs preemption is not modelled."""
        if view is None and cohort is None:
            whole = _plain_assignment(wl.spec.pod_sets, table, tuple(used.items()), stop_at_preempt, stop_at_borrow)
        else:
            whole = assign_flavors(wl.spec.pod_sets, table, used, oracle=view.oracle(wl) if view is not None else None,
                                   stop_at_preempt=stop_at_preempt, cohort=cohort, stop_at_borrow=stop_at_borrow)
        if whole.reason is None:
            return whole, []
        if view is not None and whole.needs:
            targets = view.targets(wl, whole.needs, whole.wants)
            if targets:
                return whole, targets
        if not self.ctx.config.gate(c.GATE_PARTIAL_ADMISSION) or not can_be_partially_admitted(wl):
            return whole, []
        return reduced_assignment(wl, table, used, cohort, stop_at_borrow) or whole, []

    def walk(self, world: World, cq: ClusterQueue, pending: list[Workload], scan: queues.Scan,
             tree: cohorts.Tree | None = None, start: int = 0, defer: bool = False) -> tuple[bool, int | None]:
        """Try one ClusterQueue's pending workloads in order (:meth:`walker` to the end)."""
        steps = self.walker(world, cq, pending, scan, tree, start, defer)
        try:
            while True:
                next(steps)
        except StopIteration as done:
            result: tuple[bool, int | None] = done.value
            return result

    def walker(self, world: World, cq: ClusterQueue, pending: list[Workload], scan: queues.Scan,
               tree: cohorts.Tree | None = None, start: int = 0,
               defer: bool = False) -> Generator[int, None, tuple[bool, int | None]]:
        """Try one ClusterQueue's pending workloads in order, from ``start``, yielding the index
        of each before trying it; returns False when blockAdmission stops the whole scheduling
        loop.  ``tree``: the cycle's cohort tree, which what the queue admits is added to (None
        when no queue is in a cohort).  ``defer``: stop at the first workload that would borrow,
        and return its index (the first pass of a cohort's queues, see :func:`schedule`)."""
        name = cq.metadata.name
        table = QuotaTable.of(cq)
        node = cohorts.cq_node(name)
        cohort = Cohort(tree, node, cq.spec.borrow_within_cohort.policy != c.PREEMPTION_POLICY_NEVER) \
            if tree is not None and node in tree else None
        kep_993 = self.ctx.config.kep_993_preemption
        preempts = cq.spec.within_cluster_queue != c.PREEMPTION_POLICY_NEVER or (
            cohort is not None and cq.spec.reclaim_within_cohort != c.PREEMPTION_POLICY_NEVER)
        # who holds what, one by one, only where preemption or KEP-993 asks (the queue's total
        # is kept by the index)
        holding = self.holding_of(world, scan, name) if kep_993 or preempts else []
        used = cohort.tree.usage[node] if cohort is not None else dict(scan.index.used.get(name, {}))
        running = list(holding)  # what may still run, for KEP-993's admission (this cycle's join)
        if kep_993:
            holding, used = self.kep_993_pass(world, cq, table, holding)
        if not pending:
            return True, None
        problem = inactive_reason(world, cq)
        if problem is not None or (cq.spec.cohort_name and cohort is None):  # under a cohort cycle
            for wl in pending:
                self.park(wl, c.REASON_SUSPENDED, c.MSG_CQ_INACTIVE.format(cq=name))
            return True, None
        strict = cq.spec.queueing_strategy == c.STRICT_FIFO
        wfpr = self.ctx.config.wait_for_pods_ready
        block = wfpr is not None and wfpr.block_admission
        stop_at_preempt = cq.spec.when_can_preempt == c.MAY_STOP_SEARCH
        stop_at_borrow = cq.spec.when_can_borrow == c.MAY_STOP_SEARCH
        # Workloads asking for the same podsets get the same answer until the usage changes
        # (upstream's SchedulingEquivalenceHashing); this keeps long queues of look-alikes cheap.
        # Who may be preempted depends on the preemptor, so a queue that preempts asks each one.
        answers: dict[tuple[PodSet, ...], tuple[Assignment, list[preemption.Target]]] = {}
        # The shapes (priority and podsets) a workload of this walk failed to fit: in a
        # BestEffortFIFO queue the equivalent workloads behind it are moved to the inadmissible
        # set untried and unwritten (SchedulingEquivalenceHashing, on by default; see the module).
        no_fit: set[queues.ShapeId] = set()
        shapes = scan.shapes.get(name, [])
        assert len(shapes) == len(pending)  # the scan's ready workloads of this queue
        last = len(pending) - 1  # past the last workload whose shape is not in no_fit: nothing to try
        for index in range(start, len(pending)):
            if index > last:
                break
            yield index
            wl = pending[index]
            shape = shapes[index]
            if shape in no_fit:
                continue
            if queues.has_failed_checks(wl):
                self.park(wl, c.REASON_PENDING_EVALUATION, c.MSG_FAILED_ADMISSION_CHECKS)
            elif not cq.spec.admits_namespace(wl.metadata.namespace):
                self.park(wl, c.REASON_MISCONFIGURED, c.MSG_NAMESPACE_MISMATCH)
            else:
                view = self.view(world, scan, cq, table, holding, cohort) if preempts else None
                found, targets = answers.get(wl.spec.pod_sets) or self.assign(
                    wl, table, used, view, stop_at_preempt, cohort, stop_at_borrow)
                if not preempts:
                    answers[wl.spec.pod_sets] = (found, targets)
                if defer and found.borrows > 0 and (found.reason is None or targets):
                    return True, index  # borrowing waits for every queue's heads within their quota
                if targets and not kep_993:
                    self.preempt(wl, cq, found, targets, cohort.tree.path(node) if cohort is not None else None)
                    return True, None  # the preemptor stays at the head until its targets release their quota
                if found.reason is not None and not targets:
                    self.park(wl, found.reason, found.message)
                    if not strict and self.ctx.config.gate(c.GATE_SCHEDULING_EQUIVALENCE_HASHING):
                        no_fit.add(shape)
                        last = scan.last_trying(name, no_fit)
                elif block and self.not_ready:
                    self.park(wl, c.REASON_WAITING_FOR_PODS_READY, c.MSG_WAITING_FOR_PODS_READY)
                    return False, None
                elif (new := self.admit(wl, cq, found.pod_sets, kep_993 and kep993.preemptions_pending(
                        wl, found.wants, running, table.nominal), found.considered())) is not None:
                    answers.clear()
                    wants = found.wants
                    if targets:
                        gone = {t.workload.metadata.uid for t in targets}
                        for target, held in holding:
                            if target.metadata.uid in gone:
                                if cohort is not None:
                                    cohort.tree.add_all(node, held, -1)
                                else:
                                    _subtract(used, held)
                        holding = [pair for pair in holding if pair[0].metadata.uid not in gone]
                    if kep_993 or preempts:
                        holding.append((new, wants))
                        running.append((new, wants))
                    if cohort is not None:
                        cohort.tree.add_all(node, wants)
                    else:
                        for fr, value in wants.items():
                            used[fr] = used.get(fr, _ZERO) + value
                    self.not_ready += 1
                    continue
            if strict:
                break
        return True, None

    # --- preemption within the queue (default semantics) ------------------------------------------

    def preempt(self, wl: Workload, cq: ClusterQueue, found: Assignment, targets: list[preemption.Target],
                path: str | None) -> None:
        """``IssuePreemptions`` and the preemptor's ``requeueAndUpdate``: ``QuotaReserved=False``
        ``WaitingForPreemptedWorkloads``, its assignment's message and "Pending the preemption of
        N workload(s)".  Without a reservation, it waits at the head of its queue (BestEffortFIFO
        keeps such a preemptor sticky, StrictFIFO keeps any head) until the targets release their
        quota, and is then admitted."""
        preempted, error = preemption.issue(self.txn, wl, targets, cq.metadata.name, path)
        self.error = self.error or error
        self.park(wl, c.REASON_WAITING_FOR_PREEMPTED_WORKLOADS,
                  found.message + c.MSG_PENDING_PREEMPTION.format(count=preempted))

    # --- KEP-993 (the kep-993-preemption semantics) ------------------------------------------------

    def kep_993_pass(self, world: World, cq: ClusterQueue, table: QuotaTable,
                     holding: list[tuple[Workload, preemption.Amounts]]) -> tuple[list[tuple[Workload, preemption.Amounts]], Usage]:
        """The queue's reservations as KEP-993 reads them (:func:`kep993.plan`): issue the
        preemptions whose preemptor's policy now allows them, take back the reservations whose
        preemptions can no longer happen, and return what the next reservations see: the
        workloads holding quota that nobody claimed, and their usage."""
        plan = kep993.plan(cq, holding, table.nominal, self.ctx.config, self.ctx.now)
        by_uid = {wl.metadata.uid: wl for wl, _ in holding}
        for uid, targets in plan.claims.items():
            preemptor = by_uid[uid]
            if kep993.policy_allows(world, preemptor, cq):
                _, error = preemption.issue(self.txn, preemptor, preemption.within_queue(targets, cq.metadata.name),
                                            cq.metadata.name)
                self.error = self.error or error
        for wl in plan.invalid:
            if not wl.is_admitted() and not wl.is_evicted():
                self.revoke(wl)
        self.kep_993_admit(cq, table, holding, {wl.metadata.uid for wl in plan.invalid})
        gone = plan.claimed | {wl.metadata.uid for wl in plan.invalid}
        return [pair for pair in holding if pair[0].metadata.uid not in gone], dict(plan.used)

    def kep_993_admit(self, cq: ClusterQueue, table: QuotaTable, holding: list[tuple[Workload, preemption.Amounts]],
                      revoked: set[str]) -> None:
        """KEP-993's "recheck that Admission settings are still valid" before ``Admitted``: a
        reservation whose checks are all Ready is admitted when it fits beside what may still
        run in the queue (the admitted workloads, and the evicted ones not released yet), else it
        stays ``Admitted=False`` ``WaitingForPreemptedWorkloads``.  It depends on the other
        workloads of the queue, so the scheduler decides it, not the workload controller."""
        now, config, name = self.ctx.now, self.ctx.config, cq.metadata.name
        running = [(wl, used) for wl, used in holding if wl.is_admitted() or wl.is_evicted()]
        for old, used in holding:
            wl = self.txn.get(*key_of(old))
            if not isinstance(wl, Workload) or wl.metadata.uid in revoked or wl.is_admitted() or wl.is_evicted() \
                    or not wl.has_quota_reservation() or not workload_status.all_checks_ready(wl):
                continue
            present = {s.name for s in wl.status.admission_checks}
            if not all(check in present for check in workload_status.checks_for_workload(wl, cq)):
                continue  # the workload controller has not listed its flavors' checks yet
            if kep993.preemptions_pending(wl, used, running, table.nominal):
                # Admitted=False WaitingForPreemptedWorkloads: no phase moves
                new = workload_status.sync_admitted_condition(wl, now, config, preemptions_pending=True)
                if new is not wl:
                    self.write(new)
                continue
            new, admitting = write_workload(wl, WorkloadTrigger.ADMIT, now=now, config=config)
            if self.write(new, (admitting,)):
                reserved = wl.condition(c.WORKLOAD_QUOTA_RESERVED)
                since = reserved.last_transition_time if reserved is not None and \
                    reserved.last_transition_time is not None else now
                self.txn.event(c.EVENT_TYPE_NORMAL, c.EVENT_ADMITTED,
                               c.MSG_EVENT_ADMITTED.format(cq=name, seconds=now - since), new)
                running.append((new, used))

    def revoke(self, wl: Workload) -> None:
        """KEP-993's re-validation fails: the preemptions the reservation counted on can no
        longer happen, so it is taken back (``QuotaReserved=False`` ``WaitingForQuota``)."""
        new, fired = write_workload(wl, WorkloadTrigger.REVOKE_RESERVATION, {Guard.BACKOFF: held_back(wl)},
                                    reason=c.REASON_WAITING_FOR_QUOTA, message=c.MSG_KEP_993_RESERVATION_REVOKED,
                                    now=self.ctx.now, config=self.ctx.config)
        if self.write(new, (fired,)):
            self.txn.event(c.EVENT_TYPE_WARNING, c.REASON_WAITING_FOR_QUOTA, c.MSG_KEP_993_RESERVATION_REVOKED, wl)


def _subtract(used: Usage, held: Mapping[FlavorResource, Decimal]) -> None:
    for fr, value in held.items():
        used[fr] = used.get(fr, _ZERO) - value


def schedule(world: World, ctx: Context, key: Key | None = None) -> Result:
    """One scheduling cycle; with ``key`` (a Workload), only that workload's queue."""
    cycle = _Cycle(Txn(world, ctx.now), ctx)
    only: str | None = None
    if key is not None:
        wl = world.get(*key)
        if not isinstance(wl, Workload) or not wl.spec.queue_name or not queues.is_admissible(wl, ctx.config):
            return NOTHING
        only = queues.cluster_queue_name(world, wl)
        if only is None:  # no LocalQueue: the queue manager never holds it
            return NOTHING
    found = queues.scan(world, ctx, only)
    result = _run(cycle, world, found, only)
    if only is None:
        _after_cycle(found, cycle, result)
    return result


def _after_cycle(found: queues.Scan, cycle: _Cycle, result: Result) -> None:
    """What the next cycle over every queue may skip (:func:`queues.idle`).  A cycle that changed
    nothing leaves the next with nothing to do until something it reads changes.  So does one
    whose only writes admitted or set aside workloads it found waiting, none set aside before
    the last admission: it admitted, in queue order, all that fit, and the next cycle tries
    those it set aside on the usage they were tried on, reaching the same verdicts in the same
    words.  Not so when a workload was set aside before an admission: the next cycle tells it,
    in its message, how much more it needs of the usage the admission grew; nor for a cycle
    that preempts or reserves for KEP-993, which moves other workloads."""
    ix = found.index
    ix.idle = None
    ix.expected = {}
    if result.error is not None:
        return
    expected: dict[Key, Workload] = {}
    if result.effects:
        if cycle.ctx.config.kep_993_preemption or cycle.admitted_after:
            return
        for effect in result.effects:
            if isinstance(effect, Update):
                obj = effect.obj
                if not isinstance(obj, Workload):
                    return
                key = key_of(obj)
                ref = (obj.metadata.namespace, obj.spec.queue_name)
                if key not in ix.pending.get(ref, ()) and key not in ix.gated.get(ref, ()):
                    return  # not one it found waiting (the writes are not applied yet)
                expected[key] = obj
            elif not isinstance(effect, (Event, MetricInc)):
                return
    ix.idle = queues.Idle(cycle.ctx.config, ix.version, ix.holding_version if cycle.read_holding else None,
                          cycle.ctx.now, found.wakes)
    ix.expected = expected


def _interleave(cycle: _Cycle, world: World, walks: list[tuple[ClusterQueue, list[Workload], int]], scan: queues.Scan,
                tree: cohorts.Tree) -> bool:
    """The second pass over a cohort's queues: one workload at a time, always the head (of
    the queues' next workloads) with the highest priority, then the earliest in queue order,
    as upstream orders the heads it tries in a cycle; False when blockAdmission stops the
    whole scheduling loop."""
    heads: dict[str, tuple[int, Iterator[int], list[Workload]]] = {}

    def advance(name: str, steps: Iterator[int], pending: list[Workload]) -> bool:
        try:
            heads[name] = (next(steps), steps, pending)
        except StopIteration as done:
            heads.pop(name, None)
            go_on: bool = done.value[0]
            return go_on
        return True

    for cq, pending, start in walks:
        name = cq.metadata.name
        if not advance(name, cycle.walker(world, cq, pending, scan, tree, start), pending):
            return False
    config = cycle.ctx.config

    def order(name: str) -> tuple[int, int, str]:
        index, _, pending = heads[name]
        wl = pending[index]
        return -preemption.priority(wl), workload_status.queue_order_timestamp(wl, config), name

    while heads:
        name = min(heads, key=order)
        _, steps, pending = heads[name]
        if not advance(name, steps, pending):
            return False
    return True


def _run(cycle: _Cycle, world: World, found: queues.Scan, only: str | None) -> Result:
    """The cycle over the queues ``found`` holds (``only``: that ClusterQueue's)."""
    ctx = cycle.ctx
    wfpr = ctx.config.wait_for_pods_ready
    if wfpr is not None and wfpr.block_admission:
        cycle.read_holding = True
        cycle.not_ready = sum(1 for held in found.index.holding.values() for wl in held.values()
                              if not queues.pods_ready(wl))
    names = set(found.ready)
    if ctx.config.kep_993_preemption:
        # KEP-993: a queue's reservations may have preemptions to issue with nothing pending
        names |= {name for name in found.index.holding if only is None or name == only}
    tree = cohorts.Tree.build(world, found.index.used) if any(
        isinstance(cq, ClusterQueue) and cq.spec.cohort_name
        for cq in (world.get(*key) for key in world.keys(c.CLUSTER_QUEUE))) else None
    # Upstream takes each queue's head per cycle and tries the heads that need no borrowing
    # first: in a cohort, every queue's workloads within its own quota go before any borrowing.
    deferred: dict[str, int] = {}
    first_pass = tree is not None and not ctx.config.kep_993_preemption
    if first_pass:
        assert tree is not None
        for name in sorted(names):
            cq = world.get(c.CLUSTER_QUEUE, "", name)
            if isinstance(cq, ClusterQueue) and cohorts.cq_node(name) in tree:
                go_on, at = cycle.walk(world, cq, found.ready.get(name, []), found, tree, defer=True)
                if not go_on:
                    return cycle.txn.result(error=cycle.error)
                if at is not None:
                    deferred[name] = at
    second: list[tuple[ClusterQueue, list[Workload], int]] = []
    for name in sorted(names):
        pending = found.ready.get(name, [])
        cq = world.get(c.CLUSTER_QUEUE, "", name)
        if not isinstance(cq, ClusterQueue):
            # the queue manager holds no queue for a ClusterQueue that does not exist; the
            # workload controller tells its workloads so (``getQueueBlocker``)
            continue
        if first_pass and tree is not None and cohorts.cq_node(name) in tree:
            if name in deferred:
                second.append((cq, pending, deferred[name]))
            continue
        go_on, _ = cycle.walk(world, cq, pending, found, tree)
        if not go_on:
            return cycle.txn.result(error=cycle.error)
    if second and tree is not None:
        _interleave(cycle, world, second, found, tree)
    return cycle.txn.result(error=cycle.error)
