"""ClusterQueue, Cohort, LocalQueue, ResourceFlavor and AdmissionCheck (storage version v1beta2)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar, final

from kueue_provreq.api import constants as c
from kueue_provreq.api.frozen import EMPTY, FrozenMap
from kueue_provreq.api.memo import memo
from kueue_provreq.api.meta import Conditions, Json, ObjectMeta
from kueue_provreq.api.model import Field, Model
from kueue_provreq.api.quantity import Quantity

STOPPING_POLICIES = frozenset({c.STOP_POLICY_HOLD, c.STOP_POLICY_HOLD_AND_DRAIN})
"""The ``stopPolicy`` values that stop a queue (``None`` and absent let it run)."""


@final
class ResourceQuota(Model):
    __slots__ = ("name", "nominal_quota", "borrowing_limit", "lending_limit", "extra")

    FIELDS: ClassVar[tuple[Field, ...]] = (
        Field("name", str), Field("nominal_quota", Quantity), Field("borrowing_limit", Quantity | None, None),
        Field("lending_limit", Quantity | None, None), Field("extra", FrozenMap[str, Json], EMPTY))

    def __init__(self, name: str, nominal_quota: Quantity, borrowing_limit: Quantity | None = None,
                 lending_limit: Quantity | None = None, extra: FrozenMap[str, Json] = EMPTY) -> None:
        self.name = name
        self.nominal_quota = nominal_quota
        self.borrowing_limit = borrowing_limit
        """How much more than its quota a node may take from its parent; None: no limit."""
        self.lending_limit = lending_limit
        """How much of its quota a node lends to its parent; None: all of it."""
        self.extra = extra

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ResourceQuota):
            return NotImplemented
        return (self.name == other.name and self.nominal_quota == other.nominal_quota and
                self.borrowing_limit == other.borrowing_limit and self.lending_limit == other.lending_limit and
                self.extra == other.extra)

    def __hash__(self) -> int:
        return hash((self.name, self.nominal_quota, self.borrowing_limit, self.lending_limit, self.extra))


@final
class FlavorQuotas(Model):
    __slots__ = ("name", "resources", "extra")

    FIELDS: ClassVar[tuple[Field, ...]] = (
        Field("name", str), Field("resources", tuple[ResourceQuota, ...], ()),
        Field("extra", FrozenMap[str, Json], EMPTY))

    def __init__(self, name: str, resources: tuple[ResourceQuota, ...] = (),
                 extra: FrozenMap[str, Json] = EMPTY) -> None:
        self.name = name
        self.resources = resources
        self.extra = extra

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FlavorQuotas):
            return NotImplemented
        return (self.name == other.name and self.resources == other.resources and self.extra == other.extra)

    def __hash__(self) -> int:
        return hash((self.name, self.resources, self.extra))


@final
class ResourceGroup(Model):
    __slots__ = ("covered_resources", "flavors", "extra")

    FIELDS: ClassVar[tuple[Field, ...]] = (
        Field("covered_resources", tuple[str, ...], ()), Field("flavors", tuple[FlavorQuotas, ...], ()),
        Field("extra", FrozenMap[str, Json], EMPTY))

    def __init__(self, covered_resources: tuple[str, ...] = (), flavors: tuple[FlavorQuotas, ...] = (),
                 extra: FrozenMap[str, Json] = EMPTY) -> None:
        self.covered_resources = covered_resources
        self.flavors = flavors
        self.extra = extra

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ResourceGroup):
            return NotImplemented
        return (self.covered_resources == other.covered_resources and self.flavors == other.flavors and
                self.extra == other.extra)

    def __hash__(self) -> int:
        return hash((self.covered_resources, self.flavors, self.extra))


@final
class AdmissionCheckStrategyRule(Model):
    __slots__ = ("name", "on_flavors")

    FIELDS: ClassVar[tuple[Field, ...]] = (
        Field("name", str), Field("on_flavors", tuple[str, ...], ()))

    def __init__(self, name: str, on_flavors: tuple[str, ...] = ()) -> None:
        self.name = name
        self.on_flavors = on_flavors

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AdmissionCheckStrategyRule):
            return NotImplemented
        return (self.name == other.name and self.on_flavors == other.on_flavors)

    def __hash__(self) -> int:
        return hash((self.name, self.on_flavors))


@final
class AdmissionChecksStrategy(Model):
    __slots__ = ("admission_checks",)

    FIELDS: ClassVar[tuple[Field, ...]] = (
        Field("admission_checks", tuple[AdmissionCheckStrategyRule, ...], ()),)

    def __init__(self, admission_checks: tuple[AdmissionCheckStrategyRule, ...] = ()) -> None:
        self.admission_checks = admission_checks

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AdmissionChecksStrategy):
            return NotImplemented
        return (self.admission_checks == other.admission_checks)

    def __hash__(self) -> int:
        return hash((self.admission_checks,))


@final
class BorrowWithinCohort(Model):
    """``spec.preemption.borrowWithinCohort``: whether a preemptor may borrow while it reclaims,
    and from candidates up to which priority."""

    __slots__ = ("policy", "max_priority_threshold", "extra")

    FIELDS: ClassVar[tuple[Field, ...]] = (
        Field("policy", str, c.PREEMPTION_POLICY_NEVER), Field("max_priority_threshold", int | None, None),
        Field("extra", FrozenMap[str, Json], EMPTY))

    def __init__(self, policy: str = c.PREEMPTION_POLICY_NEVER, max_priority_threshold: int | None = None,
                 extra: FrozenMap[str, Json] = EMPTY) -> None:
        self.policy = policy
        self.max_priority_threshold = max_priority_threshold
        self.extra = extra

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, BorrowWithinCohort):
            return NotImplemented
        return (self.policy == other.policy and self.max_priority_threshold == other.max_priority_threshold and
                self.extra == other.extra)

    def __hash__(self) -> int:
        return hash((self.policy, self.max_priority_threshold, self.extra))


@final
class ClusterQueuePreemption(Model):
    """``spec.preemption``: within the queue, and in its cohort (reclaiming what others borrow,
    borrowing while preempting)."""

    __slots__ = ("within_cluster_queue", "reclaim_within_cohort", "borrow_within_cohort", "extra")

    FIELDS: ClassVar[tuple[Field, ...]] = (
        Field("within_cluster_queue", str, c.PREEMPTION_POLICY_NEVER),
        Field("reclaim_within_cohort", str, c.PREEMPTION_POLICY_NEVER),
        Field("borrow_within_cohort", BorrowWithinCohort | None, None), Field("extra", FrozenMap[str, Json], EMPTY))

    def __init__(self, within_cluster_queue: str = c.PREEMPTION_POLICY_NEVER,
                 reclaim_within_cohort: str = c.PREEMPTION_POLICY_NEVER,
                 borrow_within_cohort: BorrowWithinCohort | None = None, extra: FrozenMap[str, Json] = EMPTY) -> None:
        self.within_cluster_queue = within_cluster_queue
        self.reclaim_within_cohort = reclaim_within_cohort
        self.borrow_within_cohort = borrow_within_cohort
        self.extra = extra

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ClusterQueuePreemption):
            return NotImplemented
        return (self.within_cluster_queue == other.within_cluster_queue and
                self.reclaim_within_cohort == other.reclaim_within_cohort and
                self.borrow_within_cohort == other.borrow_within_cohort and self.extra == other.extra)

    def __hash__(self) -> int:
        return hash((self.within_cluster_queue, self.reclaim_within_cohort, self.borrow_within_cohort, self.extra))


@final
class FlavorFungibility(Model):
    """``spec.flavorFungibility``: whether the flavor search goes on past a flavor that needs
    preemption (``whenCanPreempt``) or borrowing (``whenCanBorrow``)."""

    __slots__ = ("when_can_borrow", "when_can_preempt", "extra")

    FIELDS: ClassVar[tuple[Field, ...]] = (
        Field("when_can_borrow", str, c.MAY_STOP_SEARCH), Field("when_can_preempt", str, c.TRY_NEXT_FLAVOR),
        Field("extra", FrozenMap[str, Json], EMPTY))

    def __init__(self, when_can_borrow: str = c.MAY_STOP_SEARCH, when_can_preempt: str = c.TRY_NEXT_FLAVOR,
                 extra: FrozenMap[str, Json] = EMPTY) -> None:
        self.when_can_borrow = when_can_borrow
        self.when_can_preempt = when_can_preempt
        self.extra = extra

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FlavorFungibility):
            return NotImplemented
        return (self.when_can_borrow == other.when_can_borrow and self.when_can_preempt == other.when_can_preempt and
                self.extra == other.extra)

    def __hash__(self) -> int:
        return hash((self.when_can_borrow, self.when_can_preempt, self.extra))


@final
class LabelSelectorRequirement(Model):
    """One ``matchExpressions`` entry: ``In``, ``NotIn``, ``Exists`` or ``DoesNotExist``."""

    __slots__ = ("key", "operator", "values")

    FIELDS: ClassVar[tuple[Field, ...]] = (
        Field("key", str), Field("operator", str), Field("values", tuple[str, ...], ()))

    def __init__(self, key: str, operator: str, values: tuple[str, ...] = ()) -> None:
        self.key = key
        self.operator = operator
        self.values = values

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LabelSelectorRequirement):
            return NotImplemented
        return (self.key == other.key and self.operator == other.operator and self.values == other.values)

    def __hash__(self) -> int:
        return hash((self.key, self.operator, self.values))

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.operator == c.SELECTOR_IN:
            return self.key in labels and labels[self.key] in self.values
        if self.operator == c.SELECTOR_NOT_IN:
            return self.key not in labels or labels[self.key] not in self.values
        if self.operator == c.SELECTOR_EXISTS:
            return self.key in labels
        if self.operator == c.SELECTOR_DOES_NOT_EXIST:
            return self.key not in labels
        return False  # the API refuses any other operator


@final
class LabelSelector(Model):
    """A ``metav1.LabelSelector``: every label and every expression must match; empty matches
    everything (``metav1.LabelSelectorAsSelector``)."""

    __slots__ = ("match_labels", "match_expressions")

    FIELDS: ClassVar[tuple[Field, ...]] = (
        Field("match_labels", FrozenMap[str, str], EMPTY),
        Field("match_expressions", tuple[LabelSelectorRequirement, ...], ()))

    def __init__(self, match_labels: FrozenMap[str, str] = EMPTY,
                 match_expressions: tuple[LabelSelectorRequirement, ...] = ()) -> None:
        self.match_labels = match_labels
        self.match_expressions = match_expressions

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LabelSelector):
            return NotImplemented
        return (self.match_labels == other.match_labels and self.match_expressions == other.match_expressions)

    def __hash__(self) -> int:
        return hash((self.match_labels, self.match_expressions))

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(labels.get(k) == v for k, v in self.match_labels.items()) and \
            all(e.matches(labels) for e in self.match_expressions)


#: What ``namespaceSelector: {}`` reads as: every namespace.
EVERY_NAMESPACE = LabelSelector()


def namespace_labels(namespace: str) -> Mapping[str, str]:
    """The labels a namespace has in a world without Namespace objects: the one the API server
    always sets (``kubernetes.io/metadata.name``, the NamespaceDefaultLabelName admission)."""
    return {c.LABEL_NAMESPACE_NAME: namespace}


@final
class ClusterQueueSpec(Model):
    __slots__ = ("resource_groups", "cohort_name", "namespace_selector", "admission_checks_strategy",
                 "queueing_strategy", "stop_policy", "preemption", "flavor_fungibility", "extra", "_hash")

    FIELDS: ClassVar[tuple[Field, ...]] = (
        Field("resource_groups", tuple[ResourceGroup, ...], ()), Field("cohort_name", str, ""),
        Field("namespace_selector", LabelSelector | None, None),
        Field("admission_checks_strategy", AdmissionChecksStrategy | None, None),
        Field("queueing_strategy", str, c.BEST_EFFORT_FIFO), Field("stop_policy", str | None, None),
        Field("preemption", ClusterQueuePreemption | None, None),
        Field("flavor_fungibility", FlavorFungibility | None, None), Field("extra", FrozenMap[str, Json], EMPTY))

    def __init__(self, resource_groups: tuple[ResourceGroup, ...] = (), cohort_name: str = "",
                 namespace_selector: LabelSelector | None = None,
                 admission_checks_strategy: AdmissionChecksStrategy | None = None,
                 queueing_strategy: str = c.BEST_EFFORT_FIFO, stop_policy: str | None = None,
                 preemption: ClusterQueuePreemption | None = None, flavor_fungibility: FlavorFungibility | None = None,
                 extra: FrozenMap[str, Json] = EMPTY) -> None:
        self.resource_groups = resource_groups
        self.cohort_name = cohort_name
        """The cohort it lends to and borrows from; empty: none."""
        self.namespace_selector = namespace_selector
        """The namespaces whose workloads it admits.  None (absent, the API's default) is the
        nothing selector: no namespace; ``{}`` (:data:`EVERY_NAMESPACE`) is every namespace."""
        self.admission_checks_strategy = admission_checks_strategy
        self.queueing_strategy = queueing_strategy
        self.stop_policy = stop_policy
        self.preemption = preemption
        """None: the API's defaults (``Never`` everywhere)."""
        self.flavor_fungibility = flavor_fungibility
        """None: the API's defaults (``whenCanPreempt: TryNextFlavor``)."""
        self.extra = extra
        self._hash = -1

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ClusterQueueSpec):
            return NotImplemented
        return (self.resource_groups == other.resource_groups and self.cohort_name == other.cohort_name and
                self.namespace_selector == other.namespace_selector and
                self.admission_checks_strategy == other.admission_checks_strategy and
                self.queueing_strategy == other.queueing_strategy and self.stop_policy == other.stop_policy and
                self.preemption == other.preemption and self.flavor_fungibility == other.flavor_fungibility and
                self.extra == other.extra)

    def __hash__(self) -> int:
        h = self._hash
        if h == -1:
            h = self._hash = hash((self.resource_groups, self.cohort_name, self.namespace_selector,
                                   self.admission_checks_strategy, self.queueing_strategy, self.stop_policy,
                                   self.preemption, self.flavor_fungibility, self.extra))
        return h

    @property
    def stopped(self) -> bool:
        """``stopPolicy`` is ``Hold`` or ``HoldAndDrain``."""
        return self.stop_policy in STOPPING_POLICIES

    def admits_namespace(self, namespace: str) -> bool:
        """``workload.ValidateAdmissibility``'s selector test, which the scheduler and the
        workload controller both make: the ``namespaceSelector`` matches the namespace."""
        return _admits_namespace(self, namespace)

    @property
    def within_cluster_queue(self) -> str:
        """``preemption.withinClusterQueue``, defaulted."""
        return self.preemption.within_cluster_queue if self.preemption is not None else c.PREEMPTION_POLICY_NEVER

    @property
    def when_can_preempt(self) -> str:
        """``flavorFungibility.whenCanPreempt``, defaulted."""
        ff = self.flavor_fungibility
        return ff.when_can_preempt if ff is not None else c.TRY_NEXT_FLAVOR

    @property
    def when_can_borrow(self) -> str:
        """``flavorFungibility.whenCanBorrow``, defaulted."""
        ff = self.flavor_fungibility
        return ff.when_can_borrow if ff is not None else c.MAY_STOP_SEARCH

    @property
    def reclaim_within_cohort(self) -> str:
        """``preemption.reclaimWithinCohort``, defaulted."""
        return self.preemption.reclaim_within_cohort if self.preemption is not None else c.PREEMPTION_POLICY_NEVER

    @property
    def borrow_within_cohort(self) -> BorrowWithinCohort:
        """``preemption.borrowWithinCohort``, defaulted."""
        p = self.preemption
        return p.borrow_within_cohort if p is not None and p.borrow_within_cohort is not None \
            else BorrowWithinCohort()


