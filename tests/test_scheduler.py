"""The scheduler and the queue manager: fit, flavors, checks, ordering, FIFO strategies, backoff."""

from __future__ import annotations

from decimal import Decimal

import pytest
from kueue_provreq.api import constants as c
from kueue_provreq.api.config import Configuration, RequeuingStrategy, WaitForPodsReady
from kueue_provreq.api.evolve import evolve
from kueue_provreq.api.frozen import FrozenMap, freeze
from kueue_provreq.api.meta import Condition, ObjectMeta, Time
from kueue_provreq.api.quantity import Quantity
from kueue_provreq.api.queues import (
    EVERY_NAMESPACE,
    AdmissionCheck,
    AdmissionCheckSpec,
    AdmissionChecksStrategy,
    AdmissionCheckStatus,
    AdmissionCheckStrategyRule,
    ClusterQueue,
    ClusterQueueSpec,
    FlavorQuotas,
    LocalQueue,
    LocalQueueSpec,
    ResourceFlavor,
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
    WorkloadStatus,
)
from kueue_provreq.controllers import queues, scheduler, usage
from kueue_provreq.controllers.context import Context
from kueue_provreq.world import Event, Result, Update, World

import builders
from builders import T0

NS = "ns"


def template(requests: dict[str, str] | None = None, **spec: object) -> FrozenMap[str, object]:
    return builders.template(requests or {}, **spec)


def flavor(name: str) -> ResourceFlavor:
    return ResourceFlavor(ObjectMeta(name=name, uid=f"rf-{name}"))


def cluster_queue(name: str = "cq", flavors: tuple[tuple[str, dict[str, str]], ...] = (("default", {"cpu": "4"}),),
                  strategy: str = c.BEST_EFFORT_FIFO, checks: tuple[AdmissionCheckStrategyRule, ...] = (),
                  covered: tuple[str, ...] = ("cpu",)) -> ClusterQueue:
    group = ResourceGroup(covered, tuple(
        FlavorQuotas(f, tuple(ResourceQuota(r, Quantity.parse(q)) for r, q in quota.items())) for f, quota in flavors))
    return ClusterQueue(ObjectMeta(name=name, uid=f"cq-{name}", generation=1), ClusterQueueSpec(namespace_selector=EVERY_NAMESPACE,
        resource_groups=(group,), queueing_strategy=strategy,
        admission_checks_strategy=AdmissionChecksStrategy(checks) if checks else None))


def local_queue(name: str = "lq", cq: str = "cq") -> LocalQueue:
    return LocalQueue(ObjectMeta(name=name, namespace=NS, uid=f"lq-{name}"), LocalQueueSpec(cq))


def active_check(name: str) -> AdmissionCheck:
    return AdmissionCheck(ObjectMeta(name=name, uid=f"ac-{name}"), AdmissionCheckSpec("example.com/other"),
                          AdmissionCheckStatus((Condition(c.ADMISSION_CHECK_ACTIVE, c.TRUE, "Active", "", T0),)))


def workload(name: str, cpu: str = "1", *, priority: int | None = None, created: int = 0, queue: str = "lq",
             count: int = 1, uid: str | None = None, status: WorkloadStatus = WorkloadStatus()) -> Workload:
    wl = builders.workload(name, uid=uid or f"uid-{name}", created=T0 + created, queue=queue, priority=priority,
                           pod_sets=(PodSet("main", count, template({"cpu": cpu})),))
    return evolve(wl, status=status)


def reserving(name: str, cpu: str, flavor_name: str = "default", cq: str = "cq") -> Workload:
    admission = Admission(cq, (PodSetAssignment("main", FrozenMap({"cpu": flavor_name}),
                                                FrozenMap({"cpu": Quantity.parse(cpu)}), 1),))
    return workload(name, cpu, status=WorkloadStatus(
        conditions=(Condition(c.WORKLOAD_QUOTA_RESERVED, c.TRUE, c.REASON_QUOTA_RESERVED, "", T0),),
        admission=admission))


def setup(*objs: object, cq: ClusterQueue | None = None) -> World:
    base = [flavor("default"), cq or cluster_queue(), local_queue()]
    return World([*base, *objs])  # type: ignore[list-item]


