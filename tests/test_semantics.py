"""Semantics switches: named departures from the default (upstream main plus #14309) that combine,
read from a scenario's ``config``, the explorer's ``--semantics`` and the CLI's; and what
#14309 (the default) changes against ``pre-14309``."""

from __future__ import annotations

import pytest
from kueue_provreq.api import constants as c
from kueue_provreq.api.config import (
    SEMANTICS,
    SEMANTICS_KEP_993_PREEMPTION,
    SEMANTICS_PRE_14309,
    SEMANTICS_PRE_KEP_3258,
    Configuration,
    parse_semantics,
)
from kueue_provreq.api.meta import ObjectMeta, Time
from kueue_provreq.api.queues import (
    EVERY_NAMESPACE,
    AdmissionCheck,
    AdmissionCheckSpec,
    AdmissionChecksStrategy,
    AdmissionCheckStrategyRule,
    ClusterQueue,
    ClusterQueueSpec,
    FlavorQuotas,
    LocalQueue,
    LocalQueueSpec,
    ResourceGroup,
)
from kueue_provreq.api.workload import Workload
from kueue_provreq.controllers import workload as controller
from kueue_provreq.controllers.context import Context
from kueue_provreq.explore.search import Options, build_config
from kueue_provreq.manifests import ManifestError
from kueue_provreq.manifests.configuration import load_configuration
from kueue_provreq.world import Event, Update, World

from builders import ADMITTED, T0, admission, check_state, cli, cond, reserved_in, workload

PRE_14309 = Configuration(semantics=frozenset({SEMANTICS_PRE_14309}))


# --- the switches --------------------------------------------------------------------------


def test_switches_combine_and_current_means_none() -> None:
    assert parse_semantics("pre-kep-3258, pre-14309") == {SEMANTICS_PRE_KEP_3258, SEMANTICS_PRE_14309}
    assert parse_semantics(["kep-993-preemption"]) == {SEMANTICS_KEP_993_PREEMPTION}
    assert parse_semantics("current") == parse_semantics("") == frozenset()
    config = Configuration(semantics=parse_semantics("pre-kep-3258,kep-993-preemption"))
    assert (config.pre_kep_3258, config.pre_14309, config.kep_993_preemption) == (True, False, True)
    assert not Configuration().pre_14309 and not Configuration().kep_993_preemption


def test_unknown_switch_is_named() -> None:
    with pytest.raises(ValueError, match="unknown semantics pre-kep-9999 .*known: pre-kep-3258"):
        parse_semantics("pre-14309,pre-kep-9999")


@pytest.mark.parametrize("value", ["pre-14309", ["pre-14309"], ["pre-14309", "current"]])
def test_scenario_config_takes_one_name_or_a_list(value: object) -> None:
    assert load_configuration({"admissionCheckSemantics": value}).semantics == {SEMANTICS_PRE_14309}


@pytest.mark.parametrize("value, message", [
    (["pre-14309", "nope"], "admissionCheckSemantics: unknown semantics nope"),
    (3, "admissionCheckSemantics: expected a switch name or a list of them, got 3"),
])
def test_scenario_config_refuses_bad_switches(value: object, message: str) -> None:
    with pytest.raises(ManifestError, match=message):
        load_configuration({"admissionCheckSemantics": value})


def test_a_kueue_configuration_file_has_no_semantics_field() -> None:
    with pytest.raises(ManifestError, match="admissionCheckSemantics"):
        load_configuration({"apiVersion": c.CONFIG_V1BETA2, "kind": "Configuration",
                            "admissionCheckSemantics": "pre-14309"}, scenario=False)


def test_explorer_takes_several_switches() -> None:
    opts = Options(semantics="pre-kep-3258,pre-14309")
    assert build_config(opts).semantics == {SEMANTICS_PRE_KEP_3258, SEMANTICS_PRE_14309}
    assert Options(semantics=frozenset({SEMANTICS_PRE_14309})).semantics == {SEMANTICS_PRE_14309}


def test_explorer_cli_refuses_an_unknown_switch() -> None:
    out = cli("explore", "--semantics", "pre-14309,bogus", "--depth", "0")
    assert out.returncode == 2 and "unknown semantics bogus" in out.stderr


