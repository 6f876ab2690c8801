"""The parts of a Workload that watch predicates speak of, and which of them a write changed.

A controller declares, for a Workload in a given state, the parts its reconcile reads
(``registry.Controller.reads``); the engine computes, once per write, the parts the write
changed (:func:`changed_parts`), and a reconcile that last changed nothing is woken only when
the two meet.  A part is a condition type (each condition its own part, so that a controller
that reads ``Evicted`` is not woken by ``PodsReady``) or one of the names below.  Parts are
compared by identity first: the models are frozen and a write shares every part it leaves
alone with the object it replaces, so finding what changed costs a few pointer comparisons.
"""

from __future__ import annotations

from collections.abc import Iterable

from kueue_provreq.api import constants as c
from kueue_provreq.api.workload import AdmissionCheckState, Workload

Parts = frozenset[str]

METADATA = "metadata"
"""``metadata``: name, uid, generation, labels, annotations, owner references."""
SPEC = "spec"
"""``spec``: podsets, queue name, priority, ``active``."""
ADMISSION = "admission"
"""``status.admission``."""
CHECKS = "checks"
"""``status.admissionChecks``: which checks, in which order, in which state."""
CHECK_DETAILS = "checkDetails"
"""The rest of each check state (message, transition time, podSetUpdates, retryCount,
requeueAfterSeconds); a change of CHECKS counts as one of these too."""
REQUEUE_STATE = "requeueState"
"""``status.requeueState``."""
EXTRA = "extra"
"""Fields the library keeps without modelling them (``status`` and the object's)."""

CONDITIONS: Parts = frozenset({
    c.WORKLOAD_FINISHED, c.WORKLOAD_QUOTA_RESERVED, c.WORKLOAD_ADMITTED, c.WORKLOAD_EVICTED, c.WORKLOAD_PREEMPTED,
    c.WORKLOAD_REQUEUED, c.WORKLOAD_PODS_READY, c.WORKLOAD_DEACTIVATION_TARGET,
    c.WORKLOAD_BLOCKED_ON_PREEMPTION_GATES})
"""The condition types the controllers read (a condition of another type is nobody's input)."""

EVERYTHING: Parts = frozenset({METADATA, SPEC, ADMISSION, CHECKS, CHECK_DETAILS, REQUEUE_STATE, EXTRA}) | CONDITIONS
"""Every part a controller may read."""


def parts(*names: str | Iterable[str]) -> Parts:
    """A set of parts from names and iterables of names."""
    out: set[str] = set()
    for n in names:
        if isinstance(n, str):
            out.add(n)
        else:
            out.update(n)
    return frozenset(out)


def _checks_moved(old: tuple[AdmissionCheckState, ...], new: tuple[AdmissionCheckState, ...]) -> bool:
    """Whether the checks' names, order or states differ."""
    if len(old) != len(new):
        return True
    return any(a is not b and (a.name != b.name or a.state != b.state) for a, b in zip(old, new, strict=True))


def changed_parts(old: Workload, new: Workload) -> Parts:
    """The parts in which ``new`` differs from ``old``: the condition types whose first
    condition differs (or appears, or goes), and the names above."""
    if old is new:
        return frozenset()
    out: list[str] = []
    if old.metadata is not new.metadata and old.metadata != new.metadata:
        out.append(METADATA)
    if old.spec is not new.spec and old.spec != new.spec:
        out.append(SPEC)
    if old.extra is not new.extra and old.extra != new.extra:
        out.append(EXTRA)
    a, b = old.status, new.status
    if a is not b:
        if a.conditions is not b.conditions:
            before, after = a.conditions_by_type, b.conditions_by_type
            for type_, cond in after.items():
                prev = before.get(type_)
                if prev is not cond and prev != cond:
                    out.append(type_)
            for type_ in before:
                if type_ not in after:
                    out.append(type_)
        if a.admission is not b.admission and a.admission != b.admission:
            out.append(ADMISSION)
        if a.admission_checks is not b.admission_checks:
            if _checks_moved(a.admission_checks, b.admission_checks):
                out.append(CHECKS)
                out.append(CHECK_DETAILS)
            elif a.admission_checks != b.admission_checks:
                out.append(CHECK_DETAILS)
        if a.requeue_state is not b.requeue_state and a.requeue_state != b.requeue_state:
            out.append(REQUEUE_STATE)
        if a.extra is not b.extra and a.extra != b.extra and EXTRA not in out:
            out.append(EXTRA)
    return frozenset(out)
