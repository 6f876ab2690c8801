"""What a real API server rejects when these kinds are created, checked before decoding.

The decoder (:mod:`~kueue_provreq.manifests.codec`) only knows the models' types; the API
server knows more: the CRDs' ``openAPIV3Schema`` (every field, required keys, enums, bounds,
list sizes, patterns), their CEL rules, Kueue's validating webhooks, and core Kubernetes
validation of object metadata, PodTemplates and Jobs.  Checking here keeps a manifest that
``kubectl apply`` would refuse out of the model, so a story the model tells can happen on a
cluster.

The schemas of Kueue's kinds (v1beta1 and v1beta2) and of ProvisioningRequest (v1 and
v1beta1) are transcribed (not copied) from the upstream CRDs of the modelled snapshot, one
declaration per kind with its version differences inline; ``tests/test_upstream_manifests.py``
walks them beside the real CRDs, field by field.  The built-in kinds and every embedded pod
template come from the pinned Kubernetes OpenAPI schemas (:mod:`~kueue_provreq.manifests.kubernetes`).
What is deliberately not checked:

* CEL *transition* rules (``self == oldSelf``, "immutable while quota reserved") on create:
  they need the old object; :func:`update_refusal` checks the ones a scenario's updates
  reach (a LocalQueue's ``spec.clusterQueue``);
* references to other objects (a LocalQueue naming a missing ClusterQueue is accepted by
  the server too);
* webhook rules behind feature gates that are off at the modelled snapshot.

With the ``kep-993-preemption`` semantics switch the schemas grow KEP-993's fields, which
upstream never added: ``AdmissionCheck.spec.preemptionPolicy`` (``Anytime`` or
``AfterCheckPassedOrOnDemand``) and the ``PreemptionRequired`` check state.  Without it they are
refused exactly as today's CRDs refuse them (an unknown field; a value not in the enum).

Validation runs on the body in the version it was written in, after the CRD defaults, as
the API server validates a request; the webhook rules run on the same body.

Input limits protect the library, not the API: a document is at most
:data:`MAX_DOCUMENT_BYTES` (the API server's default request body limit, 3 MiB, counted on
the JSON the document would be) and :data:`MAX_DEPTH` levels deep; both are checked without
recursion, so hostile input is refused before anything walks it recursively.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any, Final

from kueue_provreq.api import constants as c
from kueue_provreq.api.objects import JOB_KINDS
from kueue_provreq.manifests import kubernetes as k8s
from kueue_provreq.manifests import names as n
from kueue_provreq.manifests.codec import describe
from kueue_provreq.manifests.errors import ManifestError
from kueue_provreq.manifests.names import CONDITION_REASON, CONDITION_TYPE, DNS1123_LABEL, DNS1123_SUBDOMAIN, KIND_NAME
from kueue_provreq.manifests.nodes import (
    ANY,
    Arr,
    Bool,
    DateTime,
    Int,
    Node,
    Obj,
    Problems,
    Qty,
    Str,
    join,
    quantity_value,
)

MAX_DOCUMENT_BYTES: Final = 3 * 1024 * 1024
MAX_DEPTH: Final = 100


# --- limits ----------------------------------------------------------------------------------


def check_limits(data: Any) -> None:
    """Refuse documents deeper than :data:`MAX_DEPTH` or larger than :data:`MAX_DOCUMENT_BYTES`,
    naming the field that holds most of the excess.

    Iterative, and it counts a shared (YAML alias) node every time it is reached, as the
    JSON sent to a server would repeat it: a "billion laughs" document stops at the size
    limit after a few million steps at most.  The walk is depth first, so the fields being
    read when the limit is passed are the open ancestors of the current one; the deepest
    ancestor that alone holds half the limit is the field named.
    """
    size = 0
    # (node, depth, index of the parent in `chain` order, key in the parent)
    stack: list[tuple[Any, int, str]] = [(data, 1, "")]
    chain: list[tuple[str, int]] = []  # the open ancestors: (path, size when it started)
    while stack:
        node, depth, path = stack.pop()
        if depth > MAX_DEPTH:
            raise ManifestError(f"nested more than {MAX_DEPTH} levels deep", path=path)
        del chain[depth - 1:]
        chain.append((path, size))
        if isinstance(node, Mapping):
            size += 2 + 4 * len(node)
            for key, value in node.items():
                size += len(key) if isinstance(key, str) else 8
                stack.append((value, depth + 1, join(path, str(key))))
        elif isinstance(node, (list, tuple)):
            size += 2 + len(node)
            stack.extend((item, depth + 1, f"{path}[{i}]") for i, item in enumerate(node))
        elif isinstance(node, str):
            size += len(node) + 2
        else:
            size += 8
        if size > MAX_DOCUMENT_BYTES:
            culprit = next((p for p, start in reversed(chain) if p and size - start >= MAX_DOCUMENT_BYTES // 2),
                           "")
            where = f" ({culprit} alone holds more than {MAX_DOCUMENT_BYTES // (2 * 1024 * 1024)} MiB)" \
                if culprit else ""
            raise ManifestError(f"larger than {MAX_DOCUMENT_BYTES // (1024 * 1024)} MiB{where}", path=culprit)


# --- shared pieces -----------------------------------------------------------------------------

SUBDOMAIN: Final = n.SUBDOMAIN
LABEL: Final = n.LABEL
STRING: Final = Str()
STRING_MAP: Final = Obj(values=STRING)
QUANTITY: Final = Qty()
POD_SET_NAME: Final = LABEL
NAME_253: Final = Str(max_length=253, min_length=1, pattern=DNS1123_SUBDOMAIN, what="a DNS-1123 subdomain")


CONDITION: Final = Obj({
    "type": Str(max_length=316, pattern=CONDITION_TYPE, what="a condition type"),
    "status": Str(enum=(c.TRUE, c.FALSE, c.UNKNOWN)),
    "observedGeneration": Int(minimum=0, bits=64),
    "lastTransitionTime": DateTime(),
    "reason": Str(max_length=1024, min_length=1, pattern=CONDITION_REASON,
                  what="a condition reason (letters, digits, '_', ',' and ':', starting with a letter)"),
    "message": Str(max_length=32768),
}, required=("type", "status", "lastTransitionTime", "reason", "message"))


def conditions(max_items: int | None = None) -> Arr:
    return Arr(CONDITION, max_items=max_items, map_keys=("type",))


#: A toleration in Kueue's CRDs: their CEL rules are those of core validation.
TOLERATION: Final = Obj({"effect": STRING, "key": STRING, "operator": STRING, "value": STRING,
                         "tolerationSeconds": Int(bits=64)}, rules=(k8s.toleration,))

LABEL_SELECTOR: Final = Obj({
    "matchExpressions": Arr(Obj({"key": STRING, "operator": STRING, "values": Arr(STRING)},
                                required=("key", "operator"))),
    "matchLabels": STRING_MAP,
}, rules=(k8s.label_selector,))

_QUANTITY_MAP: Final = Obj(values=QUANTITY)


def _usage(borrowed: bool) -> Arr:
    resource = {"name": STRING, "total": QUANTITY, **({"borrowed": QUANTITY} if borrowed else {})}
    return Arr(Obj({
        "name": SUBDOMAIN,
        "resources": Arr(Obj(resource, required=("name",)), max_items=64, map_keys=("name",)),
    }, required=("name", "resources")), max_items=64, map_keys=("name",))


# --- ProvisioningRequest (autoscaling.x-k8s.io/v1 and v1beta1: the same schema) --------------------

PROVISIONING_REQUEST: Final = Obj({
    "apiVersion": STRING, "kind": STRING, "metadata": ANY,
    "spec": Obj({
        "parameters": Obj(values=Str(max_length=255), max_properties=100),
        "podSets": Arr(Obj({
            "count": Int(minimum=1),
            "podTemplateRef": Obj({"name": SUBDOMAIN}, required=("name",)),
        }, required=("count", "podTemplateRef")), min_items=1, max_items=32),
        "provisioningClassName": SUBDOMAIN,
    }, required=("podSets", "provisioningClassName")),
    "status": Obj({
        "conditions": conditions(),
        "provisioningClassDetails": Obj(values=Str(max_length=32768), max_properties=64),
    }),
}, required=("spec",))


# --- Workload ------------------------------------------------------------------------------------


def _pod_set_rules(ps: Mapping[str, Any], path: str, out: Problems) -> None:
    min_count, count = ps.get("minCount"), ps.get("count")
    if isinstance(min_count, int) and isinstance(count, int) and min_count > count:
        out.error("minCount should be positive and less or equal to count", join(path, "minCount"))


def _workload_spec_rules(spec: Mapping[str, Any], path: str, out: Problems) -> None:
    """CEL: a priority class needs a priority.  Webhook: at most one podSet uses minCount
    (partial admission)."""
    for ref in ("priorityClassRef", "priorityClassName"):
        if spec.get(ref) is not None and spec.get("priority") is None:
            out.error(f"priority should not be nil when {ref} is set", join(path, "priority"))
    using = [i for i, ps in enumerate(spec.get("podSets") or ()) if ps.get("minCount") is not None]
    if len(using) > 1:
        out.error("at most one podSet can use minCount", f"{path}.podSets[{using[1]}].minCount")


def _priority_ref_rules(ref: Mapping[str, Any], path: str, out: Problems) -> None:
    kinds = {"scheduling.k8s.io": "PriorityClass", "kueue.x-k8s.io": "WorkloadPriorityClass"}
    group = ref.get("group")
    if group in kinds and ref.get("kind") != kinds[group]:
        out.error(f"only the {kinds[group]} kind is allowed for the {group} group", join(path, "kind"))


def _true(conds: Any, type_: str) -> bool:
    return isinstance(conds, list) and any(
        isinstance(cd, Mapping) and cd.get("type") == type_ and cd.get("status") == c.TRUE for cd in conds)


def _workload_rules(wl: Mapping[str, Any], path: str, out: Problems) -> None:
    """CEL on the root: with quota reserved, one podSetAssignment per podSet.  Webhook
    (``workload_webhook.go``): a quota reservation has an admission, assignments and
    podSetUpdates name podSets of the spec, usage divides by the count, reclaimable pods
    name podSets and do not exceed their count."""
    spec, status = wl.get("spec") or {}, wl.get("status") or {}
    pod_sets = {ps.get("name"): ps for ps in spec.get("podSets") or ()}
    admission = status.get("admission")
    reserved = _true(status.get("conditions"), c.WORKLOAD_QUOTA_RESERVED)
    if reserved and admission is None:
        out.error("must be set while the QuotaReserved condition is true", "status.admission")
    if admission is not None:
        assignments = admission.get("podSetAssignments") or ()
        if reserved and len(assignments) != len(pod_sets):
            out.error("podSetAssignments must have the same number of podSets as the spec",
                      "status.admission.podSetAssignments")
        for i, psa in enumerate(assignments):
            where = f"status.admission.podSetAssignments[{i}]"
            if psa.get("name") not in pod_sets:
                out.error(f"{describe(psa.get('name'))} is not a podSet of spec.podSets", f"{where}.name")
            count = psa.get("count") or 0
            if reserved and count > 0:
                for res, amount in (psa.get("resourceUsage") or {}).items():
                    if _resource_value(res, amount) % count:
                        out.error(f"is not a multiple of {count}", f"{where}.resourceUsage[{res}]")
    for i, check in enumerate(status.get("admissionChecks") or ()):
        for j, update in enumerate(check.get("podSetUpdates") or ()):
            where = f"status.admissionChecks[{i}].podSetUpdates[{j}]"
            if update.get("name") not in pod_sets:
                out.error(f"{describe(update.get('name'))} is not a podSet of spec.podSets", f"{where}.name")
            n.check_annotations(update.get("annotations") or {}, f"{where}.annotations", out)
            n.check_labels(update.get("nodeSelector") or {}, f"{where}.nodeSelector", out)
            n.check_labels(update.get("labels") or {}, f"{where}.labels", out)
    for i, rp in enumerate(status.get("reclaimablePods") or ()):
        ps = pod_sets.get(rp.get("name"))
        if ps is None:
            out.error(f"{describe(rp.get('name'))} is not a podSet of spec.podSets",
                      f"status.reclaimablePods[{i}].name")
        elif rp.get("count", 0) > ps.get("count", 1):
            out.error(f"should be less or equal to {ps.get('count', 1)}", f"status.reclaimablePods[{i}].count")


def _resource_value(name: str, amount: Any) -> int:
    """``resources.ResourceValue``: milli-units for cpu, whole units for everything else."""
    value = quantity_value(amount)
    return int(value * 1000) if name == "cpu" else int(value)


def _topology_assignment(v1beta1: bool) -> Obj:
    if v1beta1:
        return Obj({
            "domains": Arr(Obj({"count": Int(minimum=1),
                                "values": Arr(STRING, min_items=1, max_items=16)},
                               required=("count", "values"))),
            "levels": Arr(STRING, min_items=1, max_items=16),
        }, required=("domains", "levels"))
    universal_or_individual = Str(max_length=63)
    return Obj({
        "levels": Arr(Str(max_length=317), min_items=1, max_items=16),
        "slices": Arr(Obj({
            "domainCount": Int(minimum=1),
            "podCounts": Obj({"individual": Arr(Int(minimum=1), min_items=1, max_items=100000),
                              "universal": Int(minimum=1)}),
            "valuesPerLevel": Arr(Obj({
                "individual": Obj({"prefix": Str(max_length=63),
                                   "roots": Arr(Str(max_length=63), min_items=1, max_items=100000),
                                   "suffix": Str(max_length=63)}, required=("roots",)),
                "universal": universal_or_individual,
            }), min_items=1, max_items=16),
        }, required=("domainCount", "podCounts", "valuesPerLevel")), max_items=1000),
    }, required=("levels", "slices"))


def _topology_request(v1beta1: bool) -> Obj:
    bounded = not v1beta1
    request: dict[str, Node] = {
        "podIndexLabel": Str(max_length=317 if bounded else None),
        "podSetGroupName": Str(max_length=256 if bounded else None),
        "podSetSliceRequiredTopology": Str(max_length=63 if bounded else None),
        "podSetSliceSize": Int(minimum=1),
        "preferred": Str(max_length=63 if bounded else None),
        "required": Str(max_length=63 if bounded else None),
        "subGroupCount": Int(minimum=0 if bounded else None),
        "subGroupIndexLabel": Str(max_length=317 if bounded else None),
        "unconstrained": Bool(),
    }
    if bounded:
        request["podsetSliceRequiredTopologyConstraints"] = Arr(Obj(
            {"size": Int(minimum=1), "topology": Str(min_length=1, max_length=63)},
            required=("size", "topology")), max_items=3)
    return Obj(request)


@functools.cache
def workload(v1beta1: bool, kep_993: bool = False) -> Obj:
    """``kep_993``: KEP-993's ``PreemptionRequired`` is a check state too (the schema extension
    the ``kep-993-preemption`` switch brings; today's CRD refuses it)."""
    spec: dict[str, Node] = {
        "active": Bool(),
        "maximumExecutionTimeSeconds": Int(minimum=1),
        "podSets": Arr(Obj({
            "count": Int(minimum=0),
            "minCount": Int(minimum=1),
            "name": POD_SET_NAME,
            "template": k8s.schema("io.k8s.api.core.v1.PodTemplateSpec", core=False),
            "topologyRequest": _topology_request(v1beta1),
        }, required=("count", "template") if v1beta1 else ("template",), rules=(_pod_set_rules,)),
            min_items=1, max_items=18, map_keys=("name",)),
        "priority": Int(),
        "queueName": SUBDOMAIN,
    }
    if v1beta1:
        spec["priorityClassName"] = SUBDOMAIN
        spec["priorityClassSource"] = Str(enum=("kueue.x-k8s.io/workloadpriorityclass",
                                                "scheduling.k8s.io/priorityclass", ""))
    else:
        spec["preemptionGates"] = Arr(Obj({"name": Str(max_length=63, min_length=1)}, required=("name",)),
                                      max_items=8, map_keys=("name",))
        spec["priorityClassRef"] = Obj({
            "group": Str(enum=("kueue.x-k8s.io", "scheduling.k8s.io")),
            "kind": Str(enum=("WorkloadPriorityClass", "PriorityClass")),
            "name": NAME_253,
        }, required=("group", "kind", "name"), rules=(_priority_ref_rules,))
    status: dict[str, Node] = {
        "accumulatedPastExexcutionTimeSeconds" if v1beta1 else "accumulatedPastExecutionTimeSeconds": Int(),
        "admission": Obj({
            "clusterQueue": SUBDOMAIN,
            "podSetAssignments": Arr(Obj({
                "count": Int(minimum=0),
                "delayedTopologyRequest": Str() if v1beta1 else Str(enum=("Pending", "Ready"), max_length=7),
                "flavors": Obj(values=SUBDOMAIN),
                "name": POD_SET_NAME,
                "resourceUsage": _QUANTITY_MAP,
                "topologyAssignment": _topology_assignment(v1beta1),
            }, required=("name",) if v1beta1 else ()), max_items=18, map_keys=("name",)),
        }, required=("clusterQueue", "podSetAssignments") if v1beta1 else ()),
        "admissionChecks": Arr(Obj({
            "lastTransitionTime": DateTime(),
            "message": Str(max_length=32768),
            "name": Str(max_length=316, min_length=0 if v1beta1 else 1),
            "podSetUpdates": Arr(Obj({
                "annotations": STRING_MAP, "labels": STRING_MAP, "name": POD_SET_NAME,
                "nodeSelector": STRING_MAP, "tolerations": Arr(TOLERATION, max_items=8),
            }, required=("name",)), max_items=18),
            "requeueAfterSeconds": Int(minimum=0),
            "retryCount": Int(minimum=0),
            "state": Str(enum=(c.CHECK_PENDING, c.CHECK_READY, c.CHECK_RETRY, c.CHECK_REJECTED,
                               *((c.CHECK_PREEMPTION_REQUIRED,) if kep_993 else ()))),
        }, required=("lastTransitionTime", "message", "name", "state")), max_items=8, map_keys=("name",)),
        "clusterName": Str(max_length=None if v1beta1 else 256),
        "conditions": conditions(max_items=None if v1beta1 else 16),
        "nominatedClusterNames": Arr(Str(max_length=None if v1beta1 else 256), max_items=20),
        "reclaimablePods": Arr(Obj({"count": Int(minimum=0), "name": POD_SET_NAME},
                                   required=("count", "name")), max_items=18, map_keys=("name",)),
        "requeueState": Obj({"count": Int(minimum=0), "requeueAt": DateTime()}),
        "resourceRequests": Arr(Obj({"name": POD_SET_NAME, "resources": _QUANTITY_MAP}, required=("name",)),
                                max_items=18, map_keys=("name",)),
        "schedulingStats": Obj({"evictions": Arr(Obj({
            "count": Int(minimum=0), "reason": Str(max_length=316), "underlyingCause": Str(max_length=316),
        }, required=("count", "reason", "underlyingCause")), max_items=None if v1beta1 else 256,
            map_keys=("reason", "underlyingCause"))}),
        "unhealthyNodes": Arr(Obj({"name": Str(max_length=None if v1beta1 else 63)}, required=("name",)),
                              max_items=None if v1beta1 else 8, map_keys=() if v1beta1 else ("name",)),
    }
    if not v1beta1:
        status["preemptionGates"] = Arr(Obj({
            "lastTransitionTime": DateTime(), "name": Str(min_length=1, max_length=63),
            "position": Str(enum=("Closed", "Open")),
        }, required=("lastTransitionTime", "name", "position")), max_items=8, map_keys=("name",))
    return Obj({
        "apiVersion": STRING, "kind": STRING, "metadata": ANY,
        "spec": Obj(spec, required=("podSets",) if v1beta1 else (), rules=(_workload_spec_rules,)),
        "status": Obj(status, rules=(_workload_status_rules,)),
    }, rules=(_workload_rules,))


