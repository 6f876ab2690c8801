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
from kueue_provreq.api.meta import Condition, set_condition
from kueue_provreq.api.objects import Key
from kueue_provreq.api.queues import ClusterQueue, LocalQueue, LocalQueueStatus
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
    cond = Condition(c.LQ_ACTIVE, *state, None, lq.metadata.generation)
    conditions, _ = set_condition(lq.status.conditions, cond, ctx.now)
    status = _counted(world, lq, cq, ctx, evolve(lq.status, conditions=conditions))
    if status == lq.status:
        return NOTHING
    return txn.result(error=txn.update(evolve(lq, status=status)))


def _counted(world: World, lq: LocalQueue, cq: ClusterQueue | None, ctx: Context,
             status: LocalQueueStatus) -> LocalQueueStatus:
    """``status`` with the counts and the usage, as the queue manager and the cache give them (a
    missing ClusterQueue: no usage at all)."""
    index = queues.index(world)
    ref = (lq.metadata.namespace, lq.metadata.name)
    pending = 0 if lq.spec.stopped else index.local_pending(ref, ctx.config)
    if cq is None:
        return evolve(status, pending_workloads=pending, reserving_workloads=0, admitted_workloads=0,
                      flavors_reservation=(), flavors_usage=())
    return evolve(status, pending_workloads=pending,
                  reserving_workloads=index.lq_holding.get(ref, 0),
                  admitted_workloads=index.lq_admitted.get(ref, 0),
                  flavors_reservation=flavor_usage(cq, index.lq_used.get(ref, _EMPTY), status.flavors_reservation,
                                                   False),
                  flavors_usage=flavor_usage(cq, index.lq_admitted_used.get(ref, _EMPTY), status.flavors_usage,
                                             False))
