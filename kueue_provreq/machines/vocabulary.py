"""The typed vocabulary of the lifecycles: states, triggers, guards and the actors that fire them.

A ProvisioningRequest's phases and Cluster Autoscaler's triggers live in ``machines.requests``,
beside the table of request conditions they name, so that a new condition is one place.

Every name is a ``StrEnum`` so that mypy checks who may pass what, while the values stay the
plain strings upstream writes (``CheckState.READY == "Ready"``) and the names the diagrams,
the ``run --format jsonl`` records and other tools already read.
"""

from __future__ import annotations

from enum import StrEnum

from kueue_provreq.api import constants as c


class WorkloadPhase(StrEnum):
    """Where a Workload stands, read off its conditions (``phases.workload_phase``)."""

    PENDING = "Pending"
    BACKOFF = "Backoff"
    QUOTA_RESERVED = "QuotaReserved"
    ADMITTED = "Admitted"
    EVICTED = "Evicted"
    INACTIVE = "Inactive"
    FINISHED = "Finished"


class WorkloadTrigger(StrEnum):
    RESERVE_QUOTA = "reserve_quota"
    REVOKE_RESERVATION = "revoke_reservation"
    """KEP-993 only: a reservation that counted on preemptions that can no longer happen."""
    ADMIT = "admit"
    EVICT = "evict"
    RELEASE_QUOTA = "release_quota"
    UNSET_QUOTA = "unset_quota"
    SET_ASIDE = "set_aside"
    """A reservation not yet admitted is taken back: its LocalQueue or ClusterQueue is stopped,
    terminating or missing."""
    REQUEUE = "requeue"
    DELAY = "delay"
    DEACTIVATE = "deactivate"
    REACTIVATE = "reactivate"
    FINISH = "finish"


class CheckState(StrEnum):
    """``AdmissionCheckState.state`` (``status.admissionChecks[].state``)."""

    PENDING = c.CHECK_PENDING
    READY = c.CHECK_READY
    RETRY = c.CHECK_RETRY
    REJECTED = c.CHECK_REJECTED
    PREEMPTION_REQUIRED = c.CHECK_PREEMPTION_REQUIRED
    """KEP-993 only: the check asks for the workload's pending preemptions."""


class CheckTrigger(StrEnum):
    CONFIG_MISSING = "config_missing"
    REQUEST_NOT_NEEDED = "request_not_needed"
    REQUEST_FAILED = "request_failed"
    CAPACITY_REVOKED = "capacity_revoked"
    PROVISIONED = "provisioned"
    WAITING_FOR_CAPACITY = "waiting_for_capacity"
    REQUEST_PREEMPTION = "request_preemption"
    """KEP-993 only: the check asks for the workload's pending preemptions (the provisioning
    check when Cluster Autoscaler finds no capacity)."""
    NO_DECISION = "no_decision"
    RESET_ON_EVICTION = "reset_on_eviction"


class Guard(StrEnum):
    """The named guards of the declarations; a fire is given the truth value of each it needs."""

    ALL_CHECKS_READY = "all_checks_ready"
    DEACTIVATED = "deactivated"
    REQUEUED = "requeued"
    BACKOFF = "backoff"
    WITHIN_BACKOFF_LIMIT = "within_backoff_limit"
    KEEP_QUOTA = "keep_quota"
    NEWER_ATTEMPT = "newer_attempt"
    PREEMPTIONS_PENDING = "preemptions_pending"
    """KEP-993 only: quota the reservation counts on is still held by workloads it preempts."""


class Actor(StrEnum):
    """Who fires a trigger: the modelled controllers (the conformance format's names), and the
    actors outside them that scenarios, tests and users stand for."""

    SCHEDULER = "scheduler"
    WORKLOAD = "workload"
    PROVISIONING = "provisioning"
    JOB = "job"
    ADMISSION_CHECK = "admissioncheck"
    CLUSTER_QUEUE = "clusterqueue"
    LOCAL_QUEUE = "localqueue"
    CLUSTER_AUTOSCALER = "cluster-autoscaler"
    USER = "user"
    """A person or a test step: (de)activating, finishing, Kueue's test helpers."""
