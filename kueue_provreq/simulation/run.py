"""``simulate``: many workloads over time, and what it cost them.

A :class:`~spec.Simulation` is a value and :func:`simulate` a function of it alone: the same
simulation gives the same :class:`Report`, byte for byte once written, with no global state,
which is what lets a sweep run its points anywhere.

The run: the setup is created at the start; workloads arrive (Poisson, all at once, or a
trace), each as its Workload (a Job template becomes the Workload Kueue's job integration
creates; the Job itself is implicit, as the job controller allows); the controllers and the
sampled Cluster Autoscaler (:mod:`~kueue_provreq.simulation.fleet`) run forward in time; the
job model makes admitted pods ready and Jobs finish.  A workload that is finished or
deactivated, and owns no request any more, leaves the cluster (as an object retention policy
would delete it): it matters to nobody after that, and the scheduler need not walk it again.
The run ends when nothing is left to happen, or ``horizon`` after the last arrival.

The processes that play the cluster (:mod:`~kueue_provreq.simulation.drive`: Cluster
Autoscaler, the jobs' pods, the retention policy) and the metrics each subscribe to the loop;
the metrics only read what the loop reports (:mod:`~kueue_provreq.simulation.watch`).  A new
metric is one more thing :class:`_Metrics` keeps and one more field of the report.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from decimal import Decimal
from typing import Any

import attrs

from kueue_provreq.api import constants as c
from kueue_provreq.api.evolve import evolve
from kueue_provreq.api.frozen import FrozenMap
from kueue_provreq.api.meta import Time
from kueue_provreq.api.objects import JobObject, Key, key_of
from kueue_provreq.api.provisioning import ProvisioningRequest
from kueue_provreq.api.queues import LocalQueue
from kueue_provreq.api.workload import Workload
from kueue_provreq.controllers import job as jobs
from kueue_provreq.machines import WorkloadPhase as P
from kueue_provreq.simulation import units
from kueue_provreq.simulation.drive import AutoscalerDriver, JobDriver, Retention
from kueue_provreq.simulation.existing import attempts_before, remaining
from kueue_provreq.simulation.fleet import Draws, FleetModel
from kueue_provreq.simulation.loop import Loop
from kueue_provreq.simulation.outcomes import Outcome, outcome_of
from kueue_provreq.simulation.spec import POISSON, Simulation, repeat_period
from kueue_provreq.simulation.watch import Subscriber
from kueue_provreq.world import Create, World
from kueue_provreq.world_builder import build_world

GANTT_LIMIT = 50
"""Runs of at most this many workloads keep each workload's phase history (for a Gantt chart)."""

SERIES_POINTS = 4000
"""Samples kept of each time series: past this, the spacing between samples doubles until
half are left (:meth:`_Metrics._thin`), so memory stays flat however long the run."""

WAITING, ADMITTED = "waiting", "admitted"
_ZERO = Decimal(0)


# --- results -------------------------------------------------------------------------------


@attrs.frozen
class WorkloadRecord:
    """One workload's life; times are seconds after the simulation's start (None: never)."""

    namespace: str
    name: str
    template: str
    created: int
    quota_reserved: int | None
    admitted: int | None
    finished: int | None
    deactivated: int | None
    attempts: int
    evictions: int
    outcome: str
    """``Finished``, ``Admitted`` (still running at the end), ``Deactivated`` or ``Pending``."""
    cluster_queue: str = ""
    """Its LocalQueue's ClusterQueue when it arrived (empty: none)."""
    pods_ready: int | None = None
    """When its pods were first ready (``PodsReady=True``): the job started running."""
    local_queue: str = ""
    """``namespace/name`` of its LocalQueue."""


