"""The job kinds Kueue turns into Workloads, reduced to what its job integrations read and write.

batch/v1 ``Job``, ``JobSet`` (jobset.x-k8s.io/v1alpha2) and Kubeflow's ``PyTorchJob``
(kubeflow.org/v1).  Each keeps what the integration reads (suspension, counts, pod templates)
typed, and everything else losslessly in ``extra``; pod templates are frozen JSON, as in
Workloads.  ``status`` is kept as frozen JSON: the integrations read a few keys of it (finished,
active pods) and the model writes none.
"""

from __future__ import annotations

from typing import ClassVar, final

from kueue_provreq.api import constants as c
from kueue_provreq.api.frozen import EMPTY, FrozenMap
from kueue_provreq.api.meta import Json, ObjectMeta
from kueue_provreq.api.model import Field, Model

# --- batch/v1 Job ---------------------------------------------------------------------------


@final
class JobSpec(Model):
    __slots__ = ("suspend", "parallelism", "completions", "template", "extra")

    FIELDS: ClassVar[tuple[Field, ...]] = (
        Field("suspend", bool | None, None), Field("parallelism", int | None, None),
        Field("completions", int | None, None), Field("template", FrozenMap[str, Json], EMPTY),
        Field("extra", FrozenMap[str, Json], EMPTY))

    def __init__(self, suspend: bool | None = None, parallelism: int | None = None, completions: int | None = None,
                 template: FrozenMap[str, Json] = EMPTY, extra: FrozenMap[str, Json] = EMPTY) -> None:
        self.suspend = suspend
        self.parallelism = parallelism
        self.completions = completions
        self.template = template
        """The ``PodTemplateSpec`` as frozen JSON."""
        self.extra = extra

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, JobSpec):
            return NotImplemented
        return (self.suspend == other.suspend and self.parallelism == other.parallelism and
                self.completions == other.completions and self.template == other.template and self.extra == other.extra)

    def __hash__(self) -> int:
        return hash((self.suspend, self.parallelism, self.completions, self.template, self.extra))

    @property
    def pods_count(self) -> int:
        """How many pods run at once: ``parallelism`` (1 when absent, as the API server defaults
        it), capped by ``completions`` (Kueue's ``podsCount``, and JobSet's per replica)."""
        count = 1 if self.parallelism is None else self.parallelism
        return count if self.completions is None else min(count, self.completions)


_NO_JOB_SPEC = JobSpec()
"""The default of the JobSpec fields (one object, as attrs kept its defaults)."""


@final
class Job(Model):
    KIND: ClassVar[str] = c.JOB
    kind: ClassVar[str] = c.JOB
    NAMESPACED: ClassVar[bool] = True

    __slots__ = ("metadata", "spec", "status", "extra", "_hash")

    FIELDS: ClassVar[tuple[Field, ...]] = (
        Field("metadata", ObjectMeta), Field("spec", JobSpec, _NO_JOB_SPEC),
        Field("status", FrozenMap[str, Json], EMPTY),
        Field("extra", FrozenMap[str, Json], EMPTY))

    def __init__(self, metadata: ObjectMeta, spec: JobSpec = _NO_JOB_SPEC, status: FrozenMap[str, Json] = EMPTY,
                 extra: FrozenMap[str, Json] = EMPTY) -> None:
        self.metadata = metadata
        self.spec = spec
        self.status = status
        self.extra = extra
        self._hash = -1

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Job):
            return NotImplemented
        return (self.metadata == other.metadata and self.spec == other.spec and self.status == other.status and
                self.extra == other.extra)

    def __hash__(self) -> int:
        h = self._hash
        if h == -1:
            h = self._hash = hash((self.metadata, self.spec, self.status, self.extra))
        return h


# --- JobSet (jobset.x-k8s.io/v1alpha2) ----------------------------------------------------------


