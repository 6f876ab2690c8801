"""The set of kinds the library models, and how objects are addressed."""

from __future__ import annotations

from typing import Union

from kueue_provreq.api import constants as c
from kueue_provreq.api.job import Job
from kueue_provreq.api.provisioning import (
    PodTemplate,
    ProvisioningRequest,
    ProvisioningRequestConfig,
)
from kueue_provreq.api.queues import (
    AdmissionCheck,
    ClusterQueue,
    LocalQueue,
    ResourceFlavor,
)
from kueue_provreq.api.workload import Workload

KubeObject = Union[Workload, ClusterQueue, LocalQueue, ResourceFlavor, AdmissionCheck,
                   ProvisioningRequestConfig, ProvisioningRequest, PodTemplate, Job]

KINDS: dict[str, type[KubeObject]] = {
    cls.KIND: cls for cls in (Workload, ClusterQueue, LocalQueue, ResourceFlavor, AdmissionCheck,
                              ProvisioningRequestConfig, ProvisioningRequest, PodTemplate, Job)
}

#: ``<plural>.<group>`` as the API server names a resource in its error texts.
RESOURCE_NAMES: dict[str, str] = {
    c.WORKLOAD: "workloads.kueue.x-k8s.io",
    c.CLUSTER_QUEUE: "clusterqueues.kueue.x-k8s.io",
    c.LOCAL_QUEUE: "localqueues.kueue.x-k8s.io",
    c.RESOURCE_FLAVOR: "resourceflavors.kueue.x-k8s.io",
    c.ADMISSION_CHECK: "admissionchecks.kueue.x-k8s.io",
    c.PROVISIONING_REQUEST_CONFIG: "provisioningrequestconfigs.kueue.x-k8s.io",
    c.PROVISIONING_REQUEST: "provisioningrequests.autoscaling.x-k8s.io",
    c.POD_TEMPLATE: "podtemplates",
    c.JOB: "jobs.batch",
}

Key = tuple[str, str, str]
"""(kind, namespace, name); namespace is "" for cluster-scoped kinds."""


def key_of(obj: KubeObject) -> Key:
    return (obj.KIND, obj.metadata.namespace, obj.metadata.name)


def already_exists(kind: str, name: str) -> str:
    return f'{RESOURCE_NAMES[kind]} "{name}" already exists'


def not_found(kind: str, name: str) -> str:
    return f'{RESOURCE_NAMES[kind]} "{name}" not found'
