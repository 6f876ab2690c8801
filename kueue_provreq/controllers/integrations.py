"""Kueue's job integrations (``pkg/controller/jobs/<kind>``): what the generic job reconciler asks
of each job kind, for batch/v1 Job, JobSet and Kubeflow PyTorchJob.

Each integration says how its kind maps to the podsets of a Workload, whether the job is
suspended, finished or still has active pods, and how Kueue suspends it and starts it.  The
podsets are named and counted as upstream's integrations do:

* **Job** (``job_controller.go``): one podset ``main`` of ``parallelism`` pods (1 when absent),
  capped by ``completions``; ``minCount`` from the ``kueue.x-k8s.io/job-min-parallelism``
  annotation (partial admission); the template without the labels the batch controller manages
  (``job-name``, ``controller-uid``, ``batch.kubernetes.io/controller-uid``).
* **JobSet** (``jobset_controller.go``): one podset per replicated job, named after it, of
  ``replicas`` × the Job's pods (``parallelism``, default 1, capped by ``completions``).
* **PyTorchJob** (``kubeflowjob_controller.go``): podsets ``master`` then ``worker``, those
  present, each of ``replicas`` pods (1 when absent).

A job is finished when its status says so (Job: ``Complete`` or ``Failed``; JobSet:
``Completed`` or ``Failed``; PyTorchJob: ``Succeeded`` or ``Failed``), and active while its
status counts active pods.  Nothing in the model writes a job's status.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Generic, TypeVar

from kueue_provreq.api import constants as c
from kueue_provreq.api.evolve import evolve
from kueue_provreq.api.frozen import EMPTY, FrozenMap
from kueue_provreq.api.job import Job, JobSet, PyTorchJob, ReplicaSpec
from kueue_provreq.api.meta import Json
from kueue_provreq.api.objects import JobObject
from kueue_provreq.api.workload import PodSet
from kueue_provreq.controllers.podsets import BadPodSetsInfo, PodSetInfo, merge_into, restore_into

J = TypeVar("J", Job, JobSet, PyTorchJob)

_GO_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
"""What Go's ``strconv.ParseBool`` reads as true."""


def _conditions_true(status: FrozenMap[str, Json], *types: str) -> bool:
    return any(cd.get("type") in types and cd.get("status") == c.TRUE for cd in status.get("conditions") or ())


class Integration(Generic[J]):
    """One job kind's integration; the generic reconciler (:mod:`~kueue_provreq.controllers.job`)
    does the rest."""

    kind: ClassVar[str]
    group: ClassVar[str]
    api_version: ClassVar[str]
    framework: ClassVar[str]
    """Its name in the Configuration's ``integrations.frameworks``."""

    def pod_sets(self, job: J) -> tuple[PodSet, ...]:
        raise NotImplementedError

    def templates(self, job: J) -> tuple[FrozenMap[str, Json], ...]:
        """The pod templates, in the order of :meth:`pod_sets`."""
        raise NotImplementedError

    def with_templates(self, job: J, templates: Sequence[FrozenMap[str, Json]]) -> J:
        raise NotImplementedError

    def is_suspended(self, job: J) -> bool:
        raise NotImplementedError

    def with_suspend(self, job: J, suspend: bool) -> J:
        raise NotImplementedError

    def finished(self, job: J) -> bool:
        raise NotImplementedError

    def active(self, job: J) -> bool:
        raise NotImplementedError

    def started(self, job: J, infos: Sequence[PodSetInfo]) -> J:
        """``RunWithPodSetsInfo``: unsuspended, each template with its podset's info merged in
        (raises :class:`~kueue_provreq.controllers.podsets.BadPodSetsInfo`)."""
        templates = self.templates(job)
        if len(infos) != len(templates):
            raise BadPodSetsInfo(f"invalid podset infos: expecting {len(templates)} podset, got {len(infos)}")
        merged = [merge_into(t, info) for t, info in zip(templates, infos, strict=True)]
        return self.with_templates(self.with_suspend(job, False), merged)

    def stopped(self, job: J, infos: Sequence[PodSetInfo] | None) -> J:
        """``Suspend`` and ``RestorePodSetsInfo``: suspended, and with the Workload's podsets
        (``infos``, when there is a Workload) the templates put back as they were."""
        job = self.with_suspend(job, True)
        if infos is None or len(infos) != len(self.templates(job)):
            return job
        return self.with_templates(job, [restore_into(t, info) for t, info in zip(self.templates(job), infos, strict=True)])


