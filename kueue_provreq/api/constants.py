"""Every upstream string the model writes or reads, each defined once.

Names follow upstream Go constant names where they exist, so a reader can
grep Kueue or Cluster Autoscaler for them.  Message templates use
``str.format`` placeholders.
"""

from typing import Final

# --- API groups and versions -------------------------------------------------
KUEUE_GROUP: Final = "kueue.x-k8s.io"
KUEUE_V1BETA1: Final = "kueue.x-k8s.io/v1beta1"
KUEUE_V1BETA2: Final = "kueue.x-k8s.io/v1beta2"
AUTOSCALING_GROUP: Final = "autoscaling.x-k8s.io"
AUTOSCALING_V1: Final = "autoscaling.x-k8s.io/v1"
AUTOSCALING_V1BETA1: Final = "autoscaling.x-k8s.io/v1beta1"
CORE_V1: Final = "v1"
BATCH_GROUP: Final = "batch"
BATCH_V1: Final = "batch/v1"
JOBSET_GROUP: Final = "jobset.x-k8s.io"
JOBSET_V1ALPHA2: Final = "jobset.x-k8s.io/v1alpha2"
KUBEFLOW_GROUP: Final = "kubeflow.org"
KUBEFLOW_V1: Final = "kubeflow.org/v1"
CONFIG_V1BETA2: Final = "config.kueue.x-k8s.io/v1beta2"

DEFAULT_NAMESPACE: Final = "default"
"""Where kubectl puts a namespaced object that names no namespace (with the default context)."""

# --- kinds --------------------------------------------------------------------
WORKLOAD: Final = "Workload"
ADMISSION_CHECK: Final = "AdmissionCheck"
CLUSTER_QUEUE: Final = "ClusterQueue"
LOCAL_QUEUE: Final = "LocalQueue"
COHORT: Final = "Cohort"
RESOURCE_FLAVOR: Final = "ResourceFlavor"
PROVISIONING_REQUEST_CONFIG: Final = "ProvisioningRequestConfig"
PROVISIONING_REQUEST: Final = "ProvisioningRequest"
POD_TEMPLATE: Final = "PodTemplate"
JOB: Final = "Job"
JOBSET: Final = "JobSet"
PYTORCH_JOB: Final = "PyTorchJob"

# --- job integrations (Configuration integrations.frameworks) -------------------
FRAMEWORK_JOB: Final = "batch/job"
FRAMEWORK_JOBSET: Final = "jobset.x-k8s.io/jobset"
FRAMEWORK_PYTORCH_JOB: Final = "kubeflow.org/pytorchjob"
FRAMEWORKS: Final = (
    FRAMEWORK_JOB, "kubeflow.org/mpijob", "ray.io/rayjob", "ray.io/raycluster", "ray.io/rayservice",
    FRAMEWORK_JOBSET, "kubeflow.org/paddlejob", FRAMEWORK_PYTORCH_JOB, "kubeflow.org/tfjob",
    "kubeflow.org/xgboostjob", "kubeflow.org/jaxjob", "workload.codeflare.dev/appwrapper",
    "trainer.kubeflow.org/trainjob", "sparkoperator.k8s.io/sparkapplication", "pod", "deployment",
    "statefulset", "leaderworkerset.x-k8s.io/leaderworkerset")
"""Every integration Kueue has built in at the modelled snapshot (its ``FrameworkName`` constants)."""
DEFAULT_LOCAL_QUEUE_NAME: Final = "default"
"""The LocalQueue a job without a queue-name label is put in when its namespace has one so named."""
DEFAULT_POD_SET_NAME: Final = "main"
# conditions that say a job finished: batch/v1, JobSet, Kubeflow
JOB_COMPLETE: Final = "Complete"
JOB_FAILED: Final = "Failed"
JOBSET_COMPLETED: Final = "Completed"
KUBEFLOW_JOB_SUCCEEDED: Final = "Succeeded"
PYTORCH_REPLICA_MASTER: Final = "Master"
PYTORCH_REPLICA_WORKER: Final = "Worker"
BATCH_JOB_NAME_LABEL: Final = "batch.kubernetes.io/job-name"
BATCH_MANAGED_LABELS: Final = ("job-name", "controller-uid", BATCH_JOB_NAME_LABEL, "batch.kubernetes.io/controller-uid")
"""Pod template labels the batch controller manages (with the legacy ``job-name`` and ``controller-uid``)."""

