"""The conformance runner on small inline scenarios.

These tests use only the steps the runner carries out itself (apply, patch, delete, advance,
autoscaler, setQuotaReservation, expect) or a stand-in controller registered for the test,
so they judge the runner, not the controllers.  Scenarios that need the real controllers
are in test_conformance_end_to_end.py.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
from kueue_provreq.api import constants as c
from kueue_provreq.api.evolve import evolve
from kueue_provreq.api.frozen import FrozenMap
from kueue_provreq.api.meta import ObjectMeta
from kueue_provreq.api.objects import Key
from kueue_provreq.api.provisioning import PodTemplate
from kueue_provreq.conformance.match import Matcher
from kueue_provreq.conformance.runner import Outcome, collect, conform
from kueue_provreq.controllers import registry
from kueue_provreq.controllers.context import Context
from kueue_provreq.world import Result, Txn, World

WORKLOAD = """
  - apiVersion: kueue.x-k8s.io/v1beta2
    kind: Workload
    metadata: {namespace: ns, name: wl, uid: wl-uid}
    spec:
      queueName: lq
      podSets: [{name: main, count: 1, template: {spec: {containers: [{name: c, resources: {requests: {cpu: 500m}}}]}}}]
"""
REQUEST = """
  - apiVersion: autoscaling.x-k8s.io/v1
    kind: ProvisioningRequest
    metadata:
      namespace: ns
      name: wl-check-{n}
      creationTimestamp: "2024-01-01T00:0{n}:00Z"
      ownerReferences: [{apiVersion: kueue.x-k8s.io/v1beta2, kind: Workload, name: wl, uid: wl-uid, controller: true}]
    spec:
      provisioningClassName: check-capacity.autoscaling.x-k8s.io
      podSets: [{podTemplateRef: {name: ppt-wl-check-{n}-main}, count: 1}]
