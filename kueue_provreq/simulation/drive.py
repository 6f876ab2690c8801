"""The processes that play the rest of the cluster in simulated time.

Each subscribes itself to the :class:`~loop.Loop` when it is made, acts on what it hears by
scheduling events, and writes from outside the controllers, through the loop:

* :class:`JobDriver` stands for each admitted Job's pods and for the job integration's view of
  them: after a while the pods are ready (``PodsReady=True``), and later the Job completes
  (``Finished=True``), releasing the quota;
* :class:`AutoscalerDriver` gives every ProvisioningRequest the controllers create to a
  :class:`Model`, which decides what CA answers (a script for ``forecast``, sampled
  distributions for ``simulate``), and writes what :func:`autoscaler.reconcile` says CA writes,
  when it says so; it looks at a workload's requests again when the job driver says its pods
  are ready (which consumes the capacity booking), and tells the job driver whether pods that
  start after their booking expired still find the capacity;
* :class:`Retention` deletes a workload that is finished or deactivated and owns no request
  any more, as an object retention policy would.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from kueue_provreq import autoscaler
from kueue_provreq.api import constants as c
from kueue_provreq.api.meta import Time, find_condition
from kueue_provreq.api.objects import Key, key_of
from kueue_provreq.api.provisioning import ProvisioningRequest
from kueue_provreq.api.workload import Workload
from kueue_provreq.autoscaler import Answer, Decision, Script
from kueue_provreq.controllers import workload_status as ws
from kueue_provreq.machines import Actor, WorkloadTrigger, write_workload
from kueue_provreq.machines import WorkloadPhase as P
from kueue_provreq.simulation.loop import Event, Loop
from kueue_provreq.simulation.watch import Subscriber
from kueue_provreq.world import Delete, Update


class Model(Protocol):
    """How a driver learns what CA answers to a request."""

    def first(self, pr: ProvisioningRequest) -> Decision | None:
        """CA's plan for a new request; None: CA ignores it (a class it does not handle)."""

    def resolve(self, pr: ProvisioningRequest, decision: Decision, now: Time) -> Decision:
        """The plan as it stands when its time comes (a model that depends on the state of
        the cluster, such as free capacity, decides here)."""

    def retry(self, pr: ProvisioningRequest, tries: int, now: Time) -> Decision:
        """The next try after ``tries`` tries found no capacity."""

    def released(self, key: Key) -> None:
        """The request is gone or revoked: whatever it held is free again."""

    def capacity_lost(self, pr: ProvisioningRequest) -> bool:
        """Whether the pods of ``pr``, becoming ready only after its booking expired, find the
        capacity gone (CA stopped guarding it): they wait, and never get it back, since CA does
        not scale up for pods that consume a request."""


class ScriptModel:
    """A SCRIPT: attempt *i* of every check gets item *i*, the last item repeats."""

    def __init__(self, script: Script) -> None:
        self.script = script

    def first(self, pr: ProvisioningRequest) -> Decision | None:
        return self.script.decision(pr)

    def resolve(self, pr: ProvisioningRequest, decision: Decision, now: Time) -> Decision:
        return decision

    def retry(self, pr: ProvisioningRequest, tries: int, now: Time) -> Decision:
        raise AssertionError("a script never answers 'not found'")  # pragma: no cover

    def released(self, key: Key) -> None:
        pass

    def capacity_lost(self, pr: ProvisioningRequest) -> bool:
        return False


