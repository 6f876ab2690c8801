"""``kueue-provreq forecast``: the whole future of each workload, from manifests.

The manifests become a world as ``explain`` builds it (jobs as Kueue's webhook creates them; the
engine's job reconciler gives them their Workloads), and the controllers run forward in simulated time
(:mod:`~kueue_provreq.simulation.loop`) with Cluster Autoscaler answering each
ProvisioningRequest as a SCRIPT says (:mod:`~kueue_provreq.autoscaler`).  The
run stops when every workload is admitted, deactivated or finished (and no scripted
revocation is still to come), or when ``until`` has passed.

Once a workload is admitted its Job's pods are taken to start at once: ``PodsReady=True``
and, on Cluster Autoscaler's side, the capacity booking consumed.  A forecast never finishes
a Job; ``simulate`` has a job model for that.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import attrs

from kueue_provreq.api import constants as c
from kueue_provreq.api import naming
from kueue_provreq.api.config import Configuration
from kueue_provreq.api.meta import OwnerReference, Time, TimeLike
from kueue_provreq.api.objects import JOB_KINDS, Key, KubeObject, key_of
from kueue_provreq.api.provisioning import ProvisioningRequest, ProvisioningRequestConfig
from kueue_provreq.api.queues import AdmissionCheck
from kueue_provreq.api.workload import Workload
from kueue_provreq.autoscaler import INITIAL_BACKOFF, PROVISION_AT_ONCE, Decision, Script, ScriptItem, attempt_of
from kueue_provreq.controllers import job
from kueue_provreq.controllers.queues import cluster_queue_name
from kueue_provreq.machines import WorkloadPhase as P
from kueue_provreq.machines.phases import provisioning_request_phase
from kueue_provreq.manifests.codec import format_duration, format_time
from kueue_provreq.simulation.drive import AutoscalerDriver, JobDriver, ScriptModel
from kueue_provreq.simulation.existing import attempts_before
from kueue_provreq.simulation.loop import Loop
from kueue_provreq.simulation.outcomes import FINAL, Outcome, outcome_of
from kueue_provreq.simulation.watch import Subscriber
from kueue_provreq.timestamps import to_time
from kueue_provreq.world import World
from kueue_provreq.world_builder import build_world

DEFAULT_UNTIL = 24 * 3600

#: ``outcome`` of a workload: where it stands when the forecast ends.


@attrs.frozen
class Entry:
    """One line of a workload's timeline.  ``kind`` is ``created``, ``phase`` (``subject`` is
    empty), ``check`` (``subject`` is the check) or ``request`` (``subject`` is the request);
    ``before``/``after`` are the phases, check states or request states (None: absent)."""

    time: Time
    what: str
    kind: str
    subject: str = ""
    before: str | None = None
    after: str | None = None


@attrs.frozen
class WorkloadForecast:
    namespace: str
    name: str
    job: str | None
    """The job the workload came from (its name), or None for a Workload given as such."""
    outcome: str
    """``Admitted``, ``Deactivated``, ``Finished`` or ``Pending`` (anything else at the end)."""
    admitted_at: Time | None
    """When it was last admitted, if ever."""
    attempts: int
    """Attempts of its provisioning checks, those before the start included: per check, the
    attempts Kueue had counted at the start (the highest its requests' names carry, or its
    retry count), then one per request created."""
    timeline: tuple[Entry, ...]
    job_kind: str | None = None
    """The job's kind (``Job``, ``JobSet``, ``PyTorchJob``)."""

    def to_json(self) -> dict[str, Any]:
        return {"namespace": self.namespace, "name": self.name, "job": self.job, "outcome": self.outcome,
                "admittedAt": None if self.admitted_at is None else format_time(self.admitted_at),
                "attempts": self.attempts,
                "timeline": [{"time": format_time(e.time), "what": e.what} for e in self.timeline]}


