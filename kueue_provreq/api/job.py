"""The job kinds Kueue turns into Workloads, reduced to what its job integrations read and write.

batch/v1 ``Job``, ``JobSet`` (jobset.x-k8s.io/v1alpha2) and Kubeflow's ``PyTorchJob``
(kubeflow.org/v1).  Each keeps what the integration reads (suspension, counts, pod templates)
typed, and everything else losslessly in ``extra``; pod templates are frozen JSON, as in
Workloads.  ``status`` is kept as frozen JSON: the integrations read a few keys of it (finished,
active pods) and the model writes none.
"""

from __future__ import annotations

from typing import ClassVar

import attrs

from kueue_provreq.api import constants as c
from kueue_provreq.api.frozen import EMPTY, FrozenMap
from kueue_provreq.api.meta import Json, ObjectMeta

# --- batch/v1 Job ---------------------------------------------------------------------------


@attrs.define(unsafe_hash=True, weakref_slot=False)
class JobSpec:
    suspend: bool | None = None
    parallelism: int | None = None
    completions: int | None = None
    template: FrozenMap[str, Json] = EMPTY
    """The ``PodTemplateSpec`` as frozen JSON."""
    extra: FrozenMap[str, Json] = EMPTY

    @property
    def pods_count(self) -> int:
        """How many pods run at once: ``parallelism`` (1 when absent, as the API server defaults
        it), capped by ``completions`` (Kueue's ``podsCount``, and JobSet's per replica)."""
        count = 1 if self.parallelism is None else self.parallelism
        return count if self.completions is None else min(count, self.completions)


@attrs.define(unsafe_hash=True, cache_hash=True, weakref_slot=False)
class Job:
    KIND: ClassVar[str] = c.JOB
    kind: ClassVar[str] = c.JOB
    NAMESPACED: ClassVar[bool] = True

    metadata: ObjectMeta
    spec: JobSpec = JobSpec()
    status: FrozenMap[str, Json] = EMPTY
    extra: FrozenMap[str, Json] = EMPTY


# --- JobSet (jobset.x-k8s.io/v1alpha2) ----------------------------------------------------------


@attrs.define(unsafe_hash=True, weakref_slot=False)
class JobTemplate:
    """batch/v1 ``JobTemplateSpec``."""

    metadata: FrozenMap[str, Json] = EMPTY
    spec: JobSpec = JobSpec()


@attrs.define(unsafe_hash=True, weakref_slot=False)
class ReplicatedJob:
    name: str
    template: JobTemplate
    replicas: int = 1
    """How many Jobs of this template (the CRD's default is 1)."""
    extra: FrozenMap[str, Json] = EMPTY


@attrs.define(unsafe_hash=True, weakref_slot=False)
class JobSetSpec:
    replicated_jobs: tuple[ReplicatedJob, ...] = ()
    suspend: bool | None = None
    extra: FrozenMap[str, Json] = EMPTY


@attrs.define(unsafe_hash=True, cache_hash=True, weakref_slot=False)
class JobSet:
    KIND: ClassVar[str] = c.JOBSET
    kind: ClassVar[str] = c.JOBSET
    NAMESPACED: ClassVar[bool] = True

    metadata: ObjectMeta
    spec: JobSetSpec = JobSetSpec()
    status: FrozenMap[str, Json] = EMPTY
    extra: FrozenMap[str, Json] = EMPTY


# --- Kubeflow PyTorchJob (kubeflow.org/v1) ------------------------------------------------------


@attrs.define(unsafe_hash=True, weakref_slot=False)
class ReplicaSpec:
    replicas: int | None = None
    """Pods of this replica type (1 when absent, as the training operator defaults it)."""
    template: FrozenMap[str, Json] = EMPTY
    restart_policy: str | None = None
    extra: FrozenMap[str, Json] = EMPTY


@attrs.define(unsafe_hash=True, weakref_slot=False)
class RunPolicy:
    suspend: bool | None = None
    extra: FrozenMap[str, Json] = EMPTY


@attrs.define(unsafe_hash=True, weakref_slot=False)
class PyTorchJobSpec:
    pytorch_replica_specs: FrozenMap[str, ReplicaSpec] = EMPTY
    """By replica type: ``Master`` and ``Worker``."""
    run_policy: RunPolicy = RunPolicy()
    extra: FrozenMap[str, Json] = EMPTY


@attrs.define(unsafe_hash=True, cache_hash=True, weakref_slot=False)
class PyTorchJob:
    KIND: ClassVar[str] = c.PYTORCH_JOB
    kind: ClassVar[str] = c.PYTORCH_JOB
    NAMESPACED: ClassVar[bool] = True

    metadata: ObjectMeta
    spec: PyTorchJobSpec = PyTorchJobSpec()
    status: FrozenMap[str, Json] = EMPTY
    extra: FrozenMap[str, Json] = EMPTY
