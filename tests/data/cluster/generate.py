"""Write the cluster fixtures: ``kubectl get -A -o json|yaml`` dumps and recorded API-server
answers, from one description of each cluster, so the two never disagree.

    .venv/bin/python tests/data/cluster/generate.py      # rewrites tests/data/cluster/*/

``tests/test_cluster_fixtures.py`` fails when a written file differs from what this script
writes.  Each object is shaped as the API server returns it after Kueue, Cluster
Autoscaler, the Job controller and ``kubectl apply`` have written it: uid,
resourceVersion, generation, creationTimestamp, managedFields, the last-applied
annotation, a Job's selector and controller-uid labels, and the statuses their
controllers write, with the upstream reasons and messages.  These files are this
project's own; no upstream file is copied.

Clusters (the clock stands at 2026-11-20T10:00:00Z, the newest timestamp in each):

* ``healthy`` -- ClusterQueue ``gpu-queue`` with the ``gpu-capacity`` provisioning check
  (``check-capacity.autoscaling.x-k8s.io``, ``noRetry``, retryStrategy 3/60s/1800s) and four
  Jobs in namespace ``ml``: ``train-a`` admitted and running; ``train-b`` waiting behind its
  second ProvisioningRequest; ``tune-d`` whose first attempt just failed (Retry, 30 s of
  backoff left); ``eval-c`` queued without quota.  Plus Pods, Events, a Service, a
  ConfigMap and Kueue's Deployment, kinds the model skips.  The recording answers in pages
  of 2 (``limit=2`` and ``continue``).
* ``restricted`` -- the healthy cluster as a user who may not list PodTemplates sees it
  (403 Forbidden for that list).
* ``troubled`` -- the healthy cluster plus what ``audit`` must report: an Admitted workload
  whose check is Pending, an orphaned ProvisioningRequest and PodTemplate, two live
  requests for one check, a ClusterQueue made inactive by a missing AdmissionCheck, a
  check naming a missing config, a config whose managedResources no podset uses, a Retry
  long overdue, a Provisioned request whose check is still Pending and a workload holding
  quota for an hour waiting for its check.
"""

from __future__ import annotations

import base64
import copy
import json
import sys
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))

from kueue_provreq.api.naming import (  # noqa: E402
    pod_template_name,
    provisioning_request_name,
    workload_name_for_owner,  # noqa: E402
)

Obj = dict[str, Any]

KUEUE = "kueue.x-k8s.io/v1beta2"
PR_API = "autoscaling.x-k8s.io/v1"
NS = "ml"
CHECK = "gpu-capacity"
CONFIG = "gpu-capacity-config"
FLAVOR = "a100"
CQ = "gpu-queue"
LQ = "team-a"
SETUP_TIME = "2026-11-02T08:00:00Z"

_rv = [41000]


def rv() -> str:
    _rv[0] += 7
    return str(_rv[0])


def fields(*paths: str) -> Obj:
    """A ``fieldsV1`` set from dotted paths (``f:spec.f:suspend``)."""
    out: Obj = {}
    for path in paths:
        node = out
        for part in path.split("."):
            node = node.setdefault(part, {})
    return out


def managed(manager: str, operation: str, api: str, time: str, *paths: str, sub: str = "") -> Obj:
    entry = {"apiVersion": api, "fieldsType": "FieldsV1", "fieldsV1": fields(*paths), "manager": manager,
             "operation": operation, "time": time}
    if sub:
        entry["subresource"] = sub
    return entry


def last_applied(obj: Obj) -> str:
    """``kubectl apply``'s annotation: the applied manifest, compact, keys sorted."""
    body = {k: v for k, v in obj.items() if k != "status"}
    meta = {k: v for k, v in obj["metadata"].items() if k in ("name", "namespace", "labels", "annotations")}
    meta["annotations"] = {k: v for k, v in meta.get("annotations", {}).items()
                           if k != "kubectl.kubernetes.io/last-applied-configuration"}
    if not meta["annotations"]:
        del meta["annotations"]
    body["metadata"] = meta
    return json.dumps(body, sort_keys=True, separators=(",", ":")) + "\n"


