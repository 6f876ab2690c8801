"""The library against upstream's own data: Kueue's example manifests and the CRD schemas.

The CRDs are test data only (../shared/upstream, absent in a fresh clone: every test here
then skips through the ``upstream`` fixture).  Whatever the library writes must pass the
schema a real API server would check it against, read with ``jsonschema`` after dropping
nulls, as the server prunes them (research notes, autoscaler-provisioningrequest-api.md §3.1).
"""

from __future__ import annotations

import functools
import re
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator, FormatChecker
from kueue_provreq.api import constants as c
from kueue_provreq.api.objects import KubeObject
from kueue_provreq.api.provisioning import PodTemplate, ProvisioningRequest
from kueue_provreq.api.workload import Workload
from kueue_provreq.conformance.runner import Run
from kueue_provreq.conformance.scenario import parse_scenario
from kueue_provreq.explain import workload_for_job
from kueue_provreq.manifests import (
    ManifestError,
    dump_object,
    kubernetes,
    load_file,
    load_object,
    load_yaml_documents,
    nodes,
)
from kueue_provreq.manifests.validation import schema_of

from upstream_examples import REFUSED, examples, refused

UNSUPPORTED = ("JobSet", "PyTorchJob")
EXAMPLES_DIR = Path(__file__).resolve().parents[1] / "examples"


def _python_pattern(pattern: str) -> str:
    """RE2's ``^(?i)x`` (flags mid-pattern) as Python's ``(?i)^x``."""
    flags = "".join(re.findall(r"\(\?([a-zA-Z]+)\)", pattern))
    return (f"(?{flags})" if flags else "") + re.sub(r"\(\?[a-zA-Z]+\)", "", pattern)


def _fix(schema: dict[str, Any]) -> dict[str, Any]:
    """Walk only schema keywords, so a field named ``pattern`` is not taken for one."""
    out = dict(schema)
    if isinstance(out.get("pattern"), str):
        out["pattern"] = _python_pattern(out["pattern"])
    if "properties" in out:
        out["properties"] = {k: _fix(v) for k, v in out["properties"].items()}
    for key in ("items", "additionalProperties", "not"):
        if isinstance(out.get(key), dict):
            out[key] = _fix(out[key])
    for key in ("anyOf", "allOf", "oneOf"):
        if key in out:
            out[key] = [_fix(x) for x in out[key]]
    return out


@functools.cache
def _schemas(crds: Path) -> dict[tuple[str, str], dict[str, Any]]:
    found = {}
    for path in sorted(crds.glob("*.yaml")):
        crd = yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
        for version in crd["spec"]["versions"]:
            found[(f"{group}/{version['name']}", kind)] = _fix(version["schema"]["openAPIV3Schema"])
    return found


def _drop_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _drop_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_nulls(v) for v in value]
    return value


def schema_errors(upstream: Path, manifest: dict[str, Any],
                  key: tuple[str, str] | None = None) -> list[str]:
    schema = _schemas(upstream / "crds")[key or (manifest["apiVersion"], manifest["kind"])]
    validator = Draft202012Validator(schema, format_checker=FormatChecker())
    return [f"{'.'.join(map(str, e.absolute_path))}: {e.message}"
            for e in validator.iter_errors(_drop_nulls(manifest))]


def _template_schema_key(upstream: Path) -> dict[str, Any]:
    """``Workload.spec.podSets[].template``: the full PodTemplateSpec, the stand-in for the
    built-in PodTemplate's schema (there is no CRD for core kinds)."""
    wl = _schemas(upstream / "crds")[(c.KUEUE_V1BETA2, c.WORKLOAD)]
    template: dict[str, Any] = wl["properties"]["spec"]["properties"]["podSets"]["items"]["properties"]["template"]
    return template


def _examples(upstream: Path) -> list[tuple[Path, dict[str, Any]]]:
    return [(path, doc) for path, doc in examples(upstream) if refused(path, doc) is None]


# --- (a) every upstream example loads, or is refused as an unsupported kind ---------------------

def test_every_upstream_example_loads_or_is_an_unsupported_kind(upstream: Path) -> None:
    kinds: set[str] = set()
    for path, doc in _examples(upstream):
        if doc["kind"] in UNSUPPORTED:
            with pytest.raises(ManifestError, match=rf"{path.name}:\d+: {doc['kind']} .*unsupported kind"):
                load_object(doc)
            continue
        kinds.add(load_object(doc).KIND)
    assert kinds >= {c.JOB, c.CLUSTER_QUEUE, c.LOCAL_QUEUE, c.RESOURCE_FLAVOR, c.ADMISSION_CHECK,
                     c.PROVISIONING_REQUEST_CONFIG}


