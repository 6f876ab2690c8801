"""The provisioning admission-check controller, one reconcile at a time.

Worlds are built straight from the models; each test asserts on the effects (objects,
events, the error and the wake-up) that upstream's controller would produce.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

import pytest
from kueue_provreq.api import constants as c
from kueue_provreq.api import naming
from kueue_provreq.api.config import Configuration
from kueue_provreq.api.evolve import evolve
from kueue_provreq.api.frozen import FrozenMap, freeze
from kueue_provreq.api.meta import Condition, ObjectMeta, OwnerReference, Time
from kueue_provreq.api.objects import KubeObject
from kueue_provreq.api.provisioning import (
    NodeSelectorFromDetail,
    PodSetUpdatesConfig,
    PodTemplate,
    ProvisioningRequest,
    ProvisioningRequestConfig,
    ProvisioningRequestConfigSpec,
    ProvisioningRequestPodSet,
    ProvisioningRequestSpec,
    ProvisioningRequestStatus,
    Reference,
    RetryStrategy,
)
from kueue_provreq.api.queues import (
    AdmissionCheck,
    AdmissionCheckSpec,
    ParametersReference,
    ResourceFlavor,
    ResourceFlavorSpec,
)
from kueue_provreq.api.workload import (
    Admission,
    AdmissionCheckState,
    PodSet,
    PodSetAssignment,
    PodSetUpdate,
    Workload,
)
from kueue_provreq.controllers import provisioning
from kueue_provreq.controllers.context import Context
from kueue_provreq.machines import ADMISSION_CHECK_MACHINE
from kueue_provreq.world import Create, Delete, Event, Fault, Result, Update, World

import builders
from builders import T0

NS = "ns"
WL_UID = "wl-uid"
KEY = (c.WORKLOAD, NS, "wl")
TOLERATION = freeze({"key": "f1t1k", "value": "f1t1v", "operator": "Equal", "effect": "NoSchedule"})


# --- builders --------------------------------------------------------------------------------


pod_template = builders.template


PS1 = PodSet("ps1", 4, pod_template({"cpu": "1"}))
PS2 = PodSet("ps2", 4, pod_template({"memory": "1M"}))
PSA1 = PodSetAssignment("ps1", FrozenMap({"cpu": "flv1"}), count=4)
PSA2 = PodSetAssignment("ps2", FrozenMap({"cpu": "flv2"}), count=3)


def workload(checks: Iterable[AdmissionCheckState] = (AdmissionCheckState("check1", c.CHECK_PENDING, T0),
                                                       AdmissionCheckState("not-provisioning", c.CHECK_PENDING, T0)),
             pod_sets: tuple[PodSet, ...] = (PS1, PS2),
             assignments: tuple[PodSetAssignment, ...] | None = (PSA1, PSA2),
             conditions: Iterable[str] = (c.WORKLOAD_QUOTA_RESERVED,),
             name: str = "wl", annotations: Mapping[str, str] | None = None,
             active: bool | None = None) -> Workload:
    return builders.workload(
        name, uid=WL_UID, annotations=annotations, pod_sets=pod_sets, active=active,
        conditions=(builders.cond(t, generation=None) for t in conditions),
        admission=Admission("q1", assignments) if assignments is not None else None, checks=checks)


def check(name: str = "check1", prc: str = "config1",
          controller: str = c.PROVISIONING_REQUEST_CONTROLLER_NAME,
          parameters: ParametersReference | None = None) -> AdmissionCheck:
    ref = parameters if parameters is not None else ParametersReference(c.KUEUE_GROUP,
                                                                        c.PROVISIONING_REQUEST_CONFIG, prc)
    return AdmissionCheck(ObjectMeta(name=name, uid=f"ac-{name}"), AdmissionCheckSpec(controller, ref))


def config(name: str = "config1", cls: str = "class1", params: Mapping[str, str] | None = None,
           **spec: Any) -> ProvisioningRequestConfig:
    return ProvisioningRequestConfig(ObjectMeta(name=name, uid=f"prc-{name}"), ProvisioningRequestConfigSpec(
        provisioning_class_name=cls, parameters=FrozenMap({"p1": "v1"} if params is None else params), **spec))


def flavors() -> list[ResourceFlavor]:
    return [ResourceFlavor(ObjectMeta(name="flv1", uid="rf1"),
                           ResourceFlavorSpec(FrozenMap({"f1l1": "v1"}), (TOLERATION,))),
            ResourceFlavor(ObjectMeta(name="flv2", uid="rf2"), ResourceFlavorSpec(FrozenMap({"f2l1": "v1"})))]


def wl_ref() -> OwnerReference:
    return OwnerReference(c.KUEUE_V1BETA2, c.WORKLOAD, "wl", WL_UID, True, True)


def request(name: str = "wl-check1-1", *conditions: Condition, cls: str = "class1",
            params: Mapping[str, str] | None = None, owner: OwnerReference | None = None,
            details: Mapping[str, str] | None = None,
            pod_sets: tuple[tuple[str, int], ...] | None = None) -> ProvisioningRequest:
    if pod_sets is None:
        pod_sets = ((f"ppt-{name}-ps1", 4), (f"ppt-{name}-ps2", 3))
    return ProvisioningRequest(
        ObjectMeta(name=name, namespace=NS, uid=f"uid-{name}", labels=FrozenMap({c.LABEL_MANAGED: "true"}),
                   owner_references=(owner or wl_ref(),)),
        ProvisioningRequestSpec(cls, FrozenMap({"p1": "v1"} if params is None else params),
                                tuple(ProvisioningRequestPodSet(Reference(n), k) for n, k in pod_sets)),
        ProvisioningRequestStatus(tuple(conditions), FrozenMap(details or {})))


def cond(type_: str, status: str = c.TRUE, message: str = "", at: int = T0) -> Condition:
    """A request condition, as Cluster Autoscaler writes them (no observedGeneration)."""
    return builders.cond(type_, status, "Reason", message, at, generation=None)


def base(*extra: KubeObject, wl: Workload | None = None, prc: ProvisioningRequestConfig | None = None
         ) -> list[KubeObject]:
    return [wl or workload(), check(), prc or config(), *flavors(), *extra]


def run(objects: Iterable[KubeObject], faults: tuple[Fault, ...] = (), now: int = T0,
        gates: Mapping[str, bool] | None = None, jitter: float = 0.0) -> Result:
    cfg = Configuration(feature_gates=Configuration().feature_gates.merged(gates or {}))
    return provisioning.reconcile(World(objects, faults), KEY, Context(Time(now), cfg, lambda: jitter))


# --- reading results -------------------------------------------------------------------------


def created(r: Result, kind: str) -> list[Any]:
    return [e.obj for e in r.effects if isinstance(e, Create) and kind == e.obj.KIND]


def updated(r: Result, kind: str) -> list[Any]:
    return [e.obj for e in r.effects if isinstance(e, Update) and kind == e.obj.KIND]


def deleted(r: Result) -> list[str]:
    return [e.name for e in r.effects if isinstance(e, Delete)]


def events(r: Result) -> list[tuple[str, str, str]]:
    return [(e.type, e.reason, e.message) for e in r.effects if isinstance(e, Event)]


def state_of(r: Result, name: str = "check1") -> AdmissionCheckState:
    wls = updated(r, c.WORKLOAD)
    assert wls, f"no workload update in {r.effects}"
    st = wls[-1].check_state(name)
    assert st is not None
    return st  # type: ignore[no-any-return]


def created_event(name: str) -> tuple[str, str, str]:
    return ("Normal", c.EVENT_PROVISIONING_REQUEST_CREATED, f'Created ProvisioningRequest: "{name}"')


# --- which workloads ---------------------------------------------------------------------------


def test_missing_workload_or_no_reservation_does_nothing() -> None:
    assert run([check(), config()]) == Result()
    queued = workload(conditions=())
    assert run(base(request(), wl=queued)) == Result()  # existing requests are kept


@pytest.mark.parametrize("gate", [True, False])
def test_finished_workload_deletes_every_owned_request(gate: bool) -> None:
    finished = workload(conditions=(c.WORKLOAD_QUOTA_RESERVED, c.WORKLOAD_FINISHED))
    stray = request("wl-check2")
    r = run(base(request(), stray, wl=finished), gates={c.GATE_CLEANUP_ON_EVICTION: gate})
    assert sorted(deleted(r)) == ["wl-check1-1", "wl-check2"]
    assert r.effects == tuple(e for e in r.effects if isinstance(e, Delete))


def test_evicted_workload_deletes_requests_only_with_the_cleanup_gate() -> None:
    evicted = workload(conditions=(c.WORKLOAD_QUOTA_RESERVED, c.WORKLOAD_EVICTED))
    assert deleted(run(base(request(), wl=evicted))) == ["wl-check1-1"]
    assert run(base(request(), wl=evicted), gates={c.GATE_CLEANUP_ON_EVICTION: False}) == Result()


def test_requests_owned_by_name_whatever_the_owner_kind_are_listed() -> None:
    other = request("wl-check2", owner=OwnerReference("v1", "ConfigMap", "wl"))
    unowned = evolve(request("wl-check3"), metadata=ObjectMeta(name="wl-check3", namespace=NS))
    finished = workload(conditions=(c.WORKLOAD_FINISHED,))
    assert deleted(run(base(other, unowned, wl=finished))) == ["wl-check2"]


def test_only_checks_of_the_provisioning_controller_are_handled() -> None:
    wl = workload(checks=(AdmissionCheckState("check1", c.CHECK_PENDING, T0),
                          AdmissionCheckState("other", c.CHECK_PENDING, T0),
                          AdmissionCheckState("missing", c.CHECK_PENDING, T0)))
    other = check("other", controller="example.com/other", parameters=ParametersReference())
    r = run(base(other, wl=wl))  # "other" has a bad ref but is not ours; "missing" does not exist
    assert r.error is None
    assert [p.metadata.name for p in created(r, c.PROVISIONING_REQUEST)] == ["wl-check1-1"]


@pytest.mark.parametrize(("ref", "error"), [
    (None, "missing parameters reference"),
    (ParametersReference(c.KUEUE_GROUP, c.PROVISIONING_REQUEST_CONFIG, ""), "empty name: bad parameters reference"),
    (ParametersReference("kueue.x-k8s.io/v1beta1", c.PROVISIONING_REQUEST_CONFIG, "config1"),
     'wrong group "kueue.x-k8s.io/v1beta1", expecting "kueue.x-k8s.io": bad parameters reference'),
    (ParametersReference(c.KUEUE_GROUP, "Config", "config1"),
     'wrong kind "Config", expecting "ProvisioningRequestConfig": bad parameters reference'),
])
def test_bad_parameters_reference_fails_the_reconcile(ref: ParametersReference | None, error: str) -> None:
    ac = evolve(check(), spec=AdmissionCheckSpec(c.PROVISIONING_REQUEST_CONTROLLER_NAME, ref))
    r = run([workload(), ac, config(), request()])
    assert r.error == error
    assert r.effects == ()


# --- inactive and not-needed checks -----------------------------------------------------------------


def test_missing_config_makes_the_check_inactive_and_deletes_its_requests() -> None:
    wl = workload(checks=(AdmissionCheckState("check1", c.CHECK_READY, T0, "old"),))
    r = run([wl, check(), request()], now=T0 + 10)
    st = state_of(r)
    # the check's own transition time: the controller hands SetAdmissionCheckState a copy of the check
    assert (st.state, st.message, st.last_transition_time) == (c.CHECK_PENDING, c.MSG_CHECK_INACTIVE, T0)
    assert deleted(r) == ["wl-check1-1"]
    assert events(r) == [("Normal", c.EVENT_ADMISSION_CHECK_UPDATED,
                          "Admission check check1 updated state from Ready to Pending with message: "
                          "the check is not active")]
    assert created(r, c.PROVISIONING_REQUEST) == []


def test_no_podset_of_interest_makes_the_check_ready() -> None:
    r = run(base(request(), prc=config(managed_resources=("nvidia.com/gpu",))))
    st = state_of(r)
    assert (st.state, st.message) == (c.CHECK_READY, c.MSG_NO_REQUEST_NEEDED)
    assert deleted(r) == ["wl-check1-1"]
    assert created(r, c.PROVISIONING_REQUEST) == [] and created(r, c.POD_TEMPLATE) == []
    assert events(r) == [("Normal", c.EVENT_ADMISSION_CHECK_UPDATED,
                          "Admission check check1 updated state from Pending to Ready with message: "
                          "the provisioning request is not needed")]


def test_not_needed_leaves_a_ready_check_untouched() -> None:
    psu = (PodSetUpdate("ps1"),)
    wl = workload(checks=(AdmissionCheckState("check1", c.CHECK_READY, T0, "kept", psu),))
    r = run(base(wl=wl, prc=config(managed_resources=("nvidia.com/gpu",))))
    assert r == Result()


@pytest.mark.parametrize("where", ["limits", "initContainers"])
def test_managed_resource_in_limits_or_init_containers_counts(where: str) -> None:
    if where == "limits":
        tmpl = freeze({"spec": {"containers": [{"name": "c", "resources": {"limits": {"gpu": "1"}}}]}})
    else:
        tmpl = freeze({"spec": {"containers": [{"name": "c"}],
                                "initContainers": [{"name": "i", "resources": {"requests": {"gpu": "1"}}}]}})
    wl = workload(pod_sets=(PS1, PodSet("ps2", 4, tmpl)))
    r = run(base(wl=wl, prc=config(managed_resources=("gpu",))))
    pr, = created(r, c.PROVISIONING_REQUEST)
    assert [(p.pod_template_ref.name, p.count) for p in pr.spec.pod_sets] == [("ppt-wl-check1-1-ps2", 3)]


def test_pod_level_resources_do_not_make_a_podset_of_interest() -> None:
    tmpl = freeze({"spec": {"containers": [{"name": "c"}], "resources": {"requests": {"gpu": "1"}}}})
    wl = workload(pod_sets=(PodSet("ps1", 4, tmpl),), assignments=(PSA1,))
    assert state_of(run(base(wl=wl, prc=config(managed_resources=("gpu",))))).state == c.CHECK_READY


def test_zero_counts_need_no_request() -> None:
    wl = workload(pod_sets=(evolve(PS1, count=0), PS2),
                  assignments=(PSA1, evolve(PSA2, count=0)))
    assert state_of(run(base(wl=wl))).message == c.MSG_NO_REQUEST_NEEDED


def test_missing_assignment_is_an_inconsistency_error() -> None:
    r = run(base(wl=workload(assignments=(PSA2,))))
    assert r.error == 'inconsistent podSet assignments: missing assignment for PodSet "ps1"'
    assert r.effects == ()


def test_missing_assignment_after_a_needed_podset_fails_in_the_merge() -> None:
    r = run(base(wl=workload(assignments=(PSA1,))))
    assert r.error == "inconsistent podSet assignments"
    assert created(r, c.PROVISIONING_REQUEST) == []


# --- creation --------------------------------------------------------------------------------


def settle(world: World, now: int = T0, rounds: int = 5) -> list[Result]:
    """Reconcile and apply until nothing is left to do."""
    results: list[Result] = []
    for _ in range(rounds):
        r = provisioning.reconcile(world, KEY, Context(Time(now)))
        if r == Result():
            return results
        results.append(r)
        for e in r.effects:
            world.apply(e)
    raise AssertionError(f"not settled: {results[-1]}")


def test_creates_templates_then_the_request() -> None:
    r = run(base())
    assert [type(e).__name__ + ":" + getattr(getattr(e, "obj", None), "KIND", "") for e in r.effects[:4]] == [
        "Create:PodTemplate", "Create:PodTemplate", "Create:ProvisioningRequest", "Event:"]
    assert events(r) == [created_event("wl-check1-1")]
    assert updated(r, c.WORKLOAD) == []  # no active request yet: the status is not touched
    pr, = created(r, c.PROVISIONING_REQUEST)
    assert pr.metadata.labels == {c.LABEL_MANAGED: "true"}
    assert pr.metadata.annotations == {}
    assert pr.metadata.owner_references == (wl_ref(),)
    assert pr.spec.provisioning_class_name == "class1"
    assert pr.spec.parameters == {"p1": "v1"}
    assert [(p.pod_template_ref.name, p.count) for p in pr.spec.pod_sets] == [
        ("ppt-wl-check1-1-ps1", 4), ("ppt-wl-check1-1-ps2", 3)]
    t1, t2 = created(r, c.POD_TEMPLATE)
    assert t1.metadata.name == "ppt-wl-check1-1-ps1" and t1.metadata.namespace == NS
    assert t1.metadata.labels == {c.LABEL_MANAGED: "true"}
    assert t1.metadata.owner_references == (
        OwnerReference("kueue.x-k8s.io/v1beta2", "Workload", "wl", WL_UID, True, True),)
    assert t1.template["spec"]["nodeSelector"] == {"f1l1": "v1"}
    assert t1.template["spec"]["tolerations"] == (TOLERATION,)
    assert t1.template["spec"]["containers"] == PS1.template["spec"]["containers"]
    assert t2.template["spec"]["nodeSelector"] == {"f2l1": "v1"}
    assert "tolerations" not in t2.template["spec"]
    assert r.error is None and r.requeue_after is None


def test_templates_end_up_controlled_by_their_request() -> None:
    world = World(base())
    settle(world)
    pr = world.get(c.PROVISIONING_REQUEST, NS, "wl-check1-1")
    assert pr is not None and pr.metadata.uid
    for name in ("ppt-wl-check1-1-ps1", "ppt-wl-check1-1-ps2"):
        pt = world.get(c.POD_TEMPLATE, NS, name)
        assert pt is not None
        assert pt.metadata.owner_references == (
            OwnerReference("autoscaling.x-k8s.io/v1", "ProvisioningRequest", "wl-check1-1",
                           pr.metadata.uid, True, True),)


def test_existing_template_is_reused_as_is() -> None:
    pt = PodTemplate(ObjectMeta(name="ppt-wl-check1-1-ps1", namespace=NS, owner_references=(wl_ref(),)),
                     freeze({"spec": {"containers": [{"name": "old"}]}}))
    r = run(base(pt))
    assert [t.metadata.name for t in created(r, c.POD_TEMPLATE)] == ["ppt-wl-check1-1-ps2"]
    pr, = created(r, c.PROVISIONING_REQUEST)
    moved = [t for t in updated(r, c.POD_TEMPLATE) if t.metadata.name == pt.metadata.name]
    assert [t.template for t in moved] == [pt.template]
    assert moved[0].metadata.owner_references == (
        OwnerReference(c.AUTOSCALING_V1, c.PROVISIONING_REQUEST, "wl-check1-1", pr.metadata.uid, True, True),)


def test_transfer_keeps_other_owners_and_replaces_a_plain_ref_to_the_request() -> None:
    other = OwnerReference("v1", "ConfigMap", "cm", "cm-uid")
    plain = OwnerReference(c.AUTOSCALING_V1, c.PROVISIONING_REQUEST, "wl-check1-1", "uid-wl-check1-1")
    pts = [PodTemplate(ObjectMeta(name="ppt-wl-check1-1-ps1", namespace=NS, owner_references=(wl_ref(), other))),
           PodTemplate(ObjectMeta(name="ppt-wl-check1-1-ps2", namespace=NS, owner_references=(plain, other)))]
    r = run(base(request(), *pts))
    ctrl = evolve(plain, controller=True, block_owner_deletion=True)
    assert [t.metadata.owner_references for t in updated(r, c.POD_TEMPLATE)] == [(other, ctrl), (ctrl, other)]


def test_template_controlled_by_someone_else_is_an_error() -> None:
    pt = PodTemplate(ObjectMeta(name="ppt-wl-check1-1-ps1", namespace=NS,
                                owner_references=(OwnerReference("v1", "ConfigMap", "cm", "cm-uid", True),)))
    r = run(base(request(), pt))
    assert r.error == "Object ns/ppt-wl-check1-1-ps1 is already owned by another ConfigMap controller cm"


def test_flavor_node_label_conflicting_with_the_template_is_a_create_error() -> None:
    ps1 = evolve(PS1, template=pod_template(nodeSelector={"f1l1": "other"}))
    r = run(base(wl=workload(pod_sets=(ps1, PS2))), now=T0 + 5)
    msg = ('Error creating PodTemplate "ppt-wl-check1-1-ps1": invalid admission check PodSetUpdate: '
           "conflict for nodeSelector: conflict for key=f1l1, value1=other, value2=v1")
    assert events(r) == [("Warning", c.EVENT_FAILED_CREATE, msg)]
    st = state_of(r)
    assert (st.state, st.message, st.last_transition_time) == (c.CHECK_PENDING, msg, T0)
    assert r.error == ("invalid admission check PodSetUpdate: conflict for nodeSelector: "
                       "conflict for key=f1l1, value1=other, value2=v1")
    assert created(r, c.PROVISIONING_REQUEST) == []


def test_same_node_label_and_toleration_are_not_duplicated() -> None:
    ps1 = evolve(PS1, template=pod_template(nodeSelector={"f1l1": "v1", "zone": "a"},
                                                  tolerations=[TOLERATION]))
    t1 = created(run(base(wl=workload(pod_sets=(ps1, PS2)))), c.POD_TEMPLATE)[0]
    assert t1.template["spec"]["nodeSelector"] == {"f1l1": "v1", "zone": "a"}
    assert t1.template["spec"]["tolerations"] == (TOLERATION,)


def test_missing_flavor_is_a_create_error() -> None:
    r = run([workload(), check(), config(), flavors()[1]])
    assert r.error == 'ResourceFlavor.kueue.x-k8s.io "flv1" not found'
    assert events(r)[0][2] == ('Error creating PodTemplate "ppt-wl-check1-1-ps1": '
                               'ResourceFlavor.kueue.x-k8s.io "flv1" not found')


def test_limits_are_copied_to_missing_requests() -> None:
    tmpl = freeze({"spec": {
        "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "2", "memory": "1Gi"}}}],
        "initContainers": [{"name": "i", "resources": {"limits": {"cpu": "500m"}}}],
        "resources": {"limits": {"memory": "2Gi"}},
    }})
    wl = workload(pod_sets=(PodSet("ps1", 4, tmpl),), assignments=(PSA1,))
    spec = created(run(base(wl=wl)), c.POD_TEMPLATE)[0].template["spec"]
    assert spec["containers"][0]["resources"]["requests"] == {"cpu": "1", "memory": "1Gi"}
    assert spec["initContainers"][0]["resources"]["requests"] == {"cpu": "500m"}
    assert spec["resources"]["requests"] == {"memory": "2Gi"}


def test_annotations_override_config_parameters() -> None:
    wl = workload(annotations={"provreq.kueue.x-k8s.io/ValidUntilSeconds": "0", "provreq.kueue.x-k8s.io/p1": "ann",
                               "invalid-provreq-prefix/Foo1": "Bar1"})
    pr, = created(run(base(wl=wl)), c.PROVISIONING_REQUEST)
    assert pr.spec.parameters == {"p1": "ann", "ValidUntilSeconds": "0"}


def test_no_parameters_anywhere_gives_an_empty_map() -> None:
    pr, = created(run(base(prc=config(params={}))), c.PROVISIONING_REQUEST)
    assert pr.spec.parameters == FrozenMap()


def test_overridden_parameter_churns_the_request() -> None:
    """An annotation that changes a config parameter makes the request look out of sync:
    it is deleted and created again under the same name on every reconcile."""
    wl = workload(annotations={"provreq.kueue.x-k8s.io/p1": "ann"})
    existing = request(params={"p1": "ann"})
    r = run(base(existing, wl=wl))
    assert deleted(r) == ["wl-check1-1"]
    assert [p.metadata.name for p in created(r, c.PROVISIONING_REQUEST)] == ["wl-check1-1"]


# --- names -------------------------------------------------------------------------------------


def test_names_are_limited_with_a_hash() -> None:
    assert naming.provisioning_request_name("wl", "check1", 1) == "wl-check1-1"
    assert naming.pod_template_name("wl-check1-1", "ps1") == "ppt-wl-check1-1-ps1"
    long = "w" * 250
    full = f"{long}-check1-1"
    name = naming.provisioning_request_name(long, "check1", 1)
    assert name == full[:247] + "-" + hashlib.sha1(full.encode()).hexdigest()[:5]
    assert len(name) == 253
    pt = naming.pod_template_name(name, "ps1")
    assert pt == f"ppt-{name}-ps1"[:247] + "-" + hashlib.sha1(f"ppt-{name}-ps1".encode()).hexdigest()[:5]
    assert naming.limit_object_name("x" * 247) == "x" * 247


def test_hashed_request_name_is_never_active() -> None:
    long = "w" * 250
    wl = evolve(workload(), metadata=evolve(workload().metadata, name=long))
    name = naming.provisioning_request_name(long, "check1", 1)
    owner = evolve(wl_ref(), name=long)
    r = provisioning.reconcile(World(base(request(name, owner=owner), wl=wl)), (c.WORKLOAD, NS, long), Context(T0))
    assert deleted(r) == [name]
    pr, = created(r, c.PROVISIONING_REQUEST)
    assert pr.metadata.name == name
    assert pr.spec.pod_sets[0].pod_template_ref.name == naming.pod_template_name(name, "ps1")
    # the hashed name carries no attempt, so it is recreated on every reconcile (upstream's latent bug)
    assert naming.attempt_of(pr.metadata.name, long, "check1") is None


def test_attempt_parsing() -> None:
    assert naming.attempt_of("wl-check1-12", "wl", "check1") == 12
    assert naming.attempt_of("wl-check1-x", "wl", "check1") is None
    assert naming.attempt_of("wl-check2-1", "wl", "check1") is None
    assert naming.attempt_of("wl-check1-", "wl", "check1") is None
    assert provisioning.go_quote('a"b') == '"a\\"b"'


# --- active request selection and cleanup ------------------------------------------------------------


def test_latest_synced_attempt_is_active_and_the_rest_deleted() -> None:
    old = request("wl-check1-1", cond(c.PR_FAILED))
    newest = request("wl-check1-2", cond(c.PR_PROVISIONED, message="done"))
    out_of_sync = request("wl-check1-3", cls="other")
    unrelated = request("wl-check2")
    r = run(base(old, out_of_sync, newest, unrelated))
    assert sorted(deleted(r)) == ["wl-check1-1", "wl-check1-3", "wl-check2"]
    st = state_of(r)
    assert (st.state, st.message) == (c.CHECK_READY, "done")
    assert st.pod_set_updates[0].annotations[c.ANNOTATION_CONSUME_PROVISIONING_REQUEST] == "wl-check1-2"
    assert created(r, c.PROVISIONING_REQUEST) == []


def test_extra_request_parameters_keep_it_in_sync() -> None:
    pr = request(params={"p1": "v1", "ValidUntilSeconds": "0"})
    r = run(base(pr))
    assert deleted(r) == [] and created(r, c.PROVISIONING_REQUEST) == []


def test_deletion_happens_after_the_status_patch_and_before_creation() -> None:
    r = run(base(request("wl-check1-1", cond(c.PR_FAILED)), request("wl-stale")))
    kinds = [type(e).__name__ for e in r.effects]
    assert kinds.index("Update") < kinds.index("Delete")


def test_delete_failure_is_returned() -> None:
    r = run(base(request("wl-stale"), request()), faults=(Fault("delete", c.PROVISIONING_REQUEST, "boom"),))
    assert r.error == "boom"


# --- check state mapping -------------------------------------------------------------------------


def test_provisioned_makes_the_check_ready_with_pod_set_updates() -> None:
    prc = config(pod_set_updates=PodSetUpdatesConfig((NodeSelectorFromDetail("node-key", "RequestKey"),
                                                     NodeSelectorFromDetail("absent", "Missing"))))
    pr = request("wl-check1-1", cond(c.PR_PROVISIONED, message="ok"), details={"RequestKey": "abc"})
    r = run(base(pr, prc=prc), now=T0 + 7)
    st = state_of(r)
    assert (st.state, st.message, st.last_transition_time) == (c.CHECK_READY, "ok", T0)  # the check's own time
    ann = {c.ANNOTATION_CONSUME_PROVISIONING_REQUEST: "wl-check1-1", c.ANNOTATION_PROVISIONING_CLASS_NAME: "class1"}
    assert st.pod_set_updates == (PodSetUpdate("ps1", annotations=FrozenMap(ann), node_selector=FrozenMap({"node-key": "abc"})),
                                  PodSetUpdate("ps2", annotations=FrozenMap(ann), node_selector=FrozenMap({"node-key": "abc"})))
    assert events(r) == [("Normal", c.EVENT_ADMISSION_CHECK_UPDATED,
                          "Admission check check1 updated state from Pending to Ready with message: ok")]
    assert created(r, c.PROVISIONING_REQUEST) == []


def test_pod_set_updates_without_config_have_no_node_selector_and_empty_map_when_nothing_matches() -> None:
    pr = request("wl-check1-1", cond(c.PR_PROVISIONED))
    assert state_of(run(base(pr))).pod_set_updates[0].node_selector is None
    prc = config(pod_set_updates=PodSetUpdatesConfig((NodeSelectorFromDetail("k", "Missing"),)))
    assert state_of(run(base(pr, prc=prc))).pod_set_updates[0].node_selector == FrozenMap()


def test_provisioned_when_already_ready_changes_nothing() -> None:
    wl = workload(checks=(AdmissionCheckState("check1", c.CHECK_READY, T0, "old"),))
    r = run(base(request("wl-check1-1", cond(c.PR_PROVISIONED, message="new")), wl=wl))
    assert r == Result()


def test_ready_check_is_never_recreated() -> None:
    wl = workload(checks=(AdmissionCheckState("check1", c.CHECK_READY, T0),))
    assert run(base(wl=wl)) == Result()


def test_accepted_with_provisioned_false_surfaces_the_eta() -> None:
    eta = "Provisioning Request wasn't provisioned. ETA: 2024-02-22T10:36:40Z"
    pr = request("wl-check1-1", cond(c.PR_ACCEPTED), cond(c.PR_PROVISIONED, c.FALSE, eta))
    r = run(base(pr), now=T0 + 3)
    st = state_of(r)
    assert (st.state, st.message, st.last_transition_time) == (c.CHECK_PENDING, eta, T0)
    assert events(r) == []  # a message-only change emits no event


def test_accepted_without_provisioned_condition_changes_nothing() -> None:
    wl = workload(checks=(AdmissionCheckState("check1", c.CHECK_PENDING, T0, "kept"),))
    assert run(base(request("wl-check1-1", cond(c.PR_ACCEPTED)), wl=wl)) == Result()


def test_no_deciding_condition_clears_the_message() -> None:
    wl = workload(checks=(AdmissionCheckState("check1", c.CHECK_PENDING, T0, "stale"),))
    r = run(base(request("wl-check1-1", cond(c.PR_FAILED, c.FALSE)), wl=wl))
    assert state_of(r).message == ""


def test_provisioned_with_an_empty_message_clears_the_old_one() -> None:
    wl = workload(checks=(AdmissionCheckState("check1", c.CHECK_PENDING, T0, "ETA soon"),))
    r = run(base(request("wl-check1-1", cond(c.PR_PROVISIONED)), wl=wl))
    assert (state_of(r).state, state_of(r).message) == (c.CHECK_READY, "")
    assert events(r) == [("Normal", c.EVENT_ADMISSION_CHECK_UPDATED,
                          "Admission check check1 updated state from Pending to Ready")]


@pytest.mark.parametrize(("active", "expected"), [(None, c.CHECK_REJECTED), (False, None)])
def test_capacity_revoked_rejects_only_active_workloads(active: bool | None, expected: str | None) -> None:
    wl = workload(checks=(AdmissionCheckState("check1", c.CHECK_READY, T0),),
                  conditions=(c.WORKLOAD_QUOTA_RESERVED, c.WORKLOAD_ADMITTED), active=active)
    pr = request("wl-check1-1", cond(c.PR_PROVISIONED), cond(c.PR_CAPACITY_REVOKED, message="revoked"))
    r = run(base(pr, wl=wl))
    if expected is None:
        assert r == Result()
    else:
        assert (state_of(r).state, state_of(r).message) == (expected, "revoked")


def test_booking_expired_before_admission_is_retried() -> None:
    pr = request("wl-check1-1", cond(c.PR_PROVISIONED), cond(c.PR_BOOKING_EXPIRED, message="expired"))
    st = state_of(run(base(pr)))
    assert (st.state, st.message, st.requeue_after_seconds) == (
        c.CHECK_RETRY, "Retrying after booking expired: expired", 60)


def test_booking_expired_after_admission_is_ignored() -> None:
    wl = workload(checks=(AdmissionCheckState("check1", c.CHECK_READY, T0),),
                  conditions=(c.WORKLOAD_QUOTA_RESERVED, c.WORKLOAD_ADMITTED))
    pr = request("wl-check1-1", cond(c.PR_PROVISIONED), cond(c.PR_BOOKING_EXPIRED))
    assert run(base(pr, wl=wl)) == Result()


def test_failed_wins_over_provisioned() -> None:
    pr = request("wl-check1-1", cond(c.PR_PROVISIONED), cond(c.PR_FAILED, message="nope"))
    assert state_of(run(base(pr))).state == c.CHECK_RETRY


def test_failed_on_an_admitted_workload_is_not_ignored() -> None:
    wl = workload(checks=(AdmissionCheckState("check1", c.CHECK_READY, T0),),
                  conditions=(c.WORKLOAD_QUOTA_RESERVED, c.WORKLOAD_ADMITTED))
    assert state_of(run(base(request("wl-check1-1", cond(c.PR_FAILED)), wl=wl))).state == c.CHECK_RETRY


def test_backoff_sequence_then_rejected() -> None:
    """Attempt n fails while the check has retryCount n-1 (it was reset n-1 times)."""
    seen = []
    for attempt in (1, 2, 3, 4):
        retry_count = attempt - 1 or None
        wl = workload(checks=(AdmissionCheckState("check1", c.CHECK_PENDING, T0, retry_count=retry_count),))
        pr = request(f"wl-check1-{attempt}", cond(c.PR_FAILED, message="no capacity"))
        r = run(base(pr, wl=wl), now=T0 + 1, jitter=0.999)
        st = state_of(r)
        seen.append((st.state, st.requeue_after_seconds, st.message))
        assert st.retry_count == retry_count  # never written by this controller
        assert created(r, c.PROVISIONING_REQUEST) == []
    assert seen == [(c.CHECK_RETRY, 60, "Retrying after failure: no capacity"),
                    (c.CHECK_RETRY, 120, "Retrying after failure: no capacity"),
                    (c.CHECK_RETRY, 240, "Retrying after failure: no capacity"),
                    (c.CHECK_REJECTED, None, "no capacity")]


def test_backoff_uses_the_config_and_the_limit() -> None:
    prc = config(retry_strategy=RetryStrategy(backoff_limit_count=0))
    assert state_of(run(base(request("wl-check1-1", cond(c.PR_FAILED)), prc=prc))).state == c.CHECK_REJECTED
    prc = config(retry_strategy=RetryStrategy(5, 100, 150))
    wl = workload(checks=(AdmissionCheckState("check1", c.CHECK_PENDING, T0, retry_count=2),))
    st = state_of(run(base(request("wl-check1-3", cond(c.PR_FAILED)), wl=wl, prc=prc)))
    assert st.requeue_after_seconds == 150


def test_retry_already_recorded_is_not_rewritten() -> None:
    wl = workload(checks=(AdmissionCheckState("check1", c.CHECK_RETRY, T0, "Retrying after failure: x",
                                              requeue_after_seconds=60),))
    assert run(base(request("wl-check1-1", cond(c.PR_FAILED, message="x")), wl=wl), now=T0 + 9) == Result()


def test_old_failed_request_after_eviction_reset_creates_the_next_attempt() -> None:
    wl = workload(checks=(AdmissionCheckState("check1", c.CHECK_PENDING, T0, "Reset to Pending after eviction. "
                                              "Previously: Retry", retry_count=1),))
    r = run(base(request("wl-check1-1", cond(c.PR_FAILED, message="x")), wl=wl))
    st = state_of(r)
    assert (st.state, st.message) == (c.CHECK_PENDING, "Retrying after failure: x")
    assert deleted(r) == []  # the failed request stays the active one in this reconcile
    assert [p.metadata.name for p in created(r, c.PROVISIONING_REQUEST)] == ["wl-check1-2"]
    assert events(r) == [created_event("wl-check1-2")]


def test_without_a_request_the_name_follows_the_retry_count() -> None:
    wl = workload(checks=(AdmissionCheckState("check1", c.CHECK_PENDING, T0, retry_count=2),))
    r = run(base(wl=wl))
    assert [p.metadata.name for p in created(r, c.PROVISIONING_REQUEST)] == ["wl-check1-3"]
    assert [t.metadata.name for t in created(r, c.POD_TEMPLATE)] == ["ppt-wl-check1-3-ps1", "ppt-wl-check1-3-ps2"]


def test_status_patch_failure_is_returned_without_events() -> None:
    r = run(base(request("wl-check1-1", cond(c.PR_FAILED))), faults=(Fault("update", c.WORKLOAD, "conflict"),))
    assert r.error == "conflict"
    assert events(r) == [] and r.effects == ()


def test_a_check_without_its_request_holds_back_every_status_change() -> None:
    """Upstream's early return: check0 (visited first) needs a request and has none, so
    check1's Provisioned request is not reflected in this reconcile."""
    wl = workload(checks=(AdmissionCheckState("check0", c.CHECK_PENDING, T0),
                          AdmissionCheckState("check1", c.CHECK_PENDING, T0)))
    r = run(base(check("check0"), request("wl-check1-1", cond(c.PR_PROVISIONED)), wl=wl))
    assert updated(r, c.WORKLOAD) == []
    assert [p.metadata.name for p in created(r, c.PROVISIONING_REQUEST)] == ["wl-check0-1"]