@attrs.frozen
class Percentiles:
    """A latency over every workload of its scope, those it never reached included.

    A workload the latency never reached (never admitted, or its pods never ready, by the end
    of the run: deactivated or still waiting) is *censored* at the end: it counts as reaching
    it when the run stopped, a lower bound on its true value (a deactivated workload's is
    infinite).  So dropping workloads never looks fast: their waits count, at least as long as
    the run went on.  A percentile that falls on a censored workload is itself a lower bound,
    which the table marks with ``>=``."""

    p50: int | None
    p90: int | None
    p99: int | None
    max: int | None
    censored_share: Decimal | None = None
    """The share of the workloads that were censored (None: no workloads)."""
    censored: frozenset[str] = attrs.field(default=frozenset(), metadata={"json": None})
    """The percentiles (``p50`` ...) that fell on a censored workload: lower bounds."""

    @classmethod
    def of(cls, values: list[int], censored: Sequence[int] = ()) -> Percentiles:
        """Nearest-rank percentiles over ``values`` and the ``censored`` lower bounds (a tie
        ranks the observed value first): always one of them, so exact and reproducible."""
        if not values and not censored:
            return cls(None, None, None, None)
        ordered = sorted([(v, False) for v in values] + [(v, True) for v in censored])
        marked: set[str] = set()

        def rank(name: str, p: float) -> int:
            value, bound = ordered[max(0, math.ceil(p * len(ordered)) - 1)]
            if bound:
                marked.add(name)
            return value
        p50, p90, p99, top = rank("p50", 0.5), rank("p90", 0.9), rank("p99", 0.99), rank("max", 1.0)
        return cls(p50, p90, p99, top, Decimal(len(censored)) / len(ordered), frozenset(marked))


@attrs.frozen
class Attempts:
    """ProvisioningRequests created per workload (every provisioning check's attempts)."""

    mean: Decimal | None
    p90: int | None
    max: int | None

    @classmethod
    def of(cls, counts: list[int]) -> Attempts:
        if not counts:
            return cls(None, None, None)
        ordered = sorted(counts)
        return cls(Decimal(sum(ordered)) / len(ordered), ordered[max(0, math.ceil(0.9 * len(ordered)) - 1)], ordered[-1])


@attrs.frozen
class RequestCounts:
    """ProvisioningRequests created, and how many of them ever reached each condition."""

    created: int
    provisioned: int
    failed: int
    booking_expired: int
    """``BookingExpired=True`` because the booking ran out (``CapacityReservationTimeExpired``)."""
    booking_consumed: int
    """``BookingExpired=True`` because every pod was scheduled (``CapacityBookingConsumed``):
    the normal end of a booking."""
    capacity_revoked: int


@attrs.frozen
class Summary:
    """The run in numbers.  Each field is one metric: :class:`_Metrics` computes it
    (:meth:`_Metrics.summary`), and ``summary.json`` writes it under its camelCase name (or the
    field's ``json`` metadata; None: not written), so a new metric is a field here and its
    value there.  Every figure leaves out the warm-up (:attr:`warm_up_seconds`)."""

    simulation: str
    seed: int
    warm_up_seconds: int
    """Left out of the figures: workloads created in it, and what happened in it (``--warm-up``)."""
    workloads: int
    admitted: int
    """Admitted and still running at the end."""
    deactivated: int
    pending: int
    """Neither admitted, finished nor deactivated at the end."""
    finished: int
    admission_latency: Percentiles = attrs.field(metadata={"json": "admissionLatencySeconds"})
    """From creation to first admission (censored: :class:`Percentiles`)."""
    time_to_running: Percentiles = attrs.field(metadata={"json": "timeToRunningSeconds"})
    """From creation to the pods' first being ready (censored: :class:`Percentiles`)."""
    attempts: Attempts = attrs.field(metadata={"json": "attemptsPerWorkload"})
    requests: RequestCounts = attrs.field(metadata={"json": "provisioningRequests"})
    evictions: FrozenMap[str, int]
    """By the ``Evicted`` condition's reason."""
    reserved_waiting_quota_seconds: FrozenMap[str, Decimal] = attrs.field(metadata={"json": None})
    """Per resource, the quota held by workloads whose admission checks were not all Ready,
    integrated over time (the resource's base unit times seconds): what a slow or failing
    autoscaler costs everyone else.  summary.json has it in readable units
    (:attr:`quota_held_waiting`)."""
    quota_held_waiting: FrozenMap[str, Decimal] = attrs.field(metadata={"json": "quotaHeldWaiting"})
    """:attr:`reserved_waiting_quota_seconds` in readable units (:func:`units.readable`)."""
    simulated_seconds: int
    cluster_queues: FrozenMap[str, QueueSummary] = FrozenMap()
    """The same figures per ClusterQueue (a workload's: its LocalQueue's when it arrived), for
    runs where several queues share quota through a cohort."""
    local_queues: FrozenMap[str, QueueSummary] = FrozenMap()
    """The same figures per LocalQueue (``namespace/name``), when there are several."""

    def to_json(self) -> dict[str, Any]:
        out = dict(_json(self))
        for key, value in (("warmUpSeconds", self.warm_up_seconds), ("clusterQueues", self.cluster_queues),
                           ("localQueues", self.local_queues)):
            if not value:
                del out[key]  # no warm-up: nothing left out; one queue: the totals say it all
        return out


