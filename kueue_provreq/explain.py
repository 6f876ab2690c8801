"""``kueue-provreq explain``: what each controller would do next to a set of manifests, and why.

An edge module (it is given the clock by the CLI, which may read it).  The answer comes from
the model itself, not from a second copy of the rules: every controller's ``reconcile`` runs
once, on its own copy of a World built from the manifests, and its Result is described.  A
short rule-based reading of the workload, check and request states is added beside it, so
that a platform engineer sees the reason as well as the effect.

Jobs (batch/v1 Job, JobSet, PyTorchJob) become Workloads the way a cluster makes them: each is
created as the API server stores it, through Kueue's job webhook (the default LocalQueue, created
suspended: :func:`kueue_provreq.controllers.job.defaulted`; a job with a uid, as a dump holds
it, is stored already and taken as it is), and the job reconciler of the model
(:mod:`kueue_provreq.controllers.job`) creates the Workload of every job that has none yet, as
Kueue does the moment the job exists.  The Workload is named as upstream names it
(:func:`kueue_provreq.api.naming.workload_name_for_owner`: ``job-<name>-<hash>`` for a Job); a
job given only ``generateName`` is named by the loader
(:func:`~kueue_provreq.api.naming.generated_name`, one name per object; objects built in
code get the first name of their prefix the world does not hold yet).  A Workload already among the manifests for a job
(its owner reference names the job, as in a cluster dump) is used as it is.  Every job is
reported too: the Workload that stands for it, or why Kueue does not manage it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from kueue_provreq.api import constants as c
from kueue_provreq.api import naming
from kueue_provreq.api.config import Configuration
from kueue_provreq.api.job import Job, JobSet, PyTorchJob
from kueue_provreq.api.meta import Conditions, Time, TimeLike, find_condition, is_true
from kueue_provreq.api.objects import JOB_KINDS, JobObject, KubeObject
from kueue_provreq.api.provisioning import (
    ProvisioningRequest,
    ProvisioningRequestConfig,
)
from kueue_provreq.api.queues import AdmissionCheck, LocalQueue
from kueue_provreq.api.workload import AdmissionCheckState, Workload
from kueue_provreq.audit import Finding as AuditFinding
from kueue_provreq.audit import audit, settle_status
from kueue_provreq.controllers import job, provisioning, queues, registry, scheduler
from kueue_provreq.controllers.backoff import check_requeue_after_seconds
from kueue_provreq.controllers.context import Context
from kueue_provreq.controllers.integrations import integration_of
from kueue_provreq.engine import SCHEDULER, Manager
from kueue_provreq.machines import Actor, CheckTrigger, requests
from kueue_provreq.machines import WorkloadPhase as P
from kueue_provreq.machines.phases import workload_phase
from kueue_provreq.manifests.codec import format_duration, format_time
from kueue_provreq.timestamps import to_time
from kueue_provreq.waits import Wait, requests_by_attempt, waits
from kueue_provreq.world import Create, Delete, Effect, Event, MetricInc, Result, Update, World
from kueue_provreq.world_builder import build_world

# --- the world ------------------------------------------------------------------------------


def _create_workloads(manager: Manager, ctx: Context) -> None:
    """What Kueue does the moment a job exists: the job reconcile of every job without a Workload."""
    world = manager.world
    for kind in JOB_KINDS:
        for key in world.keys(kind):
            found = world.get(*key)
            if isinstance(found, (Job, JobSet, PyTorchJob)) and job.workload_of(world, found) is None:
                manager.reconcile(Actor.JOB, key, ctx)


# --- the report ------------------------------------------------------------------------------


@attrs.frozen
class Action:
    """What one reconcile of one object would do."""

    controller: str = attrs.field(converter=str)
    object: str
    effects: tuple[str, ...]
    requeue_after: float | None = None
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"controller": self.controller, "object": self.object,
                               "effects": list(self.effects)}
        if self.requeue_after is not None:
            out["requeueAfter"] = format_duration(self.requeue_after)
        if self.error is not None:
            out["error"] = self.error
        return out


@attrs.frozen
class Finding:
    """Where one object stands and the rule that puts it there."""

    subject: str
    state: str = attrs.field(converter=str)
    """A plain string (a phase or a check state), as YAML and JSON print it."""
    why: str

    def line(self) -> str:
        return f"{self.subject} is {self.state}: {self.why}"


@attrs.frozen
class Report:
    at: Time
    findings: tuple[Finding, ...]
    actions: tuple[Action, ...]
    waits: tuple[Wait, ...] = ()
    clock: str = ""
    """Where ``at`` came from, said beside it (``--at``, the inputs' newest time, the current time)."""
    flagged: tuple[AuditFinding, ...] = ()
    """What ``audit`` finds in the same objects: one voice for both commands."""

    def to_json(self) -> dict[str, Any]:
        return {"at": format_time(self.at), **({"clock": self.clock} if self.clock else {}),
                **({"audit": [f.to_json() for f in self.flagged]} if self.flagged else {}),
                "state": self._state_json(),
                "waits": [w.to_json() for w in self.waits],
                "next": [a.to_json() for a in self.actions]}

    def _state_json(self) -> list[dict[str, Any]]:
        """Each finding; a check's under the workload it belongs to (``checks``)."""
        out: list[dict[str, Any]] = []
        for f in self.findings:
            entry = {"subject": f.subject, "state": f.state, "why": f.why}
            if f.subject.startswith("check ") and out and "checks" in out[-1]:
                out[-1]["checks"].append(entry)
            else:
                out.append({**entry, "checks": []} if f.subject.startswith("workload ") else entry)
        return out

    def table(self) -> str:
        lines = [f"at {format_time(self.at)}" + (f" ({self.clock})" if self.clock else ""), "", "STATE"]
        lines += [f"  {f.line()}" for f in self.findings] or ["  (no workloads)"]
        if self.waits:
            lines += ["", "WAITS FOR"]
            lines += [f"  {line}" for w in self.waits for line in w.lines()]
        if self.flagged:
            lines += ["", "AUDIT (as kueue-provreq audit finds it)"]
            lines += [f"  {f.line()}" for f in self.flagged]
        lines += ["", "NEXT"]
        for a in self.actions:
            tail = [f"requeue after {format_duration(a.requeue_after)}"] if a.requeue_after is not None else []
            tail += [f"error: {a.error}"] if a.error is not None else []
            # "scheduler cycle", else "workload controller, Workload ns/name": no word said twice
            lines.append(f"  {a.controller} {a.object}:" if a.controller == SCHEDULER
                         else f"  {a.controller} controller, {a.object}:")
            lines += [f"    {text}" for text in (*a.effects, *tail)]
        if not self.actions:
            lines.append("  nothing: every controller is settled")
        return "\n".join(lines) + "\n"


def _name(kind: str, namespace: str, name: str) -> str:
    return f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"


def _conditions(obj: KubeObject | None) -> Conditions:
    status = getattr(obj, "status", None)
    found: Conditions = getattr(status, "conditions", ())
    return found


def _describe_update(old: KubeObject | None, new: KubeObject) -> list[str]:
    where = _name(new.KIND, new.metadata.namespace, new.metadata.name)
    out = []
    old_conds = {cd.type: cd for cd in _conditions(old)}
    for cd in _conditions(new):
        prev = old_conds.get(cd.type)
        if prev is None or (prev.status, prev.reason, prev.message) != (cd.status, cd.reason, cd.message):
            out.append(f"set {where} condition {cd.type}={cd.status} ({cd.reason}: {cd.message})")
    if isinstance(old, (Job, JobSet, PyTorchJob)) and isinstance(new, (Job, JobSet, PyTorchJob)):
        return _describe_job_update(old, new, where) or [f"update {where}"]
    if not isinstance(old, Workload) or not isinstance(new, Workload):
        return out or [f"update {where}"]
    before, after = workload_phase(old), workload_phase(new)
    if before != after:
        out.insert(0, f"move {where} {before} -> {after}")
    old_checks = {s.name: s for s in old.status.admission_checks}
    for s in new.status.admission_checks:
        prev_check = old_checks.get(s.name)
        if prev_check is None or (prev_check.state, prev_check.message) != (s.state, s.message):
            was = f"{prev_check.state} -> " if prev_check is not None else ""
            out.append(f"set check {s.name} {was}{s.state}" + (f" ({s.message})" if s.message else ""))
    if old.spec.active != new.spec.active:
        out.append(f"set {where} spec.active={str(new.is_active).lower()}")
    if new.status.admission is not None and new.status.admission != old.status.admission:
        counts = {ps.name: ps.count for ps in new.spec.pod_sets}
        out.append(f"assign {where} in ClusterQueue {new.status.admission.cluster_queue}: " + ", ".join(
            f"podSet {psa.name} {_admitted(psa.count, counts.get(psa.name))} on "
            + ", ".join(f"{r}: {f}" for r, f in psa.flavors.items())
            for psa in new.status.admission.pod_set_assignments))
    return out or [f"update {where}"]


def _admitted(count: int | None, asked: int | None) -> str:
    if count is None or asked is None or count == asked:
        return f"{count if count is not None else asked} pods"
    return f"{count} of {asked} pods (partial admission)"


def _describe_job_update(old: JobObject, new: JobObject, where: str) -> list[str]:
    integration = integration_of(new)
    out = []
    if integration.is_suspended(old) != integration.is_suspended(new):
        out.append(f"{'suspend' if integration.is_suspended(new) else 'start'} {where}")
    if isinstance(old, Job) and isinstance(new, Job):
        for field in ("parallelism", "completions"):
            if getattr(old.spec, field) != getattr(new.spec, field):
                out.append(f"set {where} spec.{field}={getattr(new.spec, field)}")
    changed = [i for i, (a, b) in enumerate(zip(integration.templates(old), integration.templates(new), strict=False)) if a != b]
    if changed:
        names = [ps.name for ps in integration.pod_sets(new)]
        out.append(f"set the pod template{'s' * (len(changed) > 1)} of {', '.join(names[i] for i in changed)} "
                   "(node selector, tolerations, labels, annotations)")
    return out


def describe_effect(world: World, effect: Effect) -> list[str]:
    """One line per visible change an effect makes, read against ``world`` before it."""
    if isinstance(effect, Create):
        obj = effect.obj
        where = _name(obj.KIND, obj.metadata.namespace, obj.metadata.name)
        if isinstance(obj, ProvisioningRequest):
            count = sum(p.count for p in obj.spec.pod_sets)
            return [f"create {where} (class {obj.spec.provisioning_class_name}, {count} pods)"]
        return [f"create {where}"]
    if isinstance(effect, Update):
        obj = effect.obj
        return _describe_update(world.get(obj.KIND, obj.metadata.namespace, obj.metadata.name), obj)
    if isinstance(effect, Delete):
        return [f"delete {_name(effect.kind, effect.namespace, effect.name)}"]
    if isinstance(effect, Event):
        return [f"event {effect.type} {effect.reason}: {effect.message}"]
    assert isinstance(effect, MetricInc)
    labels = ",".join(f"{k}={v}" for k, v in effect.labels.items())
    return [f"metric {effect.name}{{{labels}}} +{effect.value:g}"]


def _action(world: World, controller: str, label: str, result: Result) -> Action | None:
    effects = [line for e in result.effects for line in describe_effect(world, e)]
    if not effects and result.requeue_after is None and result.error is None:
        return None
    return Action(controller, label, tuple(effects), result.requeue_after, result.error)


def next_actions(world: World, ctx: Context) -> list[Action]:
    """Each controller's reconcile of each of its objects, once, on a private copy of ``world``."""
    actions = []
    result = scheduler.schedule(world.copy(), ctx)
    found = _action(world, SCHEDULER, "cycle", result)
    if found is not None:
        actions.append(found)
    scratch = world.copy()  # one for every reconcile: a reconcile returns its effects, it writes nothing
    for ctl in registry.CONTROLLERS:
        for key in ctl.keys(world):
            found = _action(world, ctl.name, _name(*key), ctl.reconcile(scratch, key, ctx))
            if found is not None:
                actions.append(found)
    return actions


# --- the rules, read off the state -------------------------------------------------------------


def _workload_finding(world: World, wl: Workload, now: Time, config: Configuration) -> Finding:
    subject = f"workload {wl.metadata.namespace}/{wl.metadata.name}"
    phase = workload_phase(wl)
    if phase in (P.PENDING, P.BACKOFF):
        rs = wl.status.requeue_state
        if phase == P.BACKOFF and rs is not None and rs.requeue_at is not None and rs.requeue_at > now:
            return Finding(subject, phase, f"requeued after a failed attempt; back in the queue at "
                                           f"{format_time(rs.requeue_at)} (in {rs.requeue_at - now}s)")
        if not wl.spec.queue_name:
            return Finding(subject, phase, f"no spec.queueName (a job sets it with label "
                                           f"{c.LABEL_QUEUE_NAME}), so no queue admits it until its job "
                                           "is given one")
        cq = queues.cluster_queue_name(world, wl)
        if cq is None:
            return Finding(subject, phase, f"LocalQueue {wl.metadata.namespace}/{wl.spec.queue_name} "
                                           "does not exist")
        held = _local_queue_held(world, wl)
        if held is not None:
            return Finding(subject, phase, held)
        if world.get(c.CLUSTER_QUEUE, "", cq) is None:
            return Finding(subject, phase, f"ClusterQueue {cq} (of LocalQueue {wl.spec.queue_name}) "
                                           "does not exist")
        partial = [f"{ps.name} {ps.min_count}" for ps in wl.spec.pod_sets
                   if ps.min_count is not None and ps.min_count < ps.count]
        fewer = f", or with fewer pods, down to minCount ({', '.join(partial)}; partial admission)" \
            if partial and config.gate(c.GATE_PARTIAL_ADMISSION) else ""
        return Finding(subject, phase, f"queued in LocalQueue {wl.spec.queue_name} -> ClusterQueue {cq}; "
                                       f"the scheduler reserves quota when the podSets fit{fewer}")
    if phase == P.QUOTA_RESERVED:
        waiting = [f"{s.name} ({s.state})" for s in wl.status.admission_checks if s.state != c.CHECK_READY]
        cq = wl.status.admission.cluster_queue if wl.status.admission else "?"
        return Finding(subject, phase, f"quota reserved in ClusterQueue {cq}; admitted once every "
                                       f"admission check is Ready (waiting for: {', '.join(waiting) or 'none'})")
    cond = {P.ADMITTED: c.WORKLOAD_ADMITTED, P.EVICTED: c.WORKLOAD_EVICTED,
            P.FINISHED: c.WORKLOAD_FINISHED}.get(phase)
    found = wl.condition(cond) if cond else None
    if phase == P.INACTIVE:
        return Finding(subject, phase, "spec.active is false: it is not queued until reactivated")
    if found is not None:
        return Finding(subject, phase, f"{found.type}={found.status} ({found.reason}: {found.message})")
    return Finding(subject, phase, "")


def _local_queue_held(world: World, wl: Workload) -> str | None:
    """Why the workload's LocalQueue holds it back, if it does: stopped or being deleted, with
    what its status says (the LocalQueue controller's ``Active`` condition and counts)."""
    lq = world.get(c.LOCAL_QUEUE, wl.metadata.namespace, wl.spec.queue_name)
    if not isinstance(lq, LocalQueue) or not (lq.spec.stopped or lq.metadata.terminating):
        return None
    name = f"LocalQueue {wl.metadata.namespace}/{wl.spec.queue_name}"
    why = f"is stopped (stopPolicy {lq.spec.stop_policy})" if lq.spec.stopped else "is being deleted"
    active = find_condition(lq.status.conditions, c.LQ_ACTIVE)
    said = f"; its status says Active={active.status} ({active.reason}: {active.message})" \
        if active is not None else ""
    counts = lq.status
    held = f", {counts.reserving_workloads} of its workloads hold quota ({counts.admitted_workloads} admitted)" \
        if counts.reserving_workloads is not None and counts.admitted_workloads is not None else ""
    return f"{name} {why}: not queued until it runs again{said}{held}"


def _config(world: World, check: str) -> tuple[AdmissionCheck | None, ProvisioningRequestConfig | None]:
    ac = world.get(c.ADMISSION_CHECK, "", check)
    if not isinstance(ac, AdmissionCheck):
        return None, None
    ref = ac.spec.parameters
    prc = world.get(c.PROVISIONING_REQUEST_CONFIG, "", ref.name) if ref is not None else None
    return ac, prc if isinstance(prc, ProvisioningRequestConfig) else None


def _check_finding(world: World, wl: Workload, st: AdmissionCheckState, now: Time) -> Finding:
    subject = f"check {st.name}"
    ac, prc = _config(world, st.name)
    if ac is None:
        return Finding(subject, st.state, f"AdmissionCheck {st.name} does not exist")
    if ac.spec.controller_name != c.PROVISIONING_REQUEST_CONTROLLER_NAME:
        return Finding(subject, st.state, f"managed by controller {ac.spec.controller_name}, which this "
                                          "model does not run")
    if prc is None:
        return Finding(subject, st.state, "its ProvisioningRequestConfig is missing, so the check is inactive")
    attempts = requests_by_attempt(world, wl, st.name)
    if not attempts:
        if not wl.has_quota_reservation():
            return Finding(subject, st.state, "a ProvisioningRequest is created once the workload "
                                              "reserves quota")
        name = naming.provisioning_request_name(wl.metadata.name, st.name, (st.retry_count or 0) + 1)
        return Finding(subject, st.state, f"no request yet: the provisioning controller creates {name} "
                                          "unless no podSet uses the managed resources")
    attempt, pr = attempts[-1]
    found = requests.deciding(pr.status.conditions)
    if found is None:
        return Finding(subject, st.state, f"request {pr.metadata.name} is new: waiting for Cluster Autoscaler "
                                          f"(class {pr.spec.provisioning_class_name})")
    row, cond = found
    base = f"request {pr.metadata.name} {row.condition}"
    if not row.applies(wl.is_admitted(), wl.is_active):
        why = "already admitted" if not row.while_admitted and wl.is_admitted() else "deactivated"
        return Finding(subject, st.state, f"{base}: ignored, the workload is {why}")
    if row.ends_attempt:
        return Finding(subject, st.state, f"{base}: {_retry_plan(st, attempt, prc, now)}")
    if row.check_trigger == CheckTrigger.CAPACITY_REVOKED:
        return Finding(subject, st.state, f"{base}: the check is Rejected and a running workload evicted "
                                          "and deactivated")
    if row.check_trigger == CheckTrigger.PROVISIONED:
        return Finding(subject, st.state, f"{base}: capacity booked; the check is Ready and its pods get "
                                          "the consume-provisioning-request annotations")
    detail = next((cd for cd in pr.status.conditions if cd.type == row.message_from), None) \
        if row.message_from else None
    if detail is not None:
        return Finding(subject, st.state, f"{base}, waiting for capacity: {detail.message}")
    return Finding(subject, st.state, f"{base}: waiting for Cluster Autoscaler "
                                      f"(class {pr.spec.provisioning_class_name})")


def _retry_plan(st: AdmissionCheckState, attempt: int, prc: ProvisioningRequestConfig, now: Time) -> str:
    """What follows a failed attempt, in the words of ``retryStrategy``: backoffLimitCount counts
    retries, so a limit L allows L + 1 attempts."""
    rs = prc.spec.retry_strategy
    allowed = rs.backoff_limit_count + 1
    if attempt > rs.backoff_limit_count:
        return (f"attempt {attempt} of {allowed} allowed (backoffLimitCount {rs.backoff_limit_count}) failed, "
                "so the check is Rejected and the workload deactivated")
    plan = f"attempt {attempt} of {allowed} failed; retry {attempt} of {rs.backoff_limit_count}"
    if st.state == c.CHECK_RETRY and st.requeue_after_seconds is not None and st.last_transition_time is not None:
        due = st.last_transition_time + st.requeue_after_seconds
        if due > now:
            return f"{plan} at {format_time(Time(due))} (in {format_duration(due - now)})"
        return f"{plan}: its {format_duration(st.requeue_after_seconds)} backoff is over"
    delay = check_requeue_after_seconds(st.retry_count, rs.backoff_base_seconds, rs.backoff_max_seconds,
                                        lambda: 0.0)
    return f"{plan} after a {format_duration(delay)} backoff"


def _active_finding(world: World, obj: KubeObject) -> Finding:
    """ClusterQueues and AdmissionChecks admit nothing until their controller marks them Active;
    an AdmissionCheck is also said for what it is (:func:`_check_kind`)."""
    subject = f"{obj.KIND} {obj.metadata.name}"
    conds = _conditions(obj)
    active = next((cd for cd in conds if cd.type == c.CQ_ACTIVE), None)
    what = _check_kind(world, obj) if isinstance(obj, AdmissionCheck) else ""
    if active is None:
        return Finding(subject, "not yet Active", "no Active condition: its controller sets one on "
                                                  f"its next reconcile (see NEXT){what}")
    state = "Active" if is_true(conds, c.CQ_ACTIVE) else "inactive"
    return Finding(subject, state, f"{active.reason}: {active.message}{what}")


def _check_kind(world: World, ac: AdmissionCheck) -> str:
    """``; the provisioning check: ...`` -- so that a reader of a setup learns that its jobs
    wait on a ProvisioningRequest, of which class, retried how."""
    if ac.spec.controller_name != c.PROVISIONING_REQUEST_CONTROLLER_NAME:
        return f"; a check of controller {ac.spec.controller_name}, which the model does not run"
    _, prc = _config(world, ac.metadata.name)
    if prc is None:
        return "; the provisioning check, without its ProvisioningRequestConfig"
    rs = prc.spec.retry_strategy
    return (f"; the provisioning check: each workload waits on a ProvisioningRequest of class "
            f"{prc.spec.provisioning_class_name} (ProvisioningRequestConfig {prc.metadata.name}: "
            f"{rs.backoff_limit_count + 1} attempts, backoff {format_duration(rs.backoff_base_seconds)} "
            f"doubling to {format_duration(rs.backoff_max_seconds)})")


def _job_finding(world: World, obj: JobObject, config: Configuration) -> Finding:
    """Whether Kueue manages a job, and the Workload that stands for it."""
    subject = f"{obj.KIND} {obj.metadata.namespace}/{obj.metadata.name}"
    verdict = job.management(world, obj, config)
    if verdict.error is not None:
        return Finding(subject, "not reconciled", f"the job reconciler fails: {verdict.error}")
    if not verdict.managed:
        return Finding(subject, NOT_MANAGED, f"{verdict.why}; it runs as its own controller runs it, "
                                             "without quota or admission checks")
    wl = job.workload_of(world, obj)
    integration = integration_of(obj)
    if wl is None:
        why = "finished" if integration.finished(obj) else "waiting for its active pods to stop"
        return Finding(subject, "managed by Kueue", f"{verdict.why}; no Workload yet: {why}")
    state = "suspended until its Workload is admitted" if integration.is_suspended(obj) else "running"
    return Finding(subject, "managed by Kueue", f"{verdict.why}; Workload {wl.metadata.namespace}/"
                                               f"{wl.metadata.name} stands for it; the job is {state}")


NOT_MANAGED = "not managed by Kueue"


def findings(world: World, after: World, now: Time, config: Configuration = Configuration()) -> list[Finding]:
    """Per ClusterQueue and AdmissionCheck whether it is Active; per job whether Kueue manages
    it; per workload its phase, and per check the state the provisioning controller's reconcile
    leaves it in (``after``), each with the rule that decides it."""
    out = [_active_finding(world, obj) for kind in (c.CLUSTER_QUEUE, c.ADMISSION_CHECK) for obj in world.objects(kind)]
    out += [_job_finding(world, obj, config) for kind in JOB_KINDS for obj in world.objects(kind)
            if isinstance(obj, (Job, JobSet, PyTorchJob))]
    for obj in world.objects(c.WORKLOAD):
        assert isinstance(obj, Workload)
        out.append(_workload_finding(world, obj, now, config))
        updated = after.get(c.WORKLOAD, obj.metadata.namespace, obj.metadata.name)
        wl = updated if isinstance(updated, Workload) else obj
        out += [_check_finding(world, wl, st, now) for st in wl.status.admission_checks]
    return out


def explain(objects: Sequence[KubeObject], at: TimeLike, config: Configuration = Configuration(),
            clock: str = "") -> Report:
    """The report for ``objects`` at ``at`` (seconds since the epoch, RFC 3339 text or a
    ``datetime``); ``clock`` says where that time came from, for the reader."""
    now = to_time(at)
    world = build_world(objects, now, config)
    ctx = Context(now=now, config=config)
    # Every job gets its Workload, as it does the moment it exists.  The workloads are
    # explained as they are.
    manager = settle_status(world, ctx)
    _create_workloads(manager, ctx)
    after = world.copy()
    for key in world.keys(c.WORKLOAD):
        for effect in provisioning.reconcile(after, key, ctx).effects:
            if isinstance(effect, Update) and isinstance(effect.obj, Workload):
                after.apply(effect)
    flagged = audit(objects, now, config=config).findings  # what audit says of the same objects
    return Report(now, tuple(findings(world, after, now, config)), tuple(next_actions(world, ctx)),
                  tuple(waits(world, ctx)), clock, flagged)