def _workload_status_rules(status: Mapping[str, Any], path: str, out: Problems) -> None:
    """CEL: a workload dispatched to a cluster is no longer nominated to others."""
    if status.get("clusterName") and status.get("nominatedClusterNames"):
        out.error("clusterName and nominatedClusterNames are mutually exclusive", path)


# --- ClusterQueue, LocalQueue --------------------------------------------------------------------


def _cluster_queue_rules(spec: Mapping[str, Any], path: str, out: Problems) -> None:
    """CEL: borrowingLimit needs a cohort, each flavor lists the group's covered resources.
    Webhook (``clusterqueue_webhook.go``): resource names are label keys, a resource or a
    flavor belongs to one resource group, resources in coveredResources order, lendingLimit
    within nominalQuota, onFlavors among the queue's flavors, at most 256 flavors and covered
    resources, 512 flavor-resource combinations per group, a fair-sharing weight of 0 or >1n."""
    cohort = spec.get("cohortName") or spec.get("cohort")
    groups = spec.get("resourceGroups") or ()
    covered: set[str] = set()
    flavors: set[str] = set()
    for g, group in enumerate(groups):
        where = f"{path}.resourceGroups[{g}]"
        names = group.get("coveredResources") or ()
        for i, name in enumerate(names):
            n.check_qualified_key(name, f"{where}.coveredResources[{i}]", out)
            if name in covered:
                out.error(f"duplicate value {describe(name)}", f"{where}.coveredResources[{i}]")
            covered.add(name)
        combinations = 0
        for f, flavor in enumerate(group.get("flavors") or ()):
            fwhere = f"{where}.flavors[{f}]"
            if flavor.get("name") in flavors:
                out.error(f"duplicate value {describe(flavor.get('name'))}", f"{fwhere}.name")
            flavors.add(flavor.get("name"))
            resources = flavor.get("resources") or ()
            combinations += len(resources)
            if len(resources) != len(names):
                out.error("flavors must have the same number of resources as the coveredResources",
                          f"{fwhere}.resources")
            for r, res in enumerate(resources[:len(names)]):
                rwhere = f"{fwhere}.resources[{r}]"
                if res.get("name") != names[r]:
                    out.error(f"must be {describe(names[r])}, the name in coveredResources[{r}]", f"{rwhere}.name")
                for limit in ("nominalQuota", "borrowingLimit", "lendingLimit"):
                    if res.get(limit) is not None and quantity_value(res[limit]) < 0:
                        out.error("must be greater than or equal to 0", f"{rwhere}.{limit}")
                if res.get("borrowingLimit") is not None and not cohort:
                    out.error("borrowingLimit must be nil when cohort is empty", f"{rwhere}.borrowingLimit")
                lending = res.get("lendingLimit")
                if lending is not None and not cohort:
                    out.error("must be nil when cohort is empty", f"{rwhere}.lendingLimit")
                elif lending is not None and quantity_value(lending) > quantity_value(res["nominalQuota"]):
                    out.error("must be less than or equal to the nominalQuota", f"{rwhere}.lendingLimit")
        if combinations > 512:
            out.error(f"number of flavor-resource combinations in a resourceGroup must be ≤ 512, got "
                      f"{combinations}", where)
    if len(flavors) > 256:
        out.error(f"total number of flavors across all resourceGroups must be ≤ 256, got {len(flavors)}",
                  f"{path}.resourceGroups")
    if len(covered) > 256:
        out.error(f"total number of covered resources across all resourceGroups must be ≤ 256, got "
                  f"{len(covered)}", f"{path}.resourceGroups")
    strategy = spec.get("admissionChecksStrategy") or {}
    for i, check in enumerate(strategy.get("admissionChecks") or ()):
        for j, flavor in enumerate(check.get("onFlavors") or ()):
            if flavor not in flavors:
                supported = ", ".join(repr(f) for f in sorted(flavors)) or "none (the queue has no flavors)"
                out.error(f"unsupported value {describe(flavor)}: supported values: {supported}",
                          f"{path}.admissionChecksStrategy.admissionChecks[{i}].onFlavors[{j}]")
    weight = (spec.get("fairSharing") or {}).get("weight")
    if weight is not None:
        _fair_weight(weight, f"{path}.fairSharing.weight", out)


