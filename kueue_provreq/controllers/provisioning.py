"""Kueue's ProvisioningRequest admission-check controller (``provisioning_workload``).

One reconcile of a Workload does what upstream's ``Reconcile`` does, in the same order,
because the order is observable: select the active (or last) request per check, patch the
check states once, delete the requests no check uses, then create what is missing and hand
PodTemplates over to their request.

Determinism.  Upstream iterates Go maps (checks, a podset's flavors), so with several
provisioning checks on one workload its outcome can depend on a random order.  Here checks
are visited in ``status.admissionChecks`` order (the workload controller keeps it sorted by
name) and a podset's flavors in sorted flavor-name order; with one provisioning check, which
is all upstream's tests use, the result is the same as upstream's.

Retry paths.  By default (KEP-3258, since v0.15) a failed request within
``backoffLimitCount`` puts the check in ``Retry`` with ``requeueAfterSeconds``; the workload
controller evicts and requeues the workload, and the next quota reservation creates attempt
``retryCount + 1``.  With the feature gate ``KeepQuotaForProvReqRetry`` (v0.9-v0.11) the
workload keeps its quota instead: the check goes back to ``Pending`` with the retry message,
no ``Retry`` state is written (so nothing evicts), and this controller itself creates the next
attempt once the nominal backoff of the failed attempt has passed since the failing
condition's transition time, asking to be woken up until then.

KEP-993 (opt-in, the ``kep-993-preemption`` switch; upstream never implemented it).  While
Cluster Autoscaler reports that it finds no capacity (``Accepted`` with ``Provisioned=False``),
the check is set to ``PreemptionRequired`` instead of ``Pending``: preempting lower-priority
workloads may free the capacity, and a check whose AdmissionCheck has ``preemptionPolicy:
AfterCheckPassedOrOnDemand`` would otherwise hold back the very preemptions it waits for.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from itertools import chain
from typing import Any

import attrs

from kueue_provreq.api import constants as c
from kueue_provreq.api import naming
from kueue_provreq.api.config import Configuration
from kueue_provreq.api.evolve import evolve
from kueue_provreq.api.frozen import EMPTY, FrozenMap, freeze, thaw
from kueue_provreq.api.memo import memo
from kueue_provreq.api.meta import Condition, OwnerReference, Time
from kueue_provreq.api.objects import Key, already_exists, not_found, not_in_cache
from kueue_provreq.api.provisioning import (
    PodTemplate,
    ProvisioningRequest,
    ProvisioningRequestConfig,
    ProvisioningRequestConfigSpec,
    ProvisioningRequestPodSet,
    ProvisioningRequestSpec,
    Reference,
)
from kueue_provreq.api.quantity import QuantityError, parse_quantity
from kueue_provreq.api.queues import (
    AdmissionCheck,
    ParametersReference,
    ResourceFlavor,
    ResourceFlavorSpec,
)
from kueue_provreq.api.workload import (
    AdmissionCheckState,
    PodSet,
    PodSetAssignment,
    PodSetUpdate,
    RequeueState,
    Workload,
)
from kueue_provreq.controllers.admissioncheck import reference_error
from kueue_provreq.controllers.backoff import (
    NS,
    check_requeue_after_seconds,
    nominal_delay_seconds,
    wait_time_ns,
)
from kueue_provreq.controllers.context import Context
from kueue_provreq.controllers.workload_status import set_admission_check_state
from kueue_provreq.errors import KueueProvreqError
from kueue_provreq.machines import (
    ADMISSION_CHECK_MACHINE,
    CheckTrigger,
    Guard,
    Transition,
    requests,
)
from kueue_provreq.world import Result, Txn, World, truncate

_MANAGED_LABELS: FrozenMap[str, str] = FrozenMap({c.LABEL_MANAGED: "true"})
_QUANTITY_MAPS = frozenset({"requests", "limits", "overhead"})


class ReconcileError(KueueProvreqError):
    """Ends a reconcile the way a Go ``return err`` does; ``str(e)`` is upstream's ``err.Error()``."""


class BadParametersRef(ReconcileError):
    """The AdmissionCheck's parameters reference is unusable (not a NotFound)."""


# --- names (api.naming) ---------------------------------------------------------------------


def go_quote(s: str) -> str:
    """Go's ``%q`` for the names this controller prints."""
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


# --- configuration -----------------------------------------------------------------------