# --- controller names ---------------------------------------------------------
PROVISIONING_REQUEST_CONTROLLER_NAME: Final = "kueue.x-k8s.io/provisioning-request"
MULTIKUEUE_CONTROLLER_NAME: Final = "kueue.x-k8s.io/multikueue"
ADMISSION_FIELD_MANAGER: Final = "kueue-admission"
"""The field manager of Kueue's server-side applies of a Workload's admission status
(``constants.AdmissionName``, written by ``workload.PatchAdmissionStatus``)."""

# --- Workload condition types -------------------------------------------------
WORKLOAD_QUOTA_RESERVED: Final = "QuotaReserved"
WORKLOAD_ADMITTED: Final = "Admitted"
WORKLOAD_EVICTED: Final = "Evicted"
WORKLOAD_PREEMPTED: Final = "Preempted"
WORKLOAD_REQUEUED: Final = "Requeued"
WORKLOAD_FINISHED: Final = "Finished"
WORKLOAD_PODS_READY: Final = "PodsReady"
WORKLOAD_DEACTIVATION_TARGET: Final = "DeactivationTarget"
WORKLOAD_BLOCKED_ON_PREEMPTION_GATES: Final = "BlockedOnPreemptionGates"

# --- condition statuses -------------------------------------------------------
TRUE: Final = "True"
FALSE: Final = "False"
UNKNOWN: Final = "Unknown"

# --- Workload condition reasons -----------------------------------------------
REASON_QUOTA_RESERVED: Final = "QuotaReserved"
REASON_ADMITTED: Final = "Admitted"
REASON_PENDING_EVALUATION: Final = "PendingEvaluation"
REASON_WAITING_FOR_QUOTA: Final = "WaitingForQuota"
REASON_MISCONFIGURED: Final = "Misconfigured"
REASON_SUSPENDED: Final = "Suspended"
REASON_DEACTIVATED: Final = "Deactivated"
REASON_NO_RESERVATION: Final = "NoReservation"
REASON_UNSATISFIED_ADMISSION_CHECKS: Final = "UnsatisfiedAdmissionChecks"
REASON_ADMISSION_CHECK: Final = "AdmissionCheck"
REASON_PODS_READY_TIMEOUT: Final = "PodsReadyTimeout"
REASON_PREEMPTED: Final = "Preempted"
REASON_NODE_FAILURES: Final = "NodeFailures"
REASON_DEACTIVATED_DUE_TO: Final = "DeactivatedDueTo"
REASON_REQUEUING_LIMIT_EXCEEDED: Final = "RequeuingLimitExceeded"
REASON_BACKOFF_FINISHED: Final = "BackoffFinished"
REASON_REACTIVATED: Final = "Reactivated"
REASON_WAIT_FOR_START: Final = "WaitForStart"
REASON_WAIT_FOR_RECOVERY: Final = "WaitForRecovery"
REASON_STARTED: Final = "Started"
REASON_EVICTED_BY_TEST: Final = "EvictedByTest"
REASON_INADMISSIBLE: Final = "Inadmissible"
REASON_ON_HOLD: Final = "OnHold"
"""``WorkloadInadmissible``: what UnadmittedWorkloadsObservability off writes for every queue blocker."""
REASON_LQ_STOPPED: Final = "LocalQueueStopped"
REASON_CQ_STOPPED_EVICTION: Final = "ClusterQueueStopped"
REASON_LQ_RESTARTED: Final = "LocalQueueRestarted"
REASON_CQ_RESTARTED: Final = "ClusterQueueRestarted"
# written with UnadmittedWorkloadsObservability off, or by Kueue before WaitForStart existed
REASON_PENDING_LEGACY: Final = "Pending"
"""QuotaReserved=False reason on quota release with UnadmittedWorkloadsObservability off."""
REASON_PODS_READY_LEGACY: Final = "PodsReady"
"""A PodsReady=False reason written by Kueue before WaitForStart existed; read as WaitForStart."""
REASON_NO_RESERVATION_UNSATISFIED_CHECKS_LEGACY: Final = "NoReservationUnsatisfiedChecks"
REASON_UNSATISFIED_CHECKS_LEGACY: Final = "UnsatisfiedChecks"
REASON_FINISHED_SUCCEEDED: Final = "Succeeded"
REASON_FAILED_TO_START: Final = "FailedToStart"
"""``FailedToStartFinishedReason``: a job whose pod templates cannot take its admission."""
"""``WorkloadFinishedReasonSucceeded``: the job integration saw the Job complete."""

