"""What a waiting workload waits for, and what happens next, in the words ``kubectl describe``
users expect: the ProvisioningRequest by name with its last condition, the attempt out of
the attempts the retry strategy allows and the backoff left, the place in the queue.

Read off one world at one time (``explain`` on a dump or a live cluster); every rule it
states comes from the model: the queue order of :mod:`~kueue_provreq.controllers.queues`, the
attempt numbering and backoff of the provisioning controller.  An edge module: it is given
the clock.
"""

from __future__ import annotations

import functools
from typing import Any

import attrs

from kueue_provreq.api import constants as c
from kueue_provreq.api import naming
from kueue_provreq.api.meta import Condition, Time
from kueue_provreq.api.objects import JOB_KINDS
from kueue_provreq.api.provisioning import ProvisioningRequest, ProvisioningRequestConfig
from kueue_provreq.api.queues import AdmissionCheck, ClusterQueue, LocalQueue
from kueue_provreq.api.workload import AdmissionCheckState, Workload
from kueue_provreq.controllers import activity, queues, workload_status
from kueue_provreq.controllers.backoff import nominal_delay_seconds
from kueue_provreq.controllers.context import Context
from kueue_provreq.machines import WorkloadPhase as P
from kueue_provreq.machines.phases import provisioning_request_phase, workload_phase
from kueue_provreq.manifests.codec import format_duration, format_time
from kueue_provreq.world import World


@attrs.frozen
class Record:
    """One thing a workload waits for: the object (its kind, ``namespace/name`` or name), the
    state it is in, since when, and what moves it next; ``text`` is the table's line."""

    kind: str
    object: str
    reason: str
    text: str
    since: Time | None = None
    next: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "object": self.object, "reason": self.reason,
                "since": None if self.since is None else format_time(self.since), "next": self.next}


@attrs.frozen
class Wait:
    """One waiting workload: what it waits for, and what happens next."""

    workload: str
    job: str | None
    """The job that owns the workload, ``namespace/name``."""
    waits_for: tuple[Record, ...]
    next: tuple[str, ...]
    job_kind: str = c.JOB

    def lines(self) -> list[str]:
        head = f"workload {self.workload}" + (f" ({self.job_kind} {self.job})" if self.job else "")
        return [head, *(f"  {w.text}" for w in self.waits_for), *(f"  next: {n}" for n in self.next)]

    def to_json(self) -> dict[str, Any]:
        """``waitsFor`` as records (kind, object, reason, since, next), the last of each
        check's or the queue's records carrying its next step."""
        return {"workload": self.workload, "job": self.job, "jobKind": self.job_kind if self.job else None,
                "waitsFor": [w.to_json() for w in self.waits_for]}


def relative(now: Time, t: Time) -> str:
    """``t`` from ``now``, as ``kubectl describe`` says it: ``5m ago``, ``in 30s``, ``just now``;
    past two days in days and hours (``8d0h ago``), as kubectl's ages are.

    >>> relative(Time(0), Time(-90)), relative(Time(0), Time(3 * 86400 + 3600)), relative(Time(0), Time(0))
    ('1m30s ago', 'in 3d1h', 'just now')
    """
    if t == now:
        return "just now"
    span = _span(abs(t - now))
    return f"in {span}" if t > now else f"{span} ago"


#: Past this, an age is said in days and hours.
DAYS_AFTER_SECONDS = 48 * 3600


def _span(seconds: int) -> str:
    if seconds <= DAYS_AFTER_SECONDS:
        return format_duration(seconds)
    days, rest = divmod(seconds, 86400)
    return f"{days}d{rest // 3600}h"


def retry_due(s: AdmissionCheckState, requeue_at: Time | None) -> Time | None:
    """When a check in Retry has its workload evicted and requeued: its ``lastTransitionTime
    + requeueAfterSeconds``, or the workload's ``requeueState.requeueAt`` when that is later
    (AR A.7, KEP-3258); None for a check not in Retry, or with neither time."""
    if s.state != c.CHECK_RETRY:
        return None
    base = s.last_transition_time
    due = base + (s.requeue_after_seconds or 0) if base is not None else None
    if requeue_at is not None and (due is None or requeue_at > due):
        due = requeue_at
    return None if due is None else Time(due)