def cycle(world: World, now: int = 0, config: Configuration = Configuration(),
          key: tuple[str, str, str] | None = None) -> Result:
    result = scheduler.schedule(world, Context(Time(T0 + now), config), key)
    for effect in result.effects:
        world.apply(effect)
    return result


def get(world: World, name: str) -> Workload:
    wl = world.get(c.WORKLOAD, NS, name)
    assert isinstance(wl, Workload)
    return wl


def cond(wl: Workload, type_: str) -> tuple[str, str, str] | None:
    found = wl.condition(type_)
    return None if found is None else (found.status, found.reason, found.message)


def events(result: Result) -> list[tuple[str, str, str, str]]:
    return [(e.type, e.reason, e.message, e.name) for e in result.effects if isinstance(e, Event)]


# --- fit / no fit ------------------------------------------------------------------------------


def test_fitting_workload_reserves_quota_and_is_admitted_in_one_write() -> None:
    world = setup(workload("a", "2", created=-30))
    result = cycle(world)
    wl = get(world, "a")
    assert cond(wl, c.WORKLOAD_QUOTA_RESERVED) == ("True", "QuotaReserved", "Quota reserved in ClusterQueue cq")
    assert cond(wl, c.WORKLOAD_ADMITTED) == ("True", "Admitted", "The workload is admitted")
    assert wl.status.admission == Admission("cq", (PodSetAssignment(
        "main", FrozenMap({"cpu": "default"}), FrozenMap({"cpu": Quantity.parse("2")}), 1),))
    assert sum(isinstance(e, Update) for e in result.effects) == 1
    assert events(result) == [
        ("Normal", "QuotaReserved", "Quota reserved in ClusterQueue cq, wait time since queued was 30s", "a"),
        ("Normal", "Admitted", "Admitted by ClusterQueue cq, wait time since reservation was 0s", "a"),
    ]
    assert cycle(world).effects == ()


def test_request_above_nominal_quota_never_fits_and_settles() -> None:
    world = setup(workload("big", "5"))
    result = cycle(world)
    message = ("couldn't assign flavors to pod set main: insufficient quota for cpu in flavor default, "
               "previously considered podsets requests (0) + current podset request (5) > maximum capacity (4)")
    wl = get(world, "big")
    assert cond(wl, c.WORKLOAD_QUOTA_RESERVED) == ("False", "ExceedsMaxQuota", message)
    assert cond(wl, c.WORKLOAD_ADMITTED) == ("False", "NoReservation", "The workload has no reservation")
    assert events(result) == [("Warning", "ExceedsMaxQuota", message, "big")]
    assert cycle(world).effects == ()


def test_quota_held_by_others_leaves_the_workload_waiting_for_quota() -> None:
    world = setup(reserving("running", "3"), workload("b", "2500m"))
    cycle(world)
    assert cond(get(world, "b"), c.WORKLOAD_QUOTA_RESERVED) == (
        "False", "WaitingForQuota",
        "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor default, "
        "1500m more needed")


def test_resource_the_queue_does_not_cover_is_no_matching_flavor() -> None:
    wl = evolve(workload("gpu"), spec=evolve(workload("gpu").spec, pod_sets=(
        PodSet("main", 1, template({"cpu": "1", "nvidia.com/gpu": "1"})),)))
    world = setup(wl)
    cycle(world)
    assert cond(get(world, "gpu"), c.WORKLOAD_QUOTA_RESERVED) == (
        "False", "NoMatchingFlavor",
        "couldn't assign flavors to pod set main: resource nvidia.com/gpu unavailable in ClusterQueue")


def test_several_workloads_are_admitted_in_one_cycle_until_the_quota_runs_out() -> None:
    world = setup(*(workload(f"w{i}", "1", created=i) for i in range(6)))
    cycle(world)
    admitted = sorted(w.metadata.name for w in world.objects(c.WORKLOAD)
                      if isinstance(w, Workload) and w.is_admitted())
    assert admitted == ["w0", "w1", "w2", "w3"]
    assert cond(get(world, "w4"), c.WORKLOAD_QUOTA_RESERVED)[1] == "WaitingForQuota"  # type: ignore[index]


