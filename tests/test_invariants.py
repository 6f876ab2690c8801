"""Each invariant stays silent on a healthy world and fires on a hand-built world that breaks it."""

from __future__ import annotations

from collections.abc import Callable

import attrs
import pytest
from kueue_provreq import invariants as inv
from kueue_provreq.api import constants as c
from kueue_provreq.api.config import Configuration, RequeuingStrategy, WaitForPodsReady
from kueue_provreq.api.frozen import FrozenMap
from kueue_provreq.api.meta import Condition, ObjectMeta, OwnerReference, Time
from kueue_provreq.api.objects import KubeObject
from kueue_provreq.api.provisioning import (
    PodTemplate,
    ProvisioningRequest,
    ProvisioningRequestConfig,
    ProvisioningRequestConfigSpec,
    ProvisioningRequestStatus,
)
from kueue_provreq.api.quantity import Quantity
from kueue_provreq.api.queues import (
    AdmissionCheck,
    AdmissionCheckSpec,
    AdmissionChecksStrategy,
    AdmissionCheckStrategyRule,
    ClusterQueue,
    ClusterQueueSpec,
    FlavorQuotas,
    ParametersReference,
    ResourceGroup,
    ResourceQuota,
)
from kueue_provreq.api.workload import (
    Admission,
    AdmissionCheckState,
    PodSet,
    PodSetAssignment,
    RequeueState,
    Workload,
    WorkloadSpec,
)
from kueue_provreq.world import World

NOW = Time(1_000)
NS = "default"


def cond(type_: str, status: str = c.TRUE, reason: str = "R", at: int = 900) -> Condition:
    return Condition(type_, status, reason, "", Time(at))


def workload(name: str = "wl", uid: str = "u-wl", *conds: Condition, checks: tuple[AdmissionCheckState, ...] = (),
             cpu: int = 1, admitted: bool = True, **status: object) -> Workload:
    adm = Admission("cq", (PodSetAssignment("main", FrozenMap({"cpu": "rf"}),
                                            FrozenMap({"cpu": Quantity.parse(cpu)}), 1),))
    if not conds:
        conds = (cond(c.WORKLOAD_QUOTA_RESERVED), cond(c.WORKLOAD_ADMITTED), cond(c.WORKLOAD_PODS_READY))
    wl = Workload(ObjectMeta(name=name, namespace=NS, uid=uid, creation_timestamp=Time(0)),
                  WorkloadSpec(pod_sets=(PodSet("main"),), queue_name="lq"))
    reserved = any(x.type == c.WORKLOAD_QUOTA_RESERVED and x.status == c.TRUE for x in conds)
    return wl.with_status(conditions=conds, admission=adm if (reserved and admitted) else None,
                          admission_checks=checks or (AdmissionCheckState("check", c.CHECK_READY, Time(900)),),
                          **status)


def request(attempt: int, *conds: Condition, owner: str = "wl", uid: str = "u-wl") -> ProvisioningRequest:
    return ProvisioningRequest(
        ObjectMeta(name=f"{owner}-check-{attempt}", namespace=NS, uid=f"u-pr-{owner}-{attempt}",
                   owner_references=(OwnerReference(c.KUEUE_V1BETA2, c.WORKLOAD, owner, uid, True),)),
        status=ProvisioningRequestStatus(conditions=conds))


def template(pr: ProvisioningRequest) -> PodTemplate:
    return PodTemplate(ObjectMeta(name=f"ppt-{pr.metadata.name}-main", namespace=NS, uid=f"u-pt-{pr.metadata.name}",
                                  owner_references=(OwnerReference(c.AUTOSCALING_V1, c.PROVISIONING_REQUEST,
                                                                   pr.metadata.name, pr.metadata.uid, True),)))


def base_objects(limit: int = 3) -> list[KubeObject]:
    from kueue_provreq.api.provisioning import RetryStrategy
    return [
        ClusterQueue(ObjectMeta(name="cq", uid="u-cq"), ClusterQueueSpec(
            resource_groups=(ResourceGroup(("cpu",), (FlavorQuotas("rf", (ResourceQuota("cpu", Quantity.parse(2)),)),)),),
            admission_checks_strategy=AdmissionChecksStrategy((AdmissionCheckStrategyRule("check"),)))),
        AdmissionCheck(ObjectMeta(name="check", uid="u-ac"), AdmissionCheckSpec(
            c.PROVISIONING_REQUEST_CONTROLLER_NAME,
            ParametersReference(c.KUEUE_GROUP, c.PROVISIONING_REQUEST_CONFIG, "prc"))),
        ProvisioningRequestConfig(ObjectMeta(name="prc", uid="u-prc"), ProvisioningRequestConfigSpec(
            c.CLASS_CHECK_CAPACITY, retry_strategy=RetryStrategy(limit, 60, 1800))),
    ]


def good_world() -> World:
    pr = request(1, cond(c.PR_PROVISIONED))
    return World([*base_objects(), workload(), pr, template(pr)])