class AutoscalerDriver(Subscriber):
    """Cluster Autoscaler over a run: one pending wake-up per request, as CA's own loop
    would revisit it.  Whether a request's pods are all scheduled is the job driver's to say
    (``pods_scheduled`` instead, where the run reads it otherwise)."""

    def __init__(self, loop: Loop, model: Model, jobs: JobDriver,
                 pods_scheduled: Callable[[ProvisioningRequest], bool] | None = None) -> None:
        self.loop = loop
        self.model = model
        self.pods_scheduled = pods_scheduled or jobs.pods_scheduled
        self.decisions: dict[Key, Decision] = {}
        self._unresolved: set[Key] = set()
        self._tries: dict[Key, int] = {}
        self._due: dict[Key, Event] = {}
        loop.subscribe(self)
        jobs.when_pods_ready(self.pods_ready)
        jobs.when_pods_start(self.capacity_kept)

    def on_request_created(self, actor: str, pr: ProvisioningRequest) -> None:
        decision = self.model.first(pr)
        if decision is None:
            return
        if not actor:  # one the world held when the run began: CA takes it up where it stands
            decision = autoscaler.resumed(pr, decision, self.loop.now)
        key = key_of(pr)
        self.decisions[key] = decision
        self._unresolved.add(key)
        self._schedule(key, decision.at)

    def on_request_deleted(self, actor: str, key: Key) -> None:
        if self.decisions.pop(key, None) is not None:
            self._unresolved.discard(key)
            self._tries.pop(key, None)
            due = self._due.pop(key, None)
            if due is not None:
                due.cancel()
            self.model.released(key)

    def pods_ready(self, wl: Workload) -> None:
        """The workload's pods are ready: look at its requests now (the booking is consumed)."""
        for pr in self.loop.world.owned_by_name(c.PROVISIONING_REQUEST, wl.metadata.namespace, wl.metadata.name):
            key = key_of(pr)
            if key in self.decisions:
                self._schedule(key, self.loop.now)

    def capacity_kept(self, wl: Workload) -> bool:
        """Whether the workload's pods, about to be ready, still find their capacity: not when
        a request's booking ran out before them and the model says the capacity went."""
        for pr in self.loop.world.owned_by_name(c.PROVISIONING_REQUEST, wl.metadata.namespace, wl.metadata.name):
            assert isinstance(pr, ProvisioningRequest)
            expired = find_condition(pr.status.conditions, c.PR_BOOKING_EXPIRED)
            if expired is not None and expired.status == c.TRUE and \
                    expired.reason == c.CA_REASON_CAPACITY_RESERVATION_TIME_EXPIRED and \
                    key_of(pr) in self.decisions and self.model.capacity_lost(pr):
                return False
        return True

    def revocations_pending(self) -> bool:
        """Whether some request still has a capacity revocation to come."""
        return any(d.revoke_at is not None and key in self._due for key, d in self.decisions.items())

    def _schedule(self, key: Key, at: int) -> None:
        due = self._due.get(key)
        if due is None or at < due.time:
            if due is not None:
                due.cancel()  # superseded by an earlier look
            self._due[key] = self.loop.at(at, lambda: self._run(key))

    def _run(self, key: Key) -> None:
        del self._due[key]
        pr = self.loop.world.get(*key)
        if not isinstance(pr, ProvisioningRequest):
            return
        now = self.loop.now
        decision = self.decisions[key]
        if key in self._unresolved and now >= decision.at:
            self._unresolved.discard(key)
            decision = self.decisions[key] = self.model.resolve(pr, decision, now)
        done = autoscaler.reconcile(pr, now, decision, self.pods_scheduled(pr))
        if done.written:
            self.loop.write(Actor.CLUSTER_AUTOSCALER, Update(done.request, done.transitions))
        written = {cond.type: cond.status for cond in done.written}
        if written.get(c.PR_CAPACITY_REVOKED) == c.TRUE:
            self.model.released(key)
        if decision.answer == Answer.NOT_FOUND and written.get(c.PR_PROVISIONED) == c.FALSE:
            tries = self._tries[key] = self._tries.get(key, 0) + 1
            decision = self.decisions[key] = self.model.retry(done.request, tries, now)
            self._unresolved.add(key)
            self._schedule(key, decision.at)
        elif done.next_at is not None:
            self._schedule(key, done.next_at)


Durations = Callable[[Workload, int], tuple[int, int | None]]
"""A workload's job model, given which admission of it this is (1 for the first): (seconds
from admission to pods ready, seconds from pods ready to the Job's completion or None for
never)."""


