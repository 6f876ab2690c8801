"""What a real API server rejects when these kinds are created, checked before decoding.

The decoder (:mod:`~kueue_provreq.manifests.codec`) only knows the models' types; the API
server knows more: the CRDs' ``openAPIV3Schema`` (required keys, enums, bounds, list sizes,
patterns), their CEL rules, Kueue's validating webhooks, and core Kubernetes validation of
object metadata, PodTemplates and Jobs.  Checking here keeps a manifest that ``kubectl
apply`` would refuse out of the model, so a story the model tells can happen on a cluster.

The facts are transcribed (not copied) from the upstream CRDs of Kueue v1beta2 and
autoscaling.x-k8s.io/v1 (research notes, ``autoscaler-provisioningrequest-api.md`` §1 and
§3), ``pkg/webhooks`` of Kueue and ``k8s.io/kubernetes/pkg/apis/{core,batch}/validation``.
What is deliberately not checked:

* CEL *transition* rules (``self == oldSelf``, "immutable while quota reserved"): they need
  the old object and never fire on create;
* unknown fields: the API server prunes them (``kubectl --validate=strict`` refuses them);
  the library keeps them and writes them back;
* references to other objects (a LocalQueue naming a missing ClusterQueue is accepted by
  the server too);
* a container's ``image`` in pod templates: core validation requires it only in Pods.

Validation runs on the storage-version body after conversion and defaulting, as the API
server validates after defaulting; the v1beta1 and v1beta2 schemas of these kinds differ
only in the fields conversion renames.

Input limits protect the library, not the API: a document is at most
:data:`MAX_DOCUMENT_BYTES` (the API server's default request body limit, 3 MiB, counted
on the JSON the document would be) and :data:`MAX_DEPTH` levels deep; both are checked
without recursion, so hostile input is refused before anything walks it recursively.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any, Final

import attrs

from kueue_provreq.api import constants as c
from kueue_provreq.api.quantity import Quantity, QuantityError
from kueue_provreq.manifests.codec import describe, parse_time
from kueue_provreq.manifests.errors import ManifestError

MAX_DOCUMENT_BYTES: Final = 3 * 1024 * 1024
MAX_DEPTH: Final = 100

INT32_MAX: Final = 2**31 - 1
INT64_MAX: Final = 2**63 - 1

# --- patterns (apimachinery/pkg/util/validation and the CRD schemas) ---------------------------

_DNS1123_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_LABEL: Final = re.compile(_DNS1123_LABEL)
DNS1123_SUBDOMAIN: Final = re.compile(rf"{_DNS1123_LABEL}(\.{_DNS1123_LABEL})*")
_QUALIFIED_NAME = r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
QUALIFIED_NAME: Final = re.compile(_QUALIFIED_NAME)
LABEL_VALUE: Final = re.compile(rf"({_QUALIFIED_NAME})?")
CONDITION_TYPE: Final = re.compile(rf"({_DNS1123_LABEL}(\.{_DNS1123_LABEL})*/)?{_QUALIFIED_NAME}")
CONDITION_REASON: Final = re.compile(r"[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?")
QUANTITY: Final = re.compile(r"(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))"
                             r"(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?")
KIND_NAME: Final = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?", re.IGNORECASE)

TOTAL_ANNOTATION_BYTES: Final = 256 * 1024
TAINT_EFFECTS: Final = ("NoSchedule", "PreferNoSchedule", "NoExecute")


def _fail(reason: str, path: str) -> ManifestError:
    return ManifestError(reason, path=path)


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


# --- limits ----------------------------------------------------------------------------------


def check_limits(data: Any) -> None:
    """Refuse documents deeper than :data:`MAX_DEPTH` or larger than :data:`MAX_DOCUMENT_BYTES`.

    Iterative, and it counts a shared (YAML alias) node every time it is reached, as the
    JSON sent to a server would repeat it: a "billion laughs" document stops at the size
    limit after a few million steps at most.
    """
    size = 0
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise ManifestError(f"nested more than {MAX_DEPTH} levels deep")
        if isinstance(node, Mapping):
            size += 2 + 4 * len(node)
            for key, value in node.items():
                size += len(key) if isinstance(key, str) else 8
                stack.append((value, depth + 1))
        elif isinstance(node, (list, tuple)):
            size += 2 + len(node)
            stack.extend((item, depth + 1) for item in node)
        elif isinstance(node, str):
            size += len(node) + 2
        else:
            size += 8
        if size > MAX_DOCUMENT_BYTES:
            raise ManifestError(f"larger than {MAX_DOCUMENT_BYTES // (1024 * 1024)} MiB")


# --- schema nodes ------------------------------------------------------------------------------

Rule = Callable[[Mapping[str, Any], str], None]
"""A check of one object beyond its fields' own schemas (a CEL rule, a webhook rule);
raises :class:`ManifestError` with a path below the one given."""


class Node:
    """One node of a schema: ``check(value, path)`` raises the first violation."""

    def check(self, value: Any, path: str) -> None:
        raise NotImplementedError


@attrs.frozen
class Str(Node):
    max_length: int | None = None
    min_length: int = 0
    pattern: re.Pattern[str] | None = None
    enum: tuple[str, ...] = ()
    what: str = ""
    """How the pattern is named in messages (``a DNS-1123 subdomain``)."""

    def check(self, value: Any, path: str) -> None:
        if not isinstance(value, str):
            raise _fail(f"expected a string, got {describe(value)}", path)
        if self.enum and value not in self.enum:
            raise _fail(f"unsupported value {describe(value)}: supported values: "
                        f"{', '.join(repr(e) for e in self.enum)}", path)
        if self.max_length is not None and len(value) > self.max_length:
            raise _fail(f"must be no more than {self.max_length} characters", path)
        if len(value) < self.min_length:
            raise _fail("required value" if self.min_length == 1 else
                        f"must be at least {self.min_length} characters", path)
        if self.pattern is not None and value and self.pattern.fullmatch(value) is None:
            raise _fail(f"{describe(value)} is not {self.what or 'of the form ' + self.pattern.pattern}",
                        path)


@attrs.frozen
class Int(Node):
    minimum: int | None = None
    maximum: int = INT32_MAX
    """``format: int32`` (the default) bounds the value as the server's decoder does."""

    def check(self, value: Any, path: str) -> None:
        if not isinstance(value, int) or isinstance(value, bool):
            raise _fail(f"expected an integer, got {describe(value)}", path)
        if self.minimum is not None and value < self.minimum:
            raise _fail(f"must be greater than or equal to {self.minimum}", path)
        if value > self.maximum or value < -self.maximum - 1:
            raise _fail(f"must be between {-self.maximum - 1} and {self.maximum}", path)