# --- Workload messages --------------------------------------------------------
MSG_QUOTA_RESERVED: Final = "Quota reserved in ClusterQueue {cq}"
MSG_PREVIOUSLY: Final = "Previously: {message}"
MSG_ADMITTED: Final = "The workload is admitted"
MSG_NO_RESERVATION: Final = "The workload has no reservation"
MSG_UNSATISFIED_CHECKS: Final = "The workload has not all checks ready"
MSG_EVICTED_BY_TEST: Final = "Evicted By Test"
MSG_RESET_CHECK: Final = "Reset to Pending after eviction. Previously: {state}"
MSG_FAILED_ADMISSION_CHECKS: Final = "The workload has failed admission checks"
MSG_DEACTIVATED: Final = "The workload is deactivated"
MSG_DEACTIVATED_DUE_TO: Final = "The workload is deactivated due to {message}"
MSG_REQUEUING_LIMIT_EXCEEDED: Final = "exceeding the maximum number of re-queuing retries"
MSG_PODS_READY_TIMEOUT: Final = "Exceeded the PodsReady timeout {namespace}/{name}"
MSG_BACKOFF_FINISHED: Final = "The workload backoff was finished"
MSG_REACTIVATED: Final = "The workload was reactivated"
MSG_PODS_NOT_READY: Final = "Not all pods are ready or succeeded"
MSG_PODS_READY: Final = "All pods reached readiness and the workload is running"
MSG_JOB_FINISHED: Final = "Job finished successfully"
MSG_CQ_INACTIVE: Final = "ClusterQueue {cq} is inactive"
#: workload.ErrNamespaceMismatch (pkg/workload/resources.go), the scheduler's Misconfigured message
MSG_NAMESPACE_MISMATCH: Final = "workload namespace doesn't match ClusterQueue selector"
MSG_CQ_MISSING: Final = "ClusterQueue {cq} doesn't exist"
MSG_LQ_NOT_FOUND: Final = "LocalQueue {lq} doesn't exist"
MSG_LQ_INACTIVE: Final = "LocalQueue {lq} is inactive"
MSG_LQ_GONE: Final = "LocalQueue {lq} is terminating or missing"
MSG_CQ_GONE: Final = "ClusterQueue {cq} is terminating or missing"
MSG_LQ_HELD: Final = "LocalQueue {lq} is stopped"
MSG_CQ_HELD: Final = "ClusterQueue {cq} is stopped"
MSG_EVICTED_LQ_STOPPED: Final = "The LocalQueue is stopped"
MSG_EVICTED_CQ_STOPPED: Final = "The ClusterQueue is stopped"
MSG_LQ_RESTARTED: Final = "The LocalQueue was restarted after being stopped"
MSG_CQ_RESTARTED: Final = "The ClusterQueue was restarted after being stopped"
MSG_PENDING_EVALUATION: Final = "Workload is pending evaluation in the scheduling queue"
MSG_NO_RESERVATION_UNSATISFIED_CHECKS_LEGACY: Final = "The workload has no reservation and not all checks ready"
EVICTED_RETRY_PREFIX: Final = "Evicted due to "
DEACTIVATED_DUE_TO_EVENT_PREFIX: Final = "Deactivated due to "