class JobDriver(Subscriber):
    """The pods of each admitted Job: ready after a while, done later (or never).

    Each admission starts the clock again; an eviction before the pods are ready or the Job
    completes cancels what was to come (the job integration stops the Job)."""

    def __init__(self, loop: Loop, durations: Durations) -> None:
        self.loop = loop
        self.durations = durations
        self._next: dict[Key, Event] = {}  # what is to come for each admitted workload
        self._admissions: dict[Key, int] = {}
        self._on_pods_ready: list[Callable[[Workload], None]] = []
        self._can_start: list[Callable[[Workload], bool]] = []
        self._running: set[Key] = set()
        loop.subscribe(self)

    def when_pods_ready(self, callback: Callable[[Workload], None]) -> None:
        """Call ``callback`` with the workload each time its pods become ready."""
        self._on_pods_ready.append(callback)

    def when_pods_start(self, predicate: Callable[[Workload], bool]) -> None:
        """Ask ``predicate`` before the workload's pods become ready: False, they find no
        node and wait (until ``waitForPodsReady`` evicts the workload, where configured)."""
        self._can_start.append(predicate)

    def pods_scheduled(self, pr: ProvisioningRequest) -> bool:
        """Whether the pods of the workload owning ``pr`` are running."""
        ref = pr.metadata.controller_ref()
        return ref is not None and (c.WORKLOAD, pr.metadata.namespace, ref.name) in self._running

    def on_phase(self, actor: str, wl: Workload, before: str, after: str) -> None:
        if after == P.ADMITTED:
            self._admitted(wl)
        elif before == P.ADMITTED:
            self._stopped(key_of(wl))

    def on_workload_deleted(self, actor: str, key: Key, phase: str) -> None:
        self._admissions.pop(key, None)

    def _admitted(self, wl: Workload) -> None:
        key = key_of(wl)
        self._stopped(key)
        admission = self._admissions[key] = self._admissions.get(key, 0) + 1
        ready_after, run_for = self.durations(wl, admission)
        self._next[key] = self.loop.at(self.loop.now + ready_after, lambda: self._pods_ready(key, run_for))

    def take_up(self, wl: Workload, ready_in: int, run_for: int | None) -> None:
        """An admitted workload the world held at the start (a cluster's): its pods are ready
        ``ready_in`` from now (0: they are, and the booking is consumed at once), its Job
        completes ``run_for`` after that."""
        key = key_of(wl)
        self._admissions[key] = 1
        self._next[key] = self.loop.at(self.loop.now + ready_in, lambda: self._pods_ready(key, run_for))

    def _stopped(self, key: Key) -> None:
        """The workload left Admitted: its pods are gone, what was planned is off."""
        planned = self._next.pop(key, None)
        if planned is not None:
            planned.cancel()
        self._running.discard(key)

    def _current(self, key: Key) -> Workload | None:
        del self._next[key]
        wl = self.loop.world.get(*key)
        return wl if isinstance(wl, Workload) and wl.is_admitted() else None

    def _pods_ready(self, key: Key, run_for: int | None) -> None:
        wl = self._current(key)
        if wl is None or not all(can(wl) for can in self._can_start):
            return
        self._running.add(key)
        new = ws.set_cond(wl, c.WORKLOAD_PODS_READY, c.TRUE, c.REASON_STARTED, c.MSG_PODS_READY, self.loop.now)
        if new is not wl:
            self.loop.write(Actor.JOB, Update(new))
        for callback in self._on_pods_ready:
            callback(new)
        if run_for is not None:
            self._next[key] = self.loop.at(self.loop.now + run_for, lambda: self._finish(key))

    def _finish(self, key: Key) -> None:
        wl = self._current(key)
        if wl is None:
            return
        self._running.discard(key)
        new, finished = write_workload(wl, WorkloadTrigger.FINISH, reason=c.REASON_FINISHED_SUCCEEDED,
                                       message=c.MSG_JOB_FINISHED, now=self.loop.now)
        self.loop.write(Actor.JOB, Update(new, (finished,)))


class Retention(Subscriber):
    """Deletes each workload that finished or was deactivated, once the settle that did it is
    over and the workload owns no request any more (as an object retention policy would): it
    matters to nobody after that, and the scheduler need not walk it again."""

    def __init__(self, loop: Loop) -> None:
        self.loop = loop
        loop.subscribe(self)

    def on_phase(self, actor: str, wl: Workload, before: str, after: str) -> None:
        if after in (P.FINISHED, P.INACTIVE):
            key = key_of(wl)
            self.loop.after_settle(lambda: self._remove(key))

    def _remove(self, key: Key) -> None:
        world = self.loop.world
        if not isinstance(world.get(*key), Workload) or world.owned_by_name(c.PROVISIONING_REQUEST, key[1], key[2]):
            return
        self.loop.write("retention", Delete(*key))
