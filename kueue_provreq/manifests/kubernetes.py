"""The built-in Kubernetes kinds, as the API server of the pinned version checks them.

Schemas come from the OpenAPI definitions of Kubernetes :data:`KUBERNETES_VERSION`, as the
``kubernetes-validate`` package ships them (its ``local-strict`` JSON schemas, every object
closed).  That version is the one Kueue's modelled snapshot builds against (``k8s.io/api
v0.36``), so the pod template a Workload embeds has exactly these fields.  The package is
read as data: its definitions are turned into :mod:`~kueue_provreq.manifests.nodes`, on first
use, so that one engine reports every problem with its field path and can downgrade unknown
fields for ``--validate=warn``.

Two readings of the same definitions:

* ``core``: a PodTemplate or a Job, which the API server decodes into its own types and then
  checks with core validation (``k8s.io/kubernetes/pkg/apis/core/validation`` and
  ``.../batch/validation``): the rules below, attached to the definitions they validate;
* ``crd``: the pod template embedded in a Kueue Workload, which only the Workload CRD's
  structural schema checks (list-map keys unique, template metadata reduced to the five
  fields controller-gen embeds) plus Kueue's webhook rules (in ``validation``).

What core validation is transcribed, and what is not, is listed in ``docs/cli.rst``.
"""

from __future__ import annotations

import functools
import importlib.util
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final

import attrs

from kueue_provreq.manifests import names
from kueue_provreq.manifests.codec import describe
from kueue_provreq.manifests.errors import ManifestError
from kueue_provreq.manifests.nodes import (
    ANY,
    INT32_MAX,
    Arr,
    Bool,
    DateTime,
    Int,
    IntOrStr,
    Node,
    Num,
    Obj,
    Problems,
    Qty,
    Ref,
    Rule,
    Str,
    join,
    quantity_value,
)

KUBERNETES_VERSION: Final = "1.36"
_SCHEMAS: Final = "kubernetes-json-schema/v1.36.0-local-strict/_definitions.json"
_PREFIX: Final = "io.k8s.api."
_META: Final = "io.k8s.apimachinery.pkg.apis.meta.v1."


@functools.cache
def definitions() -> Mapping[str, Any]:
    """The OpenAPI definitions of Kubernetes :data:`KUBERNETES_VERSION`, by name.

    The package's data file is found without importing the package, whose validator (and
    jsonschema behind it) would cost a third of a second of start-up for nothing here."""
    spec = importlib.util.find_spec("kubernetes_validate")
    if spec is None or not spec.submodule_search_locations:
        raise ManifestError("the kubernetes-validate package is not installed (pip install kueue-provreq "
                            "installs it): Job and PodTemplate schemas are unavailable")
    data = Path(spec.submodule_search_locations[0], _SCHEMAS).read_bytes()
    defs: Mapping[str, Any] = json.loads(data)["$defs"]
    return defs


@functools.cache
def served_kinds() -> frozenset[tuple[str, str, str]]:
    """``(group, version, kind)`` of every kind Kubernetes :data:`KUBERNETES_VERSION` serves."""
    return frozenset((gvk["group"], gvk["version"], gvk["kind"])
                     for schema in definitions().values()
                     for gvk in schema.get("x-kubernetes-group-version-kind", ()))


def schema(name: str, *, core: bool) -> Node:
    """The node checking definition ``name`` (``io.k8s.api.batch.v1.JobSpec``)."""
    return _named(name, core)


# --- OpenAPI -> nodes ------------------------------------------------------------------------


@functools.cache
def _named(name: str, core: bool) -> Node:
    return Ref(lambda: _build(name, core))


def _build(name: str, core: bool) -> Node:
    if name == "io.k8s.apimachinery.pkg.api.resource.Quantity":
        return Qty()
    if name == "io.k8s.apimachinery.pkg.util.intstr.IntOrString":
        return IntOrStr()
    if name in (_META + "Time", _META + "MicroTime"):
        return DateTime()
    if name == _META + "ObjectMeta" and not core:
        return _EMBEDDED_METADATA
    node = _convert(definitions()[name], core)
    rules = (CORE_RULES if core else CRD_RULES).get(name, ())
    if rules and isinstance(node, Obj):
        node = attrs.evolve(node, rules=rules)
    return node


def _types(schema: Mapping[str, Any]) -> set[str]:
    t = schema.get("type", ())
    return ({t} if isinstance(t, str) else set(t)) - {"null"}