# --- AdmissionGatedBy (Beta, on by default since v0.19) -------------------------
ANNOTATION_ADMISSION_GATED_BY: Final = "kueue.x-k8s.io/admission-gated-by"
REASON_ADMISSION_GATED: Final = "AdmissionGated"
MSG_ADMISSION_GATED: Final = "Admission is gated by: {gates}"
MSG_ADMISSION_GATE_CLEARED: Final = "AdmissionGatedBy cleared, waiting for quota reservation"
EVENT_ADMISSION_GATED: Final = "AdmissionGated"
MSG_EVENT_ADMISSION_GATED: Final = "Workload admission is gated by: {gates}"
EVENT_ADMISSION_GATE_CLEARED: Final = "AdmissionGateCleared"
MSG_EVENT_ADMISSION_GATE_CLEARED: Final = "Admission gate cleared, workload is now admissible"
ADMISSION_GATE_MAX_LENGTH: Final = 63
"""``MaxGateNameLengthForAdmissionGatedBy``: the limit of a Job's ``spec.managedBy``."""

# --- event types ----------------------------------------------------------------
EVENT_TYPE_NORMAL: Final = "Normal"
EVENT_TYPE_WARNING: Final = "Warning"

# --- Workload events ----------------------------------------------------------
EVENT_QUOTA_RESERVED: Final = "QuotaReserved"
EVENT_ADMITTED: Final = "Admitted"
EVENT_ADMISSION_CHECK_REJECTED: Final = "AdmissionCheckRejected"
EVENT_EVICTED_DUE_TO: Final = "EvictedDueTo"
EVENT_STOPPED: Final = "Stopped"
EVENT_STARTED: Final = "Started"
EVENT_CREATED_WORKLOAD: Final = "CreatedWorkload"
MSG_CREATED_WORKLOAD: Final = "Created Workload: {namespace}/{name}"
MSG_JOB_ADMITTED: Final = "Admitted by clusterQueue {cq}"
MSG_MISSING_WORKLOAD: Final = "Missing Workload; unable to restore pod templates"
MSG_NOT_ADMITTED: Final = "Not admitted by cluster queue"
MSG_EVENT_QUOTA_RESERVED: Final = "Quota reserved in ClusterQueue {cq}, wait time since queued was {seconds}s"
MSG_EVENT_ADMITTED: Final = "Admitted by ClusterQueue {cq}, wait time since reservation was {seconds}s"

# --- AdmissionCheck -----------------------------------------------------------
CHECK_PENDING: Final = "Pending"
CHECK_READY: Final = "Ready"
CHECK_RETRY: Final = "Retry"
CHECK_REJECTED: Final = "Rejected"
# --- KEP-993 only (never implemented upstream; the kep-993-preemption semantics) ----
CHECK_PREEMPTION_REQUIRED: Final = "PreemptionRequired"
"""KEP-993: "The check might pass if there was fewer workloads. Proceed with any pending
workload preemption." """
PREEMPTION_POLICY_ANYTIME: Final = "Anytime"
PREEMPTION_POLICY_AFTER_CHECK_PASSED_OR_ON_DEMAND: Final = "AfterCheckPassedOrOnDemand"
MSG_KEP_993_PREEMPTIONS_PENDING: Final = "The workload waits for the workloads it preempts to release their quota"
"""``Admitted=False`` (reason ``WaitingForPreemptedWorkloads``) of a reservation whose checks are
all Ready but whose quota is still held by the workloads it preempts (KEP-993 only)."""
MSG_KEP_993_RESERVATION_REVOKED: Final = "The preemptions this quota reservation counted on can no longer happen"
"""``QuotaReserved=False`` (reason ``WaitingForQuota``) of a reservation taken back (KEP-993 only)."""
ADMISSION_CHECK_ACTIVE: Final = "Active"
REASON_AC_ACTIVE: Final = "Active"
REASON_BAD_PARAMETERS_REF: Final = "BadParametersRef"
MSG_AC_ACTIVE: Final = "The admission check is active"

# --- parameters reference errors (ConfigFromRef) -----------------------------
ERR_MISSING_PARAMETERS: Final = "missing parameters reference"
ERR_EMPTY_NAME: Final = "empty name: bad parameters reference"
ERR_WRONG_GROUP: Final = 'wrong group "{group}", expecting "kueue.x-k8s.io": bad parameters reference'
ERR_WRONG_KIND: Final = 'wrong kind "{kind}", expecting "ProvisioningRequestConfig": bad parameters reference'

