"""Kueue ``Workload`` (storage version v1beta2): the unit that is queued, reserved and admitted."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import ClassVar

import attrs

from kueue_provreq.api import constants as c
from kueue_provreq.api.frozen import EMPTY, FrozenMap
from kueue_provreq.api.memo import memo
from kueue_provreq.api.meta import Condition, Conditions, Json, ObjectMeta, Time
from kueue_provreq.api.quantity import Quantity


@attrs.define(unsafe_hash=True, cache_hash=True, weakref_slot=False)
class PodSet:
    name: str
    count: int = 1
    template: FrozenMap[str, Json] = EMPTY
    """The ``PodTemplateSpec`` as frozen JSON: only the scheduling fields are read."""
    min_count: int | None = None
    extra: FrozenMap[str, Json] = EMPTY


@attrs.define(unsafe_hash=True, weakref_slot=False)
class WorkloadSpec:
    pod_sets: tuple[PodSet, ...] = ()
    queue_name: str = ""
    priority: int | None = None
    active: bool | None = None
    extra: FrozenMap[str, Json] = EMPTY


@attrs.define(unsafe_hash=True, weakref_slot=False)
class PodSetAssignment:
    name: str
    flavors: FrozenMap[str, str] = EMPTY
    resource_usage: FrozenMap[str, Quantity] = EMPTY
    count: int | None = None
    extra: FrozenMap[str, Json] = EMPTY


@attrs.define(unsafe_hash=True, weakref_slot=False)
class _AdmissionFields:
    """The fields of :class:`Admission`."""

    cluster_queue: str
    pod_set_assignments: tuple[PodSetAssignment, ...] = ()
    extra: FrozenMap[str, Json] = EMPTY


class Admission(_AdmissionFields):
    """A Workload's admission, with the flavors it assigns, derived when it is built (a slot of
    this subclass, not a cached property: see :class:`WorkloadStatus`)."""

    __slots__ = ("flavor_names",)

    flavor_names: frozenset[str]
    """The flavors assigned to any podset: every pass of the workload controller asks which
    checks they call for, and one set kept keeps its hash (the checks are memoised on it)."""

    def __init__(self, cluster_queue: str, pod_set_assignments: tuple[PodSetAssignment, ...] = (),
                 extra: FrozenMap[str, Json] = EMPTY) -> None:
        _init_admission(self, cluster_queue, pod_set_assignments, extra)
        _FLAVOR_NAMES.__set__(self, _flavor_names(pod_set_assignments))

    def __setstate__(self, state: object) -> None:
        """Unpickled or deep-copied: the fields restored (attrs), then the flavors."""
        super().__setstate__(state)  # type: ignore[misc]
        _FLAVOR_NAMES.__set__(self, _flavor_names(self.pod_set_assignments))


_init_admission = _AdmissionFields.__init__
_FLAVOR_NAMES = Admission.__dict__["flavor_names"]


def _flavor_names(assignments: tuple[PodSetAssignment, ...]) -> frozenset[str]:
    return _shared(frozenset([f for psa in assignments for f in psa.flavors.values()]))


@memo(256)
def _shared(flavors: frozenset[str]) -> frozenset[str]:
    """One set for each set of flavors (a queue has a few): a set per admitted workload would
    cost it about 200 bytes."""
    return flavors


@attrs.define(unsafe_hash=True, weakref_slot=False)
class PodSetUpdate:
    name: str
    labels: FrozenMap[str, str] = EMPTY
    annotations: FrozenMap[str, str] = EMPTY
    node_selector: FrozenMap[str, str] | None = None
    tolerations: tuple[FrozenMap[str, Json], ...] = ()


@attrs.define(unsafe_hash=True, weakref_slot=False)
class AdmissionCheckState:
    name: str
    state: str = c.CHECK_PENDING
    last_transition_time: Time | None = None
    message: str = ""
    pod_set_updates: tuple[PodSetUpdate, ...] = ()
    retry_count: int | None = None
    requeue_after_seconds: int | None = None


@attrs.define(unsafe_hash=True, weakref_slot=False)
class RequeueState:
    count: int | None = None
    requeue_at: Time | None = None


class _Keep(enum.Enum):
    KEEP = "keep"


_KEEP = _Keep.KEEP
"""A field :meth:`Workload.with_status` leaves as it is (None is a value these may take)."""


@attrs.define(unsafe_hash=True, cache_hash=True, weakref_slot=False)
class _WorkloadStatusFields:
    """The fields of :class:`WorkloadStatus`: what the API holds, what it is equal and hashed by."""

    conditions: Conditions = ()
    admission: Admission | None = None
    admission_checks: tuple[AdmissionCheckState, ...] = ()
    requeue_state: RequeueState | None = None
    extra: FrozenMap[str, Json] = EMPTY


class WorkloadStatus(_WorkloadStatusFields):
    """A Workload's status, with what is derived from its conditions, computed when it is built.

    The derived attributes are plain slots of this subclass, not cached properties: attrs gives
    a class with cached properties a ``__getattr__``, and the interpreter then reads every
    attribute of every status the slow way (a status is read on every reconcile and every
    write, its derived parts nearly always with it)."""

    __slots__ = ("conditions_by_type", "true_types")

    conditions_by_type: Mapping[str, Condition]
    """The first condition of each type (``find_condition``'s answer): every controller asks a
    workload several condition questions on every reconcile.  Read-only by contract; not
    wrapped in a proxy, which would be one more object per status for the garbage collector
    to walk."""
    true_types: tuple[str, ...]
    """The condition types whose (first) condition is True: most questions a controller asks
    are whether a condition holds.  A tuple, not a set: it holds a few types, ``in`` over it
    costs as much, and it takes a third of the memory (every live status keeps one)."""

    def __init__(self, conditions: Conditions = (), admission: Admission | None = None,
                 admission_checks: tuple[AdmissionCheckState, ...] = (), requeue_state: RequeueState | None = None,
                 extra: FrozenMap[str, Json] = EMPTY) -> None:
        _init_fields(self, conditions, admission, admission_checks, requeue_state, extra)
        _derive(self)

    def __setstate__(self, state: object) -> None:
        """Unpickled or deep-copied: the fields restored (attrs), then the derived parts."""
        super().__setstate__(state)  # type: ignore[misc]
        _derive(self)

    def is_true(self, type_: str) -> bool:
        """``meta.is_true`` over ``conditions``, through the per-status index."""
        return type_ in self.true_types


_init_fields = _WorkloadStatusFields.__init__
_new_status = object.__new__
_BY_TYPE = WorkloadStatus.__dict__["conditions_by_type"]
_TRUE_TYPES = WorkloadStatus.__dict__["true_types"]
"""The slots of :class:`WorkloadStatus`'s derived parts, set through their descriptors (the
guard the tests put on every model refuses assignments once a slot is set)."""


def _derive(status: WorkloadStatus) -> None:
    """Fill ``status``'s derived parts from its conditions."""
    by_type: dict[str, Condition] = {}
    for cond in status.conditions:
        by_type.setdefault(cond.type, cond)
    _BY_TYPE.__set__(status, by_type)
    _TRUE_TYPES.__set__(status, tuple([t for t, cond in by_type.items() if cond.status == c.TRUE]))


