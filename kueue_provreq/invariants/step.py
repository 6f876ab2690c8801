"""Step invariants: what every step a driver takes must respect.

Each is ``f(before, after, ctx) -> violations`` over one step (``before`` is the
``World.snapshot()`` the step started from, ``after`` the world it left) and registers itself
with :func:`~kueue_provreq.invariants.registry.step_invariant`.  A step may chain several
reconciles, so these speak of what a step can do, not of single writes (the engine checks
those as they happen).  Each docstring states the rule and the upstream source it encodes: a
section of ``kueue-provisioning-controller.md`` (PC), of ``kueue-admission-and-requeue.md``
(AR), or a KEP.
"""

from __future__ import annotations

from kueue_provreq.api import constants as c
from kueue_provreq.api.queues import ClusterQueue
from kueue_provreq.invariants.reading import (
    name,
    workloads,
    workloads_by_uid,
)
from kueue_provreq.invariants.registry import CheckContext, Snapshot, step_invariant
from kueue_provreq.world import World


@step_invariant()
def admitted_only_with_ready_checks(before: Snapshot, after: World, ctx: CheckContext) -> list[str]:
    """A workload becomes Admitted only with a quota reservation and every admission check it must
    carry present and Ready (``HasAllRequiredChecks`` + ``SyncAdmittedCondition``, AR A.3-A.4).
    Upstream skips the Admitted re-sync for admitted workloads, so this is checked when Admitted
    turns True, not in every state."""
    old = workloads_by_uid(before)
    out = []
    for wl in workloads(after):
        prev = old.get(wl.metadata.uid)
        if not wl.is_admitted() or (prev is not None and prev.is_admitted()):
            continue
        not_ready = [s.name for s in wl.status.admission_checks if s.state != c.CHECK_READY]
        adm = wl.status.admission
        cq = after.get(c.CLUSTER_QUEUE, "", adm.cluster_queue) if adm else None
        missing: list[str] = []
        if isinstance(cq, ClusterQueue) and adm is not None:
            used = {f for psa in adm.pod_set_assignments for f in psa.flavors.values()}
            have = {s.name for s in wl.status.admission_checks}
            missing = sorted(n for n, fl in cq.checks_with_flavors().items() if fl & used and n not in have)
        if not wl.has_quota_reservation() or not_ready or missing:
            out.append(f"{name(wl)} admitted with quota={wl.has_quota_reservation()}, "
                       f"checks not Ready {not_ready}, missing {missing}")
    return out
