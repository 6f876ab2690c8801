"""``kueue-provreq audit``: check one snapshot of a cluster against what the model guarantees.

A snapshot is a moment, not a run: the rules here are the ones a single moment can judge.
Where the model already states a property as a state invariant
(:mod:`kueue_provreq.invariants`), the rule calls that invariant, on the objects of one
workload (or one request) at a time so that each finding names its object; where the
invariant is a step invariant or assumes the controllers have caught up, the rule says how
the snapshot version differs.  Each rule names its source in the spec notes: PC =
``kueue-provisioning-controller.md``, AR = ``kueue-admission-and-requeue.md``.

Severities: a broken invariant, an orphan or a duplicate is an ``error`` (the cluster is in
a state Kueue never leaves it in); a misconfiguration or work that looks stuck is a
``warning`` (legal, but nothing will move it).  Stuck work is judged from timestamps against
the snapshot's time, with :class:`Thresholds` saying how late is too late.

An edge module: it reads no clock (the time comes in) and prints nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import attrs

from kueue_provreq import invariants
from kueue_provreq.api import constants as c
from kueue_provreq.api.config import Configuration
from kueue_provreq.api.meta import Time, find_condition
from kueue_provreq.api.objects import KubeObject
from kueue_provreq.api.provisioning import ProvisioningRequestConfig
from kueue_provreq.api.queues import AdmissionCheck, ClusterQueue, LocalQueue
from kueue_provreq.api.workload import AdmissionCheckState, PodSetAssignment, Workload
from kueue_provreq.controllers import activity, provisioning
from kueue_provreq.controllers.context import Context
from kueue_provreq.engine import Manager
from kueue_provreq.machines import Actor
from kueue_provreq.machines.phases import provisioning_request_phase
from kueue_provreq.machines.requests import attempt_over
from kueue_provreq.manifests.codec import format_duration, format_time
from kueue_provreq.waits import relative, requests_by_attempt, retry_due
from kueue_provreq.world import Txn, World

ERROR = "error"
WARNING = "warning"


@attrs.frozen
class Rule:
    name: str
    severity: str
    source: str
    summary: str


RULES: dict[str, Rule] = {r.name: r for r in (
    Rule("admitted-without-quota", ERROR, "AR A.4",
         "Admitted=True without QuotaReserved=True (invariant admitted_only_with_quota)"),
    Rule("admission-without-reservation", ERROR, "AR A.3, A.6",
         "status.admission set without QuotaReserved=True, or the reverse "
         "(invariant admission_matches_reservation)"),
    Rule("admitted-check-not-ready", ERROR, "AR A.2, A.4",
         "Admitted=True, not being evicted, with a check that is Pending since before the admission"),
    Rule("duplicate-live-requests", ERROR, "PC §1.5-§1.7",
         "two ProvisioningRequests of one workload and check that the provisioning controller counts "
         "as live (machines.requests.attempt_over; invariant one_live_request_per_check)"),
    Rule("rejected-check-active", ERROR, "AR A.8, PC §1.9",
         "a Rejected check on an active workload neither being deactivated nor evicted "
         "(invariant rejected_check_deactivates)"),
    Rule("deactivated-holds-quota", ERROR, "AR A.8",
         "spec.active=false while holding quota, without being evicted (invariant rejected_check_deactivates)"),
    Rule("finished-keeps-requests", ERROR, "PC §1.2, §1.12, §5 (v0.19)",
         "a finished workload still owns ProvisioningRequests (invariant finished_has_no_requests)"),
    Rule("orphaned-request", ERROR, "PC §1.7",
         "a Kueue-managed ProvisioningRequest whose controlling Workload is gone"),
    Rule("orphaned-template", ERROR, "PC §1.7",
         "a Kueue-managed PodTemplate whose controlling ProvisioningRequest or Workload is gone"),
    Rule("not-owned-as-kueue-owns", ERROR, "PC §1.7",
         "a Kueue-managed request or template without the controller reference Kueue gives it "
         "(invariant requests_and_templates_owned)"),
    Rule("cluster-queue-inactive", WARNING, "AR A.3; model: activity.inactive_reason",
         "a ClusterQueue admits nothing: missing ResourceFlavors, missing or inactive AdmissionChecks, "
         "MultiKueue checks Kueue does not accept"),
    Rule("local-queue-inactive", WARNING, "localqueue_controller.go:194-215",
         "a LocalQueue whose status says it is not Active (stopped, or its ClusterQueue missing or inactive)"),
    Rule("namespace-not-selected", WARNING, "workload.ValidateAdmissibility (pkg/workload/resources.go)",
         "a LocalQueue whose ClusterQueue's namespaceSelector leaves its namespace out (an absent "
         "selector selects none): its workloads are never admitted"),
    Rule("check-config-missing", WARNING, "PC §1.3, §3",
         "a provisioning AdmissionCheck whose parameters do not name an existing ProvisioningRequestConfig"),
    Rule("managed-resources-unused", WARNING, "PC §1.4",
         "a ProvisioningRequestConfig's managedResources that no podset it applies to can use"),
    Rule("retry-overdue", WARNING, "AR A.7; KEP-3258 (Kueue issues #3322, #3543)",
         "a check in Retry whose requeue time passed longer ago than --overdue"),
    Rule("provisioned-check-pending", WARNING, "PC §1.9",
         "a Provisioned request whose check is still Pending after --overdue"),
    Rule("quota-held-waiting", WARNING, "AR A.3-A.4",
         "a workload holding quota longer than --quota-wait while its checks are not Ready"),
)}


@attrs.frozen
class Thresholds:
    """How late is too late for the stuck-work rules, in seconds."""

    overdue: int = 300
    """A controller that missed a deadline by this much is not just busy (Kueue reacts in seconds)."""
    quota_wait: int = 1800
    """Quota held this long while checks run is quota other workloads could have used."""


@attrs.frozen
class Finding:
    severity: str
    rule: str
    object: str
    """``Kind namespace/name`` (``Kind name`` for cluster-scoped kinds)."""
    message: str

    def line(self) -> str:
        return f"{self.severity:<7} {self.object}: {self.message} [{self.rule}]"

    def to_json(self) -> dict[str, str]:
        return {"severity": self.severity, "rule": self.rule, "object": self.object, "message": self.message}


@attrs.frozen
class Report:
    findings: tuple[Finding, ...]

    @property
    def errors(self) -> int:
        return sum(1 for f in self.findings if f.severity == ERROR)

    @property
    def warnings(self) -> int:
        return sum(1 for f in self.findings if f.severity == WARNING)

    def exit_status(self, strict: bool = False) -> int:
        return 1 if self.errors or (strict and self.warnings) else 0

    def to_json(self) -> dict[str, Any]:
        return {"findings": [f.to_json() for f in self.findings]}

    def table(self) -> str:
        lines = [f.line() for f in self.findings]
        lines.append(f"{self.errors} error{'s' * (self.errors != 1)}, "
                     f"{self.warnings} warning{'s' * (self.warnings != 1)}")
        return "\n".join(lines) + "\n"


def object_name(obj: KubeObject) -> str:
    m = obj.metadata
    return f"{obj.KIND} {m.namespace}/{m.name}" if m.namespace else f"{obj.KIND} {m.name}"


def _finding(rule: str, obj: KubeObject | str, message: str) -> Finding:
    return Finding(RULES[rule].severity, rule, obj if isinstance(obj, str) else object_name(obj), message)


# --- reading the world ---------------------------------------------------------------------------------


def _workloads(world: World) -> list[Workload]:
    return [o for o in world.objects(c.WORKLOAD) if isinstance(o, Workload)]


def _configuration(world: World) -> list[KubeObject]:
    return [o for kind in (c.CLUSTER_QUEUE, c.RESOURCE_FLAVOR, c.ADMISSION_CHECK, c.PROVISIONING_REQUEST_CONFIG)
            for o in world.objects(kind)]


def _scope(world: World, wl: Workload, config: list[KubeObject]) -> World:
    """``wl`` with the configuration and the requests and templates it owns: the world an
    invariant about one workload needs, so that what it reports is about ``wl``."""
    ns, name = wl.metadata.namespace, wl.metadata.name
    owned = world.owned_by_name(c.PROVISIONING_REQUEST, ns, name)
    return World([wl, *config, *owned])


def _being_evicted(wl: Workload) -> bool:
    """Evicted=True while still holding quota: the job integration is stopping the job."""
    return wl.is_evicted() and wl.has_quota_reservation()


def _being_deactivated(wl: Workload) -> bool:
    return wl.status.is_true(c.WORKLOAD_DEACTIVATION_TARGET)


def _managed(obj: KubeObject) -> bool:
    return obj.metadata.labels.get(c.LABEL_MANAGED) == "true"


def _deleting(obj: KubeObject) -> bool:
    """The garbage collector (or a finalizer) is removing it already."""
    return obj.metadata.terminating


# --- invariants ----------------------------------------------------------------------------------------


def workload_invariants(world: World, now: Time, config: Configuration = Configuration()) -> Iterator[Finding]:
    ctx = invariants.CheckContext(now=now, config=config)
    setup = _configuration(world)
    for wl in _workloads(world):
        scope = _scope(world, wl, setup)
        for _ in invariants.admitted_only_with_quota(scope, ctx):
            yield _finding("admitted-without-quota", wl, "Admitted=True without QuotaReserved=True")
        for _ in invariants.admission_matches_reservation(scope, ctx):
            held = "QuotaReserved=True" if wl.has_quota_reservation() else "no QuotaReserved=True"
            has = "with" if wl.status.admission is not None else "without"
            yield _finding("admission-without-reservation", wl, f"{held} {has} status.admission")
        yield from _admitted_check_not_ready(wl)
        yield from _duplicate_live_requests(world, wl)
        # the invariant answers once per Rejected check; one finding names them all
        if not (_being_evicted(wl) or _being_deactivated(wl)) and \
                any(True for _ in invariants.rejected_check_deactivates(scope, ctx)):
            if wl.is_active:
                rejected = [s.name for s in wl.status.admission_checks if s.state == c.CHECK_REJECTED]
                yield _finding("rejected-check-active", wl,
                               f"check {', '.join(rejected)} is Rejected but the workload is active and "
                               "not being deactivated")
            else:
                yield _finding("deactivated-holds-quota", wl,
                               "spec.active=false but it holds quota and is not being evicted")
        for _ in invariants.finished_has_no_requests(scope, ctx):
            owned = [pr.metadata.name for pr in scope.objects(c.PROVISIONING_REQUEST)]
            yield _finding("finished-keeps-requests", wl,
                           f"finished but still owns {', '.join(owned)} (Kueue v0.19+ deletes them)")


def _duplicate_live_requests(world: World, wl: Workload) -> Iterator[Finding]:
    """Requests live as the provisioning controller counts them (PC §1.5-§1.7): found through
    its owner-name index, named ``<workload>-<check>-<n>``, and not over -- no True condition
    that ends an attempt for this workload (``machines.requests.attempt_over``: Failed, or
    BookingExpired before admission), the only state in which it makes the next one.  The
    model's state invariant ``one_live_request_per_check`` says the same, with the request's
    phase and its controller's uid."""
    admitted = wl.is_admitted()
    for s in wl.status.admission_checks:
        live = [pr for _, pr in requests_by_attempt(world, wl, s.name) if not attempt_over(pr.status.conditions, admitted)]
        if len(live) < 2:
            continue
        names = ", ".join(pr.metadata.name for pr in live)
        for pr in live:
            yield _finding("duplicate-live-requests", pr,
                           f"one of {len(live)} live requests for check {s.name} of {object_name(wl)}: {names}")