def config_from_ref(txn: Txn, ref: ParametersReference | None) -> ProvisioningRequestConfig | None:
    """``ConfigFromRef``: validation errors raise; a missing config is ``None`` (NotFound)."""
    error = reference_error(ref)
    if error is not None or ref is None:
        raise BadParametersRef(error or c.ERR_MISSING_PARAMETERS)
    prc = txn.get(c.PROVISIONING_REQUEST_CONFIG, "", ref.name)
    return prc if isinstance(prc, ProvisioningRequestConfig) else None


def _synced_with_config(pr: ProvisioningRequest, prc: ProvisioningRequestConfig) -> bool:
    """Only class and the config's own parameters count; extra (annotation) parameters do not."""
    if pr.spec.provisioning_class_name != prc.spec.provisioning_class_name:
        return False
    params = pr.spec.parameters or EMPTY
    if params is prc.spec.parameters:
        return True  # made from this very config (``_parameters`` shares its map)
    return all(params.get(k) == v for k, v in prc.spec.parameters.items())


# --- podsets of interest -------------------------------------------------------------------


def _containers(pod_spec: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    return chain(pod_spec.get("initContainers") or (), pod_spec.get("containers") or ())


def _pod_uses(template: Mapping[str, Any], managed: frozenset[str]) -> bool:
    """Requests or limits of any (init) container; pod-level ``resources`` do not count."""
    for ctr in _containers(template.get("spec") or EMPTY):
        res = ctr.get("resources") or EMPTY
        for kind in ("requests", "limits"):
            if not managed.isdisjoint(res.get(kind) or ()):
                return True
    return False


def _pod_sets_of_interest(wl: Workload, spec: ProvisioningRequestConfigSpec) -> list[PodSet]:
    if not spec.managed_resources:
        return [ps for ps in wl.spec.pod_sets if ps.count > 0]
    managed = frozenset(spec.managed_resources)
    return [ps for ps in wl.spec.pod_sets if ps.count > 0 and _pod_uses(ps.template, managed)]


def _admitted_count(ps: PodSet, psa: PodSetAssignment) -> int:
    return psa.count if psa.count is not None else ps.count


def req_is_needed(wl: Workload, prc: ProvisioningRequestConfig,
                  assignments: Mapping[str, PodSetAssignment]) -> bool:
    """Short-circuits on the first podset with a positive admitted count, so a missing
    assignment after it is only noticed later, by the merge (as upstream)."""
    for ps in _pod_sets_of_interest(wl, prc.spec):
        psa = assignments.get(ps.name)
        if psa is None:
            raise ReconcileError(f"{c.ERR_INCONSISTENT_ASSIGNMENTS}: "
                                 f"{c.ERR_MISSING_ASSIGNMENT.format(name=ps.name)}")
        if _admitted_count(ps, psa) > 0:
            return True
    return False


# --- podset merging ------------------------------------------------------------------------


@attrs.define
class MergedPodSet:
    """One PodTemplate of the request: the first podset of a group stands for all of it."""

    name: str
    pod_set: PodSet
    assignment: PodSetAssignment
    count: int


def _empty(v: Any) -> bool:
    return v is None or (isinstance(v, (tuple, Mapping)) and not v)


def semantic_equal(a: Any, b: Any, quantities: bool = False) -> bool:
    """``equality.Semantic.DeepEqual`` on frozen JSON: nil equals empty, quantities by value."""
    if _empty(a) and _empty(b):
        return True
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return all(semantic_equal(a.get(k), b.get(k), quantities or k in _QUANTITY_MAPS)
                   for k in a.keys() | b.keys())
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(semantic_equal(x, y, quantities) for x, y in zip(a, b, strict=True))
    if quantities and isinstance(a, (str, int, float)) and isinstance(b, (str, int, float)):
        try:
            return parse_quantity(a) == parse_quantity(b)
        except QuantityError:
            return bool(a == b)
    return bool(a == b)


def _same_requests(a: Mapping[str, Any], b: Mapping[str, Any], field: str) -> bool:
    ca, cb = a.get(field) or (), b.get(field) or ()
    if len(ca) != len(cb):
        return False
    return all(semantic_equal((x.get("resources") or EMPTY).get("requests"),
                              (y.get("resources") or EMPTY).get("requests"), True)
               for x, y in zip(ca, cb, strict=True))


_SCHEDULING_FIELDS = ("resources", "nodeSelector", "tolerations", "affinity", "resourceClaims")


def can_merge(a: PodSet, b: PodSet, policy: str | None) -> bool:
    if policy == c.MERGE_IDENTICAL_POD_TEMPLATES:
        return semantic_equal(a.template, b.template)
    if policy == c.MERGE_IDENTICAL_SCHEDULING_REQUIREMENTS:
        sa, sb = a.template.get("spec") or EMPTY, b.template.get("spec") or EMPTY
        return (_same_requests(sa, sb, "containers") and _same_requests(sa, sb, "initContainers")
                and all(semantic_equal(sa.get(f), sb.get(f)) for f in _SCHEDULING_FIELDS))
    return False


def merge_pod_sets(wl: Workload, spec: ProvisioningRequestConfigSpec,
                   assignments: Mapping[str, PodSetAssignment]) -> list[MergedPodSet]:
    """Groups compare with their first member only, in spec order; flavors are ignored."""
    out: list[MergedPodSet] = []
    policy = spec.pod_set_merge_policy
    for ps in _pod_sets_of_interest(wl, spec):
        psa = assignments.get(ps.name)
        if psa is None:
            raise ReconcileError(c.ERR_INCONSISTENT_ASSIGNMENTS)
        count = _admitted_count(ps, psa)
        if count <= 0:
            continue
        for group in out:
            if can_merge(group.pod_set, ps, policy):
                group.count += count
                break
        else:
            out.append(MergedPodSet(ps.name, ps, psa, count))
    return out


# --- PodTemplates --------------------------------------------------------------------------


def _controller_ref(obj: Workload | ProvisioningRequest, api_version: str) -> OwnerReference:
    m = obj.metadata
    return OwnerReference(api_version, obj.KIND, m.name, m.uid, True, True)


def _use_limits_as_missing_requests(resources: dict[str, Any]) -> None:
    limits = resources.get("limits")
    if not limits:
        return
    requests = resources.setdefault("requests", {})
    for name, q in limits.items():
        requests.setdefault(name, q)


def pod_template_spec(txn: Txn, ps: PodSet, psa: PodSetAssignment) -> FrozenMap[str, Any]:
    """The podset's template with its flavors' node labels and tolerations applied
    (``podset.FromAssignment`` + ``podset.Merge``) and limits copied to missing requests."""
    specs: list[ResourceFlavorSpec] = []
    for flavor in sorted(set(psa.flavors.values())):
        rf = txn.get(c.RESOURCE_FLAVOR, "", flavor)
        if not isinstance(rf, ResourceFlavor):
            raise ReconcileError(not_in_cache(c.RESOURCE_FLAVOR, flavor))
        specs.append(rf.spec)
    return _merged_template(ps.template, tuple(specs))  # raises on a conflict: nothing is kept


@memo(4096)
def _merged_template(pod_template: FrozenMap[str, Any], flavors: tuple[ResourceFlavorSpec, ...]) -> FrozenMap[str, Any]:
    """Memoised: a pure function of the podset template and the flavor specs, and workloads of
    one job kind share their template, so most requests re-derive the same one (a thaw and a
    freeze of the whole template)."""
    node_labels: dict[str, str] = {}
    tolerations: list[Any] = []
    for flavor in flavors:
        for k, v in flavor.node_labels.items():
            node_labels.setdefault(k, v)  # the first flavor wins between flavors
        tolerations.extend(flavor.tolerations)
    template = thaw(pod_template)
    spec = template.setdefault("spec", {})
    if node_labels:
        selector = spec.setdefault("nodeSelector", {})
        for k, v in node_labels.items():
            old = selector.setdefault(k, v)
            if old != v:
                raise ReconcileError(c.ERR_POD_SET_UPDATE_CONFLICT.format(
                    field="nodeSelector", key=k, value1=old, value2=v))
    if tolerations:
        have = spec.get("tolerations") or []
        for t in tolerations:
            t = thaw(t)
            if t not in have:
                have.append(t)
        spec["tolerations"] = have
    for ctr in chain(spec.get("initContainers") or (), spec.get("containers") or ()):
        _use_limits_as_missing_requests(ctr.get("resources") or {})
    if spec.get("resources"):
        _use_limits_as_missing_requests(spec["resources"])
    frozen: FrozenMap[str, Any] = freeze(template)
    return frozen


def _transfer_templates(txn: Txn, wl: Workload, req: ProvisioningRequest) -> None:
    """``syncProvisionRequestsPodTemplates``: templates start owned by the Workload (so a failed
    request creation leaves no orphans) and move to the request once both exist in the cache."""
    wl_uid, req_uid = wl.metadata.uid, req.metadata.uid
    for ps in req.spec.pod_sets:
        pt = txn.get(c.POD_TEMPLATE, req.metadata.namespace, ps.pod_template_ref.name)
        if not isinstance(pt, PodTemplate):
            continue
        refs = pt.metadata.owner_references
        ctrl = pt.metadata.controller_ref()
        if ctrl is not None and ctrl.uid == req_uid:
            continue  # handed over already (every pass after the one that creates the request)
        if ctrl is not None and ctrl.uid == wl_uid:
            refs = tuple(r for r in refs if not _refers_to(r, c.KUEUE_GROUP, c.WORKLOAD, wl.metadata.name))
            ctrl = None
        if ctrl is None or ctrl.uid != req_uid:
            if ctrl is not None:
                raise ReconcileError(c.ERR_ALREADY_OWNED.format(
                    namespace=pt.metadata.namespace, name=pt.metadata.name, kind=ctrl.kind, owner=ctrl.name))
            same = [i for i, r in enumerate(refs)
                    if _refers_to(r, c.AUTOSCALING_GROUP, c.PROVISIONING_REQUEST, req.metadata.name)]
            req_ref = _controller_ref(req, c.AUTOSCALING_V1)
            refs = (refs[:same[0]] + (req_ref,) + refs[same[0] + 1:]) if same else refs + (req_ref,)
        if refs == pt.metadata.owner_references:
            continue
        err = txn.update(evolve(pt, metadata=evolve(pt.metadata, owner_references=refs)))
        if err is not None:
            raise ReconcileError(err)


def _refers_to(ref: OwnerReference, group: str, kind: str, name: str) -> bool:
    """controller-runtime's ``referSameObject``: group, kind and name (not the version)."""
    return ref.kind == kind and ref.name == name and ref.api_version.split("/")[0] == group


# --- check states --------------------------------------------------------------------------


def pod_set_updates(wl: Workload, pr: ProvisioningRequest,
                    prc: ProvisioningRequestConfig) -> tuple[PodSetUpdate, ...]:
    """Only a merge group's representative gets an update (templates are named after it)."""
    ref_to_pod_set = {naming.pod_template_name(pr.metadata.name, ps.name): ps.name for ps in wl.spec.pod_sets}
    annotations = FrozenMap({c.ANNOTATION_CONSUME_PROVISIONING_REQUEST: pr.metadata.name,
                             c.ANNOTATION_PROVISIONING_CLASS_NAME: pr.spec.provisioning_class_name})
    selectors = prc.spec.pod_set_updates
    node_selector: FrozenMap[str, str] | None = None
    if selectors is not None:
        details = pr.status.provisioning_class_details
        node_selector = FrozenMap({ns.key: details[ns.value_from_provisioning_class_detail]
                                   for ns in selectors.node_selector
                                   if ns.value_from_provisioning_class_detail in details})
    return tuple(PodSetUpdate(name=ref_to_pod_set.get(p.pod_template_ref.name, ""), annotations=annotations,
                              node_selector=node_selector) for p in pr.spec.pod_sets)


@memo(4096)
def _check_transition(state: str, trigger: CheckTrigger, check: str, within_backoff_limit: bool = False,
                      keep_quota: bool = False, newer_attempt: bool = False) -> Transition:
    """The check machine's answer with the guards of ``request_failed`` (``MachineTable.fire``,
    recorded as ``MachineTable.transition`` records it), memoised by plain values: this is the
    reconcile's hot path, and the table's own memo is keyed by the guards' mapping."""
    guards = {Guard.WITHIN_BACKOFF_LIMIT: within_backoff_limit, Guard.KEEP_QUOTA: keep_quota,
              Guard.NEWER_ATTEMPT: newer_attempt} if trigger == CheckTrigger.REQUEST_FAILED else None
    return Transition.of(ADMISSION_CHECK_MACHINE, state, trigger, ADMISSION_CHECK_MACHINE.fire(state, trigger, guards),
                         check)


Decision = tuple[AdmissionCheckState, Transition]
"""A check's new state as the write gives it, and the fire that decided it."""


def _patch(old: AdmissionCheckState, t: Transition, message: str,
           pod_set_updates: tuple[PodSetUpdate, ...] | None = None,
           requeue_after_seconds: int | None = None) -> Decision | None:
    """What ``SetAdmissionCheckState`` is given: the state the machine answered, the check's
    own transition time (``syncCheckStates`` hands over a copy of the check, whose
    ``lastTransitionTime`` ``SetAdmissionCheckState`` keeps when it is set, so this controller's
    state changes never move it) and the check's own retryCount (this controller never writes
    it: ``SetAdmissionCheckState`` keeps it, and then keeps this state as it is); ``None`` when
    nothing would change."""
    psu = old.pod_set_updates if pod_set_updates is None else pod_set_updates
    requeue = old.requeue_after_seconds if requeue_after_seconds is None else requeue_after_seconds
    if t.target == old.state and message == old.message and psu == old.pod_set_updates \
            and requeue == old.requeue_after_seconds:
        return None
    return AdmissionCheckState(name=old.name, state=t.target, last_transition_time=old.last_transition_time,
                               message=message, pod_set_updates=psu, retry_count=old.retry_count,
                               requeue_after_seconds=requeue), t


def _after_failure(st: AdmissionCheckState, cond: Condition, retry_message: str, attempt: int,
                   prc: ProvisioningRequestConfig, keep_quota: bool, ctx: Context,
                   retried: int) -> Decision | None:
    """The attempt is over (Failed, or BookingExpired before admission).  ``requeueAfterSeconds``
    is recomputed on every reconcile that (re)enters Retry for a newer attempt, from the
    unchanged retryCount.  ``retried`` is what the attempt must exceed to be newer: the check's
    retryCount (pre-KEP-3258: the workload's shared requeueState.count, and no
    requeueAfterSeconds)."""
    rs = prc.spec.retry_strategy
    within = attempt <= rs.backoff_limit_count
    newer = attempt > retried
    t = _check_transition(st.state, CheckTrigger.REQUEST_FAILED, st.name, within, keep_quota, newer)
    if not within:
        return _patch(st, t, cond.message)
    message = retry_message.format(message=cond.message)
    if t.target == c.CHECK_RETRY and newer and not ctx.config.pre_kep_3258:
        return _patch(st, t, message, requeue_after_seconds=check_requeue_after_seconds(
            st.retry_count, rs.backoff_base_seconds, rs.backoff_max_seconds, ctx.jitter))
    return _patch(st, t, message)


def _state_for_request(st: AdmissionCheckState, wl: Workload, pr: ProvisioningRequest, attempt: int,
                       prc: ProvisioningRequestConfig, keep_quota: bool, ctx: Context) -> Decision | None:
    """The request's deciding condition (``machines.requests``: first True in precedence) fires
    its check trigger, unless the workload's state makes it change nothing.  ``attempt`` is the
    request's, read off its name."""
    found = requests.deciding(pr.status.conditions)
    if found is None:
        return _patch(st, _check_transition(st.state, CheckTrigger.NO_DECISION, st.name), "")
    row, cond = found
    if not row.applies(wl.is_admitted(), wl.is_active):
        return None
    if row.ends_attempt:
        assert row.retry_message is not None
        retried = _pre_kep_3258_count(wl) if ctx.config.pre_kep_3258 else (st.retry_count or 0)
        return _after_failure(st, cond, row.retry_message, attempt, prc, keep_quota, ctx, retried)
    if row.message_from is not None:
        source = next((cd for cd in pr.status.conditions if cd.type == row.message_from), None)
        if source is None:
            return None
        cond = source
    trigger = row.kep_993_trigger if row.kep_993_trigger is not None and ctx.config.kep_993_preemption \
        else row.check_trigger
    t = _check_transition(st.state, trigger, st.name)
    if row.check_trigger == CheckTrigger.PROVISIONED:
        if t.target == st.state:  # already Ready: late details and messages are not picked up
            return None
        return _patch(st, t, cond.message, pod_set_updates(wl, pr, prc))
    return _patch(st, t, cond.message)


def _sync_check_states(txn: Txn, wl: Workload, configs: Mapping[str, ProvisioningRequestConfig | None],
                       needed: Mapping[str, bool], active: Mapping[str, tuple[ProvisioningRequest, int]],
                       keep_quota: bool, ctx: Context) -> tuple[Workload, list[str] | None]:
    """One status write for every check, then one event per check whose state moved.  A check
    that needs a request but has none yet aborts the whole write (upstream's early return):
    returns the workload and the checks left undecided (the one without a request and those
    after it; none when every check was decided), or None when a check before that one was to
    change (the aborted write is left to the next pass)."""
    states = wl.status.admission_checks
    by_name = {s.name: s for s in states}
    changed: list[tuple[AdmissionCheckState, Decision]] = []
    for i, (check, prc) in enumerate(configs.items()):
        old = by_name[check]
        decision: Decision | None
        if prc is None:
            decision = _patch(old, _check_transition(old.state, CheckTrigger.CONFIG_MISSING, check),
                              c.MSG_CHECK_INACTIVE)
        elif not needed[check]:
            t = _check_transition(old.state, CheckTrigger.REQUEST_NOT_NEEDED, check)
            decision = None if t.target == old.state else _patch(old, t, c.MSG_NO_REQUEST_NEEDED, ())
        else:
            found = active.get(check)
            if found is None:
                return wl, None if changed else list(configs)[i:]
            decision = _state_for_request(old, wl, found[0], found[1], prc, keep_quota, ctx)
        if decision is not None:
            changed.append((old, decision))
    if not changed:
        return wl, []
    for _, (new, _t) in changed:
        states = set_admission_check_state(states, new, ctx.now)
    wl = wl.with_status(admission_checks=states)
    if ctx.config.pre_kep_3258:
        wl = _pre_kep_3258_requeue_state(wl, changed, configs, ctx)
    err = txn.update(wl, tuple([t for _, (_new, t) in changed]))
    if err is not None:
        raise ReconcileError(err)
    for old, (new, _t) in changed:
        if old.state != new.state:
            msg = c.MSG_CHECK_UPDATED.format(name=new.name, old=old.state, new=new.state)
            if new.message:
                msg += c.MSG_WITH_MESSAGE.format(message=new.message)
            txn.event(c.EVENT_TYPE_NORMAL, c.EVENT_ADMISSION_CHECK_UPDATED, msg, wl)
    return wl, []


# --- creating requests ---------------------------------------------------------------------


def _handle_error(txn: Txn, wl: Workload, check: str, kind: str, name: str, msg: str, err: str) -> ReconcileError:
    """A create failure is surfaced as a Warning event and the check's message, unless it is an
    AlreadyExists the cache has not caught up with (the next reconcile will see the object)."""
    if err == already_exists(kind, name) and txn.get(kind, wl.metadata.namespace, name) is None:
        return ReconcileError(err)
    txn.event(c.EVENT_TYPE_WARNING, c.EVENT_FAILED_CREATE, msg, wl)
    st = next(s for s in wl.status.admission_checks if s.name == check)
    states = set_admission_check_state(wl.status.admission_checks,
                                       evolve(st, message=truncate(msg, c.CONDITION_MESSAGE_LIMIT)), txn.now)
    if states != wl.status.admission_checks:
        patch_err = txn.update(wl.with_status(admission_checks=states))
        if patch_err is not None:
            return ReconcileError(f"{err}\n{patch_err}")  # errors.Join
    return ReconcileError(err)


def _parameters(wl: Workload, prc: ProvisioningRequestConfig) -> FrozenMap[str, str]:
    """Config parameters, overridden by ``provreq.kueue.x-k8s.io/`` workload annotations (the
    config's own map when none overrides it: every request of the config shares it)."""
    prefix = c.ANNOTATION_PROVREQ_PREFIX
    overrides = {key[len(prefix):]: value for key, value in wl.metadata.annotations.items() if key.startswith(prefix)}
    if not overrides:
        return prc.spec.parameters
    return FrozenMap({**prc.spec.parameters, **overrides})


def _retry_wait(pr: ProvisioningRequest, attempt: int, prc: ProvisioningRequestConfig,
                now: Time) -> int:
    """KeepQuotaForProvReqRetry: seconds left before attempt ``attempt + 1`` may be created,
    counted from the deciding condition's transition time (Failed, else BookingExpired)."""
    found = requests.deciding(pr.status.conditions)
    assert found is not None and found[0].ends_attempt
    cond = found[1]
    if cond.last_transition_time is None:
        return 0
    rs = prc.spec.retry_strategy
    delay = nominal_delay_seconds(attempt, rs.backoff_base_seconds, rs.backoff_max_seconds)
    return cond.last_transition_time + delay - now


def _create_request(txn: Txn, wl: Workload, check: str, prc: ProvisioningRequestConfig, name: str,
                    assignments: Mapping[str, PodSetAssignment]) -> ProvisioningRequest:
    ns = wl.metadata.namespace
    wl_ref = _controller_ref(wl, c.KUEUE_V1BETA2)
    pod_sets = []
    for m in merge_pod_sets(wl, prc.spec, assignments):
        pt_name = naming.pod_template_name(name, m.name)
        if txn.get(c.POD_TEMPLATE, ns, pt_name) is None:
            try:
                template = pod_template_spec(txn, m.pod_set, m.assignment)
                pt = PodTemplate(txn.new_metadata(pt_name, ns, _MANAGED_LABELS, (wl_ref,)), template=template)
                _, err = txn.create(pt)
            except ReconcileError as e:
                err = str(e)
            if err is not None:
                raise _handle_error(txn, wl, check, c.POD_TEMPLATE, pt_name,
                                    c.MSG_ERROR_CREATING_POD_TEMPLATE.format(name=go_quote(pt_name), error=err), err)
        pod_sets.append(ProvisioningRequestPodSet(Reference(pt_name), m.count))
    req = ProvisioningRequest(
        txn.new_metadata(name, ns, _MANAGED_LABELS, (wl_ref,)),
        ProvisioningRequestSpec(prc.spec.provisioning_class_name, _parameters(wl, prc), tuple(pod_sets)))
    stored, err = txn.create(req)
    if err is not None:
        raise _handle_error(txn, wl, check, c.PROVISIONING_REQUEST, name,
                            c.MSG_ERROR_CREATING_PROVISIONING_REQUEST.format(name=go_quote(name), error=err), err)
    assert isinstance(stored, ProvisioningRequest)
    txn.event(c.EVENT_TYPE_NORMAL, c.EVENT_PROVISIONING_REQUEST_CREATED,
              c.MSG_PROVISIONING_REQUEST_CREATED.format(name=go_quote(name)), wl)
    return stored


def _sync_owned_requests(txn: Txn, wl: Workload, configs: Mapping[str, ProvisioningRequestConfig | None],
                         needed: Mapping[str, bool], active: dict[str, tuple[ProvisioningRequest, int]],
                         assignments: Mapping[str, PodSetAssignment], keep_quota: bool
                         ) -> tuple[int | None, list[str]]:
    """Never (re)creates for a Ready check.  Without a request the attempt is
    ``retryCount + 1``, so naming survives the cleanup of failed requests on eviction; after a
    failure seen while Pending it is the failed attempt + 1.  Returns the keep-quota wake-up
    and the checks it created a request for."""
    wake: int | None = None
    created: list[str] = []
    for check, prc in configs.items():
        if prc is None or not needed[check]:
            continue
        ac = wl.check_state(check)
        assert ac is not None  # ``configs`` holds the workload's own checks
        if ac.state == c.CHECK_READY:
            continue
        found = active.get(check)
        req = found[0] if found is not None else None
        attempt = (ac.retry_count or 0) + 1
        create = found is None
        if found is not None and ac.state == c.CHECK_PENDING and \
                requests.attempt_over(found[0].status.conditions, wl.is_admitted()):
            failed = found[1]
            attempt, create = failed + 1, True
            if keep_quota:
                left = _retry_wait(found[0], failed, prc, txn.now)
                if left > 0:
                    create = False
                    wake = left if wake is None else min(wake, left)
        if create:
            name = naming.provisioning_request_name(wl.metadata.name, check, attempt)
            req = _create_request(txn, wl, check, prc, name, assignments)
            created.append(check)
        if req is not None:
            _transfer_templates(txn, wl, req)
    return wake, created


# --- reconcile -----------------------------------------------------------------------------


def _delete(txn: Txn, pr: ProvisioningRequest) -> None:
    m = pr.metadata
    err = txn.delete(c.PROVISIONING_REQUEST, m.namespace, m.name)
    if err is not None and err != not_found(c.PROVISIONING_REQUEST, m.name):
        raise ReconcileError(err)


def _active_requests(wl: Workload, configs: Mapping[str, ProvisioningRequestConfig | None],
                     needed: Mapping[str, bool], owned: list[ProvisioningRequest]
                     ) -> dict[str, tuple[ProvisioningRequest, int]]:
    """Per check, the synced request with the highest attempt (the first one seen on a tie),
    with that attempt."""
    active: dict[str, tuple[ProvisioningRequest, int]] = {}
    for check, prc in configs.items():
        if prc is None or not needed[check]:
            continue
        best, best_attempt = None, 0
        for pr in owned:
            attempt = naming.attempt_of(pr.metadata.name, wl.metadata.name, check)
            if attempt is None or not _synced_with_config(pr, prc):
                continue
            if best is None or attempt > best_attempt:
                best, best_attempt = pr, attempt
        if best is not None:
            active[check] = (best, best_attempt)
    return active


def handled(wl: Workload, config: Configuration) -> bool:
    """Whether the reconcile goes past its first test: a workload that is finished, evicted or
    holding quota (before KEP-3258, an evicted one only while it still holds quota)."""
    true = wl.status.true_types
    if c.WORKLOAD_FINISHED in true:
        return True
    if c.WORKLOAD_EVICTED in true:
        return c.WORKLOAD_QUOTA_RESERVED in true or not config.pre_kep_3258
    return c.WORKLOAD_QUOTA_RESERVED in true


def syncing(wl: Workload, config: Configuration) -> bool:
    """Whether the reconcile syncs checks and requests (a workload holding quota that is
    neither finished nor evicted, before KEP-3258 evicted or not), rather than only cleaning
    up (or doing nothing)."""
    true = wl.status.true_types
    if c.WORKLOAD_FINISHED in true or c.WORKLOAD_QUOTA_RESERVED not in true:
        return False
    return config.pre_kep_3258 or c.WORKLOAD_EVICTED not in true


def _reconcile(txn: Txn, key: Key, ctx: Context) -> tuple[int | None, bool]:
    """Returns the keep-quota wake-up and whether the pass settled what it wrote."""
    wl = txn.get(*key)
    if not isinstance(wl, Workload):
        return None, True
    config = ctx.config
    if not handled(wl, config):
        return None, True
    owned = [pr for pr in txn.owned_by_name(c.PROVISIONING_REQUEST, key[1], key[2])
             if isinstance(pr, ProvisioningRequest)]
    if not syncing(wl, config):
        if wl.is_finished() or config.gate(c.GATE_CLEANUP_ON_EVICTION):
            # PodTemplates go with their request through the garbage collector.
            for pr in owned:
                _delete(txn, pr)
        return None, True

    configs: dict[str, ProvisioningRequestConfig | None] = {}
    for st in wl.status.admission_checks:
        ac = txn.get(c.ADMISSION_CHECK, "", st.name)
        if isinstance(ac, AdmissionCheck) and ac.spec.controller_name == c.PROVISIONING_REQUEST_CONTROLLER_NAME:
            configs[st.name] = config_from_ref(txn, ac.spec.parameters)
    admission = wl.status.admission
    assignments = {} if admission is None else {psa.name: psa for psa in admission.pod_set_assignments}
    needed: dict[str, bool] = {}
    for check, prc in configs.items():
        if prc is not None:
            needed[check] = req_is_needed(wl, prc, assignments)
    active = _active_requests(wl, configs, needed, owned) if owned else {}
    keep_quota = config.gate(c.GATE_KEEP_QUOTA_FOR_PROVREQ_RETRY)

    wl, undecided = _sync_check_states(txn, wl, configs, needed, active, keep_quota, ctx)
    if owned:
        in_use = {pr.metadata.name for pr, _ in active.values()}
        for pr in owned:
            if pr.metadata.name not in in_use:
                _delete(txn, pr)
    wake, created = _sync_owned_requests(txn, wl, configs, needed, active, assignments, keep_quota)
    # A new request is what the next pass decides its check from (no condition yet: Pending,
    # no message).  The pass is settled when every check it left undecided got a request and
    # already says so (none of the others changes: their requests are the same).
    if undecided is None:
        return wake, False
    if not created:
        return wake, not undecided
    settled = set(undecided) <= set(created) and all(_decides_nothing_yet(wl, check) for check in created)
    return wake, settled


def _decides_nothing_yet(wl: Workload, check: str) -> bool:
    """Whether a request without conditions leaves ``check`` as it is (``_state_for_request``
    for a new request)."""
    st = wl.check_state(check)
    return st is not None and _patch(st, _check_transition(st.state, CheckTrigger.NO_DECISION, check), "") is None


def reconcile(world: World, key: Key, ctx: Context) -> Result:
    txn = Txn(world, ctx.now)
    try:
        wake, settled = _reconcile(txn, key, ctx)
    except ReconcileError as e:
        return txn.result(error=str(e))
    return txn.result(requeue_after=wake, settled=settled)


# --- pre-KEP-3258 semantics (Kueue v0.9 - v0.14), selected by the pre-kep-3258 switch ---


def _pre_kep_3258_count(wl: Workload) -> int:
    rs = wl.status.requeue_state
    return (rs.count or 0) if rs is not None else 0


def _pre_kep_3258_requeue_state(wl: Workload, changed: list[tuple[AdmissionCheckState, Decision]],
                                configs: Mapping[str, ProvisioningRequestConfig | None], ctx: Context) -> Workload:
    """Before KEP-3258 this controller wrote the workload's (shared) requeueState itself when a
    check entered Retry: ``n = count + 1; count = n; requeueAt = now + backoff(n)``, with the
    entering check's retryStrategy (``UpdateRequeueState`` at v0.9-v0.14; PC §5 v0.9)."""
    entering = [new.name for old, (new, _t) in changed if new.state == c.CHECK_RETRY != old.state]
    prc = configs.get(entering[0]) if entering else None
    if prc is None:
        return wl
    rs = prc.spec.retry_strategy
    n = _pre_kep_3258_count(wl) + 1
    wait = wait_time_ns(rs.backoff_base_seconds, rs.backoff_max_seconds, n, ctx.jitter) // NS
    return wl.with_status(requeue_state=RequeueState(count=n, requeue_at=Time(ctx.now + wait)))
