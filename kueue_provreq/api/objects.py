"""The set of kinds the library models, and how objects are addressed.

Every model of a kind has ``kind`` (the name a manifest writes, on the class and on each
object), ``KIND`` (the same, the spelling the library uses inside) and ``NAMESPACED``.
"""

from __future__ import annotations

from kueue_provreq.api import constants as c
from kueue_provreq.api.job import Job, JobSet, PyTorchJob
from kueue_provreq.api.provisioning import (
    PodTemplate,
    ProvisioningRequest,
    ProvisioningRequestConfig,
)
from kueue_provreq.api.queues import (
    AdmissionCheck,
    ClusterQueue,
    Cohort,
    LocalQueue,
    ResourceFlavor,
)
from kueue_provreq.api.workload import Workload

KubeObject = (Workload | ClusterQueue | Cohort | LocalQueue | ResourceFlavor | AdmissionCheck | ProvisioningRequestConfig
              | ProvisioningRequest | PodTemplate | Job | JobSet | PyTorchJob)

JobObject = Job | JobSet | PyTorchJob
"""The job kinds whose Workloads Kueue's job integrations create."""

JOB_KINDS: tuple[str, ...] = (c.JOB, c.JOBSET, c.PYTORCH_JOB)

KINDS: dict[str, type[KubeObject]] = {
    cls.KIND: cls for cls in (Workload, ClusterQueue, Cohort, LocalQueue, ResourceFlavor, AdmissionCheck,
                              ProvisioningRequestConfig, ProvisioningRequest, PodTemplate, Job, JobSet,
                              PyTorchJob)
}

#: ``<plural>.<group>`` as the API server names a resource in its error texts.
RESOURCE_NAMES: dict[str, str] = {
    c.WORKLOAD: "workloads.kueue.x-k8s.io",
    c.CLUSTER_QUEUE: "clusterqueues.kueue.x-k8s.io",
    c.COHORT: "cohorts.kueue.x-k8s.io",
    c.LOCAL_QUEUE: "localqueues.kueue.x-k8s.io",
    c.RESOURCE_FLAVOR: "resourceflavors.kueue.x-k8s.io",
    c.ADMISSION_CHECK: "admissionchecks.kueue.x-k8s.io",
    c.PROVISIONING_REQUEST_CONFIG: "provisioningrequestconfigs.kueue.x-k8s.io",
    c.PROVISIONING_REQUEST: "provisioningrequests.autoscaling.x-k8s.io",
    c.POD_TEMPLATE: "podtemplates",
    c.JOB: "jobs.batch",
    c.JOBSET: "jobsets.jobset.x-k8s.io",
    c.PYTORCH_JOB: "pytorchjobs.kubeflow.org",
}

Key = tuple[str, str, str]
"""(kind, namespace, name); namespace is "" for cluster-scoped kinds."""


def key_of(obj: KubeObject) -> Key:
    return (obj.KIND, obj.metadata.namespace, obj.metadata.name)


def already_exists(kind: str, name: str) -> str:
    return f'{RESOURCE_NAMES[kind]} "{name}" already exists'


def not_found(kind: str, name: str) -> str:
    return f'{RESOURCE_NAMES[kind]} "{name}" not found'


def not_in_cache(kind: str, name: str) -> str:
    """A controller's read of a missing object: controller-runtime's cache reader answers with
    the kind where the API server names the resource (``NewNotFound(GroupResource{Group,
    Resource: Kind})``, pkg/cache/internal/cache_reader.go), so Kueue's controllers report
    ``ProvisioningRequestConfig.kueue.x-k8s.io "prc" not found``."""
    group = RESOURCE_NAMES[kind].partition(".")[2]
    return f'{kind}.{group} "{name}" not found' if group else f'{kind} "{name}" not found'
