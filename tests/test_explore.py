"""Bounded exhaustive exploration: every invariant in every reachable state of small worlds, and the
KEP-3258 race found by the search itself under the pre-KEP-3258 semantics."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from kueue_provreq import invariants as inv
from kueue_provreq.cli import main
from kueue_provreq.conformance.runner import conform
from kueue_provreq.explore.scenario import to_scenario
from kueue_provreq.explore.search import (
    EPOCH,
    SETTLE,
    Action,
    Explorer,
    Options,
    OptionsError,
    Violation,
    _Node,
    explore,
    initial_world,
)

SPECS = Path(__file__).resolve().parents[1] / "specs" / "kep-3258"
#: Without CapacityRevoked the shortest stuck trace is KEP-3258's own: a check back in Retry.
NO_REVOKE = ("accept", "not_provisioned", "provision", "fail", "expire_booking")


def test_one_workload_one_check_depth_12_keeps_every_invariant() -> None:
    report, _ = explore(Options(depth=12, backoff_limit=3))
    assert report.violation is None, report.violation
    assert report.depth == 12 and report.states > 100


@pytest.mark.parametrize("keep_quota", [False, True])
def test_every_single_reconcile_interleaving_keeps_every_invariant(keep_quota: bool) -> None:
    report, _ = explore(Options(depth=12, backoff_limit=2, granularity="reconcile", keep_quota=keep_quota))
    assert report.violation is None, report.violation
    assert report.depth == 12


def test_two_checks_keep_every_invariant() -> None:
    report, _ = explore(Options(depth=6, checks=2, backoff_limit=1))
    assert report.violation is None, report.violation


@pytest.mark.parametrize("preemption", [False, True])
def test_two_queues_in_a_cohort_keep_every_invariant(preemption: bool) -> None:
    """``--cohort``: wla borrows cq2's quota; with preemption, wlb arrives in cq2 and reclaims
    it (which once made wla borrow it back in the same cycle, for ever: workloads within their
    queue's quota now go first)."""
    report, _ = explore(Options(depth=6, workloads=2, cohort=True, preemption=preemption))
    assert report.violation is None and report.states > 20


def test_the_cohort_world_is_refused_under_kep_993() -> None:
    with pytest.raises(OptionsError, match="kep-993"):
        Options(workloads=2, cohort=True, semantics="kep-993-preemption")


def test_symmetry_reduction_identifies_identical_workloads() -> None:
    with_symmetry, _ = explore(Options(depth=4, workloads=2))
    without, _ = explore(Options(depth=4, workloads=2, symmetry=False))
    assert with_symmetry.violation is None and without.violation is None
    assert with_symmetry.states < without.states


def test_states_that_differ_only_by_the_clock_and_uids_are_one_state() -> None:
    ex = Explorer(Options())
    a = ex._node(initial_world(ex.objects, EPOCH), EPOCH, settle=True)
    b = ex._node(initial_world(list(reversed(ex.objects)), EPOCH + 3600), EPOCH + 3600, settle=True)
    assert ex.key(a) == ex.key(b)


def race(*actions: Action, **options: object) -> tuple[Explorer, list[Action], _Node]:
    """KEP-3258's race driven by hand (the search stops at a shorter finding of the same race, a
    second request left beside the first): ``actions`` after the initial settle, then the drain."""
    ex = Explorer(Options(granularity="reconcile", semantics="pre-kep-3258", backoff_limit=2, **options))  # type: ignore[arg-type]
    node = ex._node(initial_world(ex.objects, EPOCH), EPOCH, settle=True)
    for action in actions:
        node = ex.step(node, action)
    drained = ex.drain(node)
    assert drained is not None
    return ex, [SETTLE, *actions, *drained[0]], drained[1]


def test_pre_kep_3258_semantics_get_a_workload_stuck_behind_retry(tmp_path: Path) -> None:
    # the race: the check goes back to Retry between the eviction and the quota release
    ex, trace, end = race(
        Action("autoscaler", request="wla-check1-1", trigger="fail"), Action("reconcile", "provisioning", "default/wla"),
        Action("reconcile", "workload", "default/wla"), Action("reconcile", "provisioning", "default/wla"),
        Action("autoscaler", request="wla-check1-2", trigger="fail"), Action("reconcile", "provisioning", "default/wla"),
        Action("reconcile", "job", "default/wla"))
    stuck = inv.STATE_INVARIANTS["no_stuck_workload"].state(end.world, ex.check_ctx(end))  # type: ignore[misc]
    assert any("stays Retry" in m for m in stuck), stuck
    # and the trace, as a conformance scenario, reproduces it
    v = Violation(tuple(f"no_stuck_workload: {m}" for m in stuck), tuple(trace), end.world, end.now)
    path = tmp_path / "stuck.yaml"
    path.write_text(yaml.safe_dump(to_scenario(ex, v, "stuck", "found by the explorer")))
    (outcome,) = conform([path])
    assert outcome.passed, outcome.failure


def test_pre_kep_3258_search_finds_the_race_and_labels_it_upstream_behaviour(tmp_path: Path) -> None:
    report, ex = explore(Options(depth=12, backoff_limit=2, granularity="reconcile", semantics="pre-kep-3258",
                                 outcomes=NO_REVOKE))
    v = report.violation
    assert v is not None and v.messages
    assert all(inv.upstream_behaviour(m, ex.config) is not None for m in v.messages), v.messages
    path = tmp_path / "race.yaml"
    path.write_text(yaml.safe_dump(to_scenario(ex, v, "race", "found by the explorer")))
    (outcome,) = conform([path])
    assert outcome.passed, outcome.failure


def test_the_same_search_finds_nothing_under_the_current_semantics() -> None:
    report, _ = explore(Options(depth=14, backoff_limit=2, granularity="reconcile", outcomes=NO_REVOKE))
    assert report.violation is None, report.violation


def test_pre_kep_3258_stuck_also_through_a_rejection() -> None:
    """A Rejected check written after the reset (BookingExpired, then CapacityRevoked on the same
    request) strands the workload too."""
    ex, _, end = race(
        Action("autoscaler", request="wla-check1-1", trigger="provision"),
        Action("autoscaler", request="wla-check1-1", trigger="expire_booking"),
        Action("reconcile", "provisioning", "default/wla"), Action("reconcile", "workload", "default/wla"),
        Action("autoscaler", request="wla-check1-1", trigger="revoke_capacity"),
        Action("reconcile", "provisioning", "default/wla"), Action("reconcile", "job", "default/wla"))
    stuck = inv.STATE_INVARIANTS["no_stuck_workload"].state(end.world, ex.check_ctx(end))  # type: ignore[misc]
    assert any("stays Rejected" in m for m in stuck), stuck


def test_kep_3258_specs_pass() -> None:
    outcomes = list(conform(sorted(SPECS.glob("*.yaml"))))
    assert len(outcomes) == 3  # the two stories and the settle twin of the unit-style one
    assert all(o.passed for o in outcomes), [o.failure for o in outcomes]


def test_cli_reports_states_depth_and_time(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explore", "--depth", "4"]) == 0
    out = capsys.readouterr().out
    assert "states" in out and "depth 4" in out and "every invariant holds" in out


def test_cli_prints_the_counterexample_scenario(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    target = tmp_path / "stuck.yaml"
    status = main(["explore", "--semantics", "pre-kep-3258", "--granularity", "reconcile", "--depth", "8",
                   "--backoff-limit", "2", "--outcomes", ",".join(NO_REVOKE), "--scenario-out", str(target)])
    assert status == 1
    assert "(upstream behaviour: Kueue before v0.15" in capsys.readouterr().out
    assert [o.passed for o in conform([target])] == [True]

