"""Upstream's rules, derived again from the spec for the invariants to judge by.

The invariants need some of the decisions the controllers make: which requests belong to a
(workload, check) and with which attempt number, the backoff delay, whether a workload needs a
request for a check at all, whether a request is in sync with its config, and whether
``syncCheckStates`` returns early because another check waits for its request.  They are written
here again from ``kueue-provisioning-controller.md`` (PC) and ``kueue-admission-and-requeue.md``
(AR) rather than imported from ``kueue_provreq.controllers``, so that a controller's mistake is not
mirrored by the check meant to catch it.
"""

from __future__ import annotations

from collections.abc import Iterable

from kueue_provreq.api import constants as c
from kueue_provreq.api import naming
from kueue_provreq.api.frozen import FrozenMap
from kueue_provreq.api.objects import KubeObject
from kueue_provreq.api.provisioning import ProvisioningRequest, ProvisioningRequestConfig, RetryStrategy
from kueue_provreq.api.queues import AdmissionCheck
from kueue_provreq.api.workload import AdmissionCheckState, Workload
from kueue_provreq.invariants.reading import provisioning_requests
from kueue_provreq.invariants.registry import Snapshot
from kueue_provreq.world import World

# --- which requests are a check's, and which attempt each is (PC §1.5, §1.7) --------------------


def attempt_of(pr: ProvisioningRequest, wl_name: str, check: str) -> int | None:
    """The attempt number ``ProvisioningRequestName`` put in ``pr``'s name for this (workload,
    check), or None when the name is not one of theirs (PC §1.5, §1.7)."""
    return naming.attempt_of(pr.metadata.name, wl_name, check)


def requests_of(objs: Iterable[KubeObject], wl: Workload, check: str) -> list[tuple[int, ProvisioningRequest]]:
    """(attempt, request) for every request of ``wl``'s ``check`` controlled by ``wl``, oldest
    first: upstream selects a check's requests by controller reference and name (PC §1.5)."""
    out = []
    for pr in provisioning_requests(objs):
        ref = pr.metadata.controller_ref()
        if pr.metadata.namespace != wl.metadata.namespace or ref is None or ref.uid != wl.metadata.uid:
            continue
        n = attempt_of(pr, wl.metadata.name, check)
        if n is not None:
            out.append((n, pr))
    return sorted(out, key=lambda t: t[0])


def retry_strategy(world: World, check: str) -> RetryStrategy | None:
    """The retryStrategy of the config the AdmissionCheck's parameters name (PC §1.3), or None
    when the check or its config is missing."""
    ac = world.get(c.ADMISSION_CHECK, "", check)
    if not isinstance(ac, AdmissionCheck) or ac.spec.parameters is None:
        return None
    prc = world.get(c.PROVISIONING_REQUEST_CONFIG, "", ac.spec.parameters.name)
    return prc.spec.retry_strategy if isinstance(prc, ProvisioningRequestConfig) else None


# --- retries and evictions (PC §1.13, AR A.6, A.7) ---------------------------------------------


def nominal_retry_delay(attempt: int, base: int, cap: int) -> int:
    """``min(base * 2**(n-1), max)`` with the first step never capped and ``max == 0`` meaning
    no cap (PC §1.13), the oracle of ``controllers.backoff``.

    >>> [nominal_retry_delay(n, 60, 1800) for n in range(1, 8)]
    [60, 120, 240, 480, 960, 1800, 1800]
    >>> nominal_retry_delay(1, 100, 50), nominal_retry_delay(2, 100, 50)
    (100, 50)
    """
    if attempt == 1:
        return base
    full: int = base << (attempt - 1)
    return full if cap == 0 else min(full, cap)


def retry_deadline(s: AdmissionCheckState) -> int | None:
    """When a check in Retry has the workload evicted: ``lastTransitionTime +
    requeueAfterSeconds`` (AR A.7); None for a check not in Retry."""
    if s.state != c.CHECK_RETRY or s.requeue_after_seconds is None or s.last_transition_time is None:
        return None
    return s.last_transition_time + s.requeue_after_seconds