@attrs.frozen
class Bool(Node):
    def check(self, value: Any, path: str) -> None:
        if not isinstance(value, bool):
            raise _fail(f"expected a boolean, got {describe(value)}", path)


@attrs.frozen
class DateTime(Node):
    def check(self, value: Any, path: str) -> None:
        if not isinstance(value, str):
            raise _fail(f"expected an RFC 3339 time string, got {describe(value)}", path)
        try:
            parse_time(value)
        except ValueError as e:
            raise _fail(str(e), path) from None


@attrs.frozen
class Qty(Node):
    """``x-kubernetes-int-or-string`` with the quantity pattern; ``non_negative`` is core
    validation of container resources and Kueue's webhook rule for quotas."""

    non_negative: bool = False

    def check(self, value: Any, path: str) -> None:
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            raise _fail(f"expected a quantity (an integer or a string like 500m), got {describe(value)}",
                        path)
        amount = _quantity(value, path)  # the parser's message names what is wrong
        if isinstance(value, str) and QUANTITY.fullmatch(value) is None:
            raise _fail(f"{describe(value)} is not a quantity (like 500m, 1Gi or 2)", path)
        if self.non_negative and amount < 0:
            raise _fail("must be greater than or equal to 0", path)


def _quantity(value: Any, path: str) -> Decimal:
    try:
        return Quantity.parse(value).value
    except QuantityError as e:
        raise _fail(str(e), path) from None


@attrs.frozen
class Open(Node):
    """Any JSON (``x-kubernetes-preserve-unknown-fields`` or parts the model does not check)."""

    def check(self, value: Any, path: str) -> None:
        return None


ANY: Final = Open()


@attrs.frozen
class Obj(Node):
    properties: Mapping[str, Node] = attrs.field(factory=dict)
    required: tuple[str, ...] = ()
    values: Node | None = None
    """The schema of every value of a map (``additionalProperties``)."""
    max_properties: int | None = None
    rules: tuple[Rule, ...] = ()

    def check(self, value: Any, path: str) -> None:
        if not isinstance(value, Mapping):
            raise _fail(f"expected an object, got {describe(value)}", path)
        for key in self.required:
            if value.get(key) is None:
                raise _fail("required value", _join(path, key))
        if self.max_properties is not None and len(value) > self.max_properties:
            raise _fail(f"must have at most {self.max_properties} items", path)
        for key, item in value.items():
            if not isinstance(key, str):
                raise _fail(f"keys must be strings, got {describe(key)}", path)
            if item is None:  # the server prunes nulls before validating
                continue
            node = self.properties.get(key, self.values)
            if node is not None:
                node.check(item, f"{path}[{key}]" if self.values is not None and key not in self.properties
                           else _join(path, key))
        for rule in self.rules:
            rule(value, path)


