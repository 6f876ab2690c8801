"""The input layer: strict fields, every error of every file, cluster dumps, names, duplicates,
the layers of server-side validation, Kueue Configuration files."""

from __future__ import annotations

import copy
import io
import textwrap
from pathlib import Path
from typing import Any

import pytest
from kueue_provreq.api import constants as c
from kueue_provreq.api.job import Job
from kueue_provreq.api.workload import Workload
from kueue_provreq.manifests import ManifestError, check_object, load_configuration, load_configuration_file
from kueue_provreq.manifests.inputs import (
    MAX_ERRORS,
    InputErrors,
    generated_name,
    load_inputs,
    newest_timestamp,
)
from kueue_provreq.manifests.objects import IGNORE, WARN
from kueue_provreq.manifests.validation import MAX_DOCUMENT_BYTES

V1B2 = c.KUEUE_V1BETA2
CONTAINER = {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}


def job(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "default"},
            "spec": {"template": {"spec": {"containers": [dict(CONTAINER)], "restartPolicy": "Never"}}, **spec}}


def errors_of(data: dict[str, Any], **kwargs: Any) -> list[tuple[str, str]]:
    return [(e.path, e.reason) for e in check_object(data, **kwargs).errors]


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return str(path)


# --- strict field validation ----------------------------------------------------------------------

MISSPELLED = [
    ({"apiVersion": V1B2, "kind": "ClusterQueue", "metadata": {"name": "cq"},
      "spec": {"admissionCheckStrategy": {"admissionChecks": [{"name": "prov"}]}}},
     "spec.admissionCheckStrategy", '"admissionChecksStrategy"'),
    (job(paralelism=3), "spec.paralelism", '"parallelism"'),
    ({"apiVersion": V1B2, "kind": "ProvisioningRequestConfig", "metadata": {"name": "prc"},
      "spec": {"provisioningClassName": "check-capacity.autoscaling.x-k8s.io", "managedResource": ["gpu"]}},
     "spec.managedResource", '"managedResources"'),
    ({**job(), "metadata": {"name": "j", "namespace": "default", "lables": {}}}, "metadata.lables", '"labels"'),
    ({"apiVersion": V1B2, "kind": "Workload", "metadata": {"name": "w", "namespace": "n"},
      "spec": {"podSets": [{"template": {"spec": {"containers": [{"name": "c", "imagee": "x"}]}}}]}},
     "spec.podSets[0].template.spec.containers[0].imagee", '"image"'),
]


@pytest.mark.parametrize(("data", "path", "hint"), MISSPELLED, ids=["cq", "job", "prc", "metadata", "template"])
def test_a_misspelled_field_is_an_error_naming_the_known_ones(data: dict[str, Any], path: str, hint: str) -> None:
    (error,) = check_object(data).errors
    assert error.path == path
    assert error.reason.startswith(f"unknown field, did you mean {hint}? (known: ")


@pytest.mark.parametrize(("data", "path", "hint"), MISSPELLED[:3], ids=["cq", "job", "prc"])
def test_validate_warn_reports_unknown_fields_and_drops_them_ignore_drops_them(
        data: dict[str, Any], path: str, hint: str) -> None:
    warned = check_object(data, validation=WARN)
    assert warned.obj is not None and warned.errors == ()
    assert [w.path for w in warned.warnings] == [path]
    ignored = check_object(data, validation=IGNORE)
    assert ignored.obj == warned.obj and ignored.warnings == ()


def test_a_real_job_with_every_field_the_server_sets_passes_strict_validation() -> None:
    dump = job(parallelism=1, completions=1, backoffLimit=6, completionMode="NonIndexed", suspend=True,
               manualSelector=False, podReplacementPolicy="TerminatingOrFailed",
               selector={"matchLabels": {"batch.kubernetes.io/controller-uid": "8a1e"}})
    dump["metadata"].update(
        uid="8a1e", resourceVersion="123", generation=1, creationTimestamp="2024-01-01T00:00:00Z",
        labels={"batch.kubernetes.io/controller-uid": "8a1e", "kueue.x-k8s.io/queue-name": "lq"},
        annotations={"kubectl.kubernetes.io/last-applied-configuration": '{"apiVersion":"batch/v1"}'},
        managedFields=[{"apiVersion": "batch/v1", "fieldsType": "FieldsV1", "manager": "kubectl",
                        "operation": "Update", "time": "2024-01-01T00:00:00Z",
                        "fieldsV1": {"f:spec": {"f:parallelism": {}}}}])
    template = dump["spec"]["template"]
    template["metadata"] = {"creationTimestamp": None, "labels": {"batch.kubernetes.io/job-name": "j"}}
    template["spec"].update(dnsPolicy="ClusterFirst", schedulerName="default-scheduler", securityContext={},
                            terminationGracePeriodSeconds=30)
    template["spec"]["containers"][0].update(imagePullPolicy="Always", terminationMessagePath="/dev/termination-log",
                                             terminationMessagePolicy="File")
    dump["status"] = {"conditions": [{"type": "Suspended", "status": "True", "reason": "JobSuspended",
                                      "message": "Job suspended", "lastProbeTime": "2024-01-01T00:00:01Z",
                                      "lastTransitionTime": "2024-01-01T00:00:01Z"}]}
    checked = check_object(dump)
    assert checked.errors == () and isinstance(checked.obj, Job)