# --- flavors -----------------------------------------------------------------------------------


def test_first_flavor_with_room_is_chosen() -> None:
    cq = cluster_queue(flavors=(("small", {"cpu": "2"}), ("large", {"cpu": "8"})))
    world = World([flavor("small"), flavor("large"), cq, local_queue(),
                   workload("a", "2", created=0), workload("b", "2", created=1), workload("c", "5", created=2)])
    cycle(world)
    assert {n: get(world, n).status.admission.pod_set_assignments[0].flavors["cpu"]  # type: ignore[union-attr]
            for n in "abc"} == {"a": "small", "b": "large", "c": "large"}


def test_earlier_podsets_count_against_later_ones() -> None:
    cq = cluster_queue(flavors=(("f1", {"cpu": "4"}), ("f2", {"cpu": "4"})))
    wl = evolve(workload("two"), spec=WorkloadSpec(pod_sets=(
        PodSet("driver", 1, template({"cpu": "3"})), PodSet("workers", 1, template({"cpu": "3"}))), queue_name="lq"))
    world = World([flavor("f1"), flavor("f2"), cq, local_queue(), wl])
    cycle(world)
    psas = get(world, "two").status.admission.pod_set_assignments  # type: ignore[union-attr]
    assert [p.flavors["cpu"] for p in psas] == ["f1", "f2"]


def test_requests_follow_pod_requests_rules() -> None:
    ps = PodSet("main", 3, freeze({"spec": {
        "containers": [{"name": "a", "resources": {"requests": {"cpu": "500m"}, "limits": {"memory": "1Gi"}}},
                       {"name": "b", "resources": {"requests": {"cpu": "250m"}}}],
        "initContainers": [{"name": "init", "resources": {"requests": {"cpu": "2"}}},
                           {"name": "side", "restartPolicy": "Always", "resources": {"requests": {"cpu": "100m"}}}],
        "overhead": {"cpu": "10m"}}}))
    assert usage.pod_requests(ps) == {"cpu": Decimal("2.01"), "memory": Decimal(1024**3)}
    assert usage.podset_requests(ps, 3, True) == {"cpu": Decimal("6.03"), "memory": Decimal(3 * 1024**3),
                                                      "pods": Decimal(3)}


@pytest.mark.parametrize(("resource", "value", "text"), [
    ("cpu", "1.5", "1500m"), ("cpu", "2", "2"), ("cpu", "1000", "1k"), ("memory", "1073741824", "1Gi"),
    ("memory", "1536", "1536"), ("memory", "1000", "1k"), ("nvidia.com/gpu", "4", "4"), ("pods", "0", "0"),
])
def test_amounts_in_messages_use_go_canonical_spelling(resource: str, value: str, text: str) -> None:
    assert scheduler.format_amount(resource, Decimal(value)) == text


# --- admission checks ----------------------------------------------------------------------------


def checked_world(on_flavors: tuple[str, ...], *wls: Workload) -> World:
    cq = cluster_queue(flavors=(("f1", {"cpu": "1"}), ("f2", {"cpu": "4"})),
                       checks=(AdmissionCheckStrategyRule("prov", on_flavors),))
    return World([flavor("f1"), flavor("f2"), cq, local_queue(), active_check("prov"), *wls])


def test_check_for_other_flavors_does_not_hold_back_admission() -> None:
    world = checked_world(("f2",), workload("small", "1"))
    cycle(world)
    assert get(world, "small").is_admitted()


def test_per_flavor_check_not_yet_listed_leaves_admitted_untouched() -> None:
    world = checked_world(("f2",), workload("large", "2"))
    cycle(world)
    wl = get(world, "large")
    assert wl.has_quota_reservation()
    assert wl.condition(c.WORKLOAD_ADMITTED) is None


