"""ClusterQueue, Cohort, LocalQueue, ResourceFlavor and AdmissionCheck (storage version v1beta2)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

import attrs

from kueue_provreq.api import constants as c
from kueue_provreq.api.frozen import EMPTY, FrozenMap
from kueue_provreq.api.memo import memo
from kueue_provreq.api.meta import Conditions, Json, ObjectMeta
from kueue_provreq.api.quantity import Quantity

STOPPING_POLICIES = frozenset({c.STOP_POLICY_HOLD, c.STOP_POLICY_HOLD_AND_DRAIN})
"""The ``stopPolicy`` values that stop a queue (``None`` and absent let it run)."""


@attrs.define(unsafe_hash=True, weakref_slot=False)
class ResourceQuota:
    name: str
    nominal_quota: Quantity
    borrowing_limit: Quantity | None = None
    """How much more than its quota a node may take from its parent; None: no limit."""
    lending_limit: Quantity | None = None
    """How much of its quota a node lends to its parent; None: all of it."""
    extra: FrozenMap[str, Json] = EMPTY


@attrs.define(unsafe_hash=True, weakref_slot=False)
class FlavorQuotas:
    name: str
    resources: tuple[ResourceQuota, ...] = ()
    extra: FrozenMap[str, Json] = EMPTY


@attrs.define(unsafe_hash=True, weakref_slot=False)
class ResourceGroup:
    covered_resources: tuple[str, ...] = ()
    flavors: tuple[FlavorQuotas, ...] = ()
    extra: FrozenMap[str, Json] = EMPTY


@attrs.define(unsafe_hash=True, weakref_slot=False)
class AdmissionCheckStrategyRule:
    name: str
    on_flavors: tuple[str, ...] = ()


@attrs.define(unsafe_hash=True, weakref_slot=False)
class AdmissionChecksStrategy:
    admission_checks: tuple[AdmissionCheckStrategyRule, ...] = ()


@attrs.define(unsafe_hash=True, weakref_slot=False)
class BorrowWithinCohort:
    """``spec.preemption.borrowWithinCohort``: whether a preemptor may borrow while it reclaims,
    and from candidates up to which priority."""

    policy: str = c.PREEMPTION_POLICY_NEVER
    max_priority_threshold: int | None = None
    extra: FrozenMap[str, Json] = EMPTY


@attrs.define(unsafe_hash=True, weakref_slot=False)
class ClusterQueuePreemption:
    """``spec.preemption``: within the queue, and in its cohort (reclaiming what others borrow,
    borrowing while preempting)."""

    within_cluster_queue: str = c.PREEMPTION_POLICY_NEVER
    reclaim_within_cohort: str = c.PREEMPTION_POLICY_NEVER
    borrow_within_cohort: BorrowWithinCohort | None = None
    extra: FrozenMap[str, Json] = EMPTY


@attrs.define(unsafe_hash=True, weakref_slot=False)
class FlavorFungibility:
    """``spec.flavorFungibility``: whether the flavor search goes on past a flavor that needs
    preemption (``whenCanPreempt``) or borrowing (``whenCanBorrow``)."""

    when_can_borrow: str = c.MAY_STOP_SEARCH
    when_can_preempt: str = c.TRY_NEXT_FLAVOR
    extra: FrozenMap[str, Json] = EMPTY


@attrs.define(unsafe_hash=True, weakref_slot=False)
class LabelSelectorRequirement:
    """One ``matchExpressions`` entry: ``In``, ``NotIn``, ``Exists`` or ``DoesNotExist``."""

    key: str
    operator: str
    values: tuple[str, ...] = ()

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


@attrs.define(unsafe_hash=True, weakref_slot=False)
class LabelSelector:
    """A ``metav1.LabelSelector``: every label and every expression must match; empty matches
    everything (``metav1.LabelSelectorAsSelector``)."""

    match_labels: FrozenMap[str, str] = EMPTY
    match_expressions: tuple[LabelSelectorRequirement, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(labels.get(k) == v for k, v in self.match_labels.items()) and \
            all(e.matches(labels) for e in self.match_expressions)


#: What ``namespaceSelector: {}`` reads as: every namespace.
EVERY_NAMESPACE = LabelSelector()


def namespace_labels(namespace: str) -> Mapping[str, str]:
    """The labels a namespace has in a world without Namespace objects: the one the API server
    always sets (``kubernetes.io/metadata.name``, the NamespaceDefaultLabelName admission)."""
    return {c.LABEL_NAMESPACE_NAME: namespace}


@attrs.define(unsafe_hash=True, cache_hash=True, weakref_slot=False)
class ClusterQueueSpec:
    resource_groups: tuple[ResourceGroup, ...] = ()
    cohort_name: str = ""
    """The cohort it lends to and borrows from; empty: none."""
    namespace_selector: LabelSelector | None = None
    """The namespaces whose workloads it admits.  None (absent, the API's default) is the
    nothing selector: no namespace; ``{}`` (:data:`EVERY_NAMESPACE`) is every namespace."""
    admission_checks_strategy: AdmissionChecksStrategy | None = None
    queueing_strategy: str = c.BEST_EFFORT_FIFO
    stop_policy: str | None = None
    preemption: ClusterQueuePreemption | None = None
    """None: the API's defaults (``Never`` everywhere)."""
    flavor_fungibility: FlavorFungibility | None = None
    """None: the API's defaults (``whenCanPreempt: TryNextFlavor``)."""
    extra: FrozenMap[str, Json] = EMPTY

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


@memo(4096)
def _admits_namespace(spec: ClusterQueueSpec, namespace: str) -> bool:
    """Memoised: every pass of every workload asks it of its queue."""
    selector = spec.namespace_selector
    return selector is not None and selector.matches(namespace_labels(namespace))


@attrs.define(unsafe_hash=True, weakref_slot=False)
class ResourceUsage:
    name: str
    total: Quantity = Quantity.parse("0")
    borrowed: Quantity | None = None
    """Usage above the nominal quota; upstream always writes it (``"0"`` outside a cohort: a zero
    Quantity is not omitted), None only where an input left it out."""


@attrs.define(unsafe_hash=True, weakref_slot=False)
class FlavorUsage:
    name: str
    resources: tuple[ResourceUsage, ...] = ()


@attrs.define(unsafe_hash=True, weakref_slot=False)
class ClusterQueueStatus:
    conditions: Conditions = ()
    pending_workloads: int | None = None
    reserving_workloads: int | None = None
    admitted_workloads: int | None = None
    flavors_reservation: tuple[FlavorUsage, ...] = ()
    """Quota held by every workload with a reservation, per flavor and resource."""
    flavors_usage: tuple[FlavorUsage, ...] = ()
    """Quota held by the admitted ones only."""
    extra: FrozenMap[str, Json] = EMPTY


@attrs.define(unsafe_hash=True, cache_hash=True, weakref_slot=False)
class ClusterQueue:
    KIND: ClassVar[str] = c.CLUSTER_QUEUE
    kind: ClassVar[str] = c.CLUSTER_QUEUE
    NAMESPACED: ClassVar[bool] = False

    metadata: ObjectMeta
    spec: ClusterQueueSpec = ClusterQueueSpec()
    status: ClusterQueueStatus = ClusterQueueStatus()
    extra: FrozenMap[str, Json] = EMPTY

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


@attrs.define(unsafe_hash=True, weakref_slot=False)
class CohortSpec:
    parent_name: str = ""
    """The cohort it lends to and borrows from; empty: a root."""
    resource_groups: tuple[ResourceGroup, ...] = ()
    """Quota of its own, shared by everything under it."""
    extra: FrozenMap[str, Json] = EMPTY


@attrs.define(unsafe_hash=True, cache_hash=True, weakref_slot=False)
class Cohort:
    """``kueue.x-k8s.io`` Cohort: a node of the cohort tree with its own quota and a parent.
    A cohort a ClusterQueue or another Cohort names exists without an object (no quota, a
    root)."""

    KIND: ClassVar[str] = c.COHORT
    kind: ClassVar[str] = c.COHORT
    NAMESPACED: ClassVar[bool] = False

    metadata: ObjectMeta
    spec: CohortSpec = CohortSpec()
    status: FrozenMap[str, Json] = EMPTY
    extra: FrozenMap[str, Json] = EMPTY


@attrs.define(unsafe_hash=True, weakref_slot=False)
class LocalQueueSpec:
    cluster_queue: str = ""
    stop_policy: str | None = None
    extra: FrozenMap[str, Json] = EMPTY

    @property
    def stopped(self) -> bool:
        """``stopPolicy`` is ``Hold`` or ``HoldAndDrain``."""
        return self.stop_policy in STOPPING_POLICIES


@attrs.define(unsafe_hash=True, weakref_slot=False)
class LocalQueueStatus:
    """What Kueue's LocalQueue controller writes: the ``Active`` condition, the workload counts
    and the quota its workloads hold, per flavor (the shape of a ClusterQueue's, never
    ``borrowed``)."""

    conditions: Conditions = ()
    pending_workloads: int | None = None
    reserving_workloads: int | None = None
    admitted_workloads: int | None = None
    flavors_reservation: tuple[FlavorUsage, ...] = ()
    flavors_usage: tuple[FlavorUsage, ...] = ()
    extra: FrozenMap[str, Json] = EMPTY
    """``fairSharing`` and the rest: kept, not written (fair sharing is not modelled)."""


@attrs.define(unsafe_hash=True, cache_hash=True, weakref_slot=False)
class LocalQueue:
    KIND: ClassVar[str] = c.LOCAL_QUEUE
    kind: ClassVar[str] = c.LOCAL_QUEUE
    NAMESPACED: ClassVar[bool] = True

    metadata: ObjectMeta
    spec: LocalQueueSpec = LocalQueueSpec()
    status: LocalQueueStatus = LocalQueueStatus()
    extra: FrozenMap[str, Json] = EMPTY


@attrs.define(unsafe_hash=True, weakref_slot=False)
class ResourceFlavorSpec:
    node_labels: FrozenMap[str, str] = EMPTY
    tolerations: tuple[FrozenMap[str, Json], ...] = ()
    extra: FrozenMap[str, Json] = EMPTY


@attrs.define(unsafe_hash=True, cache_hash=True, weakref_slot=False)
class ResourceFlavor:
    KIND: ClassVar[str] = c.RESOURCE_FLAVOR
    kind: ClassVar[str] = c.RESOURCE_FLAVOR
    NAMESPACED: ClassVar[bool] = False

    metadata: ObjectMeta
    spec: ResourceFlavorSpec = ResourceFlavorSpec()
    extra: FrozenMap[str, Json] = EMPTY


@attrs.define(unsafe_hash=True, weakref_slot=False)
class ParametersReference:
    api_group: str = ""
    kind: str = ""
    name: str = ""


@attrs.define(unsafe_hash=True, weakref_slot=False)
class AdmissionCheckSpec:
    controller_name: str = ""
    parameters: ParametersReference | None = None
    preemption_policy: str | None = None
    """KEP-993 only (the ``kep-993-preemption`` switch): when the preemptions a reservation needs
    may be issued; absent means ``Anytime``."""
    extra: FrozenMap[str, Json] = EMPTY

    @property
    def waits_for_check(self) -> bool:
        """``preemptionPolicy: AfterCheckPassedOrOnDemand``: preemptions wait for this check to
        pass, unless a check asks for them."""
        return self.preemption_policy == c.PREEMPTION_POLICY_AFTER_CHECK_PASSED_OR_ON_DEMAND


@attrs.define(unsafe_hash=True, weakref_slot=False)
class AdmissionCheckStatus:
    conditions: Conditions = ()
    extra: FrozenMap[str, Json] = EMPTY


@attrs.define(unsafe_hash=True, cache_hash=True, weakref_slot=False)
class AdmissionCheck:
    KIND: ClassVar[str] = c.ADMISSION_CHECK
    kind: ClassVar[str] = c.ADMISSION_CHECK
    NAMESPACED: ClassVar[bool] = False

    metadata: ObjectMeta
    spec: AdmissionCheckSpec = AdmissionCheckSpec()
    status: AdmissionCheckStatus = AdmissionCheckStatus()
    extra: FrozenMap[str, Json] = EMPTY


def cohort_names(obj: object) -> tuple[str, ...]:
    """The cohorts an object names (a ClusterQueue's cohort, a Cohort's parent): they exist
    whether or not a Cohort object does."""
    if isinstance(obj, ClusterQueue) and obj.spec.cohort_name:
        return (obj.spec.cohort_name,)
    if isinstance(obj, Cohort) and obj.spec.parent_name:
        return (obj.spec.parent_name,)
    return ()