"""


def scenario(steps: str, objects: str = WORKLOAD, header: str = "name: t\n") -> str:
    return header + "objects:" + objects + "steps:\n" + textwrap.indent(textwrap.dedent(steps), "  ")


def run(tmp_path: Path, text: str, name: str = "s.yaml") -> Outcome:
    path = tmp_path / name
    path.write_text(text)
    [outcome] = conform([path])
    return outcome


def failure(tmp_path: Path, text: str) -> str:
    outcome = run(tmp_path, text)
    assert outcome.failure is not None, "the scenario passed"
    return outcome.failure


# --- loading -----------------------------------------------------------------------------


def test_a_passing_scenario_reports_pass(tmp_path: Path) -> None:
    outcome = run(tmp_path, scenario("""
        - expect:
            objects: [{kind: Workload, metadata: {namespace: ns, name: wl}, spec: {queueName: lq}}]
            count: {Workload: 1, ProvisioningRequest: 0}
    """))
    assert outcome.line() == "PASS t"


@pytest.mark.parametrize(("text", "message"), [
    (scenario("- expect: {}").replace("name: t", "name: t\nfaultz: []"), 'Scenario t: faultz: unknown field, did you mean "faults"?'),
    (scenario("- expect: {objectz: []}"), 'steps[0].expect.objectz: unknown field, did you mean "objects"?'),
    (scenario("- expect: {}\n- settel: {}"), 'steps[1].settel: unknown step kind, did you mean "settle"?'),
    (scenario("- settle: {controllers: [provisioning], x: 1}"), 'steps[0].settle.x: unknown field (known: controllers)'),
    (scenario("- expect: {objects: [{kind: Workload, metadata: {namespace: ns, name: wl}, "
              "spec: {queueName: {$maybe: true}}}]}"), 'steps[0].expect.objects[0].spec.queueName.$maybe: unknown special value (known: $absent'),
    (scenario("- expect: {events: [{type: Normal, objekt: {}}]}"), 'steps[0].expect.events[0].objekt: unknown field, did you mean "object"?'),
    (scenario("- expect: {metrics: [{name: m, value: 1, label: {}}]}"), 'steps[0].expect.metrics[0].label: unknown field, did you mean "labels"?'),
    (scenario("- expect: {}").replace("name: t", "name: t\nfaults: [{verb: create, kind: PodTemplate, "
                                      "error: e, cache: false}]"), 'faults[0].cache: unknown field, did you mean "cached"?'),
    (scenario("- reconcile: {controller: provisioning, workload: ns/wl, expectErr: x}"),
     'steps[0].reconcile.expectErr: unknown field, did you mean "expectError"?'),
    (scenario("- autoscaler: {request: r, condition: Failed, status: 'True', detail: {}}"),
     'steps[0].autoscaler.detail: unknown field, did you mean "details"?'),
    (scenario("- patch: {kind: Workload, namespace: ns, name: wl, merge: {}, mrege: {}}"),
     'steps[0].patch.mrege: unknown field, did you mean "merge"?'),
])
def test_every_unknown_key_fails_the_scenario_naming_its_path(tmp_path: Path, text: str, message: str) -> None:
    """Each problem names the file and line, the scenario and the field path from the document's
    root, as a bad manifest's does; one in a step starts with the step's number."""
    got = failure(tmp_path, text)
    assert message in got
    step = re.match(r"steps\[(\d+)\]", message)
    prefix = f"step {int(step.group(1)) + 1}: " if step else ""
    assert re.match(rf"{prefix}{re.escape(str(tmp_path / 's.yaml'))}:\d+: Scenario t: ", got), got


def test_bad_values_fail_before_any_step_runs(tmp_path: Path) -> None:
    assert "steps[0].settle.controllers[0]: unsupported value 'sheduler'" in failure(
        tmp_path, scenario("- settle: {controllers: [sheduler]}"))
    assert "missing unit" in failure(tmp_path, scenario("- advance: '90'"))
    assert "steps[0].advance: expected a duration string like 90s or 1m30s, got 90 (a number needs a unit" in \
        failure(tmp_path, scenario("- advance: 90"))
    assert "steps[0].advance: must not be negative" in failure(tmp_path, scenario("- advance: -1s"))
    assert 'steps[0].expect.count.Pod: unknown field (known: AdmissionCheck' in \
        failure(tmp_path, scenario("- expect: {count: {Pod: 1}}"))
    assert 'takes "clusterQueue"' in failure(tmp_path, scenario("- reconcile: {controller: clusterqueue, "
                                                                "workload: ns/wl}"))
    # a step that would fail is never reached: the typo in step 2 is reported
    assert failure(tmp_path, scenario("- expect: {count: {Workload: 5}}\n- expect: {x: 1}")).startswith("step 2:")


def test_every_problem_of_a_scenario_is_reported_at_once(tmp_path: Path) -> None:
    got = failure(tmp_path, scenario("- settel: {}\n- advance: 90\n- expect: {objectz: []}",
                                     header="name: t\nclok: now\n"))
    parts = got.split("; ")
    assert [p.partition(":")[0] if p.startswith("step") else "header" for p in parts] == \
        ["header", "step 1", "step 2", "step 3"], got
    assert 'clok: unknown field, did you mean "clock"?' in parts[0]


def test_a_bare_zero_is_a_duration_as_go_reads_it(tmp_path: Path) -> None:
    assert run(tmp_path, scenario("- advance: 0\n- advance: '0'\n- advance: 0s\n- expect: {}")).passed


def test_a_scenario_without_a_name_is_reported_by_its_file(tmp_path: Path) -> None:
    outcome = run(tmp_path, scenario("- expect: {}", header="description: no name\n"))
    assert outcome.name == str(tmp_path / "s.yaml")
    assert outcome.failure == f"{tmp_path / 's.yaml'}:1: Scenario {tmp_path / 's.yaml'}: name: required value"


def test_invalid_yaml_is_a_failure_with_one_line(tmp_path: Path) -> None:
    outcome = run(tmp_path, "name: t\nsteps: [\n")
    assert outcome.failure is not None and outcome.failure.startswith("cannot read scenario")
    assert "\n" not in outcome.line()


def test_names_are_unique_within_a_folder(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(scenario("- expect: {}"))
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.yaml").write_text(scenario("- expect: {}"))
    (tmp_path / "sub" / "c.yaml").write_text(scenario("- expect: {}"))
    (tmp_path / "sub" / "notes.txt").write_text("not a scenario")
    files = collect([tmp_path])
    assert [f.name for f in files] == ["a.yaml", "b.yaml", "c.yaml"]
    lines = [o.line() for o in conform(files)]
    assert lines[:2] == ["PASS t", "PASS t"]
    assert lines[2].startswith("FAIL t: duplicate scenario name (also in ")


def test_collect_refuses_a_missing_path(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        collect([tmp_path / "nope"])


# --- the world ---------------------------------------------------------------------------------


def test_objects_get_uid_generation_and_creation_time_unless_given(tmp_path: Path) -> None:
    objects = WORKLOAD + """
  - apiVersion: kueue.x-k8s.io/v1beta2
    kind: AdmissionCheck
    metadata: {name: check, generation: 4, creationTimestamp: "2023-06-01T00:00:00Z"}
    spec: {controllerName: kueue.x-k8s.io/provisioning-request}
  - apiVersion: kueue.x-k8s.io/v1beta2
    kind: LocalQueue
    metadata: {name: lq}
    spec: {clusterQueue: cq}
