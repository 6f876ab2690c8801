"""Object metadata and conditions, shared by every kind.

Times are whole seconds since the epoch (``Time``), as ``metav1.Time``
serialises them; durations are seconds (``Duration``).  Condition updates
follow ``apimachinery``'s ``SetStatusCondition``: the transition time moves
only when the status changes.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, NewType, Union

import attrs

from kueue_provreq.api.frozen import EMPTY, FrozenMap
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


@attrs.define(unsafe_hash=True, weakref_slot=False)
class OwnerReference:
    api_version: str
    kind: str
    name: str
    uid: str = ""
    controller: bool | None = None
    block_owner_deletion: bool | None = None
    extra: FrozenMap[str, Json] = EMPTY


@attrs.define(unsafe_hash=True, cache_hash=True, weakref_slot=False)
class ObjectMeta:
    name: str = ""
    namespace: str = ""
    uid: str = ""
    generation: int | None = None
    creation_timestamp: Time | None = None
    labels: FrozenMap[str, str] = EMPTY
    annotations: FrozenMap[str, str] = EMPTY
    owner_references: tuple[OwnerReference, ...] = ()
    finalizers: tuple[str, ...] = ()
    deletion_timestamp: Time | None = None
    """Set by the API server when an object with finalizers is deleted: it is *terminating*,
    and goes away once its finalizers are removed."""
    extra: FrozenMap[str, Json] = EMPTY

    @property
    def terminating(self) -> bool:
        return self.deletion_timestamp is not None

    def controller_ref(self) -> OwnerReference | None:
        for ref in self.owner_references:
            if ref.controller:
                return ref
        return None


@attrs.define(unsafe_hash=True, weakref_slot=False)
class Condition:
    type: str
    status: str
    reason: str = ""
    message: str = ""
    last_transition_time: Time | None = None
    observed_generation: int | None = None


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