def applied(obj: Obj, by_kueue_status: bool = True) -> Obj:
    """Add what ``kubectl apply`` and the API server add to a setup object."""
    meta = obj["metadata"]
    meta.setdefault("annotations", {})
    meta["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] = last_applied(obj)
    meta.update(creationTimestamp=SETUP_TIME, generation=1, resourceVersion=rv(), uid=meta.pop("uid"))
    entries = [managed("kubectl-client-side-apply", "Update", obj["apiVersion"], SETUP_TIME,
                       "f:metadata.f:annotations.f:kubectl.kubernetes.io/last-applied-configuration", "f:spec")]
    if by_kueue_status and "status" in obj:
        entries.append(managed("kueue", "Update", obj["apiVersion"], SETUP_TIME, "f:status.f:conditions",
                               sub="status"))
    meta["managedFields"] = entries
    return obj


def cond(type_: str, status: str, reason: str, message: str, time: str, generation: int | None = 1) -> Obj:
    out = {"lastTransitionTime": time, "message": message, "reason": reason, "status": status, "type": type_}
    if generation is not None:
        out["observedGeneration"] = generation
    return out


# --- setup ---------------------------------------------------------------------------------------


def setup() -> list[Obj]:
    return [
        applied({"apiVersion": KUEUE, "kind": "ResourceFlavor",
                 "metadata": {"name": FLAVOR, "uid": "3f6b0c52-8d0e-4a8e-9c41-0a7e55d1b201",
                              "finalizers": ["kueue.x-k8s.io/resource-in-use"]},
                 "spec": {"nodeLabels": {"cloud.google.com/gke-accelerator": "nvidia-tesla-a100"},
                          "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists",
                                           "effect": "NoSchedule"}]}}, by_kueue_status=False),
        applied({"apiVersion": KUEUE, "kind": "ProvisioningRequestConfig",
                 "metadata": {"name": CONFIG, "uid": "b7a1c3d4-1e2f-4a5b-8c6d-7e8f9a0b1c02"},
                 "spec": {"provisioningClassName": "check-capacity.autoscaling.x-k8s.io",
                          "parameters": {"noRetry": "true"},
                          "managedResources": ["nvidia.com/gpu"],
                          "retryStrategy": {"backoffLimitCount": 3, "backoffBaseSeconds": 60,
                                            "backoffMaxSeconds": 1800}}}, by_kueue_status=False),
        applied({"apiVersion": KUEUE, "kind": "AdmissionCheck",
                 "metadata": {"name": CHECK, "uid": "c2d3e4f5-a6b7-4c8d-9e0f-1a2b3c4d5e03"},
                 "spec": {"controllerName": "kueue.x-k8s.io/provisioning-request",
                          "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "ProvisioningRequestConfig",
                                         "name": CONFIG}},
                 "status": {"conditions": [cond("Active", "True", "Active", "The admission check is active",
                                                "2026-11-02T08:00:01Z")]}}),
        applied({"apiVersion": KUEUE, "kind": "ClusterQueue",
                 "metadata": {"name": CQ, "uid": "d4e5f6a7-b8c9-4d0e-8f1a-2b3c4d5e6f04",
                              "finalizers": ["kueue.x-k8s.io/resource-in-use"]},
                 "spec": {"namespaceSelector": {},
                          "queueingStrategy": "BestEffortFIFO",
                          "stopPolicy": "None",
                          "flavorFungibility": {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor"},
                          "preemption": {"borrowWithinCohort": {"policy": "Never"},
                                         "reclaimWithinCohort": "Never", "withinClusterQueue": "Never"},
                          "resourceGroups": [{
                              "coveredResources": ["cpu", "memory", "nvidia.com/gpu"],
                              "flavors": [{"name": FLAVOR, "resources": [
                                  {"name": "cpu", "nominalQuota": "96"},
                                  {"name": "memory", "nominalQuota": "768Gi"},
                                  {"name": "nvidia.com/gpu", "nominalQuota": "16"}]}]}],
                          "admissionChecksStrategy": {"admissionChecks": [{"name": CHECK}]}},
                 "status": {"conditions": [cond("Active", "True", "Ready", "Can admit new workloads",
                                                "2026-11-02T08:00:02Z")],
                            "admittedWorkloads": 1, "reservingWorkloads": 3, "pendingWorkloads": 1,
                            "flavorsReservation": [{"name": FLAVOR, "resources": [
                                {"borrowed": "0", "name": "cpu", "total": "48"},
                                {"borrowed": "0", "name": "memory", "total": "384Gi"},
                                {"borrowed": "0", "name": "nvidia.com/gpu", "total": "12"}]}],
                            "flavorsUsage": [{"name": FLAVOR, "resources": [
                                {"borrowed": "0", "name": "cpu", "total": "24"},
                                {"borrowed": "0", "name": "memory", "total": "192Gi"},
                                {"borrowed": "0", "name": "nvidia.com/gpu", "total": "6"}]}]}}),
        applied({"apiVersion": KUEUE, "kind": "LocalQueue",
                 "metadata": {"name": LQ, "namespace": NS, "uid": "e5f6a7b8-c9d0-4e1f-9a2b-3c4d5e6f7a05"},
                 "spec": {"clusterQueue": CQ, "stopPolicy": "None"},
                 "status": {"conditions": [cond("Active", "True", "Ready", "Can submit new workloads to localQueue",
                                                "2026-11-02T08:00:02Z")],
                            "admittedWorkloads": 1, "reservingWorkloads": 3, "pendingWorkloads": 1}}),
    ]


# --- a Job, its Workload, its requests ------------------------------------------------------------


def container(gpus: int) -> Obj:
    return {"name": "trainer", "image": "us-docker.pkg.dev/ml/trainer:2026.11",
            "args": ["--epochs=20"], "imagePullPolicy": "IfNotPresent",
            "resources": {"limits": {"nvidia.com/gpu": str(gpus)},
                          "requests": {"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": str(gpus)}},
            "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"}


def pod_spec(gpus: int) -> Obj:
    return {"containers": [container(gpus)], "dnsPolicy": "ClusterFirst", "restartPolicy": "Never",
            "schedulerName": "default-scheduler", "securityContext": {}, "terminationGracePeriodSeconds": 30,
            "tolerations": [{"effect": "NoSchedule", "key": "nvidia.com/gpu", "operator": "Exists"}]}


