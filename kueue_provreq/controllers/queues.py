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

Which workloads wait in which queue and which hold quota in which ClusterQueue is a question
every scheduling cycle and every ClusterQueue status asks; :class:`QueueIndex` keeps the
answer as the world changes (the world tells it of every Workload change), so that a
scheduling cycle costs O(pending log pending) and a ClusterQueue status O(its LocalQueues),
whatever the number of workloads.  It holds nothing the objects do not say: the index of a
world equals the one built afresh from its objects (verify mode checks it).
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet
from decimal import Decimal
from typing import Any

import attrs

from kueue_provreq.api import constants as c
from kueue_provreq.api.config import Configuration
from kueue_provreq.api.frozen import FrozenMap
from kueue_provreq.api.meta import Time, find_condition, is_true
from kueue_provreq.api.objects import Key, KubeObject, key_of
from kueue_provreq.api.queues import ClusterQueue, LocalQueue
from kueue_provreq.api.workload import PodSet, Workload
from kueue_provreq.controllers import workload_status
from kueue_provreq.controllers.activity import inactive_reason
from kueue_provreq.controllers.context import Context
from kueue_provreq.controllers.parts import ADMISSION, CHECKS, CONDITION, METADATA, REQUEUE_STATE, SPEC, changed_parts
from kueue_provreq.controllers.parts import parts as condition_parts
from kueue_provreq.controllers.usage import FlavorResource, Usage, held_by
from kueue_provreq.world import ALL_PARTS, Txn, World

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
    held, until = backoff_of(wl)
    return held or (until is not None and now < until)


def backoff_of(wl: Workload) -> tuple[bool, Time | None]:
    """What :func:`in_backoff` reads of a workload: whether ``Requeued=False`` holds it, and
    its ``requeueAt`` (the scheduler's scan keeps both per workload object)."""
    requeued = wl.status.conditions_by_type.get(c.WORKLOAD_REQUEUED)
    rs = wl.status.requeue_state
    return requeued is not None and requeued.status == c.FALSE, None if rs is None else rs.requeue_at


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


QueueRef = tuple[str, str]
"""(namespace, ``spec.queueName``): the LocalQueue a pending workload waits in."""


