"""The cohort tree and its quota arithmetic (``pkg/cache/scheduler/resource_node.go``,
``pkg/cache/hierarchy``).

ClusterQueues are the leaves; cohorts are the inner nodes, named by a queue's
``spec.cohortName`` or a Cohort's ``spec.parentName`` (with or without a Cohort object: one
without an object has no quota of its own and no parent).  Every node has, per flavor and
resource, its own quota (nominal, borrowing limit, lending limit), a *subtree quota* (a
queue's nominal quota; a cohort's own plus what each child lends it: the child's subtree quota
less what it keeps, its *local quota*, ``subtree - lendingLimit`` when it has a lending limit,
else nothing) and a *usage* (a queue's: what its workloads hold; a cohort's: what its children
use beyond their local quota).  What a queue may still take (:meth:`Tree.available`) walks up
to the root, each borrowing limit capping what a node may take from its parent; the most it
could ever take (:meth:`Tree.potential`) does the same with nothing used.

A cohort whose parent chain has a cycle is left out of the tree, as upstream's snapshot leaves
it out, and every ClusterQueue under it is inactive (:meth:`Tree.in_cycle`).

The tree is built for one scheduling cycle from the world and the queue index's usage; the
scheduler adds to it what it admits and takes out what it preempts.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from decimal import Decimal

import attrs

from kueue_provreq.api import constants as c
from kueue_provreq.api.queues import ClusterQueue, Cohort, ResourceGroup
from kueue_provreq.controllers.usage import FlavorResource, Usage
from kueue_provreq.world import World

_ZERO = Decimal(0)

Node = tuple[str, str]
"""(kind, name): ``ClusterQueue`` or ``Cohort``, so a queue and a cohort may share a name."""


@attrs.frozen
class Quota:
    nominal: Decimal = _ZERO
    borrowing_limit: Decimal | None = None
    lending_limit: Decimal | None = None


def quotas_of(groups: Iterable[ResourceGroup]) -> dict[FlavorResource, Quota]:
    """A node's own quota per flavor and resource, from its resource groups."""
    out: dict[FlavorResource, Quota] = {}
    for rg in groups:
        for fq in rg.flavors:
            for rq in fq.resources:
                out[(fq.name, rq.name)] = Quota(
                    rq.nominal_quota.value,
                    None if rq.borrowing_limit is None else rq.borrowing_limit.value,
                    None if rq.lending_limit is None else rq.lending_limit.value)
    return out


def cq_node(name: str) -> Node:
    return (c.CLUSTER_QUEUE, name)


def cohort_node(name: str) -> Node:
    return (c.COHORT, name)


def cohort_parents(world: World) -> dict[str, str]:
    """Each cohort's parent, from the Cohort objects."""
    out: dict[str, str] = {}
    for key in world.keys(c.COHORT):
        obj = world.get(*key)
        if isinstance(obj, Cohort) and obj.spec.parent_name:
            out[obj.metadata.name] = obj.spec.parent_name
    return out


def has_cycle(cohort: str, parents: Mapping[str, str]) -> bool:
    """``hierarchy.HasCycle``: the walk from ``cohort`` to its root meets a cohort twice."""
    seen: set[str] = set()
    name: str | None = cohort
    while name is not None:
        if name in seen:
            return True
        seen.add(name)
        name = parents.get(name)
    return False


def in_cycle(world: World, cq: ClusterQueue) -> bool:
    """Whether the queue's cohort has a cycle above it: upstream's snapshot then leaves the
    queue out (inactive, reason ``HasCycle``) and it admits nothing."""
    return bool(cq.spec.cohort_name) and has_cycle(cq.spec.cohort_name, cohort_parents(world))


