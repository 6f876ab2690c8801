"""The ClusterQueue status reconciler: the ``Active`` condition, the workload counts and the
quota in use.

Kueue derives a ClusterQueue's activity in its scheduler cache (:mod:`.activity`: missing or
inactive flavors and checks, MultiKueue constraints), and the ClusterQueue controller copies it
into ``status.conditions`` together with ``pendingWorkloads`` (queue manager; every pending
workload of an inactive queue counts as inadmissible), ``reservingWorkloads`` and
``admittedWorkloads``, and ``flavorsReservation`` (every workload holding quota) and
``flavorsUsage`` (the admitted ones) from the cache.  The scheduler reads the same activity, so
the condition and the scheduler's "inactive" never disagree.  Topology reasons are not
modelled.

A ClusterQueue being deleted (``deletionTimestamp`` set, held by Kueue's
``kueue.x-k8s.io/resource-in-use`` finalizer) is ``Terminating``; the reconcile removes the
finalizer once no workload holds quota in it (``Cache.ClusterQueueEmpty``), and the API
server then removes the queue.  Kueue's webhook adds that finalizer to every ClusterQueue on
create; the model does not: a world object carries the finalizers it is given.
"""

from __future__ import annotations

from decimal import Decimal

from kueue_provreq.api import constants as c
from kueue_provreq.api.evolve import evolve
from kueue_provreq.api.memo import memo
from kueue_provreq.api.meta import put_condition
from kueue_provreq.api.objects import Key
from kueue_provreq.api.quantity import Quantity
from kueue_provreq.api.queues import ClusterQueue, ClusterQueueSpec, FlavorUsage, ResourceUsage
from kueue_provreq.controllers import queues
from kueue_provreq.controllers.activity import inactive_reason
from kueue_provreq.controllers.context import Context
from kueue_provreq.controllers.usage import FlavorResource, Usage
from kueue_provreq.world import NOTHING, Result, Txn, World


def flavor_usage(cq: ClusterQueue, used: Usage, current: tuple[FlavorUsage, ...] = (),
                 with_borrowed: bool = True) -> tuple[FlavorUsage, ...]:
    """``Cache.getUsage``: one entry per flavor of the queue's resource groups (in their order),
    each with every resource its group covers (sorted by name), the total of ``used`` (what
    the queue's workloads hold) of it and what of it is ``borrowed`` (above the nominal quota;
    ``0`` for a queue without a cohort, and written all the same: Go does not omit a zero
    Quantity).  ``current`` (what the status says) is returned when it says just that: the
    reconcile runs on every change of the counts, mostly to find the usage as it was.
    ``with_borrowed=False`` gives a LocalQueue's shape (``LocalQueueResourceUsage``: name and
    total only).  The answer is memoised on the queue's spec and the usage: a queue's status
    then holds the memo's own answer, and finding it unchanged is an identity test."""
    built = _flavor_usage(cq.spec, tuple(used.items()), with_borrowed)
    return current if current is built or current == built else built


@memo(4096)
def _flavor_usage(spec: ClusterQueueSpec, used: tuple[tuple[FlavorResource, Decimal], ...],
                  with_borrowed: bool) -> tuple[FlavorUsage, ...]:
    """:func:`flavor_usage` built afresh, from the queue's spec and its usage's items."""
    zero = Decimal(0)
    amounts = dict(used)
    in_cohort = bool(spec.cohort_name)
    nominal = {(f.name, r.name): r.nominal_quota.value
               for g in spec.resource_groups for f in g.flavors for r in f.resources} if in_cohort else {}
    layout = [(flavor.name, sorted(group.covered_resources))
              for group in spec.resource_groups for flavor in group.flavors]

    def borrowed(fr: tuple[str, str]) -> Decimal:
        return max(zero, amounts.get(fr, zero) - nominal.get(fr, zero)) if in_cohort else zero

    return tuple(FlavorUsage(flavor, tuple(ResourceUsage(name, Quantity.of(amounts.get((flavor, name), zero)),
                                                         Quantity.of(borrowed((flavor, name))) if with_borrowed else None)
                                           for name in names))
                 for flavor, names in layout)


def reconcile(world: World, key: Key, ctx: Context) -> Result:
    """Write the ``Active`` condition, the counts and the usage, only when something differs."""
    txn = Txn(world, ctx.now)
    cq = txn.get(*key)
    if not isinstance(cq, ClusterQueue):
        return NOTHING
    name = cq.metadata.name
    index = queues.index(world)
    meta = cq.metadata
    if meta.terminating and c.FINALIZER_RESOURCE_IN_USE in meta.finalizers and not index.holding.get(name):
        released = tuple(f for f in meta.finalizers if f != c.FINALIZER_RESOURCE_IN_USE)
        return txn.result(error=txn.update(evolve(cq, metadata=evolve(meta, finalizers=released))))
    problem = inactive_reason(world, cq)
    gen, now, old = cq.metadata.generation, ctx.now, cq.status
    if problem is None:
        conditions = put_condition(old.conditions, c.CQ_ACTIVE, c.TRUE, c.REASON_CQ_READY, c.MSG_CQ_READY, gen, now)
    else:
        conditions = put_condition(old.conditions, c.CQ_ACTIVE, c.FALSE, problem[0], problem[1], gen, now)
    empty: Usage = {}
    pending = index.pending_total(world, name, ctx.config)
    reserving = len(index.holding.get(name, ()))
    admitted = len(index.admitted.get(name, ()))
    reservation = flavor_usage(cq, index.used.get(name, empty), old.flavors_reservation)
    usage = flavor_usage(cq, index.admitted_used.get(name, empty), old.flavors_usage)
    # ``updateCqStatusIfChanged``: the condition and the usage come back as the very objects the
    # status holds when they are unchanged, so finding the status unchanged (most reconciles)
    # builds nothing
    if conditions is old.conditions and reservation is old.flavors_reservation and usage is old.flavors_usage \
            and (pending, reserving, admitted) == (old.pending_workloads, old.reserving_workloads,
                                                   old.admitted_workloads):
        return NOTHING
    status = evolve(old, conditions=conditions, pending_workloads=pending, reserving_workloads=reserving,
                    admitted_workloads=admitted, flavors_reservation=reservation, flavors_usage=usage)
    error = txn.update(evolve(cq, status=status))
    return txn.result(error=error)