@final
class JobTemplate(Model):
    """batch/v1 ``JobTemplateSpec``."""

    __slots__ = ("metadata", "spec")

    FIELDS: ClassVar[tuple[Field, ...]] = (
        Field("metadata", FrozenMap[str, Json], EMPTY), Field("spec", JobSpec, _NO_JOB_SPEC))

    def __init__(self, metadata: FrozenMap[str, Json] = EMPTY, spec: JobSpec = _NO_JOB_SPEC) -> None:
        self.metadata = metadata
        self.spec = spec

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, JobTemplate):
            return NotImplemented
        return (self.metadata == other.metadata and self.spec == other.spec)

    def __hash__(self) -> int:
        return hash((self.metadata, self.spec))


@final
class ReplicatedJob(Model):
    __slots__ = ("name", "template", "replicas", "extra")

    FIELDS: ClassVar[tuple[Field, ...]] = (
        Field("name", str), Field("template", JobTemplate), Field("replicas", int, 1),
        Field("extra", FrozenMap[str, Json], EMPTY))

    def __init__(self, name: str, template: JobTemplate, replicas: int = 1,
                 extra: FrozenMap[str, Json] = EMPTY) -> None:
        self.name = name
        self.template = template
        self.replicas = replicas
        """How many Jobs of this template (the CRD's default is 1)."""
        self.extra = extra

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ReplicatedJob):
            return NotImplemented
        return (self.name == other.name and self.template == other.template and self.replicas == other.replicas and
                self.extra == other.extra)

    def __hash__(self) -> int:
        return hash((self.name, self.template, self.replicas, self.extra))


@final
class JobSetSpec(Model):
    __slots__ = ("replicated_jobs", "suspend", "extra")

    FIELDS: ClassVar[tuple[Field, ...]] = (
        Field("replicated_jobs", tuple[ReplicatedJob, ...], ()), Field("suspend", bool | None, None),
        Field("extra", FrozenMap[str, Json], EMPTY))

    def __init__(self, replicated_jobs: tuple[ReplicatedJob, ...] = (), suspend: bool | None = None,
                 extra: FrozenMap[str, Json] = EMPTY) -> None:
        self.replicated_jobs = replicated_jobs
        self.suspend = suspend
        self.extra = extra

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, JobSetSpec):
            return NotImplemented
        return (self.replicated_jobs == other.replicated_jobs and self.suspend == other.suspend and
                self.extra == other.extra)

    def __hash__(self) -> int:
        return hash((self.replicated_jobs, self.suspend, self.extra))


_NO_JOB_SET_SPEC = JobSetSpec()
"""The default of the JobSetSpec fields (one object, as attrs kept its defaults)."""


@final
class JobSet(Model):
    KIND: ClassVar[str] = c.JOBSET
    kind: ClassVar[str] = c.JOBSET
    NAMESPACED: ClassVar[bool] = True

    __slots__ = ("metadata", "spec", "status", "extra", "_hash")

    FIELDS: ClassVar[tuple[Field, ...]] = (
        Field("metadata", ObjectMeta), Field("spec", JobSetSpec, _NO_JOB_SET_SPEC),
        Field("status", FrozenMap[str, Json], EMPTY), Field("extra", FrozenMap[str, Json], EMPTY))

    def __init__(self, metadata: ObjectMeta, spec: JobSetSpec = _NO_JOB_SET_SPEC, status: FrozenMap[str, Json] = EMPTY,
                 extra: FrozenMap[str, Json] = EMPTY) -> None:
        self.metadata = metadata
        self.spec = spec
        self.status = status
        self.extra = extra
        self._hash = -1

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, JobSet):
            return NotImplemented
        return (self.metadata == other.metadata and self.spec == other.spec and self.status == other.status and
                self.extra == other.extra)

    def __hash__(self) -> int:
        h = self._hash
        if h == -1:
            h = self._hash = hash((self.metadata, self.spec, self.status, self.extra))
        return h


# --- Kubeflow PyTorchJob (kubeflow.org/v1) ------------------------------------------------------


