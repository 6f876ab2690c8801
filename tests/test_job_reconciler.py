"""The job reconciler for jobs (jobframework/reconciler.go): which jobs Kueue manages, the Workload
it creates for them, the webhook's defaults on create, starting a job once admitted and stopping
it, all through the engine every entry point uses (``World`` + ``Manager.settle``, the runner,
``explain``, the explorer)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from kueue_provreq.api import constants as c
from kueue_provreq.api.config import Configuration
from kueue_provreq.api.evolve import evolve
from kueue_provreq.api.frozen import FrozenMap, freeze
from kueue_provreq.api.job import Job, JobSet, JobSetSpec, JobSpec, JobTemplate, PyTorchJob, ReplicatedJob
from kueue_provreq.api.meta import ObjectMeta, OwnerReference
from kueue_provreq.api.naming import generated_name
from kueue_provreq.api.objects import KubeObject
from kueue_provreq.api.queues import LocalQueue, LocalQueueSpec, ResourceFlavor, ResourceFlavorSpec
from kueue_provreq.api.workload import Admission, AdmissionCheckState, PodSetAssignment, PodSetUpdate, Workload
from kueue_provreq.controllers import job as reconciler
from kueue_provreq.controllers.context import Context
from kueue_provreq.controllers.integrations import INTEGRATIONS
from kueue_provreq.engine import Manager, Recorder
from kueue_provreq.explore.search import probe
from kueue_provreq.world import Event, Txn, Update, World

import builders
from builders import NS, T0, cli, cond

POD = freeze({"spec": {"restartPolicy": "Never", "containers": [
    {"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}]}})
LABELLED = FrozenMap({c.LABEL_QUEUE_NAME: "lq"})
MJWQN = Configuration(manage_jobs_without_queue_name=True)


def job(name: str = "j", labels: FrozenMap[str, str] = LABELLED, suspend: bool | None = None,
        uid: str | None = None, owners: tuple[OwnerReference, ...] = (), **spec: Any) -> Job:
    return Job(ObjectMeta(name=name, namespace=NS, uid=f"{name}-uid" if uid is None else uid, labels=labels,
                          owner_references=owners), JobSpec(suspend=suspend, template=POD, **spec))


def jobset(name: str = "js", labels: FrozenMap[str, str] = LABELLED) -> JobSet:
    return JobSet(ObjectMeta(name=name, namespace=NS, uid=f"{name}-uid", labels=labels),
                  JobSetSpec((ReplicatedJob("workers", JobTemplate(spec=JobSpec(template=POD)), 2),)))


def settle(*objects: KubeObject, config: Configuration = Configuration()) -> tuple[World, list[Event]]:
    world = World(objects)
    events: list[Event] = []
    Manager(world, Recorder(lambda _, __, e: events.append(e) if isinstance(e, Event) else None)).settle(
        Context(now=T0, config=config))
    return world, events


def workloads(world: World) -> list[Workload]:
    return [o for o in world.objects(c.WORKLOAD) if isinstance(o, Workload)]


# --- World(objs) + Manager.settle creates the Workload ----------------------------------------------

def test_a_world_and_a_settle_give_a_job_its_workload() -> None:
    world, events = settle(job())
    (wl,) = workloads(world)
    assert wl.metadata.name == "job-j-" + hashlib.sha1(b"Job\nbatch\nj\nj-uid").hexdigest()[:5]
    assert (wl.spec.queue_name, [(ps.name, ps.count) for ps in wl.spec.pod_sets]) == ("lq", [("main", 1)])
    assert wl.metadata.uid and wl.metadata.creation_timestamp == T0 and wl.metadata.generation == 1
    # without the webhook the reconciler suspends the running job before it creates the Workload
    assert world.get(c.JOB, NS, "j").spec.suspend is True  # type: ignore[union-attr]
    assert [(e.reason, e.message, e.kind) for e in events if e.kind in (c.JOB,)] == [
        (c.EVENT_STOPPED, c.MSG_MISSING_WORKLOAD, c.JOB),
        (c.EVENT_CREATED_WORKLOAD, f"Created Workload: {NS}/{wl.metadata.name}", c.JOB)]


def test_a_world_refuses_an_object_without_a_name_and_created_completes_generate_name() -> None:
    nameless = evolve(job(), metadata=evolve(job().metadata, name="",
                                                          extra=FrozenMap({"generateName": "sample-job-"})))
    with pytest.raises(ValueError, match=r"Job ns/\(no name\)"):
        World([nameless])
    world = World()
    first = world.created(nameless, T0)
    world.put(first)
    second = world.created(nameless, T0)
    assert (first.metadata.name, second.metadata.name) == (generated_name(NS, "sample-job-", 0),
                                                           generated_name(NS, "sample-job-", 1))


def test_each_job_kind_gets_its_own_workload_once() -> None:
    pt = PyTorchJob(ObjectMeta(name="pt", namespace=NS, uid="pt-uid", labels=LABELLED))
    world, _ = settle(job(), jobset(), pt)
    owners = sorted(wl.metadata.owner_references[0].kind for wl in workloads(world))
    assert owners == ["Job", "JobSet", "PyTorchJob"]
    # nothing left to do: a second settle creates nothing more
    Manager(world).settle(Context(now=T0 + 1))
    assert len(workloads(world)) == 3


def test_a_workload_that_names_the_job_is_used_as_it_is() -> None:
    given = builders.workload("made-elsewhere", owners=(OwnerReference(c.BATCH_V1, c.JOB, "j", "j-uid", True),))
    world, _ = settle(job(suspend=True), given)
    assert [wl.metadata.name for wl in workloads(world)] == ["made-elsewhere"]


def test_a_workload_of_another_job_of_that_name_does_not_count() -> None:
    other = builders.workload("old", owners=(OwnerReference(c.BATCH_V1, c.JOB, "j", "previous-uid", True),))
    assert reconciler.workload_of(World([job(), other]), job()) is None


# --- who manages a job ------------------------------------------------------------------------------

@pytest.mark.parametrize("obj, config, managed, why", [
    (job(), Configuration(), True, "LocalQueue lq"),
    (job(labels=FrozenMap()), Configuration(), False, "no kueue.x-k8s.io/queue-name label, and "
                                                      "manageJobsWithoutQueueName is off"),
    (job(labels=FrozenMap()), MJWQN, True, "manageJobsWithoutQueueName is on"),
    (job(), Configuration(frameworks=(c.FRAMEWORK_JOBSET,)), False, "the batch/job integration is not enabled"),
])
def test_management(obj: Job, config: Configuration, managed: bool, why: str) -> None:
    verdict = reconciler.management(World([obj]), obj, config)
    assert verdict.managed is managed and why in verdict.why and verdict.error is None


def child(owner_uid: str = "js-uid", uid: str | None = None) -> Job:
    return job("js-workers-0", uid=uid, owners=(OwnerReference(c.JOBSET_V1ALPHA2, c.JOBSET, "js", owner_uid, True),))


def test_a_job_under_a_managed_jobset_is_the_jobsets() -> None:
    verdict = reconciler.management(World([jobset(), child()]), child(), Configuration())
    assert not verdict.managed and "JobSet js" in verdict.why
    world, _ = settle(jobset(), child())
    assert [wl.metadata.owner_references[0].kind for wl in workloads(world)] == ["JobSet"]


@pytest.mark.parametrize("parent, config", [
    (jobset(labels=FrozenMap()), Configuration()),              # the JobSet itself is not managed
    (jobset(), Configuration(frameworks=(c.FRAMEWORK_JOB,))),   # its integration is not enabled
])
def test_a_job_under_an_unmanaged_jobset_is_its_own(parent: JobSet, config: Configuration) -> None:
    assert reconciler.management(World([parent, child()]), child(), config).managed


def test_a_stale_owner_reference_makes_the_job_its_own() -> None:
    assert reconciler.management(World([jobset(), child("other-uid")]), child("other-uid"), Configuration()).managed


def test_an_owner_that_cannot_be_read_is_a_reconcile_error() -> None:
    verdict = reconciler.management(World([child()]), child(), Configuration())
    assert verdict.error == 'JobSet.jobset.x-k8s.io "js" not found'
    result = reconciler.reconcile(World([child()]), (c.JOB, NS, "js-workers-0"), Context(now=T0))
    assert result.error == verdict.error and not result.effects


# --- the webhook on create ------------------------------------------------------------------------------

def default_queue() -> LocalQueue:
    return LocalQueue(ObjectMeta(name=c.DEFAULT_LOCAL_QUEUE_NAME, namespace=NS), LocalQueueSpec("cq"))


def test_the_webhook_suspends_a_job_kueue_manages() -> None:
    assert reconciler.defaulted(World(), job(uid=""), Configuration()).spec.suspend is True  # type: ignore[union-attr]
    unlabeled = job(labels=FrozenMap(), uid="")
    assert reconciler.defaulted(World(), unlabeled, Configuration()) is unlabeled
    assert reconciler.defaulted(World(), unlabeled, MJWQN).spec.suspend is True  # type: ignore[union-attr]


def test_the_webhook_gives_an_unlabeled_job_the_local_queue_named_default() -> None:
    new = reconciler.defaulted(World([default_queue()]), job(labels=FrozenMap(), uid=""), Configuration())
    assert new.metadata.labels == {c.LABEL_QUEUE_NAME: "default"} and new.spec.suspend is True  # type: ignore[union-attr]


@pytest.mark.parametrize("obj, config", [
    (child(uid=""), Configuration()),                                              # owned by a managed kind
    (job(uid=""), Configuration(frameworks=(c.FRAMEWORK_JOBSET,))),                # no webhook for it
    (job(), Configuration()),                                                      # stored already (a uid)
])
def test_the_webhook_leaves_alone(obj: Job, config: Configuration) -> None:
    unlabeled = evolve(obj, metadata=evolve(obj.metadata, labels=FrozenMap()))
    assert reconciler.defaulted(World([default_queue(), jobset()]), unlabeled, config) is unlabeled


# --- start and stop -------------------------------------------------------------------------------------

def admitted(pod_set_updates: tuple[PodSetUpdate, ...] = ()) -> tuple[Job, Workload, ResourceFlavor]:
    j = job(suspend=True, parallelism=4)
    wl = reconciler.workload_for(j, Configuration())
    wl = evolve(wl, metadata=evolve(wl.metadata, uid="wl-uid")).with_status(
        conditions=(builders.reserved_in(), builders.ADMITTED),
        admission=Admission("cq", (PodSetAssignment("main", FrozenMap({"cpu": "on-demand"}), count=4),)),
        admission_checks=(AdmissionCheckState("prov", c.CHECK_READY, T0, pod_set_updates=pod_set_updates),))
    flavor = ResourceFlavor(ObjectMeta(name="on-demand"), ResourceFlavorSpec(
        node_labels=FrozenMap({"instance": "a3"}), tolerations=(freeze({"key": "gpu", "operator": "Exists"}),)))
    return j, wl, flavor


def reconcile_job(*objects: KubeObject, config: Configuration = Configuration()
                  ) -> tuple[list[KubeObject], list[Event], str | None]:
    result = reconciler.reconcile(World(objects), (c.JOB, NS, "j"), Context(now=T0, config=config))
    return ([e.obj for e in result.effects if isinstance(e, Update)],
            [e for e in result.effects if isinstance(e, Event)], result.error)


def test_an_admitted_job_is_started_with_its_flavors_and_checks() -> None:
    update = PodSetUpdate("main", annotations=FrozenMap({c.ANNOTATION_CONSUME_PROVISIONING_REQUEST: "r-1"}))
    j, wl, flavor = admitted((update,))
    (started,), (event,), error = reconcile_job(j, wl, flavor)
    assert error is None and isinstance(started, Job) and started.spec.suspend is False
    assert started.spec.template["metadata"] == {
        "labels": {c.LABEL_POD_SET: "main"},
        # the Workload's name: TopologyAwareScheduling is on by default
        "annotations": {c.ANNOTATION_WORKLOAD: wl.metadata.name, c.ANNOTATION_CONSUME_PROVISIONING_REQUEST: "r-1"}}
    assert started.spec.template["spec"]["nodeSelector"] == {"instance": "a3"}
    assert started.spec.template["spec"]["tolerations"] == ({"key": "gpu", "operator": "Exists"},)
    assert (event.reason, event.message) == (c.EVENT_STARTED, "Admitted by clusterQueue cq")


def test_without_topology_aware_scheduling_the_pods_do_not_carry_the_workload_name() -> None:
    config = Configuration(feature_gates=FrozenMap({c.GATE_TOPOLOGY_AWARE_SCHEDULING: False}))
    (started,), _, _ = reconcile_job(*admitted(), config=config)
    assert isinstance(started, Job)
    assert started.spec.template["metadata"] == {"labels": {c.LABEL_POD_SET: "main"}}


def test_a_conflict_between_a_flavor_and_a_check_finishes_the_workload() -> None:
    """``podset.IsPermanent``: the job cannot start, so the Workload is finished (FailedToStart,
    the error as message, the check named in double quotes) and the job stays suspended."""
    clash = PodSetUpdate("main", node_selector=FrozenMap({"instance": "b2"}))
    j, wl, flavor = admitted((clash,))
    updates, events, error = reconcile_job(j, wl, flavor)
    assert (events, error) == ([], None)
    (finished,) = updates
    assert isinstance(finished, Workload)
    done = finished.condition(c.WORKLOAD_FINISHED)
    assert done is not None and (done.status, done.reason, done.message) == (
        c.TRUE, "FailedToStart", 'in admission check "prov": invalid admission check PodSetUpdate: conflict for '
        "nodeSelector: conflict for key=instance, value1=a3, value2=b2")


def test_a_missing_flavor_is_a_reconcile_error() -> None:
    j, wl, _ = admitted()
    assert reconcile_job(j, wl)[2] == 'ResourceFlavor.kueue.x-k8s.io "on-demand" not found'


def test_a_stopped_job_gets_its_template_back() -> None:
    j, wl, flavor = admitted()
    (started,), _, _ = reconcile_job(j, wl, flavor)
    evicted = wl.with_status(conditions=(*wl.status.conditions, cond(c.WORKLOAD_EVICTED, c.TRUE, "Preempted", "why")))
    result = reconciler.reconcile(World([started, evicted, flavor]), (c.WORKLOAD, NS, wl.metadata.name),
                                  Context(now=T0))
    (stopped,) = [e.obj for e in result.effects if isinstance(e, Update) and isinstance(e.obj, Job)]
    assert stopped.spec == j.spec  # suspended, the template as the Workload recorded it
    assert [(e.reason, e.message) for e in result.effects if isinstance(e, Event)] == [(c.EVENT_STOPPED, "why")]


@pytest.mark.parametrize("kind", [c.JOBSET, c.PYTORCH_JOB])
def test_a_suspended_jobset_or_pytorchjob_is_not_touched_by_a_stop(kind: str) -> None:
    obj = jobset() if kind == c.JOBSET else PyTorchJob(ObjectMeta(name="j", namespace=NS))
    obj = INTEGRATIONS[kind].with_suspend(obj, True)
    txn = Txn(World([obj]), T0)
    assert reconciler.stop_job(txn, obj, None, "m") is None and txn.effects == []


def test_a_running_job_whose_workload_is_not_admitted_is_stopped() -> None:
    j = job(suspend=False)
    wl = reconciler.workload_for(j, Configuration())
    updates, events, _ = reconcile_job(j, wl)
    assert [u.spec.suspend for u in updates] == [True]  # type: ignore[union-attr]
    assert [e.message for e in events] == [c.MSG_NOT_ADMITTED]


def test_a_suspended_jobs_new_queue_name_is_copied_to_its_workload() -> None:
    j = job(suspend=True)
    wl = evolve(reconciler.workload_for(j, Configuration()), spec=evolve(
        reconciler.workload_for(j, Configuration()).spec, queue_name="old"))
    (updated,), _, _ = reconcile_job(j, wl)
    assert isinstance(updated, Workload) and updated.spec.queue_name == "lq"


# --- every entry point ----------------------------------------------------------------------------------

def test_the_explorer_sees_the_job_reconcile_as_a_step() -> None:
    changing, _ = probe(World([job(suspend=True)]), Context(now=T0))
    assert ("job", (c.JOB, NS, "j")) in changing


def test_explain_reports_an_unlabeled_job_as_not_managed(tmp_path: Any) -> None:
    path = tmp_path / "job.yaml"
    path.write_text("apiVersion: batch/v1\nkind: Job\nmetadata: {name: plain, namespace: default}\n"
                    "spec:\n  template: {spec: {restartPolicy: Never, containers: [{name: c, image: x}]}}\n")
    out = cli("explain", "-f", str(path), "--at", "2024-01-01T00:00:00Z")
    assert out.returncode == 0, out.stderr
    assert ("Job default/plain is not managed by Kueue: no kueue.x-k8s.io/queue-name label, and "
            "manageJobsWithoutQueueName is off; it runs as its own controller runs it") in out.stdout
    assert "  workload " not in out.stdout
    config = tmp_path / "config.yaml"
    config.write_text("apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"
                      "manageJobsWithoutQueueName: true\n")
    out = cli("explain", "-f", str(path), "--at", "2024-01-01T00:00:00Z", "--config", str(config))
    assert "Job default/plain is managed by Kueue: no kueue.x-k8s.io/queue-name label" in out.stdout
    assert "no spec.queueName" in out.stdout


def test_explain_describes_the_workloads_of_every_job_of_upstreams_examples(upstream: Any) -> None:
    out = cli("explain", "-f", str(upstream / "examples"), "--at", "2024-01-01T00:00:00Z", "-o", "json")
    # upstream's own minimal-cq.yaml is refused by its ClusterQueue webhook; the rest is explained
    assert out.returncode == 2
    (error,) = [line for line in out.stderr.splitlines() if ": error: " in line]
    assert "minimal-cq.yaml" in error
    state = json.loads(out.stdout)["state"]
    managed = {s["subject"].split()[0] for s in state if s["state"] == "managed by Kueue"}
    assert managed == {"Job", "JobSet", "PyTorchJob"}
    workloads = [s["subject"] for s in state if s["subject"].startswith("workload ")]
    assert any("/jobset-sleep-job-" in w for w in workloads) and any("/pytorchjob-pytorch-simple-" in w
                                                                    for w in workloads)
    assert len(workloads) == 5  # three Jobs (two from generateName), a JobSet, a PyTorchJob


def test_an_admission_for_another_number_of_podsets_finishes_the_workload() -> None:
    js = INTEGRATIONS[c.JOBSET].with_suspend(jobset(), True)
    wl = reconciler.workload_for(js, Configuration())
    extra = evolve(wl.spec.pod_sets[0], name="extra")
    wl = evolve(wl, spec=evolve(wl.spec, pod_sets=(*wl.spec.pod_sets, extra))).with_status(
        conditions=(builders.reserved_in(), builders.ADMITTED),
        admission=Admission("cq", tuple(PodSetAssignment(ps, FrozenMap()) for ps in ("workers", "extra"))))
    result = reconciler.reconcile(World([js, wl]), (c.JOBSET, NS, "js"), Context(now=T0))
    (update,) = result.effects
    assert result.error is None and isinstance(update, Update) and isinstance(update.obj, Workload)
    done = update.obj.condition(c.WORKLOAD_FINISHED)  # ErrInvalidPodsetInfo is permanent too
    assert done is not None and (done.reason, done.message) == (
        "FailedToStart", "invalid podset infos: expecting 1 podset, got 2")
