"""Kueue's manager ``Configuration`` (config.kueue.x-k8s.io/v1beta2), the parts that steer admission.

Defaults are v1beta2's: ``waitForPodsReady`` is present (enabled) with a 30 min
timeout, ``blockAdmission`` false, ``recoveryTimeout`` equal to the timeout,
and the requeuing strategy Eviction / no limit / 60 s / 3600 s; ``manageJobsWithoutQueueName``
is off.  One default is the model's own: every job integration it models is enabled
(``integrations.frameworks``), where Kueue's code defaults to ``batch/job`` alone and its release
manifests enable ``jobset.x-k8s.io/jobset`` but not ``kubeflow.org/pytorchjob``; a Kueue
Configuration file read by :func:`~kueue_provreq.manifests.load_configuration_file` gets Kueue's
own default.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar, final

from kueue_provreq.api import constants as c
from kueue_provreq.api import meta
from kueue_provreq.api.frozen import EMPTY, FrozenMap
from kueue_provreq.api.meta import Duration, Json
from kueue_provreq.api.model import Field, Model
from kueue_provreq.errors import KueueProvreqError

#: Feature gates the library models, with upstream's defaults at the modelled snapshot.
DEFAULT_FEATURE_GATES: FrozenMap[str, bool] = FrozenMap({
    c.GATE_KEEP_QUOTA_FOR_PROVREQ_RETRY: False,
    c.GATE_CLEANUP_ON_EVICTION: True,
    c.GATE_UNADMITTED_OBSERVABILITY: True,
    c.GATE_ADMISSION_GATED_BY: True,
    c.GATE_PARTIAL_ADMISSION: True,
    c.GATE_SCHEDULING_EQUIVALENCE_HASHING: True,
    c.GATE_TOPOLOGY_AWARE_SCHEDULING: True,
})

#: The job integrations the model has (``integrations.frameworks`` names).
MODELLED_FRAMEWORKS: tuple[str, ...] = (c.FRAMEWORK_JOB, c.FRAMEWORK_JOBSET, c.FRAMEWORK_PYTORCH_JOB)


@final
class RequeuingStrategy(Model):
    __slots__ = ("timestamp", "backoff_limit_count", "backoff_base_seconds", "backoff_max_seconds")

    FIELDS: ClassVar[tuple[Field, ...]] = (
        Field("timestamp", str, c.TIMESTAMP_EVICTION), Field("backoff_limit_count", int | None, None),
        Field("backoff_base_seconds", int, 60), Field("backoff_max_seconds", int, 3600))

    def __init__(self, timestamp: str = c.TIMESTAMP_EVICTION, backoff_limit_count: int | None = None,
                 backoff_base_seconds: int = 60, backoff_max_seconds: int = 3600) -> None:
        self.timestamp = timestamp
        self.backoff_limit_count = backoff_limit_count
        self.backoff_base_seconds = backoff_base_seconds
        self.backoff_max_seconds = backoff_max_seconds

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RequeuingStrategy):
            return NotImplemented
        return (self.timestamp == other.timestamp and self.backoff_limit_count == other.backoff_limit_count and
                self.backoff_base_seconds == other.backoff_base_seconds and
                self.backoff_max_seconds == other.backoff_max_seconds)

    def __hash__(self) -> int:
        return hash((self.timestamp, self.backoff_limit_count, self.backoff_base_seconds, self.backoff_max_seconds))


_NO_REQUEUING_STRATEGY = RequeuingStrategy()
"""The default of the RequeuingStrategy fields (one object, as attrs kept its defaults)."""
_HALF_AN_HOUR = Duration(1800.0)
"""``waitForPodsReady.timeout``'s default."""


