"""What each write did to a Workload: its phase change and its admission checks' state changes.

Several edges follow a run write by write: the conformance timeline (``run``), the simulation's
loop, its metrics and the forecast's story.  They all need the same reading, so it is made here,
once.  The transition records a write carries decide it: a write that names a Workload-machine
transition leaves the workload in that transition's target (the controller's fire was the
decision, and the write is that decision), and each check's change is labelled with the check
machine's transition that moved it.  Only a write that names no Workload transition (a
creation, an outside write such as a patch or the job model's, a status write that moves no
phase) is read with ``workload_phase``.

:class:`WorkloadStates` keeps each workload's phase and check states as last written and
answers, for the next write or deletion, a :class:`WorkloadChange` (None: nothing moved).
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from kueue_provreq.api.objects import Key, key_of
from kueue_provreq.api.workload import AdmissionCheckState, Workload
from kueue_provreq.machines import ADMISSION_CHECK_MACHINE, WORKLOAD_MACHINE, Transition
from kueue_provreq.machines.phases import workload_phase

_WORKLOAD = WORKLOAD_MACHINE.name
_CHECK = ADMISSION_CHECK_MACHINE.name


@attrs.frozen
class CheckChange:
    check: str
    before: str | None
    """None: the check was not listed."""
    after: str | None
    """None: the check is no longer listed."""
    trigger: str | None
    """The check machine's trigger the write names for it (None: a move from outside the model,
    or a check added or removed)."""


@attrs.frozen
class WorkloadChange:
    """One write's (or deletion's) change to one workload."""

    before: str | None
    """The phase before (None: the workload was not known: it was created)."""
    after: str | None
    """The phase after (None: it was deleted)."""
    trigger: str | None
    """The Workload machine's triggers the write names, comma-separated (None: none)."""
    checks: tuple[CheckChange, ...] = ()
    """In check-name order."""

    @property
    def moved(self) -> bool:
        """Whether the phase changed."""
        return self.before != self.after


class WorkloadStates:
    """Each known workload's phase and check states, as its last write left them."""

    def __init__(self, initial: Iterable[object] = ()) -> None:
        self.phases: dict[Key, str] = {}
        self._checks: dict[Key, tuple[AdmissionCheckState, ...]] = {}
        for obj in initial:
            if isinstance(obj, Workload):
                self.phases[key_of(obj)] = workload_phase(obj)
                self._checks[key_of(obj)] = obj.status.admission_checks

    def written(self, wl: Workload, fired: tuple[Transition, ...] = ()) -> WorkloadChange | None:
        """Record the write of ``wl`` that named ``fired``; what it changed, None for nothing."""
        key = key_of(wl)
        before = self.phases.get(key)
        after: str | None = None
        triggers: list[str] = []
        for t in fired:
            if t.machine == _WORKLOAD:
                after = t.target
                triggers.append(t.trigger)
        if after is None:
            after = workload_phase(wl)
        self.phases[key] = after
        old = self._checks.get(key, ())
        new = self._checks[key] = wl.status.admission_checks
        checks = () if old is new else _check_changes(old, new, fired)
        if before == after and not checks:
            return None
        return WorkloadChange(before, after, ",".join(triggers) or None, checks)

    def deleted(self, key: Key) -> WorkloadChange | None:
        """Forget ``key``; its change to nothing, None if it was not a known workload."""
        before = self.phases.pop(key, None)
        if before is None:
            return None
        old = self._checks.pop(key, ())
        return WorkloadChange(before, None, None, _check_changes(old, (), ()))


def _check_changes(old: tuple[AdmissionCheckState, ...], new: tuple[AdmissionCheckState, ...],
                   fired: tuple[Transition, ...]) -> tuple[CheckChange, ...]:
    before = {s.name: s.state for s in old}
    after = {s.name: s.state for s in new}
    if before == after:
        return ()
    out = []
    for name in sorted(before.keys() | after.keys()):
        was, now = before.get(name), after.get(name)
        if was != now:
            trigger = next((t.trigger for t in fired if t.machine == _CHECK and t.item == name), None)
            out.append(CheckChange(name, was, now, trigger))
    return tuple(out)


__all__ = ["CheckChange", "WorkloadChange", "WorkloadStates"]
