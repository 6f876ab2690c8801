"""The manifests edge: codec, API versions, CRD defaults, Configuration, strict YAML."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kueue_provreq.api import constants as c
from kueue_provreq.api.config import (
    DEFAULT_FEATURE_GATES,
    Configuration,
    RequeuingStrategy,
)
from kueue_provreq.api.frozen import FrozenMap
from kueue_provreq.api.job import Job
from kueue_provreq.api.meta import Condition, ObjectMeta
from kueue_provreq.api.provisioning import (
    PodTemplate,
    ProvisioningRequest,
    ProvisioningRequestConfig,
    RetryStrategy,
)
from kueue_provreq.api.quantity import Quantity
from kueue_provreq.api.queues import (
    AdmissionCheck,
    ClusterQueue,
    FlavorUsage,
    LocalQueue,
    ResourceFlavor,
    ResourceUsage,
)
from kueue_provreq.api.workload import PodSet, Workload, WorkloadSpec
from kueue_provreq.manifests import (
    ManifestError,
    check_object,
    decode,
    dump_object,
    encode,
    format_duration,
    load_configuration,
    load_file,
    load_object,
    load_yaml_documents,
    parse_duration,
)

from upstream_examples import examples, refused

V1B2 = c.KUEUE_V1BETA2
V1B1 = c.KUEUE_V1BETA1
TEMPLATE = {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}


def workload(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": V1B2, "kind": "Workload",
            "metadata": {"namespace": "default", "name": "wl"},
            "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 2, "template": TEMPLATE}],
                     **spec}}


def error_of(data: Any) -> ManifestError:
    with pytest.raises(ManifestError) as info:
        load_object(data)
    return info.value


def assert_contained(given: Any, dumped: Any, path: str = "") -> None:
    """Every key and value of ``given`` is in ``dumped`` (defaults may be added)."""
    if isinstance(given, dict):
        assert isinstance(dumped, dict), path
        for key, value in given.items():
            assert key in dumped, f"{path}.{key} lost"
            assert_contained(value, dumped[key], f"{path}.{key}")
    elif isinstance(given, list):
        assert isinstance(dumped, list) and len(dumped) == len(given), path
        for i, (a, b) in enumerate(zip(given, dumped, strict=True)):
            assert_contained(a, b, f"{path}[{i}]")
    else:
        assert type(given) is type(dumped) and given == dumped, f"{path}: {given!r} != {dumped!r}"


# --- errors -----------------------------------------------------------------------

def test_error_names_object_path_and_reason() -> None:
    data = workload()
    data["spec"]["podSets"][0]["count"] = "x"
    e = error_of(data)
    assert str(e) == "Workload default/wl: spec.podSets[0].count: expected an integer, got 'x'"
    assert (e.obj, e.path, e.reason, e.source) == (
        "Workload default/wl", "spec.podSets[0].count", "expected an integer, got 'x'", "")
    assert isinstance(e, ValueError)


def test_error_for_cluster_scoped_object_has_no_namespace() -> None:
    e = error_of({"apiVersion": V1B2, "kind": "ClusterQueue", "metadata": {"name": "cq"},
                  "spec": {"queueingStrategy": 5}})
    assert str(e) == "ClusterQueue cq: spec.queueingStrategy: expected a string, got 5"


@pytest.mark.parametrize(("field", "value", "reason"), [
    ("count", True, "expected an integer, got true"),
    ("count", 1.5, "expected an integer, got 1.5"),
    ("name", 3, "expected a string, got 3"),
    ("minCount", [1], "expected an integer, got a list"),
    ("template", "x", "expected an object, got 'x'"),
])
def test_known_keys_must_have_their_type(field: str, value: Any, reason: str) -> None:
    data = workload()
    data["spec"]["podSets"][0][field] = value
    e = error_of(data)
    assert (e.path, e.reason) == (f"spec.podSets[0].{field}", reason)


def test_unknown_field_of_a_class_without_extra_is_an_error() -> None:
    data = workload()
    data["status"] = {"requeueState": {"count": 1, "bogus": 2}}
    e = error_of(data)
    assert e.path == "status.requeueState.bogus"
    assert e.reason.startswith("unknown field (known: count, requeueAt)")


def test_bad_quantity_time_and_map_values() -> None:
    data = workload()
    data["status"] = {"admission": {"clusterQueue": "cq", "podSetAssignments": [
        {"name": "main", "resourceUsage": {"cpu": "1x"}}]}}
    e = error_of(data)
    assert e.path == "status.admission.podSetAssignments[0].resourceUsage[cpu]"
    assert "unable to parse quantity's suffix" in e.reason

    data["status"] = {"requeueState": {"requeueAt": "yesterday"}}
    assert error_of(data).reason.startswith("expected an RFC 3339 time")

    data = workload()
    data["metadata"]["labels"] = {"a": 1}
    assert (error_of(data).path, error_of(data).reason) == (
        "metadata.labels[a]", "expected a string, got 1")


# --- codec -------------------------------------------------------------------------

def test_decode_derives_camel_case_keys_and_keeps_unknown_keys_in_extra() -> None:
    ps = decode(PodSet, {"name": "main", "minCount": 1, "template": {"spec": {}},
                         "topologyRequest": {"required": "rack"}})
    assert ps == PodSet(name="main", min_count=1, template=FrozenMap({"spec": FrozenMap()}),
                        extra=FrozenMap({"topologyRequest": FrozenMap({"required": "rack"})}))
    assert encode(ps) == {"name": "main", "count": 1, "template": {"spec": {}}, "minCount": 1,
                          "topologyRequest": {"required": "rack"}}


def test_decode_prefixes_the_given_path() -> None:
    with pytest.raises(ManifestError) as info:
        decode(PodSet, {"name": 1}, "spec.podSets[3]")
    assert info.value.path == "spec.podSets[3].name"


def test_null_is_absent_and_required_values_are_checked() -> None:
    assert decode(PodSet, {"name": "main", "count": None, "template": {"spec": {}}}).count == 1
    with pytest.raises(ManifestError) as info:
        decode(Condition, {"type": "Ready"})
    assert (info.value.path, info.value.reason) == ("status", "required value")


def test_encode_omits_empty_values_but_keeps_optional_empties_and_extra() -> None:
    spec = WorkloadSpec(extra=FrozenMap({"preemptionGates": ()}))
    assert encode(spec) == {"preemptionGates": []}
    pr = load_object({"apiVersion": c.AUTOSCALING_V1, "kind": "ProvisioningRequest",
                      "metadata": {"namespace": "ns", "name": "pr"},
                      "spec": {"provisioningClassName": "cls", "parameters": {},
                               "podSets": [{"podTemplateRef": {"name": "t"}, "count": 1}]}})
    assert isinstance(pr, ProvisioningRequest)
    assert dump_object(pr)["spec"]["parameters"] == {}
    assert "status" not in dump_object(pr)


def test_condition_message_is_written_even_when_empty() -> None:
    cond = Condition(type="Ready", status="True", reason="R", last_transition_time=None)
    assert encode(cond) == {"type": "Ready", "status": "True", "reason": "R", "message": ""}


def test_quantities_keep_their_spelling_and_compare_by_value() -> None:
    cq = load_object({"apiVersion": V1B2, "kind": "ClusterQueue", "metadata": {"name": "cq"},
                      "spec": {"resourceGroups": [{"coveredResources": ["cpu", "memory"], "flavors": [
                          {"name": "f", "resources": [{"name": "cpu", "nominalQuota": 9},
                                                      {"name": "memory", "nominalQuota": "36Gi"}]}]}]}})
    assert isinstance(cq, ClusterQueue)
    resources = cq.spec.resource_groups[0].flavors[0].resources
    assert resources[0].nominal_quota == Quantity.parse("9000m")
    dumped = dump_object(cq)["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
    assert [r["nominalQuota"] for r in dumped] == [9, "36Gi"]


def test_times_are_whole_seconds_in_rfc3339() -> None:
    meta = decode(ObjectMeta, {"name": "x", "creationTimestamp": "2024-01-01T00:00:00.999999999Z"})
    assert meta.creation_timestamp == 1704067200
    assert encode(meta)["creationTimestamp"] == "2024-01-01T00:00:00Z"
    assert decode(ObjectMeta, {"creationTimestamp": "2024-01-01T05:30:00+05:30"}) == \
        ObjectMeta(creation_timestamp=1704067200)  # type: ignore[arg-type]
    for bad in ("2024-13-01T00:00:00Z", "2024-02-30T00:00:00Z", "2024-01-01 00:00:00", "1"):
        with pytest.raises(ManifestError):
            decode(ObjectMeta, {"creationTimestamp": bad})


@pytest.mark.parametrize(("text", "seconds"), [
    ("0", 0.0), ("0s", 0.0), ("90s", 90.0), ("1m30s", 90.0), ("2h", 7200.0), ("1.5h", 5400.0),
    ("300ms", 0.3), ("1us", 1e-6), ("1µs", 1e-6), ("1ns", 1e-9), ("-1m", -60.0), ("+5s", 5.0),
    (".5s", 0.5), ("1h2m3s4ms", 3723.004),
])
def test_parse_duration_follows_go(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds, abs=1e-12)


@pytest.mark.parametrize("text", ["", "1", "s", ".s", "1x", "1m-1s", "--1s", "1e3s", "9999999999h"])
def test_parse_duration_rejects_what_go_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        parse_duration(text)


@pytest.mark.parametrize(("seconds", "text"), [
    (0, "0s"), (1800, "30m0s"), (90, "1m30s"), (3600, "1h0m0s"), (3723.5, "1h2m3.5s"),
    (0.3, "300ms"), (1.5e-6, "1.5µs"), (5e-9, "5ns"), (-60, "-1m0s"),
])
def test_format_duration_follows_go(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text


@given(st.integers(min_value=-(10**15), max_value=10**15))
def test_durations_round_trip(ns: int) -> None:
    seconds = ns / 1e9
    assert parse_duration(format_duration(seconds)) == seconds


# --- kinds and versions ----------------------------------------------------------------

@pytest.mark.parametrize(("api_version", "kind", "cls", "body"), [
    (V1B2, "Workload", Workload, {"spec": {"podSets": [{"template": {}}]}}),
    (V1B2, "ClusterQueue", ClusterQueue, {}),
    (V1B2, "LocalQueue", LocalQueue, {"spec": {"clusterQueue": "cq"}}),
    (V1B2, "ResourceFlavor", ResourceFlavor, {}),
    (V1B2, "AdmissionCheck", AdmissionCheck, {"spec": {"controllerName": "x"}}),
    (V1B2, "ProvisioningRequestConfig", ProvisioningRequestConfig,
     {"spec": {"provisioningClassName": "x"}}),
    (V1B1, "ResourceFlavor", ResourceFlavor, {}),
    (c.AUTOSCALING_V1, "ProvisioningRequest", ProvisioningRequest,
     {"spec": {"provisioningClassName": "x", "podSets": [{"podTemplateRef": {"name": "t"}, "count": 1}]}}),
    (c.AUTOSCALING_V1BETA1, "ProvisioningRequest", ProvisioningRequest,
     {"spec": {"provisioningClassName": "x", "podSets": [{"podTemplateRef": {"name": "t"}, "count": 1}]}}),
    ("v1", "PodTemplate", PodTemplate, {"template": TEMPLATE}),
    ("batch/v1", "Job", Job, {"spec": {"suspend": True, "template": {
        "spec": {**TEMPLATE["spec"], "restartPolicy": "Never"}}}}),
])
def test_load_object_dispatches_on_api_version_and_kind(
        api_version: str, kind: str, cls: type, body: dict[str, Any]) -> None:
    scoped = {"namespace": "ns"} if cls.NAMESPACED else {}  # type: ignore[attr-defined]
    data = {"apiVersion": api_version, "kind": kind, "metadata": {"name": "o", **scoped}, **body}
    obj = load_object(data)
    assert type(obj) is cls
    dumped = dump_object(obj)
    assert list(dumped)[:2] == ["apiVersion", "kind"]
    assert dumped["apiVersion"] in (V1B2, c.AUTOSCALING_V1, "v1", "batch/v1")
    assert dump_object(obj, api_version)["apiVersion"] == api_version
    assert load_object(dumped) == obj


@pytest.mark.parametrize(("data", "path", "reason"), [
    ({"apiVersion": "kubeflow.org/v1", "kind": "TFJob"}, "kind", "unsupported kind 'TFJob'"),
    ({"apiVersion": "kueue.x-k8s.io/v1alpha1", "kind": "Workload"}, "apiVersion",
     "unsupported apiVersion 'kueue.x-k8s.io/v1alpha1' for Workload"),
    ({"apiVersion": "v1", "kind": "Job"}, "apiVersion", "unsupported apiVersion 'v1' for Job"),
    ({"kind": "Workload"}, "apiVersion", "unsupported apiVersion null"),
])
def test_unknown_kind_or_version(data: dict[str, Any], path: str, reason: str) -> None:
    e = error_of(data)
    assert e.path == path and e.reason.startswith(reason)


def test_not_a_mapping() -> None:
    assert error_of(["x"]).reason == "expected an object, got a list"


def test_dump_object_rejects_a_version_the_kind_is_not_served_in() -> None:
    obj = load_object(workload())
    with pytest.raises(ManifestError, match="unsupported apiVersion 'batch/v1' for Workload"):
        dump_object(obj, "batch/v1")


def test_v1beta1_workload_priority_class_becomes_a_ref_and_back() -> None:
    data = workload(priorityClassName="high", priorityClassSource="kueue.x-k8s.io/workloadpriorityclass",
                    priority=100)
    data["apiVersion"] = V1B1
    data["status"] = {"accumulatedPastExexcutionTimeSeconds": 30}
    wl = load_object(data)
    assert isinstance(wl, Workload)
    assert wl.spec.extra["priorityClassRef"] == {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass",
                                                 "name": "high"}
    assert wl.status.extra == {"accumulatedPastExecutionTimeSeconds": 30}
    v2 = dump_object(wl)
    assert "priorityClassName" not in v2["spec"] and v2["spec"]["priority"] == 100
    v1 = dump_object(wl, V1B1)
    assert (v1["spec"]["priorityClassName"], v1["spec"]["priorityClassSource"]) == (
        "high", "kueue.x-k8s.io/workloadpriorityclass")
    assert "priorityClassRef" not in v1["spec"]
    assert v1["status"] == {"accumulatedPastExexcutionTimeSeconds": 30}
    assert_contained(data, v1)


def test_v1beta1_pod_priority_class_and_bad_source() -> None:
    data = workload(priorityClassName="p", priorityClassSource="scheduling.k8s.io/priorityclass", priority=5)
    data["apiVersion"] = V1B1
    assert load_object(data).spec.extra["priorityClassRef"]["kind"] == "PriorityClass"  # type: ignore[union-attr]
    data["spec"]["priorityClassSource"] = ""
    assert error_of(data).path == "spec.priorityClassSource"


def test_v1beta1_cluster_queue_checks_and_cohort() -> None:
    data: dict[str, Any] = {"apiVersion": V1B1, "kind": "ClusterQueue", "metadata": {"name": "cq"},
                            "spec": {"cohort": "all", "admissionChecks": ["a", "b"],
                                     "flavorFungibility": {"whenCanBorrow": "Borrow",
                                                           "whenCanPreempt": "Preempt"}},
                            "status": {"pendingWorkloadsStatus": {"clusterQueuePendingWorkload": [],
                                                                  "lastChangeTime": "2024-01-01T00:00:00Z"}}}
    cq = load_object(data)
    assert isinstance(cq, ClusterQueue)
    assert cq.checks_with_flavors() == {"a": frozenset(), "b": frozenset()}
    assert cq.spec.cohort_name == "all"
    ff = cq.spec.flavor_fungibility
    assert ff is not None and (ff.when_can_preempt, ff.when_can_borrow) == ("MayStopSearch", "MayStopSearch")
    assert "pendingWorkloadsStatus" not in cq.status.extra
    v1 = dump_object(cq, V1B1)
    assert v1["spec"]["cohort"] == "all" and "cohortName" not in v1["spec"]
    assert v1["spec"]["admissionChecksStrategy"] == {"admissionChecks": [{"name": "a"}, {"name": "b"}]}

    data["spec"]["admissionChecksStrategy"] = {"admissionChecks": [{"name": "a"}]}
    assert error_of(data).path == "spec.admissionChecks"
    data["spec"] = {"admissionChecks": [1]}
    assert (error_of(data).path, error_of(data).reason) == ("spec.admissionChecks[0]", "expected a string, got 1")


def test_v1beta1_admission_check_drops_retry_delay_and_local_queue_renames_usage() -> None:
    ac = load_object({"apiVersion": V1B1, "kind": "AdmissionCheck", "metadata": {"name": "ac"},
                      "spec": {"controllerName": "x", "retryDelayMinutes": 15}})
    assert isinstance(ac, AdmissionCheck) and ac.spec.extra == {}
    lq = load_object({"apiVersion": V1B1, "kind": "LocalQueue", "metadata": {"name": "q", "namespace": "n"},
                      "spec": {"clusterQueue": "cq"},
                      "status": {"flavorUsage": [{"name": "f", "resources": [{"name": "cpu", "total": "1"}]}],
                                 "flavors": []}})
    assert isinstance(lq, LocalQueue)
    assert lq.status.flavors_usage == (FlavorUsage("f", (ResourceUsage("cpu", Quantity.parse("1")),)),)
    assert dump_object(lq, V1B1)["status"] == {"flavorUsage": [{"name": "f", "resources": [{"name": "cpu",
                                                                                              "total": "1"}]}]}


# --- defaults and required values -------------------------------------------------------

def test_workload_defaults() -> None:
    data = workload()
    data["spec"]["podSets"] = [{"template": TEMPLATE}]
    data["status"] = {"admission": {"clusterQueue": "cq", "podSetAssignments": [{}]}}
    wl = load_object(data)
    assert isinstance(wl, Workload)
    assert wl.spec.active is True
    assert (wl.spec.pod_sets[0].name, wl.spec.pod_sets[0].count) == ("main", 1)
    assert wl.status.admission is not None and wl.status.admission.pod_set_assignments[0].name == "main"
    data["spec"]["active"] = False
    assert load_object(data).spec.active is False  # type: ignore[union-attr]


def test_cluster_queue_defaults() -> None:
    cq = load_object({"apiVersion": V1B2, "kind": "ClusterQueue", "metadata": {"name": "cq"},
                      "spec": {"fairSharing": {}, "preemption": {"withinClusterQueue": "LowerPriority"}}})
    assert isinstance(cq, ClusterQueue)
    assert (cq.spec.queueing_strategy, cq.spec.stop_policy) == ("BestEffortFIFO", "None")
    assert cq.spec.extra == {"fairSharing": {"weight": 1}}
    assert cq.spec.within_cluster_queue == "LowerPriority" and cq.spec.when_can_preempt == "TryNextFlavor"
    assert dump_object(cq)["spec"]["preemption"] == {
        "withinClusterQueue": "LowerPriority", "borrowWithinCohort": {"policy": "Never"}, "reclaimWithinCohort": "Never"}
    assert dump_object(cq)["spec"]["flavorFungibility"] == {"whenCanBorrow": "MayStopSearch",
                                                            "whenCanPreempt": "TryNextFlavor"}
    bare = load_object({"apiVersion": V1B2, "kind": "ClusterQueue", "metadata": {"name": "cq"}})
    assert dump_object(bare)["spec"] == {
        "queueingStrategy": "BestEffortFIFO", "stopPolicy": "None",
        "flavorFungibility": {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor"},
        "preemption": {"borrowWithinCohort": {"policy": "Never"}, "reclaimWithinCohort": "Never",
                       "withinClusterQueue": "Never"}}


@pytest.mark.parametrize(("retry", "expected"), [
    (None, RetryStrategy(3, 60, 1800)),
    ({}, RetryStrategy(3, 60, 1800)),
    ({"backoffLimitCount": 1}, RetryStrategy(1, 60, 1800)),
    ({"backoffBaseSeconds": 0}, RetryStrategy(3, 0, 1800)),
    ({"backoffMaxSeconds": 10}, RetryStrategy(3, 60, 10)),
])
def test_provisioning_request_config_retry_strategy_defaults_each_field(
        retry: dict[str, int] | None, expected: RetryStrategy) -> None:
    spec: dict[str, Any] = {"provisioningClassName": "cls"}
    if retry is not None:
        spec["retryStrategy"] = retry
    prc = load_object({"apiVersion": V1B2, "kind": "ProvisioningRequestConfig",
                       "metadata": {"name": "c"}, "spec": spec})
    assert isinstance(prc, ProvisioningRequestConfig)
    assert prc.spec.retry_strategy == expected
    assert dump_object(prc)["spec"]["retryStrategy"] == {
        "backoffLimitCount": expected.backoff_limit_count,
        "backoffBaseSeconds": expected.backoff_base_seconds,
        "backoffMaxSeconds": expected.backoff_max_seconds}


@pytest.mark.parametrize(("data", "path"), [
    ({"apiVersion": V1B2, "kind": "ProvisioningRequestConfig", "metadata": {"name": "c"}, "spec": {}},
     "spec.provisioningClassName"),
    ({"apiVersion": V1B2, "kind": "ProvisioningRequestConfig", "metadata": {"name": "c"}}, "spec"),
    ({"apiVersion": c.AUTOSCALING_V1, "kind": "ProvisioningRequest", "metadata": {"name": "p", "namespace": "n"},
      "spec": {"provisioningClassName": "x"}}, "spec.podSets"),
    ({"apiVersion": c.AUTOSCALING_V1, "kind": "ProvisioningRequest", "metadata": {"name": "p", "namespace": "n"},
      "spec": {"provisioningClassName": "x", "podSets": []}}, "spec.podSets"),
    ({"apiVersion": c.AUTOSCALING_V1, "kind": "ProvisioningRequest", "metadata": {"name": "p", "namespace": "n"},
      "spec": {"provisioningClassName": "x", "podSets": [{"count": 1}]}}, "spec.podSets[0].podTemplateRef"),
    ({"apiVersion": V1B2, "kind": "AdmissionCheck", "metadata": {"name": "a"}, "spec": {}},
     "spec.controllerName"),
    ({"apiVersion": V1B2, "kind": "ResourceFlavor", "metadata": {}}, "metadata.name"),
    ({"apiVersion": V1B2, "kind": "ResourceFlavor"}, "metadata"),
    ({"apiVersion": V1B2, "kind": "Workload", "metadata": {"name": "w", "namespace": "n"},
      "spec": {"podSets": [{"name": "main"}]}}, "spec.podSets[0].template"),
])
def test_required_values(data: dict[str, Any], path: str) -> None:
    e = error_of(data)
    assert (e.path, e.reason) == (path, "required value")


def test_generate_name_stands_in_for_name() -> None:
    job = load_object({"apiVersion": "batch/v1", "kind": "Job",
                       "metadata": {"generateName": "sample-", "namespace": "default"},
                       "spec": {"template": {"spec": {**TEMPLATE["spec"], "restartPolicy": "Never"}}}})
    assert job.metadata.extra["generateName"] == "sample-"


def test_a_cluster_scoped_objects_namespace_is_cleared_with_a_warning_as_the_api_server_does() -> None:
    checked = check_object({"apiVersion": V1B2, "kind": "ResourceFlavor", "metadata": {"name": "f", "namespace": "x"}})
    assert checked.errors == () and checked.obj is not None and checked.obj.metadata.namespace == ""
    (warning,) = checked.warnings
    assert warning.path == "metadata.namespace" and "cluster-scoped: the API server ignores its namespace 'x'" in str(
        warning)


def test_workload_with_status_round_trips() -> None:
    data = workload(active=True)
    data["metadata"].update(uid="u1", generation=2, creationTimestamp="2024-01-01T00:00:00Z",
                            resourceVersion="7")
    data["status"] = {
        "conditions": [{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved",
                        "message": "Quota reserved in ClusterQueue cq",
                        "lastTransitionTime": "2024-01-01T00:00:10Z", "observedGeneration": 2}],
        "admission": {"clusterQueue": "cq", "podSetAssignments": [
            {"name": "main", "flavors": {"cpu": "f"}, "resourceUsage": {"cpu": "2"}, "count": 2}]},
        "admissionChecks": [{"name": "check", "state": "Retry", "message": "",
                             "lastTransitionTime": "2024-01-01T00:01:00Z", "retryCount": 1,
                             "requeueAfterSeconds": 60,
                             "podSetUpdates": [{"name": "main", "nodeSelector": {}}]}],
        "requeueState": {"count": 1, "requeueAt": "2024-01-01T00:02:00Z"},
        "schedulingStats": {"evictions": [{"reason": "AdmissionCheck", "underlyingCause": "", "count": 1}]},
    }
    wl = load_object(data)
    assert isinstance(wl, Workload)
    assert wl.status.admission_checks[0].retry_count == 1
    assert wl.status.requeue_state is not None and wl.status.requeue_state.requeue_at == 1704067320
    dumped = dump_object(wl)
    assert_contained({k: v for k, v in data.items()
                      if k != "status"}, dumped)
    assert dumped["status"] == data["status"]  # message "" included: the CRD requires it
    assert load_object(dumped) == wl


# --- Configuration --------------------------------------------------------------------------

def test_configuration_defaults() -> None:
    for data in (None, {}, {"waitForPodsReady": None}):
        config = load_configuration(data)
        wait = config.wait_for_pods_ready
        assert wait is not None
        assert (wait.timeout, wait.block_admission, wait.recovery_timeout) == (1800.0, False, 1800.0)
        assert wait.requeuing_strategy == RequeuingStrategy("Eviction", None, 60, 3600)
        assert config.feature_gates == DEFAULT_FEATURE_GATES


def test_configuration_fragment() -> None:
    config = load_configuration({
        "apiVersion": c.CONFIG_V1BETA2, "kind": "Configuration",
        "featureGates": {c.GATE_KEEP_QUOTA_FOR_PROVREQ_RETRY: True},
        "waitForPodsReady": {"timeout": "5m", "blockAdmission": True, "requeuingStrategy": {
            "timestamp": "Creation", "backoffLimitCount": 3, "backoffBaseSeconds": 10,
            "backoffMaxSeconds": 100}},
        "manageJobsWithoutQueueName": True,
    })
    assert config.gate(c.GATE_KEEP_QUOTA_FOR_PROVREQ_RETRY) is True
    assert config.gate(c.GATE_CLEANUP_ON_EVICTION) is True
    assert config.manage_jobs_without_queue_name is True and config.extra == {}
    wait = config.wait_for_pods_ready
    assert wait is not None
    assert (wait.timeout, wait.block_admission, wait.recovery_timeout) == (300.0, True, 300.0)
    assert wait.requeuing_strategy == RequeuingStrategy("Creation", 3, 10, 100)
    assert config.requeuing_timestamp == "Creation"
    assert load_configuration({"waitForPodsReady": {"recoveryTimeout": "0s"}}) \
        .wait_for_pods_ready.effective_recovery_timeout is None  # type: ignore[union-attr]
    assert isinstance(config, Configuration)


@pytest.mark.parametrize(("data", "path", "reason"), [
    ({"featureGates": {"NoSuchGate": True}}, "featureGates", "unknown feature gate NoSuchGate (known: "
     + ", ".join(DEFAULT_FEATURE_GATES) + ")"),
    ({"featureGates": {c.GATE_CLEANUP_ON_EVICTION: "yes"}},
     f"featureGates[{c.GATE_CLEANUP_ON_EVICTION}]", "expected a boolean, got 'yes'"),
    ({"waitForPodsReady": {"timeout": "5 minutes"}}, "waitForPodsReady.timeout", None),
    ({"waitForPodsReady": {"timeout": 300}}, "waitForPodsReady.timeout",
     "expected a duration string like 90s or 1m30s, got 300 (a number needs a unit: 300s, 300m or 300h)"),
    ({"waitForPodsReady": {"timeout": "-1s"}}, "waitForPodsReady.timeout", "must be greater than or equal to 0"),
    ({"waitForPodsReady": {"recoveryTimeout": "-1s"}}, "waitForPodsReady.recoveryTimeout", None),
    ({"waitForPodsReady": {"requeuingStrategy": {"timestamp": "Now"}}},
     "waitForPodsReady.requeuingStrategy.timestamp",
     "unsupported value 'Now': supported values: 'Eviction', 'Creation'"),
    ({"waitForPodsReady": {"requeuingStrategy": {"backoffLimitCount": -1}}},
     "waitForPodsReady.requeuingStrategy.backoffLimitCount", None),
    ({"waitForPodsReady": {"requeuingStrategy": {"jitter": 1}}},
     "waitForPodsReady.requeuingStrategy.jitter", None),
    ({"apiVersion": "config.kueue.x-k8s.io/v1alpha1"}, "apiVersion", None),
])
def test_configuration_errors(data: dict[str, Any], path: str, reason: str | None) -> None:
    with pytest.raises(ManifestError) as info:
        load_configuration(data)
    assert info.value.obj == "Configuration" and info.value.path == path
    if reason is not None:
        assert info.value.reason == reason


# --- YAML --------------------------------------------------------------------------------------

def test_yaml_documents_skip_empty_ones_and_keep_times_as_strings() -> None:
    docs = load_yaml_documents("---\n---\na: 2024-01-01T00:00:00Z\n---\n# nothing\n---\nb: [1]\n", "f.yaml")
    assert docs == [{"a": "2024-01-01T00:00:00Z"}, {"b": [1]}]


def test_yaml_duplicate_keys_are_rejected_with_their_lines() -> None:
    with pytest.raises(ManifestError) as info:
        load_yaml_documents("a: 1\nb:\n  c: 1\n  c: 2\n", "f.yaml")
    assert str(info.value) == "f.yaml:4: duplicate key 'c' (first at line 3)"
    with pytest.raises(ManifestError, match="duplicate key 'a'"):
        load_yaml_documents("{a: 1, a: 1}", "f.yaml")


def test_yaml_merge_keys_may_override() -> None:
    assert load_yaml_documents("base: &b {x: 1, y: 2}\nd:\n  <<: *b\n  x: 3\n", "f") == [
        {"base": {"x": 1, "y": 2}, "d": {"x": 3, "y": 2}}]


@pytest.mark.parametrize(("text", "message"), [
    ("a: 1\n---\n- x\n", "f.yaml:3: a document must be a mapping, got a list"),
    ("a: 1\n---\nplain\n", "f.yaml:3: a document must be a mapping, got 'plain'"),
    ("a: [1\nb: 2\n", "f.yaml:2: while parsing a flow sequence did not find expected ',' or ']'"),
    ("a: 1\n b: 2\n", "f.yaml:2: mapping values are not allowed in this context"),
    ("? [a]\n: 1\n", "f.yaml:1: mapping keys must be scalars"),
])
def test_yaml_bad_documents(text: str, message: str) -> None:
    with pytest.raises(ManifestError) as info:
        load_yaml_documents(text, "f.yaml")
    assert str(info.value) == message


def test_object_errors_point_at_the_yaml_line() -> None:
    text = ("apiVersion: kueue.x-k8s.io/v1beta2\nkind: Workload\nmetadata: {name: wl, namespace: default}\n"
            "spec:\n  podSets:\n  - name: main\n    template: {}\n    count: x\n")
    (doc,) = load_yaml_documents(text, "wl.yaml")
    with pytest.raises(ManifestError) as info:
        load_object(doc)
    assert str(info.value) == ("wl.yaml:8: Workload default/wl: spec.podSets[0].count: "
                               "expected an integer, got 'x'")


def test_load_file(tmp_path: Path) -> None:
    path = tmp_path / "objs.yaml"
    path.write_text("apiVersion: v1\nkind: PodTemplate\nmetadata: {name: t, namespace: n}\n"
                    "template: {spec: {containers: [{name: c, image: x}]}}\n")
    (doc,) = load_file(path)
    assert isinstance(load_object(doc), PodTemplate)
    with pytest.raises(ManifestError, match="missing.yaml: no such file or directory"):
        load_file(tmp_path / "missing.yaml")


# --- upstream examples -------------------------------------------------------------------------

def test_upstream_examples_round_trip_losslessly(upstream: Path) -> None:
    loaded = 0
    for path, doc in examples(upstream):
        if refused(path, doc) is None:
            obj = load_object(doc)
            dumped = dump_object(obj)
            assert_contained(doc, dumped, f"{path.name} {doc['kind']}")
            assert load_object(dumped) == obj
            assert dump_object(load_object(dumped)) == dumped
            loaded += 1
    assert loaded >= 12
