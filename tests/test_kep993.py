"""KEP-993's preemption policy (opt-in ``kep-993-preemption``): the schema extension it needs and
only it allows, when a check's policy lets preemptions go, what a queue's reservations count on,
and when a reservation may become an admission."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from kueue_provreq.api import constants as c
from kueue_provreq.api.config import SEMANTICS_KEP_993_PREEMPTION, Configuration
from kueue_provreq.api.evolve import evolve
from kueue_provreq.api.meta import ObjectMeta, Time
from kueue_provreq.api.queues import (
    EVERY_NAMESPACE,
    AdmissionCheck,
    AdmissionCheckSpec,
    AdmissionChecksStrategy,
    AdmissionCheckStrategyRule,
    ClusterQueue,
    ClusterQueuePreemption,
    ClusterQueueSpec,
    FlavorQuotas,
    ResourceGroup,
)
from kueue_provreq.api.workload import AdmissionCheckState, Workload
from kueue_provreq.controllers import kep993, provisioning
from kueue_provreq.controllers import workload_status as ws
from kueue_provreq.controllers.context import Context
from kueue_provreq.manifests import check_object
from kueue_provreq.world import Txn, Update, World

import test_provisioning as tp
from builders import ADMITTED, T0, admission, check_state, cond, reserved_in, workload

KEP = frozenset({SEMANTICS_KEP_993_PREEMPTION})


# --- the schema extension ------------------------------------------------------------------------


def admission_check(policy: str | None, version: str = c.KUEUE_V1BETA2) -> dict[str, Any]:
    spec: dict[str, Any] = {"controllerName": "example.com/budget"}
    if policy is not None:
        spec["preemptionPolicy"] = policy
    return {"apiVersion": version, "kind": "AdmissionCheck", "metadata": {"name": "ac"}, "spec": spec}


def workload_with_check(state: str) -> dict[str, Any]:
    return {"apiVersion": c.KUEUE_V1BETA2, "kind": "Workload", "metadata": {"name": "wl", "namespace": "ns"},
            "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 1, "template": {"spec": {
                "restartPolicy": "Never", "containers": [{"name": "c"}]}}}]},
            "status": {"admissionChecks": [{"name": "ac", "state": state, "message": "",
                                            "lastTransitionTime": "2024-01-01T00:00:00Z"}]}}


@pytest.mark.parametrize("version", [c.KUEUE_V1BETA2, c.KUEUE_V1BETA1])
def test_preemption_policy_is_an_unknown_field_without_the_switch(version: str) -> None:
    checked = check_object(admission_check(c.PREEMPTION_POLICY_AFTER_CHECK_PASSED_OR_ON_DEMAND, version))
    assert [(e.path, e.reason.partition(" (")[0]) for e in checked.errors] == [("spec.preemptionPolicy", "unknown field")]


@pytest.mark.parametrize("version", [c.KUEUE_V1BETA2, c.KUEUE_V1BETA1])
def test_preemption_policy_is_read_with_the_switch(version: str) -> None:
    checked = check_object(admission_check(c.PREEMPTION_POLICY_AFTER_CHECK_PASSED_OR_ON_DEMAND, version),
                           semantics=KEP)
    assert checked.errors == () and isinstance(checked.obj, AdmissionCheck)
    assert checked.obj.spec.waits_for_check


def test_an_absent_policy_is_anytime_and_an_unknown_one_is_refused() -> None:
    absent = check_object(admission_check(None), semantics=KEP).obj
    assert isinstance(absent, AdmissionCheck) and absent.spec.preemption_policy is None
    assert not absent.spec.waits_for_check
    bad = check_object(admission_check("Sometimes"), semantics=KEP)
    assert [e.path for e in bad.errors] == ["spec.preemptionPolicy"]
    assert "supported values: 'Anytime', 'AfterCheckPassedOrOnDemand'" in str(bad.errors[0])


def test_preemption_required_is_a_check_state_only_with_the_switch() -> None:
    without = check_object(workload_with_check(c.CHECK_PREEMPTION_REQUIRED))
    assert [e.path for e in without.errors] == ["status.admissionChecks[0].state"]
    assert check_object(workload_with_check(c.CHECK_PREEMPTION_REQUIRED), semantics=KEP).errors == ()


def test_a_scenario_reads_its_manifests_with_its_own_switches(tmp_path: Any) -> None:
    from builders import cli
    base = ("name: s\n{config}objects:\n- apiVersion: kueue.x-k8s.io/v1beta2\n  kind: AdmissionCheck\n"
            "  metadata: {{name: ac}}\n  spec: {{controllerName: x.io/y, preemptionPolicy: Anytime}}\n"
            "steps:\n- settle: {{}}\n")
    plain, kep = tmp_path / "plain.yaml", tmp_path / "kep.yaml"
    plain.write_text(base.format(config=""))
    kep.write_text(base.format(config="config: {admissionCheckSemantics: [kep-993-preemption]}\n"))
    out = cli("conform", str(plain), str(kep))
    assert "AdmissionCheck ac: objects[0].spec.preemptionPolicy: unknown field" in out.stdout.splitlines()[0]
    assert out.stdout.startswith(f"FAIL s: {plain}:6: AdmissionCheck ac: objects[0].")
    assert "PASS s" in out.stdout


def test_validate_takes_the_switch_on_the_command_line(tmp_path: Any) -> None:
    import yaml

    from builders import cli
    path = tmp_path / "ac.yaml"
    path.write_text(yaml.safe_dump(admission_check(c.PREEMPTION_POLICY_ANYTIME)))
    assert cli("validate", "-f", str(path)).returncode == 2
    out = cli("validate", "-f", str(path), "--semantics", "kep-993-preemption")
    assert out.returncode == 0 and "valid AdmissionCheck ac" in out.stdout


@pytest.mark.parametrize("command", ["explain", "audit", "forecast"])
def test_explain_audit_and_forecast_take_the_switch_too(tmp_path: Any, command: str) -> None:
    import yaml

    from builders import cli
    path = tmp_path / "ac.yaml"
    path.write_text(yaml.safe_dump(admission_check(c.PREEMPTION_POLICY_ANYTIME)))
    assert cli(command, "-f", str(path)).returncode == 2
    assert cli(command, "-f", str(path), "--semantics", "kep-993-preemption").returncode == 0


# --- the policy -------------------------------------------------------------------------------------

CQ = ClusterQueue(ObjectMeta(name="cq", uid="cq"), ClusterQueueSpec(namespace_selector=EVERY_NAMESPACE,
    resource_groups=(ResourceGroup(("cpu",), (FlavorQuotas("default"),)),),
    admission_checks_strategy=AdmissionChecksStrategy((AdmissionCheckStrategyRule("waits"),
                                                       AdmissionCheckStrategyRule("anytime"))),
    preemption=ClusterQueuePreemption(c.PREEMPTION_POLICY_LOWER_PRIORITY)))
WAITS = AdmissionCheck(ObjectMeta(name="waits", uid="w"), AdmissionCheckSpec(
    "x.io/y", preemption_policy=c.PREEMPTION_POLICY_AFTER_CHECK_PASSED_OR_ON_DEMAND))
ANYTIME = AdmissionCheck(ObjectMeta(name="anytime", uid="a"), AdmissionCheckSpec("x.io/y"))


def reserved_with(waits: str, anytime: str = c.CHECK_PENDING) -> Workload:
    return workload(conditions=(reserved_in(),), admission=admission(),
                    checks=(check_state("anytime", anytime), check_state("waits", waits)))


@pytest.mark.parametrize("waits, anytime, allowed", [
    (c.CHECK_PENDING, c.CHECK_PENDING, False),
    (c.CHECK_READY, c.CHECK_PENDING, True),
    (c.CHECK_PENDING, c.CHECK_PREEMPTION_REQUIRED, True),
    (c.CHECK_PREEMPTION_REQUIRED, c.CHECK_PENDING, True),
    (c.CHECK_RETRY, c.CHECK_READY, False),
])
def test_after_check_passed_or_on_demand(waits: str, anytime: str, allowed: bool) -> None:
    assert kep993.policy_allows(World([CQ, WAITS, ANYTIME]), reserved_with(waits, anytime), CQ) is allowed


def test_anytime_checks_never_hold_preemptions_back() -> None:
    assert kep993.policy_allows(World([CQ, ANYTIME]), reserved_with(c.CHECK_PENDING), CQ)  # "waits" missing
    assert kep993.policy_allows(World([CQ, evolve(WAITS, spec=AdmissionCheckSpec("x.io/y")), ANYTIME]),
                                reserved_with(c.CHECK_PENDING), CQ)


def test_a_required_check_not_listed_yet_counts_as_pending() -> None:
    wl = workload(conditions=(reserved_in(),), admission=admission())
    assert not kep993.policy_allows(World([CQ, WAITS, ANYTIME]), wl, CQ)


# --- the plan -----------------------------------------------------------------------------------

CPU = ("default", "cpu")
NOMINAL = {CPU: Decimal(4)}


def holding(name: str, cpu: int, priority: int, reserved: float, admitted: bool = True,
            evicted: bool = False) -> tuple[Workload, dict[tuple[str, str], Decimal]]:
    conditions = [reserved_in(at=T0 + reserved)]
    if admitted:
        conditions.append(ADMITTED)
    if evicted:
        conditions.append(cond(c.WORKLOAD_EVICTED, c.TRUE, c.REASON_PREEMPTED, "m"))
    return (workload(name, priority=priority, conditions=conditions, admission=admission()),
            {CPU: Decimal(cpu)})


def plan(*pairs: tuple[Workload, dict[tuple[str, str], Decimal]]) -> kep993.Plan:
    return kep993.plan(CQ, list(pairs), NOMINAL, Configuration(), Time(T0 + 100))


def test_reservations_that_fit_claim_nothing() -> None:
    found = plan(holding("a", 2, 1, 0), holding("b", 2, 1, 1))
    assert (dict(found.claims), found.invalid, found.used[CPU]) == ({}, (), 4)


def test_a_later_reservation_that_does_not_fit_claims_lower_priority_ones() -> None:
    low = holding("low", 3, 1, 0)
    high = holding("high", 3, 9, 10, admitted=False)
    found = plan(low, high)
    assert {k: [w.metadata.name for w in v] for k, v in found.claims.items()} == {"high-uid": ["low"]}
    assert found.claimed == {"low-uid"} and found.used[CPU] == 3 and found.invalid == ()


def test_the_claim_holds_while_the_target_is_evicted_but_still_holds_quota() -> None:
    found = plan(holding("low", 3, 1, 0, evicted=True), holding("high", 3, 9, 10, admitted=False))
    assert found.claimed == {"low-uid"}
    assert plan(holding("high", 3, 9, 10, admitted=False)).claims == {}  # released: nothing left to claim


def test_a_reservation_without_anything_to_claim_is_invalid() -> None:
    found = plan(holding("boss", 3, 99, 0), holding("high", 3, 9, 10, admitted=False))
    assert [w.metadata.name for w in found.invalid] == ["high"] and found.claims == {}
    assert found.used[CPU] == 3


def test_preemptions_pending_counts_what_may_still_run() -> None:
    running = [holding("admitted", 2, 1, 0), holding("leaving", 1, 1, 0, admitted=False, evicted=True),
               holding("reserved", 3, 1, 0, admitted=False)]
    me = workload("me")
    assert not kep993.preemptions_pending(me, {CPU: Decimal(1)}, running, NOMINAL)
    assert kep993.preemptions_pending(me, {CPU: Decimal(2)}, running, NOMINAL)


# --- the provisioning check under KEP-993 ---------------------------------------------------------



KEP_CONFIG = Configuration(semantics=KEP)
NOT_FOUND = (tp.cond(c.PR_ACCEPTED), tp.cond(c.PR_PROVISIONED, c.FALSE, "Capacity is not found, CA will try later"))


def provision(state: str, *conditions: Any, config: Configuration = KEP_CONFIG, retry_count: int | None = None,
              prc: Any = None, attempt: int = 1) -> str:
    """The check's state after one provisioning reconcile, starting from ``state`` with the
    request of ``attempt`` in ``conditions``; the same state when nothing is written."""
    checks = (AdmissionCheckState("check1", state, Time(T0), retry_count=retry_count),)
    objs = tp.base(tp.request(f"wl-check1-{attempt}", *conditions), wl=tp.workload(checks=checks), prc=prc)
    result = provisioning.reconcile(World(objs), tp.KEY, Context(Time(T0 + 10), config))
    written = [e.obj for e in result.effects if isinstance(e, Update) and isinstance(e.obj, Workload)]
    st = written[-1].check_state("check1") if written else None
    return state if st is None else st.state


@pytest.mark.parametrize("state", [c.CHECK_PENDING, c.CHECK_READY, c.CHECK_RETRY, c.CHECK_REJECTED,
                                   c.CHECK_PREEMPTION_REQUIRED])
def test_capacity_not_found_asks_for_preemption_under_kep_993_only(state: str) -> None:
    assert provision(state, *NOT_FOUND) == c.CHECK_PREEMPTION_REQUIRED
    assert provision(state, *NOT_FOUND, config=Configuration()) == c.CHECK_PENDING


def test_the_message_is_cluster_autoscalers() -> None:
    checks = (AdmissionCheckState("check1", c.CHECK_PENDING, Time(T0)),)
    objs = tp.base(tp.request("wl-check1-1", *NOT_FOUND), wl=tp.workload(checks=checks))
    st = tp.state_of(provisioning.reconcile(World(objs), tp.KEY, Context(Time(T0), KEP_CONFIG)))
    assert (st.state, st.message) == (c.CHECK_PREEMPTION_REQUIRED, "Capacity is not found, CA will try later")


@pytest.mark.parametrize("conditions, retry_count, prc, want", [
    ((tp.cond(c.PR_PROVISIONED),), None, None, c.CHECK_READY),
    ((tp.cond(c.PR_FAILED),), None, None, c.CHECK_RETRY),
    ((tp.cond(c.PR_FAILED),), 1, None, c.CHECK_PREEMPTION_REQUIRED),  # not a newer attempt: unchanged
    ((tp.cond(c.PR_PROVISIONED), tp.cond(c.PR_CAPACITY_REVOKED)), None, None, c.CHECK_REJECTED),
    ((), None, None, c.CHECK_PENDING),
])
def test_a_check_that_asked_for_preemption_follows_its_request(conditions: tuple[Any, ...], retry_count: int | None,
                                                               prc: Any, want: str) -> None:
    assert provision(c.CHECK_PREEMPTION_REQUIRED, *conditions, retry_count=retry_count, prc=prc) == want


def test_a_check_that_asked_for_preemption_is_rejected_past_the_limit_or_kept_pending() -> None:
    from kueue_provreq.api.provisioning import RetryStrategy
    assert provision(c.CHECK_PREEMPTION_REQUIRED, tp.cond(c.PR_FAILED),
                     prc=tp.config(retry_strategy=RetryStrategy(0, 60, 1800))) == c.CHECK_REJECTED
    keep = evolve(KEP_CONFIG, feature_gates=KEP_CONFIG.feature_gates.set(c.GATE_KEEP_QUOTA_FOR_PROVREQ_RETRY, True))
    assert provision(c.CHECK_PREEMPTION_REQUIRED, tp.cond(c.PR_FAILED), config=keep) == c.CHECK_PENDING


def test_a_check_that_asked_for_preemption_becomes_inactive_or_needless() -> None:
    checks = (AdmissionCheckState("check1", c.CHECK_PREEMPTION_REQUIRED, Time(T0)),)
    missing = [tp.workload(checks=checks), tp.check(prc="gone"), *tp.flavors()]
    assert tp.state_of(provisioning.reconcile(World(missing), tp.KEY, Context(Time(T0), KEP_CONFIG))).state == \
        c.CHECK_PENDING
    needless = tp.base(wl=tp.workload(checks=checks), prc=tp.config(managed_resources=("example.com/none",)))
    assert tp.state_of(provisioning.reconcile(World(needless), tp.KEY, Context(Time(T0), KEP_CONFIG))).state == \
        c.CHECK_READY


def test_eviction_resets_a_check_that_asked_for_preemption() -> None:
    wl = workload(conditions=(reserved_in(),), admission=admission(),
                  checks=(check_state("check1", c.CHECK_PREEMPTION_REQUIRED),))
    txn = Txn(World([wl]), Time(T0))
    new, fired = ws.evict(txn, wl, c.REASON_PREEMPTED, "m")
    assert [s.state for s in new.status.admission_checks] == [c.CHECK_PENDING]
    assert ("PreemptionRequired", "reset_on_eviction", "Pending") in {(t.source, t.trigger, t.target) for t in fired}
