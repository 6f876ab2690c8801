"""The model as a world driver: a :class:`~kueue_provreq.world.World` and the library's own
:class:`~kueue_provreq.engine.Manager` (the same loop every other driver uses), in simulated time.

The test's own changes (``apply``, ``patch``, ``autoscaler`` ...) are written to the world
directly, as a user or Cluster Autoscaler would, each naming the user action it stands for so
that verify mode can check it against the declared machines.  What happens is reported to an
:class:`Observer`, which is how ``kueue-provreq run`` draws its timeline.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any, cast

from kueue_provreq.api import constants as c
from kueue_provreq.api import naming
from kueue_provreq.api.config import Configuration
from kueue_provreq.api.evolve import evolve
from kueue_provreq.api.frozen import FrozenMap
from kueue_provreq.api.meta import Condition, Time, set_condition
from kueue_provreq.api.model import fields
from kueue_provreq.api.objects import Key, KubeObject, already_exists, key_of, not_found
from kueue_provreq.api.provisioning import ProvisioningRequest
from kueue_provreq.api.workload import Admission, Workload
from kueue_provreq.conformance.scenario import DEFAULT_NAMESPACE, Scenario, ScenarioError, format_time
from kueue_provreq.controllers import job
from kueue_provreq.controllers.context import Context
from kueue_provreq.controllers.queues import queue_gauges
from kueue_provreq.driver import Needs, Reconciled, StepFailed
from kueue_provreq.engine import Manager, Recorder
from kueue_provreq.machines import WORKLOAD_MACHINE, Guard, IllegalTransition, Transition, WorkloadTrigger
from kueue_provreq.machines.phases import REALISERS, held_back, workload_phase, write_workload
from kueue_provreq.manifests import dump_object, load_object
from kueue_provreq.manifests.patch import patch_document
from kueue_provreq.manifests.validation import update_refusal
from kueue_provreq.world import Create, Effect, Event, MetricInc, Update, World, marked_for_deletion
from kueue_provreq.world import Delete as DeleteEffect


class Observer:
    """What a run reports as it goes.  Every hook does nothing here; a timeline overrides them."""

    def on_start(self, scenario: Scenario, world: World) -> None:
        """The world is built, before the first step."""

    def on_step(self, number: int, step: Any, clock: float) -> None:
        """Step ``number`` (1-based) is about to run at ``clock`` (epoch seconds)."""

    def on_effect(self, actor: str, effect: Effect, world: World) -> None:
        """``actor`` (a controller or a step kind) applied ``effect``; ``world`` is after it."""

    def on_expect(self, number: int, failure: str | None) -> None:
        """An ``expect`` step was judged."""

    def on_finish(self, outcome: Any) -> None:
        """The run is over."""


class ModelDriver:
    """One scenario's world in the model.  It runs everything a scenario can ask for."""

    def __init__(self, scenario: Scenario, observer: Observer | None = None) -> None:
        self.scenario = scenario
        self.observer = observer or Observer()
        self.clock = scenario.clock
        self.world = World(faults=scenario.faults)
        self.manager = Manager(self.world, Recorder(self._record))
        self.events: list[Event] = []
        self.counters: dict[tuple[str, FrozenMap[str, str]], float] = defaultdict(float)

    # --- the driver interface ----------------------------------------------------------------
    def refuses(self, needs: Needs) -> str | None:
        return None

    @property
    def now(self) -> float:
        return self.clock

    @property
    def ctx(self) -> Context:
        return Context(now=self._now, config=self.scenario.config)

    @property
    def _now(self) -> Time:
        return Time(math.floor(self.clock))

    def begin(self, objects: Sequence[KubeObject], clock: float) -> None:
        self.clock = clock
        for i, obj in enumerate(objects):
            obj = self._created(obj)
            if key_of(obj) in self.world:
                kind, _, name = key_of(obj)
                raise ScenarioError(f"objects[{i}]: {already_exists(kind, name)}")
            self.world.put(obj)
        self.observer.on_start(self.scenario, self.world)

    def settle(self, controllers: tuple[str, ...] | None) -> None:
        if controllers is None:
            self.manager.settle(self.ctx)
        else:
            self.manager.settle(self.ctx, controllers)

    def reconcile(self, controller: str, key: Key) -> Reconciled:
        result, _ = self.manager.reconcile(controller, key, self.ctx)
        return Reconciled(result.error, result.requeue_after)

    def advance(self, seconds: float) -> None:
        self.clock += seconds

    def apply(self, obj: KubeObject, has_status: bool, has_generation: bool) -> None:
        """``kubectl apply``: create, or replace labels, annotations, owners and spec (and the
        status only when the manifest has one); identity and history stay the server's."""
        obj = scoped(obj)
        old = self.world.get(*key_of(obj))
        if old is None:
            self._write("apply", Create(self._created(obj)))
            return
        if not has_status and hasattr(old, "status"):
            obj = evolve(cast(Any, obj), status=cast(Any, old).status)
        meta = obj.metadata
        generation = meta.generation if has_generation else next_generation(old, obj)
        new = evolve(obj, metadata=evolve(
            meta, uid=meta.uid or old.metadata.uid, generation=generation,
            creation_timestamp=meta.creation_timestamp if meta.creation_timestamp is not None
            else old.metadata.creation_timestamp))
        self._refuse_update(old, new)
        if new != old:
            self._write("apply", Update(new, user_changes(old, new)))

    @staticmethod
    def _refuse_update(old: KubeObject, new: KubeObject) -> None:
        """What the API server refuses of an update (the CRDs' transition rules)."""
        refusal = update_refusal(old.KIND, old.metadata.name, dump_object(old), dump_object(new))
        if refusal is not None:
            raise StepFailed(refusal)

    def patch(self, kind: str, namespace: str, name: str, api_version: str | None,
              merge: Mapping[str, Any]) -> None:
        old = self._get(kind, namespace, name)
        doc = patch_document(dump_object(old, api_version), merge, format_time(self.clock))
        new = load_object(doc, semantics=self.scenario.config.semantics)
        if key_of(new) != key_of(old):
            raise StepFailed("a patch cannot change an object's kind, namespace or name")
        meta = merge.get("metadata")
        if not (isinstance(meta, Mapping) and meta.get("generation") is not None):
            new = evolve(new, metadata=evolve(new.metadata, generation=next_generation(old, new)))
        self._refuse_update(old, new)
        if new != old:
            self._write("patch", Update(new, user_changes(old, new)))

    def delete(self, kind: str, namespace: str, name: str) -> None:
        obj = self._get(kind, namespace, name)
        marked = marked_for_deletion(obj, self._now)
        if marked is None:
            self._write("delete", DeleteEffect(kind, namespace, name))
        elif marked is not obj:
            self._write("delete", Update(marked))

    def autoscaler(self, namespace: str | None, request: str, condition: Condition,
                   details: Mapping[str, str] | None) -> None:
        pr = self._request(namespace, request)
        conditions, _ = set_condition(pr.status.conditions,
                                      evolve(condition, observed_generation=pr.metadata.generation), self._now)
        status = evolve(pr.status, conditions=conditions)
        if details is not None:
            status = evolve(status, provisioning_class_details=FrozenMap(details))
        new = evolve(pr, status=status)
        if new != pr:
            self._write("autoscaler", Update(new))

    def set_quota_reservation(self, namespace: str, name: str, admission: Admission | None) -> None:
        wl = self._get(c.WORKLOAD, namespace, name)
        assert isinstance(wl, Workload)
        update = quota_step(wl, admission, self._now, self.scenario.config)
        if update.obj != wl:
            self._write("setQuotaReservation", update)

    def read(self, kind: str, namespace: str, name: str, api_version: str | None) -> dict[str, Any] | None:
        obj = self.world.get(kind, namespace, name)
        return None if obj is None else dump_object(obj, api_version)

    def count(self, kind: str) -> int:
        return len(self.world.objects(kind))

    def take_events(self) -> list[dict[str, Any]]:
        taken, self.events = self.events, []
        return [event_record(e) for e in taken]

    def metric_series(self) -> list[tuple[str, Mapping[str, str], float]]:
        series: list[tuple[str, Mapping[str, str], float]] = [
            (name, labels, value) for (name, labels), value in self.counters.items()]
        series.extend((g.name, g.labels, g.value) for g in queue_gauges(self.world, self.ctx))
        return series

    def end(self) -> None:
        pass

    # --- the world ---------------------------------------------------------------------------
    def _created(self, obj: KubeObject) -> KubeObject:
        """``obj`` as the API server stores it on create, Kueue's job webhook included."""
        return self.world.created(job.defaulted(self.world, scoped(obj), self.scenario.config), self._now)

    def _record(self, actor: str, key: Key, effect: Effect) -> None:
        if isinstance(effect, Event):
            self.events.append(effect)
        elif isinstance(effect, MetricInc):
            self.counters[(effect.name, effect.labels)] += effect.value
        self.observer.on_effect(actor, effect, self.world)

    def _write(self, actor: str, effect: Create | Update | DeleteEffect) -> list[Key]:
        """A change made by the test itself (not a controller): applied as given, unverified."""
        keys = self.world.apply(effect)
        self._record(actor, keys[0] if keys else ("", "", ""), effect)
        return keys

    def _get(self, kind: str, namespace: str, name: str) -> KubeObject:
        obj = self.world.get(kind, namespace, name)
        if obj is None:
            raise StepFailed(not_found(kind, name))
        return obj

    def _request(self, namespace: str | None, request: str) -> ProvisioningRequest:
        """The request an autoscaler step names: ``$latest`` is the newest one (by creation
        time, then attempt number) of the scenario's only workload; without a namespace,
        the one namespace that holds a request of that name."""
        if request == LATEST:
            workloads = self.world.objects(c.WORKLOAD)
            if len(workloads) != 1:
                raise StepFailed(f"$latest needs exactly one Workload, the world has {len(workloads)}")
            wl = workloads[0].metadata
            owned = [o for o in self.world.owned_by_name(c.PROVISIONING_REQUEST, wl.namespace, wl.name)
                     if isinstance(o, ProvisioningRequest)
                     and any(r.kind == c.WORKLOAD for r in o.metadata.owner_references)]
            if not owned:
                raise StepFailed(f"$latest: Workload {wl.namespace}/{wl.name} has no ProvisioningRequest")
            only = workloads[0]
            checks = [s.name for s in only.status.admission_checks] if isinstance(only, Workload) else []
            return latest_request(owned, wl.name, checks)
        if namespace is not None:
            pr = self._get(c.PROVISIONING_REQUEST, namespace, request)
        else:
            found = [p for p in self.world.objects(c.PROVISIONING_REQUEST) if p.metadata.name == request]
            if len(found) > 1:
                raise StepFailed(f"ProvisioningRequest {request!r} exists in several namespaces "
                                 f"({', '.join(sorted(p.metadata.namespace for p in found))}): give a namespace")
            if not found:
                raise StepFailed(not_found(c.PROVISIONING_REQUEST, request))
            pr = found[0]
        assert isinstance(pr, ProvisioningRequest)
        return pr