def _last_condition(pr: ProvisioningRequest) -> Condition | None:
    """The condition Cluster Autoscaler wrote last (latest transition; the later in the list on a tie)."""
    found: Condition | None = None
    for cd in pr.status.conditions:
        if found is None or (cd.last_transition_time or 0) >= (found.last_transition_time or 0):
            found = cd
    return found


def _job_of(wl: Workload) -> tuple[str | None, str]:
    """The owning job (a Job, JobSet or PyTorchJob) as ``namespace/name``, and its kind."""
    ref = next((r for r in wl.metadata.owner_references if r.kind in JOB_KINDS), None)
    return (f"{wl.metadata.namespace}/{ref.name}", ref.kind) if ref is not None else (None, c.JOB)


def _config(world: World, check: str) -> ProvisioningRequestConfig | None:
    ac = world.get(c.ADMISSION_CHECK, "", check)
    if not isinstance(ac, AdmissionCheck) or ac.spec.controller_name != c.PROVISIONING_REQUEST_CONTROLLER_NAME:
        return None
    ref = ac.spec.parameters
    prc = world.get(c.PROVISIONING_REQUEST_CONFIG, "", ref.name) if ref is not None else None
    return prc if isinstance(prc, ProvisioningRequestConfig) else None


def requests_by_attempt(world: World, wl: Workload, check: str) -> list[tuple[int, ProvisioningRequest]]:
    """(attempt, request) for each request of ``wl``'s ``check``, oldest attempt first, found as
    the provisioning controller finds them (PC §1.5-§1.7): through the owner-name index, named
    ``<workload>-<check>-<n>``."""
    found = []
    for pr in world.owned_by_name(c.PROVISIONING_REQUEST, wl.metadata.namespace, wl.metadata.name):
        n = naming.attempt_of(pr.metadata.name, wl.metadata.name, check)
        if n is not None and isinstance(pr, ProvisioningRequest):
            found.append((n, pr))
    return sorted(found, key=lambda t: t[0])


def _newest_request(world: World, wl: Workload, check: str) -> tuple[int, ProvisioningRequest] | None:
    found = requests_by_attempt(world, wl, check)
    return found[-1] if found else None


def _request_line(newest: tuple[int, ProvisioningRequest], check: str, attempts: int, now: Time) -> Record:
    n, pr = newest
    cond = _last_condition(pr)
    state = "no condition yet" if cond is None else f"{cond.type}={cond.status} ({cond.reason}: {cond.message})"
    since = cond.last_transition_time if cond is not None else pr.metadata.creation_timestamp
    said = state + (f", {relative(now, cond.last_transition_time)}"
                    if cond is not None and cond.last_transition_time is not None else "")
    where = f"{pr.metadata.namespace}/{pr.metadata.name}"
    return Record(c.PROVISIONING_REQUEST, where, f"attempt {n} of {attempts} for check {check}: {state}",
                  f"ProvisioningRequest {where} (check {check}, attempt {n} of {attempts}): {said}", since)


def _said(kind: str, obj: str, reason: str, text: str, since: Time | None = None) -> Record:
    return Record(kind, obj, reason, text, since)