# --- create errors -----------------------------------------------------------------------------


def test_request_create_error_is_recorded_on_the_check() -> None:
    r = run(base(), faults=(Fault("create", c.PROVISIONING_REQUEST, "invalid ProvisioningRequest error"),))
    msg = 'Error creating ProvisioningRequest "wl-check1-1": invalid ProvisioningRequest error'
    assert r.error == "invalid ProvisioningRequest error"
    assert events(r) == [("Warning", c.EVENT_FAILED_CREATE, msg)]
    assert state_of(r).message == msg
    assert len(created(r, c.POD_TEMPLATE)) == 2  # the templates stay, owned by the workload


def test_template_create_error_is_recorded_on_the_check() -> None:
    r = run(base(), faults=(Fault("create", c.POD_TEMPLATE, "invalid PodTemplate error"),))
    msg = 'Error creating PodTemplate "ppt-wl-check1-1-ps1": invalid PodTemplate error'
    assert (r.error, events(r), state_of(r).message) == (
        "invalid PodTemplate error", [("Warning", c.EVENT_FAILED_CREATE, msg)], msg)
    assert created(r, c.PROVISIONING_REQUEST) == []


def test_already_exists_missing_from_the_cache_is_not_recorded() -> None:
    r = run(base(), faults=(Fault("create", c.PROVISIONING_REQUEST, "AlreadyExists", cached=False),))
    assert r.error == 'provisioningrequests.autoscaling.x-k8s.io "wl-check1-1" already exists'
    assert events(r) == [] and updated(r, c.WORKLOAD) == []


