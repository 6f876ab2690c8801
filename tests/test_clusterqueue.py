"""The ClusterQueue status reconciler: the Active condition and the workload counts."""

from __future__ import annotations

import attrs
from kueue_provreq.api import constants as c
from kueue_provreq.api.meta import Condition, Time
from kueue_provreq.api.queues import AdmissionCheckStrategyRule, ClusterQueue
from kueue_provreq.api.workload import RequeueState, WorkloadStatus
from kueue_provreq.controllers import clusterqueue
from kueue_provreq.controllers.context import Context
from kueue_provreq.world import NOTHING, World

from test_scheduler import (
    T0,
    active_check,
    cluster_queue,
    cycle,
    flavor,
    local_queue,
    reserving,
    workload,
)

KEY = (c.CLUSTER_QUEUE, "", "cq")


def reconcile(world: World, now: int = 0) -> ClusterQueue:
    result = clusterqueue.reconcile(world, KEY, Context(Time(T0 + now)))
    assert result.error is None
    for effect in result.effects:
        world.apply(effect)
    cq = world.get(*KEY)
    assert isinstance(cq, ClusterQueue)
    return cq


def active(cq: ClusterQueue) -> tuple[str, str, str]:
    (cond,) = cq.status.conditions
    return cond.status, cond.reason, cond.message


def test_queue_with_everything_it_references_is_active() -> None:
    cq = reconcile(World([flavor("default"), cluster_queue()]))
    assert cq.status.conditions == (Condition(c.CQ_ACTIVE, c.TRUE, "Ready", "Can admit new workloads", T0, 1),)
    assert (cq.status.pending_workloads, cq.status.reserving_workloads, cq.status.admitted_workloads) == (0, 0, 0)
    assert clusterqueue.reconcile(World([cq, flavor("default")]), KEY, Context(T0)) is NOTHING


def test_missing_flavors_keep_queue_order() -> None:
    cq = cluster_queue(flavors=(("zeta", {"cpu": "1"}), ("alpha", {"cpu": "1"})))
    assert active(reconcile(World([cq]))) == (
        "False", "FlavorNotFound", "Can't admit new workloads: references missing ResourceFlavor(s): zeta,alpha.")


def test_first_reason_wins_and_every_problem_is_listed() -> None:
    rules = tuple(AdmissionCheckStrategyRule(n) for n in ("c-missing", "b-inactive", "a-missing", "ok"))
    inactive = active_check("b-inactive")
    inactive = attrs.evolve(inactive, status=attrs.evolve(inactive.status, conditions=(
        Condition(c.ADMISSION_CHECK_ACTIVE, c.FALSE, "BadParametersRef", "x", T0),)))
    world = World([flavor("default"), cluster_queue(checks=rules), inactive, active_check("ok")])
    assert active(reconcile(world)) == (
        "False", "AdmissionCheckNotFound",
        "Can't admit new workloads: references missing AdmissionCheck(s): a-missing,c-missing, "
        "references inactive AdmissionCheck(s): b-inactive.")


def test_check_without_active_condition_is_inactive_and_stop_policy_comes_first() -> None:
    ac = attrs.evolve(active_check("prov"), status=attrs.evolve(active_check("prov").status, conditions=()))
    cq = cluster_queue(checks=(AdmissionCheckStrategyRule("prov"),))
    cq = attrs.evolve(cq, spec=attrs.evolve(cq.spec, stop_policy="Hold"))
    assert active(reconcile(World([flavor("default"), cq, ac]))) == (
        "False", "Stopped", "Can't admit new workloads: is stopped, references inactive AdmissionCheck(s): prov.")


def test_condition_flips_back_when_the_check_appears() -> None:
    world = World([flavor("default"), cluster_queue(checks=(AdmissionCheckStrategyRule("prov"),))])
    assert active(reconcile(world))[0] == "False"
    world.put(active_check("prov"))
    cq = reconcile(world, 30)
    assert active(cq) == ("True", "Ready", "Can admit new workloads")
    assert cq.status.conditions[0].last_transition_time == T0 + 30


def test_counts_follow_the_queue_and_the_cache() -> None:
    backoff = WorkloadStatus(requeue_state=RequeueState(count=1, requeue_at=Time(T0 + 60)))
    world = World([flavor("default"), cluster_queue(), local_queue(), reserving("held", "1"),
                   workload("fits", "1"), workload("big", "9"), workload("waits", status=backoff)])
    cycle(world)
    cq = reconcile(world)
    assert (cq.status.pending_workloads, cq.status.reserving_workloads, cq.status.admitted_workloads) == (2, 2, 1)
    assert clusterqueue.reconcile(world, KEY, Context(T0)) is NOTHING


def test_deleted_queue_is_ignored() -> None:
    assert clusterqueue.reconcile(World([]), KEY, Context(T0)) is NOTHING