LATEST = "$latest"
"""The autoscaler step's name for the newest request of the scenario's only workload."""


def latest_request(owned: Sequence[KubeObject], workload: str, checks: Sequence[str]) -> ProvisioningRequest:
    """The newest of a workload's requests: by creation time, then attempt number, then name."""
    newest = max(owned, key=lambda p: (p.metadata.creation_timestamp or 0, _attempt(p, workload, checks),
                                       p.metadata.name))
    assert isinstance(newest, ProvisioningRequest)
    return newest


# --- helpers ------------------------------------------------------------------------------


def event_record(e: Event) -> dict[str, Any]:
    """An emitted event in the scenario format's shape."""
    return {"type": e.type, "reason": e.reason, "message": e.message,
            "object": {"kind": e.kind, "namespace": e.namespace, "name": e.name}}


def scoped(obj: KubeObject) -> KubeObject:
    """A namespaced object given without a namespace lives in ``default``, as kubectl puts it."""
    if not obj.NAMESPACED or obj.metadata.namespace:
        return obj
    return evolve(obj, metadata=evolve(obj.metadata, namespace=DEFAULT_NAMESPACE))


def _spec(obj: KubeObject) -> tuple[Any, ...]:
    """Everything but metadata and status: what moves ``metadata.generation``."""
    return tuple(getattr(obj, f.name) for f in fields(type(obj)) if f.name not in ("metadata", "status"))