def test_explorer_cli_help_lists_every_switch() -> None:
    out = cli("explore", "--help")
    assert all(name in " ".join(out.stdout.split()) for name in SEMANTICS)


# --- #14309 ---------------------------------------------------------------------------------

CQ = ClusterQueue(ObjectMeta(name="cq", uid="cq"), ClusterQueueSpec(namespace_selector=EVERY_NAMESPACE,
    resource_groups=(ResourceGroup(("cpu",), (FlavorQuotas("default"),)),),
    admission_checks_strategy=AdmissionChecksStrategy((AdmissionCheckStrategyRule("check1"),))))
LQ = LocalQueue(ObjectMeta(name="lq", namespace="ns", uid="lq"), LocalQueueSpec("cq"))
AC = AdmissionCheck(ObjectMeta(name="check1", uid="ac"), AdmissionCheckSpec("example.com/other"))
RETRY_EVICTED = cond(c.WORKLOAD_EVICTED, c.TRUE, c.REASON_ADMISSION_CHECK,
                     'Evicted due to AdmissionCheck in Retry state: "check1"')


def _reconcile(wl: Workload, config: Configuration = Configuration()) -> tuple[Workload | None, list[str]]:
    result = controller.reconcile(World([CQ, LQ, AC, wl]), ("Workload", "ns", "wl"),
                                  Context(now=Time(T0 + 10), config=config))
    written = [e.obj for e in result.effects if isinstance(e, Update) and isinstance(e.obj, Workload)]
    return (written[0] if written else None), [e.reason for e in result.effects if isinstance(e, Event)]


def _evicted(state: str, *extra: object, active: bool | None = None) -> Workload:
    return workload(conditions=(reserved_in(), ADMITTED, RETRY_EVICTED, *extra),  # type: ignore[arg-type]
                    checks=(check_state("check1", state, "budget"),), admission=admission(), active=active)


def test_rejected_check_on_an_evicted_workload_sets_the_deactivation_target() -> None:
    new, events = _reconcile(_evicted(c.CHECK_REJECTED))
    assert new is not None
    target = new.condition(c.WORKLOAD_DEACTIVATION_TARGET)
    assert target is not None and (target.status, target.reason) == (c.TRUE, c.REASON_ADMISSION_CHECK)
    assert target.message == 'AdmissionCheck in Rejected state: "check1" (budget)'
    assert events == [c.EVENT_ADMISSION_CHECK_REJECTED]


def test_pre_14309_ignores_a_rejected_check_on_an_evicted_workload() -> None:
    assert _reconcile(_evicted(c.CHECK_REJECTED), PRE_14309) == (None, [])


@pytest.mark.parametrize("config", [Configuration(), PRE_14309])
def test_retry_on_an_evicted_workload_is_skipped_either_way(config: Configuration) -> None:
    assert _reconcile(_evicted(c.CHECK_RETRY), config) == (None, [])


def test_deactivating_an_evicted_workload_resets_its_checks_and_drops_the_target() -> None:
    target = cond(c.WORKLOAD_DEACTIVATION_TARGET, c.TRUE, c.REASON_ADMISSION_CHECK, "m")
    new, events = _reconcile(_evicted(c.CHECK_REJECTED, target, active=False))
    assert new is not None and events == []
    assert new.condition(c.WORKLOAD_DEACTIVATION_TARGET) is None
    assert new.condition(c.WORKLOAD_EVICTED) == RETRY_EVICTED  # the reason of the eviction under way stays
    [state] = new.status.admission_checks
    assert (state.state, state.message, state.retry_count) == (
        c.CHECK_PENDING, "Reset to Pending after eviction. Previously: Rejected", None)


def test_pre_14309_leaves_the_target_and_the_checks_of_an_evicted_workload() -> None:
    target = cond(c.WORKLOAD_DEACTIVATION_TARGET, c.TRUE, c.REASON_ADMISSION_CHECK, "m")
    assert _reconcile(_evicted(c.CHECK_REJECTED, target, active=False), PRE_14309) == (None, [])