_NO_CLUSTER_QUEUE_SPEC = ClusterQueueSpec()
"""The default of the ClusterQueueSpec fields (one object, as attrs kept its defaults)."""


@memo(4096)
def _admits_namespace(spec: ClusterQueueSpec, namespace: str) -> bool:
    """Memoised: every pass of every workload asks it of its queue."""
    selector = spec.namespace_selector
    return selector is not None and selector.matches(namespace_labels(namespace))


_ZERO = Quantity.parse("0")


@final
class ResourceUsage(Model):
    __slots__ = ("name", "total", "borrowed")

    FIELDS: ClassVar[tuple[Field, ...]] = (
        Field("name", str), Field("total", Quantity, _ZERO), Field("borrowed", Quantity | None, None))

    def __init__(self, name: str, total: Quantity = _ZERO, borrowed: Quantity | None = None) -> None:
        self.name = name
        self.total = total
        self.borrowed = borrowed
        """Usage above the nominal quota; upstream always writes it (``"0"`` outside a cohort: a zero
        Quantity is not omitted), None only where an input left it out."""

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ResourceUsage):
            return NotImplemented
        return (self.name == other.name and self.total == other.total and self.borrowed == other.borrowed)

    def __hash__(self) -> int:
        return hash((self.name, self.total, self.borrowed))


