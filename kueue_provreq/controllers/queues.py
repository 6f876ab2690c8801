"""Kueue's queue manager (``pkg/cache/queue``) as pure functions over the World.

Kueue keeps, per ClusterQueue, a heap of workloads waiting to be tried and a
set of *inadmissible* ones set aside until something changes.  The model
keeps no queue state of its own: every question is answered from the
objects, so a World is the whole truth and two Worlds that are equal queue
alike.  What Kueue remembers in memory is read back from what it wrote:

* a workload is *in backoff* (kept in the inadmissible set, never tried)
  while ``Requeued=False`` or ``now < requeueState.requeueAt``
  (``backoffWaitingTimeExpired``, KEP-1282);
* a workload the scheduler tried and set aside carries the scheduler's
  ``QuotaReserved=False`` verdict (see :func:`parked_by_scheduler`).

One :func:`scan` walks the workloads once and sorts each queue once, so a
scheduling cycle costs O(workloads + pending log pending).
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from kueue_provreq.api import constants as c
from kueue_provreq.api.config import Configuration
from kueue_provreq.api.frozen import FrozenMap
from kueue_provreq.api.meta import Time, find_condition, is_false, is_true
from kueue_provreq.api.queues import ClusterQueue, LocalQueue
from kueue_provreq.api.workload import Workload
from kueue_provreq.controllers import workload_status
from kueue_provreq.controllers.activity import inactive_reason
from kueue_provreq.controllers.context import Context
from kueue_provreq.world import World

OrderKey = tuple[int, int, str]

#: QuotaReserved=False reasons only the scheduler writes after trying a workload and failing.
_NO_FIT_REASONS = frozenset({c.REASON_WAITING_FOR_QUOTA, c.REASON_EXCEEDS_MAX_QUOTA,
                             c.REASON_NO_MATCHING_FLAVOR})


# --- one workload ------------------------------------------------------------------------


def is_admissible(wl: Workload, config: Configuration) -> bool:
    """``workload.IsAdmissible``: active, holding no quota, not finished, not gated by an
    ``admission-gated-by`` annotation (what may be queued)."""
    return wl.is_active and not wl.has_quota_reservation() and not wl.is_finished() and \
        workload_status.admission_gates(wl, config) is None


def in_backoff(wl: Workload, now: Time) -> bool:
    """``!backoffWaitingTimeExpired``: such a workload waits in the inadmissible set, so it
    blocks no StrictFIFO queue and is not tried until its backoff ends."""
    if is_false(wl.status.conditions, c.WORKLOAD_REQUEUED):
        return True
    rs = wl.status.requeue_state
    return rs is not None and rs.requeue_at is not None and now < rs.requeue_at


def has_failed_checks(wl: Workload) -> bool:
    """``HasRetryChecks || HasRejectedChecks``: the scheduler will not evaluate such a head."""
    return any(s.state in (c.CHECK_RETRY, c.CHECK_REJECTED) for s in wl.status.admission_checks)


def order_key(wl: Workload, config: Configuration) -> OrderKey:
    """``baseCompareFunc``: priority descending (nil = 0), then the KEP-1282 queue order
    timestamp, then UID — identical for StrictFIFO and BestEffortFIFO."""
    return (-(wl.spec.priority or 0), workload_status.queue_order_timestamp(wl, config), wl.metadata.uid)


def parked_by_scheduler(wl: Workload) -> bool:
    """Whether the workload's last scheduler attempt set it aside (BestEffortFIFO moves such a
    workload to the inadmissible set).  ``PendingEvaluation`` is also what the job integration
    writes when it releases quota, so only the scheduler's own message counts."""
    cond = find_condition(wl.status.conditions, c.WORKLOAD_QUOTA_RESERVED)
    if cond is None or cond.status != c.FALSE:
        return False
    return cond.reason in _NO_FIT_REASONS or (
        cond.reason == c.REASON_PENDING_EVALUATION and cond.message == c.MSG_FAILED_ADMISSION_CHECKS)


def holds_quota(wl: Workload) -> bool:
    """Counted in its ClusterQueue's usage: Kueue's cache keeps a workload from reservation until
    it finishes or its quota is released (an evicted workload still holds it)."""
    return wl.has_quota_reservation() and not wl.is_finished() and wl.status.admission is not None


# --- the whole world -----------------------------------------------------------------------


@attrs.define
class Scan:
    """One pass over the workloads, grouped the way Kueue's queue manager and cache see them."""

    ready: dict[str, list[Workload]] = attrs.Factory(dict)
    """ClusterQueue name -> admissible workloads not in backoff, in queue order."""
    backoff: dict[str, list[Workload]] = attrs.Factory(dict)
    """ClusterQueue name -> admissible workloads waiting for their backoff to end."""
    misrouted: list[tuple[Workload, str]] = attrs.Factory(list)
    """Admissible workloads whose LocalQueue is missing, with the message saying so."""
    reserving: dict[str, list[Workload]] = attrs.Factory(dict)
    """ClusterQueue name -> workloads holding quota there (``status.admission.clusterQueue``)."""