@attrs.frozen
class Arr(Node):
    items: Node = ANY
    min_items: int = 0
    max_items: int | None = None
    map_keys: tuple[str, ...] = ()
    """``x-kubernetes-list-type: map``: items are unique by these keys."""
    is_set: bool = False
    """``x-kubernetes-list-type: set``: items are unique."""

    def check(self, value: Any, path: str) -> None:
        if not isinstance(value, (list, tuple)):
            raise _fail(f"expected a list, got {describe(value)}", path)
        if not value and self.min_items:
            raise _fail("required value", path)
        if len(value) < self.min_items:
            raise _fail(f"must have at least {self.min_items} item{'s' * (self.min_items > 1)}", path)
        if self.max_items is not None and len(value) > self.max_items:
            raise _fail(f"must have at most {self.max_items} items", path)
        seen: set[Any] = set()
        for i, item in enumerate(value):
            where = f"{path}[{i}]"
            self.items.check(item, where)
            if self.map_keys:
                key: Any = tuple(item.get(k) for k in self.map_keys)
                shown = item.get(self.map_keys[0])
            elif self.is_set:
                key = shown = item if isinstance(item, (str, int, float, bool)) else repr(item)
            else:
                continue
            if key in seen:
                raise _fail(f"duplicate value {describe(shown)}", where)
            seen.add(key)


# --- shared pieces --------------------------------------------------------------------------------

SUBDOMAIN: Final = Str(max_length=253, pattern=DNS1123_SUBDOMAIN, what="a DNS-1123 subdomain "
                       "(lower case alphanumerics, '-' and '.')")
LABEL: Final = Str(max_length=63, pattern=DNS1123_LABEL, what="a DNS-1123 label "
                   "(lower case alphanumerics and '-')")
STRING: Final = Str()
STRING_MAP: Final = Obj(values=STRING)


def qualified_name(key: str, path: str) -> None:
    """A label or annotation key: ``[prefix/]name``, prefix a DNS subdomain, name ≤ 63."""
    prefix, _, name = key.rpartition("/")
    if "/" in key and not prefix:
        raise _fail(f"key {describe(key)}: prefix part must be non-empty", path)
    if prefix and (len(prefix) > 253 or DNS1123_SUBDOMAIN.fullmatch(prefix) is None):
        raise _fail(f"key {describe(key)}: prefix part must be a DNS-1123 subdomain", path)
    if not name or len(name) > 63 or QUALIFIED_NAME.fullmatch(name) is None:
        raise _fail(f"key {describe(key)}: name part must be 1-63 characters, alphanumerics, "
                    "'-', '_' or '.', starting and ending with an alphanumeric", path)


def _labels(labels: Mapping[str, Any], path: str) -> None:
    for key, value in labels.items():
        qualified_name(key, f"{path}[{key}]")
        if len(value) > 63 or LABEL_VALUE.fullmatch(value) is None:
            raise _fail(f"{describe(value)} is not a valid label value (at most 63 characters, "
                        "alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric)",
                        f"{path}[{key}]")


def _annotations(annotations: Mapping[str, Any], path: str) -> None:
    total = 0
    for key, value in annotations.items():
        qualified_name(key, f"{path}[{key}]")
        total += len(key.encode()) + len(value.encode())
    if total > TOTAL_ANNOTATION_BYTES:
        raise _fail(f"may not be more than {TOTAL_ANNOTATION_BYTES} bytes", path)


def _map_rule(field: str, check: Callable[[Mapping[str, Any], str], None]) -> Rule:
    def rule(obj: Mapping[str, Any], path: str) -> None:
        value = obj.get(field)
        if isinstance(value, Mapping):
            check(value, _join(path, field))
    return rule


#: The metadata of a pod template (labels and annotations only, as core validation reads it).
TEMPLATE_METADATA: Final = Obj({"labels": STRING_MAP, "annotations": STRING_MAP},
                               rules=(_map_rule("labels", _labels), _map_rule("annotations", _annotations)))


def _toleration_rules(tol: Mapping[str, Any], path: str) -> None:
    """Core ``validateTolerations`` and the identical CEL rules of Kueue's CRDs."""
    op = tol.get("operator")
    if op not in (None, "", "Equal", "Exists"):
        raise _fail(f"unsupported value {describe(op)}: supported values: 'Equal', 'Exists'",
                    _join(path, "operator"))
    if not tol.get("key") and op != "Exists":
        raise _fail("operator must be Exists when 'key' is empty, which means 'match all values "
                    "and all keys'", _join(path, "operator"))
    if op == "Exists" and tol.get("value"):
        raise _fail("a value must be empty when 'operator' is 'Exists'", _join(path, "value"))
    effect = tol.get("effect")
    if tol.get("tolerationSeconds") is not None and effect != "NoExecute":
        raise _fail("effect must be 'NoExecute' when 'tolerationSeconds' is set", _join(path, "effect"))
    if effect not in (None, "", *TAINT_EFFECTS):
        raise _fail(f"unsupported value {describe(effect)}: supported values: "
                    f"{', '.join(repr(e) for e in TAINT_EFFECTS)}", _join(path, "effect"))
    key = tol.get("key")
    if key:
        qualified_name(key, _join(path, "key"))