class QueueIndex:
    """Kueue's queue manager and cache, as an index the world keeps up to date: the admissible
    workloads of each LocalQueue (those with an ``admission-gated-by`` annotation apart: they
    are admissible only while the AdmissionGatedBy gate is off), and the workloads holding quota
    in each ClusterQueue (:func:`holds_quota`) with the quota they hold, the admitted ones apart
    too."""

    __slots__ = ("pending", "gated", "holding", "admitted", "used", "admitted_used", "_held", "moves",
                 "lq_holding", "lq_admitted", "lq_used", "lq_admitted_used", "queued", "version",
                 "holding_version", "idle", "expected")

    def __init__(self, world: World) -> None:
        self.pending: dict[QueueRef, dict[Key, Workload]] = {}
        self.gated: dict[QueueRef, dict[Key, Workload]] = {}
        self.holding: dict[str, dict[Key, Workload]] = {}
        """ClusterQueue name -> the workloads holding quota there."""
        self.admitted: dict[str, dict[Key, Workload]] = {}
        """ClusterQueue name -> those of them that are admitted."""
        self.used: dict[str, Usage] = {}
        """ClusterQueue name -> the quota its holding workloads hold (zeros left out)."""
        self.admitted_used: dict[str, Usage] = {}
        self._held: dict[Key, Held] = {}
        """What each holding workload holds (its share of ``used``; shared, read-only)."""
        self.lq_holding: dict[QueueRef, int] = {}
        """LocalQueue -> how many of its workloads hold quota (Kueue's cache counts a workload in
        the LocalQueue its ``spec.queueName`` names, within the ClusterQueue of its admission)."""
        self.lq_admitted: dict[QueueRef, int] = {}
        self.lq_used: dict[QueueRef, Usage] = {}
        self.lq_admitted_used: dict[QueueRef, Usage] = {}
        self.moves: list[tuple[Place | None, Place | None]] | None = None
        """When a driver asks for them (not None), the changes that moved a ClusterQueue's
        counts, as (place before, place after): the driver routes them to the ClusterQueue
        reconciler (:meth:`recounted`) and clears the list."""
        self.queued = _QueuedBook()
        """What :func:`scan` read of each admissible workload, kept while the object is the same."""
        self.version = 0
        """Counts the changes to what a scheduling cycle reads of the queues: a waiting workload
        written, the quota held in a ClusterQueue, an object of the :data:`QUEUE_KINDS`."""
        self.holding_version = 0
        """Counts the writes of workloads holding quota that change no quota held (what only a
        cycle that reads those workloads reads: preemption, KEP-993, blockAdmission)."""
        self.idle: Idle | None = None
        """What the last scheduling cycle over every queue read, when the next would change
        nothing (:func:`idle`)."""
        self.expected: dict[Key, Workload] = {}
        """The writes of that cycle, not yet applied: the next cycle finds them as the cycle
        left them, so they are no news to it."""
        for wl in world.objects(c.WORKLOAD):
            self.changed(key_of(wl), None, wl)

    def changed(self, key: Key, before: KubeObject | None, after: KubeObject | None, parts: int = ALL_PARTS
                ) -> None:
        """A Workload changed (``World.observe``: it is told of Workloads only), in ``parts``."""
        expected = self.expected
        if expected and after is not None and expected.get(key) is after:
            del expected[key]
            version = self.version
            self._changed(key, before, after, parts)
            self.version = version  # the last cycle's own write
            return
        self._changed(key, before, after, parts)

    def _changed(self, key: Key, before: KubeObject | None, after: KubeObject | None, parts: int) -> None:
        assert (before is None or type(before) is Workload) and (after is None or type(after) is Workload)
        if not parts & _PLACE_PARTS:  # an update that moves neither its place nor its admission
            assert before is not None and after is not None
            if after.status.admission is before.status.admission and after.spec is before.spec:
                # swapped in where it was: its place computed once, not before and after
                place = _place(after)
                if place is None:
                    return
                if not place[0]:
                    (self.gated if place[2] else self.pending)[place[1]][key] = after
                    self._waiting_rewritten(before, after, parts)
                    return
                self.holding_version += 1
                self.holding[place[1]][key] = after
                if c.WORKLOAD_ADMITTED in after.status.true_types:
                    self.admitted[place[1]][key] = after
                return
        was = None if before is None else _place(before)
        now = None if after is None else _place(after)
        if was is not None and was == now:  # the common case: it stays where it is
            assert before is not None and after is not None
            if not was[0]:
                (self.gated if was[2] else self.pending)[was[1]][key] = after
                self._waiting_rewritten(before, after, parts)
                return
            admitted = _admitted(after)
            if after.status.admission is not before.status.admission \
                    or after.spec.pod_sets is not before.spec.pod_sets:
                self._release(key, was[1], was[2])
                self._hold(key, after, was[1], was[2])
                self.version += 1
            elif admitted != _admitted(before):  # the same quota held, not computed again
                self.holding[was[1]][key] = after
                self.holding_version += 1
                if admitted:
                    self._admit(key, after, was[1], was[2], self._held[key])
                else:
                    self._unadmit(key, was[1], was[2], self._held[key])
            else:
                self.holding[was[1]][key] = after
                self.holding_version += 1
                if admitted:
                    self.admitted[was[1]][key] = after
                return
            if self.moves is not None:
                self.moves.append((was, now))
            return
        if was is None and now is None:
            return  # in no queue before or after: nothing a cycle reads
        self.version += 1
        if self.moves is not None and was != now:
            self.moves.append((was, now))
        if was is not None:
            if was[0]:
                self._release(key, was[1], was[2])
            else:
                _remove(self.gated if was[2] else self.pending, was[1], key)
                if now is None or now[0]:
                    # no longer waiting: what a scan read of it would keep this version alive
                    self.queued.entries.pop(key, None)
        if now is not None:
            assert after is not None
            if now[0]:
                self._hold(key, after, now[1], now[2])
            else:
                (self.gated if now[2] else self.pending).setdefault(now[1], {})[key] = after

    def _waiting_rewritten(self, before: Workload, after: Workload, parts: int) -> None:
        """A waiting workload rewritten where it waits is news to a scheduling cycle when the
        write changes what a cycle reads of it (:data:`WAITING_READS`; ``parts`` as the write
        path found them, or all of them for a write it did not see), unless it is held back
        before and after (a cycle reads nothing else of such a workload)."""
        if parts == ALL_PARTS:
            parts = changed_parts(before, after)
        if parts & WAITING_READS and not (backoff_of(before)[0] and backoff_of(after)[0]):
            self.version += 1

    def touched(self, key: Key, before: KubeObject | None, after: KubeObject | None, parts: int = ALL_PARTS
                ) -> None:
        """An object of the :data:`QUEUE_KINDS` changed (``World.observe``).  A scheduling cycle
        reads no ClusterQueue's or LocalQueue's status (which their reconcilers rewrite as the
        usage moves), only their spec and metadata."""
        if isinstance(before, (ClusterQueue, LocalQueue)) and isinstance(after, (ClusterQueue, LocalQueue)) \
                and (before.spec is after.spec or before.spec == after.spec) \
                and (before.metadata is after.metadata or before.metadata == after.metadata):
            return
        self.version += 1

    def _hold(self, key: Key, wl: Workload, cq: str, ref: QueueRef) -> None:
        assert wl.status.admission is not None
        held = self._held[key] = held_by(wl.status.admission, wl.spec.pod_sets)
        self.holding.setdefault(cq, {})[key] = wl
        _add(self.used.setdefault(cq, {}), held, 1)
        self.lq_holding[ref] = self.lq_holding.get(ref, 0) + 1
        _add(self.lq_used.setdefault(ref, {}), held, 1)
        if _admitted(wl):
            self._admit(key, wl, cq, ref, held)

    def _admit(self, key: Key, wl: Workload, cq: str, ref: QueueRef, held: Held) -> None:
        self.admitted.setdefault(cq, {})[key] = wl
        _add(self.admitted_used.setdefault(cq, {}), held, 1)
        self.lq_admitted[ref] = self.lq_admitted.get(ref, 0) + 1
        _add(self.lq_admitted_used.setdefault(ref, {}), held, 1)

    def _release(self, key: Key, cq: str, ref: QueueRef) -> None:
        held = self._held.pop(key)
        _remove(self.holding, cq, key)
        _add(self.used[cq], held, -1)
        _count(self.lq_holding, ref, -1)
        _add(self.lq_used[ref], held, -1)
        if key in self.admitted.get(cq, ()):
            self._unadmit(key, cq, ref, held)

    def _unadmit(self, key: Key, cq: str, ref: QueueRef, held: Held) -> None:
        _remove(self.admitted, cq, key)
        _add(self.admitted_used[cq], held, -1)
        _count(self.lq_admitted, ref, -1)
        _add(self.lq_admitted_used[ref], held, -1)

    def held(self, key: Key) -> Held:
        """What a workload holding quota holds."""
        return self._held[key]

    def waiting(self, ref: QueueRef, config: Configuration) -> list[Workload]:
        """The admissible workloads of one LocalQueue (in no particular order)."""
        out = list(self.pending.get(ref, {}).values())
        if not config.gate(c.GATE_ADMISSION_GATED_BY):
            out.extend(self.gated.get(ref, {}).values())
        return out

    def waiting_items(self, ref: QueueRef, config: Configuration) -> list[tuple[Key, Workload]]:
        """:meth:`waiting` with each workload's key."""
        out = list(self.pending.get(ref, {}).items())
        if not config.gate(c.GATE_ADMISSION_GATED_BY):
            out.extend(self.gated.get(ref, {}).items())
        return out

    def refs(self) -> list[QueueRef]:
        """The LocalQueues with admissible workloads, gated ones included."""
        return list(dict.fromkeys([*self.pending, *self.gated]))

    def pending_total(self, world: World, cq: str, config: Configuration) -> int:
        """How many admissible workloads wait in ``cq``'s LocalQueues (in backoff or not); a
        stopped LocalQueue's are out of the queue manager."""
        gates = config.gate(c.GATE_ADMISSION_GATED_BY)
        total = 0
        for ref in self.refs():
            lq = world.get(c.LOCAL_QUEUE, *ref)
            if isinstance(lq, LocalQueue) and lq.spec.cluster_queue == cq and not lq.spec.stopped:
                total += len(self.pending.get(ref, ()))
                if not gates:
                    total += len(self.gated.get(ref, ()))
        return total

    def recounted(self, world: World) -> tuple[list[str], list[QueueRef]]:
        """The ClusterQueues and the LocalQueues whose counts the changes in :attr:`moves` moved
        (those a workload waited or held quota in, and those it now does), clearing them."""
        out: list[str] = []
        refs: list[QueueRef] = []
        if self.moves:
            for places in self.moves:
                for place in places:
                    if place is None:
                        continue
                    if place[0]:
                        out.append(place[1])
                        refs.append(place[2])
                    else:
                        refs.append(place[1])
                        lq = world.get(c.LOCAL_QUEUE, *place[1])
                        if isinstance(lq, LocalQueue):
                            out.append(lq.spec.cluster_queue)
            self.moves.clear()
        return out, refs

    def same_as(self, other: QueueIndex) -> bool:
        """Whether both hold the same workloads in the same places, and the same quota."""
        return (self.pending == other.pending and self.gated == other.gated and self.holding == other.holding
                and self.admitted == other.admitted and self._held == other._held
                and _nonzero(self.used) == _nonzero(other.used)
                and _nonzero(self.admitted_used) == _nonzero(other.admitted_used)
                and self.lq_holding == other.lq_holding and self.lq_admitted == other.lq_admitted
                and _nonzero(self.lq_used) == _nonzero(other.lq_used)
                and _nonzero(self.lq_admitted_used) == _nonzero(other.lq_admitted_used))

    def local_pending(self, ref: QueueRef, config: Configuration) -> int:
        """How many admissible workloads wait in one LocalQueue (``Manager.PendingWorkloads``)."""
        total = len(self.pending.get(ref, ()))
        if not config.gate(c.GATE_ADMISSION_GATED_BY):
            total += len(self.gated.get(ref, ()))
        return total