class JobIntegration(Integration[Job]):
    kind = c.JOB
    group = c.BATCH_GROUP
    api_version = c.BATCH_V1
    framework = c.FRAMEWORK_JOB

    def pod_sets(self, job: Job) -> tuple[PodSet, ...]:
        template = job.spec.template
        labels = (template.get("metadata") or EMPTY).get("labels") or EMPTY
        # the Workload's copy keeps only batch.kubernetes.io/job-name of the batch controller's labels
        managed = [k for k in c.BATCH_MANAGED_LABELS if k != c.BATCH_JOB_NAME_LABEL and k in labels]
        if managed:
            kept = FrozenMap({k: v for k, v in labels.items() if k not in managed})
            template = template.set("metadata", template["metadata"].set("labels", kept))
        return (PodSet(c.DEFAULT_POD_SET_NAME, job.spec.pods_count, template, min_count=min_parallelism(job)),)

    def templates(self, job: Job) -> tuple[FrozenMap[str, Json], ...]:
        return (job.spec.template,)

    def with_templates(self, job: Job, templates: Sequence[FrozenMap[str, Json]]) -> Job:
        (template,) = templates
        return job if template == job.spec.template else evolve(job, spec=evolve(job.spec, template=template))

    def is_suspended(self, job: Job) -> bool:
        return job.spec.suspend is True and job.metadata.annotations.get(c.ANNOTATION_JOB_STOPPING) != "true"

    def with_suspend(self, job: Job, suspend: bool) -> Job:
        return evolve(job, spec=evolve(job.spec, suspend=suspend))

    def finished(self, job: Job) -> bool:
        return _conditions_true(job.status, c.JOB_COMPLETE, c.JOB_FAILED)

    def active(self, job: Job) -> bool:
        return bool(job.status.get("active"))

    def started(self, job: Job, infos: Sequence[PodSetInfo]) -> Job:
        """With partial admission, ``parallelism`` becomes the admitted count (and
        ``completions`` too when ``job-completions-equal-parallelism`` says so)."""
        if infos and min_parallelism(job) is not None:
            job = _with_parallelism(job, infos[0].count)
        return super().started(job, infos)

    def stopped(self, job: Job, infos: Sequence[PodSetInfo] | None) -> Job:
        if infos and min_parallelism(job) is not None and job.spec.parallelism != infos[0].count:
            job = _with_parallelism(job, infos[0].count)
        if infos:
            # the labels the batch controller manages are kept as they are
            labels = (job.spec.template.get("metadata") or EMPTY).get("labels") or EMPTY
            managed = {k: labels[k] for k in c.BATCH_MANAGED_LABELS if k in labels}
            infos = [evolve(infos[0], labels=infos[0].labels.merged(managed)), *infos[1:]]
        job = super().stopped(job, infos)
        status = job.status.without("startTime")
        return job if status is job.status else evolve(job, status=status)


def min_parallelism(job: Job) -> int | None:
    """The ``kueue.x-k8s.io/job-min-parallelism`` annotation, when it is a number."""
    text = job.metadata.annotations.get(c.ANNOTATION_JOB_MIN_PARALLELISM)
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def _with_parallelism(job: Job, count: int) -> Job:
    same = job.metadata.annotations.get(c.ANNOTATION_JOB_COMPLETIONS_EQUAL_PARALLELISM) in _GO_TRUE
    return evolve(job, spec=evolve(job.spec, parallelism=count,
                                               completions=count if same else job.spec.completions))


