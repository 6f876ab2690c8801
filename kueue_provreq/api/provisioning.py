"""ProvisioningRequestConfig (Kueue), ProvisioningRequest (Cluster Autoscaler, autoscaling.x-k8s.io/v1)
and the core ``v1`` PodTemplate that a request points at."""

from __future__ import annotations

from typing import ClassVar

import attrs

from kueue_provreq.api import constants as c
from kueue_provreq.api.frozen import EMPTY, FrozenMap
from kueue_provreq.api.meta import Conditions, Json, ObjectMeta


@attrs.define(unsafe_hash=True, weakref_slot=False)
class RetryStrategy:
    """``retryStrategy`` with the CRD defaults (3 / 60 s / 1800 s) applied field by field."""

    backoff_limit_count: int = c.DEFAULT_BACKOFF_LIMIT_COUNT
    backoff_base_seconds: int = c.DEFAULT_BACKOFF_BASE_SECONDS
    backoff_max_seconds: int = c.DEFAULT_BACKOFF_MAX_SECONDS


@attrs.define(unsafe_hash=True, weakref_slot=False)
class NodeSelectorFromDetail:
    key: str
    value_from_provisioning_class_detail: str


@attrs.define(unsafe_hash=True, weakref_slot=False)
class PodSetUpdatesConfig:
    node_selector: tuple[NodeSelectorFromDetail, ...] = ()


@attrs.define(unsafe_hash=True, weakref_slot=False)
class ProvisioningRequestConfigSpec:
    provisioning_class_name: str = ""
    parameters: FrozenMap[str, str] = EMPTY
    managed_resources: tuple[str, ...] = ()
    retry_strategy: RetryStrategy = RetryStrategy()
    pod_set_updates: PodSetUpdatesConfig | None = None
    pod_set_merge_policy: str | None = None
    extra: FrozenMap[str, Json] = EMPTY


@attrs.define(unsafe_hash=True, cache_hash=True, weakref_slot=False)
class ProvisioningRequestConfig:
    KIND: ClassVar[str] = c.PROVISIONING_REQUEST_CONFIG
    kind: ClassVar[str] = c.PROVISIONING_REQUEST_CONFIG
    NAMESPACED: ClassVar[bool] = False

    metadata: ObjectMeta
    spec: ProvisioningRequestConfigSpec = ProvisioningRequestConfigSpec()
    extra: FrozenMap[str, Json] = EMPTY


@attrs.define(unsafe_hash=True, weakref_slot=False)
class Reference:
    name: str = ""


@attrs.define(unsafe_hash=True, weakref_slot=False)
class ProvisioningRequestPodSet:
    pod_template_ref: Reference
    count: int


@attrs.define(unsafe_hash=True, weakref_slot=False)
class ProvisioningRequestSpec:
    provisioning_class_name: str = ""
    parameters: FrozenMap[str, str] | None = None
    pod_sets: tuple[ProvisioningRequestPodSet, ...] = ()
    extra: FrozenMap[str, Json] = EMPTY


@attrs.define(unsafe_hash=True, weakref_slot=False)
class ProvisioningRequestStatus:
    conditions: Conditions = ()
    provisioning_class_details: FrozenMap[str, str] = EMPTY
    extra: FrozenMap[str, Json] = EMPTY


@attrs.define(unsafe_hash=True, cache_hash=True, weakref_slot=False)
class ProvisioningRequest:
    KIND: ClassVar[str] = c.PROVISIONING_REQUEST
    kind: ClassVar[str] = c.PROVISIONING_REQUEST
    NAMESPACED: ClassVar[bool] = True

    metadata: ObjectMeta
    spec: ProvisioningRequestSpec = ProvisioningRequestSpec()
    status: ProvisioningRequestStatus = ProvisioningRequestStatus()
    extra: FrozenMap[str, Json] = EMPTY


@attrs.define(unsafe_hash=True, cache_hash=True, weakref_slot=False)
class PodTemplate:
    KIND: ClassVar[str] = c.POD_TEMPLATE
    kind: ClassVar[str] = c.POD_TEMPLATE
    NAMESPACED: ClassVar[bool] = True

    metadata: ObjectMeta
    template: FrozenMap[str, Json] = EMPTY
    extra: FrozenMap[str, Json] = EMPTY