def _nonzero(totals: Mapping[Any, Usage]) -> dict[Any, Usage]:
    return {at: used for at, used in totals.items() if used}


def _count(counts: dict[QueueRef, int], ref: QueueRef, step: int) -> None:
    n = counts[ref] + step
    if n:
        counts[ref] = n
    else:
        del counts[ref]


Held = Mapping[FlavorResource, Decimal]
"""What one workload holding quota holds (read-only: look-alike workloads share it)."""

Place = tuple[bool, Any, Any]

_PLACE_PARTS = METADATA | SPEC | ADMISSION | CONDITION[c.WORKLOAD_FINISHED] | CONDITION[c.WORKLOAD_QUOTA_RESERVED] \
    | CONDITION[c.WORKLOAD_ADMITTED]
"""What :func:`_place` and :func:`_admitted` read of a Workload, as parts."""


def _place(wl: Workload) -> Place | None:
    """Where a workload sits in the index: (True, ClusterQueue, LocalQueue) holding quota there,
    (False, LocalQueue, gated) admissible in that queue, None neither."""
    status = wl.status
    true = status.true_types
    if c.WORKLOAD_FINISHED in true:
        return None
    spec = wl.spec
    meta = wl.metadata
    if c.WORKLOAD_QUOTA_RESERVED in true:
        admission = status.admission
        return None if admission is None else (True, admission.cluster_queue, (meta.namespace, spec.queue_name))
    if not spec.queue_name or spec.active is False:
        return None
    return False, (meta.namespace, spec.queue_name), bool(meta.annotations.get(c.ANNOTATION_ADMISSION_GATED_BY))


