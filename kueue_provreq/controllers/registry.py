"""The modelled controllers, declared once: what each reconciles, what it watches, what it owns.

The engine routes every change from this table (as controller-runtime's ``For``, ``Owns`` and
``Watches`` do), instead of knowing the controllers by name.  The scheduler is not here: it is
one cycle over every queue, run after the keyed reconciles at each pass of a settle.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Hashable

import attrs

from kueue_provreq.api import constants as c
from kueue_provreq.api.objects import Key
from kueue_provreq.api.workload import Workload
from kueue_provreq.controllers import (
    admissioncheck,
    clusterqueue,
    job,
    provisioning,
    workload,
)
from kueue_provreq.controllers.context import Context
from kueue_provreq.machines import Actor
from kueue_provreq.world import Result, World

Reconcile = Callable[[World, Key, Context], Result]


class Route(enum.Enum):
    """How a change to a watched object maps to the keys a controller reconciles."""

    SELF = "self"
    """The changed object is one the controller reconciles."""
    OWNER = "owner"
    """The Workload that controls it: directly, or through the ProvisioningRequest a template
    belongs to."""
    OWNED = "owned"
    """The Workloads it owns (a Job's)."""
    ALL = "all"
    """Every object the controller reconciles (configuration everyone reads)."""


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
    Watch(c.LOCAL_QUEUE, Route.ALL),
    Watch(c.RESOURCE_FLAVOR, Route.ALL),
    Watch(c.ADMISSION_CHECK, Route.ALL, unless_written_by=Actor.ADMISSION_CHECK),
    Watch(c.PROVISIONING_REQUEST_CONFIG, Route.ALL),
)


@attrs.frozen
class Controller:
    name: Actor
    kind: str
    """The kind it reconciles."""
    reconcile: Reconcile
    watches: tuple[Watch, ...]
    watched: Callable[[Workload], Hashable] | None = None
    """Its watch predicate on its own Workloads: what a reconcile reads of one.  A change that
    leaves it equal does not wake a reconcile that last changed nothing."""
    owns: tuple[str, ...] = ()
    """Kinds it creates and deletes (for the record and the docs; routed by ``watches``)."""
    every_settle: bool = False
    """Reconciled at every settle: its status depends on the time and on every workload."""


CONTROLLERS: tuple[Controller, ...] = (
    Controller(Actor.WORKLOAD, c.WORKLOAD, workload.reconcile, (
        Watch(c.WORKLOAD, Route.SELF), Watch(c.JOB, Route.OWNED, unless_written_by=Actor.JOB), *_CONFIGURATION)),
    Controller(Actor.PROVISIONING, c.WORKLOAD, provisioning.reconcile, (
        Watch(c.WORKLOAD, Route.SELF), Watch(c.PROVISIONING_REQUEST, Route.OWNER),
        Watch(c.POD_TEMPLATE, Route.OWNER, unless_written_by=Actor.PROVISIONING),
        Watch(c.JOB, Route.OWNED, unless_written_by=Actor.JOB), *_CONFIGURATION),
        watched=provisioning.watched, owns=(c.PROVISIONING_REQUEST, c.POD_TEMPLATE)),
    Controller(Actor.JOB, c.WORKLOAD, job.reconcile, (
        Watch(c.WORKLOAD, Route.SELF), Watch(c.JOB, Route.OWNED, unless_written_by=Actor.JOB), *_CONFIGURATION),
        watched=job.watched),
    Controller(Actor.ADMISSION_CHECK, c.ADMISSION_CHECK, admissioncheck.reconcile, _CONFIGURATION,
               every_settle=True),
    Controller(Actor.CLUSTER_QUEUE, c.CLUSTER_QUEUE, clusterqueue.reconcile, (
        Watch(c.WORKLOAD, Route.ALL), Watch(c.ADMISSION_CHECK, Route.ALL),
        *(w for w in _CONFIGURATION if w.kind != c.ADMISSION_CHECK)),
        every_settle=True),
)

BY_NAME: dict[str, Controller] = {ctl.name: ctl for ctl in CONTROLLERS}
"""The controllers by name; the engine looks them up here (tests may stand one in)."""