def test_listed_pending_check_makes_admitted_false() -> None:
    pending = WorkloadStatus(admission_checks=(AdmissionCheckState("prov", c.CHECK_PENDING, T0),))
    world = checked_world((), workload("w", "1", status=pending))
    result = cycle(world)
    wl = get(world, "w")
    assert cond(wl, c.WORKLOAD_ADMITTED) == ("False", "UnsatisfiedAdmissionChecks",
                                             "The workload has not all checks ready")
    assert [e[1] for e in events(result)] == ["QuotaReserved"]


def test_head_with_failed_checks_is_pending_evaluation_and_blocks_strict_fifo() -> None:
    retry = WorkloadStatus(admission_checks=(AdmissionCheckState("prov", c.CHECK_RETRY, T0),))
    cq = evolve(cluster_queue(checks=(AdmissionCheckStrategyRule("prov"),), strategy=c.STRICT_FIFO))
    world = World([flavor("default"), cq, local_queue(), active_check("prov"),
                   workload("head", status=retry), workload("next", created=1)])
    result = cycle(world)
    assert cond(get(world, "head"), c.WORKLOAD_QUOTA_RESERVED) == (
        "False", "PendingEvaluation", "The workload has failed admission checks")
    assert get(world, "next").status.conditions == ()
    assert events(result) == [("Warning", "PendingEvaluation", "The workload has failed admission checks", "head")]


# --- queueing strategies and order -------------------------------------------------------------------


@pytest.mark.parametrize(("strategy", "next_admitted"), [(c.STRICT_FIFO, False), (c.BEST_EFFORT_FIFO, True)])
def test_head_that_does_not_fit_blocks_only_strict_fifo(strategy: str, next_admitted: bool) -> None:
    world = setup(reserving("running", "2"), workload("head", "3", created=0), workload("next", "1", created=1),
                  cq=cluster_queue(strategy=strategy))
    cycle(world)
    assert cond(get(world, "head"), c.WORKLOAD_QUOTA_RESERVED)[1] == "WaitingForQuota"  # type: ignore[index]
    assert get(world, "next").is_admitted() is next_admitted
    if not next_admitted:
        assert get(world, "next").status.conditions == ()


@pytest.mark.parametrize("hashing", [True, False])
def test_an_equivalent_workload_behind_one_that_does_not_fit_is_not_tried(hashing: bool) -> None:
    """SchedulingEquivalenceHashing: in a BestEffortFIFO queue the workloads of the same
    priority and pod sets behind one that does not fit go to the inadmissible set untried, so
    nothing is written on them; another shape is still tried (and here admitted)."""
    world = setup(workload("first", "5", created=0), workload("same", "5", created=1),
                  workload("higher", "5", created=2, priority=10), workload("small", "1", created=3))
    config = Configuration(feature_gates=FrozenMap({c.GATE_SCHEDULING_EQUIVALENCE_HASHING: hashing}))
    result = cycle(world, config=config)
    assert cond(get(world, "first"), c.WORKLOAD_QUOTA_RESERVED)[1] == "ExceedsMaxQuota"  # type: ignore[index]
    assert cond(get(world, "higher"), c.WORKLOAD_QUOTA_RESERVED)[1] == "ExceedsMaxQuota"  # type: ignore[index]
    assert get(world, "small").is_admitted()
    if hashing:
        assert get(world, "same").status.conditions == ()
        assert [e[3] for e in events(result) if e[1] == "ExceedsMaxQuota"] == ["higher", "first"]
    else:
        assert cond(get(world, "same"), c.WORKLOAD_QUOTA_RESERVED)[1] == "ExceedsMaxQuota"  # type: ignore[index]
    assert cycle(world, config=config).effects == ()


@pytest.mark.parametrize(("strategy", "winner"), [(c.BEST_EFFORT_FIFO, "back"), (c.STRICT_FIFO, "waiting")])
def test_a_workload_set_aside_is_tried_after_the_heap(strategy: str, winner: str) -> None:
    """Upstream returns BestEffortFIFO's inadmissible set to the heap a batch period after the
    event that requeues it: a workload requeued by itself meanwhile goes first, whatever the
    priorities.  StrictFIFO sets nothing aside."""
    parked = WorkloadStatus(conditions=(
        Condition(c.WORKLOAD_QUOTA_RESERVED, c.FALSE, c.REASON_WAITING_FOR_QUOTA, "no room", T0),))
    world = setup(workload("waiting", "4", priority=10, created=0, status=parked), workload("back", "4", created=1),
                  cq=cluster_queue(strategy=strategy))
    cycle(world)
    assert [w.metadata.name for w in world.objects(c.WORKLOAD) if isinstance(w, Workload) and w.is_admitted()] == [
        winner]