@attrs.define(unsafe_hash=True, cache_hash=True, weakref_slot=False)
class Workload:
    KIND: ClassVar[str] = c.WORKLOAD
    kind: ClassVar[str] = c.WORKLOAD
    NAMESPACED: ClassVar[bool] = True

    metadata: ObjectMeta
    spec: WorkloadSpec = WorkloadSpec()
    status: WorkloadStatus = WorkloadStatus()
    extra: FrozenMap[str, Json] = EMPTY

    # --- read-only views used by every controller -------------------------
    @property
    def is_active(self) -> bool:
        return self.spec.active is not False

    def condition(self, type_: str) -> Condition | None:
        return self.status.conditions_by_type.get(type_)

    def has_quota_reservation(self) -> bool:
        return c.WORKLOAD_QUOTA_RESERVED in self.status.true_types

    def is_admitted(self) -> bool:
        return c.WORKLOAD_ADMITTED in self.status.true_types

    def is_evicted(self) -> bool:
        return c.WORKLOAD_EVICTED in self.status.true_types

    def is_finished(self) -> bool:
        return c.WORKLOAD_FINISHED in self.status.true_types

    def check_state(self, name: str) -> AdmissionCheckState | None:
        for s in self.status.admission_checks:
            if s.name == name:
                return s
        return None

    def with_status(self, conditions: Conditions | None = None, admission: Admission | None | _Keep = _KEEP,
                    admission_checks: tuple[AdmissionCheckState, ...] | None = None,
                    requeue_state: RequeueState | None | _Keep = _KEEP,
                    extra: FrozenMap[str, Json] | None = None) -> Workload:
        """This workload with some status fields replaced (``evolve`` on the status, spelled
        out: every status write goes through here)."""
        s = self.status
        status = _new_status(WorkloadStatus)
        _init_fields(status, s.conditions if conditions is None else conditions,
                     s.admission if admission is _KEEP else admission,
                     s.admission_checks if admission_checks is None else admission_checks,
                     s.requeue_state if requeue_state is _KEEP else requeue_state,
                     s.extra if extra is None else extra)
        if status.conditions is s.conditions:
            # about half of a workload's status writes leave its conditions alone (checks,
            # admission, requeue state): what was derived from them stays
            _BY_TYPE.__set__(status, s.conditions_by_type)
            _TRUE_TYPES.__set__(status, s.true_types)
        else:
            _derive(status)
        return Workload(self.metadata, self.spec, status, self.extra)