def _convert(s: Mapping[str, Any], core: bool) -> Node:
    if "$ref" in s:
        return _named(s["$ref"].rpartition("/")[2], core)
    if "oneOf" in s:
        kinds = set().union(*(_types(alt) for alt in s["oneOf"]))
        return Qty() if "number" in kinds else IntOrStr()
    types = _types(s)
    if "object" in types:
        extra = s.get("additionalProperties")
        values = _convert(extra, core) if isinstance(extra, Mapping) else None
        props = s.get("properties")
        if not props:
            return Obj(values=values) if values is not None else ANY
        return Obj({k: _convert(v, core) for k, v in props.items()},
                   required=tuple(s.get("required", ())), values=values,
                   closed=not s.get("x-kubernetes-preserve-unknown-fields", False))
    if "array" in types:
        items = s.get("items")
        kind = s.get("x-kubernetes-list-type")
        # Built-in lists are kept unique by core validation, where it wants them unique (env
        # vars may repeat a name); a CRD's structural schema enforces its list types itself.
        return Arr(_convert(items, core) if isinstance(items, Mapping) else ANY,
                   map_keys=tuple(s.get("x-kubernetes-list-map-keys", ())) if kind == "map" and not core else (),
                   is_set=kind == "set" and not core)
    if "string" in types:
        if s.get("format") == "date-time":
            return DateTime()
        return Str(enum=tuple(s.get("enum", ())))
    if "integer" in types:
        return Int(bits=32 if s.get("format") == "int32" else 64)
    if "number" in types:
        return Num()
    if "boolean" in types:
        return Bool()
    return ANY


#: ``metadata`` of a pod template inside a CRD: the fields controller-gen embeds.
_EMBEDDED_METADATA: Final = Obj({
    "annotations": Obj(values=Str()), "finalizers": Arr(Str()), "labels": Obj(values=Str()),
    "name": Str(), "namespace": Str(),
})


# --- core validation -------------------------------------------------------------------------

def _int_range(obj: Mapping[str, Any], key: str, path: str, out: Problems, low: int,
               high: int | None = None) -> None:
    value = obj.get(key)
    if isinstance(value, int) and (value < low or (high is not None and value > high)):
        out.error(f"must be between {low} and {high}, inclusive" if high is not None
                  else f"must be greater than or equal to {low}", join(path, key))


def _enum(obj: Mapping[str, Any], key: str, allowed: tuple[str, ...], path: str, out: Problems) -> None:
    value = obj.get(key)
    if value is not None and value not in allowed:
        out.error(f"unsupported value {describe(value)}: supported values: "
                  f"{', '.join(repr(a) for a in allowed)}", join(path, key))


def _object_meta(meta: Mapping[str, Any], path: str, out: Problems) -> None:
    """``ValidateObjectMeta`` of a template: label and annotation keys and values."""
    names.check_labels(meta.get("labels") or {}, join(path, "labels"), out)
    names.check_annotations(meta.get("annotations") or {}, join(path, "annotations"), out)


