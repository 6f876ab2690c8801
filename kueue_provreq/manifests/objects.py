"""Kubernetes objects and Kueue's Configuration <-> models: versions, defaults, validation."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from kueue_provreq.api import constants as c
from kueue_provreq.api.config import DEFAULT_FEATURE_GATES, Configuration
from kueue_provreq.api.objects import KINDS, KubeObject
from kueue_provreq.manifests.codec import decode, describe, encode
from kueue_provreq.manifests.errors import ManifestError
from kueue_provreq.manifests.schema import apply_defaults
from kueue_provreq.manifests.validation import check_limits, validate
from kueue_provreq.manifests.versions import from_v1beta1, to_v1beta1
from kueue_provreq.manifests.yamlio import locate

_KUEUE_KINDS = (c.WORKLOAD, c.CLUSTER_QUEUE, c.LOCAL_QUEUE, c.RESOURCE_FLAVOR,
                c.ADMISSION_CHECK, c.PROVISIONING_REQUEST_CONFIG)

#: Served API versions of each kind, storage version first.
API_VERSIONS: dict[str, tuple[str, ...]] = {
    **{kind: (c.KUEUE_V1BETA2, c.KUEUE_V1BETA1) for kind in _KUEUE_KINDS},
    # v1beta1 has the same schema as v1 (no conversion, the server only rewrites apiVersion).
    c.PROVISIONING_REQUEST: (c.AUTOSCALING_V1, c.AUTOSCALING_V1BETA1),
    c.POD_TEMPLATE: (c.CORE_V1,),
    c.JOB: (c.BATCH_V1,),
}


def _copy(value: Any) -> Any:
    """A private, plain-JSON copy (defaulting and conversion edit it in place)."""
    if isinstance(value, Mapping):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_copy(v) for v in value]
    return value


def _name_of(kind: Any, metadata: Any) -> str:
    """``Workload default/wl`` for error messages, as far as the input allows."""
    label = kind if isinstance(kind, str) and kind else "object"
    if not isinstance(metadata, Mapping):
        return label
    name = metadata.get("name") or (f"{metadata.get('generateName')}*"
                                    if metadata.get("generateName") else "")
    ns = metadata.get("namespace")
    if not isinstance(name, str) or not name:
        return label
    return f"{label} {ns}/{name}" if isinstance(ns, str) and ns else f"{label} {name}"


def _check_version(kind: Any, api_version: Any) -> str:
    """``kind``, once it and ``api_version`` are known to be served."""
    if not isinstance(kind, str) or kind not in API_VERSIONS:
        raise ManifestError(f"unsupported kind {describe(kind)} (supported: "
                            f"{', '.join(API_VERSIONS)})", path="kind")
    if api_version not in API_VERSIONS[kind]:
        raise ManifestError(f"unsupported apiVersion {describe(api_version)} for {kind} "
                            f"(supported: {', '.join(API_VERSIONS[kind])})", path="apiVersion")
    return kind


def load_object(data: Mapping[str, Any]) -> KubeObject:
    """A model from a manifest in any served version, with the CRD defaults applied.

    The manifest must be one the API server would accept on create
    (:mod:`~kueue_provreq.manifests.validation`).  Raises :class:`ManifestError`
    naming the object, the field and, for YAML read by :func:`load_yaml_documents`,
    the file and line.
    """
    if not isinstance(data, Mapping):
        raise ManifestError(f"expected an object, got {describe(data)}")
    api_version = data.get("apiVersion")
    try:
        check_limits(data)
        kind = _check_version(data.get("kind"), api_version)
        body = {k: _copy(v) for k, v in data.items() if k not in ("apiVersion", "kind")}
        if api_version == c.KUEUE_V1BETA1:
            from_v1beta1(kind, body)
        apply_defaults(kind, body)
        validate(kind, body)
        obj = decode(KINDS[kind], body)
        meta = obj.metadata
        if not meta.name and not meta.extra.get("generateName"):
            raise ManifestError("required value", path="metadata.name")
        if meta.namespace and not obj.NAMESPACED:
            raise ManifestError(f"{kind} is cluster-scoped and has no namespace",
                                path="metadata.namespace")
    except ManifestError as e:
        raise e.within(obj=_name_of(data.get("kind"), data.get("metadata")),
                       source=locate(data, e.path)) from None
    return obj


def dump_object(obj: KubeObject, api_version: str | None = None) -> dict[str, Any]:
    """The manifest of ``obj``: storage version by default, or any served ``api_version``."""
    version = api_version or API_VERSIONS[obj.KIND][0]
    try:
        _check_version(obj.KIND, version)
    except ManifestError as e:
        raise e.within(obj=_name_of(obj.KIND, encode(obj.metadata))) from None
    body: dict[str, Any] = encode(obj)
    if version == c.KUEUE_V1BETA1:
        to_v1beta1(obj.KIND, body)
    return {"apiVersion": version, "kind": obj.KIND, **body}


_TIMESTAMPS = (c.TIMESTAMP_EVICTION, c.TIMESTAMP_CREATION)


def load_configuration(data: Mapping[str, Any] | None) -> Configuration:
    """A Kueue Configuration fragment (config.kueue.x-k8s.io/v1beta2) with v1beta2 defaults.

    An absent ``waitForPodsReady`` means enabled with its defaults (timeout 30m,
    blockAdmission false, recoveryTimeout = timeout), as a default install behaves.
    Feature gates the library does not model are rejected rather than ignored.
    """
    try:
        return _load_configuration({} if data is None else data)
    except ManifestError as e:
        raise e.within(obj="Configuration", source=locate(data, e.path)) from None


def _load_configuration(data: Mapping[str, Any]) -> Configuration:
    if not isinstance(data, Mapping):
        raise ManifestError(f"expected an object, got {describe(data)}")
    body = _copy(data)
    api_version = body.pop("apiVersion", c.CONFIG_V1BETA2)
    if api_version != c.CONFIG_V1BETA2:
        raise ManifestError(f"unsupported apiVersion {describe(api_version)} "
                            f"(supported: {c.CONFIG_V1BETA2})", path="apiVersion")
    if body.pop("kind", "Configuration") != "Configuration":
        raise ManifestError("expected Configuration", path="kind")
    if body.get("waitForPodsReady") is None:
        body["waitForPodsReady"] = {}
    config = decode(Configuration, body)
    unknown = [name for name in config.feature_gates if name not in DEFAULT_FEATURE_GATES]
    if unknown:
        raise ManifestError(f"unknown feature gate {', '.join(unknown)} "
                            f"(known: {', '.join(DEFAULT_FEATURE_GATES)})", path="featureGates")
    wait = config.wait_for_pods_ready
    assert wait is not None  # defaulted above
    if wait.timeout <= 0:
        raise ManifestError("must be greater than 0", path="waitForPodsReady.timeout")
    if wait.recovery_timeout is None:
        wait = attrs.evolve(wait, recovery_timeout=wait.timeout)
    elif wait.recovery_timeout < 0:
        raise ManifestError("must be greater than or equal to 0",
                            path="waitForPodsReady.recoveryTimeout")
    strategy = wait.requeuing_strategy
    if strategy.timestamp not in _TIMESTAMPS:
        raise ManifestError(f"expected one of {', '.join(_TIMESTAMPS)}, got "
                            f"{describe(strategy.timestamp)}",
                            path="waitForPodsReady.requeuingStrategy.timestamp")
    for key, value in (("backoffLimitCount", strategy.backoff_limit_count),
                       ("backoffBaseSeconds", strategy.backoff_base_seconds),
                       ("backoffMaxSeconds", strategy.backoff_max_seconds)):
        if value is not None and value < 0:
            raise ManifestError("must be greater than or equal to 0",
                                path=f"waitForPodsReady.requeuingStrategy.{key}")
    return attrs.evolve(config, wait_for_pods_ready=wait,
                        feature_gates=DEFAULT_FEATURE_GATES.merged(config.feature_gates))