@final
class FlavorUsage(Model):
    __slots__ = ("name", "resources")

    FIELDS: ClassVar[tuple[Field, ...]] = (
        Field("name", str), Field("resources", tuple[ResourceUsage, ...], ()))

    def __init__(self, name: str, resources: tuple[ResourceUsage, ...] = ()) -> None:
        self.name = name
        self.resources = resources

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FlavorUsage):
            return NotImplemented
        return (self.name == other.name and self.resources == other.resources)

    def __hash__(self) -> int:
        return hash((self.name, self.resources))


@final
class ClusterQueueStatus(Model):
    __slots__ = ("conditions", "pending_workloads", "reserving_workloads", "admitted_workloads", "flavors_reservation",
                 "flavors_usage", "extra")

    FIELDS: ClassVar[tuple[Field, ...]] = (
        Field("conditions", Conditions, ()), Field("pending_workloads", int | None, None),
        Field("reserving_workloads", int | None, None), Field("admitted_workloads", int | None, None),
        Field("flavors_reservation", tuple[FlavorUsage, ...], ()), Field("flavors_usage", tuple[FlavorUsage, ...], ()),
        Field("extra", FrozenMap[str, Json], EMPTY))

    def __init__(self, conditions: Conditions = (), pending_workloads: int | None = None,
                 reserving_workloads: int | None = None, admitted_workloads: int | None = None,
                 flavors_reservation: tuple[FlavorUsage, ...] = (), flavors_usage: tuple[FlavorUsage, ...] = (),
                 extra: FrozenMap[str, Json] = EMPTY) -> None:
        self.conditions = conditions
        self.pending_workloads = pending_workloads
        self.reserving_workloads = reserving_workloads
        self.admitted_workloads = admitted_workloads
        self.flavors_reservation = flavors_reservation
        """Quota held by every workload with a reservation, per flavor and resource."""
        self.flavors_usage = flavors_usage
        """Quota held by the admitted ones only."""
        self.extra = extra

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ClusterQueueStatus):
            return NotImplemented
        return (self.conditions == other.conditions and self.pending_workloads == other.pending_workloads and
                self.reserving_workloads == other.reserving_workloads and
                self.admitted_workloads == other.admitted_workloads and
                self.flavors_reservation == other.flavors_reservation and self.flavors_usage == other.flavors_usage and
                self.extra == other.extra)

    def __hash__(self) -> int:
        return hash((self.conditions, self.pending_workloads, self.reserving_workloads, self.admitted_workloads,
                     self.flavors_reservation, self.flavors_usage, self.extra))