def world_with(*objs: KubeObject) -> World:
    return World([*base_objects(), *objs])


CTX = inv.CheckContext(now=NOW)
QUIET = inv.CheckContext(now=NOW, quiescent=True)
KEEP = inv.CheckContext(now=NOW, config=Configuration(
    feature_gates=Configuration().feature_gates.set(c.GATE_KEEP_QUOTA_FOR_PROVREQ_RETRY, True)))
LIMITED = inv.CheckContext(now=NOW, config=Configuration(
    wait_for_pods_ready=WaitForPodsReady(requeuing_strategy=RequeuingStrategy(backoff_limit_count=1))))
NOT_READY = (cond(c.WORKLOAD_QUOTA_RESERVED), cond(c.WORKLOAD_ADMITTED, at=0),
             cond(c.WORKLOAD_PODS_READY, c.FALSE, c.REASON_WAIT_FOR_START))
RETRY = AdmissionCheckState("check", c.CHECK_RETRY, Time(900), requeue_after_seconds=60)
PENDING = (AdmissionCheckState("check", c.CHECK_PENDING, Time(900)),)
PENDING_WL = (cond(c.WORKLOAD_QUOTA_RESERVED, c.FALSE),)

# invariant -> (the world that breaks it, its context)
STATE_CASES: dict[str, Callable[[], tuple[World, inv.CheckContext]]] = {
    "admitted_only_with_quota": lambda: (world_with(workload(
        "wl", "u-wl", cond(c.WORKLOAD_QUOTA_RESERVED, c.FALSE), cond(c.WORKLOAD_ADMITTED))), CTX),
    "admission_matches_reservation": lambda: (world_with(workload(admitted=False)), CTX),
    "cluster_queue_within_nominal_quota": lambda: (world_with(workload(cpu=2), workload("wl2", "u2")), CTX),
    "states_are_declared": lambda: (world_with(workload(checks=(AdmissionCheckState("check", "Maybe"),))), CTX),
    "one_live_request_per_check": lambda: (world_with(workload(), request(1), request(2)), CTX),
    "requests_and_templates_owned": lambda: (world_with(request(1)), CTX),
    "keep_quota_never_evicts_for_retry": lambda: (world_with(workload(checks=(RETRY,))), KEEP),
    "pods_ready_count_within_limit": lambda: (world_with(workload(requeue_state=RequeueState(2))), LIMITED),
    "retry_delay_is_exponential": lambda: (world_with(workload(checks=(attrs.evolve(RETRY, retry_count=1),)),
                                                      request(2, cond(c.PR_FAILED))), CTX),
    "retry_not_overdue": lambda: (world_with(workload(checks=(attrs.evolve(RETRY, last_transition_time=Time(900)),
                                                              ))), inv.CheckContext(now=Time(960))),
    "single_request_per_check": lambda: (world_with(workload(), request(1, cond(c.PR_FAILED)), request(2)), CTX),
    "finished_has_no_requests": lambda: (world_with(workload("wl", "u-wl", cond(c.WORKLOAD_FINISHED)),
                                                    request(1)), CTX),
    "attempts_within_backoff_limit": lambda: (world_with(workload(checks=(RETRY,)), request(4, cond(c.PR_FAILED))), CTX),
    "rejected_check_deactivates": lambda: (world_with(workload(checks=(attrs.evolve(RETRY, state=c.CHECK_REJECTED),))),
                                           CTX),
    "pods_ready_timeout_enforced": lambda: (world_with(workload("wl", "u-wl", *NOT_READY)),
                                            inv.CheckContext(now=Time(1800))),
    "no_stuck_workload": lambda: (world_with(workload("wl", "u-wl", *PENDING_WL, checks=(RETRY,))), QUIET),
}


def test_every_invariant_has_a_case() -> None:
    assert set(STATE_CASES) == set(inv.STATE_INVARIANTS)
    assert set(STEP_CASES) == set(inv.STEP_INVARIANTS)


def test_a_healthy_world_violates_nothing() -> None:
    w = good_world()
    assert inv.check_state(w, QUIET) == []
    assert inv.check_step(w.snapshot(), w, QUIET) == []


@pytest.mark.parametrize("name", sorted(STATE_CASES))
def test_state_invariant_fires(name: str) -> None:
    world, ctx = STATE_CASES[name]()
    check = inv.STATE_INVARIANTS[name].state
    assert check is not None
    assert check(world, ctx), f"{name} stayed silent"
    assert check(good_world(), ctx) == []


def step(before: list[KubeObject], after: list[KubeObject]) -> tuple[frozenset[KubeObject], World]:
    return World([*base_objects(), *before]).snapshot(), world_with(*after)


FAILED_1 = request(1, cond(c.PR_FAILED, at=950))
REJECTED = attrs.evolve(RETRY, state=c.CHECK_REJECTED)
PENDING_AFTER_RESET = AdmissionCheckState("check", c.CHECK_PENDING, NOW, c.MSG_RESET_CHECK.format(state="Rejected"))