def _admitted(wl: Workload) -> bool:
    return c.WORKLOAD_ADMITTED in wl.status.true_types


def _remove(buckets: dict[Any, dict[Key, Workload]], where: Any, key: Key) -> None:
    bucket = buckets[where]
    del bucket[key]
    if not bucket:
        del buckets[where]


def _add(total: Usage, amounts: Held, sign: int) -> None:
    for fr, value in amounts.items():
        new = total.get(fr, _ZERO) + sign * value
        if new:
            total[fr] = new
        else:
            total.pop(fr, None)


_ZERO = Decimal(0)


def index(world: World) -> QueueIndex:
    """The world's queue index (``World.hooks``), built by the engine that drives the world, or
    on first use without one, and kept up to date from then on."""
    found = world.hooks.queue_index
    if not isinstance(found, QueueIndex):
        found = world.hooks.queue_index = QueueIndex(world)
        world.observe(c.WORKLOAD, found.changed)
        for kind in QUEUE_KINDS:
            world.observe(kind, found.touched)
    return found


WAITING_READS = METADATA | SPEC | ADMISSION | CHECKS | REQUEUE_STATE | condition_parts(
    c.WORKLOAD_FINISHED, c.WORKLOAD_QUOTA_RESERVED, c.WORKLOAD_ADMITTED, c.WORKLOAD_EVICTED, c.WORKLOAD_REQUEUED)