def _pod_spec(spec: Mapping[str, Any], path: str, out: Problems) -> None:
    """``ValidatePodSpec``, the parts a pod template's author can get wrong."""
    if not spec.get("containers"):
        out.error("required value", join(path, "containers"))
    seen: set[str] = set()
    for field in ("initContainers", "containers"):
        for i, ctr in enumerate(spec.get(field) or ()):
            name = ctr.get("name")
            if name in seen:
                out.error(f"duplicate value {describe(name)}", f"{path}.{field}[{i}].name")
            seen.add(name)
    volumes: set[str] = set()
    for i, volume in enumerate(spec.get("volumes") or ()):
        names.check_label(volume.get("name"), f"{path}.volumes[{i}].name", out)
        if volume.get("name") in volumes:
            out.error(f"duplicate value {describe(volume.get('name'))}", f"{path}.volumes[{i}].name")
        volumes.add(volume.get("name"))
    _enum(spec, "restartPolicy", ("Always", "OnFailure", "Never"), path, out)
    _enum(spec, "dnsPolicy", ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"), path, out)
    _enum(spec, "preemptionPolicy", ("PreemptLowerPriority", "Never"), path, out)
    _int_range(spec, "activeDeadlineSeconds", path, out, 1, INT32_MAX)
    _int_range(spec, "terminationGracePeriodSeconds", path, out, 0)
    names.check_labels(spec.get("nodeSelector") or {}, join(path, "nodeSelector"), out)
    for field in ("serviceAccountName", "priorityClassName", "schedulerName", "runtimeClassName"):
        if spec.get(field):
            names.check_subdomain(spec[field], join(path, field), out)


def _pod_template(template: Mapping[str, Any], path: str, out: Problems) -> None:
    """``ValidatePodTemplateSpec`` checks the pod spec even when it is absent (a Go struct)."""
    if template.get("spec") is None:
        out.error("required value", join(path, "spec.containers"))


def _pod_template_object(obj: Mapping[str, Any], path: str, out: Problems) -> None:
    if obj.get("template") is None:
        out.error("required value", join(path, "template.spec.containers"))


def _container(ctr: Mapping[str, Any], path: str, out: Problems) -> None:
    """``validateContainers`` (common part): name, pull policy, termination message policy."""
    names.check_label(ctr.get("name"), join(path, "name"), out)
    _enum(ctr, "imagePullPolicy", ("Always", "Never", "IfNotPresent"), path, out)
    _enum(ctr, "terminationMessagePolicy", ("File", "FallbackToLogsOnError"), path, out)
    seen: set[str] = set()
    for i, port in enumerate(ctr.get("ports") or ()):
        name = port.get("name")
        if name and name in seen:
            out.error(f"duplicate value {describe(name)}", f"{path}.ports[{i}].name")
        seen.add(name)


def _container_port(port: Mapping[str, Any], path: str, out: Problems) -> None:
    """``validateContainerPorts``: ports are 1-65535 (a host port 0 means none), protocols
    TCP, UDP or SCTP, names IANA service names."""
    _int_range(port, "containerPort", path, out, 1, 65535)
    if port.get("hostPort"):
        _int_range(port, "hostPort", path, out, 1, 65535)
    _enum(port, "protocol", ("TCP", "UDP", "SCTP"), path, out)
    if port.get("name"):
        names.check_port_name(port["name"], join(path, "name"), out)


def _probe(probe: Mapping[str, Any], path: str, out: Problems) -> None:
    for key in ("initialDelaySeconds", "timeoutSeconds", "periodSeconds", "successThreshold",
                "failureThreshold", "terminationGracePeriodSeconds"):
        _int_range(probe, key, path, out, 0)


STANDARD_CONTAINER_RESOURCES: Final = ("cpu", "memory", "ephemeral-storage")


def is_native_resource(name: str) -> bool:
    """``helper.IsNativeResource``: no domain, or a ``kubernetes.io/`` one."""
    return "/" not in name or "kubernetes.io/" in name


def is_extended_resource(name: str) -> bool:
    """``helper.IsExtendedResourceName`` (``nvidia.com/gpu``): never overcommitted, whole."""
    return not is_native_resource(name) and not name.startswith("requests.")


def _resource_name(name: str, path: str, out: Problems) -> bool:
    """``validateContainerResourceName``."""
    if "/" not in name:
        if name not in STANDARD_CONTAINER_RESOURCES and not name.startswith("hugepages-"):
            out.error("must be a standard resource for containers", path)
            return False
    elif not names.is_qualified_name(name):
        out.error("must be a qualified name (a DNS subdomain prefix and a name)", path)
        return False
    elif not is_native_resource(name) and not is_extended_resource(name):
        out.error("doesn't follow extended resource name standard", path)
        return False
    return True


def _resources(res: Mapping[str, Any], path: str, out: Problems) -> None:
    """``ValidateResourceRequirements``: names, non-negative and (extended resources) whole
    quantities; requests within limits, and equal to them for extended resources."""
    limits, requests = res.get("limits") or {}, res.get("requests") or {}
    for field, amounts in (("limits", limits), ("requests", requests)):
        for name, amount in amounts.items():
            where = f"{path}.{field}[{name}]"
            if not _resource_name(name, where, out):
                continue
            value = quantity_value(amount)
            if value < 0:
                out.error("must be greater than or equal to 0", where)
            elif is_extended_resource(name) and value != value.to_integral_value():
                out.error("must be an integer", where)
    for name, amount in requests.items():
        where = f"{path}.requests[{name}]"
        if name in limits:
            request, limit = quantity_value(amount), quantity_value(limits[name])
            if is_extended_resource(name) and request != limit:
                out.error(f"must be equal to {name} limit of {limits[name]}", where)
            elif request > limit:
                out.error(f"must be less than or equal to {name} limit of {limits[name]}", where)
        elif is_extended_resource(name):
            out.error("Limit must be set for non overcommitable resources", f"{path}.limits[{name}]")


def toleration(tol: Mapping[str, Any], path: str, out: Problems) -> None:
    """``validateTolerations`` (and the identical CEL rules of Kueue's CRDs)."""
    op = tol.get("operator")
    key = tol.get("key")
    if op not in (None, "", "Equal", "Exists"):
        out.error(f"unsupported value {describe(op)}: supported values: 'Equal', 'Exists'",
                  join(path, "operator"))
    elif not key and op != "Exists":
        out.error("operator must be Exists when 'key' is empty, which means 'match all values "
                  "and all keys'", join(path, "operator"))
    elif op == "Exists" and tol.get("value"):
        out.error("a value must be empty when 'operator' is 'Exists'", join(path, "value"))
    effect = tol.get("effect")
    if effect not in (None, "", *names.TAINT_EFFECTS):
        out.error(f"unsupported value {describe(effect)}: supported values: "
                  f"{', '.join(repr(e) for e in names.TAINT_EFFECTS)}", join(path, "effect"))
    elif tol.get("tolerationSeconds") is not None and effect != "NoExecute":
        out.error("effect must be 'NoExecute' when 'tolerationSeconds' is set", join(path, "effect"))
    if key:
        names.check_qualified_key(key, join(path, "key"), out)


def label_selector(sel: Mapping[str, Any], path: str, out: Problems) -> None:
    """``ValidateLabelSelector``: In/NotIn need values, Exists/DoesNotExist forbid them."""
    names.check_labels(sel.get("matchLabels") or {}, join(path, "matchLabels"), out)
    for i, expr in enumerate(sel.get("matchExpressions") or ()):
        where = f"{path}.matchExpressions[{i}]"
        names.check_qualified_key(expr.get("key", ""), f"{where}.key", out)
        op, values = expr.get("operator"), expr.get("values") or ()
        if op in ("In", "NotIn") and not values:
            out.error("must be specified when `operator` is 'In' or 'NotIn'", f"{where}.values")
        elif op in ("Exists", "DoesNotExist") and values:
            out.error("may not be specified when `operator` is 'Exists' or 'DoesNotExist'", f"{where}.values")
        elif op not in ("In", "NotIn", "Exists", "DoesNotExist"):
            out.error(f"not a valid selector operator {describe(op)}", f"{where}.operator")


def _job_spec(spec: Mapping[str, Any], path: str, out: Problems) -> None:
    """``ValidateJobSpec``: counts non-negative, a deadline positive, pods that never restart
    in place, Indexed with completions."""
    for key in ("parallelism", "completions", "backoffLimit", "ttlSecondsAfterFinished",
                "backoffLimitPerIndex", "maxFailedIndexes"):
        _int_range(spec, key, path, out, 0)
    _int_range(spec, "activeDeadlineSeconds", path, out, 1)
    _enum(spec, "completionMode", ("NonIndexed", "Indexed"), path, out)
    _enum(spec, "podReplacementPolicy", ("TerminatingOrFailed", "Failed"), path, out)
    pod = (spec.get("template") or {}).get("spec") or {}
    policy = pod.get("restartPolicy")
    if policy not in ("OnFailure", "Never"):
        out.error("required value: supported values: 'OnFailure', 'Never'" if policy is None else
                  f"unsupported value {describe(policy)}: supported values: 'OnFailure', 'Never'",
                  f"{path}.template.spec.restartPolicy")
    if spec.get("completionMode") == "Indexed" and spec.get("completions") is None:
        out.error("required value: when completion mode is Indexed", join(path, "completions"))


def _taint(taint: Mapping[str, Any], path: str, out: Problems) -> None:
    _enum(taint, "effect", names.TAINT_EFFECTS, path, out)
    names.check_qualified_key(taint.get("key", ""), join(path, "key"), out)


def _on(rule: Callable[[Mapping[str, Any], str, Problems], None]) -> tuple[Rule, ...]:
    return (rule,)


#: Core validation, by the definition it validates.
CORE_RULES: Final[dict[str, tuple[Rule, ...]]] = {
    _META + "ObjectMeta": _on(_object_meta),
    _META + "LabelSelector": _on(label_selector),
    _PREFIX + "core.v1.PodTemplate": _on(_pod_template_object),
    _PREFIX + "core.v1.PodTemplateSpec": _on(_pod_template),
    _PREFIX + "core.v1.PodSpec": _on(_pod_spec),
    _PREFIX + "core.v1.Container": _on(_container),
    _PREFIX + "core.v1.ContainerPort": _on(_container_port),
    _PREFIX + "core.v1.Probe": _on(_probe),
    _PREFIX + "core.v1.ResourceRequirements": _on(_resources),
    _PREFIX + "core.v1.Toleration": _on(toleration),
    _PREFIX + "core.v1.Taint": _on(_taint),
    _PREFIX + "batch.v1.JobSpec": _on(_job_spec),
}

#: What Kueue's webhooks check inside a Workload's embedded pod template.
CRD_RULES: Final[dict[str, tuple[Rule, ...]]] = {}


def _reserved_pods(res: Mapping[str, Any], path: str, out: Problems) -> None:
    """Kueue's workload webhook: ``pods`` is reserved, and quantities are not negative."""
    for field in ("requests", "limits"):
        for name, amount in (res.get(field) or {}).items():
            where = f"{path}.{field}[{name}]"
            if name == "pods":
                out.error("the key is reserved for internal kueue use", where)
            elif quantity_value(amount) < 0:
                out.error("must be greater than or equal to 0", where)


def _crd_tolerations(tol: Mapping[str, Any], path: str, out: Problems) -> None:
    key = tol.get("key")
    if key:
        names.check_qualified_key(key, join(path, "key"), out)


CRD_RULES.update({
    _PREFIX + "core.v1.ResourceRequirements": _on(_reserved_pods),
    _PREFIX + "core.v1.Toleration": _on(_crd_tolerations),
})