class Tree:
    """The cohort tree of one scheduling cycle (``Snapshot``'s resource nodes)."""

    def __init__(self) -> None:
        self.parent: dict[Node, Node] = {}
        self.children: dict[Node, list[Node]] = {}
        self.quotas: dict[Node, dict[FlavorResource, Quota]] = {}
        self.subtree: dict[Node, dict[FlavorResource, Decimal]] = {}
        self.usage: dict[Node, dict[FlavorResource, Decimal]] = {}

    @classmethod
    def build(cls, world: World, used: Mapping[str, Usage]) -> Tree:
        """The tree of every ClusterQueue in a cohort and every cohort without a cycle above
        it; ``used`` is each queue's usage (the queue index's)."""
        tree = cls()
        parents = cohort_parents(world)
        cohorts: dict[str, Cohort | None] = {}
        for key in world.keys(c.COHORT):
            obj = world.get(*key)
            if isinstance(obj, Cohort):
                cohorts[obj.metadata.name] = obj
        for name in list(parents.values()):
            cohorts.setdefault(name, None)
        queues: list[ClusterQueue] = []
        for key in world.keys(c.CLUSTER_QUEUE):
            cq = world.get(*key)
            if isinstance(cq, ClusterQueue) and cq.spec.cohort_name:
                queues.append(cq)
                cohorts.setdefault(cq.spec.cohort_name, None)
        for name, obj in cohorts.items():
            if has_cycle(name, parents):
                continue
            node = cohort_node(name)
            tree.quotas[node] = quotas_of(obj.spec.resource_groups) if obj is not None else {}
            tree.children.setdefault(node, [])
            if name in parents:
                tree.link(node, cohort_node(parents[name]))
        for cq in queues:
            parent = cohort_node(cq.spec.cohort_name)
            if parent not in tree.quotas:
                continue  # under a cycle: inactive
            node = cq_node(cq.metadata.name)
            tree.quotas[node] = quotas_of(cq.spec.resource_groups)
            tree.usage[node] = dict(used.get(cq.metadata.name, {}))
            tree.link(node, parent)
        for node in tree.quotas:
            if node not in tree.parent and node[0] == c.COHORT:
                tree._accumulate(node)
        return tree

    def link(self, child: Node, parent: Node) -> None:
        self.parent[child] = parent
        self.children.setdefault(parent, []).append(child)

    def _accumulate(self, node: Node) -> None:
        """``updateCohortResourceNode``: subtree quota and usage, bottom-up."""
        subtree = {fr: q.nominal for fr, q in self.quotas[node].items()}
        usage: dict[FlavorResource, Decimal] = {}
        for child in self.children.get(node, ()):
            if child[0] == c.COHORT:
                self._accumulate(child)
            else:
                self.subtree[child] = {fr: q.nominal for fr, q in self.quotas[child].items()}
            for fr, value in self.subtree[child].items():
                subtree[fr] = subtree.get(fr, _ZERO) + value - self.local_quota(child, fr)
            for fr, value in self.usage[child].items():
                usage[fr] = usage.get(fr, _ZERO) + max(_ZERO, value - self.local_quota(child, fr))
        self.subtree[node] = subtree
        self.usage[node] = usage

    def __contains__(self, node: Node) -> bool:
        return node in self.usage

    # --- resource_node.go ---------------------------------------------------------------------

    def local_quota(self, node: Node, fr: FlavorResource) -> Decimal:
        """What the node keeps for itself: its subtree quota less its lending limit (none
        without a lending limit: it lends everything)."""
        quota = self.quotas[node].get(fr)
        if quota is None or quota.lending_limit is None:
            return _ZERO
        return max(_ZERO, self.subtree[node].get(fr, _ZERO) - quota.lending_limit)

    def local_available(self, node: Node, fr: FlavorResource) -> Decimal:
        return max(_ZERO, self.local_quota(node, fr) - self.usage[node].get(fr, _ZERO))

    def _available(self, node: Node, fr: FlavorResource) -> Decimal:
        parent = self.parent.get(node)
        subtree, used = self.subtree[node].get(fr, _ZERO), self.usage[node].get(fr, _ZERO)
        if parent is None:
            return subtree - used
        from_parent = self._available(parent, fr)
        quota = self.quotas[node].get(fr)
        if quota is not None and quota.borrowing_limit is not None:
            local = self.local_quota(node, fr)
            stored = subtree - local
            used_in_parent = max(_ZERO, used - local)
            from_parent = min(stored - used_in_parent + quota.borrowing_limit, from_parent)
        return self.local_available(node, fr) + from_parent

    def available(self, node: Node, fr: FlavorResource) -> Decimal:
        """``Available``: what the node may still take, its own and borrowed (never below 0)."""
        return max(_ZERO, self._available(node, fr))

    def potential(self, node: Node, fr: FlavorResource) -> Decimal:
        """``PotentialAvailable``: the most the node could take with nothing else used."""
        parent = self.parent.get(node)
        if parent is None:
            return self.subtree[node].get(fr, _ZERO)
        avail = self.local_quota(node, fr) + self.potential(parent, fr)
        quota = self.quotas[node].get(fr)
        if quota is not None and quota.borrowing_limit is not None:
            avail = min(self.subtree[node].get(fr, _ZERO) + quota.borrowing_limit, avail)
        return avail

    def add(self, node: Node, fr: FlavorResource, value: Decimal) -> None:
        """``addUsage``: what the node's local quota cannot hold goes up to its parent."""
        local = self.local_available(node, fr)
        self.usage[node][fr] = self.usage[node].get(fr, _ZERO) + value
        parent = self.parent.get(node)
        if parent is not None and value > local:
            self.add(parent, fr, value - local)

    def remove(self, node: Node, fr: FlavorResource, value: Decimal) -> None:
        """``removeUsage``: the parent gives back what the node stored there."""
        stored = self.usage[node].get(fr, _ZERO) - self.local_quota(node, fr)
        self.usage[node][fr] = self.usage[node].get(fr, _ZERO) - value
        parent = self.parent.get(node)
        if stored > 0 and parent is not None:
            self.remove(parent, fr, min(value, stored))

    def add_all(self, node: Node, amounts: Mapping[FlavorResource, Decimal], sign: int = 1) -> None:
        for fr, value in amounts.items():
            if sign > 0:
                self.add(node, fr, value)
            else:
                self.remove(node, fr, value)

    def nominal(self, node: Node, fr: FlavorResource) -> Decimal:
        quota = self.quotas[node].get(fr)
        return _ZERO if quota is None else quota.nominal

    def borrowing_with(self, node: Node, fr: FlavorResource, value: Decimal) -> bool:
        """``BorrowingWith``: taking ``value`` more puts the node above its quota (a queue's
        nominal quota, a cohort's subtree quota)."""
        limit = self.nominal(node, fr) if node[0] == c.CLUSTER_QUEUE else self.subtree[node].get(fr, _ZERO)
        return self.usage[node].get(fr, _ZERO) + value > limit

    def ancestors(self, node: Node) -> Iterator[Node]:
        """``PathParentToRoot``."""
        parent = self.parent.get(node)
        while parent is not None:
            yield parent
            parent = self.parent.get(parent)

    def height(self, node: Node) -> int:
        """``getNodeHeight``: the distance to the furthest leaf below a cohort (1 over queues)."""
        kids = self.children.get(node, [])
        out = min(len(kids), 1)
        for child in kids:
            if child[0] == c.COHORT:
                out = max(out, self.height(child) + 1)
        return out

    def borrow_level(self, node: Node, fr: FlavorResource, value: Decimal) -> tuple[int, bool]:
        """``FindHeightOfLowestSubtreeThatFits``: the height of the lowest cohort whose quota
        holds ``value`` more (0: the queue's own), and whether that cohort is below the root
        (reclaiming within it is then possible)."""
        has_parent = node in self.parent
        if not has_parent or not self.borrowing_with(node, fr, value):
            return 0, has_parent
        remaining = value - self.local_available(node, fr)
        root = node
        for cohort in self.ancestors(node):
            if not self.borrowing_with(cohort, fr, remaining):
                return self.height(cohort), cohort in self.parent
            remaining -= self.local_available(cohort, fr)
            root = cohort
        return self.height(root), False

    def path(self, node: Node) -> str:
        """``buildCQPath``: ``/root/.../queue``."""
        names = [node[1], *(a[1] for a in self.ancestors(node))]
        return "/" + "/".join(reversed(names))
