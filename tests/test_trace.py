"""The trace (``record``), the fit of the Cluster Autoscaler model to it (``calibrate``) and its
replay (``workloads.trace: {file: trace.jsonl}``, ``autoscaler: autoscaler.yaml``)."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any

import pytest
import yaml
from kueue_provreq import trace as t
from kueue_provreq.manifests import ManifestError
from kueue_provreq.manifests.codec import format_time
from kueue_provreq.simulation import calibrate, load_document, parse, simulate

from builders import SETUP, cli, simulation_file

T0 = 1_704_067_200  # 2024-01-01T00:00:00Z
CHECK_CAPACITY = "check-capacity.autoscaling.x-k8s.io"


# --- a synthetic trace from known values -----------------------------------------------------------


def synthetic(seed: int, n: int = 200, provisioned: tuple[float, float] = (600, 0.8),
              failed: tuple[float, float] = (120, 0.5), p: float = 0.3) -> t.Trace:
    """``n`` requests 10 minutes apart, each failing with probability ``p``, answered after a
    lognormal delay (median, sigma) of its outcome."""
    rng = random.Random(seed)
    records = []
    for i in range(n):
        created = T0 + i * 600
        fails = rng.random() < p
        median, sigma = failed if fails else provisioned
        delay = rng.lognormvariate(math.log(median), sigma)
        records.append(t.Attempt(created, "ns", f"wl{i}-check-1", f"wl{i}", CHECK_CAPACITY,
                                 t.FAILED if fails else t.PROVISIONED, created + round(delay)))
    return t.Trace("synthetic", tuple(records))


def test_calibrate_recovers_known_parameters_within_its_intervals() -> None:
    """Over 20 seeds each 95% interval holds the true value at least 17 times (an interval
    that is right 95% of the time misses 1 in 20), and never misses by far."""
    covered = dict.fromkeys(("provisioned median", "provisioned sigma", "failed median", "failed sigma", "p"), 0)
    for seed in range(20):
        (fit,) = calibrate.fit(synthetic(seed))
        assert fit.provisioned is not None and fit.failed is not None and fit.failure_probability is not None
        truth = {"provisioned median": (fit.provisioned.median, 600), "provisioned sigma": (fit.provisioned.sigma, 0.8),
                 "failed median": (fit.failed.median, 120), "failed sigma": (fit.failed.sigma, 0.5),
                 "p": (fit.failure_probability, 0.3)}
        for name, (interval, value) in truth.items():
            assert interval.low < interval.value < interval.high
            covered[name] += interval.low <= value <= interval.high
            assert abs(interval.value - value) < 2 * (interval.high - interval.low), (seed, name, interval)
    assert min(covered.values()) >= 17, covered


def test_independent_failures_identify_no_stockouts() -> None:
    (fit,) = calibrate.fit(synthetic(3))
    assert fit.stockouts is None and fit.runs_p_value is not None and fit.runs_p_value > 0.05
    assert any(line.startswith("stockouts: the answers do not cluster") for line in fit.unidentified)
    assert "stockouts" not in fit.to_yaml()


def stockout_trace(seed: int, n: int = 400, available: float = 4 * 3600, stockout: float = 3600) -> t.Trace:
    """A try every 5 minutes against capacity that is gone for about an hour in every five."""
    rng = random.Random(seed)
    periods, now, up = [], 0.0, True
    while now < n * 300 + 3600:
        length = rng.uniform(0.75, 1.25) * (available if up else stockout)
        periods.append((now, now + length, up))
        now, up = now + length, not up
    records = []
    for i in range(n):
        answered = i * 300 + round(rng.lognormvariate(math.log(60), 0.3))
        fails = not next(u for start, end, u in periods if start <= answered < end) or rng.random() < 0.05
        records.append(t.Attempt(T0 + i * 300, "ns", f"wl{i}-check-1", f"wl{i}", CHECK_CAPACITY,
                                 t.FAILED if fails else t.PROVISIONED, T0 + answered))
    return t.Trace("stock-outs", tuple(records))


@pytest.mark.parametrize("seed", range(3))
def test_clustered_failures_identify_stockouts_near_their_true_lengths(seed: int) -> None:
    (fit,) = calibrate.fit(stockout_trace(seed))
    assert fit.runs_p_value is not None and fit.runs_p_value < 1e-6
    assert fit.stockouts is not None
    assert fit.stockouts.available.low <= 4 * 3600 <= fit.stockouts.available.high
    assert fit.stockouts.stockout.low <= 3600 <= fit.stockouts.stockout.high
    assert fit.failure_probability is not None and fit.failure_probability.high < 0.15  # outside stock-outs
    section = fit.to_yaml()
    assert set(section["stockouts"]) == {"available", "stockout"}


def test_pending_requests_and_later_answers_are_left_out_and_counted() -> None:
    records = (t.Attempt(T0, "ns", "a-check-1", "a", CHECK_CAPACITY, t.PENDING, T0 + 5),
               t.Attempt(T0, "ns", "a-check-1", "a", CHECK_CAPACITY, t.NOT_PROVISIONED, T0 + 60),
               t.Attempt(T0, "ns", "a-check-1", "a", CHECK_CAPACITY, t.PROVISIONED, T0 + 400),
               t.Attempt(T0, "ns", "b-check-1", "b", CHECK_CAPACITY, t.PENDING, T0 + 5))
    (fit,) = calibrate.fit(t.Trace("x", records))
    assert (fit.attempts, fit.answered, fit.pending, fit.later_answers, fit.failures) == (2, 1, 1, 1, 1)
    assert fit.failed is None and fit.provisioned is None  # one sample each is no fit
    assert any(line.startswith("provisionedTime: 0 provisioned") for line in fit.unidentified)


# --- the format ----------------------------------------------------------------------------------------


def test_records_round_trip_and_a_writer_appends_each_fact_once(tmp_path: Path) -> None:
    records: list[t.Record] = [
        t.Window(T0, T0 + 3600),
        t.Arrival(T0, "ns", "a", "lq", 5, ({"name": "main", "count": 1},), 120),
        t.Attempt(T0 + 1, "ns", "a-check-1", "a", CHECK_CAPACITY, t.FAILED, T0 + 61, "CapacityIsNotFound"),
        t.Finish(T0 + 900, "ns", "a", t.FINISHED, 120)]
    path = tmp_path / "trace.jsonl"
    with path.open("a") as stream:
        assert t.Writer(stream).add(records + records) == 4
    with path.open("a") as stream:  # resumed: what the file holds is not written again
        assert t.Writer(stream, t.read(path).records).add(records) == 0
    assert t.read(path).records == tuple(records)
    assert json.loads(path.read_text().splitlines()[1])["time"] == "2024-01-01T00:00:00Z"


@pytest.mark.parametrize(("line", "message"), [
    ('{"type": "arrival"}', "trace.jsonl:2: time: required string"),
    ('{"type": "nope"}', "trace.jsonl:2: type: unknown record type 'nope'"),
    ('{"type": "attempt", "time": "2024-01-01T00:00:00Z", "namespace": "n", "name": "r", "workload": "w", '
     '"class": "c", "outcome": "Maybe", "outcomeTime": "2024-01-01T00:00:00Z"}', "outcome: expected one of"),
    ("[1]", "trace.jsonl:2: expected a JSON object"),
    ("{", "trace.jsonl:2: not JSON"),
])
def test_a_bad_line_is_one_error_naming_the_file_line_and_field(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "trace.jsonl"
    path.write_text(json.dumps(t.Window(T0, T0).to_json()) + "\n" + line + "\n")
    with pytest.raises(ManifestError) as e:
        t.read(path)
    assert message in str(e.value)
    status = cli("calibrate", str(path), "--out", str(tmp_path / "out"))
    assert status.returncode == 2 and message in status.stderr and "Traceback" not in status.stderr
    assert len(status.stderr.splitlines()) == 1 and not (tmp_path / "out").exists()


# --- dumps taken over time -> trace -> calibrate -> simulate -------------------------------------------


def _condition(type_: str, at: int, status: str = "True", reason: str = "R") -> dict[str, Any]:
    return {"type": type_, "status": status, "reason": reason, "message": "", "lastTransitionTime": format_time(at)}


def _workload(i: int, *conditions: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": f"job-train-{i}", "namespace": "default", "creationTimestamp": format_time(T0 + i * 900)},
            "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 1, "template": {"spec": {"containers": [
                {"name": "c", "resources": {"requests": {"nvidia.com/gpu": "2"}}}]}}}]},
            "status": {"conditions": list(conditions)}}


def _request(i: int, attempt: int, created: int, *conditions: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "autoscaling.x-k8s.io/v1", "kind": "ProvisioningRequest",
            "metadata": {"name": f"job-train-{i}-check-{attempt}", "namespace": "default",
                         "creationTimestamp": format_time(created),
                         "ownerReferences": [{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
                                              "name": f"job-train-{i}", "uid": "u"}]},
            "spec": {"provisioningClassName": CHECK_CAPACITY, "podSets": []},
            "status": {"conditions": list(conditions)}}


def dumps(folder: Path, n: int = 12) -> list[Path]:
    """Two looks at a cluster: the first while requests are pending or just failed, the second
    after each workload ran (its first request gone, its second provisioned)."""
    early, late = [], []
    for i in range(n):
        created = T0 + i * 900
        fails = i % 3 == 0
        first = _request(i, 1, created + 5, _condition("Failed" if fails else "Provisioned", created + 5 + 60 + 7 * i,
                                                        reason="CapacityIsNotFound" if fails else "CapacityIsFound"))
        early += [_workload(i), _request(i, 1, created + 5)]
        ready = created + 400 + 10 * i
        late.append(_workload(i, _condition("Admitted", ready - 30), _condition("PodsReady", ready),
                              _condition("Finished", ready + 1800 + 60 * i)))
        late.append(first)
    paths = [folder / "a.json", folder / "b.json"]
    paths[0].write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": early}))
    paths[1].write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": late}))
    return paths


def test_record_dumps_calibrate_and_simulate(tmp_path: Path) -> None:
    a, b = dumps(tmp_path)
    trace_path = tmp_path / "trace.jsonl"
    status = cli("record", "-f", str(b), "-f", str(a), "--trace", str(trace_path))
    assert status.returncode == 0, status.stderr
    recorded = t.read(trace_path)
    arrivals, finishes = recorded.of(t.Arrival), recorded.of(t.Finish)
    assert len(arrivals) == 12 and len(finishes) == 12
    assert [f.running_seconds for f in finishes] == [1800 + 60 * i for i in range(12)]
    attempts = recorded.of(t.Attempt)
    assert sum(x.outcome == t.PENDING for x in attempts) == 12  # the first look
    assert sum(x.outcome == t.FAILED for x in attempts) == 4 and sum(x.outcome == t.PROVISIONED for x in attempts) == 8
    assert recorded.window == t.Window(T0, max(T0 + i * 900 + 400 + 10 * i + 1800 + 60 * i for i in range(12)))
    again = cli("record", "-f", str(a), "-f", str(b), "--trace", str(trace_path))  # resumed: nothing new
    assert again.returncode == 0 and "0 new record(s) from 2 dump(s)" in again.stderr
    assert t.read(trace_path).records == recorded.records

    status = cli("calibrate", str(trace_path), "--out", str(tmp_path / "fit"))
    assert status.returncode == 0, status.stderr
    section = yaml.safe_load((tmp_path / "fit" / "autoscaler.yaml").read_text())
    model = section[CHECK_CAPACITY]
    assert model["failureProbability"] == pytest.approx(4 / 12, abs=1e-4)
    assert set(model) == {"provisionedTime", "failedTime", "failureProbability"}
    fitted = json.loads((tmp_path / "fit" / "fit.json").read_text())["classes"][CHECK_CAPACITY]
    assert fitted["provisionedTime"]["n"] == 8 and fitted["failedTime"]["n"] == 4
    assert (tmp_path / "fit" / "fit.png").stat().st_size > 10_000

    path = simulation_file(tmp_path, workloads={"trace": {"file": "trace.jsonl"}}, autoscaler="fit/autoscaler.yaml")
    sim = parse(load_document(path))
    assert sim.autoscaler[CHECK_CAPACITY].failure_probability == pytest.approx(4 / 12, abs=1e-4)
    assert sim.autoscaler[CHECK_CAPACITY].provisioned_time.kind == "lognormal"
    assert [a.at for a in sim.trace] == [i * 900 for i in range(12)]
    assert [a.running_time for a in sim.trace] == [1800 + 60 * i for i in range(12)]
    report = simulate(sim)
    assert report.summary.workloads == 12 and report.summary.finished == 12
    status = cli("simulate", str(path), "-o", "json")
    assert status.returncode == 0 and json.loads(status.stdout)["finished"] == 12


def test_a_traced_running_time_replaces_the_job_model(tmp_path: Path) -> None:
    arrivals: list[t.Record] = [t.Window(T0, T0 + 7200), t.Arrival(T0, "default", "short", "lq", 0, (
        {"name": "main", "count": 1, "template": {"spec": {"containers": [
            {"name": "c", "resources": {"requests": {"nvidia.com/gpu": "2"}}}]}}},), 300)]
    (tmp_path / "trace.jsonl").write_text(t.dumps(arrivals))
    path = simulation_file(tmp_path, workloads={"trace": {"file": "trace.jsonl"}},
                           autoscaler={CHECK_CAPACITY: {"provisioningTime": "10s"}},
                           jobs={"podsReadyTime": "30s", "runningTime": "5h"})
    (record,) = simulate(parse(load_document(path))).workloads
    assert record.finished == 10 + 30 + 300  # answered, pods ready, ran 300 s (not the job model's 5 h)


# --- repetition --------------------------------------------------------------------------------------


def test_a_repeated_trace_keeps_the_quiet_days_at_its_end(tmp_path: Path) -> None:
    """A week recorded Monday to Sunday with arrivals on weekdays only repeats every 7 days: the
    weekend (the last days of the trace) is not squeezed out."""
    day = 24 * 3600
    podsets = ({"name": "main", "count": 1, "template": {"spec": {"containers": [{"name": "c"}]}}},)
    records: list[t.Record] = [t.Window(T0, T0 + 7 * day)]
    records += [t.Arrival(T0 + d * day + 9 * 3600, "default", f"wl-{d}", "lq", 0, podsets, 60) for d in range(5)]
    (tmp_path / "trace.jsonl").write_text(t.dumps(records))
    path = simulation_file(tmp_path, workloads={"trace": {"file": "trace.jsonl"}})
    sim = parse(load_document(path), count=10)
    assert sim.trace_period == 7 * day
    created = [r.created for r in simulate(sim).workloads]
    assert created == [d * day + 9 * 3600 for d in range(5)] + [(7 + d) * day + 9 * 3600 for d in range(5)]
    # a period given in the file wins over the trace's
    path = simulation_file(tmp_path, workloads={"trace": {"file": "trace.jsonl", "period": "144h"}})
    assert parse(load_document(path)).trace_period == 6 * day


def test_a_kubectl_dump_repeats_on_the_newest_time_it_records(tmp_path: Path) -> None:
    items = [_workload(0), _workload(1, _condition("Finished", T0 + 5 * 3600))]
    (tmp_path / "workloads.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    path = simulation_file(tmp_path, workloads={"trace": {"file": "workloads.json"}})
    assert parse(load_document(path)).trace_period == 5 * 3600


# --- autoscaler: PATH ----------------------------------------------------------------------------------


def test_an_autoscaler_file_is_included_and_its_errors_name_its_lines(tmp_path: Path) -> None:
    (tmp_path / "autoscaler.yaml").write_text(f"{CHECK_CAPACITY}:\n  failureProbability: 0.25\n")
    path = simulation_file(tmp_path, autoscaler="autoscaler.yaml")
    assert parse(load_document(path)).autoscaler[CHECK_CAPACITY].failure_probability == 0.25
    (tmp_path / "autoscaler.yaml").write_text(f"{CHECK_CAPACITY}:\n  failureProbability: 2\n")
    status = cli("simulate", str(path))
    assert status.returncode == 2 and len(status.stderr.splitlines()) == 1
    assert "autoscaler.yaml:2" in status.stderr and "failureProbability" in status.stderr
    missing = simulation_file(tmp_path, name="missing.yaml", autoscaler="nowhere.yaml")
    status = cli("simulate", str(missing))
    assert status.returncode == 2 and "missing.yaml:" in status.stderr and "nowhere.yaml" in status.stderr
    assert "autoscaler" in status.stderr and "Traceback" not in status.stderr


def test_set_reaches_an_included_autoscaler(tmp_path: Path) -> None:
    (tmp_path / "autoscaler.yaml").write_text(f"{CHECK_CAPACITY}:\n  failureProbability: 0.25\n")
    path = simulation_file(tmp_path, autoscaler="autoscaler.yaml")
    status = cli("sweep", str(path), "--workloads", "4", "--replications", "1", "-j", "1",
                 "--set", f"autoscaler[{CHECK_CAPACITY}].failureProbability=0,1")
    assert status.returncode == 0, status.stderr


def test_setup_is_shared_with_simulation_files() -> None:
    assert "ProvisioningRequestConfig" in SETUP


# --- the bundled week ------------------------------------------------------------------------------------

EXAMPLES_TRACES = Path(__file__).parent.parent / "examples" / "traces"


def test_the_bundled_week_is_what_its_script_and_calibrate_write(tmp_path: Path) -> None:
    """``week.jsonl`` is ``make-week.py``'s output and ``week-autoscaler.yaml`` calibrate's fit
    of it, whose intervals hold the values the script used."""
    import runpy
    import shutil

    shutil.copy(EXAMPLES_TRACES / "make-week.py", tmp_path / "make-week.py")
    runpy.run_path(str(tmp_path / "make-week.py"), run_name="__main__")
    assert (tmp_path / "week.jsonl").read_text() == (EXAMPLES_TRACES / "week.jsonl").read_text()
    status = cli("calibrate", str(EXAMPLES_TRACES / "week.jsonl"), "--out", str(tmp_path / "fit"))
    assert status.returncode == 0, status.stderr
    assert (tmp_path / "fit" / "autoscaler.yaml").read_text() == (EXAMPLES_TRACES / "week-autoscaler.yaml").read_text()
    (fit,) = calibrate.fit(t.read(EXAMPLES_TRACES / "week.jsonl"))
    assert fit.provisioned is not None and fit.failed is not None and fit.stockouts is not None
    assert fit.failure_probability is not None
    for interval, truth in ((fit.provisioned.median, 360), (fit.provisioned.sigma, 0.6), (fit.failed.median, 240),
                            (fit.failed.sigma, 0.3), (fit.failure_probability, 0.1),
                            (fit.stockouts.available, 3 * 3600), (fit.stockouts.stockout, 3600)):
        assert interval.low <= truth <= interval.high, (interval, truth)


def test_record_refuses_live_options_with_dumps_and_bad_dumps_in_one_line(tmp_path: Path) -> None:
    a, _ = dumps(tmp_path)
    for extra in (("--for", "1m"), ("-n", "team-a"), ("--context", "kind")):
        status = cli("record", "-f", str(a), "--trace", str(tmp_path / "t.jsonl"), *extra)
        assert status.returncode == 2 and "needs --kubeconfig" in status.stderr
    (tmp_path / "empty.json").write_text('{"apiVersion": "v1", "kind": "List", "items": []}')
    status = cli("record", "-f", str(tmp_path / "empty.json"), "--trace", str(tmp_path / "t.jsonl"))
    assert status.returncode == 2 and "empty.json" in status.stderr and len(status.stderr.splitlines()) == 1
    assert not (tmp_path / "t.jsonl").exists()


def test_a_live_recording_outlives_a_failed_watch(tmp_path: Path) -> None:
    """An API server that drops a watch (restarting, timing out) is said and listed again; the
    recording goes on and loses nothing the listing shows."""
    import io

    from kueue_provreq.cluster.client import ClusterError, Listing, WatchEvent
    from kueue_provreq.cluster.record import TraceRecorder

    wl = _workload(0)
    clock = iter(range(100, 10_000))

    class Flaky:
        def __init__(self) -> None:
            self.watches = 0

        def list(self, res: Any, namespace: str = "") -> Listing:
            return Listing((wl,) if res.kind == "Workload" and self.watches else (), "1")

        def watch(self, res: Any, version: str, namespace: str, timeout: int) -> Any:
            self.watches += 1
            if self.watches == 1:
                raise ClusterError("cannot reach the API server")
            return iter([WatchEvent("BOOKMARK", {"metadata": {"resourceVersion": "2"}})])

    lines: list[str] = []
    stream = io.StringIO()
    recorder = TraceRecorder(Flaky(), t.Writer(stream), clock=lambda: float(next(clock)), log=lines.append)  # type: ignore[arg-type]
    recorder.run(until=110)
    recorder.close()
    assert lines[0] == ("listed workloads.kueue.x-k8s.io and provisioningrequests.autoscaling.x-k8s.io; "
                        "watching their changes")
    assert any("failed (cannot reach the API server); listing again" in line for line in lines)
    records = [t.parse_line(line, "x") for line in stream.getvalue().splitlines()]
    assert [type(r).__name__ for r in records] == ["Arrival", "Window"]