@attrs.frozen
class QueueSummary:
    """One ClusterQueue's or LocalQueue's share of the :class:`Summary`."""

    workloads: int
    finished: int
    admitted: int
    pending: int
    deactivated: int
    admission_latency: Percentiles = attrs.field(metadata={"json": "admissionLatencySeconds"})
    time_to_running: Percentiles = attrs.field(metadata={"json": "timeToRunningSeconds"})
    attempts: Attempts = attrs.field(metadata={"json": "attemptsPerWorkload"})
    reserved_waiting_quota_seconds: FrozenMap[str, Decimal] = attrs.field(metadata={"json": None})
    quota_held_waiting: FrozenMap[str, Decimal] = attrs.field(metadata={"json": "quotaHeldWaiting"})
    """:attr:`reserved_waiting_quota_seconds` in readable units (:func:`units.readable`)."""


def _json(value: Any) -> Any:
    """A summary value as JSON: an attrs class as an object of its fields (but those whose
    ``json`` metadata is None), maps with sorted keys, exact numbers (:func:`_number`)."""
    if attrs.has(type(value)):
        return {f.metadata.get("json", _camel(f.name)): _json(getattr(value, f.name)) for f in attrs.fields(type(value))
                if f.metadata.get("json", "") is not None}
    if isinstance(value, Mapping):
        return {k: _json(v) for k, v in sorted(value.items())}
    if isinstance(value, Decimal):
        return _number(value)
    return value


def _camel(name: str) -> str:
    first, *rest = name.split("_")
    return first + "".join(part.capitalize() for part in rest)


def _number(value: Decimal) -> int | float:
    """Exact values as JSON numbers: integers stay integers, fractions keep 3 decimals."""
    return int(value) if value == value.to_integral_value() else float(round(value, 3))


@attrs.frozen
class Series:
    """Counts and quota over time, sampled at the end of instants (step functions)."""

    times: tuple[int, ...]
    pending: tuple[int, ...]
    waiting: tuple[int, ...]
    admitted: tuple[int, ...]
    waiting_quota: FrozenMap[str, tuple[float, ...]]
    admitted_quota: FrozenMap[str, tuple[float, ...]]


@attrs.frozen
class Report:
    simulation: Simulation
    summary: Summary
    workloads: tuple[WorkloadRecord, ...]
    series: Series
    histories: FrozenMap[str, tuple[tuple[int, str], ...]] = FrozenMap()
    """``namespace/name`` -> (seconds after the start, phase entered), for runs of at most
    :data:`GANTT_LIMIT` workloads."""


# --- the run ---------------------------------------------------------------------------------


@attrs.define
class _Life:
    template: str
    created: int
    quota_reserved: int | None = None
    admitted: int | None = None
    finished: int | None = None
    deactivated: int | None = None
    attempts: int = 0
    evictions: int = 0
    outcome: str = Outcome.PENDING.value
    cluster_queue: str = ""
    pods_ready: int | None = None
    local_queue: str = ""