class Story:
    """One Job and everything Kueue and Cluster Autoscaler wrote for it."""

    def __init__(self, name: str, uid: str, created: str, pods: int, gpus: int = 2) -> None:
        self.name, self.uid, self.created, self.pods, self.gpus = name, uid, created, pods, gpus
        self.workload_name = workload_name_for_owner("Job", "batch", name, uid)
        self.workload_uid = uid[:-4] + "a" + uid[-3:]
        self.suspend = True
        self.job_status: Obj = {}
        self.conditions: list[Obj] = [cond("PodsReady", "False", "WaitForStart",
                                           "Not all pods are ready or succeeded", created)]
        self.admission: Obj | None = None
        self.checks: list[Obj] = []
        self.requeue_state: Obj | None = None
        self.evictions = 0
        self.requests: list[Obj] = []
        self.templates: list[Obj] = []
        self.times: list[str] = [created]

    # the Job, as kubectl applied it and the Job controller and Kueue changed it
    def job(self) -> Obj:
        labels = {"kueue.x-k8s.io/queue-name": LQ}
        selector_labels = {"batch.kubernetes.io/controller-uid": self.uid, "batch.kubernetes.io/job-name": self.name,
                           "controller-uid": self.uid, "job-name": self.name}
        applied_job = {"apiVersion": "batch/v1", "kind": "Job",
                       "metadata": {"name": self.name, "namespace": NS, "labels": labels,
                                    "annotations": {"provreq.kueue.x-k8s.io/ValidUntilSeconds": "1800"}},
                       "spec": {"parallelism": self.pods, "completions": self.pods, "suspend": True,
                                "template": {"spec": {"containers": [{"name": "trainer",
                                                                      "image": container(self.gpus)["image"]}]}}}}
        annotations = {"provreq.kueue.x-k8s.io/ValidUntilSeconds": "1800",
                       "kubectl.kubernetes.io/last-applied-configuration": last_applied(applied_job)}
        entries = [managed("kubectl-client-side-apply", "Update", "batch/v1", self.created,
                           "f:metadata.f:labels.f:kueue.x-k8s.io/queue-name", "f:spec.f:parallelism",
                           "f:spec.f:template.f:spec.f:containers")]
        if not self.suspend:
            entries.append(managed("kueue", "Update", "batch/v1", self.times[-1], "f:spec.f:suspend",
                                   "f:spec.f:template.f:spec.f:nodeSelector"))
        entries.append(managed("kube-controller-manager", "Update", "batch/v1", self.times[-1],
                               "f:status.f:conditions", sub="status"))
        spec = {"backoffLimit": 6, "completionMode": "NonIndexed", "completions": self.pods, "manualSelector": False,
                "parallelism": self.pods, "podReplacementPolicy": "TerminatingOrFailed",
                "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": self.uid}},
                "suspend": self.suspend,
                "template": {"metadata": {"creationTimestamp": None, "labels": selector_labels},
                             "spec": pod_spec(self.gpus)}}
        return {"apiVersion": "batch/v1", "kind": "Job",
                "metadata": {"annotations": annotations, "creationTimestamp": self.created, "generation": 2 if not self.suspend else 1,
                             "labels": {**labels, **selector_labels}, "managedFields": entries, "name": self.name,
                             "namespace": NS, "resourceVersion": rv(), "uid": self.uid},
                "spec": spec, "status": self.job_status}

    def workload(self) -> Obj:
        status: Obj = {"conditions": self.conditions,
                       "resourceRequests": [{"name": "main", "resources": {
                           "cpu": str(8 * self.pods), "memory": f"{64 * self.pods}Gi",
                           "nvidia.com/gpu": str(self.gpus * self.pods)}}]}
        if self.admission is not None:
            status["admission"] = self.admission
        if self.checks:
            status["admissionChecks"] = self.checks
        if self.requeue_state is not None:
            status["requeueState"] = self.requeue_state
        if self.evictions:
            status["schedulingStats"] = {"evictions": [{"count": self.evictions, "reason": "AdmissionCheck",
                                                        "underlyingCause": ""}]}
        entries = [managed("kueue", "Update", KUEUE, self.created, "f:metadata.f:ownerReferences", "f:spec"),
                   managed("kueue-admission", "Apply", KUEUE, self.times[-1], "f:status.f:admission",
                           "f:status.f:conditions", sub="status"),
                   managed("kueue.x-k8s.io/provisioning-request", "Apply", KUEUE, self.times[-1],
                           "f:status.f:admissionChecks", sub="status")]
        return {"apiVersion": KUEUE, "kind": "Workload",
                "metadata": {"annotations": {"provreq.kueue.x-k8s.io/ValidUntilSeconds": "1800"},
                             "creationTimestamp": self.created,
                             "finalizers": ["kueue.x-k8s.io/resource-in-use"], "generation": 1,
                             "labels": {"kueue.x-k8s.io/job-uid": self.uid}, "managedFields": entries,
                             "name": self.workload_name, "namespace": NS,
                             "ownerReferences": [{"apiVersion": "batch/v1", "blockOwnerDeletion": True,
                                                  "controller": True, "kind": "Job", "name": self.name,
                                                  "uid": self.uid}],
                             "resourceVersion": rv(), "uid": self.workload_uid},
                "spec": {"active": True, "podSets": [{
                    "count": self.pods, "name": "main",
                    "template": {"metadata": {"labels": {"batch.kubernetes.io/controller-uid": self.uid,
                                                         "batch.kubernetes.io/job-name": self.name,
                                                         "controller-uid": self.uid, "job-name": self.name}},
                                 "spec": pod_spec(self.gpus)}}],
                    "priority": 0, "queueName": LQ},
                "status": status}

    # what happens to it
    def reserve(self, at: str, flavor: str = FLAVOR) -> None:
        self.times.append(at)
        self.admission = {"clusterQueue": CQ, "podSetAssignments": [{
            "count": self.pods, "flavors": {"cpu": flavor, "memory": flavor, "nvidia.com/gpu": flavor},
            "name": "main", "resourceUsage": {"cpu": str(8 * self.pods), "memory": f"{64 * self.pods}Gi",
                                              "nvidia.com/gpu": str(self.gpus * self.pods)}}]}
        self._set(cond("QuotaReserved", "True", "QuotaReserved", f"Quota reserved in ClusterQueue {CQ}", at))
        self._set(cond("Admitted", "False", "UnsatisfiedAdmissionChecks", "The workload has not all checks ready", at))
        evicted = self._get("Evicted")
        if evicted is not None and evicted["status"] == "True":
            self._set(cond("Evicted", "False", "QuotaReserved", f"Previously: {evicted['message']}", at))
        if not self.checks:
            self.checks = [{"lastTransitionTime": at, "message": "", "name": CHECK, "state": "Pending"}]

    def request(self, attempt: int, at: str) -> Obj:
        self.times.append(at)
        name = provisioning_request_name(self.workload_name, CHECK, attempt)
        template = pod_template_name(name, "main")
        pr_uid = f"{self.workload_uid[:-3]}{attempt:03d}"
        pr = {"apiVersion": PR_API, "kind": "ProvisioningRequest",
              "metadata": {"creationTimestamp": at, "generation": 1,
                           "labels": {"kueue.x-k8s.io/managed": "true"},
                           "managedFields": [managed("kueue", "Update", PR_API, at, "f:metadata.f:labels",
                                                     "f:metadata.f:ownerReferences", "f:spec")],
                           "name": name, "namespace": NS,
                           "ownerReferences": [{"apiVersion": KUEUE, "blockOwnerDeletion": True, "controller": True,
                                                "kind": "Workload", "name": self.workload_name,
                                                "uid": self.workload_uid}],
                           "resourceVersion": rv(), "uid": pr_uid},
              "spec": {"parameters": {"ValidUntilSeconds": "1800", "noRetry": "true"},
                       "podSets": [{"count": self.pods, "podTemplateRef": {"name": template}}],
                       "provisioningClassName": "check-capacity.autoscaling.x-k8s.io"},
              "status": {}}
        spec = pod_spec(self.gpus)
        spec["nodeSelector"] = {"cloud.google.com/gke-accelerator": "nvidia-tesla-a100"}
        spec["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = str(self.gpus)
        pt = {"apiVersion": "v1", "kind": "PodTemplate",
              "metadata": {"creationTimestamp": at, "labels": {"kueue.x-k8s.io/managed": "true"},
                           "managedFields": [managed("kueue", "Update", "v1", at, "f:metadata.f:labels",
                                                     "f:metadata.f:ownerReferences", "f:template")],
                           "name": template, "namespace": NS,
                           "ownerReferences": [{"apiVersion": PR_API, "blockOwnerDeletion": True, "controller": True,
                                                "kind": "ProvisioningRequest", "name": name, "uid": pr_uid}],
                           "resourceVersion": rv(), "uid": f"{pr_uid[:-4]}f{attempt:03d}"},
              "template": {"metadata": {"creationTimestamp": None,
                                        "labels": {"batch.kubernetes.io/controller-uid": self.uid,
                                                   "batch.kubernetes.io/job-name": self.name,
                                                   "controller-uid": self.uid, "job-name": self.name}},
                           "spec": spec}}
        self.requests.append(pr)
        self.templates.append(pt)
        return pr

    def autoscaler(self, pr: Obj, type_: str, reason: str, message: str, at: str, status: str = "True") -> None:
        """Cluster Autoscaler's ``AddOrUpdateCondition``: replace the condition, LTT = now."""
        self.times.append(at)
        conds = [cd for cd in pr["status"].get("conditions", []) if cd["type"] != type_]
        conds.append(cond(type_, status, reason, message, at))
        pr["status"]["conditions"] = conds
        pr["metadata"]["resourceVersion"] = rv()
        if not any(e["manager"] == "cluster-autoscaler" for e in pr["metadata"]["managedFields"]):
            pr["metadata"]["managedFields"].append(
                managed("cluster-autoscaler", "Update", PR_API, at, "f:status.f:conditions", sub="status"))
        for e in pr["metadata"]["managedFields"]:
            if e["manager"] == "cluster-autoscaler":
                e["time"] = at

    def check(self, state: str, message: str, at: str, **extra: Any) -> None:
        self.times.append(at)
        old = self.checks[0]
        moved = old["state"] != state
        self.checks = [{**{k: v for k, v in old.items() if k not in ("podSetUpdates",)},
                        "lastTransitionTime": at if moved else old["lastTransitionTime"],
                        "message": message, "state": state, **extra}]

    def admit(self, at: str) -> None:
        self.times.append(at)
        self._set(cond("Admitted", "True", "Admitted", "The workload is admitted", at))
        self.suspend = False

    def evict_for_retry(self, at: str, message: str) -> None:
        self.times.append(at)
        self._set(cond("Evicted", "True", "AdmissionCheck",
                       f'Evicted due to AdmissionCheck in Retry state: "{CHECK}" ({message})', at))
        old = self.checks[0]
        self.checks = [{"lastTransitionTime": at, "message": "Reset to Pending after eviction. Previously: Retry",
                        "name": CHECK, "requeueAfterSeconds": old.get("requeueAfterSeconds"),
                        "retryCount": (old.get("retryCount") or 0) + 1, "state": "Pending"}]
        self.evictions += 1
        self.requests, self.templates = [], []  # CleanupProvisioningRequestsOnEviction

    def release(self, at: str) -> None:
        self.times.append(at)
        self.admission = None
        self._set(cond("QuotaReserved", "False", "PendingEvaluation", "The workload has no quota reservation",
                       at))
        self._set(cond("Admitted", "False", "NoReservation", "The workload has no reservation", at))
        self._set(cond("Requeued", "True", "BackoffFinished", "The workload backoff was finished", at))

    def _get(self, type_: str) -> Obj | None:
        return next((cd for cd in self.conditions if cd["type"] == type_), None)

    def _set(self, new: Obj) -> None:
        old = self._get(new["type"])
        if old is not None and old["status"] == new["status"]:
            new = {**new, "lastTransitionTime": old["lastTransitionTime"]}
        self.conditions = [cd for cd in self.conditions if cd["type"] != new["type"]] + [new]

    def objects(self) -> list[Obj]:
        return [self.job(), self.workload(), *self.requests, *self.templates]


def job_conditions_running(story: Story, at: str) -> None:
    story.job_status = {"active": story.pods, "ready": story.pods, "startTime": at, "terminating": 0,
                        "uncountedTerminatedPods": {}}


def job_conditions_suspended(story: Story) -> None:
    story.job_status = {"conditions": [{"lastProbeTime": story.created, "lastTransitionTime": story.created,
                                        "message": "Job suspended", "reason": "JobSuspended", "status": "True",
                                        "type": "Suspended"}]}


# --- the clusters ------------------------------------------------------------------------------------


def healthy_stories() -> list[Story]:
    a = Story("train-a", "6f1c2b1e-3a55-4c1a-9d1e-2b7f0c9a1d01", "2026-11-20T09:30:00Z", pods=3)
    a.reserve("2026-11-20T09:30:01Z")
    pr = a.request(1, "2026-11-20T09:30:02Z")
    a.autoscaler(pr, "Accepted", "Accepted", "ProvisioningRequest is accepted by ClusterAutoscaler",
                 "2026-11-20T09:30:05Z")
    a.autoscaler(pr, "Provisioned", "CapacityIsFound", "Capacity is found in the cluster", "2026-11-20T09:30:05Z")
    a.check("Ready", "Capacity is found in the cluster", "2026-11-20T09:30:06Z",
            podSetUpdates=[{"annotations": {
                "autoscaling.x-k8s.io/consume-provisioning-request": pr["metadata"]["name"],
                "autoscaling.x-k8s.io/provisioning-class-name": "check-capacity.autoscaling.x-k8s.io"},
                "name": "main"}])
    a.admit("2026-11-20T09:30:06Z")
    a._set(cond("PodsReady", "True", "Started", "All pods reached readiness and the workload is running",
                "2026-11-20T09:30:48Z"))
    a.autoscaler(pr, "BookingExpired", "CapacityBookingConsumed", "Capacity booking consumed: all pods scheduled",
                 "2026-11-20T09:30:55Z")
    job_conditions_running(a, "2026-11-20T09:30:06Z")

    b = Story("train-b", "8d3e4a20-91b4-4f0e-a7c2-55e1d6b3c702", "2026-11-20T09:58:00Z", pods=2)
    b.reserve("2026-11-20T09:58:01Z")
    first = b.request(1, "2026-11-20T09:58:02Z")
    b.autoscaler(first, "Accepted", "Accepted", "ProvisioningRequest is accepted by ClusterAutoscaler",
                 "2026-11-20T09:58:05Z")
    b.autoscaler(first, "Failed", "CapacityIsNotFound", "CA could not find requested capacity",
                 "2026-11-20T09:58:05Z")
    b.check("Retry", "Retrying after failure: CA could not find requested capacity", "2026-11-20T09:58:06Z",
            requeueAfterSeconds=60)
    b.requeue_state = {"requeueAt": "2026-11-20T09:59:06Z"}
    b.evict_for_retry("2026-11-20T09:59:06Z", "Retrying after failure: CA could not find requested capacity")
    b.release("2026-11-20T09:59:07Z")
    b.reserve("2026-11-20T09:59:08Z")
    second = b.request(2, "2026-11-20T09:59:09Z")
    b.autoscaler(second, "Accepted", "Accepted", "ProvisioningRequest is accepted by ClusterAutoscaler",
                 "2026-11-20T10:00:00Z")
    job_conditions_suspended(b)

    d = Story("tune-d", "1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c04", "2026-11-20T09:59:20Z", pods=1)
    d.reserve("2026-11-20T09:59:21Z")
    pr_d = d.request(1, "2026-11-20T09:59:22Z")
    d.autoscaler(pr_d, "Accepted", "Accepted", "ProvisioningRequest is accepted by ClusterAutoscaler",
                 "2026-11-20T09:59:29Z")
    d.autoscaler(pr_d, "Failed", "CapacityIsNotFound", "CA could not find requested capacity",
                 "2026-11-20T09:59:29Z")
    d.check("Retry", "Retrying after failure: CA could not find requested capacity", "2026-11-20T09:59:30Z",
            requeueAfterSeconds=60)
    d.requeue_state = {"requeueAt": "2026-11-20T10:00:30Z"}
    job_conditions_suspended(d)

    c = Story("eval-c", "5c6d7e8f-9a0b-4c1d-8e2f-3a4b5c6d7e03", "2026-11-20T09:50:00Z", pods=4)
    c._set(cond("QuotaReserved", "False", "WaitingForQuota",
                "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu "
                "in flavor a100, 4 more needed", "2026-11-20T09:50:01Z"))
    c._set(cond("Admitted", "False", "NoReservation", "The workload has no reservation", "2026-11-20T09:50:01Z"))
    c.checks = [{"lastTransitionTime": "2026-11-20T09:50:01Z", "message": "", "name": CHECK, "state": "Pending"}]
    job_conditions_suspended(c)
    return [a, b, d, c]


def unmodelled(stories: list[Story]) -> list[Obj]:
    """What ``kubectl get all,events,configmaps -A`` adds: kinds the model does not read."""
    a = stories[0]
    pods = [{"apiVersion": "v1", "kind": "Pod",
             "metadata": {"annotations": {"autoscaling.x-k8s.io/consume-provisioning-request": a.requests[0]["metadata"]["name"],
                                          "autoscaling.x-k8s.io/provisioning-class-name": "check-capacity.autoscaling.x-k8s.io"},
                          "creationTimestamp": "2026-11-20T09:30:06Z", "generateName": f"{a.name}-",
                          "labels": {"batch.kubernetes.io/controller-uid": a.uid, "batch.kubernetes.io/job-name": a.name,
                                     "controller-uid": a.uid, "job-name": a.name},
                          "name": f"{a.name}-{suffix}", "namespace": NS,
                          "ownerReferences": [{"apiVersion": "batch/v1", "blockOwnerDeletion": True, "controller": True,
                                               "kind": "Job", "name": a.name, "uid": a.uid}],
                          "resourceVersion": rv(), "uid": f"9e8d7c6b-5a49-4382-9170-6e5d4c3b2a{i:02d}"},
             "spec": {**pod_spec(a.gpus), "nodeName": f"gke-ml-a100-pool-7f3c-{suffix}"},
             "status": {"phase": "Running", "podIP": f"10.8.{i}.12", "qosClass": "Burstable",
                        "startTime": "2026-11-20T09:30:20Z"}}
            for i, suffix in enumerate(("x2k9q", "m7p4d", "t5w8n", "c3v6b"))]
    events = [{"apiVersion": "v1", "kind": "Event", "count": 1, "firstTimestamp": "2026-11-20T10:00:00Z",
               "involvedObject": {"apiVersion": KUEUE, "kind": "Workload", "name": stories[1].workload_name,
                                  "namespace": NS, "uid": stories[1].workload_uid},
               "lastTimestamp": "2026-11-20T10:00:00Z",
               "message": f'Created ProvisioningRequest: "{stories[1].requests[0]["metadata"]["name"]}"',
               "metadata": {"creationTimestamp": "2026-11-20T09:59:09Z",
                            "name": f"{stories[1].workload_name}.1879a2b3c4d5e6f7", "namespace": NS,
                            "resourceVersion": rv(), "uid": "0a1b2c3d-4e5f-4061-8273-94a5b6c7d8e9"},
               "reason": "ProvisioningRequestCreated", "reportingComponent": "", "reportingInstance": "",
               "source": {"component": "kueue-admission-check-controller"}, "type": "Normal"}]
    return [
        *pods,
        *events,
        {"apiVersion": "v1", "kind": "Service",
         "metadata": {"creationTimestamp": SETUP_TIME, "labels": {"control-plane": "controller-manager"},
                      "name": "kueue-webhook-service", "namespace": "kueue-system", "resourceVersion": rv(),
                      "uid": "7b8c9d0e-1f2a-4b3c-8d4e-5f6a7b8c9d0e"},
         "spec": {"clusterIP": "10.12.4.17", "clusterIPs": ["10.12.4.17"], "internalTrafficPolicy": "Cluster",
                  "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack",
                  "ports": [{"port": 443, "protocol": "TCP", "targetPort": 9443}],
                  "selector": {"control-plane": "controller-manager"}, "sessionAffinity": "None",
                  "type": "ClusterIP"},
         "status": {"loadBalancer": {}}},
        {"apiVersion": "apps/v1", "kind": "Deployment",
         "metadata": {"annotations": {"deployment.kubernetes.io/revision": "1"}, "creationTimestamp": SETUP_TIME,
                      "generation": 1, "labels": {"control-plane": "controller-manager"},
                      "name": "kueue-controller-manager", "namespace": "kueue-system", "resourceVersion": rv(),
                      "uid": "8c9d0e1f-2a3b-4c4d-9e5f-6a7b8c9d0e1f"},
         "spec": {"replicas": 1, "selector": {"matchLabels": {"control-plane": "controller-manager"}},
                  "template": {"metadata": {"labels": {"control-plane": "controller-manager"}},
                               "spec": {"containers": [{"name": "manager",
                                                        "image": "registry.k8s.io/kueue/kueue:v0.15.2"}]}}},
         "status": {"availableReplicas": 1, "readyReplicas": 1, "replicas": 1, "updatedReplicas": 1}},
        {"apiVersion": "v1", "kind": "ConfigMap",
         "data": {"controller_manager_config.yaml": "apiVersion: config.kueue.x-k8s.io/v1beta2\n"
                                                    "kind: Configuration\n"},
         "metadata": {"creationTimestamp": SETUP_TIME, "name": "kueue-manager-config", "namespace": "kueue-system",
                      "resourceVersion": rv(), "uid": "9d0e1f2a-3b4c-4d5e-8f6a-7b8c9d0e1f2a"}},
    ]


def troubled_stories() -> list[Story]:
    stories = healthy_stories()
    # Admitted while its check is Pending: the check was reset, the admission never undone
    e = Story("serve-e", "2b3c4d5e-6f7a-4b8c-9d0e-1f2a3b4c5e05", "2026-11-20T09:10:00Z", pods=1, gpus=1)
    e.reserve("2026-11-20T09:10:01Z")
    pr_e = e.request(1, "2026-11-20T09:10:02Z")
    e.autoscaler(pr_e, "Accepted", "Accepted", "ProvisioningRequest is accepted by ClusterAutoscaler",
                 "2026-11-20T09:10:05Z")
    e.admit("2026-11-20T09:10:06Z")
    job_conditions_running(e, "2026-11-20T09:10:06Z")
    # two live requests for one check: attempt 1 still Accepted when attempt 2 was made
    g = Story("train-g", "3c4d5e6f-7a8b-4c9d-8e0f-2a3b4c5d6f07", "2026-11-20T09:20:00Z", pods=1, gpus=1)
    g.reserve("2026-11-20T09:20:01Z")
    for attempt, at in ((1, "2026-11-20T09:20:02Z"), (2, "2026-11-20T09:21:02Z")):
        pr = g.request(attempt, at)
        g.autoscaler(pr, "Accepted", "Accepted", "ProvisioningRequest is accepted by ClusterAutoscaler",
                     at.replace(":02Z", ":09Z"))
    job_conditions_suspended(g)
    # a Retry overdue for 40 minutes: its workload holds no quota, so nothing moves it
    h = Story("sweep-h", "4d5e6f7a-8b9c-4d0e-9f1a-3b4c5d6e7f08", "2026-11-20T09:15:00Z", pods=1, gpus=1)
    h.reserve("2026-11-20T09:15:01Z")
    pr_h = h.request(1, "2026-11-20T09:15:02Z")
    h.autoscaler(pr_h, "Failed", "CapacityIsNotFound", "CA could not find requested capacity", "2026-11-20T09:19:00Z")
    h.check("Retry", "Retrying after failure: CA could not find requested capacity", "2026-11-20T09:19:00Z",
            requeueAfterSeconds=60)
    h.release("2026-11-20T09:19:30Z")
    h.requests, h.templates = [], []
    job_conditions_suspended(h)
    # Provisioned for 20 minutes, the check still Pending, quota held for an hour
    k = Story("bench-k", "5e6f7a8b-9c0d-4e1f-8a2b-4c5d6e7f8a09", "2026-11-20T08:55:00Z", pods=1, gpus=1)
    k.reserve("2026-11-20T08:55:01Z")
    pr_k = k.request(1, "2026-11-20T08:55:02Z")
    k.autoscaler(pr_k, "Accepted", "Accepted", "ProvisioningRequest is accepted by ClusterAutoscaler",
                 "2026-11-20T08:55:09Z")
    k.autoscaler(pr_k, "Provisioned", "CapacityIsFound", "Capacity is found in the cluster", "2026-11-20T09:40:00Z")
    job_conditions_suspended(k)
    return stories + [e, g, h, k]


def orphans() -> list[Obj]:
    """A request whose Workload is gone (its uid matches no object) with its template, and the
    template of a second attempt whose request is gone."""
    gone = Story("old-f", "6f7a8b9c-0d1e-4f2a-9b3c-5d6e7f8a9b06", "2026-11-19T22:00:00Z", pods=1, gpus=1)
    gone.reserve("2026-11-19T22:00:01Z")
    pr = gone.request(1, "2026-11-19T22:00:02Z")
    gone.autoscaler(pr, "Accepted", "Accepted", "ProvisioningRequest is accepted by ClusterAutoscaler",
                    "2026-11-19T22:00:09Z")
    gone.request(2, "2026-11-19T22:30:02Z")
    return [pr, *gone.templates]


def misconfiguration() -> list[Obj]:
    return [
        applied({"apiVersion": KUEUE, "kind": "ProvisioningRequestConfig",
                 "metadata": {"name": "a100-best-effort", "uid": "a1b2c3d4-0000-4a5b-8c6d-7e8f9a0b1c10"},
                 "spec": {"provisioningClassName": "best-effort-atomic-scale-up.autoscaling.x-k8s.io",
                          "managedResources": ["nvidia.com/gpus"]}}, by_kueue_status=False),
        applied({"apiVersion": KUEUE, "kind": "AdmissionCheck",
                 "metadata": {"name": "a100-scale-up", "uid": "a1b2c3d4-0000-4a5b-8c6d-7e8f9a0b1c11"},
                 "spec": {"controllerName": "kueue.x-k8s.io/provisioning-request",
                          "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "ProvisioningRequestConfig",
                                         "name": "a100-best-effort"}},
                 "status": {"conditions": [cond("Active", "True", "Active", "The admission check is active",
                                                "2026-11-02T08:00:01Z")]}}),
        applied({"apiVersion": KUEUE, "kind": "AdmissionCheck",
                 "metadata": {"name": "h100-capacity", "uid": "a1b2c3d4-0000-4a5b-8c6d-7e8f9a0b1c12"},
                 "spec": {"controllerName": "kueue.x-k8s.io/provisioning-request",
                          "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "ProvisioningRequestConfig",
                                         "name": "h100-config"}},
                 "status": {"conditions": [cond("Active", "False", "BadParametersRef",
                                                'provisioningrequestconfigs.kueue.x-k8s.io "h100-config" not found',
                                                "2026-11-02T08:00:01Z")]}}),
        applied({"apiVersion": KUEUE, "kind": "ClusterQueue",
                 "metadata": {"name": "research-queue", "uid": "a1b2c3d4-0000-4a5b-8c6d-7e8f9a0b1c13",
                              "finalizers": ["kueue.x-k8s.io/resource-in-use"]},
                 "spec": {"namespaceSelector": {}, "queueingStrategy": "BestEffortFIFO", "stopPolicy": "None",
                          "resourceGroups": [{"coveredResources": ["cpu", "nvidia.com/gpu"], "flavors": [
                              {"name": FLAVOR, "resources": [{"name": "cpu", "nominalQuota": "32"},
                                                             {"name": "nvidia.com/gpu", "nominalQuota": "8"}]}]}],
                          "admissionChecksStrategy": {"admissionChecks": [
                              {"name": "a100-scale-up"}, {"name": "h100-capacity"}, {"name": "tpu-capacity"}]}},
                 "status": {"conditions": [cond("Active", "False", "AdmissionCheckNotFound",
                                                "Can't admit new workloads: references missing AdmissionCheck(s): "
                                                "tpu-capacity, references inactive AdmissionCheck(s): h100-capacity",
                                                "2026-11-02T08:00:02Z")],
                            "admittedWorkloads": 0, "reservingWorkloads": 0, "pendingWorkloads": 0}}),
    ]


