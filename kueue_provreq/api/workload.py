"""Kueue ``Workload`` (storage version v1beta2): the unit that is queued, reserved and admitted."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import ClassVar, final

from kueue_provreq.api import constants as c
from kueue_provreq.api.frozen import EMPTY, FrozenMap
from kueue_provreq.api.memo import memo
from kueue_provreq.api.meta import Condition, Conditions, Json, ObjectMeta, Time
from kueue_provreq.api.model import Field, Model
from kueue_provreq.api.quantity import Quantity


@final
class PodSet(Model):
    __slots__ = ("name", "count", "template", "min_count", "extra", "_hash")

    FIELDS: ClassVar[tuple[Field, ...]] = (
        Field("name", str), Field("count", int, 1), Field("template", FrozenMap[str, Json], EMPTY),
        Field("min_count", int | None, None), Field("extra", FrozenMap[str, Json], EMPTY))

    def __init__(self, name: str, count: int = 1, template: FrozenMap[str, Json] = EMPTY, min_count: int | None = None,
                 extra: FrozenMap[str, Json] = EMPTY) -> None:
        self.name = name
        self.count = count
        self.template = template
        """The ``PodTemplateSpec`` as frozen JSON: only the scheduling fields are read."""
        self.min_count = min_count
        self.extra = extra
        self._hash = -1

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PodSet):
            return NotImplemented
        return (self.name == other.name and self.count == other.count and self.template == other.template and
                self.min_count == other.min_count and self.extra == other.extra)

    def __hash__(self) -> int:
        h = self._hash
        if h == -1:
            h = self._hash = hash((self.name, self.count, self.template, self.min_count, self.extra))
        return h


@final
class WorkloadSpec(Model):
    __slots__ = ("pod_sets", "queue_name", "priority", "active", "extra")

    FIELDS: ClassVar[tuple[Field, ...]] = (
        Field("pod_sets", tuple[PodSet, ...], ()), Field("queue_name", str, ""), Field("priority", int | None, None),
        Field("active", bool | None, None), Field("extra", FrozenMap[str, Json], EMPTY))

    def __init__(self, pod_sets: tuple[PodSet, ...] = (), queue_name: str = "", priority: int | None = None,
                 active: bool | None = None, extra: FrozenMap[str, Json] = EMPTY) -> None:
        self.pod_sets = pod_sets
        self.queue_name = queue_name
        self.priority = priority
        self.active = active
        self.extra = extra

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, WorkloadSpec):
            return NotImplemented
        return (self.pod_sets == other.pod_sets and self.queue_name == other.queue_name and
                self.priority == other.priority and self.active == other.active and self.extra == other.extra)

    def __hash__(self) -> int:
        return hash((self.pod_sets, self.queue_name, self.priority, self.active, self.extra))


@final
class PodSetAssignment(Model):
    __slots__ = ("name", "flavors", "resource_usage", "count", "extra")

    FIELDS: ClassVar[tuple[Field, ...]] = (
        Field("name", str), Field("flavors", FrozenMap[str, str], EMPTY),
        Field("resource_usage", FrozenMap[str, Quantity], EMPTY), Field("count", int | None, None),
        Field("extra", FrozenMap[str, Json], EMPTY))

    def __init__(self, name: str, flavors: FrozenMap[str, str] = EMPTY,
                 resource_usage: FrozenMap[str, Quantity] = EMPTY, count: int | None = None,
                 extra: FrozenMap[str, Json] = EMPTY) -> None:
        self.name = name
        self.flavors = flavors
        self.resource_usage = resource_usage
        self.count = count
        self.extra = extra

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PodSetAssignment):
            return NotImplemented
        return (self.name == other.name and self.flavors == other.flavors and
                self.resource_usage == other.resource_usage and self.count == other.count and
                self.extra == other.extra)

    def __hash__(self) -> int:
        return hash((self.name, self.flavors, self.resource_usage, self.count, self.extra))


@final
class Admission(Model):
    """A Workload's admission, with the flavors it assigns, derived when it is built."""

    __slots__ = ("cluster_queue", "pod_set_assignments", "extra", "flavor_names")

    FIELDS: ClassVar[tuple[Field, ...]] = (
        Field("cluster_queue", str), Field("pod_set_assignments", tuple[PodSetAssignment, ...], ()),
        Field("extra", FrozenMap[str, Json], EMPTY))

    def __init__(self, cluster_queue: str, pod_set_assignments: tuple[PodSetAssignment, ...] = (),
                 extra: FrozenMap[str, Json] = EMPTY) -> None:
        self.cluster_queue = cluster_queue
        self.pod_set_assignments = pod_set_assignments
        self.extra = extra
        self.flavor_names = _shared(frozenset([f for psa in pod_set_assignments for f in psa.flavors.values()]))
        """The flavors assigned to any podset: every pass of the workload controller asks which
        checks they call for, and one set kept keeps its hash (the checks are memoised on it)."""

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Admission):
            return NotImplemented
        return (self.cluster_queue == other.cluster_queue and
                self.pod_set_assignments == other.pod_set_assignments and self.extra == other.extra)

    def __hash__(self) -> int:
        return hash((self.cluster_queue, self.pod_set_assignments, self.extra))