def test_already_exists_visible_in_the_cache_is_recorded() -> None:
    """A request without owner references is invisible to the owner index but not to a Get."""
    orphan = evolve(request(), metadata=ObjectMeta(name="wl-check1-1", namespace=NS))
    r = run(base(orphan))
    err = 'provisioningrequests.autoscaling.x-k8s.io "wl-check1-1" already exists'
    assert r.error == err
    assert events(r) == [("Warning", c.EVENT_FAILED_CREATE, f'Error creating ProvisioningRequest "wl-check1-1": {err}')]


def test_create_error_then_patch_error_are_joined() -> None:
    r = run(base(), faults=(Fault("create", c.PROVISIONING_REQUEST, "boom"), Fault("update", c.WORKLOAD, "conflict")))
    assert r.error == "boom\nconflict"


def test_long_create_errors_are_truncated() -> None:
    r = run(base(), faults=(Fault("create", c.PROVISIONING_REQUEST, "x" * 40_000),))
    (_, _, event_msg), = events(r)
    assert len(event_msg.encode()) == 1024 and event_msg.endswith(" ...")
    assert len(state_of(r).message.encode()) == 32768


# --- merge policies ---------------------------------------------------------------------------


def merged_pod_sets(policy: str | None, ps2: PodSet) -> list[tuple[str, int]]:
    wl = workload(pod_sets=(PS1, ps2), assignments=(PSA1, evolve(PSA2, name=ps2.name)))
    pr, = created(run(base(wl=wl, prc=config(pod_set_merge_policy=policy))), c.PROVISIONING_REQUEST)
    return [(p.pod_template_ref.name, p.count) for p in pr.spec.pod_sets]