def _admitted_check_not_ready(wl: Workload) -> Iterator[Finding]:
    """The snapshot form of the step invariant ``admitted_only_with_ready_checks``: Kueue
    admits only when every check is Ready (AR A.4) and never re-syncs Admitted afterwards, so
    an admitted workload may later carry a Pending check only if the check was added after
    the admission (AR A.2) -- its transition time is then the later one.  A Retry or Rejected
    check is left to the rules about those states; an eviction in progress resets checks."""
    admitted = wl.condition(c.WORKLOAD_ADMITTED)
    if admitted is None or admitted.status != c.TRUE or _being_evicted(wl) or wl.is_finished():
        return
    since = admitted.last_transition_time
    for s in wl.status.admission_checks:
        if s.state != c.CHECK_PENDING:
            continue
        if since is not None and s.last_transition_time is not None and s.last_transition_time > since:
            continue
        when = f" since {format_time(s.last_transition_time)}" if s.last_transition_time is not None else ""
        yield _finding("admitted-check-not-ready", wl,
                       f"Admitted=True while check {s.name} is Pending{when}; Kueue admits only when every "
                       "check is Ready")


def ownership(world: World, unread: frozenset[str]) -> Iterator[Finding]:
    """Requests and templates Kueue made (label ``kueue.x-k8s.io/managed=true``) are controlled
    by their Workload, templates by their request (PC §1.7).  The invariant judges each object
    with its chain of controllers: it breaks the invariant when adding it to that chain adds a
    violation.  A missing owner is only judged when the owner's kind was read."""
    ctx = invariants.CheckContext(now=Time(0))
    by_uid = {o.metadata.uid: o for o in world if o.metadata.uid}
    for kind, owners in ((c.PROVISIONING_REQUEST, (c.WORKLOAD,)),
                         (c.POD_TEMPLATE, (c.PROVISIONING_REQUEST, c.WORKLOAD))):
        for obj in world.objects(kind):
            if not _managed(obj) or _deleting(obj):
                continue
            chain = list(_controllers(obj, by_uid))
            before = len(invariants.requests_and_templates_owned(World(chain), ctx))
            if len(invariants.requests_and_templates_owned(World([obj, *chain]), ctx)) == before:
                continue
            ref = obj.metadata.controller_ref()
            if ref is not None and ref.kind in owners and not chain:
                if ref.kind in unread:
                    continue
                rule = "orphaned-request" if kind == c.PROVISIONING_REQUEST else "orphaned-template"
                namesake = world.get(ref.kind, obj.metadata.namespace, ref.name)
                also = f" (the {ref.kind} of that name is another object, uid {namesake.metadata.uid})" \
                    if namesake is not None else ""
                yield _finding(rule, obj, f"its controller {ref.kind} {ref.name} (uid {ref.uid}) is gone{also}; "
                                          "the garbage collector should have deleted it")
            else:
                what = f"controlled by {ref.kind} {ref.name}" if ref is not None else "has no controller reference"
                yield _finding("not-owned-as-kueue-owns", obj,
                               f"{what}; Kueue makes it controlled by its {' or '.join(owners)}")