# --- writing ---------------------------------------------------------------------------------------

_KIND_ORDER = ["ResourceFlavor", "AdmissionCheck", "ProvisioningRequestConfig", "ClusterQueue", "LocalQueue",
               "Job", "JobSet", "PyTorchJob", "Workload", "ProvisioningRequest", "PodTemplate", "Cohort"]
_RESOURCES = {  # kind -> (api prefix, plural, namespaced)
    "ResourceFlavor": ("/apis/kueue.x-k8s.io/v1beta2", "resourceflavors", False),
    "AdmissionCheck": ("/apis/kueue.x-k8s.io/v1beta2", "admissionchecks", False),
    "ProvisioningRequestConfig": ("/apis/kueue.x-k8s.io/v1beta2", "provisioningrequestconfigs", False),
    "ClusterQueue": ("/apis/kueue.x-k8s.io/v1beta2", "clusterqueues", False),
    "LocalQueue": ("/apis/kueue.x-k8s.io/v1beta2", "localqueues", True),
    "Job": ("/apis/batch/v1", "jobs", True),
    "JobSet": ("/apis/jobset.x-k8s.io/v1alpha2", "jobsets", True),
    "PyTorchJob": ("/apis/kubeflow.org/v1", "pytorchjobs", True),
    "Workload": ("/apis/kueue.x-k8s.io/v1beta2", "workloads", True),
    "ProvisioningRequest": ("/apis/autoscaling.x-k8s.io/v1", "provisioningrequests", True),
    "PodTemplate": ("/api/v1", "podtemplates", True),
    "Cohort": ("/apis/kueue.x-k8s.io/v1beta2", "cohorts", False),
}
_SELECTORS = {"Job": "kueue.x-k8s.io/queue-name", "JobSet": "kueue.x-k8s.io/queue-name",
              "PyTorchJob": "kueue.x-k8s.io/queue-name", "PodTemplate": "kueue.x-k8s.io/managed=true"}