def _check(world: World, wl: Workload, st: AdmissionCheckState, now: Time) -> tuple[list[Record], list[str]]:
    """(waits for, next) for one check that is not Ready."""
    prc = _config(world, st.name)
    since = st.last_transition_time
    if prc is None:
        reason = st.state + (f": {st.message}" if st.message else "")
        return [_said(c.ADMISSION_CHECK, st.name, reason,
                      f"check {st.name} ({st.state})" + (f": {st.message}" if st.message else ""), since)], []
    rs = prc.spec.retry_strategy
    attempts = rs.backoff_limit_count + 1
    newest = _newest_request(world, wl, st.name)
    if st.state == c.CHECK_RETRY:
        req = wl.status.requeue_state
        due = retry_due(st, req.requeue_at if req is not None else None)
        n = (st.retry_count or 0) + 1
        said = f"Retry: {st.message}" if st.message else "Retry"
        waits = [_said(c.ADMISSION_CHECK, st.name, said, f"check {st.name} {said}", since)]
        if newest is not None:
            waits.append(_request_line(newest, st.name, attempts, now))
        when = f"at {format_time(due)} ({relative(now, due)})" if due is not None else "now"
        return waits, [f"evicted {when} to release its quota, then queued again; attempt {n + 1} of "
                       f"{attempts} once quota is reserved again"]
    if st.state == c.CHECK_REJECTED:
        return [_said(c.ADMISSION_CHECK, st.name, f"Rejected: {st.message}", f"check {st.name} Rejected: {st.message}",
                      since)], ["deactivated (spec.active=false) and evicted"]
    if newest is None:
        n = (st.retry_count or 0) + 1
        name = naming.provisioning_request_name(wl.metadata.name, st.name, n)
        return ([_said(c.ADMISSION_CHECK, st.name, "no ProvisioningRequest yet",
                       f"check {st.name}: no ProvisioningRequest yet", since)],
                [f"the provisioning controller creates {wl.metadata.namespace}/{name} "
                 f"(attempt {n} of {attempts})"])
    n, pr = newest
    waits = [_request_line(newest, st.name, attempts, now)]
    phase = provisioning_request_phase(pr)
    if phase == c.PR_PROVISIONED:
        return waits, [f"check {st.name} turns Ready on the provisioning controller's next reconcile"]
    if n > rs.backoff_limit_count:
        fail = f"Failed=True rejects check {st.name}: it was the last attempt and the workload is deactivated"
    else:
        delay = nominal_delay_seconds((st.retry_count or 0) + 1, rs.backoff_base_seconds, rs.backoff_max_seconds)
        fail = f"Failed=True puts check {st.name} in Retry: attempt {n + 1} of {attempts} after a " \
               f"{format_duration(delay)} backoff"
    who = "Cluster Autoscaler" if pr.spec.provisioning_class_name in c.CA_CLASSES else \
        f"the provisioner of class {pr.spec.provisioning_class_name}"
    return waits, [f"{who} answers: Provisioned=True makes check {st.name} Ready; {fail}"]


Positions = dict[str, dict[tuple[str, str], int]]


def _queued(world: World, wl: Workload, ctx: Context, found: queues.Scan,
            positions: Positions) -> tuple[list[Record], list[str]]:
    """(waits for, next) for a workload without quota."""
    ns = wl.metadata.namespace
    label = f"{ns}/{wl.metadata.name}"
    if not wl.spec.queue_name:
        return [_said(c.WORKLOAD, label, "spec.queueName is empty", "a queue: spec.queueName is empty")], []
    gates = workload_status.admission_gates(wl, ctx.config)
    if gates is not None:
        return [_said(c.WORKLOAD, label, f"admission gates: {gates}",
                      f"its admission gates to be removed ({c.ANNOTATION_ADMISSION_GATED_BY}: {gates})")], \
            ["queued once the annotation is removed or empty"]
    cq_name = queues.cluster_queue_name(world, wl)
    if cq_name is None:
        return [_said(c.LOCAL_QUEUE, f"{ns}/{wl.spec.queue_name}", "does not exist",
                      f"LocalQueue {ns}/{wl.spec.queue_name}, which does not exist")], []
    lq = world.get(c.LOCAL_QUEUE, ns, wl.spec.queue_name)
    if isinstance(lq, LocalQueue) and lq.spec.stopped:
        return [_said(c.LOCAL_QUEUE, f"{ns}/{wl.spec.queue_name}", f"stopPolicy {lq.spec.stop_policy}",
                      f"LocalQueue {ns}/{wl.spec.queue_name} to run again (stopPolicy {lq.spec.stop_policy})")], \
            ["queued once its stopPolicy is None"]
    cq = world.get(c.CLUSTER_QUEUE, "", cq_name)
    if not isinstance(cq, ClusterQueue):
        return [_said(c.CLUSTER_QUEUE, cq_name, "does not exist", f"ClusterQueue {cq_name}, which does not exist")], []
    problem = activity.inactive_reason(world, cq)
    if problem is not None:
        return [_said(c.CLUSTER_QUEUE, cq_name, f"inactive: {problem[1]}",
                      f"ClusterQueue {cq_name} to become active: {problem[1]}")], []
    if queues.in_backoff(wl, ctx.now):
        rs = wl.status.requeue_state
        at = rs.requeue_at if rs is not None else None
        when = f" at {format_time(at)} ({relative(ctx.now, at)})" if at is not None else ""
        return [_said(c.WORKLOAD, label, "in backoff" + (f" until {format_time(at)}" if at is not None else ""),
                      f"its backoff to end{when}")], [f"back in ClusterQueue {cq_name}'s queue"]
    ready = found.ready.get(cq_name, [])
    if cq_name not in positions:
        positions[cq_name] = {(o.metadata.namespace, o.metadata.name): i for i, o in enumerate(ready, 1)}
    place = positions[cq_name].get((ns, wl.metadata.name))
    where = f"position {place} of {len(ready)} in ClusterQueue {cq_name}" if place is not None \
        else f"ClusterQueue {cq_name}"
    verdict = wl.condition(c.WORKLOAD_QUOTA_RESERVED)
    why = f"; last try: {verdict.message}" if verdict is not None and verdict.status == c.FALSE and verdict.message \
        else ""
    return [_said(c.CLUSTER_QUEUE, cq_name, f"quota: {where}{why}", f"quota: {where}{why}",
                  verdict.last_transition_time if verdict is not None else None)], \
        ["the scheduler reserves quota once the podSets fit, then the admission checks run"]