def next_generation(old: KubeObject, new: KubeObject) -> int:
    generation = old.metadata.generation or 1
    return generation + 1 if _spec(new) != _spec(old) else generation


def quota_step(wl: Workload, admission: Admission | None, now: Time, config: Configuration) -> Update:
    """The ``setQuotaReservation`` step: Kueue's ``SetQuotaReservation`` test helper, or with no
    admission ``UnsetQuotaReservationWithCondition``, and the user trigger each stands for."""
    trigger: WorkloadTrigger
    what: dict[str, Any]
    if admission is None:
        trigger, guards = WorkloadTrigger.UNSET_QUOTA, {Guard.DEACTIVATED: not wl.is_active, Guard.BACKOFF: held_back(wl)}
        what = {"reason": c.REASON_EVICTED_BY_TEST, "message": c.MSG_EVICTED_BY_TEST, "now": now, "config": config}
    else:
        # the test helper leaves Admitted as it is
        trigger, guards = WorkloadTrigger.RESERVE_QUOTA, {Guard.ALL_CHECKS_READY: wl.is_admitted(),
                                                          Guard.PREEMPTIONS_PENDING: False}
        what = {"admission": admission, "now": now, "config": config, "checks_complete": False}
    try:
        new, fired = write_workload(wl, trigger, guards, **what)
    except IllegalTransition:
        # the machine has no such transition from here (the format lets a scenario write
        # anything): an outside write that names no trigger
        return Update(REALISERS[trigger](wl, **what))
    return Update(new, (fired,))


