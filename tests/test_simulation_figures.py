"""The summary's figures: censored latencies, time to running, attempts, the warm-up, per-queue
figures and quota in readable units (issue 23, item 4)."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest
import yaml
from kueue_provreq import cli
from kueue_provreq.simulation import grid, load_document, parse, parse_setting, simulate
from kueue_provreq.simulation.replicate import aggregate, replicas
from kueue_provreq.simulation.run import Attempts, Percentiles, Report

from builders import EXAMPLES, simulation_file

RETRY = EXAMPLES / "retry-strategy-sweep.yaml"


def no_retries(count: int) -> Report:
    """The retry example without retries: a failed first attempt deactivates its workload."""
    (point,) = grid(load_document(RETRY), [parse_setting("retryStrategy.backoffLimitCount=0")], count=count)
    return simulate(point.simulation)


def test_censored_values_rank_by_their_bound_and_mark_the_percentiles_they_give() -> None:
    p = Percentiles.of([10, 20, 30], censored=[100])
    assert (p.p50, p.p90, p.p99, p.max) == (20, 100, 100, 100)
    assert p.censored == {"p90", "p99", "max"} and p.censored_share == Decimal("0.25")
    tie = Percentiles.of([50], censored=[50])
    assert tie.p50 == 50 and "p50" not in tie.censored and "p90" in tie.censored  # a tie: the observed value first
    assert Percentiles.of([]) == Percentiles(None, None, None, None)
    assert Attempts.of([1, 1, 2, 4]) == Attempts(Decimal(2), 4, 4) and Attempts.of([]) == Attempts(None, None, None)


def test_workloads_that_never_ran_count_as_waiting_until_the_end() -> None:
    report = no_retries(40)
    s = report.summary
    never = [r for r in report.workloads if r.admitted is None]
    assert s.deactivated == len(never) > 0
    bounds = sorted(s.simulated_seconds - r.created for r in never)
    assert s.admission_latency.censored_share == Decimal(len(never)) / 40
    assert s.admission_latency.max == max(bounds + [r.admitted - r.created for r in report.workloads
                                                    if r.admitted is not None])
    admitted_only = Percentiles.of([r.admitted - r.created for r in report.workloads if r.admitted is not None])
    assert (s.admission_latency.p90 or 0) > (admitted_only.p90 or 0)  # dropping workloads does not look fast
    figures = s.to_json()["admissionLatencySeconds"]
    assert figures["censoredShare"] == round(len(never) / 40, 3) and "censored" not in figures


def test_time_to_running_is_admission_plus_the_pods_start(tmp_path: Path) -> None:
    report = simulate(parse(load_document(simulation_file(tmp_path, jobs={"podsReadyTime": "2m", "runningTime": "10m"})),
                            count=10))
    assert all(r.pods_ready is not None and r.admitted is not None and r.pods_ready - r.admitted == 120
               for r in report.workloads)
    s = report.summary
    assert s.time_to_running.p50 == (s.admission_latency.p50 or 0) + 120
    assert s.attempts.mean == Decimal(s.requests.created) / s.workloads
    assert s.attempts.max == max(r.attempts for r in report.workloads)


def test_the_warm_up_is_left_out_of_every_figure(tmp_path: Path) -> None:
    document = load_document(RETRY)
    whole = simulate(parse(document, count=60))
    warm = simulate(parse(document, count=60, warm_up=1800))
    assert whole.workloads == warm.workloads  # the run itself is the same
    late = [r for r in warm.workloads if r.created >= 1800]
    s = warm.summary
    assert 0 < s.workloads == len(late) < 60 and s.warm_up_seconds == 1800
    assert s.finished == sum(r.outcome == "Finished" for r in late)
    assert s.requests.created < whole.summary.requests.created
    assert sum(s.evictions.values()) < sum(whole.summary.evictions.values())
    assert s.reserved_waiting_quota_seconds["cpu"] < whole.summary.reserved_waiting_quota_seconds["cpu"]
    assert s.to_json()["warmUpSeconds"] == 1800 and "warmUpSeconds" not in whole.summary.to_json()


def test_figures_per_local_queue_add_up_to_the_totals() -> None:
    s = simulate(parse(load_document(EXAMPLES / "three-teams-gpu-pool.yaml"), count=40)).summary
    assert sorted(s.local_queues) == ["team-a/training", "team-b/training", "team-c/training"]
    assert sum(q.workloads for q in s.local_queues.values()) == s.workloads
    assert sum(q.reserved_waiting_quota_seconds["nvidia.com/gpu"] for q in s.local_queues.values()) == \
        s.reserved_waiting_quota_seconds["nvidia.com/gpu"]  # exact: the hours are divided, and rounded
    assert s.local_queues["team-a/training"] == s.cluster_queues["team-a"]  # one LocalQueue per ClusterQueue
    out = s.to_json()
    assert set(out["localQueues"]["team-b/training"]) >= {"timeToRunningSeconds", "attemptsPerWorkload",
                                                          "quotaHeldWaiting", "deactivated"}


def test_quota_is_in_readable_units_and_no_byte_seconds_are_written(tmp_path: Path) -> None:
    s = simulate(parse(load_document(RETRY), count=30)).summary
    seconds = s.reserved_waiting_quota_seconds
    out = s.to_json()
    assert "reservedWaitingQuotaSeconds" not in out
    assert out["quotaHeldWaiting"]["memory"] == round(float(seconds["memory"] / 2**30 / 3600), 3)
    assert out["quotaHeldWaiting"]["cpu"] == round(float(seconds["cpu"] / 3600), 3)
    assert cli.main(["simulate", str(RETRY), "--workloads", "30", "-q"]) == 0


def test_the_table_shows_units_censoring_and_the_warm_up(capsys: pytest.CaptureFixture[str]) -> None:
    (point,) = grid(load_document(RETRY), [parse_setting("retryStrategy.backoffLimitCount=0")], count=40)
    from kueue_provreq.simulation.output import table

    text = table(simulate(point.simulation))
    assert "cpu-hours" in text and "GiB-hours" in text and "% censored)" in text and "p90 >=" in text
    assert cli.main(["simulate", str(RETRY), "--workloads", "30", "-q", "--warm-up", "10m"]) == 0
    assert "the first 10m0s left out" in capsys.readouterr().out
    assert cli.main(["simulate", str(RETRY), "--workloads", "30", "-q", "--warm-up", "soon"]) == 2
    assert capsys.readouterr().err.startswith("kueue-provreq: error: --warm-up: ")


def test_replicated_figures_include_the_new_ones() -> None:
    sim = parse(load_document(RETRY), count=20)
    summary = aggregate([simulate(r).summary.to_json() for r in replicas(sim, 2)])
    for figure in (summary["timeToRunningSeconds"]["p90"], summary["timeToRunningSeconds"]["censoredShare"],
                   summary["attemptsPerWorkload"]["mean"], summary["quotaHeldWaiting"]["memory"]):
        assert set(figure) == {"mean", "ci95", "replications"} and figure["replications"] == 2


def test_semantics_and_feature_gates_are_sweep_axes(tmp_path: Path) -> None:
    document = load_document(simulation_file(tmp_path))
    points = grid(document, [parse_setting("semantics=current,pre-14309"),
                             parse_setting("featureGates.CleanupProvisioningRequestsOnEviction=true,false")])
    assert [(sorted(p.simulation.config.semantics), p.simulation.config.gate("CleanupProvisioningRequestsOnEviction"))
            for p in points] == [([], True), ([], False), (["pre-14309"], True), (["pre-14309"], False)]
    data = yaml.safe_load(simulation_file(tmp_path).read_text())
    data["semantics"] = ["pre-kep-3258", "pre-14309"]
    path = tmp_path / "switches.yaml"
    path.write_text(yaml.safe_dump(data))
    assert parse(load_document(path)).config.semantics == {"pre-kep-3258", "pre-14309"}


@pytest.mark.parametrize(("setting", "message"), [
    ("semantics=nope", "--set semantics=nope: Simulation small: semantics: unknown semantics nope"),
    ("featureGates.Nope=true", "--set featureGates.Nope: unknown feature gate (known: "),
    ("featureGates.PartialAdmission=yes please", "--set featureGates.PartialAdmission: a feature gate is true or false"),
])
def test_bad_semantics_and_gates_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], setting: str,
                                              message: str) -> None:
    assert cli.main(["sweep", str(simulation_file(tmp_path)), "-q", "--set", setting]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"kueue-provreq: error: {message}") and err.count("\n") == 1


def test_a_sweep_writes_the_new_figures_to_its_csv(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["sweep", str(RETRY), "--workloads", "10", "-j", "1", "-q", "--replications", "2",
                     "--warm-up", "5m", "--set", "retryStrategy.backoffLimitCount=1", "-o", "json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert {"timeToRunningSeconds.p90.mean", "timeToRunningSeconds.censoredShare.ci95_low",
            "attemptsPerWorkload.mean.ci95_high", "quotaHeldWaiting.cpu.mean"} <= set(row)
    assert row["warmUpSeconds"] == 300  # a setting, not a figure
