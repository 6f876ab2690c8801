"""ProvisioningRequestConfig (Kueue), ProvisioningRequest (Cluster Autoscaler, autoscaling.x-k8s.io/v1)
and the core ``v1`` PodTemplate that a request points at."""

from __future__ import annotations

from typing import ClassVar, final

from kueue_provreq.api import constants as c
from kueue_provreq.api.frozen import EMPTY, FrozenMap
from kueue_provreq.api.meta import Conditions, Json, ObjectMeta
from kueue_provreq.api.model import Field, Model


@final
class RetryStrategy(Model):
    """``retryStrategy`` with the CRD defaults (3 / 60 s / 1800 s) applied field by field."""

    __slots__ = ("backoff_limit_count", "backoff_base_seconds", "backoff_max_seconds")

    FIELDS: ClassVar[tuple[Field, ...]] = (
        Field("backoff_limit_count", int, c.DEFAULT_BACKOFF_LIMIT_COUNT),
        Field("backoff_base_seconds", int, c.DEFAULT_BACKOFF_BASE_SECONDS),
        Field("backoff_max_seconds", int, c.DEFAULT_BACKOFF_MAX_SECONDS))

    def __init__(self, backoff_limit_count: int = c.DEFAULT_BACKOFF_LIMIT_COUNT,
                 backoff_base_seconds: int = c.DEFAULT_BACKOFF_BASE_SECONDS,
                 backoff_max_seconds: int = c.DEFAULT_BACKOFF_MAX_SECONDS) -> None:
        self.backoff_limit_count = backoff_limit_count
        self.backoff_base_seconds = backoff_base_seconds
        self.backoff_max_seconds = backoff_max_seconds

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RetryStrategy):
            return NotImplemented
        return (self.backoff_limit_count == other.backoff_limit_count and
                self.backoff_base_seconds == other.backoff_base_seconds and
                self.backoff_max_seconds == other.backoff_max_seconds)

    def __hash__(self) -> int:
        return hash((self.backoff_limit_count, self.backoff_base_seconds, self.backoff_max_seconds))


_DEFAULT_RETRY_STRATEGY = RetryStrategy()


@final
class NodeSelectorFromDetail(Model):
    __slots__ = ("key", "value_from_provisioning_class_detail")

    FIELDS: ClassVar[tuple[Field, ...]] = (
        Field("key", str), Field("value_from_provisioning_class_detail", str))

    def __init__(self, key: str, value_from_provisioning_class_detail: str) -> None:
        self.key = key
        self.value_from_provisioning_class_detail = value_from_provisioning_class_detail

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, NodeSelectorFromDetail):
            return NotImplemented
        return (self.key == other.key and
                self.value_from_provisioning_class_detail == other.value_from_provisioning_class_detail)

    def __hash__(self) -> int:
        return hash((self.key, self.value_from_provisioning_class_detail))


@final
class PodSetUpdatesConfig(Model):
    __slots__ = ("node_selector",)

    FIELDS: ClassVar[tuple[Field, ...]] = (
        Field("node_selector", tuple[NodeSelectorFromDetail, ...], ()),)

    def __init__(self, node_selector: tuple[NodeSelectorFromDetail, ...] = ()) -> None:
        self.node_selector = node_selector

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PodSetUpdatesConfig):
            return NotImplemented
        return (self.node_selector == other.node_selector)

    def __hash__(self) -> int:
        return hash((self.node_selector,))