# --- scheduler: flavor assignment and admission blocking ----------------------
REASON_NO_MATCHING_FLAVOR: Final = "NoMatchingFlavor"
REASON_EXCEEDS_MAX_QUOTA: Final = "ExceedsMaxQuota"
REASON_WAITING_FOR_PODS_READY: Final = "WaitingForPodsReady"
MSG_WAITING_FOR_PODS_READY: Final = "waiting for all admitted workloads to be in PodsReady condition"
MSG_ASSIGN_FLAVORS_FAILED: Final = "couldn't assign flavors to pod set {podset}: {reasons}"
MSG_REQUEST_EXCEEDS_CAPACITY: Final = ("insufficient quota for {resource} in flavor {flavor}, previously considered podsets "
                                      "requests ({assumed}) + current podset request ({request}) > maximum capacity ({capacity})")
MSG_FLAVORS_CONSIDERED: Final = "; Flavors considered: {attempts}"
MSG_INSUFFICIENT_UNUSED_QUOTA: Final = "insufficient unused quota for {resource} in flavor {flavor}, {more} more needed"
MSG_RESOURCE_UNAVAILABLE: Final = "resource {resource} unavailable in ClusterQueue"

# --- preemption within a ClusterQueue (pkg/scheduler/preemption) --------------
PREEMPTION_POLICY_NEVER: Final = "Never"
PREEMPTION_POLICY_LOWER_PRIORITY: Final = "LowerPriority"
PREEMPTION_POLICY_LOWER_OR_NEWER_EQUAL_PRIORITY: Final = "LowerOrNewerEqualPriority"
PREEMPTION_POLICY_ANY: Final = "Any"
MAY_STOP_SEARCH: Final = "MayStopSearch"
TRY_NEXT_FLAVOR: Final = "TryNextFlavor"
REASON_IN_CLUSTER_QUEUE: Final = "InClusterQueue"
"""``Preempted=True`` reason (``InClusterQueueReason``): preempted by a workload of its own queue."""
HUMAN_REASON_IN_CLUSTER_QUEUE: Final = "prioritization in the ClusterQueue"
REASON_IN_COHORT_RECLAMATION: Final = "InCohortReclamation"
HUMAN_REASON_IN_COHORT_RECLAMATION: Final = "reclamation within the cohort"
REASON_IN_COHORT_RECLAIM_WHILE_BORROWING: Final = "InCohortReclaimWhileBorrowing"
HUMAN_REASON_IN_COHORT_RECLAIM_WHILE_BORROWING: Final = "reclamation within the cohort while borrowing"
REASON_WAITING_FOR_PREEMPTED_WORKLOADS: Final = "WaitingForPreemptedWorkloads"
UNKNOWN_UID: Final = "UNKNOWN"
MSG_PREEMPTED: Final = ("Preempted to accommodate a workload (UID: {uid}, JobUID: {job_uid}) due to {reason}; "
                        "preemptor path: {preemptor_path}; preemptee path: {preemptee_path}")
MSG_PRIORITIES: Final = ("; preemptor effective priority: {preemptor} (base: {preemptor}, boost: 0); "
                         "preemptee effective priority: {preemptee} (base: {preemptee}, boost: 0)")
MSG_PENDING_PREEMPTION: Final = ". Pending the preemption of {count} workload(s)"
EVENT_PREEMPTED: Final = "Preempted"
EVENT_PREEMPTED_WORKLOAD: Final = "PreemptedWorkload"
MSG_EVENT_PREEMPTED_WORKLOAD: Final = "Preempted workload {namespace}/{name} (UID: {uid}) in ClusterQueue {cq}"

