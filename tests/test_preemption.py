"""Preemption within a ClusterQueue: the policy, the candidates' order, the minimal set of
targets (upstream's remove-then-fill-back heuristic), and what issuing a preemption writes."""

from __future__ import annotations

from decimal import Decimal

import pytest
from kueue_provreq.api import constants as c
from kueue_provreq.api.config import Configuration
from kueue_provreq.api.evolve import evolve
from kueue_provreq.api.meta import Time
from kueue_provreq.api.workload import Workload
from kueue_provreq.controllers import preemption
from kueue_provreq.world import Event, MetricInc, Txn, Update, World

from builders import ADMITTED, T0, admission, cond, reserved_in, workload

CPU = ("default", "cpu")
NOMINAL = {CPU: Decimal(4)}
LOWER = c.PREEMPTION_POLICY_LOWER_PRIORITY
CONFIG = Configuration()


def held(name: str, cpu: int, priority: int = 0, reserved: float = 0, evicted: bool = False,
         created: float = 0) -> tuple[Workload, dict[tuple[str, str], Decimal]]:
    conditions = [reserved_in(at=T0 + reserved), ADMITTED]
    if evicted:
        conditions.append(cond(c.WORKLOAD_EVICTED, c.TRUE, c.REASON_PODS_READY_TIMEOUT, "m"))
    wl = workload(name, priority=priority, conditions=conditions, admission=admission(), created=T0 + created)
    return wl, {CPU: Decimal(cpu)}


def names(wls: list[Workload]) -> list[str]:
    return [w.metadata.name for w in wls]


PREEMPTOR = workload("new", priority=10)


def targets(holding: list[tuple[Workload, dict[tuple[str, str], Decimal]]], wants: int = 2,
            policy: str = LOWER) -> list[str]:
    return names(preemption.find_targets(PREEMPTOR, holding, frozenset({CPU}), {CPU: Decimal(wants)},
                                         NOMINAL, policy, CONFIG, Time(T0 + 100)))


def test_lowest_priority_goes_first_and_no_more_than_needed() -> None:
    holding = [held("a", 2, priority=5), held("b", 2, priority=1)]
    assert targets(holding) == ["b"]


def test_among_equal_priorities_the_most_recently_reserved_goes_first() -> None:
    holding = [held("old", 2, reserved=10), held("recent", 2, reserved=50)]
    assert targets(holding) == ["recent"]


def test_a_workload_evicted_already_goes_first_whatever_its_priority() -> None:
    holding = [held("low", 2, priority=1), held("leaving", 2, priority=5, evicted=True)]
    assert targets(holding) == ["leaving"]


def test_fill_back_keeps_what_the_preemptor_can_spare() -> None:
    # removal order: small, then big; the preemptor fits once big is gone, and then small can
    # come back
    holding = [held("small", 1, priority=1), held("big", 3, priority=2)]
    assert targets(holding, wants=3) == ["big"]
    # with two small ones, both go: the last one removed always stays, the other is needed
    assert targets([held("s1", 1, priority=1), held("s2", 1, priority=2), held("rest", 2, priority=3)]) == \
        ["s1", "s2"]


def test_equal_or_higher_priority_is_never_taken_under_lower_priority() -> None:
    assert targets([held("peer", 4, priority=10)]) == []
    assert targets([held("boss", 4, priority=11)]) == []


def test_lower_or_newer_equal_priority_takes_newer_peers_only() -> None:
    newer = held("newer", 4, priority=10, created=50)
    older = held("older", 4, priority=10, created=-50)
    policy = c.PREEMPTION_POLICY_LOWER_OR_NEWER_EQUAL_PRIORITY
    assert targets([newer], policy=policy) == ["newer"]
    assert targets([older], policy=policy) == []


def test_never_preempts_nothing_and_not_enough_candidates_means_none() -> None:
    assert targets([held("a", 4, priority=1)], policy=c.PREEMPTION_POLICY_NEVER) == []
    assert targets([held("low", 1, priority=1), held("boss", 3, priority=99)], wants=3) == []