HEADERS = {"Audit-Id": "", "Cache-Control": "no-cache, private", "Content-Type": "application/json",
           "X-Kubernetes-Pf-Flowschema-Uid": "5e1c9f2a-7b3d-4e8a-9c6f-0d2b4a6c8e1f",
           "X-Kubernetes-Pf-Prioritylevel-Uid": "a3d5f7b9-1c2e-4f6a-8b0d-2e4f6a8c0e2b"}
PAGE = 2


def _key(obj: Obj) -> tuple[int, str, str]:
    meta = obj["metadata"]
    return (_KIND_ORDER.index(obj["kind"]) if obj["kind"] in _KIND_ORDER else 99,
            meta.get("namespace", ""), meta["name"])


def dump(objects: list[Obj]) -> Obj:
    """``kubectl get ... -A -o json``: a v1 List; list items of every kind carry kind and apiVersion."""
    return {"apiVersion": "v1", "items": objects, "kind": "List", "metadata": {"resourceVersion": ""}}


def _continue_token(resource_version: str, last: Obj) -> str:
    meta = last["metadata"]
    start = f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else meta["name"]
    raw = json.dumps({"v": "meta.k8s.io/v1", "rv": int(resource_version), "start": start + "\u0000"},
                     separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def recording(objects: list[Obj], forbidden: tuple[str, ...] = (), user: str = "alice@example.com") -> Obj:
    """The API server's answers to a snapshot's list calls, ``limit=2`` pages with ``continue``.
    Items of built-in kinds (Job, PodTemplate) come without kind and apiVersion, as the server
    sends them in a list."""
    exchanges = []
    list_rv = str(_rv[0] + 100)
    for n, kind in enumerate(_KIND_ORDER):
        prefix, plural, namespaced = _RESOURCES[kind]
        path = f"{prefix}/{plural}"
        audit = f"4b5c6d7e-8f90-4a1b-9c2d-3e4f5a6b7c{n:02d}"
        if kind in forbidden:
            group = prefix.split("/")[2] if prefix.startswith("/apis/") else ""
            body = {"apiVersion": "v1", "code": 403, "details": {"kind": plural}, "kind": "Status",
                    "message": f'{plural} is forbidden: User "{user}" cannot list resource "{plural}" in API '
                               f'group "{group}" at the cluster scope',
                    "metadata": {}, "reason": "Forbidden", "status": "Failure"}
            selector = _SELECTORS.get(kind)
            query = {**({"labelSelector": selector} if selector else {}), "limit": str(PAGE)}
            exchanges.append({"request": {"method": "GET", "path": path, "query": query},
                              "response": {"status": 403, "headers": {**HEADERS, "Audit-Id": audit},
                                           "body": body}})
            continue
        items = sorted((o for o in objects if o["kind"] == kind), key=_key)
        api_version = prefix.removeprefix("/apis/").removeprefix("/api/")
        builtin = kind in ("Job", "PodTemplate")
        pages = [items[i:i + PAGE] for i in range(0, len(items), PAGE)] or [[]]
        token = ""
        selector = _SELECTORS.get(kind)
        for i, page in enumerate(pages):
            query = {**({"labelSelector": selector} if selector else {}), "limit": str(PAGE),
                     **({"continue": token} if token else {})}
            meta: Obj = {"resourceVersion": list_rv}
            if i + 1 < len(pages):
                token = _continue_token(list_rv, page[-1])
                meta["continue"] = token
                meta["remainingItemCount"] = len(items) - PAGE * (i + 1)
            shown = [{k: v for k, v in o.items() if k not in ("apiVersion", "kind")} if builtin else o
                     for o in page]
            exchanges.append({"request": {"method": "GET", "path": path, "query": query},
                              "response": {"status": 200, "headers": {**HEADERS, "Audit-Id": audit},
                                           "body": {"apiVersion": api_version, "items": shown,
                                                    "kind": f"{kind}List", "metadata": meta}}})
    return {"exchanges": exchanges}


def write(folder: str, objects: list[Obj], extra: list[Obj], forbidden: tuple[str, ...] = ()) -> dict[Path, str]:
    out_dir = HERE / folder
    ordered = sorted(objects, key=_key)
    everything = ordered + extra
    return {
        out_dir / "dump.json": json.dumps(dump(everything), indent=4, sort_keys=True) + "\n",
        out_dir / "dump.yaml": yaml.safe_dump(dump(everything), sort_keys=True, allow_unicode=True, width=1000),
        out_dir / "apiserver.json": json.dumps(recording(ordered, forbidden), indent=1, sort_keys=True) + "\n",
    }


def files() -> dict[Path, str]:
    """Every fixture file and its content (deterministic: the same on every run)."""
    _rv[0] = 41000
    base = setup()
    stories = healthy_stories()
    healthy = base + [o for s in stories for o in s.objects()]
    extra = unmodelled(stories)
    out = write("healthy", healthy, extra)
    out.update({p: t for p, t in write("restricted", copy.deepcopy(healthy), [], ("PodTemplate",)).items()
                if p.name == "apiserver.json"})
    troubled = base + misconfiguration() + [o for s in troubled_stories() for o in s.objects()] + orphans()
    out.update(write("troubled", troubled, extra))
    return out


def main() -> None:
    for path, text in files().items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        print(f"wrote {path.relative_to(HERE.parents[1])}")


if __name__ == "__main__":
    main()