# --- ClusterQueue status ------------------------------------------------------
CQ_ACTIVE: Final = "Active"
REASON_CQ_READY: Final = "Ready"
MSG_CQ_READY: Final = "Can admit new workloads"
REASON_CQ_FLAVOR_NOT_FOUND: Final = "FlavorNotFound"
REASON_CQ_AC_NOT_FOUND: Final = "AdmissionCheckNotFound"
REASON_CQ_AC_INACTIVE: Final = "AdmissionCheckInactive"
REASON_CQ_STOPPED: Final = "Stopped"
REASON_CQ_TERMINATING: Final = "Terminating"
MSG_CQ_TERMINATING: Final = "Can't admit new workloads; clusterQueue is terminating"
LQ_ACTIVE: Final = "Active"
REASON_LQ_READY: Final = "Ready"
MSG_LQ_READY: Final = "Can submit new workloads to localQueue"
REASON_LQ_STOPPED_STATUS: Final = "Stopped"
MSG_LQ_STOPPED_STATUS: Final = "LocalQueue is stopped"
REASON_LQ_CQ_MISSING: Final = "ClusterQueueDoesNotExist"
REASON_LQ_CQ_INACTIVE: Final = "ClusterQueueIsInactive"
MSG_LQ_CQ_INACTIVE: Final = "Can't submit new workloads to clusterQueue"
FINALIZER_RESOURCE_IN_USE: Final = "kueue.x-k8s.io/resource-in-use"
MSG_CQ_CANT_ADMIT: Final = "Can't admit new workloads: {parts}."
MSG_CQ_STOPPED_PART: Final = "is stopped"
MSG_CQ_MISSING_FLAVORS_PART: Final = "references missing ResourceFlavor(s): {names}"
MSG_CQ_MISSING_CHECKS_PART: Final = "references missing AdmissionCheck(s): {names}"
MSG_CQ_INACTIVE_CHECKS_PART: Final = "references inactive AdmissionCheck(s): {names}"
REASON_CQ_MULTIPLE_MULTIKUEUE_CHECKS: Final = "MultipleMultiKueueAdmissionChecks"
REASON_CQ_MULTIKUEUE_CHECK_PER_FLAVOR: Final = "MultiKueueAdmissionCheckAppliedPerFlavor"
REASON_CQ_MULTIKUEUE_WITH_PROVISIONING_REQUEST: Final = "MultiKueueWithProvisioningRequest"
MSG_CQ_MULTIPLE_MULTIKUEUE_CHECKS_PART: Final = ("Cannot use multiple MultiKueue AdmissionChecks on the same "
                                                 "ClusterQueue, found: {names}")
MSG_CQ_MULTIKUEUE_CHECK_PER_FLAVOR_PART: Final = "Cannot specify MultiKueue AdmissionCheck per flavor, found: {names}"
MSG_CQ_MULTIKUEUE_WITH_PROVISIONING_REQUEST_PART: Final = ("Cannot use both MultiKueue and ProvisioningRequest "
                                                           "AdmissionChecks together, found: {multikueue}, "
                                                           "{provisioning}")
STOP_POLICY_HOLD: Final = "Hold"
STOP_POLICY_HOLD_AND_DRAIN: Final = "HoldAndDrain"
STRICT_FIFO: Final = "StrictFIFO"
BEST_EFFORT_FIFO: Final = "BestEffortFIFO"

# --- provisioning admission-check controller ---------------------------------
MSG_CHECK_INACTIVE: Final = "the check is not active"
MSG_NO_REQUEST_NEEDED: Final = "the provisioning request is not needed"
MSG_RETRY_AFTER_FAILURE: Final = "Retrying after failure: {message}"
MSG_RETRY_AFTER_BOOKING_EXPIRED: Final = "Retrying after booking expired: {message}"
EVENT_PROVISIONING_REQUEST_CREATED: Final = "ProvisioningRequestCreated"
MSG_PROVISIONING_REQUEST_CREATED: Final = "Created ProvisioningRequest: {name}"
EVENT_FAILED_CREATE: Final = "FailedCreate"
MSG_ERROR_CREATING_POD_TEMPLATE: Final = "Error creating PodTemplate {name}: {error}"
MSG_ERROR_CREATING_PROVISIONING_REQUEST: Final = "Error creating ProvisioningRequest {name}: {error}"
EVENT_ADMISSION_CHECK_UPDATED: Final = "AdmissionCheckUpdated"
MSG_CHECK_UPDATED: Final = "Admission check {name} updated state from {old} to {new}"
MSG_WITH_MESSAGE: Final = " with message: {message}"
ERR_INCONSISTENT_ASSIGNMENTS: Final = "inconsistent podSet assignments"
ERR_MISSING_ASSIGNMENT: Final = 'missing assignment for PodSet "{name}"'
POD_TEMPLATE_PREFIX: Final = "ppt"
OBJECT_NAME_MAX_PREFIX: Final = 247
OBJECT_NAME_HASH_LENGTH: Final = 5
ERR_POD_SET_UPDATE_CONFLICT: Final = ("invalid admission check PodSetUpdate: conflict for {field}: "
                                      "conflict for key={key}, value1={value1}, value2={value2}")