@final
class WaitForPodsReady(Model):
    __slots__ = ("timeout", "block_admission", "recovery_timeout", "requeuing_strategy", "extra")

    FIELDS: ClassVar[tuple[Field, ...]] = (
        Field("timeout", Duration, _HALF_AN_HOUR), Field("block_admission", bool, False),
        Field("recovery_timeout", Duration | None, None),
        Field("requeuing_strategy", RequeuingStrategy, _NO_REQUEUING_STRATEGY),
        Field("extra", FrozenMap[str, Json], EMPTY))

    # meta.Duration, not Duration: the API reference reads these annotations as written, and a
    # bare ``Duration`` would name the manifests' Duration node too
    def __init__(self, timeout: meta.Duration = _HALF_AN_HOUR, block_admission: bool = False,
                 recovery_timeout: meta.Duration | None = None,
                 requeuing_strategy: RequeuingStrategy = _NO_REQUEUING_STRATEGY,
                 extra: FrozenMap[str, Json] = EMPTY) -> None:
        self.timeout = timeout
        self.block_admission = block_admission
        self.recovery_timeout = recovery_timeout
        self.requeuing_strategy = requeuing_strategy
        self.extra = extra

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, WaitForPodsReady):
            return NotImplemented
        return (self.timeout == other.timeout and self.block_admission == other.block_admission and
                self.recovery_timeout == other.recovery_timeout and
                self.requeuing_strategy == other.requeuing_strategy and self.extra == other.extra)

    def __hash__(self) -> int:
        return hash((self.timeout, self.block_admission, self.recovery_timeout, self.requeuing_strategy, self.extra))

    @property
    def effective_recovery_timeout(self) -> float | None:
        """``recoveryTimeout`` defaults to ``timeout``; ``0s`` disables it."""
        if self.recovery_timeout is None:
            return self.timeout
        return self.recovery_timeout or None


# --- semantics switches ---------------------------------------------------------------
# Not Kueue fields: which behaviour the model follows where upstream changed over time or a
# KEP describes what upstream never built.  The default (no switch) is upstream main at the
# modelled snapshot plus #14309; each switch names one departure, and they combine.

SEMANTICS_PRE_KEP_3258 = "pre-kep-3258"
"""Kueue v0.9 - v0.14: one shared ``requeueState`` for admission check retries, and eviction at
first sight of ``Retry`` (before KEP-3258's per-check ``retryCount`` and ``requeueAfterSeconds``)."""
SEMANTICS_PRE_14309 = "pre-14309"
"""Upstream main before kubernetes-sigs/kueue#14309 (the modelled snapshot itself): a
``Rejected`` check that arrives while the workload is already evicted is ignored, and
deactivating an evicted workload keeps its checks and its ``DeactivationTarget``."""
SEMANTICS_KEP_993_PREEMPTION = "kep-993-preemption"
"""KEP-993's ``preemptionPolicy`` and the ``PreemptionRequired`` check state, which upstream
never implemented: opt-in, with the schema extension they need."""

SEMANTICS: FrozenMap[str, str] = FrozenMap({
    SEMANTICS_PRE_KEP_3258: "admission check retries as in Kueue v0.9 - v0.14 (before KEP-3258)",
    SEMANTICS_PRE_14309: "upstream main before #14309: a Rejected check on an evicted workload is ignored",
    SEMANTICS_KEP_993_PREEMPTION: "KEP-993 preemptionPolicy and PreemptionRequired (never implemented upstream)",
})
"""Every semantics switch, with one line saying what it selects."""

SEMANTICS_CURRENT = "current"
"""Accepted where a switch list is read, for no switch at all: the default semantics."""


_DEFAULT_PODS_READY = WaitForPodsReady()


_NO_SEMANTICS: frozenset[str] = frozenset()