"""
    text = scenario("""
        - expect:
            objects:
              - kind: Workload
                metadata: {namespace: ns, name: wl, uid: wl-uid, generation: 1,
                           creationTimestamp: "2024-03-01T10:00:00Z"}
              - kind: AdmissionCheck
                metadata: {name: check, uid: 00000000-0000-4000-8000-000000000001, generation: 4,
                           creationTimestamp: "2023-06-01T00:00:00Z"}
              - {kind: LocalQueue, metadata: {namespace: default, name: lq, uid: 00000000-0000-4000-8000-000000000002}}
    """, objects=objects, header='name: t\nclock: "2024-03-01T10:00:00Z"\n')
    assert run(tmp_path, text).failure is None


def test_an_invalid_world_fails_the_scenario(tmp_path: Path) -> None:
    assert 'workloads.kueue.x-k8s.io "wl" already exists' in failure(
        tmp_path, scenario("- expect: {}", objects=WORKLOAD + WORKLOAD))
    bad = WORKLOAD.replace("count: 1", "count: lots")
    assert re.fullmatch(rf"{re.escape(str(tmp_path / 's.yaml'))}:\d+: Workload ns/wl: objects\[0\].spec.podSets\[0\]"
                        r".count: expected an integer, got 'lots'", failure(tmp_path, scenario("- expect: {}", objects=bad)))
    # a cluster-scoped object's namespace is cleared, as the API server does, not refused
    assert run(tmp_path, scenario("- expect: {}", objects="""
  - {apiVersion: kueue.x-k8s.io/v1beta2, kind: ResourceFlavor, metadata: {namespace: ns, name: f}}