"""``podset.BadPodSetsUpdateError``: ``field`` is annotations, labels or nodeSelector."""
ERR_ALREADY_OWNED: Final = "Object {namespace}/{name} is already owned by another {kind} controller {owner}"
MERGE_IDENTICAL_POD_TEMPLATES: Final = "IdenticalPodTemplates"
MERGE_IDENTICAL_SCHEDULING_REQUIREMENTS: Final = "IdenticalWorkloadSchedulingRequirements"
EVENT_MESSAGE_LIMIT: Final = 1024
CONDITION_MESSAGE_LIMIT: Final = 32768

# --- labels and annotations ---------------------------------------------------
LABEL_MANAGED: Final = "kueue.x-k8s.io/managed"
LABEL_QUEUE_NAME: Final = "kueue.x-k8s.io/queue-name"
LABEL_JOB_UID: Final = "kueue.x-k8s.io/job-uid"
LABEL_POD_SET: Final = "kueue.x-k8s.io/podset"
#: kueue.WorkloadAnnotation: the Workload's name on a started job's pod templates
ANNOTATION_WORKLOAD: Final = "kueue.x-k8s.io/workload"
ANNOTATION_JOB_MIN_PARALLELISM: Final = "kueue.x-k8s.io/job-min-parallelism"
ANNOTATION_JOB_COMPLETIONS_EQUAL_PARALLELISM: Final = "kueue.x-k8s.io/job-completions-equal-parallelism"
ANNOTATION_JOB_STOPPING: Final = "kueue.x-k8s.io/stopping"
ANNOTATION_PROVREQ_PREFIX: Final = "provreq.kueue.x-k8s.io/"
ANNOTATION_CONSUME_PROVISIONING_REQUEST: Final = "autoscaling.x-k8s.io/consume-provisioning-request"
ANNOTATION_PROVISIONING_CLASS_NAME: Final = "autoscaling.x-k8s.io/provisioning-class-name"

# --- ProvisioningRequestConfig retryStrategy defaults (the CRD's) -------------
DEFAULT_BACKOFF_LIMIT_COUNT: Final = 3
DEFAULT_BACKOFF_BASE_SECONDS: Final = 60
DEFAULT_BACKOFF_MAX_SECONDS: Final = 1800

