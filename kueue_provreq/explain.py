"""``kueue-provreq explain``: what each controller would do next to a set of manifests, and why.

An edge module (it is given the clock by the CLI, which may read it).  The answer comes from
the model itself, not from a second copy of the rules: every controller's ``reconcile`` runs
once, on its own copy of a World built from the manifests, and its Result is described.  A
short rule-based reading of the workload, check and request states is added beside it, so
that a platform engineer sees the reason as well as the effect.

Jobs become Workloads as Kueue's job integration (``jobframework``) creates them:

* the Job's name is ``metadata.name``; a Job given only ``generateName`` gets the name
  :func:`~kueue_provreq.manifests.inputs.generated_name` gives it (the loader names each
  such object apart; objects built in code get the first name of their prefix);
* the Workload is named as ``GetWorkloadNameForOwnerWithGVK`` does:
  ``("job-" + <job name>)[:247] + "-" + sha1("Job\\nbatch\\n<job name>\\n<job uid>")[:5]``
  where the uid is ``metadata.uid`` or, when absent, the fresh uid the world gives the Job;
* ``spec.queueName`` is the label ``kueue.x-k8s.io/queue-name``; one podSet ``main`` with
  ``count`` = ``spec.parallelism`` (default 1) and the Job's pod template; the Job's
  ``provreq.kueue.x-k8s.io/`` annotations are copied; the Workload is controller-owned by
  the Job.  A Job whose Workload is already among the manifests is not converted again.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from typing import Any

import attrs

from kueue_provreq.api import constants as c
from kueue_provreq.api import naming
from kueue_provreq.api.config import Configuration
from kueue_provreq.api.frozen import FrozenMap
from kueue_provreq.api.job import Job
from kueue_provreq.api.meta import Conditions, ObjectMeta, OwnerReference, Time, is_true
from kueue_provreq.api.objects import KubeObject
from kueue_provreq.api.provisioning import (
    ProvisioningRequest,
    ProvisioningRequestConfig,
)
from kueue_provreq.api.queues import AdmissionCheck
from kueue_provreq.api.workload import (
    AdmissionCheckState,
    PodSet,
    Workload,
    WorkloadSpec,
)
from kueue_provreq.controllers import provisioning, queues, registry, scheduler
from kueue_provreq.controllers.backoff import check_requeue_after_seconds
from kueue_provreq.controllers.context import Context
from kueue_provreq.engine import SCHEDULER, Manager
from kueue_provreq.machines import Actor, CheckTrigger, requests
from kueue_provreq.machines import WorkloadPhase as P
from kueue_provreq.machines.phases import workload_phase
from kueue_provreq.manifests.codec import format_duration, format_time
from kueue_provreq.manifests.inputs import generated_name
from kueue_provreq.waits import Wait, waits
from kueue_provreq.world import Create, Delete, Effect, Event, MetricInc, Result, Update, World

# --- Job -> Workload -------------------------------------------------------------------------


def workload_name_for_job(job_name: str, job_uid: str) -> str:
    """``jobframework.GetWorkloadNameForOwnerWithGVK`` for a batch/v1 Job."""
    prefix = ("job-" + job_name)[:c.OBJECT_NAME_MAX_PREFIX - 6]
    digest = hashlib.sha1(f"Job\nbatch\n{job_name}\n{job_uid}".encode()).hexdigest()
    return f"{prefix}-{digest[:5]}"


def workload_for_job(job: Job) -> Workload:
    """The Workload Kueue's job integration creates for ``job`` (named, with a uid)."""
    meta = job.metadata
    annotations = {k: v for k, v in meta.annotations.items() if k.startswith(c.ANNOTATION_PROVREQ_PREFIX)}
    owner = OwnerReference(api_version=c.BATCH_V1, kind=c.JOB, name=meta.name, uid=meta.uid,
                           controller=True, block_owner_deletion=True)
    pod_set = PodSet(name="main", count=1 if job.spec.parallelism is None else job.spec.parallelism,
                     template=job.spec.template)
    return Workload(
        metadata=ObjectMeta(name=workload_name_for_job(meta.name, meta.uid), namespace=meta.namespace,
                            annotations=FrozenMap(annotations), owner_references=(owner,)),
        spec=WorkloadSpec(pod_sets=(pod_set,), queue_name=meta.labels.get(c.LABEL_QUEUE_NAME, ""),
                          active=True))


def build_world(objects: Iterable[KubeObject], now: Time) -> World:
    """The objects as the API server would store them (a uid, generation 1, created ``now``
    unless given), plus a Workload for every Job that has none among them."""
    world = World()
    given = list(objects)
    for obj in given:
        if obj.metadata.uid and obj.metadata.name:
            world.put(obj)  # first, so that fresh uids are counted past the given ones
    for i, obj in enumerate(given):
        meta = obj.metadata
        name = meta.name or generated_name(meta.namespace, str(meta.extra.get("generateName", "")))
        extra = FrozenMap({k: v for k, v in meta.extra.items() if k != "generateName"})
        given[i] = world.created(attrs.evolve(obj, metadata=attrs.evolve(meta, name=name, extra=extra)), now, i)
    for obj in given:
        world.put(obj)
    for obj in given:
        if isinstance(obj, Job) and not any(
                ref.kind == c.JOB and ref.name == obj.metadata.name
                for wl in world.objects(c.WORKLOAD, obj.metadata.namespace)
                for ref in wl.metadata.owner_references):
            world.put(world.created(workload_for_job(obj), now))
    return world


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

    def to_json(self) -> dict[str, Any]:
        return {"at": format_time(self.at),
                "state": [{"subject": f.subject, "state": f.state, "why": f.why} for f in self.findings],
                "waits": [w.to_json() for w in self.waits],
                "next": [a.to_json() for a in self.actions]}

    def table(self) -> str:
        lines = [f"at {format_time(self.at)}", "", "STATE"]
        lines += [f"  {f.line()}" for f in self.findings] or ["  (no workloads)"]
        if self.waits:
            lines += ["", "WAITS FOR"]
            lines += [f"  {line}" for w in self.waits for line in w.lines()]
        lines += ["", "NEXT"]
        for a in self.actions:
            tail = [f"requeue after {format_duration(a.requeue_after)}"] if a.requeue_after is not None else []
            tail += [f"error: {a.error}"] if a.error is not None else []
            lines.append(f"  {a.controller} {a.object}:")
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
    return out or [f"update {where}"]


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
    """Each controller's reconcile of each of its objects, once, on a private copy."""
    actions = []
    result = scheduler.schedule(world.copy(), ctx)
    found = _action(world, SCHEDULER, "cycle", result)
    if found is not None:
        actions.append(found)
    for ctl in registry.CONTROLLERS:
        for key in world.keys(ctl.kind):
            found = _action(world, ctl.name, _name(*key), ctl.reconcile(world.copy(), key, ctx))
            if found is not None:
                actions.append(found)
    return actions