_NO_CLUSTER_QUEUE_STATUS = ClusterQueueStatus()
"""The default of the ClusterQueueStatus fields (one object, as attrs kept its defaults)."""


@final
class ClusterQueue(Model):
    KIND: ClassVar[str] = c.CLUSTER_QUEUE
    kind: ClassVar[str] = c.CLUSTER_QUEUE
    NAMESPACED: ClassVar[bool] = False

    __slots__ = ("metadata", "spec", "status", "extra", "_hash")

    FIELDS: ClassVar[tuple[Field, ...]] = (
        Field("metadata", ObjectMeta), Field("spec", ClusterQueueSpec, _NO_CLUSTER_QUEUE_SPEC),
        Field("status", ClusterQueueStatus, _NO_CLUSTER_QUEUE_STATUS), Field("extra", FrozenMap[str, Json], EMPTY))

    def __init__(self, metadata: ObjectMeta, spec: ClusterQueueSpec = _NO_CLUSTER_QUEUE_SPEC,
                 status: ClusterQueueStatus = _NO_CLUSTER_QUEUE_STATUS, extra: FrozenMap[str, Json] = EMPTY) -> None:
        self.metadata = metadata
        self.spec = spec
        self.status = status
        self.extra = extra
        self._hash = -1

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ClusterQueue):
            return NotImplemented
        return (self.metadata == other.metadata and self.spec == other.spec and self.status == other.status and
                self.extra == other.extra)

    def __hash__(self) -> int:
        h = self._hash
        if h == -1:
            h = self._hash = hash((self.metadata, self.spec, self.status, self.extra))
        return h

    def flavor_names(self) -> tuple[str, ...]:
        return tuple(f.name for g in self.spec.resource_groups for f in g.flavors)

    def checks_with_flavors(self) -> dict[str, frozenset[str]]:
        """``NewAdmissionChecks``: check name -> flavors it applies to (empty onFlavors = all)."""
        rules = self.spec.admission_checks_strategy
        if rules is None:
            return {}
        every = frozenset(self.flavor_names())
        return {r.name: frozenset(r.on_flavors) if r.on_flavors else every
                for r in rules.admission_checks}