def eviction_count(wl: Workload) -> int:
    """How many times ``wl`` was evicted: the sum of ``status.schedulingStats.evictions[*].count``,
    which ``Evict`` increments on every eviction (AR A.6 step 4)."""
    stats = wl.status.extra.get("schedulingStats")
    evictions = stats.get("evictions", ()) if isinstance(stats, FrozenMap) else ()
    return sum(int(e.get("count", 0)) for e in evictions if isinstance(e, FrozenMap))


# --- syncCheckStates' early return (PC §1.4, §1.5, §1.9) ---------------------------------------


def needs_request(wl: Workload, prc: ProvisioningRequestConfig) -> bool:
    """``reqIsNeeded`` (PC §1.4): a pod set with a positive count (the admitted one if set) whose
    containers or init containers request or limit one of the config's managedResources (any
    resource when there are none).  A pod set without an assignment makes upstream's reconcile
    fail before it writes anything, which counts as needing a request here."""
    managed = frozenset(prc.spec.managed_resources)
    admission = wl.status.admission
    assigned = {psa.name: psa for psa in admission.pod_set_assignments} if admission else {}
    for ps in wl.spec.pod_sets:
        if ps.count <= 0 or (managed and not pod_uses(ps.template, managed)):
            continue
        psa = assigned.get(ps.name)
        if psa is None or (psa.count if psa.count is not None else ps.count) > 0:
            return True
    return False


def pod_uses(template: FrozenMap[str, object], managed: frozenset[str]) -> bool:
    """``podUses`` (PC §1.4): requests or limits of any container or init container."""
    spec = template.get("spec")
    if not isinstance(spec, FrozenMap):
        return False
    for field in ("initContainers", "containers"):
        for ctr in spec.get(field) or ():
            res = ctr.get("resources") if isinstance(ctr, FrozenMap) else None
            for kind in ("requests", "limits"):
                named = res.get(kind) if isinstance(res, FrozenMap) else None
                if isinstance(named, FrozenMap) and not managed.isdisjoint(named):
                    return True
    return False


def in_sync(pr: ProvisioningRequest, prc: ProvisioningRequestConfig) -> bool:
    """``provReqSyncedWithConfig`` (PC §1.5): same class, and every config parameter has the same
    value on the request (extra request parameters, from annotations, do not matter)."""
    return pr.spec.provisioning_class_name == prc.spec.provisioning_class_name and \
        all((pr.spec.parameters or FrozenMap()).get(k) == v for k, v in prc.spec.parameters.items())


def waits_for_another_request(objs: Iterable[KubeObject], wl: Workload | None, check: str) -> bool:
    """Whether another provisioning check of ``wl`` needs a request and has none in sync with its
    config, so that ``syncCheckStates`` returns before writing a state for any check (PC §1.9,
    C:602-605; PC §1.14)."""
    if wl is None:
        return False
    objs = list(objs)
    configs = {o.metadata.name: o for o in objs if isinstance(o, ProvisioningRequestConfig)}
    checks = {o.metadata.name: o for o in objs if isinstance(o, AdmissionCheck)}
    for s in wl.status.admission_checks:
        ac = checks.get(s.name)
        if s.name == check or ac is None or ac.spec.parameters is None or \
                ac.spec.controller_name != c.PROVISIONING_REQUEST_CONTROLLER_NAME:
            continue
        prc = configs.get(ac.spec.parameters.name)
        if prc is not None and needs_request(wl, prc) and \
                not any(in_sync(pr, prc) for _, pr in requests_of(objs, wl, s.name)):
            return True
    return False


def waited_for_another_request(before: Snapshot, after: World, prev: Workload | None, wl: Workload,
                               check: str) -> bool:
    """Whether a reconcile during the step found another provisioning check of the workload
    needing a request without one in sync (:func:`waits_for_another_request`): either the world
    as the step found it, or the first reconcile that saw the step's change -- the workload, its
    checks and the configs as the step left them, the requests as the step found them, since a
    reconcile runs ``syncCheckStates`` before it makes any request (PC §1.2).  The second view
    covers a check the step added or whose config it changed."""
    if waits_for_another_request(before, prev, check):
        return True
    first: list[KubeObject] = [o for o in before if isinstance(o, ProvisioningRequest)]
    first += [o for o in after if not isinstance(o, ProvisioningRequest)]
    return waits_for_another_request(first, wl, check)