def _cohort_rules(spec: Mapping[str, Any], path: str, out: Problems) -> None:
    """Webhook (``cohort_webhook.go``, ``validateResourceGroups`` with ``isCohort``): a
    Cohort's borrowing and lending limits need a parent (its lending limit may exceed its own
    nominal quota: it lends what its children lend too); limits are not negative."""
    parent = spec.get("parentName")
    for g, group in enumerate(spec.get("resourceGroups") or ()):
        names = group.get("coveredResources") or ()
        for f, flavor in enumerate(group.get("flavors") or ()):
            for r, res in enumerate((flavor.get("resources") or ())[:len(names)]):
                rwhere = f"{path}.resourceGroups[{g}].flavors[{f}].resources[{r}]"
                if res.get("name") != names[r]:
                    out.error("must match the name in coveredResources", f"{rwhere}.name")
                for limit in ("nominalQuota", "borrowingLimit", "lendingLimit"):
                    if res.get(limit) is None:
                        continue
                    if quantity_value(res[limit]) < 0:
                        out.error("must be greater than or equal to 0", f"{rwhere}.{limit}")
                    if limit != "nominalQuota" and not parent:
                        out.error("must be nil when parent is empty", f"{rwhere}.{limit}")
    weight = (spec.get("fairSharing") or {}).get("weight")
    if weight is not None:
        _fair_weight(weight, f"{path}.fairSharing.weight", out)