@final
class ProvisioningRequestConfigSpec(Model):
    __slots__ = ("provisioning_class_name", "parameters", "managed_resources", "retry_strategy", "pod_set_updates",
                 "pod_set_merge_policy", "extra")

    FIELDS: ClassVar[tuple[Field, ...]] = (
        Field("provisioning_class_name", str, ""), Field("parameters", FrozenMap[str, str], EMPTY),
        Field("managed_resources", tuple[str, ...], ()),
        Field("retry_strategy", RetryStrategy, _DEFAULT_RETRY_STRATEGY),
        Field("pod_set_updates", PodSetUpdatesConfig | None, None), Field("pod_set_merge_policy", str | None, None),
        Field("extra", FrozenMap[str, Json], EMPTY))

    def __init__(self, provisioning_class_name: str = "", parameters: FrozenMap[str, str] = EMPTY,
                 managed_resources: tuple[str, ...] = (), retry_strategy: RetryStrategy = _DEFAULT_RETRY_STRATEGY,
                 pod_set_updates: PodSetUpdatesConfig | None = None, pod_set_merge_policy: str | None = None,
                 extra: FrozenMap[str, Json] = EMPTY) -> None:
        self.provisioning_class_name = provisioning_class_name
        self.parameters = parameters
        self.managed_resources = managed_resources
        self.retry_strategy = retry_strategy
        self.pod_set_updates = pod_set_updates
        self.pod_set_merge_policy = pod_set_merge_policy
        self.extra = extra

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ProvisioningRequestConfigSpec):
            return NotImplemented
        return (self.provisioning_class_name == other.provisioning_class_name and
                self.parameters == other.parameters and self.managed_resources == other.managed_resources and
                self.retry_strategy == other.retry_strategy and self.pod_set_updates == other.pod_set_updates and
                self.pod_set_merge_policy == other.pod_set_merge_policy and self.extra == other.extra)

    def __hash__(self) -> int:
        return hash((self.provisioning_class_name, self.parameters, self.managed_resources, self.retry_strategy,
                     self.pod_set_updates, self.pod_set_merge_policy, self.extra))


_NO_CONFIG_SPEC = ProvisioningRequestConfigSpec()


@final
class ProvisioningRequestConfig(Model):
    KIND: ClassVar[str] = c.PROVISIONING_REQUEST_CONFIG
    kind: ClassVar[str] = c.PROVISIONING_REQUEST_CONFIG
    NAMESPACED: ClassVar[bool] = False

    __slots__ = ("metadata", "spec", "extra", "_hash")

    FIELDS: ClassVar[tuple[Field, ...]] = (
        Field("metadata", ObjectMeta), Field("spec", ProvisioningRequestConfigSpec, _NO_CONFIG_SPEC),
        Field("extra", FrozenMap[str, Json], EMPTY))

    def __init__(self, metadata: ObjectMeta, spec: ProvisioningRequestConfigSpec = _NO_CONFIG_SPEC,
                 extra: FrozenMap[str, Json] = EMPTY) -> None:
        self.metadata = metadata
        self.spec = spec
        self.extra = extra
        self._hash = -1

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ProvisioningRequestConfig):
            return NotImplemented
        return (self.metadata == other.metadata and self.spec == other.spec and self.extra == other.extra)

    def __hash__(self) -> int:
        h = self._hash
        if h == -1:
            h = self._hash = hash((self.metadata, self.spec, self.extra))
        return h


@final
class Reference(Model):
    __slots__ = ("name",)

    FIELDS: ClassVar[tuple[Field, ...]] = (
        Field("name", str, ""),)

    def __init__(self, name: str = "") -> None:
        self.name = name

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Reference):
            return NotImplemented
        return (self.name == other.name)

    def __hash__(self) -> int:
        return hash((self.name,))


@final
class ProvisioningRequestPodSet(Model):
    __slots__ = ("pod_template_ref", "count")

    FIELDS: ClassVar[tuple[Field, ...]] = (
        Field("pod_template_ref", Reference), Field("count", int))

    def __init__(self, pod_template_ref: Reference, count: int) -> None:
        self.pod_template_ref = pod_template_ref
        self.count = count

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ProvisioningRequestPodSet):
            return NotImplemented
        return (self.pod_template_ref == other.pod_template_ref and self.count == other.count)

    def __hash__(self) -> int:
        return hash((self.pod_template_ref, self.count))


@final
class ProvisioningRequestSpec(Model):
    __slots__ = ("provisioning_class_name", "parameters", "pod_sets", "extra")

    FIELDS: ClassVar[tuple[Field, ...]] = (
        Field("provisioning_class_name", str, ""), Field("parameters", FrozenMap[str, str] | None, None),
        Field("pod_sets", tuple[ProvisioningRequestPodSet, ...], ()), Field("extra", FrozenMap[str, Json], EMPTY))

    def __init__(self, provisioning_class_name: str = "", parameters: FrozenMap[str, str] | None = None,
                 pod_sets: tuple[ProvisioningRequestPodSet, ...] = (), extra: FrozenMap[str, Json] = EMPTY) -> None:
        self.provisioning_class_name = provisioning_class_name
        self.parameters = parameters
        self.pod_sets = pod_sets
        self.extra = extra

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ProvisioningRequestSpec):
            return NotImplemented
        return (self.provisioning_class_name == other.provisioning_class_name and
                self.parameters == other.parameters and self.pod_sets == other.pod_sets and self.extra == other.extra)

    def __hash__(self) -> int:
        return hash((self.provisioning_class_name, self.parameters, self.pod_sets, self.extra))