def test_upstream_examples_of_crd_kinds_pass_the_crd_schema_as_loaded_and_dumped(upstream: Path) -> None:
    """The library's dump (defaults applied) is still what the CRD accepts, in both versions."""
    for path, doc in _examples(upstream):
        if doc["kind"] in (*UNSUPPORTED, c.JOB):
            continue
        obj = load_object(doc)
        for version in (c.KUEUE_V1BETA2, c.KUEUE_V1BETA1):
            dumped = dump_object(obj, version)
            assert schema_errors(upstream, dumped) == [], f"{path.name} {doc['kind']} {version}"


def test_upstream_job_templates_pass_the_workload_template_schema(upstream: Path) -> None:
    for path, doc in _examples(upstream):
        if doc["kind"] == c.JOB:
            wl = workload_for_job(load_object(doc))  # type: ignore[arg-type]
            manifest = dump_object(wl)
            assert schema_errors(upstream, manifest) == [], path.name


def test_examples_the_snapshot_refuses_are_refused_for_the_same_reason(upstream: Path) -> None:
    found = 0
    for path, doc in examples(upstream):
        expected = refused(path, doc)
        if expected is not None:
            with pytest.raises(ManifestError) as e:
                load_object(doc)
            assert (e.value.path, e.value.reason.startswith(expected[1])) == (expected[0], True)
            found += 1
    assert found == len(REFUSED)


# --- the transcribed schemas are the CRDs', field by field ---------------------------------------

_PROBES = ("", "a", "A", "z9", "9", "a-b", "-a", "a-", "a.b", "a..b", ".a", "a_b", "a/b", "a/b/c", "/a",
           "example.com/Foo_bar.1", "Example.com/x", "a:b", "a,b", "Reason_1", "x" * 64, "a b")


def _accepted(pattern: re.Pattern[str] | None) -> tuple[bool, ...] | None:
    """What a pattern accepts of a few probes: equal tuples, the same pattern for names."""
    if pattern is None:
        return None
    anchored = re.compile(pattern.pattern.removeprefix("^").removesuffix("$"), pattern.flags)
    return tuple(anchored.fullmatch(p) is not None for p in _PROBES)


def _crd_differences(ours: nodes.Node, crd: dict[str, Any], path: str) -> list[str]:
    """Where the library's schema node and the CRD's schema disagree on what they accept."""
    while isinstance(ours, nodes.Ref):
        ours = ours.node
    where = path or "."
    types = crd.get("type")
    if crd.get("x-kubernetes-int-or-string"):
        expected: type = nodes.Qty if "pattern" in crd else nodes.IntOrStr
        return [] if isinstance(ours, expected) else [f"{where}: expected {expected.__name__}, got {ours!r}"]
    if types == "object":
        props, extra = crd.get("properties"), crd.get("additionalProperties")
        if not props and not isinstance(extra, dict):
            return [] if ours is nodes.ANY or isinstance(ours, nodes.Obj) and not ours.properties \
                else [f"{where}: open object, got {ours!r}"]
        if not isinstance(ours, nodes.Obj):
            return [f"{where}: expected an object node, got {ours!r}"]
        out = []
        mine = {k: v for k, v in ours.properties.items() if not (path == "" and k in ("apiVersion", "kind", "metadata"))}
        theirs = {k: v for k, v in (props or {}).items() if not (path == "" and k in ("apiVersion", "kind", "metadata"))}
        if set(mine) != set(theirs):
            out.append(f"{where}: fields {sorted(set(mine) - set(theirs))} only here, "
                       f"{sorted(set(theirs) - set(mine))} only in the CRD")
        if set(ours.required) != set(crd.get("required", ())):
            out.append(f"{where}: required {sorted(ours.required)} != {sorted(crd.get('required', ()))}")
        if ours.max_properties != crd.get("maxProperties"):
            out.append(f"{where}: maxProperties {ours.max_properties} != {crd.get('maxProperties')}")
        for key in set(mine) & set(theirs):
            out += _crd_differences(mine[key], theirs[key], f"{path}.{key}")
        if isinstance(extra, dict):
            out += _crd_differences(ours.values, extra, f"{path}{{}}") if ours.values is not None \
                else [f"{where}: a map in the CRD"]
        return out
    if types == "array":
        if not isinstance(ours, nodes.Arr):
            return [f"{where}: expected a list node, got {ours!r}"]
        kind = crd.get("x-kubernetes-list-type")
        got = (ours.min_items, ours.max_items, ours.map_keys, ours.is_set)
        want = (crd.get("minItems", 0), crd.get("maxItems"),
                tuple(crd.get("x-kubernetes-list-map-keys", ())) if kind == "map" else (), kind == "set")
        out = [] if got == want else [f"{where}: (minItems, maxItems, map keys, set) {got} != {want}"]
        return out + _crd_differences(ours.items, crd["items"], f"{path}[]")
    if types == "string" and crd.get("format") == "date-time":
        return [] if isinstance(ours, nodes.DateTime) else [f"{where}: expected a date-time, got {ours!r}"]
    if types == "string":
        if not isinstance(ours, nodes.Str):
            return [f"{where}: expected a string node, got {ours!r}"]
        got = (ours.enum, ours.max_length, ours.min_length, _accepted(ours.pattern))
        want_pattern = crd.get("pattern")
        want = (tuple(crd.get("enum", ())), crd.get("maxLength"), crd.get("minLength", 0),
                _accepted(re.compile(_python_pattern(want_pattern))) if want_pattern else None)
        return [] if got == want else [f"{where}: (enum, maxLength, minLength, pattern) {got} != {want}"]
    if types == "integer":
        if not isinstance(ours, nodes.Int):
            return [f"{where}: expected an integer node, got {ours!r}"]
        got = (ours.minimum, ours.maximum, ours.bits)
        want = (crd.get("minimum"), crd.get("maximum"), 64 if crd.get("format") == "int64" else 32)
        return [] if got == want else [f"{where}: (minimum, maximum, bits) {got} != {want}"]
    if types == "boolean":
        return [] if isinstance(ours, nodes.Bool) else [f"{where}: expected a boolean, got {ours!r}"]
    if types == "number":
        return [] if isinstance(ours, nodes.Num) else [f"{where}: expected a number, got {ours!r}"]
    return [] if ours is nodes.ANY else [f"{where}: unknown CRD schema {crd}"]