class _Metrics(Subscriber):
    """Everything the report needs, updated effect by effect; it only reads."""

    def __init__(self, loop: Loop, sim: Simulation, templates: dict[Key, str],
                 progress: Callable[[int], None] | None) -> None:
        self.loop = loop
        self.start = sim.start
        self.warm = Time(sim.start + sim.warm_up)
        """The end of the warm-up: what happens before it is left out of the figures."""
        self.lives: dict[Key, _Life] = {}
        self.templates = templates
        self.phase_counts: dict[str, int] = {}
        self.quota: dict[Key, _Held] = {}
        self.totals: dict[str, dict[str, Decimal]] = {WAITING: {}, ADMITTED: {}}
        self.waiting_seconds: dict[str, Decimal] = {}
        self.queue_waiting: dict[str, dict[str, Decimal]] = {}
        """Per ClusterQueue, the quota its waiting workloads hold now."""
        self.queue_waiting_seconds: dict[str, dict[str, Decimal]] = {}
        self.local_waiting: dict[str, dict[str, Decimal]] = {}
        """Per LocalQueue (``namespace/name``), the quota its waiting workloads hold now."""
        self.local_waiting_seconds: dict[str, dict[str, Decimal]] = {}
        self.request_conditions: dict[Key, set[str]] = {}
        self.requests = {"created": 0, c.PR_PROVISIONED: 0, c.PR_FAILED: 0, c.PR_BOOKING_EXPIRED: 0,
                         c.CA_REASON_CAPACITY_BOOKING_CONSUMED: 0, c.PR_CAPACITY_REVOKED: 0}
        self.evictions: dict[str, int] = {}
        self.t = sim.start
        self.samples: list[tuple[Any, ...]] = []
        self.spacing = 0
        self.category_counts: dict[str, int] = {}
        self.done = 0
        self.on_done = progress
        self.histories: dict[Key, list[tuple[int, str]]] | None = {} if sim.count <= GANTT_LIMIT else None
        loop.subscribe(self)

    def on_instant(self, now: int) -> None:
        self._advance(now)

    # --- time -------------------------------------------------------------------------
    def _advance(self, now: int, last: bool = False) -> None:
        dt = now - max(self.t, self.warm)  # the warm-up's share left out
        if dt > 0:
            for resource, amount in self.totals[WAITING].items():
                if amount:
                    self.waiting_seconds[resource] = self.waiting_seconds.get(resource, _ZERO) + amount * dt
            for held_now, integral in ((self.queue_waiting, self.queue_waiting_seconds),
                                       (self.local_waiting, self.local_waiting_seconds)):
                for queue, held in held_now.items():
                    seconds = integral.setdefault(queue, {})
                    for resource, amount in held.items():
                        if amount:
                            seconds[resource] = seconds.get(resource, _ZERO) + amount * dt
        self._sample(now, last)
        self.t = Time(now)

    def _sample(self, until: int, last: bool) -> None:
        """Keep the state the instant ``self.t`` ended with, which holds until ``until``: at
        most one sample per spacing, except that a state held for a spacing or more is always
        kept (a quiet weekend shows the state it really had, not the last one kept before it),
        and so is the ``last``."""
        t = self.t - self.start
        held = until - self.t
        if not last and self.samples and t - self.samples[-1][0] < self.spacing and held < self.spacing:
            return
        counts = self.phase_counts
        self.samples.append((t, counts.get(P.PENDING, 0) + counts.get(P.BACKOFF, 0), self._count(WAITING),
                             self._count(ADMITTED), dict(self.totals[WAITING]), dict(self.totals[ADMITTED]), held))
        if len(self.samples) > SERIES_POINTS:
            self._thin()

    def _thin(self) -> None:
        """Double the spacing until at most half the samples are left, by the rule
        :meth:`_sample` keeps them by (the first and the last are always kept)."""
        while len(self.samples) > SERIES_POINTS // 2:
            self.spacing = max(1, self.spacing * 2)
            kept = [self.samples[0]]
            for sample in self.samples[1:-1]:
                if sample[0] - kept[-1][0] >= self.spacing or sample[-1] >= self.spacing:
                    kept.append(sample)
            kept.append(self.samples[-1])
            self.samples = kept

    def _count(self, category: str) -> int:
        return self.category_counts.get(category, 0)

    def finish(self, end: int) -> None:
        """The run ended at ``end``: the last state is kept, and drawn until ``end``."""
        self._advance(end, last=True)
        if self.samples[-1][0] < end - self.start:
            self.samples.append((end - self.start, *self.samples[-1][1:-1], 0))

    # --- workloads ----------------------------------------------------------------------
    def _phase_count(self, phase: str | None, delta: int) -> None:
        if phase is not None:
            self.phase_counts[phase] = self.phase_counts.get(phase, 0) + delta

    def on_workload_created(self, actor: str, wl: Workload) -> None:
        key = key_of(wl)
        phase = self.loop.watch.phases[key]
        lq = self.loop.world.get(c.LOCAL_QUEUE, wl.metadata.namespace, wl.spec.queue_name)
        cq = lq.spec.cluster_queue if isinstance(lq, LocalQueue) else ""
        life = self.lives[key] = _Life(self.templates.get(key, ""), self.loop.now - self.start, cluster_queue=cq,
                                       local_queue=f"{wl.metadata.namespace}/{wl.spec.queue_name}")
        self._phase_count(phase, 1)
        if not actor:  # a cluster's workload, there at the start: its past as its conditions say
            self._taken_up(wl, life)
        if self.histories is not None:
            self.histories[key] = [(self.loop.now - self.start, phase)]

    def _taken_up(self, wl: Workload, life: _Life) -> None:
        """A workload the run starts with: created, reserved and admitted when its conditions say
        (before the start: negative), its attempts as Kueue counted them, the quota it holds."""
        def since(type_: str) -> int | None:
            cond = wl.condition(type_)
            if cond is None or cond.status != c.TRUE or cond.last_transition_time is None:
                return None
            return cond.last_transition_time - self.start
        life.created = (wl.metadata.creation_timestamp or self.start) - self.start
        life.quota_reserved = since(c.WORKLOAD_QUOTA_RESERVED)
        life.admitted = since(c.WORKLOAD_ADMITTED)
        life.pods_ready = since(c.WORKLOAD_PODS_READY)
        life.attempts = attempts_before(self.loop.world, wl)
        life.outcome = outcome_of(self.loop.watch.phases[key_of(wl)])
        self.on_workload_updated("", wl)

    def on_phase(self, actor: str, wl: Workload, before: str, after: str) -> None:
        key = key_of(wl)
        life = self.lives[key]
        now = self.loop.now - self.start
        self._phase_count(before, -1)
        self._phase_count(after, 1)
        if self.histories is not None:
            self.histories[key].append((now, after))
        if after in (P.QUOTA_RESERVED, P.ADMITTED) and before in (P.PENDING, P.BACKOFF) and life.quota_reserved is None:
            life.quota_reserved = now
        if after == P.ADMITTED and life.admitted is None:
            life.admitted = now
        if after == P.EVICTED:
            life.evictions += 1
            if self.loop.now >= self.warm:
                evicted = wl.condition(c.WORKLOAD_EVICTED)
                reason = evicted.reason if evicted is not None else "Unknown"
                self.evictions[reason] = self.evictions.get(reason, 0) + 1
        if after in (P.FINISHED, P.INACTIVE):
            if after == P.FINISHED:
                life.finished = now
            else:
                life.deactivated = now
            self.done += 1
            if self.on_done is not None:
                self.on_done(self.done)
        life.outcome = outcome_of(after)

    def pods_ready(self, wl: Workload) -> None:
        """The job model made the workload's pods ready: the job runs."""
        life = self.lives[key_of(wl)]
        if life.pods_ready is None:
            life.pods_ready = self.loop.now - self.start

    def on_workload_updated(self, actor: str, wl: Workload) -> None:
        key = key_of(wl)
        status = wl.status
        category: str | None = None
        if status.admission is not None:
            true = status.true_types
            if c.WORKLOAD_QUOTA_RESERVED in true and c.WORKLOAD_FINISHED not in true:
                if c.WORKLOAD_ADMITTED in true:
                    category = ADMITTED
                elif any(s.state != c.CHECK_READY for s in status.admission_checks):
                    category = WAITING
        held = self.quota.get(key)
        if held is not None and held[0] == category:
            return
        if held is not None:
            self._hold(held, -1)
            del self.quota[key]
        if category is not None:
            assert status.admission is not None
            usage: dict[str, Decimal] = {}
            for psa in status.admission.pod_set_assignments:
                for resource, q in psa.resource_usage.items():
                    usage[resource] = usage.get(resource, _ZERO) + q.value
            lq = f"{wl.metadata.namespace}/{wl.spec.queue_name}"
            self.quota[key] = (category, usage, status.admission.cluster_queue, lq)
            self._hold(self.quota[key], 1)

    def _hold(self, held: _Held, sign: int) -> None:
        category, usage, cq, lq = held
        totals = self.totals[category]
        queues = (self.queue_waiting.setdefault(cq, {}), self.local_waiting.setdefault(lq, {})) \
            if category == WAITING else ()
        for resource, amount in usage.items():
            totals[resource] = totals.get(resource, _ZERO) + sign * amount
            for queue in queues:
                queue[resource] = queue.get(resource, _ZERO) + sign * amount
        self.category_counts[category] = self.category_counts.get(category, 0) + sign

    def on_workload_deleted(self, actor: str, key: Key, phase: str) -> None:
        self._phase_count(phase, -1)
        held = self.quota.pop(key, None)
        if held is not None:
            self._hold(held, -1)

    # --- requests ---------------------------------------------------------------------
    def on_request_created(self, actor: str, pr: ProvisioningRequest) -> None:
        if not actor:  # a cluster's, there at the start: counted with its workload's attempts
            self.request_conditions[key_of(pr)] = {x.type for x in pr.status.conditions if x.status == c.TRUE}
            return
        if self.loop.now >= self.warm:  # one created in the warm-up is left out, all its life
            self.requests["created"] += 1
            self.request_conditions[key_of(pr)] = set()
        ref = pr.metadata.controller_ref()
        if ref is not None:
            life = self.lives.get((c.WORKLOAD, pr.metadata.namespace, ref.name))
            if life is not None:
                life.attempts += 1

    def on_request_updated(self, actor: str, pr: ProvisioningRequest) -> None:
        seen = self.request_conditions.get(key_of(pr))
        if seen is None:
            return
        for cond in pr.status.conditions:
            if cond.status == c.TRUE and cond.type in self.requests and cond.type not in seen:
                seen.add(cond.type)
                consumed = cond.type == c.PR_BOOKING_EXPIRED and cond.reason == c.CA_REASON_CAPACITY_BOOKING_CONSUMED
                self.requests[c.CA_REASON_CAPACITY_BOOKING_CONSUMED if consumed else cond.type] += 1

    def on_request_deleted(self, actor: str, key: Key) -> None:
        self.request_conditions.pop(key, None)

    # --- the report -------------------------------------------------------------------
    def records(self) -> tuple[WorkloadRecord, ...]:
        return tuple(WorkloadRecord(ns, name, life.template, life.created, life.quota_reserved, life.admitted,
                                    life.finished, life.deactivated, life.attempts, life.evictions, life.outcome,
                                    life.cluster_queue, life.pods_ready, life.local_queue)
                     for (_, ns, name), life in self.lives.items())

    def summary(self, records: tuple[WorkloadRecord, ...], end: int) -> dict[str, Any]:
        """Each metric of :class:`Summary` but the run's name, seed and length, over the
        workloads created after the warm-up; ``end``: seconds from the start to the run's end."""
        counted = after_warm_up(records, self.warm - self.start)
        req = self.requests
        return {
            "warm_up_seconds": self.warm - self.start, **_workload_figures(counted, end),
            "requests": RequestCounts(req["created"], req[c.PR_PROVISIONED], req[c.PR_FAILED], req[c.PR_BOOKING_EXPIRED],
                                      req[c.CA_REASON_CAPACITY_BOOKING_CONSUMED], req[c.PR_CAPACITY_REVOKED]),
            "evictions": FrozenMap(self.evictions),
            "reserved_waiting_quota_seconds": FrozenMap(self.waiting_seconds),
            "quota_held_waiting": units.readable(self.waiting_seconds),
            "cluster_queues": _per_queue(counted, end, lambda r: r.cluster_queue, self.queue_waiting_seconds),
            "local_queues": _per_queue(counted, end, lambda r: r.local_queue, self.local_waiting_seconds),
        }