def _covered_match(group: Mapping[str, Any], path: str, out: Problems) -> None:
    """CEL: each flavor lists as many resources as the group covers."""
    names = group.get("coveredResources") or ()
    if any(len(f.get("resources") or ()) != len(names) for f in group.get("flavors") or ()):
        out.error("flavors must have the same number of resources as the coveredResources", path)


@functools.cache
def cohort(v1beta1: bool) -> Obj:
    """The Cohort CRD (v1beta1 and v1beta2 have the same fields)."""
    del v1beta1
    spec: dict[str, Node] = {
        "fairSharing": _FAIR_WEIGHT,
        "parentName": Str(max_length=253),
        "resourceGroups": Arr(Obj({
            "coveredResources": Arr(STRING, min_items=1, max_items=64),
            "flavors": Arr(Obj({
                "name": SUBDOMAIN,
                "resources": Arr(Obj({
                    "borrowingLimit": QUANTITY, "lendingLimit": QUANTITY, "name": STRING, "nominalQuota": QUANTITY,
                }, required=("name", "nominalQuota")), min_items=1, max_items=64, map_keys=("name",)),
            }, required=("name", "resources")), min_items=1, max_items=64, map_keys=("name",)),
        }, required=("coveredResources", "flavors"), rules=(_covered_match,)), max_items=16),
    }
    status: dict[str, Node] = {"fairSharing": Obj({"weightedShare": Int(bits=64)}, required=("weightedShare",))}
    return Obj({"apiVersion": STRING, "kind": STRING, "metadata": ANY,
                "spec": Obj(spec, rules=(_cohort_rules,)), "status": Obj(status)})