@pytest.mark.parametrize("key", [(v, k) for k in (c.WORKLOAD, c.CLUSTER_QUEUE, c.LOCAL_QUEUE, c.RESOURCE_FLAVOR,
                                                  c.ADMISSION_CHECK, c.PROVISIONING_REQUEST_CONFIG)
                                 for v in (c.KUEUE_V1BETA2, c.KUEUE_V1BETA1)]
                         + [(c.AUTOSCALING_V1, c.PROVISIONING_REQUEST), (c.AUTOSCALING_V1BETA1, c.PROVISIONING_REQUEST)],
                         ids=lambda key: f"{key[1]}-{key[0].rpartition('/')[2]}")
def test_each_transcribed_schema_is_the_crds(upstream: Path, key: tuple[str, str]) -> None:
    """Every field of the CRD, with its type, bounds, enum, pattern and list type, and no other;
    the Workload's pod template is the pinned Kubernetes PodTemplateSpec, so this also checks
    the pin against the Kubernetes version Kueue's CRD embeds."""
    api_version, kind = key
    crd = _schemas(upstream / "crds")[key]
    assert _crd_differences(schema_of(kind, api_version), crd, "") == []


# --- (b) what the library writes validates against the CRDs ------------------------------------

STORY = """\
name: upstream story
objects:
  - {apiVersion: kueue.x-k8s.io/v1beta2, kind: ResourceFlavor, metadata: {name: default-flavor}}
  - apiVersion: kueue.x-k8s.io/v1beta2
    kind: ClusterQueue
    metadata: {name: cluster-queue}
    spec:
      namespaceSelector: {}
      resourceGroups:
        - coveredResources: [cpu, nvidia.com/gpu]
          flavors: [{name: default-flavor, resources: [{name: cpu, nominalQuota: 9}, {name: nvidia.com/gpu, nominalQuota: 9}]}]
      admissionChecksStrategy: {admissionChecks: [{name: sample-prov}]}
  - {apiVersion: kueue.x-k8s.io/v1beta2, kind: LocalQueue, metadata: {namespace: default, name: user-queue}, spec: {clusterQueue: cluster-queue}}
  - apiVersion: kueue.x-k8s.io/v1beta2
    kind: AdmissionCheck
    metadata: {name: sample-prov}
    spec:
      controllerName: kueue.x-k8s.io/provisioning-request
      parameters: {apiGroup: kueue.x-k8s.io, kind: ProvisioningRequestConfig, name: prov-test-config}
  - apiVersion: kueue.x-k8s.io/v1beta2
    kind: ProvisioningRequestConfig
    metadata: {name: prov-test-config}
    spec: {provisioningClassName: check-capacity.autoscaling.x-k8s.io, managedResources: [nvidia.com/gpu],
           retryStrategy: {backoffLimitCount: 1, backoffBaseSeconds: 60, backoffMaxSeconds: 1800}}
  - apiVersion: kueue.x-k8s.io/v1beta2
    kind: Workload
    metadata: {namespace: default, name: wl, annotations: {provreq.kueue.x-k8s.io/maxRunDurationSeconds: "600"}}
    spec:
      queueName: user-queue
      podSets:
        - name: main
          count: 3
          template:
            spec:
              tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
              containers: [{name: c, image: agnhost, resources: {requests: {cpu: 100m, nvidia.com/gpu: 1}, limits: {nvidia.com/gpu: 1}}}]
              restartPolicy: Never
steps:
  - settle: {}
  - autoscaler: {request: $latest, condition: Failed, status: "True", reason: CapacityIsNotFound, message: no capacity}
  - settle: {}
  - advance: 61s
  - settle: {}
  - autoscaler: {request: $latest, condition: Provisioned, status: "True", reason: CapacityIsFound, message: found}
  - settle: {}
  - expect:
      objects: [{kind: Workload, metadata: {namespace: default, name: wl},
                 status: {conditions: [{type: Admitted, status: "True"}]}}]
"""