def after_warm_up(records: Sequence[WorkloadRecord], warm_up: int) -> tuple[WorkloadRecord, ...]:
    """The workloads the figures count: those created after a warm-up of ``warm_up`` seconds,
    or, without one, all (those a cluster's state started the run with, created before the
    start, included)."""
    return tuple(r for r in records if r.created >= warm_up) if warm_up else tuple(records)


_Held = tuple[str, dict[str, Decimal], str, str]
"""What a workload holds: its category, its usage per resource, its ClusterQueue and LocalQueue."""


def _workload_figures(records: Sequence[WorkloadRecord], end: int) -> dict[str, Any]:
    """The figures of :class:`QueueSummary` but the quota, over ``records``; a latency not
    reached by ``end`` is censored there (:class:`Percentiles`)."""
    outcomes = [r.outcome for r in records]

    def latency(reached: Callable[[WorkloadRecord], int | None]) -> Percentiles:
        observed: list[int] = []
        censored: list[int] = []
        for r in records:
            at = reached(r)
            (observed if at is not None else censored).append((end if at is None else at) - r.created)
        return Percentiles.of(observed, censored)

    return {
        "workloads": len(records), "admitted": outcomes.count(Outcome.ADMITTED),
        "deactivated": outcomes.count(Outcome.DEACTIVATED), "pending": outcomes.count(Outcome.PENDING),
        "finished": outcomes.count(Outcome.FINISHED),
        "admission_latency": latency(lambda r: r.admitted), "time_to_running": latency(lambda r: r.pods_ready),
        "attempts": Attempts.of([r.attempts for r in records]),
    }


