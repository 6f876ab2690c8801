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
usage only grows between such events, the verdict is the same and nothing is rewritten.

Not modelled: cohorts and borrowing, preemption (so "insufficient unused quota" never finds
candidates and is ``WaitingForQuota``), partial admission, topology, node affinity and
taints against flavors, namespace selectors, ``status.resourceRequests``, and the
"Flavors considered" suffix of the ``QuotaReserved`` event.  Upstream emits the Warning of a
set-aside workload on every cycle; the model emits it only when the ``QuotaReserved``
condition changes, so that repeated cycles settle.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import ROUND_CEILING, Decimal
from functools import lru_cache

import attrs

from kueue_provreq.api import constants as c
from kueue_provreq.api.frozen import FrozenMap
from kueue_provreq.api.meta import Json, find_condition
from kueue_provreq.api.objects import Key
from kueue_provreq.api.quantity import Quantity
from kueue_provreq.api.queues import ClusterQueue
from kueue_provreq.api.workload import Admission, PodSet, PodSetAssignment, Workload
from kueue_provreq.controllers import clusterqueue, queues, workload_status
from kueue_provreq.controllers.context import Context
from kueue_provreq.machines import Guard, Transition, WorkloadTrigger
from kueue_provreq.world import NOTHING, Result, Txn, World, truncate

FlavorResource = tuple[str, str]
Usage = dict[FlavorResource, Decimal]

# Flavor assignment modes, ordered from worst to best as upstream's FlavorAssignmentMode.
_NO_FIT, _PREEMPT, _FIT = 0, 1, 2
_ZERO = Decimal(0)


# --- what a workload asks for -------------------------------------------------------------


def _add_into(total: dict[str, Decimal], more: dict[str, Decimal]) -> None:
    for name, value in more.items():
        total[name] = total.get(name, _ZERO) + value


def _max_into(total: dict[str, Decimal], other: dict[str, Decimal]) -> None:
    for name, value in other.items():
        if value > total.get(name, _ZERO):
            total[name] = value


def _container_requests(container: Json) -> dict[str, Decimal]:
    """Requests, with limits standing in for missing requests (Kueue defaults them so)."""
    resources = container.get("resources") or {}
    out = {name: Quantity.parse(v).value for name, v in (resources.get("limits") or {}).items()}
    out.update({name: Quantity.parse(v).value for name, v in (resources.get("requests") or {}).items()})
    return out


@lru_cache(maxsize=4096)
def pod_requests(ps: PodSet) -> FrozenMap[str, Decimal]:
    """One pod's requests as ``resourcehelper.PodRequests`` adds them up: the sum of the
    containers, at least the largest init container (sidecars, ``restartPolicy: Always``,
    run beside everything after them), plus the pod overhead.  Cached: PodSets are frozen,
    and a queue of identical workloads parses its template once."""
    spec = ps.template.get("spec") or {}
    total: dict[str, Decimal] = {}
    for container in spec.get("containers") or ():
        _add_into(total, _container_requests(container))
    sidecars: dict[str, Decimal] = {}
    init_peak: dict[str, Decimal] = {}
    for container in spec.get("initContainers") or ():
        reqs = _container_requests(container)
        if container.get("restartPolicy") == "Always":
            _add_into(total, reqs)
            _add_into(sidecars, reqs)
            running = dict(sidecars)
        else:
            running = dict(reqs)
            _add_into(running, sidecars)
        _max_into(init_peak, running)
    _max_into(total, init_peak)
    _add_into(total, {name: Quantity.parse(v).value for name, v in (spec.get("overhead") or {}).items()})
    return FrozenMap(total)


@lru_cache(maxsize=4096)
def podset_requests(ps: PodSet, count: int, counts_pods: bool) -> FrozenMap[str, Decimal]:
    """The requests of ``count`` pods; ``pods`` itself is requested when the queue covers it."""
    out = {name: value * count for name, value in pod_requests(ps).items()}
    if counts_pods:
        out["pods"] = Decimal(count)
    return FrozenMap(out)


@lru_cache(maxsize=4096)
def _quantity(value: Decimal) -> Quantity:
    return Quantity.of(value)