"""What a scheduling cycle reads of a waiting workload: its place, order, shape and backoff, its
checks' states, and the conditions it sets aside or admits it by (not, say, ``PodsReady``,
which the job controller writes when a workload's quota is released)."""

QUEUE_KINDS = (c.LOCAL_QUEUE, c.CLUSTER_QUEUE, c.COHORT, c.RESOURCE_FLAVOR, c.ADMISSION_CHECK)
"""The kinds besides Workloads a scheduling cycle reads: the queues, the cohorts, what makes a
queue active (its flavors and checks)."""


@attrs.frozen
class Idle:
    """A scheduling cycle over every queue after which the next would change nothing (it changed
    nothing, or only set aside or admitted some of the workloads it found waiting), and what it
    read: the configuration, the index's versions (``holding_version`` None when the cycle read no
    workload holding quota), and from when until when the time it read stays the same for it
    (``until`` None: no later time changes it).  A cycle that read the workloads holding quota
    (to preempt some, for KEP-993, for blockAdmission) holds only at its own instant: who may be
    preempted is ordered by times it reads against the cycle's."""

    config: Configuration
    version: int
    holding_version: int | None
    since: Time
    until: Time | None


def idle(world: World, ctx: Context) -> bool:
    """Whether a scheduling cycle over every queue would change nothing, as the last one
    found (:class:`Idle`): nothing it reads has changed since but that cycle's own writes.  Upstream's scheduler waits in the queue
    manager's ``Heads`` until a queue has a head to try (a workload added, updated or
    requeued, by an event such as quota released or a queue changed: ``QueueInadmissibleWorkloads``)
    or a backoff ends; this is that wait, read off the index."""
    ix = world.hooks.queue_index
    if not isinstance(ix, QueueIndex):
        return False
    last = ix.idle
    return last is not None and last.version == ix.version and last.config is ctx.config \
        and last.since <= ctx.now and (last.until is None or ctx.now < last.until) \
        and (last.holding_version is None or (last.holding_version == ix.holding_version
                                              and ctx.now == last.since))


def check_index(world: World) -> str | None:
    """None when the world's queue index (if it has one) equals one built afresh, else what
    differs."""
    found = world.hooks.queue_index
    if isinstance(found, QueueIndex) and not found.same_as(QueueIndex(world)):
        return "the queue index no longer matches the workloads"
    return None


@attrs.define
class Scan:
    """The workloads as Kueue's queue manager and cache see them at one instant."""

    index: QueueIndex
    """Who holds quota where (kept up to date by the world)."""
    ready: dict[str, list[Workload]] = attrs.Factory(dict)
    """ClusterQueue name -> admissible workloads not in backoff, in queue order."""
    backoff: dict[str, list[Workload]] = attrs.Factory(dict)
    """ClusterQueue name -> admissible workloads waiting for their backoff to end."""
    shapes: dict[str, list[ShapeId]] = attrs.Factory(dict)
    """ClusterQueue name -> the :func:`scheduling_shape` of each of its ready workloads, as a
    number (equal shapes, equal numbers)."""
    wakes: Time | None = None
    """When the first of the workloads in backoff (``requeueAt`` only) ends its backoff, if any."""

    def last_trying(self, cq: str, skipped: AbstractSet[ShapeId]) -> int:
        """The index of the last of ``cq``'s ready workloads whose shape is not in ``skipped``
        (-1: none): past it, a walk that skips those shapes has nothing left to try."""
        shapes = self.shapes.get(cq, [])
        for i in range(len(shapes) - 1, -1, -1):
            if shapes[i] not in skipped:
                return i
        return -1

    def holding(self, world: World, cq: str) -> list[Workload]:
        """The workloads holding quota in ``cq``, in the world's order."""
        held = self.index.holding.get(cq)
        if not held:
            return []
        return [held[key] for key in world.keys(c.WORKLOAD) if key in held]


def cluster_queue_name(world: World, wl: Workload) -> str | None:
    """``spec.queueName`` -> the LocalQueue of that name in the workload's namespace -> its
    ``spec.clusterQueue``; None when the LocalQueue does not exist."""
    lq = world.get(c.LOCAL_QUEUE, wl.metadata.namespace, wl.spec.queue_name)
    return lq.spec.cluster_queue if isinstance(lq, LocalQueue) else None