@final
class CohortSpec(Model):
    __slots__ = ("parent_name", "resource_groups", "extra")

    FIELDS: ClassVar[tuple[Field, ...]] = (
        Field("parent_name", str, ""), Field("resource_groups", tuple[ResourceGroup, ...], ()),
        Field("extra", FrozenMap[str, Json], EMPTY))

    def __init__(self, parent_name: str = "", resource_groups: tuple[ResourceGroup, ...] = (),
                 extra: FrozenMap[str, Json] = EMPTY) -> None:
        self.parent_name = parent_name
        """The cohort it lends to and borrows from; empty: a root."""
        self.resource_groups = resource_groups
        """Quota of its own, shared by everything under it."""
        self.extra = extra

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CohortSpec):
            return NotImplemented
        return (self.parent_name == other.parent_name and self.resource_groups == other.resource_groups and
                self.extra == other.extra)

    def __hash__(self) -> int:
        return hash((self.parent_name, self.resource_groups, self.extra))


_NO_COHORT_SPEC = CohortSpec()
"""The default of the CohortSpec fields (one object, as attrs kept its defaults)."""


@final
class Cohort(Model):
    """``kueue.x-k8s.io`` Cohort: a node of the cohort tree with its own quota and a parent.
    A cohort a ClusterQueue or another Cohort names exists without an object (no quota, a
    root)."""

    KIND: ClassVar[str] = c.COHORT
    kind: ClassVar[str] = c.COHORT
    NAMESPACED: ClassVar[bool] = False

    __slots__ = ("metadata", "spec", "status", "extra", "_hash")

    FIELDS: ClassVar[tuple[Field, ...]] = (
        Field("metadata", ObjectMeta), Field("spec", CohortSpec, _NO_COHORT_SPEC),
        Field("status", FrozenMap[str, Json], EMPTY), Field("extra", FrozenMap[str, Json], EMPTY))

    def __init__(self, metadata: ObjectMeta, spec: CohortSpec = _NO_COHORT_SPEC, status: FrozenMap[str, Json] = EMPTY,
                 extra: FrozenMap[str, Json] = EMPTY) -> None:
        self.metadata = metadata
        self.spec = spec
        self.status = status
        self.extra = extra
        self._hash = -1

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Cohort):
            return NotImplemented
        return (self.metadata == other.metadata and self.spec == other.spec and self.status == other.status and
                self.extra == other.extra)

    def __hash__(self) -> int:
        h = self._hash
        if h == -1:
            h = self._hash = hash((self.metadata, self.spec, self.status, self.extra))
        return h