def _controllers(obj: KubeObject, by_uid: dict[str, KubeObject]) -> Iterator[KubeObject]:
    """``obj``'s controller, that one's controller, and so on, as far as they exist."""
    seen = {obj.metadata.uid}
    ref = obj.metadata.controller_ref()
    while ref is not None and ref.uid in by_uid and ref.uid not in seen:
        owner = by_uid[ref.uid]
        seen.add(ref.uid)
        yield owner
        ref = owner.metadata.controller_ref()


# --- misconfiguration -------------------------------------------------------------------------------


def _provisioning_checks(world: World) -> list[AdmissionCheck]:
    return [ac for ac in world.objects(c.ADMISSION_CHECK) if isinstance(ac, AdmissionCheck)
            and ac.spec.controller_name == c.PROVISIONING_REQUEST_CONTROLLER_NAME]


def _config_of(world: World, ac: AdmissionCheck, now: Time) -> tuple[ProvisioningRequestConfig | None, str]:
    """The provisioning controller's own ``ConfigFromRef``: (config, why it is unusable)."""
    try:
        prc = provisioning.config_from_ref(Txn(world, now), ac.spec.parameters)
    except provisioning.BadParametersRef as e:
        return None, str(e)
    if prc is None:
        assert ac.spec.parameters is not None
        return None, f"ProvisioningRequestConfig {ac.spec.parameters.name} does not exist"
    return prc, ""