@attrs.frozen
class Forecast:
    at: Time
    script: Script
    until: int
    workloads: tuple[WorkloadForecast, ...]
    unmanaged: tuple[str, ...] = ()
    """The jobs Kueue does not manage, each with the reason (``Kind ns/name: why``)."""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"at": format_time(self.at), "workloads": [w.to_json() for w in self.workloads]}
        if self.unmanaged:
            out["unmanagedJobs"] = list(self.unmanaged)
        return out

    def table(self) -> str:
        lines = [f"at {format_time(self.at)}, autoscaler {self.script} (the last item repeats), "
                 f"for at most {format_duration(self.until)}"]
        for verdict in self.unmanaged:
            lines += ["", f"{verdict}: not managed by Kueue, it runs without admission"]
        if not self.workloads and not self.unmanaged:
            lines += ["", "no workloads"]
        for w in self.workloads:
            source = f" ({w.job_kind} {w.job})" if w.job else ""
            if w.outcome == Outcome.ADMITTED and w.admitted_at is not None:
                verdict = f"Admitted at {relative(w.admitted_at - self.at)}"
            else:
                verdict = w.outcome
            plural = "" if w.attempts == 1 else "s"
            lines += ["", f"workload {w.namespace}/{w.name}{source}: {verdict}, {w.attempts} attempt{plural}"]
            lines += [f"  {relative(e.time - self.at):>9}  {e.what}" for e in w.timeline]
        return "\n".join(lines) + "\n"


def relative(seconds: int) -> str:
    """``+45s``, ``+1m00s``, ``+2h05m00s``: a time after the forecast's start (``-30s``: before it).

    >>> relative(0), relative(45), relative(60), relative(7500), relative(-90)
    ('+0s', '+45s', '+1m00s', '+2h05m00s', '-1m30s')
    """
    if seconds < 0:
        return "-" + relative(-seconds)[1:]
    h, rest = divmod(int(seconds), 3600)
    m, s = divmod(rest, 60)
    if h:
        return f"+{h}h{m:02d}m{s:02d}s"
    if m:
        return f"+{m}m{s:02d}s"
    return f"+{s}s"


def _job_of(wl: Workload) -> OwnerReference | None:
    """The owner reference to the job the workload came from, None for a Workload given as such."""
    return next((r for r in wl.metadata.owner_references if r.kind in JOB_KINDS), None)