# --- every error, one line each --------------------------------------------------------------------

def test_every_error_of_every_file_is_reported(tmp_path: Path) -> None:
    a = write(tmp_path, "a.yaml", """\
        apiVersion: batch/v1
        kind: Job
        metadata: {name: j, namespace: default}
        spec:
          paralelism: 3
          template: {spec: {containers: [{name: c, image: x}], restartPolicy: Always}}
        """)
    b = write(tmp_path, "b.yaml", """\
        apiVersion: kueue.x-k8s.io/v1beta2
        kind: ClusterQueue
        metadata: {name: cq}
        spec: {admissionCheckStrategy: {admissionChecks: [{name: prov}]}}
        """)
    with pytest.raises(InputErrors) as e:
        load_inputs([a, b])
    lines = e.value.lines()
    assert len(lines) == 3
    assert lines[0].startswith(f"{a}:5: Job default/j: spec.paralelism: unknown field")
    assert lines[1].startswith(f"{a}:6: Job default/j: spec.template.spec.restartPolicy: unsupported value 'Always'")
    assert lines[2].startswith(f"{b}:4: ClusterQueue cq: spec.admissionCheckStrategy: unknown field")


def test_a_yaml_error_in_one_file_does_not_hide_the_errors_of_another(tmp_path: Path) -> None:
    write(tmp_path, "a.yaml", "a: [\n")
    write(tmp_path, "b.yaml", "apiVersion: v1\nkind: PodTemplate\nmetadata: {name: t, namespace: n}\n")
    with pytest.raises(InputErrors) as e:
        load_inputs([str(tmp_path)])
    assert len(e.value.errors) == 1 and "while parsing" in e.value.lines()[0]


def test_errors_past_the_limit_are_counted() -> None:
    errors = [ManifestError(f"problem {i}") for i in range(MAX_ERRORS + 7)]
    lines = InputErrors(errors).lines()
    assert len(lines) == MAX_ERRORS + 1 and lines[-1] == "... and 7 more errors"


# --- what the server accepts stays accepted --------------------------------------------------------

def test_a_negative_retry_limit_is_a_warning_not_an_error() -> None:
    checked = check_object({"apiVersion": V1B2, "kind": "ProvisioningRequestConfig", "metadata": {"name": "prc"},
                            "spec": {"provisioningClassName": "cls", "retryStrategy": {"backoffLimitCount": -1}}})
    assert checked.obj is not None and checked.errors == ()
    (warning,) = checked.warnings
    assert (warning.path, warning.reason) == ("spec.retryStrategy.backoffLimitCount",
                                              "-1 acts as 0: a failed request is not retried")


# --- the layers of server-side validation ----------------------------------------------------------

