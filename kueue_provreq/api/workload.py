"""Kueue ``Workload`` (storage version v1beta2): the unit that is queued, reserved and admitted."""

from __future__ import annotations

import enum
import functools
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


@memo(256)
def _flavor_set(flavors: tuple[str, ...]) -> frozenset[str]:
    """One set per combination of flavors, which every admission that assigns them shares: a
    set of one flavor takes 216 bytes, and every admitted workload keeps its admission's."""
    return frozenset(flavors)


@attrs.define(unsafe_hash=True, weakref_slot=False)
class Admission:
    cluster_queue: str
    pod_set_assignments: tuple[PodSetAssignment, ...] = ()
    extra: FrozenMap[str, Json] = EMPTY

    @functools.cached_property
    def flavor_names(self) -> frozenset[str]:
        """The flavors assigned to any podset, built once per admission: every pass of the
        workload controller asks which checks they call for, and one set kept keeps its hash
        (the checks are memoised on it)."""
        return _flavor_set(tuple([f for psa in self.pod_set_assignments for f in psa.flavors.values()]))


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
class WorkloadStatus:
    conditions: Conditions = ()
    admission: Admission | None = None
    admission_checks: tuple[AdmissionCheckState, ...] = ()
    requeue_state: RequeueState | None = None
    extra: FrozenMap[str, Json] = EMPTY

    @functools.cached_property
    def conditions_by_type(self) -> Mapping[str, Condition]:
        """The first condition of each type (``find_condition``'s answer), built once per status:
        every controller asks a workload several condition questions on every reconcile.
        Read-only by contract; not wrapped in a proxy, which would be one more object per
        status for the garbage collector to walk."""
        return _derive(self)[0]

    @functools.cached_property
    def true_types(self) -> tuple[str, ...]:
        """The condition types whose (first) condition is True, built once per status (with
        :attr:`conditions_by_type`): most questions a controller asks are whether a condition
        holds.  A tuple, not a set: it holds a few types, ``in`` over it costs as much, and it
        takes a third of the memory (every live status keeps one)."""
        return _derive(self)[1]

    def is_true(self, type_: str) -> bool:
        """``meta.is_true`` over ``conditions``, through the per-status index."""
        return type_ in self.true_types


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
        status = WorkloadStatus(
            s.conditions if conditions is None else conditions,
            s.admission if admission is _KEEP else admission,
            s.admission_checks if admission_checks is None else admission_checks,
            s.requeue_state if requeue_state is _KEEP else requeue_state,
            s.extra if extra is None else extra)
        if status.conditions is s.conditions:
            _carry_derived(s, status)
        return Workload(self.metadata, self.spec, status, self.extra)


_DERIVED = tuple(WorkloadStatus.__dict__[name] for name in ("conditions_by_type", "true_types"))
"""The slots attrs keeps :class:`WorkloadStatus`'s cached properties in (reading one that is
not filled raises AttributeError, without computing it)."""


def _derive(status: WorkloadStatus) -> tuple[dict[str, Condition], tuple[str, ...]]:
    """Both cached properties of ``status``, filled together: nearly every status asked one is
    asked the other (a write's phase check reads the true types, a condition write the index),
    and each first question costs a trip through attrs' ``__getattr__``.  Either is missing
    only when both are (they are filled, and carried, together)."""
    by_type: dict[str, Condition] = {}
    for cond in status.conditions:
        by_type.setdefault(cond.type, cond)
    true = tuple([t for t, cond in by_type.items() if cond.status == c.TRUE])
    _DERIVED[0].__set__(status, by_type)
    _DERIVED[1].__set__(status, true)
    return by_type, true


def _carry_derived(old: WorkloadStatus, new: WorkloadStatus) -> None:
    """Give ``new``, which has ``old``'s very conditions, what ``old`` already derived from them:
    about half of a workload's status writes leave its conditions alone (checks, admission,
    requeue state), and every write's phase check would otherwise index them again."""
    for slot in _DERIVED:
        try:
            value = slot.__get__(old, WorkloadStatus)
        except AttributeError:
            return  # computed in order: by type first, then the true types
        slot.__set__(new, value)