@final
class Configuration(Model):
    """Kueue's configuration, with the switches and gates every reconcile asks derived when it is
    built (plain slots: see :class:`~kueue_provreq.api.workload.WorkloadStatus`)."""

    __slots__ = ("wait_for_pods_ready", "feature_gates", "extra", "semantics", "manage_jobs_without_queue_name",
                 "frameworks", "_hash", "pre_kep_3258", "pre_14309", "kep_993_preemption", "_gates")

    FIELDS: ClassVar[tuple[Field, ...]] = (
        Field("wait_for_pods_ready", WaitForPodsReady | None, _DEFAULT_PODS_READY),
        Field("feature_gates", FrozenMap[str, bool], DEFAULT_FEATURE_GATES),
        Field("extra", FrozenMap[str, Json], EMPTY),
        Field("semantics", frozenset[str], _NO_SEMANTICS), Field("manage_jobs_without_queue_name", bool, False),
        Field("frameworks", tuple[str, ...], MODELLED_FRAMEWORKS))

    def __init__(self, wait_for_pods_ready: WaitForPodsReady | None = _DEFAULT_PODS_READY,
                 feature_gates: FrozenMap[str, bool] = DEFAULT_FEATURE_GATES, extra: FrozenMap[str, Json] = EMPTY,
                 semantics: frozenset[str] = _NO_SEMANTICS, manage_jobs_without_queue_name: bool = False,
                 frameworks: tuple[str, ...] = MODELLED_FRAMEWORKS) -> None:
        self.wait_for_pods_ready = wait_for_pods_ready
        self.feature_gates = feature_gates
        self.extra = extra
        self.semantics = semantics
        """Not a Kueue field: the semantics switches (:data:`SEMANTICS`) the model follows."""
        self.manage_jobs_without_queue_name = manage_jobs_without_queue_name
        """Whether Kueue manages jobs without the ``kueue.x-k8s.io/queue-name`` label too."""
        self.frameworks = frameworks
        """``integrations.frameworks``: the job integrations enabled."""
        self._hash = -1
        self.pre_kep_3258 = SEMANTICS_PRE_KEP_3258 in semantics
        self.pre_14309 = SEMANTICS_PRE_14309 in semantics
        self.kep_993_preemption = SEMANTICS_KEP_993_PREEMPTION in semantics
        self._gates: dict[str, bool] = {**DEFAULT_FEATURE_GATES, **feature_gates}
        """Every modelled gate's value, defaults filled in: every reconcile asks some."""

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Configuration):
            return NotImplemented
        return (self.wait_for_pods_ready == other.wait_for_pods_ready and self.feature_gates == other.feature_gates and
                self.extra == other.extra and self.semantics == other.semantics and
                self.manage_jobs_without_queue_name == other.manage_jobs_without_queue_name and
                self.frameworks == other.frameworks)

    def __hash__(self) -> int:
        h = self._hash
        if h == -1:
            h = self._hash = hash((self.wait_for_pods_ready, self.feature_gates, self.extra, self.semantics,
                                   self.manage_jobs_without_queue_name, self.frameworks))
        return h

    def gate(self, name: str) -> bool:
        return self._gates.get(name, False)

    @property
    def requeuing_timestamp(self) -> str:
        w = self.wait_for_pods_ready
        return w.requeuing_strategy.timestamp if w else c.TIMESTAMP_EVICTION


class UnknownSemantics(KueueProvreqError, ValueError):
    """Switch names :func:`parse_semantics` cannot read; the message names them and the known ones."""


def parse_semantics(names: str | Iterable[str]) -> frozenset[str]:
    """Switch names, as a comma-separated string or a list, into a set; ``current`` (the
    default) stands for none.  Raises :class:`UnknownSemantics` naming an unknown switch.

    >>> sorted(parse_semantics("pre-kep-3258,pre-14309"))
    ['pre-14309', 'pre-kep-3258']
    >>> parse_semantics("current")
    frozenset()
    """
    items = names.split(",") if isinstance(names, str) else list(names)
    odd = [repr(n) for n in items if not isinstance(n, str)]
    if odd:
        raise UnknownSemantics(f"expected switch names, got {', '.join(odd)}")
    chosen = {n.strip() for n in items if n.strip()} - {SEMANTICS_CURRENT}
    unknown = sorted(n for n in chosen if n not in SEMANTICS)
    if unknown:
        raise UnknownSemantics(f"unknown semantics {', '.join(unknown)} (known: {', '.join(SEMANTICS)}, "
                         f"or {SEMANTICS_CURRENT} for none)")
    return frozenset(chosen)