@memo(256)
def _shared(flavors: frozenset[str]) -> frozenset[str]:
    """One set for each set of flavors (a queue has a few): a set per admitted workload would
    cost it about 200 bytes."""
    return flavors


@final
class PodSetUpdate(Model):
    __slots__ = ("name", "labels", "annotations", "node_selector", "tolerations")

    FIELDS: ClassVar[tuple[Field, ...]] = (
        Field("name", str), Field("labels", FrozenMap[str, str], EMPTY),
        Field("annotations", FrozenMap[str, str], EMPTY),
        Field("node_selector", FrozenMap[str, str] | None, None),
        Field("tolerations", tuple[FrozenMap[str, Json], ...], ()))

    def __init__(self, name: str, labels: FrozenMap[str, str] = EMPTY, annotations: FrozenMap[str, str] = EMPTY,
                 node_selector: FrozenMap[str, str] | None = None,
                 tolerations: tuple[FrozenMap[str, Json], ...] = ()) -> None:
        self.name = name
        self.labels = labels
        self.annotations = annotations
        self.node_selector = node_selector
        self.tolerations = tolerations

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PodSetUpdate):
            return NotImplemented
        return (self.name == other.name and self.labels == other.labels and self.annotations == other.annotations and
                self.node_selector == other.node_selector and self.tolerations == other.tolerations)

    def __hash__(self) -> int:
        return hash((self.name, self.labels, self.annotations, self.node_selector, self.tolerations))


@final
class AdmissionCheckState(Model):
    __slots__ = ("name", "state", "last_transition_time", "message", "pod_set_updates", "retry_count",
                 "requeue_after_seconds")

    FIELDS: ClassVar[tuple[Field, ...]] = (
        Field("name", str), Field("state", str, c.CHECK_PENDING), Field("last_transition_time", Time | None, None),
        Field("message", str, ""), Field("pod_set_updates", tuple[PodSetUpdate, ...], ()),
        Field("retry_count", int | None, None), Field("requeue_after_seconds", int | None, None))

    def __init__(self, name: str, state: str = c.CHECK_PENDING, last_transition_time: Time | None = None,
                 message: str = "", pod_set_updates: tuple[PodSetUpdate, ...] = (), retry_count: int | None = None,
                 requeue_after_seconds: int | None = None) -> None:
        self.name = name
        self.state = state
        self.last_transition_time = last_transition_time
        self.message = message
        self.pod_set_updates = pod_set_updates
        self.retry_count = retry_count
        self.requeue_after_seconds = requeue_after_seconds

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AdmissionCheckState):
            return NotImplemented
        return (self.name == other.name and self.state == other.state and
                self.last_transition_time == other.last_transition_time and self.message == other.message and
                self.pod_set_updates == other.pod_set_updates and self.retry_count == other.retry_count and
                self.requeue_after_seconds == other.requeue_after_seconds)

    def __hash__(self) -> int:
        return hash((self.name, self.state, self.last_transition_time, self.message, self.pod_set_updates,
                     self.retry_count, self.requeue_after_seconds))


@final
class RequeueState(Model):
    __slots__ = ("count", "requeue_at")

    FIELDS: ClassVar[tuple[Field, ...]] = (Field("count", int | None, None), Field("requeue_at", Time | None, None))

    def __init__(self, count: int | None = None, requeue_at: Time | None = None) -> None:
        self.count = count
        self.requeue_at = requeue_at

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RequeueState):
            return NotImplemented
        return (self.count == other.count and self.requeue_at == other.requeue_at)

    def __hash__(self) -> int:
        return hash((self.count, self.requeue_at))


class _Keep(enum.Enum):
    KEEP = "keep"


_KEEP = _Keep.KEEP
"""A field :meth:`Workload.with_status` leaves as it is (None is a value these may take)."""