def misconfiguration(world: World, now: Time) -> Iterator[Finding]:
    for cq in world.objects(c.CLUSTER_QUEUE):
        assert isinstance(cq, ClusterQueue)
        problem = activity.inactive_reason(world, cq)
        if problem is not None and problem[0] != c.REASON_CQ_STOPPED:
            yield _finding("cluster-queue-inactive", cq, f"admits nothing: {problem[1]} ({problem[0]})")
    yield from _inactive_local_queues(world)
    yield from _unselected_namespaces(world)
    checks = _provisioning_checks(world)
    for ac in checks:
        prc, why = _config_of(world, ac, now)
        if prc is None:
            yield _finding("check-config-missing", ac, f"{why}, so the check is inactive and every ClusterQueue "
                                                        "using it admits nothing")
    yield from _unused_managed_resources(world, checks, now)


def _inactive_local_queues(world: World) -> Iterator[Finding]:
    """What each LocalQueue's status says (Kueue's LocalQueue controller writes it): one not
    ``Active``, with how many of its workloads wait and hold quota."""
    for lq in world.objects(c.LOCAL_QUEUE):
        assert isinstance(lq, LocalQueue)
        active = find_condition(lq.status.conditions, c.LQ_ACTIVE)
        if active is None or active.status != c.FALSE:
            continue
        ref = (lq.metadata.namespace, lq.metadata.name)
        waiting = sum(1 for wl in _workloads(world) if (wl.metadata.namespace, wl.spec.queue_name) == ref
                      and wl.is_active and not wl.has_quota_reservation() and not wl.is_finished())
        holding = lq.status.reserving_workloads or 0
        yield _finding("local-queue-inactive", lq,
                       f"admits nothing: {active.message} ({active.reason}); {waiting} workload(s) wait in it, "
                       f"{holding} hold quota")