""")).failure is None


# --- matching --------------------------------------------------------------------------------


@pytest.mark.parametrize(("expected", "actual", "ok"), [
    ({"a": ""}, {}, True),
    ({"a": {}}, {"a": None}, True),
    ({"a": []}, {}, True),
    ({"a": None}, {}, True),
    ({"a": None}, {"a": 1}, False),
    ({"a": ""}, {"a": "x"}, False),
    ({"a": {"$absent": True}}, {"a": []}, True),
    ({"a": {"$absent": True}}, {"a": [1]}, False),
    ({"a": {"$present": True}}, {"a": ""}, True),
    ({"a": {"$present": True}}, {"a": None}, False),
    ({"a": {"$present": True}}, {}, False),
    ({"a": [1, 2]}, {"a": [1, 2, 3]}, False),
    ({"a": [{"x": 1}]}, {"a": [{"x": 1, "y": 2}]}, True),
    ({"a": False}, {}, False),
    ({"a": 1}, {"a": True}, False),
    ({"a": 1}, {"a": 1.0}, True),
    ({"a": {"b": {"$absent": True}}}, {}, True),
    ({"status": {"conditions": [{"type": "A", "$absent": True}]}}, {}, True),
    ({"status": {"conditions": [{"type": "A"}]}}, {}, False),
])
def test_subset_match(expected: object, actual: object, ok: bool) -> None:
    assert (Matcher(0).match(expected, actual) is None) is ok


def test_keyed_lists_match_by_key_in_any_order_and_may_hold_more() -> None:
    actual = {"status": {"conditions": [{"type": "A", "status": "True"}, {"type": "B", "status": "False"}],
                         "admissionChecks": [{"name": "x", "state": "Ready"}, {"name": "y", "state": "Pending"}]}}
    m = Matcher(0)
    assert m.match({"status": {"conditions": [{"type": "B", "status": "False"}],
                               "admissionChecks": [{"name": "y", "state": "Pending"},
                                                   {"name": "x", "state": "Ready"}]}}, actual) is None
    assert m.match({"status": {"conditions": [{"type": "C", "$absent": True}]}}, actual) is None
    assert m.match({"status": {"conditions": [{"type": "A", "$absent": True}]}}, actual) == \
        'status.conditions[type=A]: expected no such element, got {"type": "A", "status": "True"}'
    assert m.match({"status": {"conditions": [{"type": "B", "status": "True"}]}}, actual) == \
        'status.conditions[type=B].status: expected "True", got "False"'
    assert m.match({"status": {"conditions": [{"type": "C"}]}}, actual) == \
        "status.conditions: expected an element with type=C (have: A, B)"
    # a YAML boolean is read as the condition status string
    assert m.match({"status": {"conditions": [{"type": "A", "status": True}]}}, actual) is None
    # other lists of named things are plain lists
    assert m.match({"spec": {"podSets": [{"name": "b"}]}},
                   {"spec": {"podSets": [{"name": "a"}, {"name": "b"}]}}) is not None


def test_quantities_compare_by_value_only_where_quantities_live() -> None:
    m = Matcher(0)
    assert m.match({"requests": {"cpu": "1"}}, {"requests": {"cpu": "1000m"}}) is None
    assert m.match({"resourceUsage": {"memory": "1Gi"}}, {"resourceUsage": {"memory": "1073741824"}}) is None
    assert m.match({"nominalQuota": 10}, {"nominalQuota": "10"}) is None
    assert m.match({"requests": {"cpu": "2"}}, {"requests": {"cpu": "1000m"}}) is not None
    assert m.match({"labels": {"size": "1"}}, {"labels": {"size": "1000m"}}) is not None


def test_after_is_start_plus_a_duration_in_whole_seconds() -> None:
    m = Matcher(1704067200.0)  # 2024-01-01T00:00:00Z
    assert m.match({"t": {"$after": "90s"}}, {"t": "2024-01-01T00:01:30Z"}) is None
    assert m.match({"t": {"$after": "90.5s"}}, {"t": "2024-01-01T00:01:30Z"}) is None
    assert m.match({"t": {"$after": "90s"}}, {"t": "2024-01-01T00:01:31Z"}) == \
        't: expected start + 90s, got "2024-01-01T00:01:31Z" (start + 91s)'
    assert m.match({"t": {"$after": "90s"}}, {}) is not None


def test_object_difference_names_the_object_and_the_path(tmp_path: Path) -> None:
    text = scenario("""
        - expect:
            objects: [{kind: Workload, metadata: {namespace: ns, name: wl}, spec: {podSets: [{count: 2}]}}]
    """)
    assert failure(tmp_path, text) == \
        "step 1: objects[0]: Workload ns/wl: spec.podSets[0].count: expected 2, got 1"
    text = scenario("- expect: {objects: [{kind: Workload, metadata: {namespace: ns, name: nope}}]}")
    assert failure(tmp_path, text) == "step 1: objects[0]: Workload ns/nope not found"


def test_objects_are_compared_in_the_requested_api_version(tmp_path: Path) -> None:
    text = scenario("""
        - apply:
            apiVersion: kueue.x-k8s.io/v1beta2
            kind: ClusterQueue
            metadata: {name: cq}
            spec: {admissionChecksStrategy: {admissionChecks: [{name: check}]}}
        - expect:
            objects:
              - {apiVersion: kueue.x-k8s.io/v1beta2, kind: ClusterQueue, metadata: {name: cq},
                 spec: {admissionChecksStrategy: {admissionChecks: [{name: check}]}}}
              - {apiVersion: kueue.x-k8s.io/v1beta1, kind: ClusterQueue, metadata: {name: cq}}
    """)
    assert run(tmp_path, text).failure is None


def test_absent_and_count(tmp_path: Path) -> None:
    objects = WORKLOAD + REQUEST.replace("{n}", "1")
    ok = scenario("- expect: {absent: [{kind: ProvisioningRequest, namespace: ns, name: wl-check-2}], "
                  "count: {ProvisioningRequest: 1}}", objects=objects)
    assert run(tmp_path, ok).failure is None
    assert failure(tmp_path, scenario("- expect: {absent: [{kind: ProvisioningRequest, namespace: ns, "
                                      "name: wl-check-1}]}", objects=objects)) == \
        "step 1: absent[0]: ProvisioningRequest ns/wl-check-1 exists"
    assert failure(tmp_path, scenario("- expect: {count: {ProvisioningRequest: 2}}", objects=objects)) == \
        "step 1: count.ProvisioningRequest: expected 2, got 1"


# --- steps the runner carries out --------------------------------------------------------------


def test_patch_merges_conditions_by_type_with_the_transition_time_rule(tmp_path: Path) -> None:
    text = scenario("""
        - patch:
            kind: Workload
            namespace: ns
            name: wl
            merge:
              status:
                conditions:
                  - {type: PodsReady, status: "False", reason: WaitForStart, message: waiting}
                  - {type: Finished, status: "False", reason: R, message: m}
        - advance: 10s
        - patch:
            kind: Workload
            namespace: ns
            name: wl
            merge:
              status:
                conditions:
                  - {type: PodsReady, status: "True", reason: Started}
                  - {type: Finished, message: still not}
        - expect:
            objects:
              - kind: Workload
                metadata: {namespace: ns, name: wl, generation: 1}
                status:
                  conditions:
                    - {type: PodsReady, status: "True", reason: Started, message: waiting,
                       lastTransitionTime: {$after: 10s}}
                    - {type: Finished, status: "False", reason: R, message: still not,
                       lastTransitionTime: {$after: 0s}}
    """)
    assert run(tmp_path, text).failure is None


def test_patch_is_a_merge_patch_elsewhere_and_spec_changes_bump_the_generation(tmp_path: Path) -> None:
    text = scenario("""
        - patch: {kind: Workload, namespace: ns, name: wl,
                  merge: {metadata: {labels: {a: b}}, spec: {active: false, queueName: null}}}
        - expect:
            objects:
              - kind: Workload
                metadata: {namespace: ns, name: wl, generation: 2, labels: {a: b}}
                spec: {active: false, queueName: {$absent: true}}
        - patch: {kind: Workload, namespace: ns, name: wl, merge: {metadata: {labels: {a: null, c: d}}}}
        - expect:
            objects: [{kind: Workload, metadata: {namespace: ns, name: wl, generation: 2, labels: {c: d}}}]
        - patch: {kind: Workload, namespace: ns, name: nope, merge: {}}
    """)
    assert failure(tmp_path, text) == 'step 5: workloads.kueue.x-k8s.io "nope" not found'


def test_patch_merges_admission_checks_by_name(tmp_path: Path) -> None:
    text = scenario("""
        - patch:
            kind: Workload
            namespace: ns
            name: wl
            merge: {status: {admissionChecks: [{name: a, state: Pending, message: ""},
                                               {name: b, state: Pending, message: ""}]}}
        - advance: 5s
        - patch:
            kind: Workload
            namespace: ns
            name: wl
            merge: {status: {admissionChecks: [{name: b, state: Ready}, {name: a, message: hi}]}}
        - expect:
            objects:
              - kind: Workload
                metadata: {namespace: ns, name: wl}
                status:
                  admissionChecks:
                    - {name: a, state: Pending, message: hi, lastTransitionTime: {$after: 0s}}
                    - {name: b, state: Ready, lastTransitionTime: {$after: 5s}}
    """)
    assert run(tmp_path, text).failure is None


def test_apply_creates_or_replaces_keeping_status_and_identity(tmp_path: Path) -> None:
    text = scenario("""
        - setQuotaReservation:
            workload: ns/wl
            admission: {clusterQueue: cq, podSetAssignments: [{name: main, flavors: {cpu: f},
                                                               resourceUsage: {cpu: 500m}, count: 1}]}
        - advance: 1m
        - apply:
            apiVersion: kueue.x-k8s.io/v1beta2
            kind: Workload
            metadata: {namespace: ns, name: wl, labels: {team: a}}
            spec:
              queueName: lq
              podSets: [{name: main, count: 1, template: {spec: {containers: [{name: c, resources: {requests: {cpu: 500m}}}]}}}]
        - expect:
            objects:
              - kind: Workload
                metadata: {namespace: ns, name: wl, uid: wl-uid, generation: 1, labels: {team: a},
                           creationTimestamp: {$after: 0s}}
                status: {admission: {clusterQueue: cq}}
        - apply:
            apiVersion: kueue.x-k8s.io/v1beta2
            kind: Workload
            metadata: {namespace: ns, name: wl}
            spec:
              queueName: lq
              active: false
              podSets: [{name: main, count: 1, template: {spec: {containers: [{name: c, resources: {requests: {cpu: 500m}}}]}}}]
        - apply: {apiVersion: kueue.x-k8s.io/v1beta2, kind: ResourceFlavor, metadata: {name: f}}
        - expect:
            objects:
              - kind: Workload
                metadata: {namespace: ns, name: wl, generation: 2, labels: {$absent: true}}
                spec: {active: false}
                status: {admission: {clusterQueue: cq}}
              - kind: ResourceFlavor
                metadata: {name: f, generation: 1, creationTimestamp: {$after: 1m},
                           uid: 00000000-0000-4000-8000-000000000001}
    """)
    assert run(tmp_path, text).failure is None


def test_delete_cascades_to_owned_objects(tmp_path: Path) -> None:
    template = """
  - apiVersion: v1
    kind: PodTemplate
    metadata:
      namespace: ns
      name: ppt-wl-check-1-main
      ownerReferences: [{apiVersion: autoscaling.x-k8s.io/v1, kind: ProvisioningRequest, name: wl-check-1,
                         uid: pr-uid, controller: true}]
    template: {spec: {containers: [{name: c}]}}
