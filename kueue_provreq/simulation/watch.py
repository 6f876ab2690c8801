"""Following a run: every applied effect, read once and handed to whoever subscribed.

The :class:`~kueue_provreq.simulation.loop.Loop` owns one :class:`Watch`.  It reads each
effect the engine applies or an outside writer makes (a workload's phase and check changes
come from :class:`~kueue_provreq.changes.WorkloadStates`, the reading the conformance timeline
shares) and calls the hooks of each :class:`Subscriber`, in the order they subscribed.

Two kinds of subscriber: *processes* (Cluster Autoscaler, the jobs' pods, the retention
policy, :mod:`~kueue_provreq.simulation.drive`) act on what they hear by scheduling events or
writing through the loop; *observers* (the simulation's metrics, the forecast's story) only
read.  A new process or observer subscribes itself; nothing else changes.  Nothing in the core
is instrumented: the engine reports its effects, and the loop reports outside writes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from kueue_provreq.api import constants as c
from kueue_provreq.api.objects import Key, KubeObject
from kueue_provreq.api.provisioning import ProvisioningRequest
from kueue_provreq.api.workload import Workload
from kueue_provreq.changes import WorkloadStates
from kueue_provreq.world import Create, Delete, Effect, MetricInc, Update


class Subscriber:
    """The hooks a run calls; every one does nothing here, a subscriber overrides those it needs
    (and only those are called)."""

    def on_instant(self, now: int) -> None:
        """Time moved on to ``now``: called before the first effect of that instant is reported
        (an instant that applies no effect is not told)."""

    def on_workload_created(self, actor: str, wl: Workload) -> None:
        """A workload appeared (an arrival, or the job integration created it)."""

    def on_phase(self, actor: str, wl: Workload, before: str, after: str) -> None:
        """The workload's phase moved (reported before the check changes of the same write,
        in the conformance timeline's order)."""

    def on_check(self, actor: str, wl: Workload, check: str, before: str | None, after: str | None) -> None:
        """One admission check's state moved (None: the check was absent / is gone)."""

    def on_workload_updated(self, actor: str, wl: Workload) -> None:
        """Any write of a known workload, after the phase and check hooks."""

    def on_workload_deleted(self, actor: str, key: Key, phase: str) -> None:
        """A workload left the world, in ``phase``."""

    def on_request_created(self, actor: str, pr: ProvisioningRequest) -> None:
        """A ProvisioningRequest was created (by the provisioning controller; with no actor,
        one the world already held when the run began)."""

    def on_request_updated(self, actor: str, pr: ProvisioningRequest) -> None:
        """A ProvisioningRequest changed (Cluster Autoscaler wrote its conditions)."""

    def on_request_deleted(self, actor: str, key: Key) -> None:
        """A ProvisioningRequest was deleted."""

    def on_metric(self, metric: MetricInc) -> None:
        """A controller incremented a counter."""


_HOOKS = tuple(name for name in vars(Subscriber) if name.startswith("on_"))


class Watch:
    """Reads each effect once and calls the subscribers' hooks.  ``actor`` is the controller,
    or for an outside write who made it (``autoscaler``, ``job``, ``arrival``...)."""

    def __init__(self, initial: Iterable[KubeObject], now: int) -> None:
        self.states = WorkloadStates(initial)
        self.now = now
        """The instant the effects reported happen at (the loop moves it)."""
        self._told = now
        """The instant the ``on_instant`` hooks were last told of."""
        #: Per hook, the subscribers' bound methods that override it (a run reports millions
        #: of effects: a hook nobody overrides costs nothing).
        self._hooks: dict[str, list[Callable[..., None]]] = {name: [] for name in _HOOKS}
        hooks = self._hooks
        self._instant, self._created, self._phase = hooks["on_instant"], hooks["on_workload_created"], hooks["on_phase"]
        self._check, self._updated = hooks["on_check"], hooks["on_workload_updated"]
        # By the effect's type: a run reports Events and metric increments by the million,
        # and nobody but ``on_instant`` hears of the Events.
        self._by_type: dict[type, Callable[[str, Any], None]] = {
            Create: self._written, Update: self._written, Delete: self._deleted, MetricInc: self._metric}

    @property
    def phases(self) -> dict[Key, str]:
        """Each known workload's phase (read only)."""
        return self.states.phases

    def subscribe(self, subscriber: Subscriber) -> None:
        for name, hooks in self._hooks.items():
            if getattr(type(subscriber), name) is not getattr(Subscriber, name):
                hooks.append(getattr(subscriber, name))

    def __call__(self, actor: str, effect: Effect) -> None:
        if self.now != self._told:
            self._told = self.now
            for hook in self._instant:
                hook(self.now)
        fn = self._by_type.get(type(effect))
        if fn is not None:
            fn(actor, effect)

    def _written(self, actor: str, effect: Create | Update) -> None:
        obj = effect.obj
        if isinstance(obj, Workload):
            self._workload(actor, obj, effect)
        elif isinstance(obj, ProvisioningRequest):
            for fn in self._hooks["on_request_created" if isinstance(effect, Create) else "on_request_updated"]:
                fn(actor, obj)

    def _deleted(self, actor: str, effect: Delete) -> None:
        key = (effect.kind, effect.namespace, effect.name)
        if effect.kind == c.PROVISIONING_REQUEST:
            for fn in self._hooks["on_request_deleted"]:
                fn(actor, key)
        elif effect.kind == c.WORKLOAD:
            change = self.states.deleted(key)
            if change is not None:
                for fn in self._hooks["on_workload_deleted"]:
                    fn(actor, key, change.before)

    def _metric(self, actor: str, effect: MetricInc) -> None:
        for fn in self._hooks["on_metric"]:
            fn(effect)

    def _workload(self, actor: str, wl: Workload, effect: Create | Update) -> None:
        change = self.states.written(wl, effect.transitions if isinstance(effect, Update) else ())
        if isinstance(effect, Create) or (change is not None and change.before is None):
            for fn in self._created:
                fn(actor, wl)
            return
        if change is not None:
            if change.before != change.after:
                for fn in self._phase:
                    fn(actor, wl, change.before, change.after)
            for check in change.checks:
                for fn in self._check:
                    fn(actor, wl, check.check, check.before, check.after)
        for fn in self._updated:
            fn(actor, wl)