@final
class LocalQueueSpec(Model):
    __slots__ = ("cluster_queue", "stop_policy", "extra")

    FIELDS: ClassVar[tuple[Field, ...]] = (
        Field("cluster_queue", str, ""), Field("stop_policy", str | None, None),
        Field("extra", FrozenMap[str, Json], EMPTY))

    def __init__(self, cluster_queue: str = "", stop_policy: str | None = None,
                 extra: FrozenMap[str, Json] = EMPTY) -> None:
        self.cluster_queue = cluster_queue
        self.stop_policy = stop_policy
        self.extra = extra

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LocalQueueSpec):
            return NotImplemented
        return (self.cluster_queue == other.cluster_queue and self.stop_policy == other.stop_policy and
                self.extra == other.extra)

    def __hash__(self) -> int:
        return hash((self.cluster_queue, self.stop_policy, self.extra))

    @property
    def stopped(self) -> bool:
        """``stopPolicy`` is ``Hold`` or ``HoldAndDrain``."""
        return self.stop_policy in STOPPING_POLICIES


_NO_LOCAL_QUEUE_SPEC = LocalQueueSpec()
"""The default of the LocalQueueSpec fields (one object, as attrs kept its defaults)."""


@final
class LocalQueueStatus(Model):
    """What Kueue's LocalQueue controller writes: the ``Active`` condition, the workload counts
    and the quota its workloads hold, per flavor (the shape of a ClusterQueue's, never
    ``borrowed``)."""

    __slots__ = ("conditions", "pending_workloads", "reserving_workloads", "admitted_workloads", "flavors_reservation",
                 "flavors_usage", "extra")

    FIELDS: ClassVar[tuple[Field, ...]] = (
        Field("conditions", Conditions, ()), Field("pending_workloads", int | None, None),
        Field("reserving_workloads", int | None, None), Field("admitted_workloads", int | None, None),
        Field("flavors_reservation", tuple[FlavorUsage, ...], ()), Field("flavors_usage", tuple[FlavorUsage, ...], ()),
        Field("extra", FrozenMap[str, Json], EMPTY))

    def __init__(self, conditions: Conditions = (), pending_workloads: int | None = None,
                 reserving_workloads: int | None = None, admitted_workloads: int | None = None,
                 flavors_reservation: tuple[FlavorUsage, ...] = (), flavors_usage: tuple[FlavorUsage, ...] = (),
                 extra: FrozenMap[str, Json] = EMPTY) -> None:
        self.conditions = conditions
        self.pending_workloads = pending_workloads
        self.reserving_workloads = reserving_workloads
        self.admitted_workloads = admitted_workloads
        self.flavors_reservation = flavors_reservation
        self.flavors_usage = flavors_usage
        self.extra = extra
        """``fairSharing`` and the rest: kept, not written (fair sharing is not modelled)."""

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LocalQueueStatus):
            return NotImplemented
        return (self.conditions == other.conditions and self.pending_workloads == other.pending_workloads and
                self.reserving_workloads == other.reserving_workloads and
                self.admitted_workloads == other.admitted_workloads and
                self.flavors_reservation == other.flavors_reservation and self.flavors_usage == other.flavors_usage and
                self.extra == other.extra)

    def __hash__(self) -> int:
        return hash((self.conditions, self.pending_workloads, self.reserving_workloads, self.admitted_workloads,
                     self.flavors_reservation, self.flavors_usage, self.extra))


