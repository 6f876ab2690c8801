"""Cohort invariants: what borrowing and lending never exceed.

The oracle's own reading of the cohort tree (``pkg/cache/scheduler/resource_node.go``), not
``controllers.cohorts``'s: the oracle imports no controller, so a mistake in the scheduler's
arithmetic is not mirrored here.  A queue or a cohort lends its parent all of its quota but
what its lending limit keeps back; a cohort's quota is its own plus what its children lend it;
what a child uses beyond what it keeps counts against its parent.
"""

from __future__ import annotations

from decimal import Decimal

from kueue_provreq.api import constants as c
from kueue_provreq.api.queues import ClusterQueue, Cohort, ResourceGroup
from kueue_provreq.invariants.reading import workloads
from kueue_provreq.invariants.registry import CheckContext, state_invariant
from kueue_provreq.world import World

_ZERO = Decimal(0)
FR = tuple[str, str]
_Limits = dict[FR, tuple[Decimal, Decimal | None, Decimal | None]]
"""(flavor, resource) -> (nominal, borrowingLimit, lendingLimit)."""


def _limits(groups: tuple[ResourceGroup, ...]) -> _Limits:
    return {(f.name, r.name): (r.nominal_quota.value,
                               None if r.borrowing_limit is None else r.borrowing_limit.value,
                               None if r.lending_limit is None else r.lending_limit.value)
            for g in groups for f in g.flavors for r in f.resources}


def _usage(world: World) -> dict[str, dict[FR, Decimal]]:
    """What the workloads holding quota hold, per ClusterQueue (finished ones no longer count)."""
    out: dict[str, dict[FR, Decimal]] = {}
    for wl in workloads(world):
        adm = wl.status.admission
        if adm is None or not wl.has_quota_reservation() or wl.is_finished():
            continue
        used = out.setdefault(adm.cluster_queue, {})
        for psa in adm.pod_set_assignments:
            for res, q in psa.resource_usage.items():
                key = (psa.flavors.get(res, ""), res)
                used[key] = used.get(key, _ZERO) + q.value
    return out


@state_invariant()
def cohort_quota_within_limits(world: World, ctx: CheckContext) -> list[str]:
    """In a cohort, a ClusterQueue uses no more than its nominal quota plus its borrowing limit;
    every cohort's children use, beyond what they keep (their lending limit holds back the
    rest of their quota), no more than it has: its own quota and what its children lend, plus
    its own borrowing limit below the root; the root no more than it has.  So no lending
    limit is ever exceeded either: what a child does not lend is never counted as the
    cohort's.  Cohorts in a cycle are left out (their queues admit nothing).  Under KEP-993 a
    reservation may count on preemptions not issued yet (KEP-993 with cohorts is not
    modelled)."""
    if ctx.config.kep_993_preemption:
        return []
    parents: dict[str, str] = {}
    own: dict[str, _Limits] = {}
    for key in world.keys(c.COHORT):
        obj = world.get(*key)
        if isinstance(obj, Cohort):
            own[obj.metadata.name] = _limits(obj.spec.resource_groups)
            if obj.spec.parent_name:
                parents[obj.metadata.name] = obj.spec.parent_name
    children: dict[str, list[tuple[str, str]]] = {}
    queues: dict[str, ClusterQueue] = {}
    for key in world.keys(c.CLUSTER_QUEUE):
        cq = world.get(*key)
        if isinstance(cq, ClusterQueue) and cq.spec.cohort_name:
            queues[cq.metadata.name] = cq
            children.setdefault(cq.spec.cohort_name, []).append((c.CLUSTER_QUEUE, cq.metadata.name))
    for name, parent in parents.items():
        children.setdefault(parent, []).append((c.COHORT, name))

    def in_cycle(name: str) -> bool:
        seen: set[str] = set()
        at: str | None = name
        while at is not None:
            if at in seen:
                return True
            seen.add(at)
            at = parents.get(at)
        return False

    usage = _usage(world)
    out: list[str] = []

    def visit(kind: str, name: str) -> tuple[dict[FR, Decimal], dict[FR, Decimal], _Limits]:
        """(subtree quota, usage counted against it, own limits) of one node."""
        if kind == c.CLUSTER_QUEUE:
            limits = _limits(queues[name].spec.resource_groups)
            return {fr: q[0] for fr, q in limits.items()}, dict(usage.get(name, {})), limits
        limits = own.get(name, {})
        subtree = {fr: q[0] for fr, q in limits.items()}
        used: dict[FR, Decimal] = {}
        for child_kind, child in children.get(name, ()):
            sub, use, lim = visit(child_kind, child)
            for fr in set(sub) | set(use):
                lending = lim.get(fr, (_ZERO, None, None))[2]
                keeps = max(_ZERO, sub.get(fr, _ZERO) - lending) if lending is not None else _ZERO
                subtree[fr] = subtree.get(fr, _ZERO) + sub.get(fr, _ZERO) - keeps
                used[fr] = used.get(fr, _ZERO) + max(_ZERO, use.get(fr, _ZERO) - keeps)
        root = name not in parents
        for fr, value in sorted(used.items()):
            borrowing = limits.get(fr, (_ZERO, None, None))[1]
            cap = subtree.get(fr, _ZERO) if root else (
                None if borrowing is None else subtree.get(fr, _ZERO) + borrowing)
            if cap is not None and value > cap:
                out.append(f"cohort {name}: its children use {value} {fr[1]} of flavor {fr[0]!r} beyond what "
                           f"they keep, it has {cap}")
        return subtree, used, limits

    for name, cq in sorted(queues.items()):
        for fr, value in sorted(usage.get(name, {}).items()):
            nominal, borrowing, _ = _limits(cq.spec.resource_groups).get(fr, (_ZERO, None, None))
            if borrowing is not None and value > nominal + borrowing:
                out.append(f"ClusterQueue {name} uses {value} {fr[1]} of flavor {fr[0]!r}, nominal {nominal} "
                           f"and borrowing limit {borrowing}")
    roots = sorted({n for n in children if n not in parents} | {n for n in own if n not in parents})
    for root in roots:
        if not in_cycle(root):
            visit(c.COHORT, root)
    return out
