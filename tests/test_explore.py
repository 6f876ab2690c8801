"""Bounded exhaustive exploration: every invariant in every reachable state of small worlds, and the
KEP-3258 race found by the search itself under the pre-KEP-3258 semantics."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from kueue_provreq.cli import main
from kueue_provreq.conformance.runner import conform
from kueue_provreq.explore.scenario import to_scenario
from kueue_provreq.explore.search import (
    EPOCH,
    Explorer,
    Options,
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


def test_pre_kep_3258_semantics_get_a_workload_stuck_behind_retry(tmp_path: Path) -> None:
    report, ex = explore(Options(depth=12, backoff_limit=2, granularity="reconcile", semantics="pre-kep-3258",
                                 outcomes=NO_REVOKE))
    v = report.violation
    assert v is not None
    assert any(m.startswith("no_stuck_workload:") and "stays Retry" in m for m in v.messages), v.messages
    # the race: the check goes back to Retry between the eviction and the quota release
    kinds = [a.describe() for a in v.trace]
    assert kinds.index("reconcile workload default/wla") < kinds.index("autoscaler fail wla-check1-2") \
        < kinds.index("reconcile job default/wla")
    # and the trace, as a conformance scenario, reproduces it
    path = tmp_path / "stuck.yaml"
    path.write_text(yaml.safe_dump(to_scenario(ex, v, "stuck", "found by the explorer")))
    (outcome,) = conform([path])
    assert outcome.passed, outcome.failure


def test_the_same_search_finds_nothing_under_the_current_semantics() -> None:
    report, _ = explore(Options(depth=14, backoff_limit=2, granularity="reconcile", outcomes=NO_REVOKE))
    assert report.violation is None, report.violation


def test_pre_kep_3258_stuck_also_through_a_rejection() -> None:
    """With every outcome allowed the shortest stuck trace is a Rejected check written after the
    reset (BookingExpired, then CapacityRevoked on the same request)."""
    report, _ = explore(Options(depth=8, backoff_limit=2, granularity="reconcile", semantics="pre-kep-3258"))
    assert report.violation is not None
    assert any("stays Rejected" in m for m in report.violation.messages)


def test_kep_3258_specs_pass() -> None:
    outcomes = list(conform(sorted(SPECS.glob("*.yaml"))))
    assert len(outcomes) == 2
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
    assert "no_stuck_workload" in capsys.readouterr().out
    assert [o.passed for o in conform([target])] == [True]