def _fair_weight(weight: Any, path: str, out: Problems) -> None:
    value = quantity_value(weight)
    if value < 0:
        out.error("must be greater than or equal to 0", path)
    elif 0 < value <= quantity_value("1n"):
        out.error("When not 0, weight must be > 10e-9", path)


def _fungibility_rules(ff: Mapping[str, Any], path: str, out: Problems) -> None:
    if ff.get("preference") is not None and not (
            ff.get("whenCanBorrow") == "TryNextFlavor" and ff.get("whenCanPreempt") == "TryNextFlavor"):
        out.error("preference can only be set when both whenCanBorrow and whenCanPreempt are "
                  "TryNextFlavor", join(path, "preference"))


def _preemption_rules(p: Mapping[str, Any], path: str, out: Problems) -> None:
    borrow = p.get("borrowWithinCohort") or {}
    if p.get("reclaimWithinCohort") == "Never" and borrow.get("policy", "Never") != "Never":
        out.error("reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never",
                  join(path, "borrowWithinCohort.policy"))


_FAIR_WEIGHT: Final = Obj({"weight": QUANTITY})
_STOP_POLICY: Final = Str(enum=("None", "Hold", "HoldAndDrain"))


@functools.cache
def cluster_queue(v1beta1: bool) -> Obj:
    fungibility = ("MayStopSearch", "TryNextFlavor")
    spec: dict[str, Node] = {
        "admissionChecksStrategy": Obj({"admissionChecks": Arr(Obj({
            "name": Str(max_length=316, min_length=0 if v1beta1 else 1),
            "onFlavors": Arr(SUBDOMAIN, max_items=None if v1beta1 else 64, is_set=not v1beta1),
        }, required=("name",)), min_items=0 if v1beta1 else 1, max_items=None if v1beta1 else 64,
            map_keys=() if v1beta1 else ("name",))}, required=() if v1beta1 else ("admissionChecks",)),
        "admissionScope": Obj({"admissionMode": Str() if v1beta1 else Str(
            enum=("UsageBasedAdmissionFairSharing", "NoAdmissionFairSharing"))}, required=("admissionMode",)),
        "fairSharing": _FAIR_WEIGHT,
        "flavorFungibility": Obj({
            "preference": Str(enum=("BorrowingOverPreemption", "PreemptionOverBorrowing")),
            "whenCanBorrow": Str(enum=fungibility + (("Borrow",) if v1beta1 else ())),
            "whenCanPreempt": Str(enum=fungibility + (("Preempt",) if v1beta1 else ())),
        }, rules=(_fungibility_rules,)),
        "namespaceSelector": LABEL_SELECTOR,
        "preemption": Obj({
            "borrowWithinCohort": Obj({"maxPriorityThreshold": Int(),
                                       "policy": Str(enum=("Never", "LowerPriority"))}),
            "reclaimWithinCohort": Str(enum=("Never", "LowerPriority", "Any")),
            "withinClusterQueue": Str(enum=("Never", "LowerPriority", "LowerOrNewerEqualPriority")),
        }, rules=(_preemption_rules,)),
        "queueingStrategy": Str(enum=(c.STRICT_FIFO, c.BEST_EFFORT_FIFO)),
        "resourceGroups": Arr(Obj({
            "coveredResources": Arr(STRING, min_items=1, max_items=64),
            "flavors": Arr(Obj({
                "name": SUBDOMAIN,
                "resources": Arr(Obj({
                    "borrowingLimit": QUANTITY, "lendingLimit": QUANTITY, "name": STRING, "nominalQuota": QUANTITY,
                }, required=("name", "nominalQuota")), min_items=1, max_items=64, map_keys=("name",)),
            }, required=("name", "resources")), min_items=1, max_items=64, map_keys=("name",)),
        }, required=("coveredResources", "flavors")), max_items=16),
        "stopPolicy": _STOP_POLICY,
    }
    status: dict[str, Node] = {
        "admittedWorkloads": Int(),
        "conditions": conditions(max_items=None if v1beta1 else 16),
        "fairSharing": Obj({"weightedShare": Int(bits=64)}, required=("weightedShare",)),
        "flavorsReservation": _usage(borrowed=True),
        "flavorsUsage": _usage(borrowed=True),
        "pendingWorkloads": Int(),
        "reservingWorkloads": Int(),
    }
    if v1beta1:
        spec["admissionChecks"] = Arr(Str(max_length=316))
        spec["cohort"] = SUBDOMAIN
        status["fairSharing"] = Obj({"weightedShare": Int(bits=64), "admissionFairSharingStatus": Obj({
            "consumedResources": _QUANTITY_MAP, "lastUpdate": DateTime(),
        }, required=("consumedResources", "lastUpdate"))}, required=("weightedShare",))
        status["pendingWorkloadsStatus"] = Obj({
            "clusterQueuePendingWorkload": Arr(Obj({"name": STRING, "namespace": STRING},
                                                   required=("name", "namespace"))),
            "lastChangeTime": DateTime(),
        }, required=("lastChangeTime",))
    else:
        spec["cohortName"] = SUBDOMAIN
        spec["concurrentAdmissionPolicy"] = Obj({"migration": Obj({
            "constraints": Obj({"lastAcceptableFlavorName": SUBDOMAIN}),
            "mode": Str(enum=("TryPreferredFlavors", "RetainFirstAdmission"), max_length=253),
        }, required=("mode",))}, required=("migration",))
    return Obj({"apiVersion": STRING, "kind": STRING, "metadata": ANY,
                "spec": Obj(spec, rules=(_cluster_queue_rules,)), "status": Obj(status)})


