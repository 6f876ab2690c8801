"""The job kinds Kueue turns into Workloads: batch/v1 Job, JobSet and Kubeflow PyTorchJob as
models (manifests in and out, losslessly), their podsets named and counted as Kueue's integrations
count them, their Workloads named as jobframework names them, and the kinds the model does not
have skipped with a note."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kueue_provreq.api import constants as c
from kueue_provreq.api import naming
from kueue_provreq.api.config import Configuration
from kueue_provreq.api.job import Job, JobSet, JobSpec, PyTorchJob
from kueue_provreq.api.meta import ObjectMeta
from kueue_provreq.api.objects import KINDS
from kueue_provreq.controllers.integrations import INTEGRATIONS
from kueue_provreq.controllers.job import workload_for
from kueue_provreq.manifests import ManifestError, dump_object, load_object
from kueue_provreq.manifests.inputs import load_inputs

CONTAINER = {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}
POD = {"spec": {"restartPolicy": "Never", "containers": [CONTAINER]}}


def jobset(*replicated: dict[str, Any], **meta: Any) -> dict[str, Any]:
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": "js", "namespace": "ns", **meta}, "spec": {"replicatedJobs": list(replicated)}}


def replicated(name: str, replicas: int | None = None, **job_spec: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "template": {"spec": {**job_spec, "template": POD}}}
    if replicas is not None:
        out["replicas"] = replicas
    return out


def pytorchjob(**specs: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "pt", "namespace": "ns"},
            "spec": {"pytorchReplicaSpecs": {t: {"template": POD, **s} for t, s in specs.items()}}}


def batch_job(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "ns"},
            "spec": {**spec, "template": POD}}


def pod_sets(doc: dict[str, Any]) -> list[tuple[str, int, int | None]]:
    obj = load_object(doc)
    return [(ps.name, ps.count, ps.min_count) for ps in INTEGRATIONS[obj.KIND].pod_sets(obj)]


# --- models ------------------------------------------------------------------------------------------

def test_every_model_has_its_kind_on_the_class_and_on_each_object() -> None:
    for kind, cls in KINDS.items():
        assert cls.kind == cls.KIND == kind
    assert load_object(jobset(replicated("w"))).kind == "JobSet"


@pytest.mark.parametrize("doc", [
    jobset(replicated("workers", 2, parallelism=3, completions=6), replicated("driver"),
           labels={"kueue.x-k8s.io/queue-name": "lq"}),
    pytorchjob(Master={"replicas": 1, "restartPolicy": "OnFailure"}, Worker={"replicas": 4}),
    batch_job(parallelism=2, completions=4, backoffLimit=0),
], ids=["jobset", "pytorchjob", "job"])
def test_job_manifests_load_and_dump_losslessly(doc: dict[str, Any]) -> None:
    obj = load_object(doc)
    again = load_object(dump_object(obj))
    assert again == obj
    assert dump_object(again) == dump_object(obj)


def test_fields_the_model_does_not_read_are_kept() -> None:
    doc = jobset(replicated("w"))
    doc["spec"]["network"] = {"enableDNSHostnames": False, "subdomain": "s"}
    doc["spec"]["replicatedJobs"][0]["dependsOn"] = [{"name": "x", "status": "Ready"}]
    dumped = dump_object(load_object(doc))
    assert dumped["spec"]["network"] == {"enableDNSHostnames": False, "subdomain": "s"}
    assert dumped["spec"]["replicatedJobs"][0]["dependsOn"] == [{"name": "x", "status": "Ready"}]


def test_a_replicated_job_without_replicas_is_one_as_the_crd_defaults_it() -> None:
    js = load_object(jobset(replicated("w")))
    assert isinstance(js, JobSet) and js.spec.replicated_jobs[0].replicas == 1
    assert dump_object(js)["spec"]["replicatedJobs"][0]["replicas"] == 1


# --- podsets ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("spec, count", [
    ({}, 1), ({"parallelism": 3}, 3), ({"parallelism": 5, "completions": 2}, 2),
    ({"parallelism": 2, "completions": 4}, 2), ({"completions": 3}, 1), ({"parallelism": 0}, 0),
])
def test_a_job_runs_parallelism_pods_capped_by_completions(spec: dict[str, int], count: int) -> None:
    assert pod_sets(batch_job(**spec)) == [("main", count, None)]


def test_a_jobset_has_a_podset_per_replicated_job_of_replicas_times_its_pods() -> None:
    """jobset_controller.go PodSets and podsCount: replicas × min(parallelism (1), completions)."""
    doc = jobset(replicated("workers", 3, parallelism=4, completions=2), replicated("driver"),
                 replicated("idle", 0, parallelism=5))
    assert pod_sets(doc) == [("workers", 6, None), ("driver", 1, None), ("idle", 0, None)]


def test_a_pytorchjob_has_master_then_worker_those_present_replicas_default_one() -> None:
    """kubeflowjob_controller.go: OrderedReplicaTypes, lower-case names, Deref(replicas, 1)."""
    assert pod_sets(pytorchjob(Worker={"replicas": 3}, Master={})) == [("master", 1, None), ("worker", 3, None)]
    assert pod_sets(pytorchjob(Worker={"replicas": 2})) == [("worker", 2, None)]


def test_job_min_parallelism_is_the_podsets_min_count() -> None:
    doc = batch_job(parallelism=20, completions=20)
    doc["metadata"]["annotations"] = {c.ANNOTATION_JOB_MIN_PARALLELISM: "5"}
    assert pod_sets(doc) == [("main", 20, 5)]


def test_the_batch_controllers_labels_are_left_out_of_the_workloads_template() -> None:
    doc = batch_job()
    doc["spec"]["template"] = {"metadata": {"labels": {"controller-uid": "u", "job-name": "j",
                                                       "batch.kubernetes.io/controller-uid": "u",
                                                       "batch.kubernetes.io/job-name": "j", "app": "a"}},
                               "spec": POD["spec"]}
    job = load_object(doc)
    (ps,) = INTEGRATIONS[c.JOB].pod_sets(job)
    assert ps.template["metadata"]["labels"] == {"batch.kubernetes.io/job-name": "j", "app": "a"}


@given(st.integers(0, 50), st.integers(0, 50) | st.none(), st.integers(0, 50) | st.none())
def test_job_pods_count_is_kueues(replicas: int, parallelism: int | None, completions: int | None) -> None:
    spec = JobSpec(parallelism=parallelism, completions=completions)
    expected = 1 if parallelism is None else parallelism
    if completions is not None and completions < expected:
        expected = completions
    assert spec.pods_count == expected


# --- the Workload -------------------------------------------------------------------------------------

@pytest.mark.parametrize("job, prefix, digest_input", [
    (Job(ObjectMeta(name="sample", namespace="ns", uid="u1")), "job-sample", "Job\nbatch\nsample\nu1"),
    (JobSet(ObjectMeta(name="sleep", namespace="ns", uid="u2")), "jobset-sleep",
     "JobSet\njobset.x-k8s.io\nsleep\nu2"),
    (PyTorchJob(ObjectMeta(name="pt", namespace="ns", uid="u3")), "pytorchjob-pt", "PyTorchJob\nkubeflow.org\npt\nu3"),
])
def test_the_workload_is_named_as_jobframework_names_it(job: Any, prefix: str, digest_input: str) -> None:
    import hashlib
    wl = workload_for(job, Configuration())
    assert wl.metadata.name == f"{prefix}-{hashlib.sha1(digest_input.encode()).hexdigest()[:5]}"
    (owner,) = wl.metadata.owner_references
    assert (owner.kind, owner.name, owner.uid, owner.controller) == (job.KIND, job.metadata.name,
                                                                     job.metadata.uid, True)


def test_a_long_name_keeps_247_characters_before_the_hash() -> None:
    """maxPrefixLength is 253 - 1 - 5 (the explain module cut at 241 before)."""
    name = naming.workload_name_for_owner("JobSet", c.JOBSET_GROUP, "x" * 300, "u")
    assert len(name) == 253 and name.startswith("jobset-" + "x" * 240 + "-")


def test_the_workload_carries_the_job_uid_label_provreq_annotations_queue_and_priority() -> None:
    meta = ObjectMeta(name="j", namespace="ns", uid="00000000-0000-4000-8000-000000000001",
                      labels={c.LABEL_QUEUE_NAME: "lq"},  # type: ignore[arg-type]
                      annotations={"provreq.kueue.x-k8s.io/maxRunDurationSeconds": "600", "other": "x"})  # type: ignore[arg-type]
    wl = workload_for(Job(meta), Configuration())
    assert wl.metadata.labels == {c.LABEL_JOB_UID: meta.uid}
    assert wl.metadata.annotations == {"provreq.kueue.x-k8s.io/maxRunDurationSeconds": "600"}
    assert (wl.spec.queue_name, wl.spec.priority, wl.spec.active) == ("lq", 0, True)


def test_min_count_is_dropped_with_the_partial_admission_gate_off() -> None:
    job = load_object({**batch_job(parallelism=4), "metadata": {
        "name": "j", "namespace": "ns", "annotations": {c.ANNOTATION_JOB_MIN_PARALLELISM: "2"}}})
    assert isinstance(job, Job)
    assert workload_for(job, Configuration()).spec.pod_sets[0].min_count == 2
    off = Configuration(feature_gates=Configuration().feature_gates.set(c.GATE_PARTIAL_ADMISSION, False))
    assert workload_for(job, off).spec.pod_sets[0].min_count is None


# --- the Job webhook's partial admission rule -------------------------------------------------------------

@pytest.mark.parametrize("value, spec, reason", [
    ("5", {"parallelism": 5}, "5: should be between 0 and 4"),
    ("0", {"parallelism": 5}, "0: should be between 0 and 4"),
    ("3", {"parallelism": 5, "completions": 3}, "3: should be between 0 and 2"),
    ("1", {}, "1: should be between 0 and 0"),
    ("five", {"parallelism": 5}, "'five': strconv.Atoi: parsing \"five\": invalid syntax"),
])
def test_job_min_parallelism_must_be_below_the_pods_count(value: str, spec: dict[str, int], reason: str) -> None:
    doc = batch_job(**spec)
    doc["metadata"]["annotations"] = {c.ANNOTATION_JOB_MIN_PARALLELISM: value}
    with pytest.raises(ManifestError) as e:
        load_object(doc)
    assert e.value.path == f"metadata.annotations[{c.ANNOTATION_JOB_MIN_PARALLELISM}]"
    assert e.value.reason == reason


def test_a_valid_min_parallelism_loads() -> None:
    doc = batch_job(parallelism=5)
    doc["metadata"]["annotations"] = {c.ANNOTATION_JOB_MIN_PARALLELISM: "+4"}
    assert isinstance(load_object(doc), Job)


# --- inputs ---------------------------------------------------------------------------------------------

def test_jobsets_and_pytorchjobs_load_and_other_job_kinds_are_skipped_with_a_note(tmp_path: Path) -> None:
    import yaml
    tfjob = {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": "tf", "namespace": "ns"},
             "spec": {}}
    path = tmp_path / "jobs.yaml"
    path.write_text(yaml.safe_dump_all([jobset(replicated("w")), pytorchjob(Worker={}), tfjob]))
    inputs = load_inputs([str(path)])
    assert [o.KIND for o in inputs.objects] == ["JobSet", "PyTorchJob"]
    assert inputs.skipped_line() == "skipped 1 object of kinds the model does not use: 1 TFJob (kubeflow.org/v1)"


def test_a_job_without_a_namespace_is_in_default_as_kubectl_puts_it(tmp_path: Path) -> None:
    import yaml
    doc = jobset(replicated("w"))
    del doc["metadata"]["namespace"]
    path = tmp_path / "js.yaml"
    path.write_text(yaml.safe_dump(doc))
    (obj,) = load_inputs([str(path)]).objects
    assert obj.metadata.namespace == "default"
