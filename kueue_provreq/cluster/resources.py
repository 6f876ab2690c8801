"""Where each kind the model reads or writes lives on the API server.

One row per kind: its API group and the version this port speaks (the storage version,
which is also what Kueue and Cluster Autoscaler use), its resource (plural) name and its
scope.  Paths follow the API server's REST layout: ``/api/v1/...`` for the core group,
``/apis/<group>/<version>/...`` for the others, ``namespaces/<ns>/`` for a namespaced
object, and ``/status`` for the status subresource.
"""

from __future__ import annotations

from urllib.parse import quote

import attrs

from kueue_provreq.api import constants as c


@attrs.frozen
class Resource:
    kind: str
    group: str
    version: str
    plural: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def resource_name(self) -> str:
        """``<plural>.<group>``, as ``kubectl`` and the API server's errors name it."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def path(self, namespace: str = "", name: str = "", subresource: str = "") -> str:
        """The REST path: the collection (across namespaces when ``namespace`` is empty), or
        one object and optionally its subresource."""
        parts = ["api", self.version] if not self.group else ["apis", self.group, self.version]
        if self.namespaced and namespace:
            parts += ["namespaces", quote(namespace, safe="")]
        parts.append(self.plural)
        if name:
            parts.append(quote(name, safe=""))
            if subresource:
                parts.append(subresource)
        return "/" + "/".join(parts)


EVENT = "Event"

RESOURCES: dict[str, Resource] = {r.kind: r for r in (
    Resource(c.CLUSTER_QUEUE, c.KUEUE_GROUP, "v1beta2", "clusterqueues", False),
    Resource(c.COHORT, c.KUEUE_GROUP, "v1beta2", "cohorts", False),
    Resource(c.LOCAL_QUEUE, c.KUEUE_GROUP, "v1beta2", "localqueues", True),
    Resource(c.RESOURCE_FLAVOR, c.KUEUE_GROUP, "v1beta2", "resourceflavors", False),
    Resource(c.ADMISSION_CHECK, c.KUEUE_GROUP, "v1beta2", "admissionchecks", False),
    Resource(c.PROVISIONING_REQUEST_CONFIG, c.KUEUE_GROUP, "v1beta2", "provisioningrequestconfigs", False),
    Resource(c.WORKLOAD, c.KUEUE_GROUP, "v1beta2", "workloads", True),
    Resource(c.PROVISIONING_REQUEST, c.AUTOSCALING_GROUP, "v1", "provisioningrequests", True),
    Resource(c.POD_TEMPLATE, "", "v1", "podtemplates", True),
    Resource(c.JOB, "batch", "v1", "jobs", True),
    Resource(c.JOBSET, c.JOBSET_GROUP, "v1alpha2", "jobsets", True),
    Resource(c.PYTORCH_JOB, c.KUBEFLOW_GROUP, "v1", "pytorchjobs", True),
    Resource(EVENT, "", "v1", "events", True),
)}

#: The kinds a snapshot reads, in the order they are listed (configuration first, then the
#: objects that refer to it), which is also the order ``kubectl get`` users would write them.
SNAPSHOT_KINDS: tuple[str, ...] = (
    c.RESOURCE_FLAVOR, c.ADMISSION_CHECK, c.PROVISIONING_REQUEST_CONFIG, c.COHORT, c.CLUSTER_QUEUE,
    c.LOCAL_QUEUE, c.JOB, c.JOBSET, c.PYTORCH_JOB, c.WORKLOAD, c.PROVISIONING_REQUEST, c.POD_TEMPLATE,
)

#: Label selectors a snapshot lists with, where a kind has objects that are none of Kueue's
#: business: jobs without a queue name (Kueue leaves them alone unless
#: ``manageJobsWithoutQueueName`` is set) and PodTemplates Kueue did not make (it labels its
#: own, and the ProvisioningRequests, ``kueue.x-k8s.io/managed=true``).
SNAPSHOT_SELECTORS: dict[str, str] = {
    c.JOB: c.LABEL_QUEUE_NAME,
    c.JOBSET: c.LABEL_QUEUE_NAME,
    c.PYTORCH_JOB: c.LABEL_QUEUE_NAME,
    c.POD_TEMPLATE: f"{c.LABEL_MANAGED}=true",
}