class JobSetIntegration(Integration[JobSet]):
    kind = c.JOBSET
    group = c.JOBSET_GROUP
    api_version = c.JOBSET_V1ALPHA2
    framework = c.FRAMEWORK_JOBSET

    def pod_sets(self, job: JobSet) -> tuple[PodSet, ...]:
        return tuple(PodSet(rj.name.lower(), rj.replicas * rj.template.spec.pods_count, rj.template.spec.template)
                     for rj in job.spec.replicated_jobs)

    def templates(self, job: JobSet) -> tuple[FrozenMap[str, Json], ...]:
        return tuple(rj.template.spec.template for rj in job.spec.replicated_jobs)

    def with_templates(self, job: JobSet, templates: Sequence[FrozenMap[str, Json]]) -> JobSet:
        if tuple(templates) == self.templates(job):
            return job
        jobs = tuple(evolve(rj, template=evolve(rj.template, spec=evolve(rj.template.spec,
                                                                                            template=t)))
                     for rj, t in zip(job.spec.replicated_jobs, templates, strict=True))
        return evolve(job, spec=evolve(job.spec, replicated_jobs=jobs))

    def is_suspended(self, job: JobSet) -> bool:
        return job.spec.suspend is True

    def with_suspend(self, job: JobSet, suspend: bool) -> JobSet:
        return evolve(job, spec=evolve(job.spec, suspend=suspend))

    def finished(self, job: JobSet) -> bool:
        return _conditions_true(job.status, c.JOBSET_COMPLETED, c.JOB_FAILED)

    def active(self, job: JobSet) -> bool:
        return any((s.get("active") or 0) > 0 for s in job.status.get("replicatedJobsStatus") or ())


class PyTorchJobIntegration(Integration[PyTorchJob]):
    kind = c.PYTORCH_JOB
    group = c.KUBEFLOW_GROUP
    api_version = c.KUBEFLOW_V1
    framework = c.FRAMEWORK_PYTORCH_JOB
    REPLICA_TYPES: ClassVar[tuple[str, ...]] = (c.PYTORCH_REPLICA_MASTER, c.PYTORCH_REPLICA_WORKER)
    """``OrderedReplicaTypes``: the podsets' order."""

    def _types(self, job: PyTorchJob) -> list[str]:
        return [t for t in self.REPLICA_TYPES if t in job.spec.pytorch_replica_specs]

    def pod_sets(self, job: PyTorchJob) -> tuple[PodSet, ...]:
        specs = job.spec.pytorch_replica_specs
        return tuple(PodSet(t.lower(), _replicas(specs[t]), specs[t].template) for t in self._types(job))

    def templates(self, job: PyTorchJob) -> tuple[FrozenMap[str, Json], ...]:
        return tuple(job.spec.pytorch_replica_specs[t].template for t in self._types(job))

    def with_templates(self, job: PyTorchJob, templates: Sequence[FrozenMap[str, Json]]) -> PyTorchJob:
        specs = job.spec.pytorch_replica_specs
        changed = {t: evolve(specs[t], template=tpl) for t, tpl in zip(self._types(job), templates, strict=True)
                   if specs[t].template != tpl}
        if not changed:
            return job
        return evolve(job, spec=evolve(job.spec, pytorch_replica_specs=specs.merged(changed)))

    def is_suspended(self, job: PyTorchJob) -> bool:
        return job.spec.run_policy.suspend is True

    def with_suspend(self, job: PyTorchJob, suspend: bool) -> PyTorchJob:
        policy = evolve(job.spec.run_policy, suspend=suspend)
        return evolve(job, spec=evolve(job.spec, run_policy=policy))

    def finished(self, job: PyTorchJob) -> bool:
        return _conditions_true(job.status, c.KUBEFLOW_JOB_SUCCEEDED, c.JOB_FAILED)

    def active(self, job: PyTorchJob) -> bool:
        return any((s.get("active") or 0) != 0 for s in (job.status.get("replicaStatuses") or EMPTY).values())


def _replicas(spec: ReplicaSpec) -> int:
    return 1 if spec.replicas is None else spec.replicas


INTEGRATIONS: dict[str, Integration[Any]] = {
    i.kind: i for i in (JobIntegration(), JobSetIntegration(), PyTorchJobIntegration())
}
"""By job kind."""


def integration_of(job: JobObject) -> Integration[Any]:
    return INTEGRATIONS[job.KIND]
