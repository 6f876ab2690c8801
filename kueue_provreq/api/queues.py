"""ClusterQueue, LocalQueue, ResourceFlavor and AdmissionCheck (storage version v1beta2)."""

from __future__ import annotations

from typing import ClassVar

import attrs

from kueue_provreq.api import constants as c
from kueue_provreq.api.frozen import EMPTY, FrozenMap
from kueue_provreq.api.meta import Conditions, Json, ObjectMeta
from kueue_provreq.api.quantity import Quantity

STOPPING_POLICIES = frozenset({c.STOP_POLICY_HOLD, c.STOP_POLICY_HOLD_AND_DRAIN})
"""The ``stopPolicy`` values that stop a queue (``None`` and absent let it run)."""


@attrs.frozen
class ResourceQuota:
    name: str
    nominal_quota: Quantity
    extra: FrozenMap[str, Json] = EMPTY


@attrs.frozen
class FlavorQuotas:
    name: str
    resources: tuple[ResourceQuota, ...] = ()
    extra: FrozenMap[str, Json] = EMPTY


@attrs.frozen
class ResourceGroup:
    covered_resources: tuple[str, ...] = ()
    flavors: tuple[FlavorQuotas, ...] = ()
    extra: FrozenMap[str, Json] = EMPTY


@attrs.frozen
class AdmissionCheckStrategyRule:
    name: str
    on_flavors: tuple[str, ...] = ()


@attrs.frozen
class AdmissionChecksStrategy:
    admission_checks: tuple[AdmissionCheckStrategyRule, ...] = ()


@attrs.frozen
class ClusterQueuePreemption:
    """``spec.preemption``: only preemption within the queue is modelled (cohorts are not)."""

    within_cluster_queue: str = c.PREEMPTION_POLICY_NEVER
    extra: FrozenMap[str, Json] = EMPTY
    """``reclaimWithinCohort``, ``borrowWithinCohort``: kept, not acted on (no cohorts)."""


@attrs.frozen
class FlavorFungibility:
    """``spec.flavorFungibility``: whether the flavor search goes on past a flavor that needs
    preemption (``whenCanPreempt``); ``whenCanBorrow`` only matters in a cohort."""

    when_can_preempt: str = c.TRY_NEXT_FLAVOR
    extra: FrozenMap[str, Json] = EMPTY


@attrs.frozen(cache_hash=True)
class ClusterQueueSpec:
    resource_groups: tuple[ResourceGroup, ...] = ()
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

    @property
    def within_cluster_queue(self) -> str:
        """``preemption.withinClusterQueue``, defaulted."""
        return self.preemption.within_cluster_queue if self.preemption is not None else c.PREEMPTION_POLICY_NEVER

    @property
    def when_can_preempt(self) -> str:
        """``flavorFungibility.whenCanPreempt``, defaulted."""
        ff = self.flavor_fungibility
        return ff.when_can_preempt if ff is not None else c.TRY_NEXT_FLAVOR


@attrs.frozen
class ResourceUsage:
    name: str
    total: Quantity = Quantity.parse("0")
    borrowed: Quantity | None = None
    """Usage above the nominal quota: only ever written for a queue in a cohort."""


@attrs.frozen
class FlavorUsage:
    name: str
    resources: tuple[ResourceUsage, ...] = ()


@attrs.frozen
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


@attrs.frozen(cache_hash=True)
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


@attrs.frozen
class LocalQueueSpec:
    cluster_queue: str = ""
    stop_policy: str | None = None
    extra: FrozenMap[str, Json] = EMPTY

    @property
    def stopped(self) -> bool:
        """``stopPolicy`` is ``Hold`` or ``HoldAndDrain``."""
        return self.stop_policy in STOPPING_POLICIES


@attrs.frozen
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


@attrs.frozen(cache_hash=True)
class LocalQueue:
    KIND: ClassVar[str] = c.LOCAL_QUEUE
    kind: ClassVar[str] = c.LOCAL_QUEUE
    NAMESPACED: ClassVar[bool] = True

    metadata: ObjectMeta
    spec: LocalQueueSpec = LocalQueueSpec()
    status: LocalQueueStatus = LocalQueueStatus()
    extra: FrozenMap[str, Json] = EMPTY


@attrs.frozen
class ResourceFlavorSpec:
    node_labels: FrozenMap[str, str] = EMPTY
    tolerations: tuple[FrozenMap[str, Json], ...] = ()
    extra: FrozenMap[str, Json] = EMPTY


@attrs.frozen(cache_hash=True)
class ResourceFlavor:
    KIND: ClassVar[str] = c.RESOURCE_FLAVOR
    kind: ClassVar[str] = c.RESOURCE_FLAVOR
    NAMESPACED: ClassVar[bool] = False

    metadata: ObjectMeta
    spec: ResourceFlavorSpec = ResourceFlavorSpec()
    extra: FrozenMap[str, Json] = EMPTY


@attrs.frozen
class ParametersReference:
    api_group: str = ""
    kind: str = ""
    name: str = ""


@attrs.frozen
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


@attrs.frozen
class AdmissionCheckStatus:
    conditions: Conditions = ()
    extra: FrozenMap[str, Json] = EMPTY


@attrs.frozen(cache_hash=True)
class AdmissionCheck:
    KIND: ClassVar[str] = c.ADMISSION_CHECK
    kind: ClassVar[str] = c.ADMISSION_CHECK
    NAMESPACED: ClassVar[bool] = False

    metadata: ObjectMeta
    spec: AdmissionCheckSpec = AdmissionCheckSpec()
    status: AdmissionCheckStatus = AdmissionCheckStatus()
    extra: FrozenMap[str, Json] = EMPTY