TOLERATION: Final = Obj({"key": STRING, "operator": STRING, "value": STRING, "effect": STRING,
                         "tolerationSeconds": Int(maximum=INT64_MAX)}, rules=(_toleration_rules,))

CONDITION: Final = Obj({
    "type": Str(max_length=316, pattern=CONDITION_TYPE, what="a condition type"),
    "status": Str(enum=(c.TRUE, c.FALSE, c.UNKNOWN)),
    "observedGeneration": Int(minimum=0, maximum=INT64_MAX),
    "lastTransitionTime": DateTime(),
    "reason": Str(max_length=1024, min_length=1, pattern=CONDITION_REASON,
                  what="a condition reason (letters, digits, '_', ',' and ':', starting with a letter)"),
    "message": Str(max_length=32768),
}, required=("type", "status", "lastTransitionTime", "reason", "message"))


def conditions(max_items: int | None = None) -> Arr:
    return Arr(CONDITION, max_items=max_items, map_keys=("type",))


# --- pod templates ----------------------------------------------------------------------------


def _resources_rules(resources: Mapping[str, Any], path: str) -> None:
    """Core validation: requests may not exceed limits of the same resource."""
    requests, limits = resources.get("requests"), resources.get("limits")
    if not isinstance(requests, Mapping) or not isinstance(limits, Mapping):
        return
    for name, request in requests.items():
        limit = limits.get(name)
        if limit is not None and _quantity(request, path) > _quantity(limit, path):
            raise _fail(f"must be less than or equal to {name} limit of {limit}",
                        f"{path}.requests[{name}]")


def _container(core: bool) -> Obj:
    quantity = Qty(non_negative=core)
    return Obj({"name": LABEL if core else STRING, "image": STRING,
                "resources": Obj({"requests": Obj(values=quantity), "limits": Obj(values=quantity)},
                                 rules=(_resources_rules,) if core else ())},
               required=("name",))


def _unique_container_names(spec: Mapping[str, Any], path: str) -> None:
    seen: set[str] = set()
    for field in ("initContainers", "containers"):
        for i, ctr in enumerate(spec.get(field) or ()):
            name = ctr.get("name")
            if name in seen:
                raise _fail(f"duplicate value {describe(name)}", f"{path}.{field}[{i}].name")
            seen.add(name)


def pod_template_spec(core: bool) -> Obj:
    """``PodTemplateSpec``: ``core`` adds what core validation checks of a PodTemplate or a
    Job's template beyond the schema Kueue's Workload CRD embeds (names, non-negative
    resources, requests ≤ limits, toleration keys)."""
    container = _container(core)
    spec = Obj({
        "containers": Arr(container, min_items=1 if core else 0, map_keys=("name",)),
        "initContainers": Arr(container, map_keys=("name",)),
        "tolerations": Arr(TOLERATION),
        "nodeSelector": STRING_MAP,
        "restartPolicy": Str(enum=("Always", "OnFailure", "Never")) if core else STRING,
    }, required=("containers",), rules=(_unique_container_names,) if core else ())
    return Obj({"metadata": TEMPLATE_METADATA, "spec": spec})


POD_TEMPLATE_SPEC_CRD: Final = pod_template_spec(core=False)
POD_TEMPLATE_SPEC_CORE: Final = pod_template_spec(core=True)


# --- ProvisioningRequest (autoscaling.x-k8s.io/v1) -----------------------------------------------

PROVISIONING_REQUEST: Final = Obj({
    "spec": Obj({
        "podSets": Arr(Obj({
            "podTemplateRef": Obj({"name": SUBDOMAIN}, required=("name",)),
            "count": Int(minimum=1),
        }, required=("count", "podTemplateRef")), min_items=1, max_items=32),
        "provisioningClassName": SUBDOMAIN,
        "parameters": Obj(values=Str(max_length=255), max_properties=100),
    }, required=("podSets", "provisioningClassName")),
    "status": Obj({
        "conditions": conditions(),
        "provisioningClassDetails": Obj(values=Str(max_length=32768), max_properties=64),
    }),
}, required=("spec",))

POD_TEMPLATE: Final = Obj({"template": POD_TEMPLATE_SPEC_CORE})


# --- batch/v1 Job ------------------------------------------------------------------------------


