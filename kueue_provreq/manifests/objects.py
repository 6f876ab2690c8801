"""Kubernetes objects <-> models: versions, defaults, validation."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

import attrs

from kueue_provreq.api import constants as c
from kueue_provreq.api.config import SEMANTICS_KEP_993_PREEMPTION
from kueue_provreq.api.objects import KINDS, KubeObject
from kueue_provreq.manifests.codec import decode, describe, encode
from kueue_provreq.manifests.errors import ManifestError
from kueue_provreq.manifests.nodes import Problems
from kueue_provreq.manifests.schema import apply_defaults
from kueue_provreq.manifests.validation import check_limits, validate
from kueue_provreq.manifests.versions import from_v1beta1, to_v1beta1
from kueue_provreq.manifests.yamlio import locate

_KUEUE_KINDS = (c.WORKLOAD, c.CLUSTER_QUEUE, c.COHORT, c.LOCAL_QUEUE, c.RESOURCE_FLAVOR,
                c.ADMISSION_CHECK, c.PROVISIONING_REQUEST_CONFIG)

#: Served API versions of each kind, storage version first.
API_VERSIONS: dict[str, tuple[str, ...]] = {
    **{kind: (c.KUEUE_V1BETA2, c.KUEUE_V1BETA1) for kind in _KUEUE_KINDS},
    # v1beta1 has the same schema as v1 (no conversion, the server only rewrites apiVersion).
    c.PROVISIONING_REQUEST: (c.AUTOSCALING_V1, c.AUTOSCALING_V1BETA1),
    c.POD_TEMPLATE: (c.CORE_V1,),
    c.JOB: (c.BATCH_V1,),
    c.JOBSET: (c.JOBSET_V1ALPHA2,),
    c.PYTORCH_JOB: (c.KUBEFLOW_V1,),
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
    ns = metadata.get("namespace") if kind not in KINDS or KINDS[kind].NAMESPACED else None
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


#: ``--validate``: what becomes of a field no schema knows (kubectl's field validation levels).
STRICT: Final = "strict"
WARN: Final = "warn"
IGNORE: Final = "ignore"
VALIDATION_LEVELS: Final = (STRICT, WARN, IGNORE)


@attrs.frozen
class Checked:
    """What loading one manifest gave: the object (None when it has errors), its errors and
    warnings, each naming the object, the field and (for YAML) the file and line."""

    obj: KubeObject | None
    """None when there are errors."""
    errors: tuple[ManifestError, ...] = ()
    warnings: tuple[ManifestError, ...] = ()


def check_object(data: Any, *, validation: str = STRICT, semantics: frozenset[str] = frozenset()) -> Checked:
    """Every problem the API server would find in ``data``, a manifest in any served version,
    and the model it stands for, with the CRD defaults applied.

    ``validation`` is kubectl's ``--validate``: ``strict`` refuses unknown fields, ``warn``
    reports them as warnings and drops them (as the server prunes them), ``ignore`` only drops
    them.  Everything else the server checks is an error in every level.
    ``semantics`` are the semantics switches in force: ``kep-993-preemption`` extends the
    schemas with KEP-993's fields (see :mod:`.validation`), refused without it as today's CRDs
    refuse them.
    """
    label = _name_of(data.get("kind"), data.get("metadata")) if isinstance(data, Mapping) else "object"

    def placed(e: ManifestError) -> ManifestError:
        return e.within(obj=label, source=locate(data, e.path))

    if not isinstance(data, Mapping):
        return Checked(None, (ManifestError(f"expected an object, got {describe(data)}"),))
    api_version = data.get("apiVersion")
    try:
        check_limits(data)
        kind = _check_version(data.get("kind"), api_version)
    except ManifestError as e:
        return Checked(None, (placed(e),))
    body = {k: _copy(v) for k, v in data.items() if k not in ("apiVersion", "kind")}
    apply_defaults(kind, body)
    out = Problems()
    _clear_namespace(kind, body, out)
    validate(kind, str(api_version), body, out, kep_993=SEMANTICS_KEP_993_PREEMPTION in semantics)
    errors = list(out.errors)
    warnings = list(out.warnings)
    if validation == STRICT:
        errors += [u.error() for u in out.unknown]
    else:
        if validation == WARN:
            warnings += [u.error() for u in out.unknown]
        out.prune_unknown()
    obj = None
    if not errors:
        try:
            obj = _decode(kind, str(api_version), body)
        except ManifestError as e:
            errors.append(e)
    return Checked(obj, in_file_order(map(placed, errors)), in_file_order(map(placed, warnings)))


def _clear_namespace(kind: str, body: dict[str, Any], out: Problems) -> None:
    """A cluster-scoped object's ``metadata.namespace`` is cleared by the API server, not
    refused (``kubectl apply -n`` of a folder that mixes scopes relies on it): a warning."""
    meta = body.get("metadata")
    if KINDS[kind].NAMESPACED or not isinstance(meta, dict) or not meta.get("namespace"):
        return
    out.warn(f"{kind} is cluster-scoped: the API server ignores its namespace {describe(meta['namespace'])}",
             "metadata.namespace")
    del meta["namespace"]


def in_file_order(errors: Iterable[ManifestError]) -> tuple[ManifestError, ...]:
    """Each problem once (a built-in kind's metadata is checked by two readers), in the order
    of the lines they point at."""
    unique = {(e.source, e.obj, e.path, e.reason): e for e in errors}.values()
    return tuple(sorted(unique, key=lambda e: int(e.source.rpartition(":")[2] or 0)
                        if e.source.rpartition(":")[2].isdigit() else 0))


def _decode(kind: str, api_version: str, body: dict[str, Any]) -> KubeObject:
    if api_version == c.KUEUE_V1BETA1:
        from_v1beta1(kind, body)
    obj = decode(KINDS[kind], body)
    meta = obj.metadata
    if not meta.name and not meta.extra.get("generateName"):
        raise ManifestError("required value", path="metadata.name")
    return obj


def load_object(data: Mapping[str, Any], *, validation: str = STRICT,
                semantics: frozenset[str] = frozenset()) -> KubeObject:
    """A model from a manifest in any served version, with the CRD defaults applied.

    The manifest must be one the API server would accept on create (see
    :func:`check_object`, which reports every problem); this raises :class:`ManifestError`
    for the first, naming the object, the field and, for YAML read by
    :func:`load_yaml_documents`, the file and line.
    """
    checked = check_object(data, validation=validation, semantics=semantics)
    if checked.obj is None:
        raise checked.errors[0]
    return checked.obj


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