class _Story(Subscriber):
    """Writes each workload's timeline as the run goes; it only reads."""

    def __init__(self, loop: Loop) -> None:
        self.world = loop.world
        self.start = loop.now
        self.loop = loop
        self.phases = loop.watch.phases
        self.entries: dict[Key, list[Entry]] = {}
        self.attempts: dict[Key, int] = {}
        self.admitted_at: dict[Key, Time] = {}
        self.request_phases: dict[Key, str] = {}
        for wl in self.world.objects(c.WORKLOAD):
            assert isinstance(wl, Workload)
            self._created(wl, given=True)
            if before := attempts_before(self.world, wl):
                self.attempts[key_of(wl)] = before
        loop.subscribe(self)

    def _add(self, wl_key: Key, entry: Entry) -> None:
        self.entries.setdefault(wl_key, []).append(entry)

    def _rel(self, t: int) -> str:
        return relative(t - self.start)

    def _created(self, wl: Workload, given: bool = False) -> None:
        """A Workload's first entry: a change from nothing (the job reconciler created it), or,
        for one the manifests held, where it stands at the start."""
        owner = _job_of(wl)
        origin = f"created from {owner.kind} {owner.name}" if owner else "created"
        if given:
            origin = f"{self.phases[key_of(wl)]} at the start" + (f" ({owner.kind} {owner.name})" if owner else "")
        if not wl.spec.queue_name:
            where = "it has no queue name, so no queue will ever admit it"
        else:
            cq = cluster_queue_name(self.world, wl)
            target = f" (ClusterQueue {cq})" if cq else ", which does not exist"
            where = f"queued in LocalQueue {wl.spec.queue_name}{target}"
        self._add(key_of(wl), Entry(self.loop.now, f"{origin}; {where}", "created" if given else "phase",
                                    after=self.phases[key_of(wl)]))

    def on_workload_created(self, actor: str, wl: Workload) -> None:
        self._created(wl)

    def on_phase(self, actor: str, wl: Workload, before: str, after: str) -> None:
        previous = self.entries.get(key_of(wl), [])[-1:]
        if (after == P.PENDING and before == P.BACKOFF and previous and previous[0].time == self.loop.now
                and previous[0].after == P.BACKOFF):
            # a backoff of no time: one entry says it ("back in the queue"), not two at one instant
            self.entries[key_of(wl)][-1] = attrs.evolve(previous[0], what=previous[0].what.replace(
                " after a backoff", ""), after=after)
            return
        self._add(key_of(wl), Entry(self.loop.now, self._phase_text(wl, before, after), "phase", "", before, after))
        if after == P.ADMITTED:
            self.admitted_at[key_of(wl)] = self.loop.now

    def _phase_text(self, wl: Workload, before: str, after: str) -> str:
        admission = wl.status.admission
        cq = admission.cluster_queue if admission is not None else "?"
        if after == P.QUOTA_RESERVED and before in (P.PENDING, P.BACKOFF):
            waiting = [s.name for s in wl.status.admission_checks if s.state != c.CHECK_READY]
            return f"quota reserved in ClusterQueue {cq}; waiting for admission check {', '.join(waiting)}" \
                if waiting else f"quota reserved in ClusterQueue {cq}"
        if after == P.ADMITTED:
            if before in (P.PENDING, P.BACKOFF):
                return f"quota reserved in ClusterQueue {cq} and admitted: no admission check to wait for"
            return "admitted: every admission check is Ready"
        if after == P.QUOTA_RESERVED:
            return "no longer admitted: an admission check left Ready"
        if after == P.EVICTED:
            ev = wl.condition(c.WORKLOAD_EVICTED)
            return f"evicted ({ev.reason}): {ev.message}" if ev is not None else "evicted"
        released = "quota released; " if before in (P.EVICTED, P.QUOTA_RESERVED, P.ADMITTED) else ""
        if after == P.BACKOFF:
            rs = wl.status.requeue_state
            when = f" at {self._rel(rs.requeue_at)}" if rs is not None and rs.requeue_at is not None else ""
            return f"{released}back in the queue after a backoff{when}"
        if after == P.PENDING:
            if before == P.INACTIVE:
                return "reactivated; back in the queue"
            return f"{released}back in the queue" if released else "backoff over; back in the queue"
        if after == P.INACTIVE:
            cause = wl.condition(c.WORKLOAD_EVICTED) or wl.condition(c.WORKLOAD_DEACTIVATION_TARGET)
            why = f": {cause.message}" if cause is not None and cause.message else ""
            return f"{released}deactivated{why}"
        if after == P.FINISHED:
            return "finished"
        return f"{before} -> {after}"

    def on_check(self, actor: str, wl: Workload, check: str, before: str | None, after: str | None) -> None:
        self._add(key_of(wl), Entry(self.loop.now, self._check_text(wl, check, before, after), "check", check,
                                    before, after))

    def _check_text(self, wl: Workload, check: str, before: str | None, after: str | None) -> str:
        st = wl.check_state(check)
        pr = self._latest_request(wl, check)
        request = f"request {pr.metadata.name} {provisioning_request_phase(pr)}: " if pr is not None else ""
        if after is None:
            return f"admission check {check} no longer required"
        if before is None:
            return f"admission check {check} required ({after})"
        if after == c.CHECK_RETRY and st is not None:
            limit = self._backoff_limit(check)
            of = f" of {limit}" if limit is not None else ""
            delay = format_duration(st.requeue_after_seconds or 0)
            return f"{request}retry {attempt_of(pr) if pr else (st.retry_count or 0) + 1}{of} after a {delay} backoff"
        if after == c.CHECK_REJECTED:
            message = f" ({st.message})" if st is not None and st.message else ""
            return f"{request}check {check} Rejected{message}"
        if after == c.CHECK_READY:
            return f"{request}check {check} Ready" if pr is not None else \
                f"check {check} Ready{f' ({st.message})' if st is not None and st.message else ''}"
        if after == c.CHECK_PENDING:
            return f"check {check} back to Pending (was {before})"
        return f"check {check} {before} -> {after}"

    def _latest_request(self, wl: Workload, check: str) -> ProvisioningRequest | None:
        """The check's newest request (the highest attempt its name carries)."""
        m = wl.metadata
        attempts = [(n, pr) for pr in self.world.owned_by_name(c.PROVISIONING_REQUEST, m.namespace, m.name)
                    if isinstance(pr, ProvisioningRequest)
                    and (n := naming.attempt_of(pr.metadata.name, m.name, check)) is not None]
        return max(attempts, key=lambda found: found[0])[1] if attempts else None

    def _backoff_limit(self, check: str) -> int | None:
        ac = self.world.get(c.ADMISSION_CHECK, "", check)
        ref = ac.spec.parameters if isinstance(ac, AdmissionCheck) else None
        prc = self.world.get(c.PROVISIONING_REQUEST_CONFIG, "", ref.name) if ref is not None else None
        return prc.spec.retry_strategy.backoff_limit_count if isinstance(prc, ProvisioningRequestConfig) else None

    def _owner(self, pr: ProvisioningRequest) -> Key | None:
        ref = pr.metadata.controller_ref()
        return (c.WORKLOAD, pr.metadata.namespace, ref.name) if ref is not None and ref.kind == c.WORKLOAD else None

    def on_request_created(self, actor: str, pr: ProvisioningRequest) -> None:
        """A new request (or, with no actor, one the manifests already held: CA answers it
        as the script says for its attempt, from its creation time)."""
        owner = self._owner(pr)
        key = key_of(pr)
        self.request_phases[key] = provisioning_request_phase(pr)
        if owner is None:
            return
        if actor:  # the manifests' own were counted at the start
            self.attempts[owner] = self.attempts.get(owner, 0) + 1
        pods = sum(ps.count for ps in pr.spec.pod_sets)
        what = "created (" if actor else f"already exists ({self.request_phases[key]}, "
        self._add(owner, Entry(self.loop.now, f"request {pr.metadata.name} {what}"
                                              f"{pr.spec.provisioning_class_name}, {pods} pod{'s' * (pods != 1)})",
                               "request", pr.metadata.name, None, self.request_phases[key]))

    def taken_up(self, pr: ProvisioningRequest, item: ScriptItem, planned: Decision | None) -> None:
        """A request the manifests held whose scripted answer cannot come when the script says
        (due before the start, or before Cluster Autoscaler's next try after a
        ``Provisioned=False``): says when Cluster Autoscaler gives it instead
        (:func:`~kueue_provreq.autoscaler.resumed`)."""
        owner = self._owner(pr)
        scripted = item.decision(pr.metadata.creation_timestamp or Time(0))
        if owner is None or planned is None or planned.at == scripted.at:
            return
        before = ", before the start" if scripted.at < self.loop.now else ""
        due = f"request {pr.metadata.name}: {item} for attempt {attempt_of(pr)} was due at " \
              f"{self._rel(scripted.at)}{before}"
        answered = next((x for x in pr.status.conditions if x.type == c.PR_PROVISIONED and x.status == c.FALSE), None)
        if answered is not None and answered.last_transition_time is not None:
            why = (f"; Cluster Autoscaler answered Provisioned=False at {self._rel(answered.last_transition_time)} "
                   f"and tries again after its backoff ({format_duration(INITIAL_BACKOFF)} at the earliest): "
                   f"it answers then, at {self._rel(planned.at)}")
        else:
            why = f", and Cluster Autoscaler has not answered it: it answers at its next loop, {self._rel(planned.at)}"
        self._add(owner, Entry(self.loop.now, due + why, "request", pr.metadata.name))

    def on_request_updated(self, actor: str, pr: ProvisioningRequest) -> None:
        key, owner = key_of(pr), self._owner(pr)
        before, after = self.request_phases.get(key), provisioning_request_phase(pr)
        self.request_phases[key] = after
        if owner is None or before == after:
            return
        cond = next((x for x in pr.status.conditions if x.type == after), None)
        why = f" ({cond.reason}: {cond.message})" if cond is not None else ""
        self._add(owner, Entry(self.loop.now, f"request {pr.metadata.name} {after}{why}", "request",
                               pr.metadata.name, before, after))

    def on_request_deleted(self, actor: str, key: Key) -> None:
        self.request_phases.pop(key, None)

    def timeline(self, key: Key) -> tuple[Entry, ...]:
        """The workload's entries, a request's own line dropped where the check line that
        follows it at the same time already names the request and its state."""
        entries = self.entries.get(key, [])
        kept = []
        for i, e in enumerate(entries):
            if e.kind == "request" and e.before is not None and any(
                    f.time == e.time and f.kind == "check" and f.what.startswith(f"request {e.subject} {e.after}:")
                    for f in entries[i + 1:]):
                continue
            kept.append(e)
        return tuple(kept)