def _local_queue_rules(spec: Mapping[str, Any], path: str, out: Problems) -> None:
    weight = (spec.get("fairSharing") or {}).get("weight")
    if weight is not None:
        _fair_weight(weight, f"{path}.fairSharing.weight", out)


@functools.cache
def local_queue(v1beta1: bool) -> Obj:
    status: dict[str, Node] = {
        "admittedWorkloads": Int(),
        "conditions": conditions(max_items=None if v1beta1 else 16),
        "fairSharing": Obj({"weightedShare": Int(bits=64), "admissionFairSharingStatus": Obj({
            "consumedResources": _QUANTITY_MAP, "lastUpdate": DateTime(),
        }, required=("consumedResources", "lastUpdate"))}, required=("weightedShare",)),
        "flavorsReservation": _usage(borrowed=False),
        "flavorUsage" if v1beta1 else "flavorsUsage": _usage(borrowed=False),
        "pendingWorkloads": Int(),
        "reservingWorkloads": Int(),
    }
    if v1beta1:
        status["flavors"] = Arr(Obj({
            "name": SUBDOMAIN, "nodeLabels": Obj(values=STRING, max_properties=8),
            "nodeTaints": Arr(_TAINT, max_items=8), "resources": Arr(STRING, max_items=64, is_set=True),
            "topology": Obj({"levels": Arr(STRING, min_items=1, max_items=16), "name": SUBDOMAIN},
                            required=("levels", "name")),
        }, required=("name",)), max_items=64, map_keys=("name",))
    return Obj({"apiVersion": STRING, "kind": STRING, "metadata": ANY,
                "spec": Obj({"clusterQueue": SUBDOMAIN, "fairSharing": _FAIR_WEIGHT, "stopPolicy": _STOP_POLICY},
                            rules=(_local_queue_rules,)),
                "status": Obj(status)})


# --- ResourceFlavor, AdmissionCheck, ProvisioningRequestConfig ----------------------------------


def _flavor_rules(spec: Mapping[str, Any], path: str, out: Problems) -> None:
    """CEL: a topology needs node labels.  Webhook (``resourceflavor_webhook.go``): node
    labels are labels, taints unique by key and effect with label-value values."""
    if spec.get("topologyName") is not None and not spec.get("nodeLabels"):
        out.error("at least one nodeLabel is required when topology is set", join(path, "nodeLabels"))
    n.check_labels(spec.get("nodeLabels") or {}, join(path, "nodeLabels"), out)
    seen: set[tuple[Any, Any]] = set()
    for i, taint in enumerate(spec.get("nodeTaints") or ()):
        where = f"{path}.nodeTaints[{i}]"
        key = (taint.get("key"), taint.get("effect"))
        if key in seen:
            out.error(f"duplicate value {describe(taint.get('key'))}: taints must be unique by key and "
                      "effect pair", where)
        seen.add(key)


def _taint_rules(taint: Mapping[str, Any], path: str, out: Problems) -> None:
    if taint.get("effect") not in n.TAINT_EFFECTS:
        out.error(f"unsupported value {describe(taint.get('effect'))}: supported values: "
                  f"{', '.join(repr(e) for e in n.TAINT_EFFECTS)}", join(path, "effect"))
    n.check_qualified_key(taint.get("key", ""), join(path, "key"), out)
    value = taint.get("value")
    if value and (len(value) > 63 or n.LABEL_VALUE.fullmatch(value) is None):
        out.error(f"{describe(value)} is not a valid label value", join(path, "value"))


_TAINT: Final = Obj({"effect": STRING, "key": STRING, "timeAdded": DateTime(), "value": STRING},
                    required=("effect", "key"), rules=(_taint_rules,))

RESOURCE_FLAVOR: Final = Obj({"apiVersion": STRING, "kind": STRING, "metadata": ANY, "spec": Obj({
    "nodeLabels": Obj(values=STRING, max_properties=8),
    "nodeTaints": Arr(_TAINT, max_items=8),
    "tolerations": Arr(TOLERATION, max_items=8),
    "topologyName": SUBDOMAIN,
}, rules=(_flavor_rules,))})


#: KEP-993's ``AdmissionCheckSpec.preemptionPolicy`` (the ``kep-993-preemption`` switch's
#: schema extension); absent reads as ``Anytime``, the KEP's default, and is not written back.
PREEMPTION_POLICY: Final = Str(enum=(c.PREEMPTION_POLICY_ANYTIME, c.PREEMPTION_POLICY_AFTER_CHECK_PASSED_OR_ON_DEMAND))


