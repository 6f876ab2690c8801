"""The floor for bench_core's settle: the same story, the same writes, in plain Python.

Each workload goes through provision -> fail -> retry -> provision as in ``bench_core``'s
``settle_cycle``, with the writes the model makes for it (13 Workload updates, 4 creates, 2
PodTemplate hand-overs, the cascading delete of the failed request, 8 events, 2 metrics, the
machine lookups through ``MachineTable.fire``) and the same queue-status writes and outside
ProvisioningRequest updates per settle, but with ``__slots__`` objects copied on write, a dict
world and the steps called in order: no routing, no controllers, no effect records.  What the
engine costs above this is the price of its machinery, not of the writes the story needs.

``run(n)`` returns the seconds the four settles took (the outside updates between them are not
timed, as in ``settle_cycle``); ``count(n)`` runs it once more with every write tallied.
"""

from __future__ import annotations

import gc
import time
from collections import Counter
from collections.abc import Mapping
from typing import Any

from kueue_provreq.machines import (
    ADMISSION_CHECK_MACHINE,
    WORKLOAD_MACHINE,
    CheckTrigger,
    Guard,
    MachineTable,
    WorkloadPhase,
    WorkloadTrigger,
)

T0 = 1_704_067_200
NS = "default"
CHECK = "prov"
Key = tuple[str, str, str]


class Obj:
    """A Kubernetes object as plain slots, copied on every write (never changed in place)."""

    __slots__ = ("kind", "namespace", "name", "uid", "resource_version", "owner_uid", "status")

    def __init__(self, kind: str, namespace: str, name: str, uid: str, owner_uid: str = "",
                 status: tuple[Any, ...] = ()) -> None:
        self.kind, self.namespace, self.name, self.uid = kind, namespace, name, uid
        self.resource_version, self.owner_uid, self.status = 0, owner_uid, status

    def but(self, **changes: Any) -> Obj:
        new = object.__new__(Obj)
        for slot in Obj.__slots__:
            object.__setattr__(new, slot, changes.get(slot, getattr(self, slot)))
        return new


class Workload:
    __slots__ = ("name", "uid", "resource_version", "conditions", "admission", "check_state", "requeue_count",
                 "requeue_at", "labels")

    def __init__(self, name: str, uid: str) -> None:
        self.name, self.uid, self.resource_version = name, uid, 0
        self.conditions: tuple[Condition, ...] = ()
        self.admission: tuple[str, int] | None = None
        self.check_state, self.requeue_count, self.requeue_at, self.labels = "", 0, 0, ()

    def but(self, **changes: Any) -> Workload:
        new = object.__new__(Workload)
        for slot in Workload.__slots__:
            object.__setattr__(new, slot, changes.get(slot, getattr(self, slot)))
        return new


class Condition:
    __slots__ = ("type", "status", "reason", "message", "time")

    def __init__(self, type_: str, status: str, reason: str, message: str, time_: int) -> None:
        self.type, self.status, self.reason, self.message, self.time = type_, status, reason, message, time_


class Event:
    __slots__ = ("type", "reason", "message", "name")

    def __init__(self, type_: str, reason: str, message: str, name: str) -> None:
        self.type, self.reason, self.message, self.name = type_, reason, message, name


def set_condition(conditions: tuple[Condition, ...], new: Condition) -> tuple[Condition, ...]:
    return tuple(c for c in conditions if c.type != new.type) + (new,)


class World:
    """Objects by key, workloads apart (the story's hot path), owners' dependents by uid."""

    def __init__(self, n: int) -> None:
        self.workloads = {f"wl-{i}": Workload(f"wl-{i}", f"wl-uid-{i:07d}") for i in range(n)}
        self.objects: dict[Key, Obj] = {}
        self.dependents: dict[str, list[Key]] = {}
        self.events: list[Event] = []
        self.metrics: Counter[tuple[str, str]] = Counter()
        for kind, name in (("ClusterQueue", "cq"), ("LocalQueue", "lq"), ("AdmissionCheck", CHECK)):
            self.objects[(kind, NS, name)] = Obj(kind, NS, name, name)
        self.uid = 0

    def update_workload(self, wl: Workload, **changes: Any) -> Workload:
        new = wl.but(resource_version=wl.resource_version + 1, **changes)
        self.workloads[wl.name] = new
        return new

    def create(self, kind: str, name: str, owner_uid: str) -> Obj:
        self.uid += 1
        obj = Obj(kind, NS, name, f"uid-{self.uid}", owner_uid)
        key = (kind, NS, name)
        self.objects[key] = obj
        self.dependents.setdefault(owner_uid, []).append(key)
        return obj

    def update(self, obj: Obj, **changes: Any) -> Obj:
        new = obj.but(resource_version=obj.resource_version + 1, **changes)
        key = (obj.kind, obj.namespace, obj.name)
        if "owner_uid" in changes:
            self.dependents.setdefault(changes["owner_uid"], []).append(key)
        self.objects[key] = new
        return new

    def outside_update(self, obj: Obj, **changes: Any) -> Obj:
        return self.update(obj, **changes)

    def delete(self, kind: str, name: str) -> None:
        """Deletes the object and, in cascade, what it owns."""
        obj = self.objects.pop((kind, NS, name))
        for key in self.dependents.pop(obj.uid, ()):
            self.objects.pop(key, None)

    def event(self, reason: str, message: str, name: str) -> None:
        self.events.append(Event("Normal", reason, message, name))

    def metric(self, name: str, queue: str) -> None:
        self.metrics[(name, queue)] += 1

    def fire(self, table: MachineTable[Any, Any], state: str, trigger: str,
             guards: Mapping[Guard, bool] | None = None) -> str:
        return str(table.fire(state, trigger, guards))

    def queue_status(self, pending: int, reserved: int, admitted: int) -> None:
        """The queues' counts as a settle leaves them, written when they differ (the model's
        queue status reconcilers run last in a settle)."""
        for kind, name in (("ClusterQueue", "cq"), ("LocalQueue", "lq")):
            queue = self.objects[(kind, NS, name)]
            if queue.status != (pending, reserved, admitted):
                self.update(queue, status=(pending, reserved, admitted))