def cluster_queue_for(txn: Txn, wl: Workload) -> ClusterQueue | None:
    """``ClusterQueueForWorkload``: the admission's ClusterQueue once quota is reserved (the
    LocalQueue may have been repointed since), else the one its LocalQueue names; None when
    either object is missing.  (The invariants keep their own reading of it: the oracle
    imports no controller.)"""
    admission = wl.status.admission
    if admission is not None:
        name = admission.cluster_queue
    else:
        lq = txn.get(c.LOCAL_QUEUE, wl.metadata.namespace, wl.spec.queue_name)
        if not isinstance(lq, LocalQueue):
            return None
        name = lq.spec.cluster_queue
    cq = txn.get(c.CLUSTER_QUEUE, "", name)
    return cq if isinstance(cq, ClusterQueue) else None


def scan(world: World, ctx: Context, only: str | None = None) -> Scan:
    """The admissible workloads by ClusterQueue, each queue's ready ones sorted (those of a
    missing, stopped or terminating LocalQueue left out); with ``only``, just that ClusterQueue's.

    A BestEffortFIFO queue's workloads in the inadmissible set (:func:`set_aside`) come after
    the others: upstream's ``InadmissibleWorkloadRequeuer`` moves them back to the heap only
    ``requeueBatchPeriod`` (1 s) after the event that requeues them, while a workload requeued
    by itself (a new one, one whose backoff finished) enters the heap at once, so the scheduler
    tries it first whatever the order between them.

    What each workload's place depends on is read once per workload object
    (:class:`_Queued`), not at every scheduling cycle: a cycle over a long queue costs a
    lookup and a comparison per workload."""
    config = ctx.config
    now = ctx.now
    ix = index(world)
    book = ix.queued.under(config)
    out = Scan(ix)
    entries: dict[str, list[_Queued]] = {}
    seen: list[_Queued] = []
    for ref in ix.refs():
        lq = world.get(c.LOCAL_QUEUE, *ref)
        if not isinstance(lq, LocalQueue):
            continue  # the queue manager holds no queue for it
        if lq.spec.stopped or lq.metadata.terminating:
            # a stopped LocalQueue leaves the queue manager (its workloads wait, told so by the
            # workload controller); a terminating one is left alone too (docs/differences.rst)
            continue
        cq = lq.spec.cluster_queue
        if only is not None and cq != only:
            continue
        ready = entries.setdefault(cq, [])
        for key, wl in ix.waiting_items(ref, config):
            entry = book.entry(key, wl)
            seen.append(entry)
            until = entry.until
            if entry.held or (until is not None and now < until):  # in_backoff, inlined
                out.backoff.setdefault(cq, []).append(wl)
                if not entry.held and until is not None and (out.wakes is None or until < out.wakes):
                    out.wakes = until
            else:
                ready.append(entry)
    hashing = config.gate(c.GATE_SCHEDULING_EQUIVALENCE_HASHING)
    for cq, queued in entries.items():
        if not queued:
            continue
        queue = world.get(c.CLUSTER_QUEUE, "", cq)
        if isinstance(queue, ClusterQueue) and queue.spec.queueing_strategy != c.STRICT_FIFO:
            # (set aside, order): those not set aside in order, then those set aside in order
            no_fit = {e.shape for e in queued if e.no_fit} if hashing else set()
            aside = [e for e in queued if e.parked or e.shape in no_fit]
            if aside:
                queued = [e for e in queued if not (e.parked or e.shape in no_fit)]
                queued.sort(key=_ORDER)
                aside.sort(key=_ORDER)
                queued += aside
            else:
                queued.sort(key=_ORDER)
        else:
            queued.sort(key=_ORDER)
        out.ready[cq] = [e.wl for e in queued]
        out.shapes[cq] = [e.shape for e in queued]
    if only is None:
        book.forget_all_but(seen)
    return out


ShapeId = int
"""A workload's :func:`scheduling_shape`, numbered: comparing two is comparing numbers."""


class _Queued:
    """What :func:`scan` reads of one admissible workload: its order, its shape (numbered, so
    that comparing shapes is comparing numbers), whether the scheduler set
    it aside or found it did not fit, and what its backoff depends on."""

    __slots__ = ("key", "wl", "order", "shape", "parked", "no_fit", "held", "until")

    def __init__(self, key: Key, wl: Workload, config: Configuration,
                 shapes: dict[tuple[int, tuple[PodSet, ...]], ShapeId]) -> None:
        self.key, self.wl = key, wl
        self.order = order_key(wl, config)
        self.shape = shapes.setdefault(scheduling_shape(wl), len(shapes))
        self.parked = parked_by_scheduler(wl)
        self.no_fit = _did_not_fit(wl)
        self.held, self.until = backoff_of(wl)


