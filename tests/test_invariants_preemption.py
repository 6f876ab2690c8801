"""Invariants of preemption and of KEP-993's preemption policy
(``kueue_provreq.invariants.preemption``): each fires on a hand-built world or step that breaks it
and stays silent on a healthy one (the cases join ``test_invariants_state`` and
``test_invariants_step``'s tables), and the policy the oracle reads agrees with the scheduler's."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from kueue_provreq import invariants as inv
from kueue_provreq.api import constants as c
from kueue_provreq.api.config import SEMANTICS_KEP_993_PREEMPTION, Configuration
from kueue_provreq.api.evolve import evolve
from kueue_provreq.api.objects import KubeObject
from kueue_provreq.api.queues import AdmissionCheck, ClusterQueue, ClusterQueuePreemption
from kueue_provreq.api.workload import Workload
from kueue_provreq.controllers import kep993
from kueue_provreq.invariants.preemption import policy_allows
from kueue_provreq.world import World

from builders import check_state
from invariant_builders import CTX, NOW, base_objects, cond, workload

KEP = inv.CheckContext(now=NOW, config=Configuration(semantics=frozenset({SEMANTICS_KEP_993_PREEMPTION})))
PREEMPTOR_UID = "boss-uid"
MESSAGE = (f"Preempted to accommodate a workload (UID: {PREEMPTOR_UID}, JobUID: UNKNOWN) due to prioritization "
           "in the ClusterQueue; preemptor path: /cq; preemptee path: /cq")


def objects(policy: str = c.PREEMPTION_POLICY_LOWER_PRIORITY, waits: bool = False) -> list[KubeObject]:
    out = []
    for obj in base_objects():
        if isinstance(obj, ClusterQueue):
            obj = evolve(obj, spec=evolve(obj.spec, preemption=ClusterQueuePreemption(policy)))
        if isinstance(obj, AdmissionCheck) and waits:
            obj = evolve(obj, spec=evolve(
                obj.spec, preemption_policy=c.PREEMPTION_POLICY_AFTER_CHECK_PASSED_OR_ON_DEMAND))
        out.append(obj)
    return out


def with_priority(wl: Workload, priority: int) -> Workload:
    return evolve(wl, spec=evolve(wl.spec, priority=priority))


def victim(preempted: bool) -> Workload:
    conds = [cond(c.WORKLOAD_QUOTA_RESERVED), cond(c.WORKLOAD_ADMITTED)]
    if preempted:
        conds += [cond(c.WORKLOAD_EVICTED, reason=c.REASON_PREEMPTED),
                  evolve(cond(c.WORKLOAD_PREEMPTED, reason=c.REASON_IN_CLUSTER_QUEUE), message=MESSAGE)]
    return with_priority(workload("low", *conds), 1)


def boss(priority: int = 9, check: str = c.CHECK_PENDING) -> Workload:
    wl = workload("boss", cond(c.WORKLOAD_QUOTA_RESERVED), checks=(check_state("check", check),))
    return with_priority(wl, priority)


def preemption_step(priority: int = 9, check: str = c.CHECK_PENDING, waits: bool = False,
                    policy: str = c.PREEMPTION_POLICY_LOWER_PRIORITY) -> tuple[frozenset[KubeObject], World]:
    base = objects(policy, waits)
    before = World([*base, victim(False), boss(priority, check)]).snapshot()
    return before, World([*base, victim(True), boss(priority, check)])


STATE_CASES: dict[str, Callable[[], tuple[World, inv.CheckContext]]] = {
    "running_within_nominal_quota": lambda: (World([*base_objects(), workload(cpu=2), workload("wl2")]), KEP),
    "preemption_required_only_under_kep_993": lambda: (
        World([*base_objects(), workload(checks=(check_state("check", c.CHECK_PREEMPTION_REQUIRED),))]), CTX),
}

STEP_CASES: dict[str, Callable[[], tuple[frozenset[KubeObject], World, inv.CheckContext]]] = {
    "preempted_only_by_policy": lambda: (*preemption_step(priority=1), CTX),
    "no_preemption_before_the_policy_allows_it": lambda: (*preemption_step(waits=True), KEP),
}


def test_a_lower_priority_victim_under_lower_priority_is_fine() -> None:
    before, after = preemption_step()
    assert inv.preempted_only_by_policy(before, after, CTX) == []


def test_never_preempts_nobody_and_an_unknown_preemptor_is_reported() -> None:
    before, after = preemption_step(policy=c.PREEMPTION_POLICY_NEVER)
    assert inv.preempted_only_by_policy(before, after, CTX)
    orphan = World([*objects(), victim(True)])
    assert "unknown workload 'boss-uid'" in inv.preempted_only_by_policy(before, orphan, CTX)[0]


def test_equal_priority_needs_lower_or_newer_equal_and_an_earlier_queue_time() -> None:
    before, after = preemption_step(priority=1, policy=c.PREEMPTION_POLICY_LOWER_OR_NEWER_EQUAL_PRIORITY)
    assert inv.preempted_only_by_policy(before, after, CTX)  # same creation time: not newer


@pytest.mark.parametrize("check", [c.CHECK_READY, c.CHECK_PREEMPTION_REQUIRED])
def test_the_policy_allows_once_the_check_passed_or_asks(check: str) -> None:
    before, after = preemption_step(waits=True, check=check)
    assert inv.no_preemption_before_the_policy_allows_it(before, after, KEP) == []


def test_anytime_checks_allow_at_once_and_the_invariant_is_kep_only() -> None:
    before, after = preemption_step()
    assert inv.no_preemption_before_the_policy_allows_it(before, after, KEP) == []
    assert inv.no_preemption_before_the_policy_allows_it(*preemption_step(waits=True), CTX) == []


def test_evicted_workloads_count_as_running() -> None:
    leaving = workload("leaving", cond(c.WORKLOAD_QUOTA_RESERVED), cond(c.WORKLOAD_EVICTED), cpu=2)
    reserved = workload("reserved", cond(c.WORKLOAD_QUOTA_RESERVED), cpu=2)
    assert inv.running_within_nominal_quota(World([*base_objects(), leaving, reserved]), KEP) == []
    assert inv.running_within_nominal_quota(World([*base_objects(), leaving, workload()]), KEP)


def test_reservations_over_nominal_are_judged_only_outside_kep_993() -> None:
    world = World([*base_objects(), workload(cpu=2), workload("wl2", cond(c.WORKLOAD_QUOTA_RESERVED))])
    assert inv.cluster_queue_within_nominal_quota(world, CTX)
    assert inv.cluster_queue_within_nominal_quota(world, KEP) == []


@pytest.mark.parametrize("waits", [False, True])
@pytest.mark.parametrize("check", [c.CHECK_PENDING, c.CHECK_READY, c.CHECK_RETRY, c.CHECK_PREEMPTION_REQUIRED])
def test_the_oracle_reads_the_policy_as_the_scheduler_does(waits: bool, check: str) -> None:
    world = World([*objects(waits=waits), boss(check=check)])
    wl = world.get(c.WORKLOAD, "ns", "boss")
    cq = world.get(c.CLUSTER_QUEUE, "", "cq")
    assert isinstance(wl, Workload) and isinstance(cq, ClusterQueue)
    assert policy_allows(world, wl) == kep993.policy_allows(world, wl, cq)