def usage_of(reserving: list[Workload]) -> Usage:
    """Quota held per (flavor, resource): each admission's ``resourceUsage``, or, when an
    assignment has none, its podset's requests for the assigned count."""
    used: Usage = {}
    for wl in reserving:
        assert wl.status.admission is not None
        podsets = {ps.name: ps for ps in wl.spec.pod_sets}
        for psa in wl.status.admission.pod_set_assignments:
            if psa.resource_usage:
                amounts: Mapping[str, Decimal] = {name: q.value for name, q in psa.resource_usage.items()}
            elif psa.name in podsets:
                ps = podsets[psa.name]
                amounts = podset_requests(ps, ps.count if psa.count is None else psa.count, False)
            else:
                continue
            for name, value in amounts.items():
                flavor = psa.flavors.get(name)
                if flavor is not None:
                    used[(flavor, name)] = used.get((flavor, name), _ZERO) + value
    return used


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

    @classmethod
    def of(cls, cq: ClusterQueue) -> QuotaTable:
        groups = []
        group_of: dict[str, int] = {}
        nominal: dict[FlavorResource, Decimal] = {}
        for i, rg in enumerate(cq.spec.resource_groups):
            groups.append((frozenset(rg.covered_resources), tuple(f.name for f in rg.flavors)))
            for name in rg.covered_resources:
                group_of.setdefault(name, i)
            for fq in rg.flavors:
                for rq in fq.resources:
                    nominal[(fq.name, rq.name)] = rq.nominal_quota.value
        return cls(tuple(groups), FrozenMap(group_of), FrozenMap(nominal))


@attrs.frozen
class Assignment:
    """The flavor assigner's answer: podset assignments when the workload fits, else the
    ``QuotaReserved=False`` reason and message."""

    pod_sets: tuple[PodSetAssignment, ...] = ()
    reason: str | None = None
    message: str = ""


def _try_flavor(flavor: str, resources: list[str], requests: Mapping[str, Decimal], own: Usage,
                table: QuotaTable, used: Usage) -> tuple[int, list[str]]:
    """``fitsResourceQuota`` for each resource of one group in one flavor: above the nominal
    quota never fits; above what is left would need preemption."""
    mode = _FIT
    reasons: list[str] = []
    for name in resources:
        want = requests[name] + own.get((flavor, name), _ZERO)
        nominal = table.nominal.get((flavor, name), _ZERO)
        if want > nominal:
            reasons.append(c.MSG_REQUEST_EXCEEDS_CAPACITY.format(
                resource=name, flavor=flavor, request=format_amount(name, want),
                capacity=format_amount(name, nominal)))
            return _NO_FIT, reasons
        available = max(_ZERO, nominal - used.get((flavor, name), _ZERO))
        if want > available:
            reasons.append(c.MSG_INSUFFICIENT_UNUSED_QUOTA.format(
                resource=name, flavor=flavor, more=format_amount(name, want - available)))
            mode = _PREEMPT
    return mode, reasons


