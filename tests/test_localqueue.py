"""The LocalQueue status reconciler: the Active condition, the workload counts and the quota
its workloads hold, as Kueue's LocalQueue controller writes them."""

from __future__ import annotations

from decimal import Decimal

from kueue_provreq.api import constants as c
from kueue_provreq.api.evolve import evolve
from kueue_provreq.api.meta import Time
from kueue_provreq.api.queues import LocalQueue
from kueue_provreq.api.workload import WorkloadStatus
from kueue_provreq.controllers import localqueue
from kueue_provreq.controllers.context import Context
from kueue_provreq.world import NOTHING, World

from builders import ADMITTED, NS, T0
from test_scheduler import cluster_queue, flavor, local_queue, reserving, workload

KEY = (c.LOCAL_QUEUE, NS, "lq")


def reconcile(world: World) -> LocalQueue:
    result = localqueue.reconcile(world, KEY, Context(Time(T0)))
    assert result.error is None
    for effect in result.effects:
        world.apply(effect)
    lq = world.get(*KEY)
    assert isinstance(lq, LocalQueue)
    return lq


def active(lq: LocalQueue) -> tuple[str, str, str]:
    (cond,) = lq.status.conditions
    return cond.status, cond.reason, cond.message


def totals(lq: LocalQueue, which: str = "flavors_reservation") -> dict[str, Decimal]:
    return {f"{u.name}/{r.name}": r.total.value for u in getattr(lq.status, which) for r in u.resources}


def test_a_queue_whose_cluster_queue_can_admit_is_ready_and_counts_its_workloads() -> None:
    admitted = reserving("a", "2")
    admitted = admitted.with_status(conditions=(*admitted.status.conditions, ADMITTED))
    world = World([flavor("default"), cluster_queue(), local_queue(), admitted, reserving("b", "1"),
                   workload("c"), workload("elsewhere", queue="other")])
    lq = reconcile(world)
    assert active(lq) == (c.TRUE, "Ready", "Can submit new workloads to localQueue")
    s = lq.status
    assert (s.pending_workloads, s.reserving_workloads, s.admitted_workloads) == (1, 2, 1)
    assert totals(lq) == {"default/cpu": Decimal(3)}
    assert totals(lq, "flavors_usage") == {"default/cpu": Decimal(2)}
    assert localqueue.reconcile(world, KEY, Context(Time(T0))) is NOTHING  # written only when it differs


def test_a_stopped_queue_counts_no_pending_workload() -> None:
    stopped = evolve(local_queue(), spec=evolve(local_queue().spec, stop_policy=c.STOP_POLICY_HOLD))
    lq = reconcile(World([flavor("default"), cluster_queue(), stopped, workload("c")]))
    assert active(lq) == (c.FALSE, "Stopped", "LocalQueue is stopped")
    assert lq.status.pending_workloads == 0


def test_a_queue_without_its_cluster_queue_has_no_usage() -> None:
    lq = reconcile(World([local_queue(), workload("c")]))
    assert active(lq) == (c.FALSE, "ClusterQueueDoesNotExist", "Can't submit new workloads to clusterQueue")
    assert (lq.status.pending_workloads, lq.status.flavors_reservation) == (1, ())


def test_a_queue_whose_cluster_queue_is_inactive_says_so() -> None:
    lq = reconcile(World([cluster_queue(), local_queue(), workload("c", status=WorkloadStatus())]))
    assert active(lq) == (c.FALSE, "ClusterQueueIsInactive", "Can't submit new workloads to clusterQueue")
    assert totals(lq) == {"default/cpu": Decimal(0)}