"""
    request = REQUEST.replace("{n}", "1").replace("name: wl-check-1\n", "name: wl-check-1\n      uid: pr-uid\n")
    text = scenario("""
        - delete: {kind: Workload, namespace: ns, name: wl}
        - expect: {count: {Workload: 0, ProvisioningRequest: 0, PodTemplate: 0}}
        - delete: {kind: Workload, namespace: ns, name: wl}
    """, objects=WORKLOAD + request + template)
    assert failure(tmp_path, text) == 'step 3: workloads.kueue.x-k8s.io "wl" not found'


def test_autoscaler_sets_a_condition_and_details(tmp_path: Path) -> None:
    text = scenario("""
        - autoscaler: {request: wl-check-1, namespace: ns, condition: Accepted, status: "True", reason: A}
        - advance: 30s
        - autoscaler: {request: wl-check-1, condition: Accepted, status: "True", reason: B, message: again}
        - autoscaler: {request: $latest, condition: Provisioned, status: True, reason: CapacityIsFound,
                       details: {nodes: "4"}}
        - expect:
            objects:
              - apiVersion: autoscaling.x-k8s.io/v1
                kind: ProvisioningRequest
                metadata: {namespace: ns, name: wl-check-1}
                status: {conditions: [{type: Accepted, reason: B, message: again, lastTransitionTime: {$after: 0s}}]}
              - apiVersion: autoscaling.x-k8s.io/v1
                kind: ProvisioningRequest
                metadata: {namespace: ns, name: wl-check-2}
                status:
                  conditions: [{type: Provisioned, status: "True", lastTransitionTime: {$after: 30s}}]
                  provisioningClassDetails: {nodes: "4"}
        - autoscaler: {request: wl-check-9, condition: Failed, status: "True"}
    """, objects=WORKLOAD + REQUEST.replace("{n}", "1") + REQUEST.replace("{n}", "2"))
    assert failure(tmp_path, text) == 'step 6: provisioningrequests.autoscaling.x-k8s.io "wl-check-9" not found'


def test_latest_needs_the_only_workload(tmp_path: Path) -> None:
    other = WORKLOAD.replace("name: wl, uid: wl-uid", "name: other")
    text = scenario("- autoscaler: {request: $latest, condition: Failed, status: 'True'}", objects=WORKLOAD + other)
    assert failure(tmp_path, text) == "step 1: $latest needs exactly one Workload, the world has 2"


def test_set_quota_reservation_sets_and_unsets(tmp_path: Path) -> None:
    text = scenario("""
        - patch: {kind: Workload, namespace: ns, name: wl,
                  merge: {status: {conditions: [{type: Evicted, status: "True", reason: Preempted, message: m}]}}}
        - setQuotaReservation:
            workload: ns/wl
            admission: {clusterQueue: cq, podSetAssignments: [{name: main, flavors: {cpu: f}, count: 1}]}
        - expect:
            objects:
              - kind: Workload
                metadata: {namespace: ns, name: wl}
                status:
                  admission: {clusterQueue: cq, podSetAssignments: [{name: main, flavors: {cpu: f}}]}
                  conditions:
                    - {type: QuotaReserved, status: "True", reason: QuotaReserved,
                       message: Quota reserved in ClusterQueue cq}
                    - {type: Evicted, status: "False", reason: QuotaReserved, message: "Previously: m"}
        - setQuotaReservation: {workload: ns/wl, admission: null}
        - expect:
            objects:
              - kind: Workload
                metadata: {namespace: ns, name: wl}
                status:
                  admission: {$absent: true}
                  conditions: [{type: QuotaReserved, status: "False", reason: EvictedByTest, message: Evicted By Test}]
    """)
    assert run(tmp_path, text).failure is None


# --- a stand-in controller: reconcile, events, metrics, faults ---------------------------------

Behaviour = Callable[[Txn, Key], Result]


@pytest.fixture
def job_controller(monkeypatch: pytest.MonkeyPatch) -> Callable[[Behaviour], None]:
    """Replace the job integration with ``behaviour`` for one test."""
    def install(behaviour: Behaviour) -> None:
        def reconcile(world: World, key: Key, ctx: Context) -> Result:
            return behaviour(Txn(world, ctx.now), key)
        monkeypatch.setitem(registry.BY_NAME, "job", evolve(registry.BY_NAME["job"], reconcile=reconcile))
    return install


def test_events_are_those_since_the_previous_expect_in_order(tmp_path: Path,
                                                             job_controller: Callable[[Behaviour], None]) -> None:
    def behaviour(txn: Txn, key: Key) -> Result:
        wl = txn.get(*key)
        assert wl is not None
        txn.event("Normal", "First", "one", wl)
        txn.event("Warning", "Second", "two", wl)
        return txn.result()
    job_controller(behaviour)
    steps = """
        - reconcile: {controller: job, workload: ns/wl}
        - expect:
            events:
              - {type: Normal, reason: First, object: {kind: Workload, namespace: ns, name: wl}}
              - {reason: Second, message: two}
        - expect: {events: [], exactEvents: true}
        - reconcile: {controller: job, workload: ns/wl}
        - expect: {events: [{reason: Second}]}
        - reconcile: {controller: job, workload: ns/wl}
        - expect: {events: [{reason: Second}], exactEvents: true}
    """
    assert failure(tmp_path, scenario(steps)).startswith(
        "step 7: events: expected exactly 1, got 2: Normal First Workload ns/wl 'one'; Warning Second")
    assert failure(tmp_path, scenario("""
        - reconcile: {controller: job, workload: ns/wl}
        - expect: {events: [{reason: Second}, {reason: First}]}
    """)).startswith("step 2: events[1]: no event matches {\"reason\": \"First\"} in order")
    assert failure(tmp_path, scenario("""
        - reconcile: {controller: job, workload: ns/wl}
        - expect: {events: [{reason: First}, {reason: Third}], exactEvents: true}
    """)).startswith('step 2: events[1]: reason: expected "Third", got "Second"')


def test_metrics_sum_the_series_whose_labels_include_the_given_ones(
        tmp_path: Path, job_controller: Callable[[Behaviour], None]) -> None:
    def behaviour(txn: Txn, key: Key) -> Result:
        txn.metric(c.METRIC_EVICTED_WORKLOADS, {"cluster_queue": "cq", "reason": "AdmissionCheck"})
        txn.metric(c.METRIC_EVICTED_WORKLOADS, {"cluster_queue": "cq", "reason": "Deactivated"})
        txn.metric(c.METRIC_EVICTED_WORKLOADS, {"cluster_queue": "other", "reason": "Deactivated"})
        return txn.result()
    job_controller(behaviour)
    text = scenario("""
        - reconcile: {controller: job, workload: ns/wl}
        - reconcile: {controller: job, workload: ns/wl}
        - expect:
            metrics:
              - {name: evicted_workloads_total, labels: {cluster_queue: cq}, value: 4}
              - {name: evicted_workloads_total, labels: {reason: Deactivated}, value: 4}
              - {name: evicted_workloads_total, value: 6}
              - {name: evicted_workloads_once_total, value: 0}
              - {name: evicted_workloads_total, labels: {cluster_queue: cq, reason: AdmissionCheck}, value: 1}
    """)
    assert failure(tmp_path, text) == \
        "step 3: metrics[4]: evicted_workloads_total{cluster_queue=cq,reason=AdmissionCheck}: expected 1, got 2"


def test_reconcile_errors_and_requeue_after(tmp_path: Path, job_controller: Callable[[Behaviour], None]) -> None:
    def behaviour(txn: Txn, key: Key) -> Result:
        template = PodTemplate(ObjectMeta(name="ppt", namespace="ns"), FrozenMap())
        _, error = txn.create(template)
        return txn.result(requeue_after=90.0, error=error)
    job_controller(behaviour)
    faults = "name: t\nfaults: [{verb: create, kind: PodTemplate, error: AlreadyExists}]\n"
    ok = scenario("""
        - reconcile: {controller: job, workload: ns/wl, expectError: already exists, expectRequeueAfter: 1m30s}
        - expect: {count: {PodTemplate: 0}}
    """, header=faults)
    assert run(tmp_path, ok).failure is None
    assert failure(tmp_path, scenario("- reconcile: {controller: job, workload: ns/wl}", header=faults)) == \
        'step 1: job reconcile failed: podtemplates "ppt" already exists'
    assert failure(tmp_path, scenario("- reconcile: {controller: job, workload: ns/wl, expectError: nope}",
                                      header=faults)) == \
        "step 1: expected an error containing 'nope', got 'podtemplates \"ppt\" already exists'"
    assert failure(tmp_path, scenario("- reconcile: {controller: job, workload: ns/wl, expectError: x}")) == \
        "step 1: expected an error containing 'x', got none"
    assert failure(tmp_path, scenario("- reconcile: {controller: job, workload: ns/wl, expectRequeueAfter: 0s}")) == \
        "step 1: expected requeueAfter none, got 1m30s"
    # without a fault the template is created, and stays
    assert run(tmp_path, scenario("""
        - reconcile: {controller: job, workload: ns/wl, expectRequeueAfter: 90s}
        - expect: {count: {PodTemplate: 1}}
    """)).failure is None


def test_a_settle_that_keeps_failing_fails_the_step(tmp_path: Path,
                                                    job_controller: Callable[[Behaviour], None]) -> None:
    job_controller(lambda txn, key: txn.result(error="boom"))
    assert failure(tmp_path, scenario("- settle: {controllers: [job]}")) == \
        "step 1: job reconcile of ns/wl keeps failing: boom"


def test_an_unexpected_exception_is_a_one_line_failure(tmp_path: Path,
                                                       job_controller: Callable[[Behaviour], None]) -> None:
    def behaviour(txn: Txn, key: Key) -> Result:
        raise RuntimeError("first line\nsecond line")
    job_controller(behaviour)
    outcome = run(tmp_path, scenario("- reconcile: {controller: job, workload: ns/wl}"))
    assert outcome.line() == "FAIL t: step 1: internal error: RuntimeError: first line second line"


# --- extensions: deletion with finalizers, a job's Workload by its job ----------------------------


FINALIZED = """
  - apiVersion: kueue.x-k8s.io/v1beta2
    kind: LocalQueue
    metadata: {namespace: ns, name: lq, finalizers: [example.com/keep]}
    spec: {clusterQueue: cq}