def assign_flavors(wl: Workload, table: QuotaTable, used: Usage) -> Assignment:
    """``FlavorAssigner.Assign`` without cohorts: podset by podset, each resource group takes
    its first flavor where every requested resource of the group fits, else the first where
    preemption could help; earlier podsets' assignments count against later ones."""
    own: Usage = {}
    assigned: list[PodSetAssignment] = []
    messages: list[str] = []
    waiting = False
    counts_pods = "pods" in table.group_of
    for ps in wl.spec.pod_sets:
        requests = podset_requests(ps, ps.count, counts_pods)
        names = sorted(requests)
        flavors: dict[str, str] = {}
        reasons: list[str] = []
        mode = _FIT
        failure: str | None = None
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
            best_mode = _NO_FIT
            tried: list[str] = []
            for flavor in group_flavors:
                flavor_mode, why = _try_flavor(flavor, resources, requests, own, table, used)
                if flavor_mode == _FIT:
                    best, best_mode = flavor, _FIT
                    tried.clear()
                    break
                tried.extend(why)
                if flavor_mode > best_mode:
                    best, best_mode = flavor, flavor_mode
            if best is None:
                reasons, failure = tried, c.REASON_EXCEEDS_MAX_QUOTA
                break
            reasons.extend(tried)
            mode = min(mode, best_mode)
            flavors.update({r: best for r in resources})
        if failure is not None or mode != _FIT:
            messages.append(c.MSG_ASSIGN_FLAVORS_FAILED.format(podset=ps.name, reasons=", ".join(sorted(reasons))))
        if failure is not None:
            return Assignment(reason=failure, message="; ".join(messages))
        waiting = waiting or mode != _FIT
        for name, flavor in flavors.items():
            own[(flavor, name)] = own.get((flavor, name), _ZERO) + requests[name]
        assigned.append(PodSetAssignment(
            name=ps.name, flavors=FrozenMap({r: flavors[r] for r in sorted(flavors)}),
            resource_usage=FrozenMap({r: _quantity(requests[r]) for r in names}), count=ps.count))
    if waiting:
        return Assignment(reason=c.REASON_WAITING_FOR_QUOTA, message="; ".join(messages))
    return Assignment(pod_sets=tuple(assigned))


# --- one cycle ------------------------------------------------------------------------------------


@attrs.define
class _Cycle:
    """The writes of one cycle, and what it has learnt so far (usage grows as it admits)."""

    txn: Txn
    ctx: Context
    error: str | None = None
    required: dict[tuple[str, frozenset[str]], list[str]] = attrs.Factory(dict)
    """``checks_for_workload`` depends only on the queue and the assigned flavors."""
    not_ready: int = 0
    """Workloads holding quota without PodsReady=True (blockAdmission only)."""

    def write(self, wl: Workload, fired: tuple[Transition, ...] = ()) -> bool:
        failed = self.txn.update(wl, fired)
        if failed is not None:
            self.error = self.error or failed
            return False
        return True

    def park(self, wl: Workload, reason: str, message: str) -> None:
        """``requeueAndUpdate`` for a workload not admitted: QuotaReserved=False with the
        reason and a Warning event, written only when the condition changes."""
        message = truncate(message, c.CONDITION_MESSAGE_LIMIT)
        held = wl.condition(c.WORKLOAD_QUOTA_RESERVED)
        if wl.status.admission is None and held is not None and \
                (held.status, held.reason, held.message, held.observed_generation) == \
                (c.FALSE, reason, message, wl.metadata.generation):
            # Already parked so: only Admitted can still move (cheap check, every cycle).
            new = workload_status.sync_admitted_condition(wl, self.ctx.now, self.ctx.config)
        else:
            new = workload_status.unset_quota_reservation(wl, reason, message, self.ctx.now, self.ctx.config)
        if new != wl and self.write(new):
            self.txn.event(c.EVENT_TYPE_WARNING, reason, message, wl)

    def admit(self, wl: Workload, cq: ClusterQueue, pod_sets: tuple[PodSetAssignment, ...]) -> bool:
        """``admit`` / ``prepareWorkload`` and the events of ``recordWorkloadAdmissionMetrics``."""
        now, name = self.ctx.now, cq.metadata.name
        new = workload_status.set_quota_reservation(wl, Admission(name, pod_sets), now)
        used = frozenset(f for psa in pod_sets for f in psa.flavors.values())
        required = self.required.get((name, used))
        if required is None:
            required = self.required[(name, used)] = workload_status.checks_for_workload(new, cq)
        present = {s.name for s in new.status.admission_checks}
        complete = all(check in present for check in required)
        reserve = workload_status.fire(wl, WorkloadTrigger.RESERVE_QUOTA, {
            Guard.ALL_CHECKS_READY: complete and workload_status.all_checks_ready(new)})
        if complete:
            # Admitted=True when the machine says so; else Admitted=False with its reason
            new = workload_status.sync_admitted_condition(new, now, self.ctx.config)
        if not self.write(new, (reserve,)):
            return False
        requeued = find_condition(wl.status.conditions, c.WORKLOAD_REQUEUED)
        queued_at = requeued.last_transition_time if requeued is not None else wl.metadata.creation_timestamp
        waited = now - (queued_at if queued_at is not None else now)
        self.txn.event(c.EVENT_TYPE_NORMAL, c.EVENT_QUOTA_RESERVED, c.MSG_EVENT_QUOTA_RESERVED.format(cq=name, seconds=waited), new)
        if new.is_admitted():
            self.txn.event(c.EVENT_TYPE_NORMAL, c.EVENT_ADMITTED, c.MSG_EVENT_ADMITTED.format(cq=name, seconds=0), new)
        return True

    def walk(self, world: World, cq: ClusterQueue, pending: list[Workload], used: Usage) -> bool:
        """Try one ClusterQueue's pending workloads in order; False when blockAdmission
        stops the whole scheduling loop."""
        name = cq.metadata.name
        problem = clusterqueue.inactive_reason(world, cq)
        if problem is not None:
            for wl in pending:
                self.park(wl, c.REASON_SUSPENDED, c.MSG_CQ_INACTIVE.format(cq=name))
            return True
        strict = cq.spec.queueing_strategy == c.STRICT_FIFO
        table = QuotaTable.of(cq)
        wfpr = self.ctx.config.wait_for_pods_ready
        block = wfpr is not None and wfpr.block_admission
        # Workloads asking for the same podsets get the same answer until the usage changes
        # (upstream's SchedulingEquivalenceHashing); this keeps long queues of look-alikes cheap.
        answers: dict[tuple[PodSet, ...], Assignment] = {}
        for wl in pending:
            if queues.has_failed_checks(wl):
                self.park(wl, c.REASON_PENDING_EVALUATION, c.MSG_FAILED_ADMISSION_CHECKS)
            else:
                found = answers.get(wl.spec.pod_sets)
                if found is None:
                    found = answers[wl.spec.pod_sets] = assign_flavors(wl, table, used)
                if found.reason is not None:
                    self.park(wl, found.reason, found.message)
                elif block and self.not_ready:
                    self.park(wl, c.REASON_WAITING_FOR_PODS_READY, c.MSG_WAITING_FOR_PODS_READY)
                    return False
                elif self.admit(wl, cq, found.pod_sets):
                    answers.clear()
                    for psa in found.pod_sets:
                        for resource, flavor in psa.flavors.items():
                            used[(flavor, resource)] = used.get((flavor, resource), _ZERO) + \
                                psa.resource_usage[resource].value
                    self.not_ready += 1
                    continue
            if strict:
                break
        return True


