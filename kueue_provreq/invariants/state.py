"""State invariants: what every state a driver reaches must show.

Each is ``f(world, ctx) -> violations`` and registers itself with
:func:`~kueue_provreq.invariants.registry.state_invariant`, saying whether it holds in every
state, once the controllers have settled, or once nothing is scheduled any more.  Its docstring
states the rule and the upstream source it encodes: a section of
``kueue-provisioning-controller.md`` (PC), of ``kueue-admission-and-requeue.md`` (AR), or a KEP.
"""

from __future__ import annotations

from decimal import Decimal

from kueue_provreq.api import constants as c
from kueue_provreq.api.queues import ClusterQueue
from kueue_provreq.invariants.reading import name, workloads
from kueue_provreq.invariants.registry import CheckContext, state_invariant
from kueue_provreq.machines import ADMISSION_CHECK_MACHINE
from kueue_provreq.world import World


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
    """The usage of a ClusterQueue (the sum of ``resourceUsage`` of every workload holding quota in
    it, per flavor and resource) never exceeds its nominal quota: the model has no cohorts, so
    nothing may be borrowed (AR A.3, A.10: reserved quota counts in the ClusterQueue's usage).
    A finished workload keeps QuotaReserved=True but no longer counts: Kueue's cache drops it."""
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