def _user_fire(phase: str, trigger: WorkloadTrigger, guards: Mapping[Guard, bool] | None = None
               ) -> tuple[Transition, ...]:
    """A scenario step standing for a user or one of Kueue's test helpers fires the workload
    machine as that actor would; a step the machine has no transition for (the format lets a
    scenario write anything) is an outside write that names no trigger."""
    try:
        return (WORKLOAD_MACHINE.transition(phase, trigger, guards),)
    except IllegalTransition:
        return ()


def user_changes(old: KubeObject, new: KubeObject) -> tuple[Transition, ...]:
    """The user actions an ``apply`` or ``patch`` of a Workload stands for: (de)activating it,
    and finishing it (its job completed)."""
    if not isinstance(old, Workload) or not isinstance(new, Workload):
        return ()
    fired: tuple[Transition, ...] = ()
    phase: str = workload_phase(old)
    if old.is_active != new.is_active:
        if new.is_active:
            fired = _user_fire(phase, WorkloadTrigger.REACTIVATE, {Guard.REQUEUED: not held_back(old)})
        else:
            fired = _user_fire(phase, WorkloadTrigger.DEACTIVATE)
        phase = fired[-1].target if fired else phase
    if new.is_finished() and not old.is_finished():
        fired += _user_fire(phase, WorkloadTrigger.FINISH)
    return fired


def _attempt(pr: KubeObject, workload: str, checks: Sequence[str]) -> int:
    """The attempt number a request's name carries for one of the workload's checks (else 0)."""
    return next((n for check in checks if (n := naming.attempt_of(pr.metadata.name, workload, check)) is not None), 0)
