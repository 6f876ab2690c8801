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
from kueue_provreq.api.provisioning import PodTemplate, ProvisioningRequest
from kueue_provreq.api.queues import ClusterQueue
from kueue_provreq.invariants.reading import name, workloads
from kueue_provreq.invariants.registry import CheckContext, state_invariant
from kueue_provreq.invariants.upstream import (
    requests_of,
)
from kueue_provreq.machines import ADMISSION_CHECK_MACHINE
from kueue_provreq.machines.phases import provisioning_request_phase
from kueue_provreq.machines.requests import ENDING_PHASES
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