def schedule(world: World, ctx: Context, key: Key | None = None) -> Result:
    """One scheduling cycle; with ``key`` (a Workload), only that workload's queue."""
    cycle = _Cycle(Txn(world, ctx.now), ctx)
    only: str | None = None
    if key is not None:
        wl = world.get(*key)
        if not isinstance(wl, Workload) or not wl.spec.queue_name or not queues.is_admissible(wl):
            return NOTHING
        only = queues.cluster_queue_name(world, wl)
        if only is None:
            cycle.park(wl, c.REASON_MISCONFIGURED, c.MSG_LQ_NOT_FOUND.format(lq=wl.spec.queue_name))
            return cycle.txn.result(error=cycle.error)
    found = queues.scan(world, ctx, only)
    for wl, message in found.misrouted:
        cycle.park(wl, c.REASON_MISCONFIGURED, message)
    wfpr = ctx.config.wait_for_pods_ready
    if wfpr is not None and wfpr.block_admission:
        cycle.not_ready = sum(1 for wls in found.reserving.values() for wl in wls if not queues.pods_ready(wl))
    for name in sorted(found.ready):
        pending = found.ready[name]
        cq = world.get(c.CLUSTER_QUEUE, "", name)
        if not isinstance(cq, ClusterQueue):
            for wl in pending:
                cycle.park(wl, c.REASON_MISCONFIGURED, c.MSG_CQ_NOT_FOUND.format(cq=name))
            continue
        if not cycle.walk(world, cq, pending, usage_of(found.reserving.get(name, []))):
            break
    return cycle.txn.result(error=cycle.error)
