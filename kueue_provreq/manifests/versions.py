"""Kueue ``v1beta1`` <-> ``v1beta2`` conversion, on plain JSON.

The models are the storage version (v1beta2); a deprecated v1beta1 manifest
is converted to it before decoding, and a dump in v1beta1 is converted back
after encoding.  The rules follow upstream's ``apis/kueue/v1beta1/*_conversion.go``
for the fields that differ (research notes, Part E).  Both functions change
``data`` in place: callers pass a private copy.
"""

from __future__ import annotations

from typing import Any

from kueue_provreq.api import constants as c
from kueue_provreq.manifests.codec import describe
from kueue_provreq.manifests.errors import ManifestError

#: v1beta1 ``spec.priorityClassSource`` <-> v1beta2 ``spec.priorityClassRef{group, kind}``.
PRIORITY_SOURCES: dict[str, tuple[str, str]] = {
    "kueue.x-k8s.io/workloadpriorityclass": ("kueue.x-k8s.io", "WorkloadPriorityClass"),
    "scheduling.k8s.io/priorityclass": ("scheduling.k8s.io", "PriorityClass"),
}
_SOURCE_OF_GROUP = {group: source for source, (group, _) in PRIORITY_SOURCES.items()}

_TYPO = "accumulatedPastExexcutionTimeSeconds"
_FIXED = "accumulatedPastExecutionTimeSeconds"

#: v1beta1 flavorFungibility values that v1beta2 folds into ``MayStopSearch``.
_FUNGIBILITY = {"whenCanBorrow": "Borrow", "whenCanPreempt": "Preempt"}


def _section(data: dict[str, Any], key: str) -> dict[str, Any] | None:
    value = data.get(key)
    return value if isinstance(value, dict) else None


def _rename(obj: dict[str, Any] | None, old: str, new: str) -> None:
    if obj is not None and old in obj:
        obj[new] = obj.pop(old)


def from_v1beta1(kind: str, data: dict[str, Any]) -> None:
    """Turn a v1beta1 object body (without apiVersion/kind) into v1beta2."""
    spec, status = _section(data, "spec"), _section(data, "status")
    if kind == c.WORKLOAD:
        _rename(status, _TYPO, _FIXED)
        if spec is None:
            return
        name = spec.pop("priorityClassName", None)
        source = spec.pop("priorityClassSource", None)
        if name:
            if source not in PRIORITY_SOURCES:
                raise ManifestError(f"expected one of {', '.join(PRIORITY_SOURCES)} with "
                                    f"priorityClassName, got {describe(source)}",
                                    path="spec.priorityClassSource")
            group, ref_kind = PRIORITY_SOURCES[source]
            spec["priorityClassRef"] = {"group": group, "kind": ref_kind, "name": name}
    elif kind == c.CLUSTER_QUEUE:
        if status is not None:
            status.pop("pendingWorkloadsStatus", None)
        if spec is None:
            return
        _rename(spec, "cohort", "cohortName")
        checks = spec.pop("admissionChecks", None)
        if checks is not None:
            if spec.get("admissionChecksStrategy") is not None:
                raise ManifestError("may not be set together with spec.admissionChecksStrategy",
                                    path="spec.admissionChecks")
            if not isinstance(checks, list) or not all(isinstance(n, str) for n in checks):
                raise ManifestError(f"expected a list of check names, got {describe(checks)}",
                                    path="spec.admissionChecks")
            spec["admissionChecksStrategy"] = {"admissionChecks": [{"name": n} for n in checks]}
        fungibility = _section(spec, "flavorFungibility")
        for key, old in _FUNGIBILITY.items():
            if fungibility is not None and fungibility.get(key) == old:
                fungibility[key] = "MayStopSearch"
    elif kind == c.ADMISSION_CHECK:
        if spec is not None:
            spec.pop("retryDelayMinutes", None)
    elif kind == c.LOCAL_QUEUE:
        _rename(status, "flavorUsage", "flavorsUsage")
        if status is not None:
            status.pop("flavors", None)


def to_v1beta1(kind: str, data: dict[str, Any]) -> None:
    """Turn an encoded v1beta2 object body into v1beta1 (fields only v1beta2 has stay)."""
    spec, status = _section(data, "spec"), _section(data, "status")
    if kind == c.WORKLOAD:
        _rename(status, _FIXED, _TYPO)
        ref = spec.pop("priorityClassRef", None) if spec is not None else None
        if spec is not None and isinstance(ref, dict):
            source = _SOURCE_OF_GROUP.get(ref.get("group", ""))
            if source is None:
                raise ManifestError(f"group {describe(ref.get('group'))} has no v1beta1 "
                                    f"priorityClassSource", path="spec.priorityClassRef.group")
            spec["priorityClassName"] = ref.get("name", "")
            spec["priorityClassSource"] = source
    elif kind == c.CLUSTER_QUEUE:
        _rename(spec, "cohortName", "cohort")
    elif kind == c.LOCAL_QUEUE:
        _rename(status, "flavorsUsage", "flavorUsage")
