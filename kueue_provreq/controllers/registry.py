"""The modelled controllers, declared once: what each reconciles, what it watches, what it owns.

The engine routes every change from this table (as controller-runtime's ``For``, ``Owns`` and
``Watches`` do), instead of knowing the controllers by name.  The scheduler is not here: it is
one cycle over every queue, run after the keyed reconciles at each pass of a settle.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from enum import StrEnum

import attrs

from kueue_provreq.api import constants as c
from kueue_provreq.api.config import Configuration
from kueue_provreq.api.objects import JOB_KINDS, Key, KubeObject, key_of
from kueue_provreq.api.workload import Workload
from kueue_provreq.controllers import (
    admissioncheck,
    clusterqueue,
    job,
    localqueue,
    provisioning,
    watches,
    workload,
)
from kueue_provreq.controllers.context import Context
from kueue_provreq.controllers.parts import Parts
from kueue_provreq.machines import Actor
from kueue_provreq.world import Result, World

Reconcile = Callable[[World, Key, Context], Result]
Reads = Callable[[World, Workload, Configuration], Parts]
"""A watch predicate: the parts of a Workload (:mod:`.parts`) a reconcile of it reads, in its
state; a function of those parts alone, of the configuration, and of objects whose changes
the controller's watches route to it."""
Idle = Callable[[Workload, Configuration], bool]


class Route(StrEnum):
    """How a change to a watched object maps to the keys a controller reconciles."""

    SELF = "self"
    """The changed object is one the controller reconciles."""
    OWNER = "owner"
    """The Workload that controls it: directly, or through the ProvisioningRequest a template
    belongs to."""
    OWNED = "owned"
    """The Workloads it owns (a job's)."""
    OWNING_JOB = "owning-job"
    """The jobs it names as owners (a Workload's)."""
    ALL = "all"
    """Every object the controller reconciles (configuration everyone reads)."""
    QUEUES = "queues"
    """The ClusterQueues (for a ClusterQueue controller) or LocalQueues (for a LocalQueue one)
    whose status counts it (a Workload's, as it was and as it is), when the change moves their
    counts (``queues.recounted``)."""


RouteTargets = Callable[[World, Key, KubeObject | None, KubeObject | None], list[Key]]
"""The keys a change routes to: (world, changed key, object before, object after)."""


def _owners(world: World, key: Key, before: KubeObject | None, after: KubeObject | None) -> list[Key]:
    """``Route.OWNER``: the Workload that controls the object (as it is, or was before its
    deletion): a request's controller, or a template's through the request that owns it (or
    the Workload itself, before the hand-over)."""
    obj = after if after is not None else before
    if obj is None:
        return []
    ns = key[1]
    out = []
    for ref in obj.metadata.owner_references:
        if ref.kind == c.PROVISIONING_REQUEST:
            owner = world.get(c.PROVISIONING_REQUEST, ns, ref.name)
            ctrl = owner.metadata.controller_ref() if owner is not None else None
        else:
            ctrl = ref if ref.controller else None
        if ctrl is not None and ctrl.kind == c.WORKLOAD:
            out.append((c.WORKLOAD, ns, ctrl.name))
    return out


def _owned(world: World, key: Key, before: KubeObject | None, after: KubeObject | None) -> list[Key]:
    """``Route.OWNED``: the Workloads a job (existing or deleted) owns by name."""
    return [key_of(wl) for wl in world.owned_by_name(c.WORKLOAD, key[1], key[2])]


def _jobs_named(key: Key, obj: KubeObject | None) -> list[Key]:
    if obj is None:
        return []
    return [(ref.kind, key[1], ref.name) for ref in obj.metadata.owner_references if ref.kind in JOB_KINDS]


def _owning_jobs(world: World, key: Key, before: KubeObject | None, after: KubeObject | None) -> list[Key]:
    """``Route.OWNING_JOB``: the jobs a Workload names as owners, as it was and as it is (those
    whose Workload it is: ``job.workload_of``)."""
    refs_before = before.metadata.owner_references if before is not None else ()
    refs_after = after.metadata.owner_references if after is not None else ()
    if not refs_before and not refs_after:
        return []
    if refs_before is refs_after:
        return _jobs_named(key, before)
    return list(dict.fromkeys([*_jobs_named(key, before), *_jobs_named(key, after)]))


#: The routes that name other objects than the changed one, implemented beside their
#: declarations (``SELF``, ``ALL`` and ``QUEUES`` ask the engine's own state).
ROUTE_TARGETS: dict[Route, RouteTargets] = {
    Route.OWNER: _owners, Route.OWNED: _owned, Route.OWNING_JOB: _owning_jobs}


@attrs.frozen
class Watch:
    kind: str
    route: Route
    unless_written_by: Actor | None = None
    """Changes this controller makes are its own output, not news to it."""


