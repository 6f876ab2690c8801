"""Writing to a cluster, at the HTTP boundary: a reconcile's effects applied through the client
(status patches with field manager and resourceVersion, preconditioned deletes, conflicts that
requeue), answered with what the real API server answered when tests/data/cluster/record.py
applied the same effects, computed from the same healthy cluster, to it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kueue_provreq.api.evolve import evolve
from kueue_provreq.api.meta import Time
from kueue_provreq.cluster import client
from kueue_provreq.cluster.apply import apply_effects
from kueue_provreq.cluster.snapshot import to_objects
from kueue_provreq.controllers import provisioning, workload
from kueue_provreq.controllers.context import Context
from kueue_provreq.manifests import dump_object
from kueue_provreq.manifests.codec import format_time, parse_time
from kueue_provreq.world import Create, Result, World

from apiserver import RecordedAPIServer
from recorded import DATA, items
from recorded import workload as workload_named

TUNE_D = workload_named("healthy", "tune-d")
WL = ("Workload", "ml", TUNE_D)
PR_PATH = "/apis/autoscaling.x-k8s.io/v1/namespaces/ml/provisioningrequests"
WL_PATH = f"/apis/kueue.x-k8s.io/v1beta2/namespaces/ml/workloads/{TUNE_D}"
#: What the real API server answered to each batch of writes (see tests/data/cluster/record.py).
WRITES: dict[str, list[dict[str, Any]]] = json.loads((DATA / "writes" / "apiserver.json").read_text())
#: A second after tune-d's Retry is due (its requeueAt): the workload controller evicts it.
DUE = format_time(parse_time(next(i for i in items("healthy") if i["metadata"]["name"] == TUNE_D)
                             ["status"]["requeueState"]["requeueAt"]) + 1)


def healthy_world() -> World:
    return World(to_objects(list(items("healthy")))[0])


def reconcile(controller: str, world: World, at: str) -> Result:
    fn = {"workload": workload.reconcile, "provisioning": provisioning.reconcile}[controller]
    return fn(world.copy(), WL, Context(now=Time(parse_time(at))))


@pytest.fixture
def world() -> World:
    return healthy_world()


def connect(server: RecordedAPIServer, tmp_path: Path) -> client.Client:
    return client.connect(str(server.kubeconfig(tmp_path)))


# --- apply_effects -----------------------------------------------------------------------------------


def test_eviction_is_a_status_patch_and_an_event(world: World, tmp_path: Path) -> None:
    """The workload controller evicts tune-d when its Retry is due: one merge patch of the status
    subresource, conditioned on the resourceVersion read, then the event; metrics make no call."""
    result = reconcile("workload", world, DUE)
    exchanges = WRITES["eviction"]
    assert [ex["request"]["path"] for ex in exchanges] == [f"{WL_PATH}/status", "/api/v1/namespaces/ml/events"]
    with RecordedAPIServer(exchanges) as server, connect(server, tmp_path) as api:
        applied = apply_effects(api, result.effects, world, "kueue", Time(parse_time(DUE)))
    assert server.unexpected == [] and applied.errors == () and not applied.requeue
    patch, event = server.requests
    assert patch.headers["content-type"] == "application/merge-patch+json"
    old = world.get(*WL)
    assert old is not None
    assert patch.body["metadata"] == {"resourceVersion": old.metadata.extra["resourceVersion"]}
    assert set(patch.body) == {"metadata", "status"}  # nothing but the status is sent
    evicted_cond = next(cd for cd in patch.body["status"]["conditions"] if cd["type"] == "Evicted")
    assert evicted_cond["status"] == "True" and evicted_cond["reason"] == "AdmissionCheck"
    assert patch.body["status"]["admissionChecks"][0]["message"] == \
        "Reset to Pending after eviction. Previously: Retry"
    assert event.body["involvedObject"] == {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
                                            "name": TUNE_D, "namespace": "ml",
                                            "uid": old.metadata.uid}
    assert event.body["reason"] == "EvictedDueToAdmissionCheck" and event.body["type"] == "Normal"
    # the server's answer: the workload evicted, under a new resourceVersion
    written = applied.written[0]
    assert written["metadata"]["resourceVersion"] != old.metadata.extra["resourceVersion"]
    assert {cd["type"]: cd["status"] for cd in written["status"]["conditions"]}["Evicted"] == "True"


def test_delete_carries_preconditions(world: World, tmp_path: Path) -> None:
    """After the eviction the provisioning controller deletes the failed request: only that
    object (uid), only as it was read (resourceVersion)."""
    for effect in reconcile("workload", world, DUE).effects:
        world.apply(effect)
    result = reconcile("provisioning", world, DUE)
    name = f"{TUNE_D}-gpu-capacity-1"
    with RecordedAPIServer(WRITES["delete"]) as server, connect(server, tmp_path) as api:
        applied = apply_effects(api, result.effects, world, "kueue", Time(0))
    assert not applied.requeue and server.unexpected == []
    pr = world.get("ProvisioningRequest", "ml", name)
    assert pr is not None
    (delete,) = server.requests
    assert delete.body["preconditions"] == {"uid": pr.metadata.uid,
                                            "resourceVersion": pr.metadata.extra["resourceVersion"]}


def test_a_conflict_requeues_and_stops_the_batch(world: World, tmp_path: Path) -> None:
    result = reconcile("workload", world, DUE)
    """The same eviction from the same read, once the first has changed the workload: the
    server refuses it (409 Conflict) and nothing else of the batch is sent."""
    (exchange,) = WRITES["conflict"]
    assert exchange["response"]["body"]["message"] == (
        f'Operation cannot be fulfilled on workloads.kueue.x-k8s.io "{TUNE_D}": the object has been modified; '
        "please apply your changes to the latest version and try again")
    with RecordedAPIServer([exchange]) as server, connect(server, tmp_path) as api:
        applied = apply_effects(api, result.effects, world, "kueue", Time(0))
    assert applied.requeue and applied.errors == () and applied.written == ()
    assert [r.method for r in server.requests] == ["PATCH"]  # the event was not sent


def test_create_leaves_out_what_the_server_sets(world: World, tmp_path: Path) -> None:
    template = next(o for o in world.objects("PodTemplate"))
    fresh = evolve(template, metadata=evolve(template.metadata, name="ppt-new-main"))
    with RecordedAPIServer(WRITES["create"]) as server, connect(server, tmp_path) as api:
        first = apply_effects(api, [Create(fresh)], world, "kueue", Time(0))
        again = apply_effects(api, [Create(fresh)], world, "kueue", Time(0))
    body = server.requests[0].body
    assert body["metadata"]["name"] == "ppt-new-main"
    assert not {"uid", "resourceVersion", "creationTimestamp", "managedFields"} & set(body["metadata"])
    assert body["metadata"]["ownerReferences"] == [r for r in dump_object(template)["metadata"]["ownerReferences"]]
    assert not first.requeue and again.requeue and again.errors == ()
    # the server set what the body left out, and refused the namesake
    made = first.written[0]["metadata"]
    assert made["uid"] != template.metadata.uid and made["managedFields"][0]["manager"] == "kueue"
    assert WRITES["create"][1]["response"]["body"]["reason"] == "AlreadyExists"