_ORDER = operator.attrgetter("order")


class _QueuedBook:
    """The :class:`_Queued` of each admissible workload, under one configuration (the order
    reads it)."""

    __slots__ = ("config", "entries", "shapes")

    def __init__(self) -> None:
        self.config: Configuration | None = None
        self.entries: dict[Key, _Queued] = {}
        self.shapes: dict[tuple[int, tuple[PodSet, ...]], ShapeId] = {}

    def under(self, config: Configuration) -> _QueuedBook:
        if config is not self.config:
            self.config, self.entries, self.shapes = config, {}, {}
        return self

    def entry(self, key: Key, wl: Workload) -> _Queued:
        found = self.entries.get(key)
        if found is None or found.wl is not wl:
            assert self.config is not None
            found = self.entries[key] = _Queued(key, wl, self.config, self.shapes)
        return found

    def forget_all_but(self, kept: list[_Queued]) -> None:
        """Drop the entries of workloads no longer admissible (a scan of every queue saw the rest)."""
        if len(self.entries) > len(kept) or not kept:  # an emptied dict keeps its size: a new one
            self.entries = {e.key: e for e in kept}


def pending_counts(found: Scan, cq: ClusterQueue, inactive: bool = False, hashing: bool = True) -> tuple[int, int]:
    """(active, inadmissible) as Kueue's queue manager would count them for ``cq`` once the
    scheduler has run.

    Mapping: the *heap* ("active") holds every ready workload, except that under
    BestEffortFIFO a workload the scheduler has set aside (:func:`parked_by_scheduler`) sits
    in the inadmissible set; workloads in backoff are always inadmissible.  StrictFIFO puts a
    failed head straight back into the heap, so its whole queue counts as active.  With
    ``hashing`` (SchedulingEquivalenceHashing), a BestEffortFIFO workload of the same priority and
    pod sets as one set aside for not fitting sits in the inadmissible set too, untried.  Every
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
    parked = len(set_aside(ready, hashing))
    return len(ready) - parked, backoff + parked


def set_aside(ready: Iterable[Workload], hashing: bool) -> set[str]:
    """The uids of the BestEffortFIFO workloads in the inadmissible set: those the scheduler set
    aside (:func:`parked_by_scheduler`) and, with ``hashing`` (SchedulingEquivalenceHashing),
    those of the same priority and pod sets as one set aside for not fitting."""
    ready = list(ready)
    no_fit = {scheduling_shape(wl) for wl in ready if hashing and _did_not_fit(wl)}
    return {wl.metadata.uid for wl in ready if parked_by_scheduler(wl) or scheduling_shape(wl) in no_fit}


def _did_not_fit(wl: Workload) -> bool:
    cond = find_condition(wl.status.conditions, c.WORKLOAD_QUOTA_RESERVED)
    return cond is not None and cond.status == c.FALSE and cond.reason in _NO_FIT_REASONS


def scheduling_shape(wl: Workload) -> tuple[int, tuple[PodSet, ...]]:
    """What upstream's scheduling hash sees of a workload here: its priority and pod sets."""
    return wl.spec.priority or 0, wl.spec.pod_sets


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
        active, inadmissible = pending_counts(found, cq, inactive_reason(world, cq) is not None,
                                              ctx.config.gate(c.GATE_SCHEDULING_EQUIVALENCE_HASHING))
        out.append(Gauge(c.METRIC_PENDING_WORKLOADS, FrozenMap({"cluster_queue": name, "status": "active"}),
                         active))
        out.append(Gauge(c.METRIC_PENDING_WORKLOADS,
                         FrozenMap({"cluster_queue": name, "status": "inadmissible"}), inadmissible))
        out.append(Gauge(c.METRIC_RESERVING_ACTIVE_WORKLOADS, FrozenMap({"cluster_queue": name}),
                         len(found.index.holding.get(name, ()))))
    return tuple(out)


def cluster_queues(world: World) -> Iterable[ClusterQueue]:
    return (q for q in world.objects(c.CLUSTER_QUEUE) if isinstance(q, ClusterQueue))


def pods_ready(wl: Workload) -> bool:
    return is_true(wl.status.conditions, c.WORKLOAD_PODS_READY)