def _story_world() -> list[KubeObject]:
    (doc,) = load_yaml_documents(STORY, "story.yaml")
    run = Run(parse_scenario(doc, "story.yaml"), debug=True)
    outcome = run.run()
    assert outcome.passed, outcome.failure
    return list(run.world)


def test_everything_a_full_provisioning_story_writes_validates(upstream: Path) -> None:
    objects = _story_world()
    kinds = {type(o) for o in objects}
    assert {Workload, ProvisioningRequest, PodTemplate} <= kinds
    template_schema = _template_schema_key(upstream)
    for obj in objects:
        manifest = dump_object(obj)
        name = f"{obj.KIND} {obj.metadata.name}"
        if isinstance(obj, PodTemplate):
            errors = list(Draft202012Validator(template_schema, format_checker=FormatChecker())
                          .iter_errors(_drop_nulls(manifest["template"])))
            assert errors == [], name
        elif obj.KIND != c.JOB:
            assert schema_errors(upstream, manifest) == [], name
        load_object(manifest)  # and our own validation agrees


def test_written_workload_status_carries_the_retry_history(upstream: Path) -> None:
    wl = next(o for o in _story_world() if isinstance(o, Workload))
    manifest = dump_object(wl)
    assert manifest["status"]["admissionChecks"][0]["state"] == c.CHECK_READY
    assert schema_errors(upstream, manifest) == []
    assert schema_errors(upstream, dump_object(wl, c.KUEUE_V1BETA1)) == []


# --- (c) load-then-write is lossless: tests/test_manifests.py covers it --------------------------
# (test_upstream_examples_round_trip_losslessly); here, the same through a file written back.

def test_upstream_examples_written_back_as_yaml_read_the_same(upstream: Path, tmp_path: Path) -> None:
    for path, doc in _examples(upstream):
        if doc["kind"] in UNSUPPORTED:
            continue
        obj = load_object(doc)
        out = tmp_path / path.name
        out.write_text(yaml.safe_dump(dump_object(obj), sort_keys=False))
        (again,) = load_file(out)
        assert load_object(again) == obj, path.name


# --- our validation agrees with the schema on what the schema can see ----------------------------

BAD_REQUESTS = [
    ("spec.podSets[0].count", {"count": 0}),
    ("spec.podSets[0].podTemplateRef.name", {"podTemplateRef": {"name": "Upper"}}),
    ("spec.podSets[0].podTemplateRef.name", {"podTemplateRef": {"name": "a" * 254}}),
]


@pytest.mark.parametrize(("path", "change"), BAD_REQUESTS)
def test_validation_and_the_crd_reject_the_same_bad_requests(upstream: Path, path: str,
                                                             change: dict[str, Any]) -> None:
    manifest = {"apiVersion": c.AUTOSCALING_V1, "kind": c.PROVISIONING_REQUEST,
                "metadata": {"name": "p", "namespace": "n"},
                "spec": {"provisioningClassName": "check-capacity.autoscaling.x-k8s.io",
                         "podSets": [{"podTemplateRef": {"name": "t"}, "count": 1, **change}]}}
    assert schema_errors(upstream, manifest) != []
    with pytest.raises(ManifestError) as e:
        load_object(manifest)
    assert e.value.path == path


def test_checking_a_file_is_fast(upstream: Path) -> None:
    """The first file pays for reading the Kubernetes schemas too."""
    kubernetes.definitions.cache_clear()
    path = upstream / "examples" / "sample-job.yaml"
    start = time.perf_counter()
    for doc in load_file(path):
        load_object(doc)
    assert time.perf_counter() - start < 0.5