def _arrival_times(sim: Simulation, draws: Draws) -> Iterator[int]:
    if sim.trace:
        period = repeat_period(sim.trace, sim.trace_period)
        for i in range(sim.count):
            copy, index = divmod(i, len(sim.trace))
            yield sim.trace[index].at + copy * period
    elif sim.process == POISSON:
        rng = draws.rng("arrivals")
        t = 0.0
        for _ in range(sim.count):
            yield round(t)
            t += rng.expovariate(sim.rate_per_hour / 3600)
    else:
        yield from (0 for _ in range(sim.count))


class _Arrivals:
    """Creates the i-th workload when its time comes, and schedules the next one."""

    def __init__(self, sim: Simulation, loop: Loop, draws: Draws) -> None:
        self.sim = sim
        self.loop = loop
        self.templates: dict[Key, str] = {}
        """Each arrival's template (``""``: a trace's own Workload)."""
        self.running: dict[Key, int] = {}
        """The running time a trace gives a workload (it replaces the job model's draw)."""
        self.times = list(_arrival_times(sim, draws))
        self.choices = draws.stream("templates") if not sim.trace else None
        self.weights = [t.weight for t in sim.templates]
        self.width = max(5, len(str(sim.count)))
        self.index = 0

    @property
    def last(self) -> int:
        return self.times[-1]

    def start(self) -> None:
        self._next()

    def _next(self) -> None:
        if self.index < len(self.times):
            self.loop.at(self.sim.start + self.times[self.index], self._arrive)

    def _arrive(self) -> None:
        sim = self.sim
        self.index += 1
        i = self.index
        running = None
        if self.choices is not None:
            template = self.choices.choices(sim.templates, self.weights)[0]
            wl, name = self._from_template(template.obj, i), template.name
        else:
            arrival = sim.trace[(i - 1) % len(sim.trace)]
            copy = (i - 1) // len(sim.trace)
            running = arrival.running_time
            if arrival.template is not None:
                wl, name = self._from_template(sim.template(arrival.template).obj, i), arrival.template
            else:
                assert arrival.workload is not None
                meta = arrival.workload.metadata
                wl = evolve(arrival.workload, metadata=evolve(
                    meta, name=meta.name if copy == 0 else f"{meta.name}-{copy + 1}"))
                name = ""
        world = self.loop.world
        meta = wl.metadata
        wl = evolve(wl, metadata=evolve(meta, namespace=meta.namespace or c.DEFAULT_NAMESPACE,
                                        uid=world.next_uid(), generation=1, creation_timestamp=self.loop.now))
        self.templates[key_of(wl)] = name
        if running is not None:
            self.running[key_of(wl)] = running
        self._next()
        self.loop.write("arrival", Create(wl))

    def _from_template(self, obj: Workload | JobObject, i: int) -> Workload:
        meta = obj.metadata
        prefix = str(meta.extra.get("generateName") or "") or f"{meta.name}-"
        name = f"{prefix}{i:0{self.width}d}"
        extra = FrozenMap({k: v for k, v in meta.extra.items() if k != "generateName"})
        if isinstance(obj, Workload):
            return evolve(obj, metadata=evolve(meta, name=name, extra=extra))
        # a job the world does not hold (the job reconciler's implicit job): its uid lives
        # outside the world's own sequence
        job: JobObject = evolve(obj, metadata=evolve(
            meta, name=name, extra=extra, uid=f"00000000-0000-4000-9000-{i:012x}",
            namespace=meta.namespace or c.DEFAULT_NAMESPACE))
        return jobs.workload_for(job, self.sim.config)