_NO_LOCAL_QUEUE_STATUS = LocalQueueStatus()
"""The default of the LocalQueueStatus fields (one object, as attrs kept its defaults)."""


@final
class LocalQueue(Model):
    KIND: ClassVar[str] = c.LOCAL_QUEUE
    kind: ClassVar[str] = c.LOCAL_QUEUE
    NAMESPACED: ClassVar[bool] = True

    __slots__ = ("metadata", "spec", "status", "extra", "_hash")

    FIELDS: ClassVar[tuple[Field, ...]] = (
        Field("metadata", ObjectMeta), Field("spec", LocalQueueSpec, _NO_LOCAL_QUEUE_SPEC),
        Field("status", LocalQueueStatus, _NO_LOCAL_QUEUE_STATUS), Field("extra", FrozenMap[str, Json], EMPTY))

    def __init__(self, metadata: ObjectMeta, spec: LocalQueueSpec = _NO_LOCAL_QUEUE_SPEC,
                 status: LocalQueueStatus = _NO_LOCAL_QUEUE_STATUS, extra: FrozenMap[str, Json] = EMPTY) -> None:
        self.metadata = metadata
        self.spec = spec
        self.status = status
        self.extra = extra
        self._hash = -1

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LocalQueue):
            return NotImplemented
        return (self.metadata == other.metadata and self.spec == other.spec and self.status == other.status and
                self.extra == other.extra)

    def __hash__(self) -> int:
        h = self._hash
        if h == -1:
            h = self._hash = hash((self.metadata, self.spec, self.status, self.extra))
        return h


@final
class ResourceFlavorSpec(Model):
    __slots__ = ("node_labels", "tolerations", "extra")

    FIELDS: ClassVar[tuple[Field, ...]] = (
        Field("node_labels", FrozenMap[str, str], EMPTY), Field("tolerations", tuple[FrozenMap[str, Json], ...], ()),
        Field("extra", FrozenMap[str, Json], EMPTY))

    def __init__(self, node_labels: FrozenMap[str, str] = EMPTY, tolerations: tuple[FrozenMap[str, Json], ...] = (),
                 extra: FrozenMap[str, Json] = EMPTY) -> None:
        self.node_labels = node_labels
        self.tolerations = tolerations
        self.extra = extra

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ResourceFlavorSpec):
            return NotImplemented
        return (self.node_labels == other.node_labels and self.tolerations == other.tolerations and
                self.extra == other.extra)

    def __hash__(self) -> int:
        return hash((self.node_labels, self.tolerations, self.extra))


_NO_RESOURCE_FLAVOR_SPEC = ResourceFlavorSpec()
"""The default of the ResourceFlavorSpec fields (one object, as attrs kept its defaults)."""


@final
class ResourceFlavor(Model):
    KIND: ClassVar[str] = c.RESOURCE_FLAVOR
    kind: ClassVar[str] = c.RESOURCE_FLAVOR
    NAMESPACED: ClassVar[bool] = False

    __slots__ = ("metadata", "spec", "extra", "_hash")

    FIELDS: ClassVar[tuple[Field, ...]] = (
        Field("metadata", ObjectMeta), Field("spec", ResourceFlavorSpec, _NO_RESOURCE_FLAVOR_SPEC),
        Field("extra", FrozenMap[str, Json], EMPTY))

    def __init__(self, metadata: ObjectMeta, spec: ResourceFlavorSpec = _NO_RESOURCE_FLAVOR_SPEC,
                 extra: FrozenMap[str, Json] = EMPTY) -> None:
        self.metadata = metadata
        self.spec = spec
        self.extra = extra
        self._hash = -1

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ResourceFlavor):
            return NotImplemented
        return (self.metadata == other.metadata and self.spec == other.spec and self.extra == other.extra)

    def __hash__(self) -> int:
        h = self._hash
        if h == -1:
            h = self._hash = hash((self.metadata, self.spec, self.extra))
        return h


@final
class ParametersReference(Model):
    __slots__ = ("api_group", "kind", "name")

    FIELDS: ClassVar[tuple[Field, ...]] = (
        Field("api_group", str, ""), Field("kind", str, ""), Field("name", str, ""))

    def __init__(self, api_group: str = "", kind: str = "", name: str = "") -> None:
        self.api_group = api_group
        self.kind = kind
        self.name = name

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ParametersReference):
            return NotImplemented
        return (self.api_group == other.api_group and self.kind == other.kind and self.name == other.name)

    def __hash__(self) -> int:
        return hash((self.api_group, self.kind, self.name))


