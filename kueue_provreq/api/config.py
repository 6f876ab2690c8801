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

import functools

import attrs

from kueue_provreq.api import constants as c
from kueue_provreq.api.frozen import EMPTY, FrozenMap
from kueue_provreq.api.meta import Duration, Json

#: Feature gates the library models, with upstream's defaults at the modelled snapshot.
DEFAULT_FEATURE_GATES: FrozenMap[str, bool] = FrozenMap({
    c.GATE_KEEP_QUOTA_FOR_PROVREQ_RETRY: False,
    c.GATE_CLEANUP_ON_EVICTION: True,
    c.GATE_UNADMITTED_OBSERVABILITY: True,
    c.GATE_PARTIAL_ADMISSION: True,
})

#: The job integrations the model has (``integrations.frameworks`` names).
MODELLED_FRAMEWORKS: tuple[str, ...] = (c.FRAMEWORK_JOB, c.FRAMEWORK_JOBSET, c.FRAMEWORK_PYTORCH_JOB)


@attrs.frozen
class RequeuingStrategy:
    timestamp: str = c.TIMESTAMP_EVICTION
    backoff_limit_count: int | None = None
    backoff_base_seconds: int = 60
    backoff_max_seconds: int = 3600


@attrs.frozen
class WaitForPodsReady:
    timeout: Duration = Duration(1800.0)
    block_admission: bool = False
    recovery_timeout: Duration | None = None
    requeuing_strategy: RequeuingStrategy = RequeuingStrategy()
    extra: FrozenMap[str, Json] = EMPTY

    @property
    def effective_recovery_timeout(self) -> float | None:
        """``recoveryTimeout`` defaults to ``timeout``; ``0s`` disables it."""
        if self.recovery_timeout is None:
            return self.timeout
        return self.recovery_timeout or None


#: ``Configuration.admission_check_semantics``: the admission check retry semantics since
#: Kueue v0.15 (KEP-3258: per-check retryCount and requeueAfterSeconds), or the one before it
#: (a single shared requeueState, eviction at first sight of Retry), kept to show KEP-3258's race.
SEMANTICS_CURRENT = "current"
SEMANTICS_PRE_KEP_3258 = "pre-kep-3258"


@attrs.frozen(cache_hash=True)
class Configuration:
    wait_for_pods_ready: WaitForPodsReady | None = WaitForPodsReady()
    feature_gates: FrozenMap[str, bool] = DEFAULT_FEATURE_GATES
    extra: FrozenMap[str, Json] = EMPTY
    admission_check_semantics: str = SEMANTICS_CURRENT
    """Not a Kueue field: which Kueue version's admission check semantics the model follows."""
    manage_jobs_without_queue_name: bool = False
    """Whether Kueue manages jobs without the ``kueue.x-k8s.io/queue-name`` label too."""
    frameworks: tuple[str, ...] = MODELLED_FRAMEWORKS
    """``integrations.frameworks``: the job integrations enabled."""

    @functools.cached_property
    def pre_kep_3258(self) -> bool:
        return self.admission_check_semantics == SEMANTICS_PRE_KEP_3258

    @functools.cached_property
    def _gates(self) -> dict[str, bool]:
        """Every modelled gate's value, defaults filled in: every reconcile asks some."""
        return {**DEFAULT_FEATURE_GATES, **self.feature_gates}

    def gate(self, name: str) -> bool:
        return self._gates.get(name, False)

    @property
    def requeuing_timestamp(self) -> str:
        w = self.wait_for_pods_ready
        return w.requeuing_strategy.timestamp if w else c.TIMESTAMP_EVICTION