def simulate(sim: Simulation, *, verify: bool = False, progress: Callable[[int], None] | None = None) -> Report:
    """Run ``sim``.  ``verify`` has the engine prove after every settle that it missed no
    reconcile (slow; for tests).  ``progress`` is called with the number of workloads done
    (finished or deactivated) each time one is."""
    draws = Draws(sim.seed)
    world: World = build_world(sim.setup, sim.start, sim.config)
    loop = Loop(world, sim.config, sim.start, verify=verify)
    arrivals = _Arrivals(sim, loop, draws)
    metrics = _Metrics(loop, sim, arrivals.templates, progress)

    def durations(wl: Workload, admission: int) -> tuple[int, int | None]:
        _, ns, name = key_of(wl)
        template = arrivals.templates.get((c.WORKLOAD, ns, name), "")
        model = sim.template(template).jobs if template else sim.jobs
        ready = model.pods_ready_time.draw(draws.rng("ready", ns, name, admission))
        traced = arrivals.running.get((c.WORKLOAD, ns, name))
        run = model.running_time.draw(draws.rng("run", ns, name)) if traced is None else traced
        return ready, run

    jobs = JobDriver(loop, durations)
    jobs.when_pods_ready(metrics.pods_ready)
    AutoscalerDriver(loop, FleetModel(sim, world, draws), jobs)
    Retention(loop)
    _take_up(loop, sim, jobs, draws)
    arrivals.start()
    until = sim.start + arrivals.last + sim.horizon
    end = until if loop.run(until) else loop.now
    metrics.finish(end)
    return _report(sim, metrics, end)