def _job_rules(spec: Mapping[str, Any], path: str) -> None:
    """``ValidateJobSpec``: a Job's pods may not restart in place, and Indexed needs completions."""
    template = spec.get("template")
    pod = template.get("spec") if isinstance(template, Mapping) else None
    policy = pod.get("restartPolicy") if isinstance(pod, Mapping) else None
    if policy not in ("OnFailure", "Never"):
        raise _fail("required value: supported values: 'OnFailure', 'Never'" if policy is None else
                    f"unsupported value {describe(policy)}: supported values: 'OnFailure', 'Never'",
                    f"{path}.template.spec.restartPolicy")
    if spec.get("completionMode") == "Indexed" and spec.get("completions") is None:
        raise _fail("when completion mode is Indexed", _join(path, "completions"))


JOB: Final = Obj({"spec": Obj({
    "parallelism": Int(minimum=0),
    "completions": Int(minimum=0),
    "backoffLimit": Int(minimum=0),
    "activeDeadlineSeconds": Int(minimum=1, maximum=INT64_MAX),
    "ttlSecondsAfterFinished": Int(minimum=0),
    "completionMode": Str(enum=("NonIndexed", "Indexed")),
    "suspend": Bool(),
    "template": POD_TEMPLATE_SPEC_CORE,
}, required=("template",), rules=(_job_rules,))}, required=("spec",))


# --- Kueue v1beta2 -----------------------------------------------------------------------------

POD_SET_NAME: Final = LABEL


def _pod_set_rules(ps: Mapping[str, Any], path: str) -> None:
    min_count, count = ps.get("minCount"), ps.get("count")
    if isinstance(min_count, int) and isinstance(count, int) and min_count > count:
        raise _fail("minCount should be positive and less or equal to count", _join(path, "minCount"))


def _workload_spec_rules(spec: Mapping[str, Any], path: str) -> None:
    """CEL: a priorityClassRef needs a priority.  Webhook: at most one podSet uses minCount
    (partial admission)."""
    if spec.get("priorityClassRef") is not None and spec.get("priority") is None:
        raise _fail("priority should not be nil when priorityClassRef is set", _join(path, "priority"))
    using = [i for i, ps in enumerate(spec.get("podSets") or ()) if ps.get("minCount") is not None]
    if len(using) > 1:
        raise _fail("at most one podSet can use minCount", f"{path}.podSets[{using[1]}].minCount")


def _priority_ref_rules(ref: Mapping[str, Any], path: str) -> None:
    kinds = {"scheduling.k8s.io": "PriorityClass", "kueue.x-k8s.io": "WorkloadPriorityClass"}
    group = ref.get("group")
    if group in kinds and ref.get("kind") != kinds[group]:
        raise _fail(f"only the {kinds[group]} kind is allowed for the {group} group", _join(path, "kind"))


def _true(conds: Any, type_: str) -> bool:
    return isinstance(conds, list) and any(
        isinstance(cd, Mapping) and cd.get("type") == type_ and cd.get("status") == c.TRUE for cd in conds)


def _workload_rules(wl: Mapping[str, Any], path: str) -> None:
    """CEL on the root: with quota reserved, one podSetAssignment per podSet.  Webhook
    (``workload_webhook.go``): assignments and podSetUpdates name podSets of the spec."""
    spec, status = wl.get("spec") or {}, wl.get("status") or {}
    names = [ps.get("name") for ps in spec.get("podSets") or ()]
    admission = status.get("admission")
    if admission is not None:
        assignments = admission.get("podSetAssignments") or ()
        if _true(status.get("conditions"), c.WORKLOAD_QUOTA_RESERVED) and len(assignments) != len(names):
            raise _fail("podSetAssignments must have the same number of podSets as the spec",
                        "status.admission.podSetAssignments")
        for i, psa in enumerate(assignments):
            if psa.get("name") not in names:
                raise _fail(f"{describe(psa.get('name'))} is not a podSet of spec.podSets",
                            f"status.admission.podSetAssignments[{i}].name")
    for i, check in enumerate(status.get("admissionChecks") or ()):
        for j, update in enumerate(check.get("podSetUpdates") or ()):
            if update.get("name") not in names:
                raise _fail(f"{describe(update.get('name'))} is not a podSet of spec.podSets",
                            f"status.admissionChecks[{i}].podSetUpdates[{j}].name")