def test_higher_priority_goes_first() -> None:
    world = setup(workload("old-low", "4", created=0), workload("new-high", "4", created=10, priority=100))
    cycle(world)
    assert get(world, "new-high").is_admitted()
    assert not get(world, "old-low").has_quota_reservation()


def test_equal_priority_and_time_fall_back_to_uid() -> None:
    world = setup(workload("x", "4", uid="b"), workload("y", "4", uid="a"))
    cycle(world)
    assert get(world, "y").is_admitted() and not get(world, "x").has_quota_reservation()


def evicted_by_timeout(name: str, created: int, evicted_at: int) -> Workload:
    return workload(name, "4", created=created, status=WorkloadStatus(conditions=(
        Condition(c.WORKLOAD_EVICTED, c.TRUE, c.REASON_PODS_READY_TIMEOUT, "timeout", Time(T0 + evicted_at)),
        Condition(c.WORKLOAD_REQUEUED, c.TRUE, c.REASON_BACKOFF_FINISHED, "", Time(T0 + evicted_at)),
        Condition(c.WORKLOAD_QUOTA_RESERVED, c.FALSE, c.REASON_PENDING_EVALUATION, "timeout",
                  Time(T0 + evicted_at)))))


@pytest.mark.parametrize(("timestamp", "winner"), [(c.TIMESTAMP_EVICTION, "younger"), (c.TIMESTAMP_CREATION, "older")])
def test_requeuing_timestamp_orders_a_timed_out_workload(timestamp: str, winner: str) -> None:
    config = Configuration(wait_for_pods_ready=WaitForPodsReady(requeuing_strategy=RequeuingStrategy(timestamp)))
    world = setup(evicted_by_timeout("older", 0, 100), workload("younger", "4", created=50))
    cycle(world, now=200, config=config)
    assert get(world, winner).is_admitted()
    if winner == "older":  # the re-reservation closes the eviction
        assert cond(get(world, "older"), c.WORKLOAD_EVICTED) == ("False", "QuotaReserved", "Previously: timeout")


def test_requeue_at_gates_entry_and_does_not_block_strict_fifo() -> None:
    backoff = WorkloadStatus(requeue_state=RequeueState(count=1, requeue_at=Time(T0 + 60)))
    world = setup(workload("waiting", "4", created=0, status=backoff), workload("other", "1", created=5),
                  cq=cluster_queue(strategy=c.STRICT_FIFO))
    cycle(world, now=10)
    assert not get(world, "waiting").has_quota_reservation()
    assert get(world, "other").is_admitted()
    assert get(world, "waiting").status.conditions == ()


def test_requeued_false_keeps_the_workload_out_until_requeued() -> None:
    held = WorkloadStatus(conditions=(Condition(c.WORKLOAD_REQUEUED, c.FALSE, c.REASON_PODS_READY_TIMEOUT, "", T0),),
                          requeue_state=RequeueState(count=1, requeue_at=T0))
    world = setup(workload("held", status=held))
    assert cycle(world, now=100).effects == ()
    assert queues.in_backoff(get(world, "held"), Time(T0 + 100))


def test_requeue_at_reached_is_admitted() -> None:
    backoff = WorkloadStatus(requeue_state=RequeueState(count=1, requeue_at=Time(T0 + 60)))
    world = setup(workload("w", status=backoff))
    assert cycle(world, now=59).effects == ()
    cycle(world, now=60)
    assert get(world, "w").is_admitted()


# --- inactive and misconfigured queues ----------------------------------------------------------------