def _take_up(loop: Loop, sim: Simulation, jobs: JobDriver, draws: Draws) -> None:
    """The workloads and requests the run starts with (a cluster's state, ``--from``) go on from
    where they stand: each is told to every process and observer as there from the start, and
    an admitted workload's pods are ready after what is left of a pods-ready time drawn from its
    admission, its Job done after a running time drawn given how long it has run already
    (:func:`~kueue_provreq.simulation.existing.remaining`), from the file's ``jobs`` model."""
    world = loop.world
    workloads = [o for o in world.objects(c.WORKLOAD) if isinstance(o, Workload)]
    for obj in [*workloads, *world.objects(c.PROVISIONING_REQUEST)]:
        loop.report(obj)
    for wl in workloads:
        if not wl.is_admitted() or wl.is_finished():
            continue
        ns, name = wl.metadata.namespace, wl.metadata.name
        ready = wl.condition(c.WORKLOAD_PODS_READY)
        if ready is not None and ready.status == c.TRUE and ready.last_transition_time is not None:
            left = remaining(sim.jobs.running_time, loop.now - ready.last_transition_time,
                             draws.rng("remaining", ns, name))
            jobs.take_up(wl, 0, left)
            continue
        admitted = wl.condition(c.WORKLOAD_ADMITTED)
        since = loop.now - (admitted.last_transition_time or loop.now) if admitted is not None else 0
        ready_in = max(0, sim.jobs.pods_ready_time.draw(draws.rng("ready", ns, name, 1)) - since)
        jobs.take_up(wl, ready_in, sim.jobs.running_time.draw(draws.rng("run", ns, name)))


def _per_queue(records: tuple[WorkloadRecord, ...], end: int, queue_of: Callable[[WorkloadRecord], str],
               waiting_seconds: Mapping[str, Mapping[str, Decimal]]) -> FrozenMap[str, QueueSummary]:
    """The figures per queue (``queue_of`` a workload), when the workloads went to more than one."""
    names = sorted({queue_of(r) for r in records})
    if len(names) < 2:
        return FrozenMap()
    out = {}
    for name in names:
        held = {k: v for k, v in waiting_seconds.get(name, {}).items() if v}
        out[name] = QueueSummary(**_workload_figures([r for r in records if queue_of(r) == name], end),
                                 reserved_waiting_quota_seconds=FrozenMap(held),
                                 quota_held_waiting=units.readable(held))
    return FrozenMap(out)


def _report(sim: Simulation, m: _Metrics, end: int) -> Report:
    records = m.records()
    summary = Summary(simulation=sim.name, seed=sim.seed, simulated_seconds=end - sim.start,
                      **m.summary(records, end - sim.start))
    resources = sorted(set().union(*(s[4].keys() | s[5].keys() for s in m.samples))) if m.samples else []
    samples = m.samples
    series = Series(
        times=tuple(s[0] for s in samples), pending=tuple(s[1] for s in samples),
        waiting=tuple(s[2] for s in samples), admitted=tuple(s[3] for s in samples),
        waiting_quota=FrozenMap({r: tuple(float(s[4].get(r, 0)) for s in samples) for r in resources}),
        admitted_quota=FrozenMap({r: tuple(float(s[5].get(r, 0)) for s in samples) for r in resources}))
    histories = FrozenMap({f"{ns}/{name}": tuple(h) for (_, ns, name), h in (m.histories or {}).items()})
    return Report(sim, summary, records, series, histories)


__all__ = ["Attempts", "Percentiles", "after_warm_up", "QueueSummary", "Report", "RequestCounts", "Series", "Summary", "WorkloadRecord", "simulate"]