@final
class WorkloadStatus(Model):
    """A Workload's status, with what is derived from its conditions, computed when it is built.

    The derived attributes are plain slots, not cached properties: a property would make every
    read of them a call (a status is read on every reconcile and every write, its derived parts
    nearly always with it)."""

    __slots__ = ("conditions", "admission", "admission_checks", "requeue_state", "extra", "_hash",
                 "conditions_by_type", "true_types")

    FIELDS: ClassVar[tuple[Field, ...]] = (
        Field("conditions", Conditions, ()), Field("admission", Admission | None, None),
        Field("admission_checks", tuple[AdmissionCheckState, ...], ()),
        Field("requeue_state", RequeueState | None, None), Field("extra", FrozenMap[str, Json], EMPTY))

    def __init__(self, conditions: Conditions = (), admission: Admission | None = None,
                 admission_checks: tuple[AdmissionCheckState, ...] = (), requeue_state: RequeueState | None = None,
                 extra: FrozenMap[str, Json] = EMPTY, *, _same_conditions_as: WorkloadStatus | None = None) -> None:
        """``_same_conditions_as``: a status whose conditions are these very ones, whose derived
        parts are taken rather than derived again (:meth:`Workload.with_status`)."""
        self.conditions = conditions
        self.admission = admission
        self.admission_checks = admission_checks
        self.requeue_state = requeue_state
        self.extra = extra
        self._hash = -1
        if _same_conditions_as is not None:
            self.conditions_by_type: Mapping[str, Condition] = _same_conditions_as.conditions_by_type
            self.true_types: tuple[str, ...] = _same_conditions_as.true_types
            return
        by_type: dict[str, Condition] = {}
        for cond in conditions:
            by_type.setdefault(cond.type, cond)
        self.conditions_by_type = by_type
        """The first condition of each type (``find_condition``'s answer): every controller asks a
        workload several condition questions on every reconcile.  Read-only by contract; not
        wrapped in a proxy, which would be one more object per status for the garbage collector
        to walk."""
        self.true_types = tuple([t for t, cond in by_type.items() if cond.status == c.TRUE])
        """The condition types whose (first) condition is True: most questions a controller asks
        are whether a condition holds.  A tuple, not a set: it holds a few types, ``in`` over it
        costs as much, and it takes a third of the memory (every live status keeps one)."""

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, WorkloadStatus):
            return NotImplemented
        return (self.conditions == other.conditions and self.admission == other.admission and
                self.admission_checks == other.admission_checks and self.requeue_state == other.requeue_state and
                self.extra == other.extra)

    def __hash__(self) -> int:
        h = self._hash
        if h == -1:
            h = self._hash = hash((self.conditions, self.admission, self.admission_checks, self.requeue_state,
                                   self.extra))
        return h

    def is_true(self, type_: str) -> bool:
        """``meta.is_true`` over ``conditions``, through the per-status index."""
        return type_ in self.true_types


_NO_SPEC = WorkloadSpec()
_NO_STATUS = WorkloadStatus()
"""The defaults of a Workload's spec and status (one object each, as attrs kept its defaults)."""


@final
class Workload(Model):
    KIND: ClassVar[str] = c.WORKLOAD
    kind: ClassVar[str] = c.WORKLOAD
    NAMESPACED: ClassVar[bool] = True

    __slots__ = ("metadata", "spec", "status", "extra", "_hash")

    FIELDS: ClassVar[tuple[Field, ...]] = (
        Field("metadata", ObjectMeta), Field("spec", WorkloadSpec, _NO_SPEC),
        Field("status", WorkloadStatus, _NO_STATUS),
        Field("extra", FrozenMap[str, Json], EMPTY))

    def __init__(self, metadata: ObjectMeta, spec: WorkloadSpec = _NO_SPEC, status: WorkloadStatus = _NO_STATUS,
                 extra: FrozenMap[str, Json] = EMPTY) -> None:
        self.metadata = metadata
        self.spec = spec
        self.status = status
        self.extra = extra
        self._hash = -1

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Workload):
            return NotImplemented
        return (self.metadata == other.metadata and self.spec == other.spec and self.status == other.status and
                self.extra == other.extra)

    def __hash__(self) -> int:
        h = self._hash
        if h == -1:
            h = self._hash = hash((self.metadata, self.spec, self.status, self.extra))
        return h

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
        out: every status write goes through here).  About half of a workload's status writes
        leave its conditions alone (checks, admission, requeue state): what was derived from
        them is then kept."""
        s = self.status
        status = WorkloadStatus(s.conditions if conditions is None else conditions,
                                s.admission if admission is _KEEP else admission,
                                s.admission_checks if admission_checks is None else admission_checks,
                                s.requeue_state if requeue_state is _KEEP else requeue_state,
                                s.extra if extra is None else extra,
                                _same_conditions_as=s if conditions is None or conditions is s.conditions else None)
        return Workload(self.metadata, self.spec, status, self.extra)