def _unselected_namespaces(world: World) -> Iterator[Finding]:
    """LocalQueues whose workloads the scheduler refuses as ``Misconfigured``: the ClusterQueue's
    ``namespaceSelector`` does not match the namespace (most often: no selector at all, where
    ``namespaceSelector: {}`` was meant)."""
    for lq in world.objects(c.LOCAL_QUEUE):
        assert isinstance(lq, LocalQueue)
        cq = world.get(c.CLUSTER_QUEUE, "", lq.spec.cluster_queue)
        if not isinstance(cq, ClusterQueue) or cq.spec.admits_namespace(lq.metadata.namespace):
            continue
        why = "has no namespaceSelector, which selects no namespace (namespaceSelector: {} selects all)" \
            if cq.spec.namespace_selector is None else "has a namespaceSelector that does not match it"
        yield _finding("namespace-not-selected", lq,
                       f"ClusterQueue {cq.metadata.name} {why}: workloads queued here get "
                       f"QuotaReserved=False Misconfigured \"{c.MSG_NAMESPACE_MISMATCH}\"")


def _unused_managed_resources(world: World, checks: list[AdmissionCheck], now: Time) -> Iterator[Finding]:
    """Per config with managedResources: every podset that could use them must request one of
    them, or the check turns Ready with "the provisioning request is not needed" (PC §1.4).
    Judged on the resources the ClusterQueues using the check cover, and on the workloads
    carrying the check."""
    by_config: dict[str, tuple[ProvisioningRequestConfig, set[str]]] = {}
    for ac in checks:
        prc, _ = _config_of(world, ac, now)
        if prc is not None and prc.spec.managed_resources:
            by_config.setdefault(prc.metadata.name, (prc, set()))[1].add(ac.metadata.name)
    for prc, names in by_config.values():
        managed = set(prc.spec.managed_resources)
        queues = [cq for cq in world.objects(c.CLUSTER_QUEUE)
                  if isinstance(cq, ClusterQueue) and names & set(cq.checks_with_flavors())]
        covered = {r for cq in queues for g in cq.spec.resource_groups for r in g.covered_resources}
        listed = ", ".join(sorted(managed))
        if queues and not managed & covered:
            yield _finding("managed-resources-unused", prc,
                           f"managedResources [{listed}]: no ClusterQueue using its checks "
                           f"({', '.join(sorted(q.metadata.name for q in queues))}) covers any of them, so its "
                           "checks never create a ProvisioningRequest")
            continue
        carrying = [wl for wl in _workloads(world) if any(s.name in names for s in wl.status.admission_checks)]
        if carrying and not any(_uses_managed(wl, prc) for wl in carrying):
            yield _finding("managed-resources-unused", prc,
                           f"managedResources [{listed}]: none of the {len(carrying)} workloads carrying its "
                           "checks requests any of them, so their checks turn Ready without a request")


