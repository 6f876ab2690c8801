"""Observing a run: workload phase and check-state changes read off the applied effects.

A :class:`Watch` is the loop's listener.  It keeps, per workload, the phase and the check
states it last saw (the same reading as the conformance timeline's: ``workload_phase`` and
``status.admissionChecks[].state``) and turns every applied effect into calls of the hooks a
subclass overrides; the forecast's timeline and the simulation's metrics are two such
subclasses.  Nothing in the core is instrumented: the engine reports its effects, and writes
from outside the controllers are reported by the loop.
"""

from __future__ import annotations

from collections.abc import Iterable

from kueue_provreq.api import constants as c
from kueue_provreq.api.objects import Key, KubeObject, key_of
from kueue_provreq.api.provisioning import ProvisioningRequest
from kueue_provreq.api.workload import Workload
from kueue_provreq.machines.phases import workload_phase
from kueue_provreq.world import Create, Delete, Effect, MetricInc, Update

CheckStates = dict[str, str]


def check_states(wl: Workload) -> CheckStates:
    return {s.name: s.state for s in wl.status.admission_checks}


class Watch:
    """Base listener: tracks phases and check states, dispatches to the ``on_*`` hooks."""

    def __init__(self, initial: Iterable[KubeObject] = ()) -> None:
        self.phases: dict[Key, str] = {}
        self.checks: dict[Key, CheckStates] = {}
        for obj in initial:
            if isinstance(obj, Workload):
                self.phases[key_of(obj)] = workload_phase(obj)
                self.checks[key_of(obj)] = check_states(obj)

    def __call__(self, actor: str, effect: Effect) -> None:
        if isinstance(effect, (Create, Update)):
            obj = effect.obj
            if isinstance(obj, Workload):
                self._workload(actor, obj, isinstance(effect, Create))
            elif isinstance(obj, ProvisioningRequest):
                if isinstance(effect, Create):
                    self.on_request_created(actor, obj)
                else:
                    self.on_request_updated(actor, obj)
        elif isinstance(effect, Delete):
            key = (effect.kind, effect.namespace, effect.name)
            if effect.kind == c.PROVISIONING_REQUEST:
                self.on_request_deleted(actor, key)
            elif effect.kind == c.WORKLOAD:
                self.phases.pop(key, None)
                self.checks.pop(key, None)
                self.on_workload_deleted(actor, key)
        elif isinstance(effect, MetricInc):
            self.on_metric(effect)

    def _workload(self, actor: str, wl: Workload, created: bool) -> None:
        key = key_of(wl)
        phase = workload_phase(wl)
        states = check_states(wl) if wl.status.admission_checks or self.checks.get(key) else {}
        if created or key not in self.phases:
            self.phases[key], self.checks[key] = phase, states
            self.on_workload_created(actor, wl)
            return
        before, old_states = self.phases[key], self.checks[key]
        self.phases[key], self.checks[key] = phase, states
        if before != phase:
            self.on_phase(actor, wl, before, phase)
        if old_states != states:
            for name in sorted(old_states.keys() | states.keys()):
                old, new = old_states.get(name), states.get(name)
                if old != new:
                    self.on_check(actor, wl, name, old, new)
        self.on_workload_updated(actor, wl)

    # --- hooks: every one does nothing here -----------------------------------------------
    def on_workload_created(self, actor: str, wl: Workload) -> None:
        """A workload appeared (an arrival, or the job integration created it)."""

    def on_phase(self, actor: str, wl: Workload, before: str, after: str) -> None:
        """The workload's phase moved (reported before the check changes of the same write,
        in the conformance timeline's order)."""

    def on_check(self, actor: str, wl: Workload, check: str, before: str | None, after: str | None) -> None:
        """One admission check's state moved (None: the check was absent / is gone)."""

    def on_workload_updated(self, actor: str, wl: Workload) -> None:
        """Any write of a known workload, after the phase and check hooks."""

    def on_workload_deleted(self, actor: str, key: Key) -> None:
        """A workload left the world."""

    def on_request_created(self, actor: str, pr: ProvisioningRequest) -> None:
        """A ProvisioningRequest was created (by the provisioning controller)."""

    def on_request_updated(self, actor: str, pr: ProvisioningRequest) -> None:
        """A ProvisioningRequest changed (Cluster Autoscaler wrote its conditions)."""

    def on_request_deleted(self, actor: str, key: Key) -> None:
        """A ProvisioningRequest was deleted."""

    def on_metric(self, metric: MetricInc) -> None:
        """A controller incremented a counter."""