WORKLOAD: Final = Obj({
    "spec": Obj({
        "active": Bool(),
        "maximumExecutionTimeSeconds": Int(minimum=1),
        "podSets": Arr(Obj({
            "name": POD_SET_NAME,
            "count": Int(minimum=0),
            "minCount": Int(minimum=1),
            "template": POD_TEMPLATE_SPEC_CRD,
        }, required=("template",), rules=(_pod_set_rules,)), min_items=1, max_items=18, map_keys=("name",)),
        "priority": Int(),
        "priorityClassRef": Obj({
            "group": Str(enum=("kueue.x-k8s.io", "scheduling.k8s.io")),
            "kind": Str(enum=("WorkloadPriorityClass", "PriorityClass")),
            "name": Str(max_length=253, min_length=1, pattern=DNS1123_SUBDOMAIN, what="a DNS-1123 subdomain"),
        }, required=("group", "kind", "name"), rules=(_priority_ref_rules,)),
        "queueName": SUBDOMAIN,
        "preemptionGates": Arr(Obj({"name": Str(max_length=63, min_length=1)}, required=("name",)),
                               max_items=8, map_keys=("name",)),
    }, rules=(_workload_spec_rules,)),
    "status": Obj({
        "conditions": conditions(max_items=16),
        "admission": Obj({
            "clusterQueue": SUBDOMAIN,
            "podSetAssignments": Arr(Obj({
                "name": POD_SET_NAME,
                "count": Int(minimum=0),
                "flavors": Obj(values=SUBDOMAIN),
                "resourceUsage": Obj(values=Qty()),
            }), max_items=18, map_keys=("name",)),
        }),
        "admissionChecks": Arr(Obj({
            "name": Str(max_length=316, min_length=1),
            "state": Str(enum=(c.CHECK_PENDING, c.CHECK_READY, c.CHECK_RETRY, c.CHECK_REJECTED)),
            "message": Str(max_length=32768),
            "lastTransitionTime": DateTime(),
            "retryCount": Int(minimum=0),
            "requeueAfterSeconds": Int(minimum=0),
            "podSetUpdates": Arr(Obj({
                "name": POD_SET_NAME, "labels": STRING_MAP, "annotations": STRING_MAP,
                "nodeSelector": STRING_MAP, "tolerations": Arr(TOLERATION, max_items=8),
            }, required=("name",)), max_items=18),
        }, required=("lastTransitionTime", "message", "name", "state")), max_items=8, map_keys=("name",)),
        "requeueState": Obj({"count": Int(minimum=0), "requeueAt": DateTime()}),
        "reclaimablePods": Arr(Obj({"name": POD_SET_NAME, "count": Int(minimum=0)},
                                   required=("count", "name")), max_items=18, map_keys=("name",)),
        "accumulatedPastExecutionTimeSeconds": Int(),
    }),
}, rules=(_workload_rules,))


def _cluster_queue_rules(spec: Mapping[str, Any], path: str) -> None:
    """CEL: borrowingLimit needs a cohort; webhook (``clusterqueue_webhook.go``): a resource or
    a flavor belongs to one resource group, and each flavor lists the group's covered
    resources in the same order; lendingLimit ≤ nominalQuota."""
    groups = spec.get("resourceGroups") or ()
    covered: set[str] = set()
    flavors: set[str] = set()
    for g, group in enumerate(groups):
        where = f"{path}.resourceGroups[{g}]"
        names = group.get("coveredResources") or ()
        for i, name in enumerate(names):
            if name in covered:
                raise _fail(f"duplicate value {describe(name)}", f"{where}.coveredResources[{i}]")
            covered.add(name)
        for f, flavor in enumerate(group.get("flavors") or ()):
            fwhere = f"{where}.flavors[{f}]"
            if flavor.get("name") in flavors:
                raise _fail(f"duplicate value {describe(flavor.get('name'))}", f"{fwhere}.name")
            flavors.add(flavor.get("name"))
            resources = flavor.get("resources") or ()
            if len(resources) != len(names):
                raise _fail("flavors must have the same number of resources as the coveredResources",
                            f"{fwhere}.resources")
            for r, res in enumerate(resources):
                rwhere = f"{fwhere}.resources[{r}]"
                if res.get("name") != names[r]:
                    raise _fail(f"must be {describe(names[r])}, the name in coveredResources[{r}]",
                                f"{rwhere}.name")
                if res.get("borrowingLimit") is not None and not spec.get("cohortName"):
                    raise _fail("borrowingLimit must be nil when cohort is empty", f"{rwhere}.borrowingLimit")
                lending = res.get("lendingLimit")
                if lending is not None and _quantity(lending, rwhere) > _quantity(res.get("nominalQuota"), rwhere):
                    raise _fail("must be less than or equal to the nominalQuota", f"{rwhere}.lendingLimit")


def _fungibility_rules(ff: Mapping[str, Any], path: str) -> None:
    if ff.get("preference") is not None and not (
            ff.get("whenCanBorrow") == "TryNextFlavor" and ff.get("whenCanPreempt") == "TryNextFlavor"):
        raise _fail("preference can only be set when both whenCanBorrow and whenCanPreempt are "
                    "TryNextFlavor", _join(path, "preference"))