def _uses_managed(wl: Workload, prc: ProvisioningRequestConfig) -> bool:
    """``reqIsNeeded`` as the provisioning controller decides it, with the spec counts."""
    assignments = {ps.name: PodSetAssignment(ps.name) for ps in wl.spec.pod_sets}
    return provisioning.req_is_needed(wl, prc, assignments)


# --- stuck work ----------------------------------------------------------------------------------------


def stuck(world: World, now: Time, limits: Thresholds) -> Iterator[Finding]:
    for wl in _workloads(world):
        if wl.is_finished() or not wl.is_active:
            continue
        rs = wl.status.requeue_state
        for s in wl.status.admission_checks:
            due = retry_due(s, rs.requeue_at if rs is not None else None)
            if due is not None and now - due > limits.overdue:
                quota = "it holds quota" if wl.has_quota_reservation() else \
                    "it holds no quota, and Kueue moves a Retry only by evicting a workload that does"
                yield _finding("retry-overdue", wl,
                               f"check {s.name} is in Retry, due {relative(now, due)}; {quota}")
            if s.state == c.CHECK_PENDING:
                yield from _provisioned_but_pending(world, wl, s, now, limits)
        yield from _quota_held(wl, now, limits)


def _provisioned_but_pending(world: World, wl: Workload, s: AdmissionCheckState, now: Time,
                             limits: Thresholds) -> Iterator[Finding]:
    owned = world.owned_by_name(c.PROVISIONING_REQUEST, wl.metadata.namespace, wl.metadata.name)
    requests = invariants.requests_of(owned, wl, s.name)
    if not requests:
        return
    _, pr = requests[-1]
    cond = find_condition(pr.status.conditions, c.PR_PROVISIONED)
    if provisioning_request_phase(pr) != c.PR_PROVISIONED or cond is None or cond.last_transition_time is None:
        return
    if now - cond.last_transition_time > limits.overdue:
        yield _finding("provisioned-check-pending", wl,
                       f"request {pr.metadata.name} is Provisioned since {relative(now, cond.last_transition_time)} "
                       f"but check {s.name} is still Pending")


def _quota_held(wl: Workload, now: Time, limits: Thresholds) -> Iterator[Finding]:
    reserved = wl.condition(c.WORKLOAD_QUOTA_RESERVED)
    if reserved is None or reserved.status != c.TRUE or reserved.last_transition_time is None:
        return
    if wl.is_admitted() or wl.is_evicted():
        return
    waiting = [f"{s.name} ({s.state})" for s in wl.status.admission_checks if s.state != c.CHECK_READY]
    held = now - reserved.last_transition_time
    if waiting and held > limits.quota_wait:
        yield _finding("quota-held-waiting", wl,
                       f"holds quota in ClusterQueue {wl.status.admission.cluster_queue if wl.status.admission else '?'} "
                       f"for {format_duration(held)} waiting for {', '.join(waiting)}")


# --- the whole audit ----------------------------------------------------------------------------------


def settle_status(world: World, ctx: Context) -> Manager:
    """The queues' and checks' own status, as Kueue's controllers settle it once they run: fresh
    manifests carry none, and a queue "inactive" only until its check's controller has started
    is not news to anyone.  ``audit`` and ``explain`` both judge activity from it, so they never
    disagree on whether a queue or a check is active."""
    manager = Manager(world)
    manager.settle(ctx, (Actor.ADMISSION_CHECK, Actor.CLUSTER_QUEUE))
    return manager


def audit(objects: Iterable[KubeObject], now: Time, limits: Thresholds = Thresholds(),
          unread: frozenset[str] = frozenset(), config: Configuration = Configuration()) -> Report:
    """Every finding for ``objects`` at ``now``, errors first, then by object and rule.
    ``unread`` names the kinds the snapshot could not read; ``config`` is Kueue's."""
    world = World(objects)
    settle_status(world, Context(now=now, config=config))  # activity as explain judges it
    found = [*workload_invariants(world, now, config), *ownership(world, unread),
             *misconfiguration(world, now), *stuck(world, now, limits)]
    found.sort(key=lambda f: (f.severity != ERROR, f.object, f.rule, f.message))
    return Report(tuple(found))
