"""AdmissionGatedBy: the ``kueue.x-k8s.io/admission-gated-by`` annotation keeps a workload out of
the queue, marked ``QuotaReserved=False AdmissionGated``, until it is removed; the job webhooks
check its format on create; a Job's gate reaches its Workload."""

from __future__ import annotations

import pytest
from kueue_provreq.api import constants as c
from kueue_provreq.api.config import DEFAULT_FEATURE_GATES, Configuration
from kueue_provreq.api.evolve import evolve
from kueue_provreq.api.meta import ObjectMeta, Time
from kueue_provreq.api.quantity import Quantity
from kueue_provreq.api.queues import (
    EVERY_NAMESPACE,
    ClusterQueue,
    ClusterQueueSpec,
    FlavorQuotas,
    LocalQueue,
    LocalQueueSpec,
    ResourceFlavor,
    ResourceGroup,
    ResourceQuota,
)
from kueue_provreq.api.workload import Workload
from kueue_provreq.controllers import queues, scheduler
from kueue_provreq.controllers import workload as controller
from kueue_provreq.controllers.context import Context
from kueue_provreq.manifests import check_object
from kueue_provreq.world import Event, Update, World

from builders import T0, cond, workload

GATE = "example.com/controller1"
CQ = ClusterQueue(ObjectMeta(name="cq", uid="cq"), ClusterQueueSpec(namespace_selector=EVERY_NAMESPACE, resource_groups=(
    ResourceGroup(("cpu",), (FlavorQuotas("default", (ResourceQuota("cpu", Quantity.parse("5")),)),)),)))
LQ = LocalQueue(ObjectMeta(name="lq", namespace="ns", uid="lq"), LocalQueueSpec("cq"))
RF = ResourceFlavor(ObjectMeta(name="default", uid="rf"))  # the queue can admit: no blocker comes first
GATE_OFF = Configuration(feature_gates=DEFAULT_FEATURE_GATES.set(c.GATE_ADMISSION_GATED_BY, False))


def gated(*conditions: object, gates: str = GATE) -> Workload:
    return workload(annotations={c.ANNOTATION_ADMISSION_GATED_BY: gates}, conditions=conditions)  # type: ignore[arg-type]


def reconcile(wl: Workload, config: Configuration = Configuration()) -> tuple[Workload | None, list[tuple[str, str]]]:
    result = controller.reconcile(World([RF, CQ, LQ, wl]), ("Workload", "ns", "wl"), Context(Time(T0), config))
    written = [e.obj for e in result.effects if isinstance(e, Update) and isinstance(e.obj, Workload)]
    return (written[0] if written else None), [(e.reason, e.message) for e in result.effects if isinstance(e, Event)]


def quota_reserved(wl: Workload) -> tuple[str, str, str]:
    found = wl.condition(c.WORKLOAD_QUOTA_RESERVED)
    assert found is not None
    return found.status, found.reason, found.message


def test_first_sight_of_the_gate_marks_the_workload_and_emits_an_event() -> None:
    new, events = reconcile(gated())
    assert new is not None and quota_reserved(new) == (c.FALSE, "AdmissionGated", f"Admission is gated by: {GATE}")
    assert events == [("AdmissionGated", f"Workload admission is gated by: {GATE}")]


def test_a_marked_workload_is_not_marked_again_even_when_a_gate_is_removed() -> None:
    marked = cond(c.WORKLOAD_QUOTA_RESERVED, c.FALSE, c.REASON_ADMISSION_GATED, f"Admission is gated by: {GATE},b.io/x")
    new, events = reconcile(gated(marked))
    assert events == [] and (new is None or quota_reserved(new)[1] == c.REASON_ADMISSION_GATED)


def test_clearing_the_gate_writes_pending_evaluation_and_emits_an_event() -> None:
    marked = cond(c.WORKLOAD_QUOTA_RESERVED, c.FALSE, c.REASON_ADMISSION_GATED, "m")
    new, events = reconcile(workload(conditions=(marked,)))
    assert new is not None
    assert quota_reserved(new) == (c.FALSE, c.REASON_PENDING_EVALUATION,
                                   "AdmissionGatedBy cleared, waiting for quota reservation")
    assert events == [("AdmissionGateCleared", "Admission gate cleared, workload is now admissible")]


def test_an_empty_annotation_gates_nothing() -> None:
    wl = gated(gates="")
    assert queues.is_admissible(wl, Configuration())
    new, events = reconcile(wl)
    assert events == [] and (new is None or quota_reserved(new)[1] != c.REASON_ADMISSION_GATED)


def test_with_the_feature_gate_off_the_annotation_is_ignored() -> None:
    wl = gated()
    assert queues.is_admissible(wl, GATE_OFF) and not queues.is_admissible(wl, Configuration())
    new, events = reconcile(wl, GATE_OFF)
    assert events == [] and (new is None or quota_reserved(new)[1] != c.REASON_ADMISSION_GATED)


def test_the_scheduler_never_reserves_quota_for_a_gated_workload() -> None:
    world = World([CQ, LQ, gated()])
    assert scheduler.schedule(world, Context(Time(T0))).effects == ()
    assert scheduler.schedule(World([CQ, LQ, workload()]), Context(Time(T0))).effects != ()


def test_a_gated_workload_is_not_pending_in_its_cluster_queue() -> None:
    found = queues.scan(World([CQ, LQ, gated()]), Context(Time(T0)))
    assert queues.pending_counts(found, CQ) == (0, 0)


def job(annotations: dict[str, str]) -> dict[str, object]:
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "j", "namespace": "ns", "annotations": annotations,
                         "labels": {c.LABEL_QUEUE_NAME: "lq"}},
            "spec": {"template": {"spec": {"restartPolicy": "Never",
                                           "containers": [{"name": "c", "image": "busybox"}]}}}}


@pytest.mark.parametrize("value, message", [
    ("example.com/a,,example.com/b", "cannot contain empty gate names"),
    ("example.com/a, example.com/a", "duplicate gate name: example.com/a"),
    ("controller1", "must be a domain-prefixed path"),
    ("Example.com/a", "a DNS-1123 subdomain"),
    ("example.com/" + "a" * 60, "may not be more than 63 characters"),
])
def test_the_job_webhook_refuses_malformed_gates(value: str, message: str) -> None:
    checked = check_object(job({c.ANNOTATION_ADMISSION_GATED_BY: value}))
    assert any(message in str(e) and c.ANNOTATION_ADMISSION_GATED_BY in str(e) for e in checked.errors), checked.errors


def test_well_formed_gates_pass_and_reach_the_workload() -> None:
    from kueue_provreq.controllers.job import workload_for

    checked = check_object(job({c.ANNOTATION_ADMISSION_GATED_BY: "example.com/a, b.io/x"}))
    assert checked.errors == () and checked.obj is not None
    obj = evolve(checked.obj, metadata=evolve(checked.obj.metadata, uid="job-uid"))
    wl = workload_for(obj, Configuration())  # type: ignore[arg-type]
    assert wl.metadata.annotations[c.ANNOTATION_ADMISSION_GATED_BY] == "example.com/a, b.io/x"
    assert c.ANNOTATION_ADMISSION_GATED_BY not in workload_for(obj, GATE_OFF).metadata.annotations  # type: ignore[arg-type]