def _preemption_rules(p: Mapping[str, Any], path: str) -> None:
    borrow = p.get("borrowWithinCohort") or {}
    if p.get("reclaimWithinCohort") == "Never" and borrow.get("policy", "Never") != "Never":
        raise _fail("reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never",
                    _join(path, "borrowWithinCohort.policy"))


def _selector_rules(sel: Mapping[str, Any], path: str) -> None:
    """``ValidateLabelSelector``: In/NotIn need values, Exists/DoesNotExist forbid them."""
    _labels(sel.get("matchLabels") or {}, _join(path, "matchLabels"))
    for i, expr in enumerate(sel.get("matchExpressions") or ()):
        where = f"{path}.matchExpressions[{i}]"
        qualified_name(expr["key"], f"{where}.key")
        op, values = expr["operator"], expr.get("values") or ()
        if op in ("In", "NotIn") and not values:
            raise _fail("must be specified when `operator` is 'In' or 'NotIn'", f"{where}.values")
        if op in ("Exists", "DoesNotExist") and values:
            raise _fail("may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                        f"{where}.values")
        if op not in ("In", "NotIn", "Exists", "DoesNotExist"):
            raise _fail(f"not a valid selector operator {describe(op)}", f"{where}.operator")


LABEL_SELECTOR: Final = Obj({
    "matchLabels": STRING_MAP,
    "matchExpressions": Arr(Obj({"key": STRING, "operator": STRING, "values": Arr(STRING)},
                                required=("key", "operator"))),
}, rules=(_selector_rules,))

_FAIR_WEIGHT: Final = Obj({"weight": Qty(non_negative=True)})
_STOP_POLICY: Final = Str(enum=("None", "Hold", "HoldAndDrain"))

CLUSTER_QUEUE: Final = Obj({"spec": Obj({
    "admissionChecksStrategy": Obj({"admissionChecks": Arr(Obj({
        "name": Str(max_length=316, min_length=1),
        "onFlavors": Arr(SUBDOMAIN, max_items=64, is_set=True),
    }, required=("name",)), min_items=1, max_items=64, map_keys=("name",))}, required=("admissionChecks",)),
    "cohortName": SUBDOMAIN,
    "fairSharing": _FAIR_WEIGHT,
    "flavorFungibility": Obj({
        "preference": Str(enum=("BorrowingOverPreemption", "PreemptionOverBorrowing")),
        "whenCanBorrow": Str(enum=("MayStopSearch", "TryNextFlavor")),
        "whenCanPreempt": Str(enum=("MayStopSearch", "TryNextFlavor")),
    }, rules=(_fungibility_rules,)),
    "namespaceSelector": LABEL_SELECTOR,
    "preemption": Obj({
        "borrowWithinCohort": Obj({"policy": Str(enum=("Never", "LowerPriority")),
                                   "maxPriorityThreshold": Int()}),
        "reclaimWithinCohort": Str(enum=("Never", "LowerPriority", "Any")),
        "withinClusterQueue": Str(enum=("Never", "LowerPriority", "LowerOrNewerEqualPriority")),
    }, rules=(_preemption_rules,)),
    "queueingStrategy": Str(enum=(c.STRICT_FIFO, c.BEST_EFFORT_FIFO)),
    "resourceGroups": Arr(Obj({
        "coveredResources": Arr(STRING, min_items=1, max_items=64),
        "flavors": Arr(Obj({
            "name": SUBDOMAIN,
            "resources": Arr(Obj({
                "name": STRING, "nominalQuota": Qty(non_negative=True),
                "borrowingLimit": Qty(non_negative=True), "lendingLimit": Qty(non_negative=True),
            }, required=("name", "nominalQuota")), min_items=1, max_items=64, map_keys=("name",)),
        }, required=("name", "resources")), min_items=1, max_items=64, map_keys=("name",)),
    }, required=("coveredResources", "flavors")), max_items=16),
    "stopPolicy": _STOP_POLICY,
}, rules=(_cluster_queue_rules,))})

LOCAL_QUEUE: Final = Obj({"spec": Obj({
    "clusterQueue": SUBDOMAIN, "fairSharing": _FAIR_WEIGHT, "stopPolicy": _STOP_POLICY})})


def _flavor_rules(spec: Mapping[str, Any], path: str) -> None:
    if spec.get("topologyName") is not None and not spec.get("nodeLabels"):
        raise _fail("at least one nodeLabel is required when topology is set", _join(path, "nodeLabels"))


def _taint_rules(taint: Mapping[str, Any], path: str) -> None:
    if taint.get("effect") not in TAINT_EFFECTS:
        raise _fail(f"unsupported value {describe(taint.get('effect'))}: supported values: "
                    f"{', '.join(repr(e) for e in TAINT_EFFECTS)}", _join(path, "effect"))
    qualified_name(taint["key"], _join(path, "key"))


RESOURCE_FLAVOR: Final = Obj({"spec": Obj({
    "nodeLabels": Obj(values=STRING, max_properties=8, rules=(lambda m, p: _labels(m, p),)),
    "nodeTaints": Arr(Obj({"key": STRING, "value": STRING, "effect": STRING, "timeAdded": DateTime()},
                          required=("effect", "key"), rules=(_taint_rules,)), max_items=8),
    "tolerations": Arr(TOLERATION, max_items=8),
    "topologyName": SUBDOMAIN,
}, rules=(_flavor_rules,))})

ADMISSION_CHECK: Final = Obj({"spec": Obj({
    "controllerName": Str(max_length=253, min_length=1),
    "parameters": Obj({
        "apiGroup": Str(max_length=253, min_length=1, pattern=DNS1123_SUBDOMAIN, what="an API group"),
        "kind": Str(max_length=63, min_length=1, pattern=KIND_NAME, what="a kind name"),
        "name": Str(max_length=63, min_length=1, pattern=DNS1123_LABEL, what="a DNS-1123 label"),
    }, required=("apiGroup", "kind", "name")),
}, required=("controllerName",)), "status": Obj({"conditions": conditions(max_items=16)})},
    required=("spec",))

PROVISIONING_REQUEST_CONFIG: Final = Obj({"spec": Obj({
    "provisioningClassName": Str(max_length=253, min_length=1, pattern=DNS1123_SUBDOMAIN,
                                 what="a DNS-1123 subdomain"),
    "parameters": Obj(values=Str(max_length=255), max_properties=100),
    "managedResources": Arr(STRING, max_items=100, is_set=True),
    "retryStrategy": Obj({"backoffLimitCount": Int(), "backoffBaseSeconds": Int(),
                          "backoffMaxSeconds": Int()}),
    "podSetMergePolicy": Str(enum=("IdenticalPodTemplates", "IdenticalWorkloadSchedulingRequirements")),
    "podSetUpdates": Obj({"nodeSelector": Arr(Obj({
        "key": Str(max_length=317, min_length=1, pattern=CONDITION_TYPE, what="a label key"),
        "valueFromProvisioningClassDetail": Str(max_length=32768, min_length=1),
    }, required=("key", "valueFromProvisioningClassDetail")), max_items=8, map_keys=("key",))}),
}, required=("provisioningClassName",))}, required=("spec",))

#: The schema of each kind's body (everything but apiVersion, kind and metadata).
SCHEMAS: Final[dict[str, Obj]] = {
    c.PROVISIONING_REQUEST: PROVISIONING_REQUEST,
    c.POD_TEMPLATE: POD_TEMPLATE,
    c.JOB: JOB,
    c.WORKLOAD: WORKLOAD,
    c.CLUSTER_QUEUE: CLUSTER_QUEUE,
    c.LOCAL_QUEUE: LOCAL_QUEUE,
    c.RESOURCE_FLAVOR: RESOURCE_FLAVOR,
    c.ADMISSION_CHECK: ADMISSION_CHECK,
    c.PROVISIONING_REQUEST_CONFIG: PROVISIONING_REQUEST_CONFIG,
}


# --- metadata ----------------------------------------------------------------------------------

_METADATA: Final = Obj({"name": STRING, "generateName": STRING, "namespace": STRING,
                        "labels": STRING_MAP, "annotations": STRING_MAP})


def validate_metadata(kind: str, metadata: Any) -> None:
    """``ValidateObjectMeta``: names are DNS-1123 subdomains (a Job's name is also a label value
    on its pods, so at most 63 characters), namespaces DNS-1123 labels, label and annotation
    keys qualified names, label values ≤ 63, annotations ≤ 256 KiB in all."""
    _METADATA.check(metadata, "metadata")
    name, generate = metadata.get("name"), metadata.get("generateName")
    if name:
        SUBDOMAIN.check(name, "metadata.name")
        if kind == c.JOB and len(name) > 63:
            raise _fail("must be no more than 63 characters (a Job's name is a label value of its pods)",
                        "metadata.name")
    elif generate:
        # the server appends 5 characters; the prefix must make a valid name with them
        SUBDOMAIN.check(generate[:-1] + "a" if generate.endswith("-") else generate, "metadata.generateName")
    namespace = metadata.get("namespace")
    if namespace:
        LABEL.check(namespace, "metadata.namespace")
    _labels(metadata.get("labels") or {}, "metadata.labels")
    _annotations(metadata.get("annotations") or {}, "metadata.annotations")


def validate(kind: str, body: Mapping[str, Any]) -> None:
    """Raise :class:`ManifestError` for the first thing the API server would refuse in
    ``body``, the defaulted storage-version object without ``apiVersion`` and ``kind``."""
    validate_metadata(kind, body.get("metadata") if body.get("metadata") is not None else {})
    SCHEMAS[kind].check(body, "")