class CountingWorld(World):
    """The same world, tallying each write as bench_core's model count names it."""

    def __init__(self, n: int) -> None:
        super().__init__(n)
        self.tally: Counter[tuple[str, str]] = Counter()

    def update_workload(self, wl: Workload, **changes: Any) -> Workload:
        self.tally[("Update", "Workload")] += 1
        return super().update_workload(wl, **changes)

    def create(self, kind: str, name: str, owner_uid: str) -> Obj:
        self.tally[("Create", kind)] += 1
        return super().create(kind, name, owner_uid)

    def update(self, obj: Obj, **changes: Any) -> Obj:
        self.tally[("Update", obj.kind)] += 1
        return super().update(obj, **changes)

    def outside_update(self, obj: Obj, **changes: Any) -> Obj:
        self.tally[("outside", "Update")] += 1
        return super().update(obj, **changes)

    def delete(self, kind: str, name: str) -> None:
        self.tally[("Delete", kind)] += 1
        super().delete(kind, name)

    def event(self, reason: str, message: str, name: str) -> None:
        self.tally[("Event", "")] += 1
        super().event(reason, message, name)

    def metric(self, name: str, queue: str) -> None:
        self.tally[("MetricInc", "")] += 1
        super().metric(name, queue)

    def fire(self, table: MachineTable[Any, Any], state: str, trigger: str,
             guards: Mapping[Guard, bool] | None = None) -> str:
        self.tally[("lookup", "")] += 1
        return super().fire(table, state, trigger, guards)


RESERVE = {Guard.ALL_CHECKS_READY: False, Guard.PREEMPTIONS_PENDING: False}
RELEASE = {Guard.DEACTIVATED: False, Guard.REQUEUED: False}


def reserve(w: World, now: int, attempt: int) -> None:
    """The scheduler's pass, then the provisioning controller's: quota, then a request."""
    for wl in list(w.workloads.values()):
        w.fire(WORKLOAD_MACHINE, WorkloadPhase.PENDING, WorkloadTrigger.RESERVE_QUOTA, RESERVE)
        wl = w.update_workload(wl, admission=("cq", 1), check_state="Pending", conditions=set_condition(
            wl.conditions, Condition("QuotaReserved", "True", "QuotaReserved", "Quota reserved in ClusterQueue cq",
                                     now)))
        w.event("QuotaReserved", "Quota reserved in ClusterQueue cq", wl.name)
    for wl in list(w.workloads.values()):
        w.fire(ADMISSION_CHECK_MACHINE, "Pending", CheckTrigger.NO_DECISION)
        pr_name = f"{wl.name}-{CHECK}-{attempt}"
        template = w.create("PodTemplate", f"ppt-{pr_name}-main", wl.uid)
        pr = w.create("ProvisioningRequest", pr_name, wl.uid)
        w.event("ProvisioningRequestCreated", f"Created ProvisioningRequest: {pr_name!r}", wl.name)
        w.update(template, owner_uid=pr.uid)  # the template handed over to its request
        if attempt > 1:
            w.fire(ADMISSION_CHECK_MACHINE, "Pending", CheckTrigger.NO_DECISION)
            w.update_workload(wl, check_state="Pending", requeue_at=0)


def first_settle(w: World, now: int) -> None:
    for wl in list(w.workloads.values()):  # the workload controller's, then the job's first pass
        wl = w.update_workload(wl, labels=(("kueue.x-k8s.io/queue-name", "lq"),))
        w.update_workload(wl, requeue_count=0)
    w.update(w.objects[("AdmissionCheck", NS, CHECK)], status=("Active",))
    reserve(w, now, 1)
    w.queue_status(0, len(w.workloads), 0)


