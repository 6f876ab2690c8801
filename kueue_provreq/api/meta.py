"""Object metadata and conditions, shared by every kind.

Times are whole seconds since the epoch (``Time``), as ``metav1.Time``
serialises them; durations are seconds (``Duration``).  Condition updates
follow ``apimachinery``'s ``SetStatusCondition``: the transition time moves
only when the status changes.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, ClassVar, NewType, Union, final

from kueue_provreq.api.frozen import EMPTY, FrozenMap
from kueue_provreq.api.model import Field, Model
from kueue_provreq.errors import KueueProvreqError

if TYPE_CHECKING:  # the core never imports datetime; the type is only named here
    import datetime

Time = NewType("Time", int)
"""Seconds since the Unix epoch, truncated, as ``metav1.Time`` serialises."""

TimeLike = Union[int, float, str, "datetime.datetime"]
"""What the edges of the Python API accept as a time: seconds since the epoch, RFC 3339 text
(``2024-01-01T00:00:00Z``) or a timezone-aware ``datetime`` (:mod:`kueue_provreq.timestamps`)."""


class TimeError(KueueProvreqError, ValueError):
    """A value that names no instant: text that is not RFC 3339, a naive ``datetime``, or
    something that is not a time at all (the core takes seconds only)."""

Duration = NewType("Duration", float)
"""Seconds, read from and written as Go ``time.Duration`` strings (``1m30s``)."""

Json = Any
"""Frozen JSON: FrozenMap, tuple, str, int, float, bool or None."""


@final
class OwnerReference(Model):
    __slots__ = ("api_version", "kind", "name", "uid", "controller", "block_owner_deletion", "extra")

    FIELDS: ClassVar[tuple[Field, ...]] = (
        Field("api_version", str), Field("kind", str), Field("name", str), Field("uid", str, ""),
        Field("controller", bool | None, None), Field("block_owner_deletion", bool | None, None),
        Field("extra", FrozenMap[str, Json], EMPTY))

    def __init__(self, api_version: str, kind: str, name: str, uid: str = "", controller: bool | None = None,
                 block_owner_deletion: bool | None = None, extra: FrozenMap[str, Json] = EMPTY) -> None:
        self.api_version = api_version
        self.kind = kind
        self.name = name
        self.uid = uid
        self.controller = controller
        self.block_owner_deletion = block_owner_deletion
        self.extra = extra

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, OwnerReference):
            return NotImplemented
        return (self.api_version == other.api_version and self.kind == other.kind and self.name == other.name and
                self.uid == other.uid and self.controller == other.controller and
                self.block_owner_deletion == other.block_owner_deletion and self.extra == other.extra)

    def __hash__(self) -> int:
        return hash((self.api_version, self.kind, self.name, self.uid, self.controller, self.block_owner_deletion,
                     self.extra))


@final
class ObjectMeta(Model):
    __slots__ = ("name", "namespace", "uid", "generation", "creation_timestamp", "labels", "annotations",
                 "owner_references", "finalizers", "deletion_timestamp", "extra", "_hash")

    FIELDS: ClassVar[tuple[Field, ...]] = (
        Field("name", str, ""), Field("namespace", str, ""), Field("uid", str, ""),
        Field("generation", int | None, None), Field("creation_timestamp", Time | None, None),
        Field("labels", FrozenMap[str, str], EMPTY), Field("annotations", FrozenMap[str, str], EMPTY),
        Field("owner_references", tuple[OwnerReference, ...], ()), Field("finalizers", tuple[str, ...], ()),
        Field("deletion_timestamp", Time | None, None), Field("extra", FrozenMap[str, Json], EMPTY))

    def __init__(self, name: str = "", namespace: str = "", uid: str = "", generation: int | None = None,
                 creation_timestamp: Time | None = None, labels: FrozenMap[str, str] = EMPTY,
                 annotations: FrozenMap[str, str] = EMPTY, owner_references: tuple[OwnerReference, ...] = (),
                 finalizers: tuple[str, ...] = (), deletion_timestamp: Time | None = None,
                 extra: FrozenMap[str, Json] = EMPTY) -> None:
        self.name = name
        self.namespace = namespace
        self.uid = uid
        self.generation = generation
        self.creation_timestamp = creation_timestamp
        self.labels = labels
        self.annotations = annotations
        self.owner_references = owner_references
        self.finalizers = finalizers
        self.deletion_timestamp = deletion_timestamp
        """Set by the API server when an object with finalizers is deleted: it is *terminating*,
        and goes away once its finalizers are removed."""
        self.extra = extra
        self._hash = -1

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ObjectMeta):
            return NotImplemented
        return (self.name == other.name and self.namespace == other.namespace and self.uid == other.uid and
                self.generation == other.generation and self.creation_timestamp == other.creation_timestamp and
                self.labels == other.labels and self.annotations == other.annotations and
                self.owner_references == other.owner_references and self.finalizers == other.finalizers and
                self.deletion_timestamp == other.deletion_timestamp and self.extra == other.extra)

    def __hash__(self) -> int:
        h = self._hash
        if h == -1:
            h = self._hash = hash((self.name, self.namespace, self.uid, self.generation, self.creation_timestamp,
                                   self.labels, self.annotations, self.owner_references, self.finalizers,
                                   self.deletion_timestamp, self.extra))
        return h

    @property
    def terminating(self) -> bool:
        return self.deletion_timestamp is not None

    def controller_ref(self) -> OwnerReference | None:
        for ref in self.owner_references:
            if ref.controller:
                return ref
        return None


@final
class Condition(Model):
    __slots__ = ("type", "status", "reason", "message", "last_transition_time", "observed_generation")

    FIELDS: ClassVar[tuple[Field, ...]] = (
        Field("type", str), Field("status", str), Field("reason", str, ""), Field("message", str, ""),
        Field("last_transition_time", Time | None, None), Field("observed_generation", int | None, None))

    def __init__(self, type: str, status: str, reason: str = "", message: str = "",  # noqa: A002 - the API's name
                 last_transition_time: Time | None = None, observed_generation: int | None = None) -> None:
        self.type = type
        self.status = status
        self.reason = reason
        self.message = message
        self.last_transition_time = last_transition_time
        self.observed_generation = observed_generation

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Condition):
            return NotImplemented
        return (self.type == other.type and self.status == other.status and self.reason == other.reason and
                self.message == other.message and self.last_transition_time == other.last_transition_time and
                self.observed_generation == other.observed_generation)

    def __hash__(self) -> int:
        return hash((self.type, self.status, self.reason, self.message, self.last_transition_time,
                     self.observed_generation))


Conditions = tuple[Condition, ...]


def find_condition(conditions: Conditions, type_: str) -> Condition | None:
    for c in conditions:
        if c.type == type_:
            return c
    return None


def is_true(conditions: Conditions, type_: str) -> bool:
    for c in conditions:
        if c.type == type_:
            return c.status == "True"
    return False


def is_false(conditions: Conditions, type_: str) -> bool:
    for c in conditions:
        if c.type == type_:
            return c.status == "False"
    return False


def set_condition(conditions: Conditions, new: Condition, now: Time) -> tuple[Conditions, bool]:
    """``meta.SetStatusCondition``: returns the new list and whether it changed (see
    :func:`put_condition`)."""
    out = put_condition(conditions, new.type, new.status, new.reason, new.message, new.observed_generation, now,
                        new.last_transition_time)
    return out, out is not conditions


def put_condition(conditions: Conditions, type_: str, status: str, reason: str, message: str,
                  generation: int | None, now: Time, transition_time: Time | None = None) -> Conditions:
    """``meta.SetStatusCondition`` from the condition's fields: the new list, or ``conditions``
    itself when nothing changes.  The condition written is built once, here (this is the
    hottest write of every controller).

    The message kept is the interned copy: messages name queues, checks and reasons, rarely the
    object, so thousands of workloads would otherwise each keep their own copy of a few texts
    (about 240 bytes per workload in ``benchmarks/bench_core.py``)."""
    message = sys.intern(message)
    for i, old in enumerate(conditions):
        if old.type != type_:
            continue
        if old.status != status:
            updated = Condition(type_, status, reason, message,
                                transition_time if transition_time is not None else now, generation)
        elif old.reason == reason and old.message == message and old.observed_generation == generation:
            return conditions  # the common no-op, without building a copy
        else:
            updated = Condition(type_, status, reason, message, old.last_transition_time, generation)
        return (*conditions[:i], updated, *conditions[i + 1:])
    return (*conditions, Condition(type_, status, reason, message,
                                   now if transition_time is None else transition_time, generation))


def remove_condition(conditions: Conditions, type_: str) -> tuple[Conditions, bool]:
    kept = tuple(c for c in conditions if c.type != type_)
    return kept, len(kept) != len(conditions)
