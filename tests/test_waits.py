"""What a waiting workload waits for (``explain``'s WAITS FOR column): an admission gate, and
under KEP-993 the scheduler's admission of a reservation whose checks are all Ready."""

from __future__ import annotations

from kueue_provreq.api import constants as c
from kueue_provreq.api.config import SEMANTICS_KEP_993_PREEMPTION, Configuration
from kueue_provreq.api.meta import ObjectMeta
from kueue_provreq.api.quantity import Quantity
from kueue_provreq.api.queues import (
    EVERY_NAMESPACE,
    ClusterQueue,
    ClusterQueueSpec,
    FlavorQuotas,
    LocalQueue,
    LocalQueueSpec,
    ResourceGroup,
    ResourceQuota,
)
from kueue_provreq.api.workload import Workload, WorkloadSpec
from kueue_provreq.controllers.context import Context
from kueue_provreq.waits import waits
from kueue_provreq.world import World

from builders import T0, admission, check_state, cond, reserved_in, workload

CQ = ClusterQueue(ObjectMeta(name="cq", uid="cq"), ClusterQueueSpec(namespace_selector=EVERY_NAMESPACE, resource_groups=(
    ResourceGroup(("cpu",), (FlavorQuotas("default", (ResourceQuota("cpu", Quantity.parse("5")),)),)),)))
LQ = LocalQueue(ObjectMeta(name="lq", namespace="ns", uid="lq"), LocalQueueSpec("cq"))
KEP_993 = Configuration(semantics=frozenset({SEMANTICS_KEP_993_PREEMPTION}))


def waits_of(wl: Workload, config: Configuration = Configuration()) -> tuple[str, ...]:
    (wait,) = waits(World([CQ, LQ, wl]), Context(T0, config))
    return tuple(record.text for record in wait.waits_for)


def test_what_a_workload_waits_for_is_a_record_in_json() -> None:
    """-o json|yaml: kind, object, reason, since and the next step, not free text."""
    wl = Workload(ObjectMeta(name="wl", namespace="ns", uid="wl"), WorkloadSpec(queue_name="nowhere"))
    (wait,) = waits(World([CQ, LQ, wl]), Context(T0))
    assert wait.to_json()["waitsFor"] == [{"kind": "LocalQueue", "object": "ns/nowhere", "reason": "does not exist",
                                           "since": None, "next": None}]


def test_a_gated_workload_waits_for_its_gates() -> None:
    wl = workload(annotations={c.ANNOTATION_ADMISSION_GATED_BY: "example.com/a"})
    assert waits_of(wl) == (f"its admission gates to be removed ({c.ANNOTATION_ADMISSION_GATED_BY}: "
                            "example.com/a)",)


def ready_reservation(*conditions: object) -> Workload:
    return workload(conditions=(reserved_in(), *conditions), admission=admission(),  # type: ignore[arg-type]
                    checks=(check_state(state=c.CHECK_READY),))


def test_every_check_ready_waits_for_the_workload_controller() -> None:
    assert waits_of(ready_reservation()) == ("the workload controller to set Admitted (every check is Ready)",)


def test_under_kep_993_it_waits_for_the_scheduler_and_says_why() -> None:
    message = "Pending the preemption of 1 workload(s)"
    wl = ready_reservation(cond(c.WORKLOAD_ADMITTED, c.FALSE, c.REASON_WAITING_FOR_PREEMPTED_WORKLOADS, message))
    assert waits_of(wl, KEP_993) == ("the scheduler to set Admitted once the workload fits beside what may "
                                     f"still run (KEP-993): {message}",)


def test_a_workload_of_a_stopped_local_queue_waits_for_it_to_run_again() -> None:
    stopped = LocalQueue(ObjectMeta(name="lq", namespace="ns", uid="lq"),
                         LocalQueueSpec("cq", stop_policy=c.STOP_POLICY_HOLD))
    (wait,) = waits(World([CQ, stopped, workload()]), Context(T0))
    assert [r.text for r in wait.waits_for] == ["LocalQueue ns/lq to run again (stopPolicy Hold)"]
    assert wait.next == ("queued once its stopPolicy is None",)