def fail_settle(w: World, now: int) -> None:
    for wl in list(w.workloads.values()):
        w.fire(ADMISSION_CHECK_MACHINE, "Pending", CheckTrigger.REQUEST_FAILED,
               {Guard.WITHIN_BACKOFF_LIMIT: True, Guard.KEEP_QUOTA: False, Guard.NEWER_ATTEMPT: True})
        wl = w.update_workload(wl, check_state="Retry")
        w.event("AdmissionCheckUpdated", f"Admission check {CHECK} updated state from Pending to Retry", wl.name)
        w.fire(WORKLOAD_MACHINE, WorkloadPhase.QUOTA_RESERVED, WorkloadTrigger.DELAY)
        wl = w.update_workload(wl, requeue_at=now + 60)
        w.fire(WORKLOAD_MACHINE, WorkloadPhase.QUOTA_RESERVED, WorkloadTrigger.EVICT)
        w.fire(ADMISSION_CHECK_MACHINE, "Retry", CheckTrigger.RESET_ON_EVICTION)
        wl = w.update_workload(wl, check_state="Pending", conditions=set_condition(
            wl.conditions, Condition("Evicted", "True", "AdmissionCheck", "At least one admission check is false",
                                     now)))
        w.event("EvictedDueToAdmissionCheck", "At least one admission check is false", wl.name)
        w.metric("evicted_workloads_total", "cq")
        w.metric("evicted_workloads_once_total", "cq")
        w.delete("ProvisioningRequest", f"{wl.name}-{CHECK}-1")
        w.fire(WORKLOAD_MACHINE, WorkloadPhase.EVICTED, WorkloadTrigger.RELEASE_QUOTA, RELEASE)
        w.update_workload(wl, admission=None, requeue_count=wl.requeue_count + 1, conditions=set_condition(
            wl.conditions, Condition("QuotaReserved", "False", "Pending", "Evicted", now)))
    # (the model's workload keeps its quota through the backoff: the queues' counts do not move)


def retry_settle(w: World, now: int) -> None:
    for wl in list(w.workloads.values()):
        w.fire(WORKLOAD_MACHINE, WorkloadPhase.BACKOFF, WorkloadTrigger.REQUEUE, {Guard.BACKOFF: True})
        wl = w.update_workload(wl, conditions=set_condition(
            wl.conditions, Condition("Requeued", "True", "BackoffFinished", "", now)))
        w.fire(WORKLOAD_MACHINE, WorkloadPhase.BACKOFF, WorkloadTrigger.REQUEUE, {Guard.BACKOFF: False})
        w.update_workload(wl, conditions=tuple(c for c in wl.conditions if c.type != "Evicted"))
    reserve(w, now, 2)
    w.queue_status(0, len(w.workloads), 0)


def provisioned_settle(w: World, now: int) -> None:
    for wl in list(w.workloads.values()):
        w.fire(ADMISSION_CHECK_MACHINE, "Pending", CheckTrigger.PROVISIONED)
        wl = w.update_workload(wl, check_state="Ready")
        w.event("AdmissionCheckUpdated", f"Admission check {CHECK} updated state from Pending to Ready", wl.name)
        w.fire(WORKLOAD_MACHINE, WorkloadPhase.QUOTA_RESERVED, WorkloadTrigger.ADMIT)
        wl = w.update_workload(wl, conditions=set_condition(
            wl.conditions, Condition("Admitted", "True", "Admitted", "The workload is admitted", now)))
        w.event("Admitted", "Admitted by ClusterQueue cq", wl.name)
    w.queue_status(0, 0, len(w.workloads))


def autoscaler(w: World, attempt: int, reason: str) -> None:
    """Cluster Autoscaler's condition on every request of ``attempt``: outside the settles."""
    for key, obj in list(w.objects.items()):
        if key[0] == "ProvisioningRequest" and key[2].endswith(f"-{attempt}"):
            w.outside_update(obj, status=obj.status + (reason,))


def story(w: World) -> float:
    """The four settles on ``w``; returns the seconds they took.  The cyclic collector is paused
    during each, as ``Manager.settle`` pauses it during the model's: the ratio compares the
    writes, not how often the collector walks what is alive."""
    elapsed = 0.0
    for settle, now, outside in ((first_settle, T0, (1, "Failed")), (fail_settle, T0, None),
                                 (retry_settle, T0 + 60, (2, "Provisioned")), (provisioned_settle, T0 + 60, None)):
        collecting = gc.isenabled()
        gc.disable()
        t = time.perf_counter()
        try:
            settle(w, now)
        finally:
            elapsed += time.perf_counter() - t
            if collecting:
                gc.enable()
        if outside is not None:
            autoscaler(w, *outside)
    assert all(wl.check_state == "Ready" for wl in w.workloads.values())
    return elapsed


def run(n: int) -> float:
    return story(World(n))


def count(n: int) -> Counter[tuple[str, str]]:
    w = CountingWorld(n)
    story(w)
    return w.tally