def _all_ready(wl: Workload, ctx: Context) -> str:
    """What a reservation whose checks are all Ready waits for: the workload controller, or
    under KEP-993 the scheduler, once the workloads it preempts have released their quota."""
    if not ctx.config.kep_993_preemption:
        return "the workload controller to set Admitted (every check is Ready)"
    verdict = wl.condition(c.WORKLOAD_ADMITTED)
    why = f": {verdict.message}" if verdict is not None and verdict.status == c.FALSE and \
        verdict.reason == c.REASON_WAITING_FOR_PREEMPTED_WORKLOADS and verdict.message else ""
    return f"the scheduler to set Admitted once the workload fits beside what may still run (KEP-993){why}"


def _add(waits_for: list[Record], nexts: list[str], records: list[Record], steps: list[str]) -> None:
    """One group (a check's, the queue's) of records and next steps; its last record carries them."""
    if records and steps:
        records[-1] = attrs.evolve(records[-1], next="; ".join(steps))
    waits_for.extend(records)
    nexts.extend(steps)


def waits(world: World, ctx: Context) -> list[Wait]:
    """One :class:`Wait` per workload that is neither admitted nor finished."""
    found = queues.scan(world, ctx)
    positions: Positions = {}
    out = []
    for obj in world.objects(c.WORKLOAD):
        if not isinstance(obj, Workload):
            continue
        wl = obj
        phase = workload_phase(wl)
        label = f"{wl.metadata.namespace}/{wl.metadata.name}"
        if phase in (P.ADMITTED, P.FINISHED):
            continue
        waits_for: list[Record] = []
        nexts: list[str] = []
        add = functools.partial(_add, waits_for, nexts)

        if phase == P.INACTIVE:
            add([_said(c.WORKLOAD, label, "spec.active is false", "reactivation: spec.active is false")], [])
        elif phase == P.EVICTED:
            ev = wl.condition(c.WORKLOAD_EVICTED)
            add([_said(c.WORKLOAD, label, f"evicted ({ev.reason}: {ev.message})" if ev else "evicted",
                       f"its eviction to finish ({ev.reason}: {ev.message})" if ev else "its eviction",
                       ev.last_transition_time if ev else None)],
                ["the job integration stops the job and releases the quota; then it is queued again"])
        elif phase == P.QUOTA_RESERVED:
            for st in wl.status.admission_checks:
                if st.state != c.CHECK_READY:
                    add(*_check(world, wl, st, ctx.now))
            if not waits_for:
                text = _all_ready(wl, ctx)
                add([_said(c.WORKLOAD, label, "every check is Ready", text)], [])
        else:
            add(*_queued(world, wl, ctx, found, positions))
        job, kind = _job_of(wl)
        out.append(Wait(label, job, tuple(waits_for), tuple(nexts), kind))
    return out