def cluster_queue_name(world: World, wl: Workload) -> str | None:
    """``spec.queueName`` -> the LocalQueue of that name in the workload's namespace -> its
    ``spec.clusterQueue``; None when the LocalQueue does not exist."""
    lq = world.get(c.LOCAL_QUEUE, wl.metadata.namespace, wl.spec.queue_name)
    return lq.spec.cluster_queue if isinstance(lq, LocalQueue) else None


def scan(world: World, ctx: Context, only: str | None = None) -> Scan:
    """Group every workload; with ``only``, keep just that ClusterQueue's pending workloads
    (usage is always complete: other queues' reservations cost nothing to keep)."""
    out = Scan()
    routes: dict[tuple[str, str], str | None] = {}
    unordered: dict[str, list[Workload]] = {}
    for obj in world.objects(c.WORKLOAD):
        if not isinstance(obj, Workload):
            continue
        if holds_quota(obj):
            assert obj.status.admission is not None
            out.reserving.setdefault(obj.status.admission.cluster_queue, []).append(obj)
            continue
        if not obj.spec.queue_name or not is_admissible(obj, ctx.config):
            continue
        route = (obj.metadata.namespace, obj.spec.queue_name)
        if route not in routes:
            routes[route] = cluster_queue_name(world, obj)
        cq = routes[route]
        if cq is None:
            if only is None:
                out.misrouted.append((obj, c.MSG_LQ_NOT_FOUND.format(lq=obj.spec.queue_name)))
            continue
        if only is not None and cq != only:
            continue
        if in_backoff(obj, ctx.now):
            out.backoff.setdefault(cq, []).append(obj)
        else:
            unordered.setdefault(cq, []).append(obj)
    config = ctx.config
    for cq, wls in unordered.items():
        out.ready[cq] = sorted(wls, key=lambda w: order_key(w, config))
    return out


def pending_counts(found: Scan, cq: ClusterQueue, inactive: bool = False) -> tuple[int, int]:
    """(active, inadmissible) as Kueue's queue manager would count them for ``cq`` once the
    scheduler has run.

    Mapping: the *heap* ("active") holds every ready workload, except that under
    BestEffortFIFO a workload the scheduler has set aside (:func:`parked_by_scheduler`) sits
    in the inadmissible set; workloads in backoff are always inadmissible.  StrictFIFO puts a
    failed head straight back into the heap, so its whole queue counts as active.  Every
    pending workload of an ``inactive`` ClusterQueue counts as inadmissible: the queue
    manager reports an inactive queue's whole backlog so (``pending_workloads{status=
    "inadmissible"}``), whatever its strategy.
    """
    name = cq.metadata.name
    ready = found.ready.get(name, [])
    backoff = len(found.backoff.get(name, []))
    if inactive:
        return 0, len(ready) + backoff
    if cq.spec.queueing_strategy == c.STRICT_FIFO:
        return len(ready), backoff
    parked = sum(1 for wl in ready if parked_by_scheduler(wl))
    return len(ready) - parked, backoff + parked


@attrs.frozen
class Gauge:
    name: str
    labels: FrozenMap[str, str]
    value: int


def queue_gauges(world: World, ctx: Context) -> tuple[Gauge, ...]:
    """``pending_workloads{cluster_queue, status}`` (status ``active`` = heap, ``inadmissible``
    = the inadmissible set, mapped as :func:`pending_counts` says) and
    ``reserving_active_workloads{cluster_queue}`` (workloads holding quota, evicted ones
    included until released), one series per existing ClusterQueue, as Kueue exports them."""
    found = scan(world, ctx)
    out: list[Gauge] = []
    for cq in sorted(cluster_queues(world), key=lambda q: q.metadata.name):
        name = cq.metadata.name
        active, inadmissible = pending_counts(found, cq, inactive_reason(world, cq) is not None)
        out.append(Gauge(c.METRIC_PENDING_WORKLOADS, FrozenMap({"cluster_queue": name, "status": "active"}),
                         active))
        out.append(Gauge(c.METRIC_PENDING_WORKLOADS,
                         FrozenMap({"cluster_queue": name, "status": "inadmissible"}), inadmissible))
        out.append(Gauge(c.METRIC_RESERVING_ACTIVE_WORKLOADS, FrozenMap({"cluster_queue": name}),
                         len(found.reserving.get(name, []))))
    return tuple(out)


def cluster_queues(world: World) -> Iterable[ClusterQueue]:
    return (q for q in world.objects(c.CLUSTER_QUEUE) if isinstance(q, ClusterQueue))


def pods_ready(wl: Workload) -> bool:
    return is_true(wl.status.conditions, c.WORKLOAD_PODS_READY)
