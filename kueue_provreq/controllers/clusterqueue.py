"""The ClusterQueue status reconciler: the ``Active`` condition and the workload counts.

Kueue derives a ClusterQueue's activity in its scheduler cache from the
objects it references (``clusterQueue.updateWithAdmissionChecks``,
``inactiveReason``), and the ClusterQueue controller copies it into
``status.conditions`` together with ``pendingWorkloads`` (queue manager),
``reservingWorkloads`` and ``admittedWorkloads`` (cache).  The scheduler
reads :func:`inactive_reason` too, so the condition and the scheduler's
"inactive" never disagree.  MultiKueue and topology reasons are not modelled.
"""

from __future__ import annotations

from kueue_provreq.api import constants as c
from kueue_provreq.api.evolve import evolve
from kueue_provreq.api.meta import Condition, is_true, set_condition
from kueue_provreq.api.objects import Key
from kueue_provreq.api.queues import AdmissionCheck, ClusterQueue
from kueue_provreq.controllers import queues
from kueue_provreq.controllers.context import Context
from kueue_provreq.world import NOTHING, Result, Txn, World, truncate

_STOPPING_POLICIES = frozenset({c.STOP_POLICY_HOLD, c.STOP_POLICY_HOLD_AND_DRAIN})


def inactive_reason(world: World, cq: ClusterQueue) -> tuple[str, str] | None:
    """(reason, message) of an inactive ClusterQueue, None when it can admit.

    The reason is the first problem in upstream's order (Stopped, FlavorNotFound,
    AdmissionCheckNotFound, AdmissionCheckInactive); the message lists them all.  Missing
    flavors keep the ClusterQueue's order, check names are sorted, as upstream does.
    """
    reasons: list[str] = []
    parts: list[str] = []
    if cq.spec.stop_policy in _STOPPING_POLICIES:
        reasons.append(c.REASON_CQ_STOPPED)
        parts.append(c.MSG_CQ_STOPPED_PART)
    missing_flavors = [f for f in dict.fromkeys(cq.flavor_names())
                       if world.get(c.RESOURCE_FLAVOR, "", f) is None]
    if missing_flavors:
        reasons.append(c.REASON_CQ_FLAVOR_NOT_FOUND)
        parts.append(c.MSG_CQ_MISSING_FLAVORS_PART.format(names=",".join(missing_flavors)))
    missing_checks: list[str] = []
    inactive_checks: list[str] = []
    for name in sorted(cq.checks_with_flavors()):
        ac = world.get(c.ADMISSION_CHECK, "", name)
        if not isinstance(ac, AdmissionCheck):
            missing_checks.append(name)
        elif not is_true(ac.status.conditions, c.ADMISSION_CHECK_ACTIVE):
            inactive_checks.append(name)
    if missing_checks:
        reasons.append(c.REASON_CQ_AC_NOT_FOUND)
        parts.append(c.MSG_CQ_MISSING_CHECKS_PART.format(names=",".join(missing_checks)))
    if inactive_checks:
        reasons.append(c.REASON_CQ_AC_INACTIVE)
        parts.append(c.MSG_CQ_INACTIVE_CHECKS_PART.format(names=",".join(inactive_checks)))
    if not reasons:
        return None
    return reasons[0], truncate(c.MSG_CQ_CANT_ADMIT.format(parts=", ".join(parts)), c.CONDITION_MESSAGE_LIMIT)


def reconcile(world: World, key: Key, ctx: Context) -> Result:
    """Write the ``Active`` condition and the counts, only when something differs."""
    txn = Txn(world, ctx.now)
    cq = txn.get(*key)
    if not isinstance(cq, ClusterQueue):
        return NOTHING
    problem = inactive_reason(world, cq)
    gen = cq.metadata.generation
    if problem is None:
        cond = Condition(c.CQ_ACTIVE, c.TRUE, c.REASON_CQ_READY, c.MSG_CQ_READY, None, gen)
    else:
        cond = Condition(c.CQ_ACTIVE, c.FALSE, problem[0], problem[1], None, gen)
    conditions, _ = set_condition(cq.status.conditions, cond, ctx.now)
    found = queues.scan(world, ctx, only=cq.metadata.name)
    active, inadmissible = queues.pending_counts(found, cq)
    reserving = found.reserving.get(cq.metadata.name, [])
    status = evolve(cq.status, conditions=conditions, pending_workloads=active + inadmissible,
                          reserving_workloads=len(reserving),
                          admitted_workloads=sum(1 for wl in reserving if wl.is_admitted()))
    if status == cq.status:
        return NOTHING
    error = txn.update(evolve(cq, status=status))
    return txn.result(error=error)