@functools.cache
def admission_check(v1beta1: bool, kep_993: bool = False) -> Obj:
    least = 0 if v1beta1 else 1
    spec: dict[str, Node] = {
        "controllerName": Str() if v1beta1 else Str(max_length=253, min_length=1),
        "parameters": Obj({
            "apiGroup": Str(max_length=253, min_length=least, pattern=DNS1123_SUBDOMAIN, what="an API group"),
            "kind": Str(max_length=63, min_length=least, pattern=KIND_NAME, what="a kind name"),
            "name": Str(max_length=63, min_length=least, pattern=DNS1123_LABEL, what="a DNS-1123 label"),
        }, required=("apiGroup", "kind", "name")),
    }
    if v1beta1:
        spec["retryDelayMinutes"] = Int(bits=64)
    if kep_993:
        spec["preemptionPolicy"] = PREEMPTION_POLICY
    return Obj({"apiVersion": STRING, "kind": STRING, "metadata": ANY,
                "spec": Obj(spec, required=("controllerName",)),
                "status": Obj({"conditions": conditions(max_items=None if v1beta1 else 16)})})


def _retry_rules(retry: Mapping[str, Any], path: str, out: Problems) -> None:
    """The CRD has no minimum: Kueue reads a negative count as no retry at all."""
    count = retry.get("backoffLimitCount")
    if isinstance(count, int) and count < 0:
        out.warn(f"{count} acts as 0: a failed request is not retried", join(path, "backoffLimitCount"))


@functools.cache
def provisioning_request_config(v1beta1: bool) -> Obj:
    return Obj({"apiVersion": STRING, "kind": STRING, "metadata": ANY, "spec": Obj({
        "managedResources": Arr(STRING, max_items=100, is_set=True),
        "parameters": Obj(values=Str(max_length=255), max_properties=100),
        "podSetMergePolicy": Str(enum=("IdenticalPodTemplates", "IdenticalWorkloadSchedulingRequirements")),
        "podSetUpdates": Obj({"nodeSelector": Arr(Obj({
            "key": Str(max_length=317, min_length=1, pattern=CONDITION_TYPE, what="a label key"),
            "valueFromProvisioningClassDetail": Str(max_length=32768, min_length=1),
        }, required=("key", "valueFromProvisioningClassDetail")), max_items=8,
            map_keys=() if v1beta1 else ("key",))}),
        "provisioningClassName": Str(max_length=253, min_length=0 if v1beta1 else 1,
                                     pattern=DNS1123_SUBDOMAIN, what="a DNS-1123 subdomain"),
        "retryStrategy": Obj({"backoffBaseSeconds": Int(), "backoffLimitCount": Int(),
                              "backoffMaxSeconds": Int()}, rules=(_retry_rules,)),
    }, required=("provisioningClassName",))})


# --- job kinds of other groups ------------------------------------------------------------------
# No maintained package ships the JobSet or Kubeflow CRDs: the fields the model reads are checked,
# the embedded Job and pod templates against the pinned Kubernetes schemas, and the other fields
# are kept unchecked (these objects are open, not strict).

JOBSET: Final = Obj({"apiVersion": STRING, "kind": STRING, "metadata": ANY, "spec": Obj({
    "replicatedJobs": Arr(Obj({
        "name": Str(min_length=1, max_length=63, pattern=DNS1123_LABEL, what="a DNS-1123 label"),
        "replicas": Int(minimum=0),
        "template": k8s.schema("io.k8s.api.batch.v1.JobTemplateSpec", core=False),
    }, required=("name", "template"), closed=False), map_keys=("name",)),
    "suspend": Bool(),
}, closed=False)}, closed=False)

_REPLICA_SPEC: Final = Obj({
    "replicas": Int(minimum=0),
    "restartPolicy": Str(enum=("Always", "OnFailure", "Never", "ExitCode")),
    "template": k8s.schema("io.k8s.api.core.v1.PodTemplateSpec", core=False),
}, closed=False)

PYTORCH_JOB: Final = Obj({"apiVersion": STRING, "kind": STRING, "metadata": ANY, "spec": Obj({
    "pytorchReplicaSpecs": Obj({"Master": _REPLICA_SPEC, "Worker": _REPLICA_SPEC}, closed=False),
    "runPolicy": Obj({"suspend": Bool()}, closed=False),
}, required=("pytorchReplicaSpecs",), closed=False)}, closed=False)


# --- built-in kinds ----------------------------------------------------------------------------

def _builtin(name: str) -> Node:
    return k8s.schema(name, core=True)


def schema_of(kind: str, api_version: str, kep_993: bool = False) -> Node:
    """The schema of ``kind`` as served in ``api_version``; ``kep_993`` with KEP-993's extension
    (``AdmissionCheck.spec.preemptionPolicy`` and the ``PreemptionRequired`` check state), which
    only the ``kep-993-preemption`` semantics switch brings: upstream's CRDs have neither."""
    beta1 = api_version == c.KUEUE_V1BETA1
    if kind == c.WORKLOAD:
        return workload(beta1, kep_993)
    if kind == c.CLUSTER_QUEUE:
        return cluster_queue(beta1)
    if kind == c.LOCAL_QUEUE:
        return local_queue(beta1)
    if kind == c.COHORT:
        return cohort(beta1)
    if kind == c.RESOURCE_FLAVOR:
        return RESOURCE_FLAVOR
    if kind == c.ADMISSION_CHECK:
        return admission_check(beta1, kep_993)
    if kind == c.PROVISIONING_REQUEST_CONFIG:
        return provisioning_request_config(beta1)
    if kind == c.PROVISIONING_REQUEST:
        return PROVISIONING_REQUEST
    if kind == c.POD_TEMPLATE:
        return _builtin("io.k8s.api.core.v1.PodTemplate")
    if kind == c.JOB:
        return _builtin("io.k8s.api.batch.v1.Job")
    if kind == c.JOBSET:
        return JOBSET
    if kind == c.PYTORCH_JOB:
        return PYTORCH_JOB
    raise KeyError(kind)


# --- metadata ----------------------------------------------------------------------------------