def test_only_workloads_using_the_short_flavor_are_candidates() -> None:
    spot = (workload("spot-user", priority=1, conditions=(reserved_in(),), admission=admission()),
            {("spot", "cpu"): Decimal(4)})
    assert targets([spot, held("a", 4, priority=1)]) == ["a"]


def test_the_oracle_answers_one_flavor_and_resource() -> None:
    holding = [held("a", 3, priority=1), held("boss", 1, priority=99)]
    assert preemption.can_make_room(PREEMPTOR, holding, CPU, Decimal(3), NOMINAL, LOWER, CONFIG, Time(T0))
    assert not preemption.can_make_room(PREEMPTOR, holding, CPU, Decimal(4), NOMINAL, LOWER, CONFIG, Time(T0))


@pytest.mark.parametrize("job_uid, expected", [(None, "UNKNOWN"), ("job-1", "job-1")])
def test_message_names_the_preemptor_and_the_queue_path(job_uid: str | None, expected: str) -> None:
    wl = workload("p", uid="uid-p")
    if job_uid is not None:
        from kueue_provreq.api.frozen import FrozenMap
        wl = evolve(wl, metadata=evolve(wl.metadata, labels=FrozenMap({c.LABEL_JOB_UID: job_uid})))
    assert preemption.preemption_message(wl, c.REASON_IN_CLUSTER_QUEUE, "/cq", "/cq") == (
        f"Preempted to accommodate a workload (UID: uid-p, JobUID: {expected}) due to prioritization in the "
        "ClusterQueue; preemptor path: /cq; preemptee path: /cq")


def test_issue_evicts_with_the_preempted_condition_events_and_metrics() -> None:
    victim, _ = held("victim", 2, priority=1)
    preemptor = workload("p", uid="uid-p", priority=10)
    txn = Txn(World([victim, preemptor]), Time(T0 + 5))
    assert preemption.issue(txn, preemptor, preemption.within_queue([victim], "cq"), "cq") == (1, None)
    [update] = [e for e in txn.effects if isinstance(e, Update)]
    new = update.obj
    assert isinstance(new, Workload)
    evicted, preempted = new.condition(c.WORKLOAD_EVICTED), new.condition(c.WORKLOAD_PREEMPTED)
    assert evicted is not None and (evicted.status, evicted.reason) == (c.TRUE, "Preempted")
    assert preempted is not None and (preempted.status, preempted.reason) == (c.TRUE, "InClusterQueue")
    assert evicted.message == preempted.message == preemption.preemption_message(
        preemptor, c.REASON_IN_CLUSTER_QUEUE, "/cq", "/cq")
    assert [t.trigger for t in update.transitions] == ["evict"]
    events = [(e.reason, e.name) for e in txn.effects if isinstance(e, Event)]
    assert events == [("EvictedDueToPreempted", "victim"), ("Preempted", "victim"), ("PreemptedWorkload", "p")]
    priorities = "; preemptor effective priority: 10 (base: 10, boost: 0); preemptee effective priority: 1 " \
                 "(base: 1, boost: 0)"
    assert [e.message for e in txn.effects if isinstance(e, Event)][2] == \
        f"Preempted workload ns/victim (UID: victim-uid) in ClusterQueue cq{priorities}"
    metrics = {(m.name, tuple(sorted(m.labels.items()))) for m in txn.effects if isinstance(m, MetricInc)}
    assert (c.METRIC_PREEMPTED_WORKLOADS, (("preempting_cluster_queue", "cq"), ("reason", "InClusterQueue"))) in metrics


def test_issue_leaves_an_evicted_target_alone_and_counts_it() -> None:
    victim, _ = held("victim", 2, priority=1, evicted=True)
    txn = Txn(World([victim]), Time(T0))
    assert preemption.issue(txn, PREEMPTOR, preemption.within_queue([victim], "cq"), "cq") == (1, None)
    assert txn.effects == []
