"""Kueue's LocalQueue controller (``pkg/controller/core/localqueue_controller.go``): the
``Active`` condition, the workload counts and the quota in use, where a team sees its own
two-phase admission.

One ``Reconcile`` (``:177-215``) and ``updateStatusIfChanged`` (``:660-690``):

* a stopped LocalQueue (``stopPolicy`` ``Hold`` or ``HoldAndDrain``) is ``Active=False``
  ``Stopped`` "LocalQueue is stopped", and counts no pending workload (the queue manager holds
  none of it);
* a LocalQueue whose ClusterQueue does not exist is ``Active=False``
  ``ClusterQueueDoesNotExist`` "Can't submit new workloads to clusterQueue", with empty usage;
* otherwise ``Active`` follows the ClusterQueue's: ``True`` ``Ready`` "Can submit new workloads
  to localQueue", or ``False`` ``ClusterQueueIsInactive``.  Upstream reads the ClusterQueue's
  ``Active`` condition; the model reads the answer that condition is written from
  (:func:`~kueue_provreq.controllers.activity.inactive_reason`), so the order the two
  reconcilers run in never shows.

``pendingWorkloads`` counts the LocalQueue's admissible workloads (``Manager.PendingWorkloads``),
``reservingWorkloads`` / ``admittedWorkloads`` and ``flavorsReservation`` / ``flavorsUsage``
those holding quota (admitted ones), as Kueue's cache keeps them per LocalQueue, one entry per
flavor of the ClusterQueue's resource groups.  The status is written only when it differs.
Fair sharing (``status.fairSharing``) and metrics are not modelled.
"""

from __future__ import annotations

from kueue_provreq.api import constants as c
from kueue_provreq.api.evolve import evolve
from kueue_provreq.api.meta import put_condition
from kueue_provreq.api.objects import Key
from kueue_provreq.api.queues import ClusterQueue, FlavorUsage, LocalQueue
from kueue_provreq.controllers import queues
from kueue_provreq.controllers.activity import inactive_reason
from kueue_provreq.controllers.clusterqueue import flavor_usage
from kueue_provreq.controllers.context import Context
from kueue_provreq.controllers.usage import Usage
from kueue_provreq.world import NOTHING, Result, Txn, World

_EMPTY: Usage = {}


def reconcile(world: World, key: Key, ctx: Context) -> Result:
    txn = Txn(world, ctx.now)
    lq = txn.get(*key)
    if not isinstance(lq, LocalQueue):
        return NOTHING
    found = txn.get(c.CLUSTER_QUEUE, "", lq.spec.cluster_queue)
    cq = found if isinstance(found, ClusterQueue) else None
    if lq.spec.stopped:
        state = (c.FALSE, c.REASON_LQ_STOPPED_STATUS, c.MSG_LQ_STOPPED_STATUS)
    elif cq is None:
        state = (c.FALSE, c.REASON_LQ_CQ_MISSING, c.MSG_LQ_CQ_INACTIVE)
    elif inactive_reason(world, cq) is None:
        state = (c.TRUE, c.REASON_LQ_READY, c.MSG_LQ_READY)
    else:
        state = (c.FALSE, c.REASON_LQ_CQ_INACTIVE, c.MSG_LQ_CQ_INACTIVE)
    old = lq.status
    conditions = put_condition(old.conditions, c.LQ_ACTIVE, *state, lq.metadata.generation, ctx.now)
    counts = _counted(world, lq, cq, ctx)
    # the condition and the usage come back as the very objects the status holds when they are
    # unchanged (but the empty usage of a missing ClusterQueue), so finding the status unchanged
    # (most reconciles) builds nothing
    if conditions is old.conditions and counts == (old.pending_workloads, old.reserving_workloads,
                                                   old.admitted_workloads, old.flavors_reservation, old.flavors_usage):
        return NOTHING
    pending, reserving, admitted, reservation, usage = counts
    status = evolve(old, conditions=conditions, pending_workloads=pending, reserving_workloads=reserving,
                    admitted_workloads=admitted, flavors_reservation=reservation, flavors_usage=usage)
    return txn.result(error=txn.update(evolve(lq, status=status)))


def _counted(world: World, lq: LocalQueue, cq: ClusterQueue | None, ctx: Context
             ) -> tuple[int, int, int, tuple[FlavorUsage, ...], tuple[FlavorUsage, ...]]:
    """The counts (pending, reserving, admitted) and the usage (reserved, admitted), as the
    queue manager and the cache give them (a missing ClusterQueue: no usage at all); a usage
    equal to the status's is the status's own."""
    index = queues.index(world)
    ref = (lq.metadata.namespace, lq.metadata.name)
    pending = 0 if lq.spec.stopped else index.local_pending(ref, ctx.config)
    if cq is None:
        return pending, 0, 0, (), ()
    status = lq.status
    return (pending, index.lq_holding.get(ref, 0), index.lq_admitted.get(ref, 0),
            flavor_usage(cq, index.lq_used.get(ref, _EMPTY), status.flavors_reservation, False),
            flavor_usage(cq, index.lq_admitted_used.get(ref, _EMPTY), status.flavors_usage, False))