def _with(data: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    out = copy.deepcopy(data)
    node = out
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return out


CONTAINER_PATH = ("spec", "template", "spec", "containers", 0)
LAYERS = [
    # required lists, missing or null
    ({"apiVersion": c.KUEUE_V1BETA1, "kind": "Workload", "metadata": {"name": "w", "namespace": "n"},
      "spec": {"podSets": None}}, "spec.podSets", "required value"),
    ({"apiVersion": c.KUEUE_V1BETA1, "kind": "Workload", "metadata": {"name": "w", "namespace": "n"},
      "spec": {}}, "spec.podSets", "required value"),
    ({"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "t", "namespace": "n"}, "template": {}},
     "template.spec.containers", "required value"),
    ({"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "t", "namespace": "n"},
      "template": {"spec": {"containers": None}}}, "template.spec.containers", "required value"),
    # core validation of pod specs: field types, ranges
    (_with(job(), (*CONTAINER_PATH, "args"), "--epochs=1"), "spec.template.spec.containers[0].args",
     "expected a list, got '--epochs=1'"),
    (_with(job(), (*CONTAINER_PATH, "ports"), [{"containerPort": 70000}]),
     "spec.template.spec.containers[0].ports[0].containerPort", "must be between 1 and 65535, inclusive"),
    (_with(job(), ("spec", "template", "spec", "activeDeadlineSeconds"), 0),
     "spec.template.spec.activeDeadlineSeconds", "must be between 1 and 2147483647, inclusive"),
    (job(activeDeadlineSeconds=0), "spec.activeDeadlineSeconds", "must be greater than or equal to 1"),
    (job(parallelism=2**31), "spec.parallelism", "must be between -2147483648 and 2147483647 (int32)"),
    # quantities of extended resources
    (_with(job(), (*CONTAINER_PATH, "resources"), {"limits": {"nvidia.com/gpu": "500m"}}),
     "spec.template.spec.containers[0].resources.limits[nvidia.com/gpu]", "must be an integer"),
    (_with(job(), (*CONTAINER_PATH, "resources"), {"requests": {"nvidia.com/gpu": 1}, "limits": {"nvidia.com/gpu": 2}}),
     "spec.template.spec.containers[0].resources.requests[nvidia.com/gpu]", "must be equal to nvidia.com/gpu limit of 2"),
    (_with(job(), (*CONTAINER_PATH, "resources"), {"requests": {"gpu": 1}}),
     "spec.template.spec.containers[0].resources.requests[gpu]", "must be a standard resource for containers"),
    # Kueue webhook rules
    ({"apiVersion": V1B2, "kind": "Workload", "metadata": {"name": "w", "namespace": "n"},
      "spec": {"podSets": [{"template": {"spec": {"containers": [
          {"name": "c", "resources": {"requests": {"pods": 1}}}]}}}]}},
     "spec.podSets[0].template.spec.containers[0].resources.requests[pods]", "the key is reserved for internal kueue use"),
    ({"apiVersion": V1B2, "kind": "ResourceFlavor", "metadata": {"name": "f"}, "spec": {"nodeTaints": [
        {"key": "gpu", "effect": "NoSchedule"}, {"key": "gpu", "value": "x", "effect": "NoSchedule"}]}},
     "spec.nodeTaints[1]", "duplicate value 'gpu': taints must be unique by key and effect pair"),
    # enum values of condition fields, every kind, both versions
    ({"apiVersion": c.KUEUE_V1BETA1, "kind": "ClusterQueue", "metadata": {"name": "cq"},
      "status": {"conditions": [{"type": "Active", "status": "yes", "reason": "R", "message": "",
                                 "lastTransitionTime": "2024-01-01T00:00:00Z"}]}},
     "status.conditions[0].status", "unsupported value 'yes': supported values: 'True', 'False', 'Unknown'"),
    ({"apiVersion": V1B2, "kind": "LocalQueue", "metadata": {"name": "lq", "namespace": "n"},
      "spec": {"clusterQueue": "cq"}, "status": {"conditions": [
          {"type": "Active", "status": "true", "reason": "R", "message": "", "lastTransitionTime": "2024-01-01T00:00:00Z"}]}},
     "status.conditions[0].status", "unsupported value 'true': supported values: 'True', 'False', 'Unknown'"),
]


@pytest.mark.parametrize(("data", "path", "reason"), LAYERS)
def test_each_layer_of_server_validation_names_the_object_and_field(data: dict[str, Any], path: str,
                                                                   reason: str) -> None:
    assert (path, reason) in errors_of(data)


def test_an_oversized_manifest_names_the_field_that_makes_it_so() -> None:
    data = _with(job(), ("metadata", "annotations"), {"blob": "x" * (MAX_DOCUMENT_BYTES + 10)})
    (error,) = check_object(data).errors
    assert error.path == "metadata.annotations.blob"
    assert error.reason == "larger than 3 MiB (metadata.annotations.blob alone holds more than 1 MiB)"


# --- cluster dumps -----------------------------------------------------------------------------------

DUMP = """\
apiVersion: v1
kind: List
metadata: {resourceVersion: ""}
items:
- apiVersion: v1
  kind: Pod
  metadata: {name: p, namespace: default}
  spec: {containers: [{name: c, image: x}]}
- apiVersion: v1
  kind: Event
  metadata: {name: e, namespace: default}
  lastTimestamp: "2024-01-01T00:05:00Z"
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: cm, namespace: default}
- apiVersion: example.com/v1
  kind: Widget
  metadata: {name: w}
- apiVersion: kueue.x-k8s.io/v1beta2
  kind: ResourceFlavor
  metadata:
    name: default-flavor
    uid: 2f1c
    resourceVersion: "42"
    generation: 1
    creationTimestamp: "2024-01-01T00:00:00Z"
    annotations:
      kubectl.kubernetes.io/last-applied-configuration: |
        {"apiVersion":"kueue.x-k8s.io/v1beta2","kind":"ResourceFlavor","metadata":{"name":"default-flavor"}}
    managedFields:
    - {apiVersion: kueue.x-k8s.io/v1beta2, fieldsType: FieldsV1, fieldsV1: {"f:spec": {}}, manager: kubectl,
       operation: Update, time: "2024-01-01T00:01:00Z"}
  spec: {}
- apiVersion: kueue.x-k8s.io/v1beta2
  kind: Cohort
  metadata: {name: all}
"""


def test_a_kubectl_list_dump_loads_its_modelled_objects_and_counts_the_rest(tmp_path: Path) -> None:
    inputs = load_inputs([write(tmp_path, "dump.yaml", DUMP)])
    assert [(o.KIND, o.metadata.name) for o in inputs.objects] == [("ResourceFlavor", "default-flavor"), ("Cohort", "all")]
    assert inputs.skipped_line() == (
        "skipped 4 objects of kinds the model does not use: "
        "1 ConfigMap (v1), 1 Event (v1), 1 Pod (v1), 1 Widget (example.com/v1)")
    assert inputs.newest_timestamp == 1704067500  # the Event's 00:05, newer than every other time


def test_a_typed_list_gives_its_items_their_kind(tmp_path: Path) -> None:
    text = ("apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavorList\nitems:\n"
            "- metadata: {name: a}\n- metadata: {name: b}\n")
    assert [o.KIND for o in load_inputs([write(tmp_path, "l.yaml", text)]).objects] == ["ResourceFlavor"] * 2


@pytest.mark.parametrize(("api_version", "kind", "path"), [
    ("kueue.x-k8s.io/v1beta2", "ClusterQueu", "kind"),
    ("v1", "PodTemplat", "kind"),
    ("batch/v1", "Jbo", "kind"),
    ("apps/v1", "Deploymnet", "kind"),
    ("kueue.x-k8s.io/v1beta3", "Workload", "apiVersion"),
])
def test_a_misspelled_kind_or_version_in_a_known_group_is_an_error(tmp_path: Path, api_version: str, kind: str,
                                                                   path: str) -> None:
    source = write(tmp_path, "x.yaml", f"apiVersion: {api_version}\nkind: {kind}\nmetadata: {{name: x}}\n")
    with pytest.raises(InputErrors) as e:
        load_inputs([source])
    assert [err.path for err in e.value.errors] == [path]


def test_newest_timestamp_ignores_times_to_come() -> None:
    docs = [{"metadata": {"creationTimestamp": "2024-01-01T00:00:00Z"},
             "status": {"requeueState": {"requeueAt": "2030-01-01T00:00:00Z"}}}]
    assert newest_timestamp(docs) == 1704067200
    assert newest_timestamp([{"a": 1}]) is None


# --- names and duplicates ---------------------------------------------------------------------------

SAMPLE_JOB = """\
apiVersion: batch/v1
kind: Job
metadata: {generateName: sample-job-, namespace: default}
spec:
  template: {spec: {containers: [{name: c, image: x}], restartPolicy: Never}}
"""


def test_each_generate_name_object_gets_its_own_reproducible_name(tmp_path: Path) -> None:
    source = write(tmp_path, "jobs.yaml", SAMPLE_JOB + "---\n" + SAMPLE_JOB)
    names = [o.metadata.name for o in load_inputs([source]).objects]
    assert names == [generated_name("default", "sample-job-", 0), generated_name("default", "sample-job-", 1)]
    assert len(set(names)) == 2
    assert names == [o.metadata.name for o in load_inputs([source]).objects]


def test_an_object_defined_twice_is_applied_in_order_with_a_warning_naming_both(tmp_path: Path) -> None:
    a = write(tmp_path, "a.yaml", "apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\n"
                                  "metadata: {name: lq, namespace: n, uid: u1}\nspec: {clusterQueue: one}\n")
    b = write(tmp_path, "b.yaml", "apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\n"
                                  "metadata: {name: lq, namespace: n}\nspec: {clusterQueue: two}\n")
    inputs = load_inputs([a, b])
    (lq,) = inputs.objects
    assert (lq.spec.cluster_queue, lq.metadata.uid) == ("two", "u1")  # type: ignore[union-attr]
    (warning,) = inputs.warnings
    assert str(warning) == (f"{b}:1: LocalQueue n/lq: also defined at {a}:1; this definition is applied "
                            "over it, as kubectl apply would")


# --- the job kinds of other groups --------------------------------------------------------------------

def test_upstream_jobset_and_pytorchjob_are_checked(upstream: Path) -> None:
    for name in ("jobs-sample-jobset.yaml", "jobs-sample-pytorchjob.yaml"):
        inputs = load_inputs([str(upstream / "examples" / name)])
        assert inputs.skipped_line() is not None or inputs.objects


def test_a_bad_jobset_template_is_an_error(tmp_path: Path) -> None:
    text = ("apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {name: js, namespace: n}\n"
            "spec:\n  replicatedJobs:\n  - name: w\n    template: {spec: {template: {spec: {containers: "
            "[{name: c, image: x, args: oops}]}}}}\n")
    with pytest.raises(InputErrors) as e:
        load_inputs([write(tmp_path, "js.yaml", text)])
    (error,) = e.value.errors
    assert error.path == "spec.replicatedJobs[0].template.spec.template.spec.containers[0].args"


# --- inputs of the wrong kind -----------------------------------------------------------------------

def test_a_scenario_given_as_manifests_says_so(tmp_path: Path) -> None:
    with pytest.raises(InputErrors) as e:
        load_inputs([write(tmp_path, "s.yaml", "name: a story\nsteps: []\n")])
    assert e.value.lines() == [f"{tmp_path}/s.yaml:1: scenario 'a story': a conformance scenario, not a "
                               "manifest: give scenarios to run or conform"]


def test_standard_input(tmp_path: Path) -> None:
    inputs = load_inputs(["-"], stdin=io.StringIO(SAMPLE_JOB))
    assert isinstance(inputs.objects[0], Job)


# --- Kueue Configuration files ---------------------------------------------------------------------

def test_configuration_file_v1beta2(tmp_path: Path) -> None:
    config = load_configuration_file(write(tmp_path, "c.yaml", """\
        apiVersion: config.kueue.x-k8s.io/v1beta2
        kind: Configuration
        manageJobsWithoutQueueName: true
        waitForPodsReady: {timeout: 5m}
        featureGates: {KeepQuotaForProvReqRetry: true}
        integrations: {frameworks: [batch/job]}
        """))
    assert config.manage_jobs_without_queue_name is True and config.frameworks == ("batch/job",)
    assert config.wait_for_pods_ready is not None and config.wait_for_pods_ready.timeout == 300
    assert config.gate(c.GATE_KEEP_QUOTA_FOR_PROVREQ_RETRY) is True


def test_configuration_file_v1beta1_in_kueues_config_map(tmp_path: Path) -> None:
    config = load_configuration_file(write(tmp_path, "cm.yaml", """\
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: kueue-manager-config, namespace: kueue-system}
        data:
          controller_manager_config.yaml: |
            apiVersion: config.kueue.x-k8s.io/v1beta1
            kind: Configuration
            health: {healthProbeBindAddress: ":8081"}
            waitForPodsReady: {enable: true}
        """))
    wait = config.wait_for_pods_ready
    assert wait is not None and (wait.timeout, wait.block_admission) == (1800, True)
    assert load_configuration({"apiVersion": "config.kueue.x-k8s.io/v1beta1", "kind": "Configuration"},
                              scenario=False).wait_for_pods_ready is None


@pytest.mark.parametrize(("text", "path"), [
    ("apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\nwaitForPodReady: {}\n", "waitForPodReady"),
    ("apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\nadmissionCheckSemantics: current\n",
     "admissionCheckSemantics"),
    ("kind: Configuration\n", "apiVersion"),
])
def test_a_configuration_file_is_read_strictly(tmp_path: Path, text: str, path: str) -> None:
    with pytest.raises(ManifestError) as e:
        load_configuration_file(write(tmp_path, "c.yaml", text))
    assert e.value.path == path and e.value.obj == "Configuration"


def test_the_workload_a_job_becomes_is_one_per_generated_name(tmp_path: Path) -> None:
    from kueue_provreq.api.config import Configuration
    from kueue_provreq.controllers.context import Context
    from kueue_provreq.engine import Manager
    from kueue_provreq.world import World
    objects = load_inputs([write(tmp_path, "jobs.yaml", SAMPLE_JOB + "---\n" + SAMPLE_JOB)]).objects
    world = World(objects)
    Manager(world).settle(Context(now=0, config=Configuration(manage_jobs_without_queue_name=True)))
    assert len([o for o in world if isinstance(o, Workload)]) == 2
