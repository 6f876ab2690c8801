"""The parts of a Workload that watch predicates speak of, and which of them a write changed.

A controller declares, for a Workload in a given state, the parts its reconcile reads
(``registry.Controller.reads``); the engine computes, once per write, the parts the write
changed (:func:`changed_parts`), and a reconcile that last changed nothing is woken only when
the two meet.  A part is a condition type (each condition its own part, so that a controller
that reads ``Evicted`` is not woken by ``PodsReady``) or one of the names below.

Parts are bits of an int: a write's parts are computed once and asked by every watch that sees
it, and "do they meet" is one ``&``.  They are compared by identity first: the models are frozen
and a write shares every part it leaves alone with the object it replaces, so finding what
changed costs a few pointer comparisons.  :func:`changed_parts` is exact (0 when, and only
when, the two Workloads are equal), so the engine's write path takes it as its no-op test too.
"""

from __future__ import annotations

from collections.abc import Mapping

from kueue_provreq.api import constants as c
from kueue_provreq.api.meta import Condition, Conditions
from kueue_provreq.api.workload import AdmissionCheckState, Workload

Parts = int
"""A set of parts, as bits."""

METADATA: Parts = 1 << 0
"""``metadata``: name, uid, generation, labels, annotations, owner references."""
SPEC: Parts = 1 << 1
"""``spec``: podsets, queue name, priority, ``active``."""
ADMISSION: Parts = 1 << 2
"""``status.admission``."""
CHECKS: Parts = 1 << 3
"""``status.admissionChecks``: which checks, in which order, in which state."""
CHECK_DETAILS: Parts = 1 << 4
"""The rest of each check state (message, transition time, podSetUpdates, retryCount,
requeueAfterSeconds); a change of CHECKS counts as one of these too."""
REQUEUE_STATE: Parts = 1 << 5
"""``status.requeueState``."""
EXTRA: Parts = 1 << 6
"""Fields the library keeps without modelling them (``status`` and the object's)."""
UNREAD: Parts = 1 << 7
"""What no controller reads: a condition of a type below none reads, or the conditions' order
(a change all the same, which the no-op test must see)."""

CONDITION: Mapping[str, Parts] = {type_: 1 << (8 + i) for i, type_ in enumerate((
    c.WORKLOAD_FINISHED, c.WORKLOAD_QUOTA_RESERVED, c.WORKLOAD_ADMITTED, c.WORKLOAD_EVICTED, c.WORKLOAD_PREEMPTED,
    c.WORKLOAD_REQUEUED, c.WORKLOAD_PODS_READY, c.WORKLOAD_DEACTIVATION_TARGET,
    c.WORKLOAD_BLOCKED_ON_PREEMPTION_GATES))}
"""The part of each condition type the controllers read (a condition of another type is
nobody's input: :data:`UNREAD`)."""

CONDITIONS: Parts = sum(CONDITION.values())
"""Every condition part."""

EVERYTHING: Parts = METADATA | SPEC | ADMISSION | CHECKS | CHECK_DETAILS | REQUEUE_STATE | EXTRA | CONDITIONS
"""Every part a controller may read."""


def parts(*names: str) -> Parts:
    """The parts of these condition types."""
    out = 0
    for n in names:
        out |= CONDITION[n]
    return out


def _checks_moved(old: tuple[AdmissionCheckState, ...], new: tuple[AdmissionCheckState, ...]) -> bool:
    """Whether the checks' names, order or states differ."""
    if len(old) != len(new):
        return True
    return any(a is not b and (a.name != b.name or a.state != b.state) for a, b in zip(old, new, strict=True))


def changed_parts(old: Workload, new: Workload) -> Parts:
    """The parts in which ``new`` differs from ``old``: the condition types whose first
    condition differs (or appears, or goes), and the names above; 0 when they are equal."""
    if old is new:
        return 0
    # (``x is y or x == y`` rather than ``x != y``: attrs' ``__ne__`` is one more Python call)
    out = 0
    if not (old.metadata is new.metadata or old.metadata == new.metadata):
        out = METADATA
    if not (old.spec is new.spec or old.spec == new.spec):
        out |= SPEC
    if not (old.extra is new.extra or old.extra == new.extra):
        out |= EXTRA
    a, b = old.status, new.status
    if a is not b:
        if a.conditions is not b.conditions:
            out |= _conditions_changed(a.conditions, b.conditions, a.conditions_by_type, b.conditions_by_type)
            if not out & (CONDITIONS | UNREAD) and a.conditions != b.conditions:
                out |= UNREAD  # the same first condition of each type, in another order or company
        if not (a.admission is b.admission or a.admission == b.admission):
            out |= ADMISSION
        if a.admission_checks is not b.admission_checks:
            if _checks_moved(a.admission_checks, b.admission_checks):
                out |= CHECKS | CHECK_DETAILS
            elif a.admission_checks != b.admission_checks:
                out |= CHECK_DETAILS
        if not (a.requeue_state is b.requeue_state or a.requeue_state == b.requeue_state):
            out |= REQUEUE_STATE
        if not (a.extra is b.extra or a.extra == b.extra):
            out |= EXTRA
    return out


def _conditions_changed(old: Conditions, new: Conditions, before: Mapping[str, Condition],
                        after: Mapping[str, Condition]) -> Parts:
    """The condition parts in which ``new`` (indexed by type: ``after``) differs from ``old``."""
    if len(old) == len(new) == len(before) == len(after):
        # one condition per type on both sides (as ``SetStatusCondition`` keeps them), and most
        # writes replace one in place: when the types line up, the pairs are compared
        out = 0
        for a, b in zip(old, new, strict=True):
            if a is not b:
                if a.type != b.type:
                    break
                if a == b:
                    continue
                out |= CONDITION.get(a.type, UNREAD)
        else:
            return out
    out = 0
    for type_, cond in after.items():
        prev = before.get(type_)
        if not (prev is cond or prev == cond):
            out |= CONDITION.get(type_, UNREAD)
    for type_ in before:
        if type_ not in after:
            out |= CONDITION.get(type_, UNREAD)
    return out