def validate_metadata(kind: str, metadata: Mapping[str, Any], out: Problems) -> None:
    """``ValidateObjectMeta``: the ObjectMeta schema (unknown fields included); names are DNS-1123
    subdomains (a Job's name is also a label value on its pods, so at most 63 characters),
    namespaces DNS-1123 labels, label and annotation keys qualified names, label values ≤ 63,
    annotations ≤ 256 KiB in all."""
    k8s.schema("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", core=True).check(metadata, "metadata", out)
    name, generate = metadata.get("name"), metadata.get("generateName")
    if isinstance(name, str) and name:
        SUBDOMAIN.check(name, "metadata.name", out)
        if kind == c.JOB and len(name) > 63:
            out.error("must be no more than 63 characters (a Job's name is a label value of its pods)",
                      "metadata.name")
    if isinstance(generate, str) and generate:
        # checked beside a name too, as the server does; it appends 5 characters, so a prefix
        # ending in '-' is checked as if they followed (``NameIsDNSSubdomain(name, prefix=true)``)
        masked = generate[:-1] + "a" if generate.endswith("-") else generate
        probe = Problems()
        SUBDOMAIN.check(masked, "metadata.generateName", probe)
        for e in probe.errors:  # said of the prefix as given
            out.error(e.reason.replace(describe(masked), describe(generate)), e.path)
    finalizers = metadata.get("finalizers")
    for i, finalizer in enumerate(finalizers if isinstance(finalizers, list) else ()):
        if isinstance(finalizer, str):
            n.check_qualified_key(finalizer, f"metadata.finalizers[{i}]", out)
    namespace = metadata.get("namespace")
    if isinstance(namespace, str) and namespace:
        LABEL.check(namespace, "metadata.namespace", out)
    annotations = metadata.get("annotations")
    if kind in JOB_KINDS and isinstance(annotations, Mapping):  # the job webhooks check the gates
        validate_admission_gates(annotations.get(c.ANNOTATION_ADMISSION_GATED_BY),
                                 f"metadata.annotations[{c.ANNOTATION_ADMISSION_GATED_BY}]", out)


#: ``validation.IsDomainPrefixedPath``'s path part (``httpPathFmt``).
_HTTP_PATH: Final = re.compile(r"[A-Za-z0-9/\-._~%!$&'()*+,;=:]+")


def validate_admission_gates(value: Any, path: str, out: Problems) -> None:
    """``ValidateAdmissionGatedByAnnotationOnCreate`` (the job webhooks, AdmissionGatedBy on): a
    comma-separated list of distinct, non-empty, domain-prefixed gate names (``acme.io/foo``),
    each at most 63 characters."""
    if not isinstance(value, str) or not value.strip():
        return
    seen: set[str] = set()
    for gate in (g.strip() for g in value.split(",")):
        if not gate:
            out.error(f"{describe(value)}: cannot contain empty gate names", path)
            continue
        if gate in seen:
            out.error(f"{describe(value)}: duplicate gate name: {gate}", path)
            continue
        seen.add(gate)
        host, slash, rest = gate.partition("/")
        if not slash or not host or not rest:
            out.error(f"{describe(gate)}: must be a domain-prefixed path (such as \"acme.io/foo\")", path)
        elif len(host) > 253 or DNS1123_SUBDOMAIN.fullmatch(host) is None:
            out.error(f"{describe(host)}: a DNS-1123 subdomain must consist of lower case alphanumeric "
                      f"characters, '-' or '.'", path)
        elif _HTTP_PATH.fullmatch(rest) is None:
            out.error(f"{describe(rest)}: Invalid path", path)
        if len(gate) > c.ADMISSION_GATE_MAX_LENGTH:
            out.error(f"may not be more than {c.ADMISSION_GATE_MAX_LENGTH} characters", path)


def validate(kind: str, api_version: str, body: Mapping[str, Any], out: Problems, kep_993: bool = False) -> None:
    """Record in ``out`` everything the API server would refuse in ``body``: the defaulted
    object as written (without ``apiVersion`` and ``kind``), in ``api_version``; ``kep_993``:
    against the schemas with KEP-993's extension (:func:`schema_of`)."""
    metadata = body.get("metadata")
    validate_metadata(kind, metadata if isinstance(metadata, Mapping) else {}, out)
    if kind == c.JOB and not isinstance(body.get("spec"), Mapping):
        # batch validation of a Job with no spec: its (empty) pod template has no containers
        out.error("required value", "spec.template.spec.containers")
    mark = len(out.errors)
    schema_of(kind, api_version, kep_993).check(body, "", out)
    if kind == c.JOB and len(out.errors) == mark:
        _job_webhook_rules(body, out)


def _job_webhook_rules(job: Mapping[str, Any], out: Problems) -> None:
    """Kueue's Job webhook on create (``validatePartialAdmissionCreate``): the minimum
    parallelism of partial admission is a whole number between 1 and one less than the pods
    the Job runs at once (``parallelism``, capped by ``completions``)."""
    annotations = (job.get("metadata") or {}).get("annotations") or {}
    text = annotations.get(c.ANNOTATION_JOB_MIN_PARALLELISM)
    if not isinstance(text, str):
        return
    path = f"metadata.annotations[{c.ANNOTATION_JOB_MIN_PARALLELISM}]"
    if _GO_INT.fullmatch(text) is None:
        out.error(f'{describe(text)}: strconv.Atoi: parsing "{text}": invalid syntax', path)
        return
    spec = job.get("spec") or {}
    pods = spec.get("parallelism", 1) if spec.get("parallelism") is not None else 1
    if spec.get("completions") is not None:
        pods = min(pods, spec["completions"])
    if not 0 < int(text) < pods:
        out.error(f"{int(text)}: should be between 0 and {pods - 1}", path)


_GO_INT: Final = re.compile(r"[+-]?[0-9]+")
"""What Go's ``strconv.Atoi`` reads."""


def update_refusal(kind: str, name: str, old: Mapping[str, Any], new: Mapping[str, Any]) -> str | None:
    """The API server's refusal of an update of ``old`` (a stored object, in the storage
    version) into ``new``, by the CRDs' transition rules, or None: a LocalQueue's
    ``spec.clusterQueue`` is immutable (``self == oldSelf``, "field is immutable")."""
    if kind == c.LOCAL_QUEUE:
        before = (old.get("spec") or {}).get("clusterQueue")
        after = (new.get("spec") or {}).get("clusterQueue")
        if before != after:
            return f'{kind}.{c.KUEUE_GROUP} "{name}" is invalid: spec.clusterQueue: Invalid value: "string": ' \
                   "field is immutable"
    return None