MERGED = [("ppt-wl-check1-1-ps1", 7)]
SPLIT = [("ppt-wl-check1-1-ps1", 4), ("ppt-wl-check1-1-ps2", 3)]


@pytest.mark.parametrize(("policy", "template", "expected"), [
    (None, pod_template({"cpu": "1"}), SPLIT),
    ("Unknown", pod_template({"cpu": "1"}), SPLIT),
    (c.MERGE_IDENTICAL_POD_TEMPLATES, pod_template({"cpu": "1"}), MERGED),
    (c.MERGE_IDENTICAL_POD_TEMPLATES, pod_template({"cpu": "1000m"}), MERGED),
    (c.MERGE_IDENTICAL_POD_TEMPLATES, pod_template({"cpu": "1"}, nodeSelector={}), MERGED),
    (c.MERGE_IDENTICAL_POD_TEMPLATES, pod_template({"cpu": "2"}), SPLIT),
    (c.MERGE_IDENTICAL_POD_TEMPLATES, freeze({"metadata": {"labels": {"a": "b"}}, **pod_template({"cpu": "1"})}), SPLIT),
    (c.MERGE_IDENTICAL_POD_TEMPLATES, pod_template({"cpu": "1"}, priorityClassName="high"), SPLIT),
    (c.MERGE_IDENTICAL_SCHEDULING_REQUIREMENTS,
     freeze({"metadata": {"labels": {"a": "b"}}, **pod_template({"cpu": "1000m"}, priorityClassName="high")}), MERGED),
    (c.MERGE_IDENTICAL_SCHEDULING_REQUIREMENTS,
     freeze({"spec": {"containers": [{"name": "other", "image": "x", "resources": {"requests": {"cpu": "1"},
                                                                                    "limits": {"cpu": "9"}}}]}}), MERGED),
    (c.MERGE_IDENTICAL_SCHEDULING_REQUIREMENTS, pod_template({"cpu": "1"}, tolerations=[]), MERGED),
    (c.MERGE_IDENTICAL_SCHEDULING_REQUIREMENTS, pod_template({"cpu": "2"}), SPLIT),
    (c.MERGE_IDENTICAL_SCHEDULING_REQUIREMENTS, pod_template({"cpu": "1"}, nodeSelector={"a": "b"}), SPLIT),
    (c.MERGE_IDENTICAL_SCHEDULING_REQUIREMENTS, pod_template({"cpu": "1"}, tolerations=[TOLERATION]), SPLIT),
    (c.MERGE_IDENTICAL_SCHEDULING_REQUIREMENTS,
     freeze({"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}, {"name": "d"}]}}), SPLIT),
    (c.MERGE_IDENTICAL_SCHEDULING_REQUIREMENTS,
     pod_template({"cpu": "1"}, initContainers=[{"name": "i", "resources": {"requests": {"cpu": "1"}}}]), SPLIT),
])
def test_merge_policies(policy: str | None, template: FrozenMap[str, Any], expected: list[tuple[str, int]]) -> None:
    assert merged_pod_sets(policy, PodSet("ps2", 4, template)) == expected


def test_merge_compares_with_the_first_member_and_gives_only_it_an_update() -> None:
    ps3 = PodSet("ps3", 2, pod_template({"cpu": "1"}))
    wl = workload(pod_sets=(PS1, PS2, ps3), assignments=(PSA1, PSA2, PodSetAssignment("ps3", count=1)))
    prc = config(pod_set_merge_policy=c.MERGE_IDENTICAL_POD_TEMPLATES)
    r = run(base(wl=wl, prc=prc))
    pr, = created(r, c.PROVISIONING_REQUEST)
    assert [(p.pod_template_ref.name, p.count) for p in pr.spec.pod_sets] == [
        ("ppt-wl-check1-1-ps1", 5), ("ppt-wl-check1-1-ps2", 3)]
    done = evolve(pr, status=ProvisioningRequestStatus((cond(c.PR_PROVISIONED),)))
    st = state_of(run(base(done, wl=wl, prc=prc)))
    assert [u.name for u in st.pod_set_updates] == ["ps1", "ps2"]


# --- KeepQuotaForProvReqRetry ------------------------------------------------------------------------

KEEP = {c.GATE_KEEP_QUOTA_FOR_PROVREQ_RETRY: True}


def test_keep_quota_stays_pending_and_waits_for_the_backoff() -> None:
    pr = request("wl-check1-1", cond(c.PR_FAILED, message="no capacity", at=T0))
    r = run(base(pr), now=T0 + 20, gates=KEEP)
    st = state_of(r)
    assert (st.state, st.message, st.requeue_after_seconds) == (
        c.CHECK_PENDING, "Retrying after failure: no capacity", None)
    assert events(r) == []
    assert created(r, c.PROVISIONING_REQUEST) == [] and deleted(r) == []
    assert r.requeue_after == 40


def test_keep_quota_creates_the_next_attempt_after_the_backoff() -> None:
    wl = workload(checks=(AdmissionCheckState("check1", c.CHECK_PENDING, T0, "Retrying after failure: x"),))
    pr = request("wl-check1-1", cond(c.PR_FAILED, message="x", at=T0))
    r = run(base(pr, wl=wl), now=T0 + 60, gates=KEEP)
    assert updated(r, c.WORKLOAD) == []
    assert [p.metadata.name for p in created(r, c.PROVISIONING_REQUEST)] == ["wl-check1-2"]
    assert r.requeue_after is None


def test_keep_quota_backoff_grows_with_the_attempt() -> None:
    wl = workload(checks=(AdmissionCheckState("check1", c.CHECK_PENDING, T0),))
    pr = request("wl-check1-3", cond(c.PR_FAILED, at=T0 + 100))
    r = run(base(pr, wl=wl), now=T0 + 150, gates=KEEP)
    assert r.requeue_after == 240 - 50
    r = run(base(pr, wl=wl), now=T0 + 340, gates=KEEP)
    assert [p.metadata.name for p in created(r, c.PROVISIONING_REQUEST)] == ["wl-check1-4"]


def test_keep_quota_booking_expired_before_admission() -> None:
    pr = request("wl-check1-1", cond(c.PR_PROVISIONED), cond(c.PR_BOOKING_EXPIRED, message="gone", at=T0 + 10))
    r = run(base(pr), now=T0 + 30, gates=KEEP)
    assert (state_of(r).state, state_of(r).message) == (c.CHECK_PENDING, "Retrying after booking expired: gone")
    assert r.requeue_after == 40


def test_keep_quota_ready_check_goes_back_to_pending_on_failure() -> None:
    wl = workload(checks=(AdmissionCheckState("check1", c.CHECK_READY, T0),))
    r = run(base(request("wl-check1-1", cond(c.PR_FAILED, at=T0)), wl=wl), now=T0 + 5, gates=KEEP)
    assert state_of(r).state == c.CHECK_PENDING
    assert r.requeue_after == 55


def test_keep_quota_beyond_the_limit_is_rejected() -> None:
    pr = request("wl-check1-4", cond(c.PR_FAILED, message="no capacity"))
    r = run(base(pr), now=T0 + 10_000, gates=KEEP)
    assert (state_of(r).state, state_of(r).message) == (c.CHECK_REJECTED, "no capacity")
    assert created(r, c.PROVISIONING_REQUEST) == [] and r.requeue_after is None


def test_keep_quota_edge_is_declared_in_the_machine() -> None:
    guards = {"within_backoff_limit": True, "keep_quota": True, "newer_attempt": True}
    for state in ADMISSION_CHECK_MACHINE.states:
        assert ADMISSION_CHECK_MACHINE.fire(state, "request_failed", guards) == c.CHECK_PENDING


def test_keep_quota_waits_until_the_last_second() -> None:
    pr = request("wl-check1-1", cond(c.PR_FAILED, at=T0))
    assert run(base(pr), now=T0 + 59, gates=KEEP).requeue_after == 1


def test_same_attempt_keeps_the_first_request_seen() -> None:
    first = request("wl-check1-01", cond(c.PR_PROVISIONED, message="first"))
    second = request("wl-check1-1")
    r = run(base(first, second))
    assert deleted(r) == ["wl-check1-1"]
    assert state_of(r).message == "first"


def test_between_flavors_of_one_podset_the_first_by_name_wins() -> None:
    rf = [ResourceFlavor(ObjectMeta(name=n, uid=n), ResourceFlavorSpec(FrozenMap({"zone": n})))
          for n in ("flv-b", "flv-a")]
    psa = PodSetAssignment("ps1", FrozenMap({"cpu": "flv-b", "memory": "flv-a"}), count=4)
    wl = workload(pod_sets=(PS1,), assignments=(psa,))
    pt, = created(run([wl, check(), config(), *rf]), c.POD_TEMPLATE)
    assert pt.template["spec"]["nodeSelector"] == {"zone": "flv-a"}


# --- every decision from every check state ---------------------------------------------------------

STATES = (c.CHECK_PENDING, c.CHECK_READY, c.CHECK_RETRY, c.CHECK_REJECTED)


def with_check(state: str) -> Workload:
    return workload(checks=(AdmissionCheckState("check1", state, Time(T0), retry_count=1),))


#: trigger -> (extra objects, config override, expected state, expected message)
DECISIONS = {
    "capacity_revoked": ([request("wl-check1-1", cond(c.PR_CAPACITY_REVOKED, message="gone"))],
                         None, c.CHECK_REJECTED, "gone"),
    "no_decision": ([request("wl-check1-1")], None, c.CHECK_PENDING, ""),
    "waiting_for_capacity": ([request("wl-check1-1", cond(c.PR_ACCEPTED),
                                      cond(c.PR_PROVISIONED, c.FALSE, "ETA: 2024-01-01T10:00:00Z"))],
                             None, c.CHECK_PENDING, "ETA: 2024-01-01T10:00:00Z"),
    "provisioned": ([request("wl-check1-1", cond(c.PR_PROVISIONED, message="ready"))],
                    None, c.CHECK_READY, "ready"),
    "request_not_needed": ([], config(managed_resources=("nvidia.com/gpu",)), c.CHECK_READY,
                           c.MSG_NO_REQUEST_NEEDED),
}


@pytest.mark.parametrize("state", STATES)
@pytest.mark.parametrize("trigger", sorted(DECISIONS))
def test_every_request_decision_from_every_check_state(state: str, trigger: str) -> None:
    extra, prc, want_state, want_message = DECISIONS[trigger]
    result = run(base(*extra, wl=with_check(state), prc=prc))
    unchanged = (state, want_state) == (c.CHECK_READY, c.CHECK_READY) or \
        (state, "") == (want_state, want_message)
    if unchanged:
        # a Ready check stays as it is (neither message nor podSetUpdates refreshed), and a
        # decision that changes nothing writes nothing
        assert not [o for o in updated(result, c.WORKLOAD)]
        return
    got = state_of(result)
    assert (got.state, got.message) == (want_state, want_message)
    assert got.retry_count == 1, "retryCount is never written by the provisioning controller"


@pytest.mark.parametrize("state", STATES)
def test_missing_config_makes_every_state_pending_and_inactive(state: str) -> None:
    objects = [o for o in base(wl=with_check(state)) if o.KIND != c.PROVISIONING_REQUEST_CONFIG]
    got = state_of(run(objects))
    assert (got.state, got.message) == (c.CHECK_PENDING, c.MSG_CHECK_INACTIVE)
