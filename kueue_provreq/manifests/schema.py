"""What the upstream CRD schemas (storage versions) say beyond the models' own types:
required keys, keys written even when empty, and structural defaults.

Facts from ``config/components/crd/bases`` of Kueue and the autoscaler's
ProvisioningRequest CRD (see specs/ and the shared research notes).  The
defaults are applied to the JSON before decoding, as the API server does, so
a dumped object shows them.
"""

from __future__ import annotations

from typing import Any, Final

from kueue_provreq.api import constants as c
from kueue_provreq.api.meta import Condition
from kueue_provreq.api.provisioning import (
    ProvisioningRequest,
    ProvisioningRequestConfig,
    ProvisioningRequestConfigSpec,
    ProvisioningRequestSpec,
)
from kueue_provreq.api.queues import (
    AdmissionCheckSpec,
    AdmissionChecksStrategy,
    FlavorQuotas,
    ParametersReference,
    ResourceGroup,
)
from kueue_provreq.api.workload import AdmissionCheckState, PodSet

#: JSON keys the CRD requires where the model has a default.  A required string
#: or list must also be non-empty (for these, a minLength, minItems or name
#: pattern rules out "" and []).
REQUIRED: Final[dict[type, tuple[str, ...]]] = {
    ProvisioningRequest: ("spec",),
    ProvisioningRequestSpec: ("podSets", "provisioningClassName"),
    ProvisioningRequestConfig: ("spec",),
    ProvisioningRequestConfigSpec: ("provisioningClassName",),
    AdmissionCheckSpec: ("controllerName",),
    ParametersReference: ("apiGroup", "kind", "name"),
    PodSet: ("template",),
    ResourceGroup: ("coveredResources", "flavors"),
    FlavorQuotas: ("resources",),
    AdmissionChecksStrategy: ("admissionChecks",),
}

#: Keys without ``omitempty`` that the schema requires even when empty
#: (``metav1.Condition.message`` and ``AdmissionCheckState.message`` may be "" but must be present).
ALWAYS_WRITTEN: Final[dict[type, tuple[str, ...]]] = {
    Condition: ("message",),
    AdmissionCheckState: ("message",),
}

#: ``default:`` values of the v1beta2 CRDs, parents before children; ``[]`` walks
#: every item of a list.  A default applies where its parent object exists.
DEFAULTS: Final[dict[str, tuple[tuple[str, Any], ...]]] = {
    c.WORKLOAD: (
        ("spec", {}),
        ("spec.active", True),
        ("spec.podSets[].name", "main"),
        ("spec.podSets[].count", 1),
        ("status.admission.podSetAssignments[].name", "main"),
    ),
    c.CLUSTER_QUEUE: (
        ("spec", {}),
        ("spec.queueingStrategy", c.BEST_EFFORT_FIFO),
        ("spec.stopPolicy", "None"),
        ("spec.flavorFungibility", {}),
        ("spec.flavorFungibility.whenCanBorrow", "MayStopSearch"),
        ("spec.flavorFungibility.whenCanPreempt", "TryNextFlavor"),
        ("spec.preemption", {}),
        ("spec.preemption.borrowWithinCohort", {}),
        ("spec.preemption.borrowWithinCohort.policy", "Never"),
        ("spec.preemption.reclaimWithinCohort", "Never"),
        ("spec.preemption.withinClusterQueue", "Never"),
        ("spec.fairSharing.weight", 1),
    ),
    c.COHORT: (
        ("spec.fairSharing.weight", 1),
    ),
    c.LOCAL_QUEUE: (
        ("spec", {}),
        ("spec.stopPolicy", "None"),
        ("spec.fairSharing.weight", 1),
    ),
    c.PROVISIONING_REQUEST_CONFIG: (
        ("spec.retryStrategy", {}),
        ("spec.retryStrategy.backoffLimitCount", c.DEFAULT_BACKOFF_LIMIT_COUNT),
        ("spec.retryStrategy.backoffBaseSeconds", c.DEFAULT_BACKOFF_BASE_SECONDS),
        ("spec.retryStrategy.backoffMaxSeconds", c.DEFAULT_BACKOFF_MAX_SECONDS),
    ),
}

_SPLIT_DEFAULTS = {kind: tuple((tuple(path.replace("[]", ".[]").split(".")), value)
                               for path, value in entries)
                   for kind, entries in DEFAULTS.items()}


def apply_defaults(kind: str, data: dict[str, Any]) -> None:
    """Fill in the CRD defaults of ``kind`` in place (``data`` is a private copy)."""
    for segments, value in _SPLIT_DEFAULTS.get(kind, ()):
        _default(data, segments, value)


def _default(node: Any, segments: tuple[str, ...], value: Any) -> None:
    head, rest = segments[0], segments[1:]
    if head == "[]":
        if isinstance(node, list):
            for item in node:
                _default(item, rest, value)
    elif isinstance(node, dict):
        if rest:
            _default(node.get(head), rest, value)
        elif node.get(head) is None:
            node[head] = dict(value) if isinstance(value, dict) else value