# --- ProvisioningRequest (Cluster Autoscaler) --------------------------------
PR_ACCEPTED: Final = "Accepted"
PR_PROVISIONED: Final = "Provisioned"
PR_FAILED: Final = "Failed"
PR_BOOKING_EXPIRED: Final = "BookingExpired"
PR_CAPACITY_REVOKED: Final = "CapacityRevoked"
CLASS_CHECK_CAPACITY: Final = "check-capacity.autoscaling.x-k8s.io"
# reasons and messages Cluster Autoscaler writes (provisioningrequest/conditions/conditions.go)
CA_REASON_ACCEPTED: Final = "Accepted"
CA_MSG_ACCEPTED: Final = "ProvisioningRequest is accepted by ClusterAutoscaler"
CA_REASON_CAPACITY_IS_FOUND: Final = "CapacityIsFound"
CA_MSG_CAPACITY_IS_FOUND: Final = "Capacity is found in the cluster"
CA_REASON_CAPACITY_IS_PROVISIONED: Final = "CapacityIsProvisioned"
CA_MSG_CAPACITY_IS_PROVISIONED: Final = "Capacity is found in the cluster"
"""``CapacityIsProvisionedMsg``: the same text as ``CapacityIsFoundMsg``."""
CA_REASON_CAPACITY_IS_NOT_FOUND: Final = "CapacityIsNotFound"
CA_MSG_CAPACITY_IS_NOT_FOUND: Final = "Capacity is not found, CA will try to find it later."
CA_MSG_FAILED_CAPACITY_NOT_FOUND: Final = "CA could not find requested capacity"
CA_REASON_EXPIRED: Final = "Expired"
CA_MSG_EXPIRED: Final = "ProvisioningRequest is expired"
CA_REASON_CAPACITY_RESERVATION_TIME_EXPIRED: Final = "CapacityReservationTimeExpired"
CA_MSG_CAPACITY_RESERVATION_TIME_EXPIRED: Final = "Capacity reservation time is expired"
CA_REASON_CAPACITY_BOOKING_CONSUMED: Final = "CapacityBookingConsumed"
CA_MSG_CAPACITY_BOOKING_CONSUMED: Final = "Capacity booking consumed: all pods scheduled"
# upstream CA never sets CapacityRevoked; provider classes may, with reasons of their own
CA_REASON_CAPACITY_REVOKED: Final = "CapacityRevoked"
CA_MSG_CAPACITY_REVOKED: Final = "Capacity was revoked"
CLASS_BEST_EFFORT_ATOMIC: Final = "best-effort-atomic-scale-up.autoscaling.x-k8s.io"
CA_CLASSES: Final = (CLASS_CHECK_CAPACITY, CLASS_BEST_EFFORT_ATOMIC)
"""The classes upstream Cluster Autoscaler processes; it ignores requests of any other class."""
PARAMETER_NO_RETRY: Final = "noRetry"
"""check-capacity: ``"true"`` turns "no capacity" into Failed=True instead of a retry."""

# --- feature gates ------------------------------------------------------------
GATE_KEEP_QUOTA_FOR_PROVREQ_RETRY: Final = "KeepQuotaForProvReqRetry"
GATE_CLEANUP_ON_EVICTION: Final = "CleanupProvisioningRequestsOnEviction"
GATE_UNADMITTED_OBSERVABILITY: Final = "UnadmittedWorkloadsObservability"
GATE_ADMISSION_GATED_BY: Final = "AdmissionGatedBy"
GATE_PARTIAL_ADMISSION: Final = "PartialAdmission"
GATE_SCHEDULING_EQUIVALENCE_HASHING: Final = "SchedulingEquivalenceHashing"
#: Topology-aware scheduling is not modelled; its gate (Beta, on since v0.14) still makes every
#: started job's pods carry their Workload's name (:data:`ANNOTATION_WORKLOAD`).
GATE_TOPOLOGY_AWARE_SCHEDULING: Final = "TopologyAwareScheduling"

# --- waitForPodsReady requeuing timestamps ------------------------------------
TIMESTAMP_EVICTION: Final = "Eviction"
TIMESTAMP_CREATION: Final = "Creation"

# --- metrics -----------------------------------------------------------------
METRIC_EVICTED_WORKLOADS: Final = "evicted_workloads_total"
METRIC_EVICTED_WORKLOADS_ONCE: Final = "evicted_workloads_once_total"
METRIC_PENDING_WORKLOADS: Final = "pending_workloads"
METRIC_RESERVING_ACTIVE_WORKLOADS: Final = "reserving_active_workloads"
METRIC_PREEMPTED_WORKLOADS: Final = "preempted_workloads_total"
"""Labels ``preempting_cluster_queue`` and ``reason`` (``Preempted``'s reason, e.g. ``InClusterQueue``)."""

# --- label selectors (metav1.LabelSelectorOperator) -----------------------------------------
SELECTOR_IN: Final = "In"
SELECTOR_NOT_IN: Final = "NotIn"
SELECTOR_EXISTS: Final = "Exists"
SELECTOR_DOES_NOT_EXIST: Final = "DoesNotExist"
#: The label the API server gives every namespace, its own name (corev1.LabelMetadataName).
LABEL_NAMESPACE_NAME: Final = "kubernetes.io/metadata.name"