def test_inactive_cluster_queue_suspends_its_workloads() -> None:
    cq = cluster_queue(checks=(AdmissionCheckStrategyRule("missing"),))
    world = setup(workload("w"), cq=cq)
    result = cycle(world)
    assert cond(get(world, "w"), c.WORKLOAD_QUOTA_RESERVED) == ("False", "Suspended", "ClusterQueue cq is inactive")
    assert events(result) == [("Warning", "Suspended", "ClusterQueue cq is inactive", "w")]
    assert cycle(world).effects == ()


def test_missing_flavor_makes_the_queue_inactive() -> None:
    world = World([cluster_queue(), local_queue(), workload("w")])
    cycle(world)
    assert cond(get(world, "w"), c.WORKLOAD_QUOTA_RESERVED)[1] == "Suspended"  # type: ignore[index]


def test_missing_local_or_cluster_queue_is_left_to_the_workload_controller() -> None:
    """The queue manager holds no queue for a LocalQueue or a ClusterQueue that does not exist:
    the scheduler never sees their workloads (the workload controller writes why they wait)."""
    world = World([flavor("default"), local_queue("orphan", "nowhere"), workload("no-lq", queue="missing"),
                   workload("no-cq", queue="orphan")])
    assert cycle(world).effects == ()
    assert cycle(world, key=(c.WORKLOAD, NS, "no-lq")).effects == ()


# --- keyed cycles and blockAdmission -------------------------------------------------------------------


def test_key_limits_the_cycle_to_that_workloads_queue() -> None:
    world = World([flavor("default"), cluster_queue("cq"), cluster_queue("cq2"), local_queue("lq", "cq"),
                   local_queue("lq2", "cq2"), workload("a"), workload("b", queue="lq2")])
    cycle(world, key=(c.WORKLOAD, NS, "b"))
    assert get(world, "b").is_admitted()
    assert not get(world, "a").has_quota_reservation()


def test_block_admission_waits_for_pods_ready() -> None:
    config = Configuration(wait_for_pods_ready=WaitForPodsReady(block_admission=True))
    world = setup(workload("first", created=0), workload("second", created=1))
    cycle(world, config=config)
    assert get(world, "first").is_admitted()
    assert cond(get(world, "second"), c.WORKLOAD_QUOTA_RESERVED) == (
        "False", "WaitingForPodsReady", "waiting for all admitted workloads to be in PodsReady condition")
    assert cycle(world, config=config).effects == ()
    first = get(world, "first")
    world.put(first.with_status(conditions=first.status.conditions + (
        Condition(c.WORKLOAD_PODS_READY, c.TRUE, "Started", "", T0),)))
    cycle(world, config=config)
    assert get(world, "second").is_admitted()


# --- gauges ----------------------------------------------------------------------------------------------


def gauges(world: World) -> dict[tuple[str, str], int]:
    return {(g.name, g.labels.get("status", "")): g.value
            for g in queues.queue_gauges(world, Context(T0)) if g.labels["cluster_queue"] == "cq"}


@pytest.mark.parametrize(("strategy", "active", "inadmissible"), [(c.BEST_EFFORT_FIFO, 0, 3),
                                                                    (c.STRICT_FIFO, 2, 1)])
def test_gauges_split_heap_and_inadmissible(strategy: str, active: int, inadmissible: int) -> None:
    backoff = WorkloadStatus(requeue_state=RequeueState(count=1, requeue_at=Time(T0 + 60)))
    world = setup(workload("fits", "2", created=0), workload("big", "3", created=1),
                  workload("small", "3", created=2), workload("later", status=backoff),
                  cq=cluster_queue(strategy=strategy))
    cycle(world)
    assert gauges(world) == {
        (c.METRIC_PENDING_WORKLOADS, "active"): active,
        (c.METRIC_PENDING_WORKLOADS, "inadmissible"): inadmissible,
        (c.METRIC_RESERVING_ACTIVE_WORKLOADS, ""): 1,
    }


def test_job_released_workload_counts_as_active_until_tried() -> None:
    released = WorkloadStatus(conditions=(
        Condition(c.WORKLOAD_QUOTA_RESERVED, c.FALSE, c.REASON_PENDING_EVALUATION, "Evicted due to x", T0),))
    world = setup(workload("w", status=released))
    assert gauges(world)[(c.METRIC_PENDING_WORKLOADS, "active")] == 1