@final
class ReplicaSpec(Model):
    __slots__ = ("replicas", "template", "restart_policy", "extra")

    FIELDS: ClassVar[tuple[Field, ...]] = (
        Field("replicas", int | None, None), Field("template", FrozenMap[str, Json], EMPTY),
        Field("restart_policy", str | None, None), Field("extra", FrozenMap[str, Json], EMPTY))

    def __init__(self, replicas: int | None = None, template: FrozenMap[str, Json] = EMPTY,
                 restart_policy: str | None = None, extra: FrozenMap[str, Json] = EMPTY) -> None:
        self.replicas = replicas
        """Pods of this replica type (1 when absent, as the training operator defaults it)."""
        self.template = template
        self.restart_policy = restart_policy
        self.extra = extra

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ReplicaSpec):
            return NotImplemented
        return (self.replicas == other.replicas and self.template == other.template and
                self.restart_policy == other.restart_policy and self.extra == other.extra)

    def __hash__(self) -> int:
        return hash((self.replicas, self.template, self.restart_policy, self.extra))


@final
class RunPolicy(Model):
    __slots__ = ("suspend", "extra")

    FIELDS: ClassVar[tuple[Field, ...]] = (
        Field("suspend", bool | None, None), Field("extra", FrozenMap[str, Json], EMPTY))

    def __init__(self, suspend: bool | None = None, extra: FrozenMap[str, Json] = EMPTY) -> None:
        self.suspend = suspend
        self.extra = extra

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RunPolicy):
            return NotImplemented
        return (self.suspend == other.suspend and self.extra == other.extra)

    def __hash__(self) -> int:
        return hash((self.suspend, self.extra))


_NO_RUN_POLICY = RunPolicy()
"""The default of the RunPolicy fields (one object, as attrs kept its defaults)."""


@final
class PyTorchJobSpec(Model):
    __slots__ = ("pytorch_replica_specs", "run_policy", "extra")

    FIELDS: ClassVar[tuple[Field, ...]] = (
        Field("pytorch_replica_specs", FrozenMap[str, ReplicaSpec], EMPTY),
        Field("run_policy", RunPolicy, _NO_RUN_POLICY),
        Field("extra", FrozenMap[str, Json], EMPTY))

    def __init__(self, pytorch_replica_specs: FrozenMap[str, ReplicaSpec] = EMPTY,
                 run_policy: RunPolicy = _NO_RUN_POLICY,
                 extra: FrozenMap[str, Json] = EMPTY) -> None:
        self.pytorch_replica_specs = pytorch_replica_specs
        """By replica type: ``Master`` and ``Worker``."""
        self.run_policy = run_policy
        self.extra = extra

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PyTorchJobSpec):
            return NotImplemented
        return (self.pytorch_replica_specs == other.pytorch_replica_specs and self.run_policy == other.run_policy and
                self.extra == other.extra)

    def __hash__(self) -> int:
        return hash((self.pytorch_replica_specs, self.run_policy, self.extra))


_NO_PY_TORCH_JOB_SPEC = PyTorchJobSpec()
"""The default of the PyTorchJobSpec fields (one object, as attrs kept its defaults)."""


@final
class PyTorchJob(Model):
    KIND: ClassVar[str] = c.PYTORCH_JOB
    kind: ClassVar[str] = c.PYTORCH_JOB
    NAMESPACED: ClassVar[bool] = True

    __slots__ = ("metadata", "spec", "status", "extra", "_hash")

    FIELDS: ClassVar[tuple[Field, ...]] = (
        Field("metadata", ObjectMeta), Field("spec", PyTorchJobSpec, _NO_PY_TORCH_JOB_SPEC),
        Field("status", FrozenMap[str, Json], EMPTY), Field("extra", FrozenMap[str, Json], EMPTY))

    def __init__(self, metadata: ObjectMeta, spec: PyTorchJobSpec = _NO_PY_TORCH_JOB_SPEC,
                 status: FrozenMap[str, Json] = EMPTY, extra: FrozenMap[str, Json] = EMPTY) -> None:
        self.metadata = metadata
        self.spec = spec
        self.status = status
        self.extra = extra
        self._hash = -1

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PyTorchJob):
            return NotImplemented
        return (self.metadata == other.metadata and self.spec == other.spec and self.status == other.status and
                self.extra == other.extra)

    def __hash__(self) -> int:
        h = self._hash
        if h == -1:
            h = self._hash = hash((self.metadata, self.spec, self.status, self.extra))
        return h