"""


def test_a_delete_marks_an_object_with_finalizers_which_goes_with_its_last_finalizer(tmp_path: Path) -> None:
    steps = """
    - delete: {kind: LocalQueue, namespace: ns, name: lq}
    - expect:
        objects:
        - kind: LocalQueue
          metadata: {namespace: ns, name: lq, deletionTimestamp: '2024-01-01T00:00:00Z', finalizers: [example.com/keep]}
    - advance: 5s
    - delete: {kind: LocalQueue, namespace: ns, name: lq}
    - expect:
        objects:
        - kind: LocalQueue
          metadata: {namespace: ns, name: lq, deletionTimestamp: '2024-01-01T00:00:00Z'}
    - patch: {kind: LocalQueue, namespace: ns, name: lq, merge: {metadata: {finalizers: null}}}
    - expect: {absent: [{kind: LocalQueue, namespace: ns, name: lq}]}
    """
    assert run(tmp_path, scenario(steps, objects=FINALIZED)).failure is None


JOB = """
  - apiVersion: batch/v1
    kind: Job
    metadata: {namespace: ns, name: train, labels: {kueue.x-k8s.io/queue-name: lq}}
    spec:
      template: {spec: {restartPolicy: Never, containers: [{name: c, image: busybox}]}}
"""


def test_workload_of_names_the_workload_a_job_gets(tmp_path: Path) -> None:
    steps = """
    - settle: {controllers: [job]}
    - expect:
        objects:
        - kind: Workload
          metadata:
            namespace: ns
            name: {$workloadOf: {kind: Job, namespace: ns, name: train}}
            ownerReferences: [{kind: Job, name: train}]
    - patch:
        kind: Workload
        namespace: ns
        name: {$workloadOf: {kind: Job, namespace: ns, name: train}}
        merge: {spec: {active: false}}
    - expect:
        objects:
        - kind: Workload
          metadata: {namespace: ns, name: {$workloadOf: {kind: Job, namespace: ns, name: train}}}
          spec: {active: false}
    - delete: {kind: Workload, namespace: ns, name: {$workloadOf: {kind: Job, namespace: ns, name: train}}}
    - expect: {absent: [{kind: Workload, namespace: ns, name: {$workloadOf: {kind: Job, namespace: ns, name: train}}}]}
    """
    assert run(tmp_path, scenario(steps, objects=JOB)).failure is None
    missing = "- delete: {kind: Workload, namespace: ns, name: {$workloadOf: {kind: Job, namespace: ns, name: nope}}}"
    assert failure(tmp_path, scenario(missing, objects=JOB)) == "step 1: $workloadOf: Job ns/nope not found"
    bad = "- delete: {kind: Workload, namespace: ns, name: {$workloadOf: {kind: Pod, name: p}}}"
    assert "steps[0].delete.name.$workloadOf.kind" in failure(tmp_path, scenario(bad, objects=JOB))


def test_expect_refusal_passes_only_when_the_write_is_refused_with_the_message(tmp_path: Path) -> None:
    refused = """
    - expectRefusal:
        patch: {kind: LocalQueue, namespace: ns, name: lq, merge: {spec: {clusterQueue: other}}}
        message: field is immutable
    """
    assert run(tmp_path, scenario(refused, objects=FINALIZED)).failure is None
    other = refused.replace("field is immutable", "forbidden")
    assert failure(tmp_path, scenario(other, objects=FINALIZED)) == (
        "step 1: expected a refusal containing 'forbidden', got 'LocalQueue.kueue.x-k8s.io \"lq\" is invalid: "
        "spec.clusterQueue: Invalid value: \"string\": field is immutable'")
    accepted = refused.replace("clusterQueue: other", "stopPolicy: Hold")
    assert failure(tmp_path, scenario(accepted, objects=FINALIZED)) == (
        "step 1: expected the patch to be refused ('field is immutable'), it was accepted")
    both = "- expectRefusal: {apply: {kind: LocalQueue}, patch: {kind: LocalQueue, name: lq, merge: {}}, message: x}"
    assert "one of apply, patch, not both" in failure(tmp_path, scenario(both, objects=FINALIZED))