@final
class AdmissionCheckSpec(Model):
    __slots__ = ("controller_name", "parameters", "preemption_policy", "extra")

    FIELDS: ClassVar[tuple[Field, ...]] = (
        Field("controller_name", str, ""), Field("parameters", ParametersReference | None, None),
        Field("preemption_policy", str | None, None), Field("extra", FrozenMap[str, Json], EMPTY))

    def __init__(self, controller_name: str = "", parameters: ParametersReference | None = None,
                 preemption_policy: str | None = None, extra: FrozenMap[str, Json] = EMPTY) -> None:
        self.controller_name = controller_name
        self.parameters = parameters
        self.preemption_policy = preemption_policy
        """KEP-993 only (the ``kep-993-preemption`` switch): when the preemptions a reservation needs
        may be issued; absent means ``Anytime``."""
        self.extra = extra

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AdmissionCheckSpec):
            return NotImplemented
        return (self.controller_name == other.controller_name and self.parameters == other.parameters and
                self.preemption_policy == other.preemption_policy and self.extra == other.extra)

    def __hash__(self) -> int:
        return hash((self.controller_name, self.parameters, self.preemption_policy, self.extra))

    @property
    def waits_for_check(self) -> bool:
        """``preemptionPolicy: AfterCheckPassedOrOnDemand``: preemptions wait for this check to
        pass, unless a check asks for them."""
        return self.preemption_policy == c.PREEMPTION_POLICY_AFTER_CHECK_PASSED_OR_ON_DEMAND


_NO_ADMISSION_CHECK_SPEC = AdmissionCheckSpec()
"""The default of the AdmissionCheckSpec fields (one object, as attrs kept its defaults)."""


@final
class AdmissionCheckStatus(Model):
    __slots__ = ("conditions", "extra")

    FIELDS: ClassVar[tuple[Field, ...]] = (
        Field("conditions", Conditions, ()), Field("extra", FrozenMap[str, Json], EMPTY))

    def __init__(self, conditions: Conditions = (), extra: FrozenMap[str, Json] = EMPTY) -> None:
        self.conditions = conditions
        self.extra = extra

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AdmissionCheckStatus):
            return NotImplemented
        return (self.conditions == other.conditions and self.extra == other.extra)

    def __hash__(self) -> int:
        return hash((self.conditions, self.extra))


_NO_ADMISSION_CHECK_STATUS = AdmissionCheckStatus()
"""The default of the AdmissionCheckStatus fields (one object, as attrs kept its defaults)."""


@final
class AdmissionCheck(Model):
    KIND: ClassVar[str] = c.ADMISSION_CHECK
    kind: ClassVar[str] = c.ADMISSION_CHECK
    NAMESPACED: ClassVar[bool] = False

    __slots__ = ("metadata", "spec", "status", "extra", "_hash")

    FIELDS: ClassVar[tuple[Field, ...]] = (
        Field("metadata", ObjectMeta), Field("spec", AdmissionCheckSpec, _NO_ADMISSION_CHECK_SPEC),
        Field("status", AdmissionCheckStatus, _NO_ADMISSION_CHECK_STATUS), Field("extra", FrozenMap[str, Json], EMPTY))

    def __init__(self, metadata: ObjectMeta, spec: AdmissionCheckSpec = _NO_ADMISSION_CHECK_SPEC,
                 status: AdmissionCheckStatus = _NO_ADMISSION_CHECK_STATUS,
                 extra: FrozenMap[str, Json] = EMPTY) -> None:
        self.metadata = metadata
        self.spec = spec
        self.status = status
        self.extra = extra
        self._hash = -1

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AdmissionCheck):
            return NotImplemented
        return (self.metadata == other.metadata and self.spec == other.spec and self.status == other.status and
                self.extra == other.extra)

    def __hash__(self) -> int:
        h = self._hash
        if h == -1:
            h = self._hash = hash((self.metadata, self.spec, self.status, self.extra))
        return h


def cohort_names(obj: object) -> tuple[str, ...]:
    """The cohorts an object names (a ClusterQueue's cohort, a Cohort's parent): they exist
    whether or not a Cohort object does."""
    if isinstance(obj, ClusterQueue) and obj.spec.cohort_name:
        return (obj.spec.cohort_name,)
    if isinstance(obj, Cohort) and obj.spec.parent_name:
        return (obj.spec.parent_name,)
    return ()
