"""The ClusterQueue status reconciler: the Active condition (MultiKueue constraints included),
the workload counts and the quota in use."""

from __future__ import annotations

from decimal import Decimal

from kueue_provreq.api import constants as c
from kueue_provreq.api.evolve import evolve
from kueue_provreq.api.meta import Condition, Time
from kueue_provreq.api.queues import (
    AdmissionCheck,
    AdmissionCheckSpec,
    AdmissionCheckStrategyRule,
    ClusterQueue,
    FlavorUsage,
)
from kueue_provreq.api.workload import RequeueState, WorkloadStatus
from kueue_provreq.controllers import clusterqueue, queues
from kueue_provreq.controllers.context import Context
from kueue_provreq.manifests import dump_object
from kueue_provreq.world import NOTHING, World

from builders import ADMITTED
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
    inactive = evolve(inactive, status=evolve(inactive.status, conditions=(
        Condition(c.ADMISSION_CHECK_ACTIVE, c.FALSE, "BadParametersRef", "x", T0),)))
    world = World([flavor("default"), cluster_queue(checks=rules), inactive, active_check("ok")])
    assert active(reconcile(world)) == (
        "False", "AdmissionCheckNotFound",
        "Can't admit new workloads: references missing AdmissionCheck(s): a-missing,c-missing, "
        "references inactive AdmissionCheck(s): b-inactive.")


def test_check_without_active_condition_is_inactive_and_stop_policy_comes_first() -> None:
    ac = evolve(active_check("prov"), status=evolve(active_check("prov").status, conditions=()))
    cq = cluster_queue(checks=(AdmissionCheckStrategyRule("prov"),))
    cq = evolve(cq, spec=evolve(cq.spec, stop_policy="Hold"))
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


# --- MultiKueue constraints, inactive backlogs, flavors reservation and usage -----------------


def check(name: str, controller: str) -> AdmissionCheck:
    return evolve(active_check(name), spec=AdmissionCheckSpec(controller))


def test_multikueue_constraints_in_upstream_order() -> None:
    rules = (AdmissionCheckStrategyRule("mk1"), AdmissionCheckStrategyRule("mk2", ("default",)),
             AdmissionCheckStrategyRule("prov"))
    cq = cluster_queue(flavors=(("default", {"cpu": "4"}), ("spot", {"cpu": "4"})), checks=rules)
    world = World([flavor("default"), flavor("spot"), cq, check("mk1", c.MULTIKUEUE_CONTROLLER_NAME),
                   check("mk2", c.MULTIKUEUE_CONTROLLER_NAME), check("prov", c.PROVISIONING_REQUEST_CONTROLLER_NAME)])
    assert active(reconcile(world)) == (
        "False", "MultipleMultiKueueAdmissionChecks",
        "Can't admit new workloads: Cannot use multiple MultiKueue AdmissionChecks on the same ClusterQueue, "
        "found: mk1,mk2, Cannot specify MultiKueue AdmissionCheck per flavor, found: mk2, Cannot use both "
        "MultiKueue and ProvisioningRequest AdmissionChecks together, found: mk1,mk2, prov.")


def test_a_missing_check_is_neither_multikueue_nor_provisioning() -> None:
    rules = (AdmissionCheckStrategyRule("mk"), AdmissionCheckStrategyRule("gone"))
    world = World([flavor("default"), cluster_queue(checks=rules), check("mk", c.MULTIKUEUE_CONTROLLER_NAME)])
    assert active(reconcile(world))[1:] == (
        "AdmissionCheckNotFound", "Can't admit new workloads: references missing AdmissionCheck(s): gone.")


def test_a_single_multikueue_check_for_every_flavor_is_fine() -> None:
    world = World([flavor("default"), cluster_queue(checks=(AdmissionCheckStrategyRule("mk"),)),
                   check("mk", c.MULTIKUEUE_CONTROLLER_NAME)])
    assert active(reconcile(world))[0] == "True"


def test_every_pending_workload_of_an_inactive_queue_is_inadmissible() -> None:
    strict = cluster_queue(strategy=c.STRICT_FIFO, checks=(AdmissionCheckStrategyRule("missing"),))
    backoff = WorkloadStatus(requeue_state=RequeueState(count=1, requeue_at=Time(T0 + 60)))
    world = World([flavor("default"), strict, local_queue(), workload("a"), workload("b", status=backoff)])
    cycle(world)
    gauges = {(g.labels.get("status"), g.name): g.value for g in queues.queue_gauges(world, Context(T0))}
    assert gauges[("active", c.METRIC_PENDING_WORKLOADS)] == 0
    assert gauges[("inadmissible", c.METRIC_PENDING_WORKLOADS)] == 2
    assert reconcile(world).status.pending_workloads == 2


def test_flavors_reservation_counts_every_holder_and_usage_only_the_admitted() -> None:
    cq = cluster_queue(flavors=(("default", {"cpu": "4", "memory": "4Gi"}), ("spot", {"cpu": "4", "memory": "4Gi"})),
                       covered=("memory", "cpu"))
    admitted = reserving("admitted", "2")
    admitted = admitted.with_status(conditions=(*admitted.status.conditions, ADMITTED))
    world = World([flavor("default"), flavor("spot"), cq, local_queue(), admitted, reserving("held", "500m")])
    status = reconcile(world).status

    def table(usage: tuple[FlavorUsage, ...]) -> list[tuple[str, str, Decimal]]:
        return [(f.name, r.name, r.total.value) for f in usage for r in f.resources]

    assert table(status.flavors_reservation) == [
        ("default", "cpu", Decimal("2.5")), ("default", "memory", 0), ("spot", "cpu", 0), ("spot", "memory", 0)]
    assert table(status.flavors_usage) == [
        ("default", "cpu", Decimal(2)), ("default", "memory", 0), ("spot", "cpu", 0), ("spot", "memory", 0)]
    # outside a cohort nothing is borrowed, and upstream writes that as "0"
    assert all(r.borrowed is not None and r.borrowed.value == 0 for f in status.flavors_reservation for r in f.resources)


def test_flavor_usage_is_written_as_the_api_shows_it() -> None:
    world = World([flavor("default"), cluster_queue(), reserving("held", "1500m")])
    dumped = dump_object(reconcile(world))["status"]
    assert dumped["flavorsReservation"] == [{"name": "default", "resources": [{"name": "cpu", "total": "1500m", "borrowed": "0"}]}]
    assert dumped["flavorsUsage"] == [{"name": "default", "resources": [{"name": "cpu", "total": "0", "borrowed": "0"}]}]