#: Kinds every keyed controller reads as configuration: a change makes all their work due,
#: except a queue's or a check's own status, which its controller writes.
_CONFIGURATION = (
    Watch(c.CLUSTER_QUEUE, Route.ALL, unless_written_by=Actor.CLUSTER_QUEUE),
    Watch(c.LOCAL_QUEUE, Route.ALL, unless_written_by=Actor.LOCAL_QUEUE),
    Watch(c.RESOURCE_FLAVOR, Route.ALL),
    Watch(c.ADMISSION_CHECK, Route.ALL, unless_written_by=Actor.ADMISSION_CHECK),
    Watch(c.PROVISIONING_REQUEST_CONFIG, Route.ALL),
    Watch(c.COHORT, Route.ALL),  # a cohort cycle made or broken makes its queues inactive or active
)


@attrs.frozen
class Controller:
    name: Actor
    kinds: tuple[str, ...]
    """The kinds it reconciles."""
    reconcile: Reconcile
    watches: tuple[Watch, ...]
    reads: Reads | None = None
    """Its watch predicate on its own Workloads: what a reconcile reads of one.  A write that
    changes none of it does not wake a reconcile that last left the Workload with nothing to
    do (it changed nothing, or its whole pass was :attr:`~kueue_provreq.world.Result.settled`)."""
    view: Callable[[Workload], Hashable] | None = None
    """A finer watch predicate, for a write that does change what ``reads`` names: what the
    reconcile decides from, as a value (a write that leaves it equal does not wake it either)."""
    idle: Idle | None = None
    """Whether its reconcile of a Workload in this state does nothing, whatever else holds: a
    Workload seen first so (created, or at the first settle) is not reconciled."""
    owns: tuple[str, ...] = ()
    """Kinds it creates and deletes (for the record and the docs; routed by ``watches``)."""
    last: bool = False
    """Reconciled once the other controllers and the scheduler have nothing left to do: it
    writes only its own object's status, which no other controller reads (a queue's counts and
    usage), so a settle writes that status as the settle leaves it, not each state it passes
    through (a workload counted pending, then reserving, at one instant)."""

    def keys(self, world: World) -> list[Key]:
        """The keys of every object it reconciles, kind by kind."""
        return [key for kind in self.kinds for key in world.keys(kind)]


#: A job's changes, made by anybody but the job reconciler, to the Workloads it owns.
_JOBS_OWNED = tuple(Watch(kind, Route.OWNED, unless_written_by=Actor.JOB) for kind in JOB_KINDS)

CONTROLLERS: tuple[Controller, ...] = (
    # (an AdmissionCheck's Active condition decides whether its ClusterQueue blocks a pending
    # workload: the workload controller sees the check controller's writes too)
    Controller(Actor.WORKLOAD, (c.WORKLOAD,), workload.reconcile, (
        Watch(c.WORKLOAD, Route.SELF), *_JOBS_OWNED, Watch(c.ADMISSION_CHECK, Route.ALL),
        *(w for w in _CONFIGURATION if w.kind != c.ADMISSION_CHECK)), reads=watches.workload_reads,
        idle=watches.idle),
    Controller(Actor.PROVISIONING, (c.WORKLOAD,), provisioning.reconcile, (
        Watch(c.WORKLOAD, Route.SELF), Watch(c.PROVISIONING_REQUEST, Route.OWNER),
        Watch(c.POD_TEMPLATE, Route.OWNER, unless_written_by=Actor.PROVISIONING),
        *_JOBS_OWNED, *_CONFIGURATION),
        reads=watches.provisioning_reads, idle=watches.provisioning_idle, owns=(c.PROVISIONING_REQUEST, c.POD_TEMPLATE)),
    # The job reconciler: its Workloads (eviction, PodsReady) and every job (creation, start, stop).
    Controller(Actor.JOB, (c.WORKLOAD, *JOB_KINDS), job.reconcile, (
        Watch(c.WORKLOAD, Route.SELF), Watch(c.WORKLOAD, Route.OWNING_JOB),
        *(Watch(kind, Route.SELF) for kind in JOB_KINDS), *_JOBS_OWNED, *_CONFIGURATION),
        reads=watches.job_reads, view=watches.job_view, idle=watches.idle, owns=(c.WORKLOAD,)),
    Controller(Actor.ADMISSION_CHECK, (c.ADMISSION_CHECK,), admissioncheck.reconcile, _CONFIGURATION),
    Controller(Actor.CLUSTER_QUEUE, (c.CLUSTER_QUEUE,), clusterqueue.reconcile, (
        Watch(c.WORKLOAD, Route.QUEUES), Watch(c.ADMISSION_CHECK, Route.ALL),
        *(w for w in _CONFIGURATION if w.kind != c.ADMISSION_CHECK)), last=True),
    Controller(Actor.LOCAL_QUEUE, (c.LOCAL_QUEUE,), localqueue.reconcile, (
        Watch(c.WORKLOAD, Route.QUEUES), Watch(c.ADMISSION_CHECK, Route.ALL),
        *(w for w in _CONFIGURATION if w.kind != c.ADMISSION_CHECK)), last=True),
)

BY_NAME: dict[str, Controller] = {ctl.name: ctl for ctl in CONTROLLERS}
"""The controllers by name; the engine runs these unless it is given others (``Manager(world,
controllers=...)``: a test stands one in there)."""