def forecast(objects: Sequence[KubeObject], at: TimeLike, script: Script = PROVISION_AT_ONCE,
             config: Configuration = Configuration(), until: int = DEFAULT_UNTIL) -> Forecast:
    """The future of every workload among ``objects`` (Jobs become their Workloads) from
    ``at`` (seconds since the epoch, RFC 3339 text or an aware ``datetime``, as ``explain``
    takes it), Cluster Autoscaler answering as ``script`` says, for at most ``until`` seconds."""
    at = to_time(at)
    world = build_world(objects, at, config)
    unmanaged = []
    for kind in JOB_KINDS:
        for obj in world.objects(kind):
            verdict = job.management(world, obj, config)  # type: ignore[arg-type]
            if not verdict.managed:
                unmanaged.append(f"{obj.KIND} {obj.metadata.namespace}/{obj.metadata.name}: {verdict.why}")
    loop = Loop(world, config, at, verify=True)
    story = _Story(loop)
    jobs = JobDriver(loop, lambda wl, admission: (0, None))
    autoscaler = AutoscalerDriver(loop, ScriptModel(script), jobs, pods_scheduled=_admitted_owner(world))
    for pr in world.objects(c.PROVISIONING_REQUEST):  # requests a cluster dump already holds
        assert isinstance(pr, ProvisioningRequest)
        loop.report(pr)
        story.taken_up(pr, script.item(attempt_of(pr)), autoscaler.decisions.get(key_of(pr)))

    def settled() -> bool:
        """Every workload admitted, deactivated or finished, and no scripted revocation to come."""
        return all(phase in FINAL for phase in loop.watch.phases.values()) and not autoscaler.revocations_pending()

    loop.run(at + until, settled)

    out = []
    for wl in sorted((o for o in world.objects(c.WORKLOAD) if isinstance(o, Workload)),
                     key=lambda w: (w.metadata.namespace, w.metadata.name)):
        key = key_of(wl)
        owner = _job_of(wl)
        out.append(WorkloadForecast(wl.metadata.namespace, wl.metadata.name, owner.name if owner else None,
                                    outcome_of(loop.watch.phases[key]), story.admitted_at.get(key),
                                    story.attempts.get(key, 0), story.timeline(key),
                                    owner.kind if owner else None))
    return Forecast(at, script, until, tuple(out), tuple(unmanaged))


def _admitted_owner(world: World) -> Callable[[ProvisioningRequest], bool]:
    """Forecasts start the pods at admission: a request's pods are scheduled once its
    workload is admitted."""
    def scheduled(pr: ProvisioningRequest) -> bool:
        ref = pr.metadata.controller_ref()
        wl = world.get(c.WORKLOAD, pr.metadata.namespace, ref.name) if ref is not None else None
        return isinstance(wl, Workload) and wl.is_admitted() and wl.status.is_true(c.WORKLOAD_PODS_READY)
    return scheduled