_NO_REQUEST_SPEC = ProvisioningRequestSpec()


@final
class ProvisioningRequestStatus(Model):
    __slots__ = ("conditions", "provisioning_class_details", "extra")

    FIELDS: ClassVar[tuple[Field, ...]] = (
        Field("conditions", Conditions, ()), Field("provisioning_class_details", FrozenMap[str, str], EMPTY),
        Field("extra", FrozenMap[str, Json], EMPTY))

    def __init__(self, conditions: Conditions = (), provisioning_class_details: FrozenMap[str, str] = EMPTY,
                 extra: FrozenMap[str, Json] = EMPTY) -> None:
        self.conditions = conditions
        self.provisioning_class_details = provisioning_class_details
        self.extra = extra

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ProvisioningRequestStatus):
            return NotImplemented
        return (self.conditions == other.conditions and
                self.provisioning_class_details == other.provisioning_class_details and self.extra == other.extra)

    def __hash__(self) -> int:
        return hash((self.conditions, self.provisioning_class_details, self.extra))


_NO_REQUEST_STATUS = ProvisioningRequestStatus()
"""The defaults of the fields of these types (one object each, as attrs kept its defaults)."""


@final
class ProvisioningRequest(Model):
    KIND: ClassVar[str] = c.PROVISIONING_REQUEST
    kind: ClassVar[str] = c.PROVISIONING_REQUEST
    NAMESPACED: ClassVar[bool] = True

    __slots__ = ("metadata", "spec", "status", "extra", "_hash")

    FIELDS: ClassVar[tuple[Field, ...]] = (
        Field("metadata", ObjectMeta), Field("spec", ProvisioningRequestSpec, _NO_REQUEST_SPEC),
        Field("status", ProvisioningRequestStatus, _NO_REQUEST_STATUS),
        Field("extra", FrozenMap[str, Json], EMPTY))

    def __init__(self, metadata: ObjectMeta, spec: ProvisioningRequestSpec = _NO_REQUEST_SPEC,
                 status: ProvisioningRequestStatus = _NO_REQUEST_STATUS,
                 extra: FrozenMap[str, Json] = EMPTY) -> None:
        self.metadata = metadata
        self.spec = spec
        self.status = status
        self.extra = extra
        self._hash = -1

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ProvisioningRequest):
            return NotImplemented
        return (self.metadata == other.metadata and self.spec == other.spec and self.status == other.status and
                self.extra == other.extra)

    def __hash__(self) -> int:
        h = self._hash
        if h == -1:
            h = self._hash = hash((self.metadata, self.spec, self.status, self.extra))
        return h


@final
class PodTemplate(Model):
    KIND: ClassVar[str] = c.POD_TEMPLATE
    kind: ClassVar[str] = c.POD_TEMPLATE
    NAMESPACED: ClassVar[bool] = True

    __slots__ = ("metadata", "template", "extra", "_hash")

    FIELDS: ClassVar[tuple[Field, ...]] = (
        Field("metadata", ObjectMeta), Field("template", FrozenMap[str, Json], EMPTY),
        Field("extra", FrozenMap[str, Json], EMPTY))

    def __init__(self, metadata: ObjectMeta, template: FrozenMap[str, Json] = EMPTY,
                 extra: FrozenMap[str, Json] = EMPTY) -> None:
        self.metadata = metadata
        self.template = template
        self.extra = extra
        self._hash = -1

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PodTemplate):
            return NotImplemented
        return (self.metadata == other.metadata and self.template == other.template and self.extra == other.extra)

    def __hash__(self) -> int:
        h = self._hash
        if h == -1:
            h = self._hash = hash((self.metadata, self.template, self.extra))
        return h