STEP_CASES: dict[str, Callable[[], tuple[frozenset[KubeObject], World, inv.CheckContext]]] = {
    "transitions_are_declared": lambda: (*step([workload("wl", "u-wl", cond(c.WORKLOAD_FINISHED))], [workload()]), CTX),
    "admitted_only_with_ready_checks": lambda: (*step(
        [workload("wl", "u-wl", cond(c.WORKLOAD_QUOTA_RESERVED), checks=PENDING)],
        [workload(checks=PENDING)]), CTX),
    "finished_is_final": lambda: (*step([workload("wl", "u-wl", cond(c.WORKLOAD_FINISHED))],
                                        [workload("wl", "u-wl", cond(c.WORKLOAD_FINISHED), checks=PENDING)]), CTX),
    "attempts_never_decrease": lambda: (*step(
        [workload(checks=PENDING), request(3, cond(c.PR_FAILED))],
        [workload(checks=PENDING), request(3, cond(c.PR_FAILED)), request(2)]), CTX),
    "retry_moves_the_quota": lambda: (*step(
        [workload("wl", "u-wl", cond(c.WORKLOAD_QUOTA_RESERVED, at=100), checks=PENDING), FAILED_1],
        [workload("wl", "u-wl", cond(c.WORKLOAD_QUOTA_RESERVED, at=100), checks=PENDING), FAILED_1, request(2)]),
        CTX),
    "no_request_after_rejection": lambda: (*step(
        [workload("wl", "u-wl", cond(c.WORKLOAD_QUOTA_RESERVED), checks=(REJECTED,)), FAILED_1],
        [workload("wl", "u-wl", cond(c.WORKLOAD_QUOTA_RESERVED), checks=(REJECTED,)), FAILED_1, request(2)]), CTX),
    "rejection_deactivates": lambda: (*step(
        [workload("wl", "u-wl", cond(c.WORKLOAD_QUOTA_RESERVED), checks=(REJECTED,))],
        [workload("wl", "u-wl", cond(c.WORKLOAD_QUOTA_RESERVED),
                  cond(c.WORKLOAD_EVICTED, reason="DeactivatedDueToAdmissionCheck"),
                  checks=(PENDING_AFTER_RESET,))]), CTX),
    "pods_ready_limit_deactivates": lambda: (*step(
        [workload("wl", "u-wl", *NOT_READY, requeue_state=RequeueState(1))],
        [workload("wl", "u-wl", *NOT_READY, cond(c.WORKLOAD_EVICTED, reason=c.REASON_PODS_READY_TIMEOUT),
                  requeue_state=RequeueState(2))]), LIMITED),
    "no_early_requeue": lambda: (*step(
        [workload("wl", "u-wl", *PENDING_WL, requeue_state=RequeueState(None, Time(2_000)))],
        [workload("wl", "u-wl", cond(c.WORKLOAD_QUOTA_RESERVED))]), CTX),
}


@pytest.mark.parametrize("name", sorted(STEP_CASES))
def test_step_invariant_fires(name: str) -> None:
    before, after, ctx = STEP_CASES[name]()
    check = inv.STEP_INVARIANTS[name].step
    assert check is not None
    assert check(before, after, ctx), f"{name} stayed silent"
    good = good_world()
    assert check(good.snapshot(), good, ctx) == []


def test_quota_kept_under_keep_quota_and_released_by_default() -> None:
    """The two faces of retry_moves_the_quota: attempt 2 made while holding the quota is right under
    KeepQuotaForProvReqRetry, and made after an eviction and re-reservation is right by default."""
    held = workload("wl", "u-wl", cond(c.WORKLOAD_QUOTA_RESERVED, at=100), checks=PENDING)
    before, after = step([held, FAILED_1], [held, FAILED_1, request(2)])
    assert inv.retry_moves_the_quota(before, after, KEEP) == []
    waiting = workload("wl", "u-wl", cond(c.WORKLOAD_QUOTA_RESERVED, c.FALSE, at=960),
                       cond(c.WORKLOAD_EVICTED, reason=c.REASON_ADMISSION_CHECK, at=960), checks=PENDING)
    again = workload("wl", "u-wl", cond(c.WORKLOAD_QUOTA_RESERVED, at=980),
                     cond(c.WORKLOAD_EVICTED, c.FALSE, c.REASON_QUOTA_RESERVED, at=980), checks=PENDING)
    before, after = step([waiting, FAILED_1], [again, FAILED_1, request(2)])
    assert inv.retry_moves_the_quota(before, after, CTX) == []
    assert inv.retry_moves_the_quota(before, after, KEEP)


def test_backoff_oracle_matches_the_controllers_backoff() -> None:
    from kueue_provreq.controllers.backoff import nominal_delay_seconds
    for base in (0, 1, 60, 100):
        for cap in (0, 50, 1800, 3600):
            for n in range(1, 12):
                assert inv.nominal_retry_delay(n, base, cap) == nominal_delay_seconds(n, base, cap)
