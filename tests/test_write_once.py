"""What a controller writes is built once: creates kept as built, conditions and check states
not copied again, a status's derived views filled together, a queue's activity kept with the
objects it depends on (issue 25's controllers that do not redo their work)."""

from __future__ import annotations

from kueue_provreq.api import constants as c
from kueue_provreq.api.evolve import evolve
from kueue_provreq.api.frozen import FrozenMap
from kueue_provreq.api.meta import ObjectMeta, put_condition, set_condition
from kueue_provreq.api.provisioning import PodTemplate
from kueue_provreq.api.queues import (
    AdmissionChecksStrategy,
    AdmissionCheckStrategyRule,
    ClusterQueue,
    ClusterQueueSpec,
    FlavorQuotas,
    ResourceFlavor,
    ResourceGroup,
)
from kueue_provreq.api.workload import WorkloadStatus
from kueue_provreq.controllers.activity import inactive_reason
from kueue_provreq.controllers.workload_status import set_admission_check_state
from kueue_provreq.world import Create, Fault, Txn, World

from builders import T0, at, check_state, cond, workload


def _template(name: str) -> PodTemplate:
    return PodTemplate(ObjectMeta(name=name, namespace="ns"), template=FrozenMap())


def test_a_create_built_with_new_metadata_is_stored_as_built() -> None:
    world = World([workload()])
    txn = Txn(world, at(5))
    pt = PodTemplate(txn.new_metadata("pt", "ns"), template=FrozenMap())
    stored, err = txn.create(pt)
    assert err is None and stored is pt
    assert txn.effects == [Create(pt)]
    # what World.created would have made of the same object without the metadata
    assert pt == world.created(_template("pt"), at(5))
    assert (pt.metadata.uid, pt.metadata.generation, pt.metadata.creation_timestamp) == \
        (world.next_uid(), 1, at(5))


def test_a_failed_create_takes_no_uid_from_the_next() -> None:
    world = World([workload()], faults=(Fault("create", c.POD_TEMPLATE, "Forbidden", name="bad"),))
    txn = Txn(world, at(3))
    _, err = txn.create(PodTemplate(txn.new_metadata("bad", "ns"), template=FrozenMap()))
    assert err is not None
    good = PodTemplate(txn.new_metadata("good", "ns"), template=FrozenMap())
    stored, err = txn.create(good)
    assert err is None and stored is good and good.metadata.uid == world.next_uid()
    second = txn.new_metadata("second", "ns")
    assert second.uid == world.next_uid(1) and second.creation_timestamp == at(3)


def test_put_condition_builds_once_and_answers_a_no_op_with_the_same_tuple() -> None:
    before = (cond(c.WORKLOAD_QUOTA_RESERVED, c.FALSE, "Pending", "waiting", at=T0),)
    assert put_condition(before, c.WORKLOAD_QUOTA_RESERVED, c.FALSE, "Pending", "waiting", 1, at(9)) is before
    moved = put_condition(before, c.WORKLOAD_QUOTA_RESERVED, c.TRUE, "QuotaReserved", "in", 1, at(9))
    assert [(x.status, x.reason, x.last_transition_time) for x in moved] == [(c.TRUE, "QuotaReserved", at(9))]
    reworded = put_condition(before, c.WORKLOAD_QUOTA_RESERVED, c.FALSE, "Other", "still", 2, at(9))
    assert (reworded[0].reason, reworded[0].last_transition_time, reworded[0].observed_generation) == \
        ("Other", T0, 2)
    added = put_condition(before, c.WORKLOAD_ADMITTED, c.FALSE, "NoReservation", "no", 1, at(9))
    assert added[0] is before[0] and added[1].last_transition_time == at(9)
    # set_condition is the same write, answering whether it changed anything
    assert set_condition(before, added[1], at(9)) == (added, True)
    assert set_condition(added, added[1], at(20)) == (added, False)


def test_a_check_state_already_as_written_is_kept_as_it_is() -> None:
    old = check_state("check1", c.CHECK_PENDING, retry_count=2)
    decided = evolve(old, state=c.CHECK_READY, message="provisioned")
    out = set_admission_check_state((old,), decided, at(9))
    assert out[0] is decided
    # without the retryCount it is copied with the old one, as SetAdmissionCheckState keeps it
    fresh = set_admission_check_state((old,), evolve(decided, retry_count=None), at(9))
    assert fresh[0] == decided and fresh[0] is not decided


def test_a_status_fills_both_derived_views_at_the_first_question() -> None:
    wl = workload(conditions=[cond(c.WORKLOAD_QUOTA_RESERVED), cond(c.WORKLOAD_ADMITTED, c.FALSE)])
    status = WorkloadStatus(wl.status.conditions)
    assert status.true_types == (c.WORKLOAD_QUOTA_RESERVED,)
    by_type = WorkloadStatus.__dict__["conditions_by_type"].__get__(status, WorkloadStatus)  # filled already
    assert by_type == {x.type: x for x in status.conditions}
    other = WorkloadStatus(wl.status.conditions)
    assert other.conditions_by_type == by_type
    assert WorkloadStatus.__dict__["true_types"].__get__(other, WorkloadStatus) == (c.WORKLOAD_QUOTA_RESERVED,)


def _queue(*checks: str) -> ClusterQueue:
    return ClusterQueue(ObjectMeta(name="cq"), ClusterQueueSpec(
        resource_groups=(ResourceGroup(("cpu",), (FlavorQuotas("default"),)),),
        admission_checks_strategy=AdmissionChecksStrategy(tuple(AdmissionCheckStrategyRule(n) for n in checks))))


def test_a_queues_activity_follows_the_objects_it_reads() -> None:
    cq = _queue("check1")
    world = World([cq])
    world.hooks.reads = []
    first = inactive_reason(world, cq)
    assert first is not None and first[0] == c.REASON_CQ_FLAVOR_NOT_FOUND
    # the flavor, then the check, read on every call (memoised or not), in upstream's order
    assert [key for key, _ in world.hooks.reads] == [(c.RESOURCE_FLAVOR, "", "default"),
                                                    (c.ADMISSION_CHECK, "", "check1")]
    assert inactive_reason(world, cq) == first and len(world.hooks.reads) == 4
    # a flavor that appears changes the answer: the memo is keyed by what was read
    world.put(ResourceFlavor(ObjectMeta(name="default")))
    assert inactive_reason(world, cq) == (c.REASON_CQ_AC_NOT_FOUND,
                                          "Can't admit new workloads: references missing AdmissionCheck(s): check1.")
