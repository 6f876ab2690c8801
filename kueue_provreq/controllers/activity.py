"""Whether a ClusterQueue can admit: Kueue's scheduler cache decides it from the objects the
queue references (``clusterQueue.updateWithAdmissionChecks``, ``updateQueueStatus``,
``inactiveReason``), and everyone else reads that one answer: the ClusterQueue status
reconciler writes it as the ``Active`` condition, the scheduler sets aside the workloads of an
inactive queue ("ClusterQueue <cq> is inactive"), and the queue manager counts them all as
inadmissible.  Topology (TAS) is not modelled.
"""

from __future__ import annotations

from kueue_provreq.api import constants as c
from kueue_provreq.api.memo import memo
from kueue_provreq.api.meta import is_true
from kueue_provreq.api.queues import AdmissionCheck, ClusterQueue, ClusterQueueSpec, ResourceFlavor
from kueue_provreq.world import World, truncate


def inactive_reason(world: World, cq: ClusterQueue) -> tuple[str, str] | None:
    """(reason, message) of an inactive ClusterQueue, None when it can admit.

    A terminating ClusterQueue (deleted, its finalizer still held by the quota its workloads
    hold) is ``Terminating`` and nothing else, as the cache's status overrides the rest.

    The reason is the first problem in upstream's order (Stopped, FlavorNotFound,
    AdmissionCheckNotFound, AdmissionCheckInactive, MultipleMultiKueueAdmissionChecks,
    MultiKueueAdmissionCheckAppliedPerFlavor, MultiKueueWithProvisioningRequest); the message
    lists them all.  Missing flavors keep the ClusterQueue's order, check names are sorted, as
    upstream does.  A MultiKueue check must be the queue's only one, apply to every flavor and
    not sit beside a ProvisioningRequest check (provisioning belongs on the worker clusters).

    Every workload's pass asks it of its queue, so the objects it reads are looked up (in
    upstream's order: flavors, then checks by name) and the answer is memoised on them.
    """
    flavor_names, check_names = _referenced(cq.spec)
    flavors = tuple([world.get(c.RESOURCE_FLAVOR, "", f) for f in flavor_names])
    checks = tuple([world.get(c.ADMISSION_CHECK, "", n) for n in check_names])
    return _inactive_reason(cq.metadata.terminating, cq.spec, flavors, checks)


@memo(4096)
def _referenced(spec: ClusterQueueSpec) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The flavors (in the queue's order, once each) and checks (sorted) a queue references."""
    rules = spec.admission_checks_strategy
    checks = () if rules is None else tuple(sorted({r.name for r in rules.admission_checks}))
    return tuple(dict.fromkeys(f.name for g in spec.resource_groups for f in g.flavors)), checks


@memo(4096)
def _inactive_reason(terminating: bool, spec: ClusterQueueSpec, flavors: tuple[ResourceFlavor | None, ...],
                     checks: tuple[AdmissionCheck | None, ...]) -> tuple[str, str] | None:
    """:func:`inactive_reason` from the queue's spec, whether it is terminating, and what it
    references (None: missing), on which alone it depends (not on its status, which the
    queue's usage rewrites)."""
    if terminating:
        # the cache marks a ClusterQueue being deleted terminating, whatever else holds
        return c.REASON_CQ_TERMINATING, c.MSG_CQ_TERMINATING
    reasons: list[str] = []
    parts: list[str] = []
    if spec.stopped:
        reasons.append(c.REASON_CQ_STOPPED)
        parts.append(c.MSG_CQ_STOPPED_PART)
    flavor_names, check_names = _referenced(spec)
    missing_flavors = [f for f, rf in zip(flavor_names, flavors, strict=True) if rf is None]
    if missing_flavors:
        reasons.append(c.REASON_CQ_FLAVOR_NOT_FOUND)
        parts.append(c.MSG_CQ_MISSING_FLAVORS_PART.format(names=",".join(missing_flavors)))
    missing: list[str] = []
    inactive: list[str] = []
    multikueue: list[str] = []
    per_flavor: list[str] = []
    provisioning: list[str] = []
    every_flavor = frozenset(flavor_names)
    rules = spec.admission_checks_strategy
    applies = {} if rules is None else {r.name: frozenset(r.on_flavors) if r.on_flavors else every_flavor
                                        for r in rules.admission_checks}
    for name, ac in zip(check_names, checks, strict=True):
        if not isinstance(ac, AdmissionCheck):
            missing.append(name)
            continue
        if not is_true(ac.status.conditions, c.ADMISSION_CHECK_ACTIVE):
            inactive.append(name)
        if ac.spec.controller_name == c.PROVISIONING_REQUEST_CONTROLLER_NAME:
            provisioning.append(name)
        elif ac.spec.controller_name == c.MULTIKUEUE_CONTROLLER_NAME:
            multikueue.append(name)
            if applies[name] != every_flavor:
                per_flavor.append(name)
    if missing:
        reasons.append(c.REASON_CQ_AC_NOT_FOUND)
        parts.append(c.MSG_CQ_MISSING_CHECKS_PART.format(names=",".join(missing)))
    if inactive:
        reasons.append(c.REASON_CQ_AC_INACTIVE)
        parts.append(c.MSG_CQ_INACTIVE_CHECKS_PART.format(names=",".join(inactive)))
    if len(multikueue) > 1:
        reasons.append(c.REASON_CQ_MULTIPLE_MULTIKUEUE_CHECKS)
        parts.append(c.MSG_CQ_MULTIPLE_MULTIKUEUE_CHECKS_PART.format(names=",".join(multikueue)))
    if per_flavor:
        reasons.append(c.REASON_CQ_MULTIKUEUE_CHECK_PER_FLAVOR)
        parts.append(c.MSG_CQ_MULTIKUEUE_CHECK_PER_FLAVOR_PART.format(names=",".join(per_flavor)))
    if multikueue and provisioning:
        reasons.append(c.REASON_CQ_MULTIKUEUE_WITH_PROVISIONING_REQUEST)
        parts.append(c.MSG_CQ_MULTIKUEUE_WITH_PROVISIONING_REQUEST_PART.format(
            multikueue=",".join(multikueue), provisioning=",".join(provisioning)))
    if not reasons:
        return None
    return reasons[0], truncate(c.MSG_CQ_CANT_ADMIT.format(parts=", ".join(parts)), c.CONDITION_MESSAGE_LIMIT)