# --- the rules, read off the state -------------------------------------------------------------


def _workload_finding(world: World, wl: Workload, now: Time) -> Finding:
    subject = f"workload {wl.metadata.namespace}/{wl.metadata.name}"
    phase = workload_phase(wl)
    if phase in (P.PENDING, P.BACKOFF):
        rs = wl.status.requeue_state
        if phase == P.BACKOFF and rs is not None and rs.requeue_at is not None and rs.requeue_at > now:
            return Finding(subject, phase, f"requeued after a failed attempt; back in the queue at "
                                           f"{format_time(rs.requeue_at)} (in {rs.requeue_at - now}s)")
        if not wl.spec.queue_name:
            return Finding(subject, phase, f"no spec.queueName (a Job sets it with label "
                                           f"{c.LABEL_QUEUE_NAME}), so no queue will ever admit it")
        cq = queues.cluster_queue_name(world, wl)
        if cq is None:
            return Finding(subject, phase, f"LocalQueue {wl.metadata.namespace}/{wl.spec.queue_name} "
                                           "does not exist")
        if world.get(c.CLUSTER_QUEUE, "", cq) is None:
            return Finding(subject, phase, f"ClusterQueue {cq} (of LocalQueue {wl.spec.queue_name}) "
                                           "does not exist")
        return Finding(subject, phase, f"queued in LocalQueue {wl.spec.queue_name} -> ClusterQueue {cq}; "
                                       "the scheduler reserves quota when the podSets fit")
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


def _attempts(wl: Workload, check: str, world: World) -> list[tuple[int, ProvisioningRequest]]:
    found = []
    for pr in world.owned_by_name(c.PROVISIONING_REQUEST, wl.metadata.namespace, wl.metadata.name):
        n = naming.attempt_of(pr.metadata.name, wl.metadata.name, check)
        if n is not None and isinstance(pr, ProvisioningRequest):
            found.append((n, pr))
    return sorted(found, key=lambda t: t[0])


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
    attempts = _attempts(wl, st.name, world)
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


def _active_finding(obj: KubeObject) -> Finding:
    """ClusterQueues and AdmissionChecks admit nothing until their controller marks them Active."""
    subject = f"{obj.KIND} {obj.metadata.name}"
    conds = _conditions(obj)
    active = next((cd for cd in conds if cd.type == c.CQ_ACTIVE), None)
    if active is None:
        return Finding(subject, "not yet Active", "no Active condition: its controller sets one on "
                                                  "its next reconcile (see NEXT)")
    state = "Active" if is_true(conds, c.CQ_ACTIVE) else "inactive"
    return Finding(subject, state, f"{active.reason}: {active.message}")


def findings(world: World, after: World, now: Time) -> list[Finding]:
    """Per ClusterQueue and AdmissionCheck whether it is Active; per workload its phase,
    and per check the state the provisioning controller's reconcile leaves it in
    (``after``), each with the rule that decides it."""
    out = [_active_finding(obj) for kind in (c.CLUSTER_QUEUE, c.ADMISSION_CHECK) for obj in world.objects(kind)]
    for obj in world.objects(c.WORKLOAD):
        assert isinstance(obj, Workload)
        out.append(_workload_finding(world, obj, now))
        updated = after.get(c.WORKLOAD, obj.metadata.namespace, obj.metadata.name)
        wl = updated if isinstance(updated, Workload) else obj
        out += [_check_finding(world, wl, st, now) for st in wl.status.admission_checks]
    return out


def explain(objects: Sequence[KubeObject], now: Time, config: Configuration = Configuration()) -> Report:
    """The report for ``objects`` at ``now`` (seconds since the epoch)."""
    world = build_world(objects, now)
    ctx = Context(now=now, config=config)
    # The queues' and checks' own status, as Kueue's controllers settle it once they run: fresh
    # manifests carry none, and a queue "inactive" only until its check's controller has started
    # is not news to anyone.  The workloads are explained as they are.
    Manager(world).settle(ctx, (Actor.ADMISSION_CHECK, Actor.CLUSTER_QUEUE))
    after = world.copy()
    for key in world.keys(c.WORKLOAD):
        for effect in provisioning.reconcile(after, key, ctx).effects:
            if isinstance(effect, Update) and isinstance(effect.obj, Workload):
                after.apply(effect)
    return Report(now, tuple(findings(world, after, now)), tuple(next_actions(world, ctx)),
                  tuple(waits(world, ctx)))
