"""``simulate``: many workloads over time, the sampled Cluster Autoscaler and the job model."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
import yaml
from kueue_provreq import cli
from kueue_provreq.api.evolve import evolve
from kueue_provreq.controllers.workload_status import checks_for_flavors
from kueue_provreq.manifests import ManifestError
from kueue_provreq.simulation import load_document, parse, simulate
from kueue_provreq.simulation.loop import Loop
from kueue_provreq.simulation.output import summary_json, workloads_csv
from kueue_provreq.simulation.run import GANTT_LIMIT, Report
from kueue_provreq.simulation.settings import apply, parse_setting
from kueue_provreq.world_builder import build_world

from builders import EXAMPLES, SETUP, job, objects, simulation_file

BUNDLED = sorted(EXAMPLES.glob("*.yaml"))


def run(path: Path, count: int | None = None, seed: int | None = None, verify: bool = False) -> Report:
    return simulate(parse(load_document(path), count=count, seed=seed), verify=verify)


def test_there_are_three_bundled_simulations() -> None:
    assert len(BUNDLED) >= 3


@pytest.mark.parametrize("path", BUNDLED, ids=lambda p: p.stem)
def test_each_bundled_simulation_writes_its_summary_csv_and_plots_the_same_way_twice(
        path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    outs = []
    for run_dir in ("a", "b"):
        status = cli.main(["simulate", str(path), "--workloads", "60", "--out", str(tmp_path / run_dir), "-o", "json"])
        out, err = capsys.readouterr()
        assert status == 0 and err == ""
        outs.append(out)
    first, second = tmp_path / "a", tmp_path / "b"
    assert (first / "summary.json").read_bytes() == (second / "summary.json").read_bytes()
    assert (first / "workloads.csv").read_bytes() == (second / "workloads.csv").read_bytes()
    assert outs[0] == outs[1] == (first / "summary.json").read_text()
    summary = json.loads(outs[0])
    assert summary["workloads"] == 60
    assert summary["admitted"] + summary["finished"] + summary["deactivated"] + summary["pending"] == 60
    rows = list(csv.DictReader((first / "workloads.csv").open()))
    assert len(rows) == 60 and sum(int(r["attempts"]) for r in rows) == summary["provisioningRequests"]["created"]
    assert sorted(p.name for p in first.glob("*.png")) == ["admission-latency-cdf.png", "workloads-over-time.png"]
    assert all(p.stat().st_size > 10_000 for p in first.glob("*.png"))


def test_small_runs_get_a_gantt_chart(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status = cli.main(["simulate", str(simulation_file(tmp_path)), "--out", str(tmp_path / "out")])
    assert status == 0 and "simulation small" in capsys.readouterr().out
    assert (tmp_path / "out" / "gantt.png").is_file()
    assert GANTT_LIMIT == 50


def test_the_engine_misses_no_reconcile_during_a_simulation(tmp_path: Path) -> None:
    report = run(simulation_file(tmp_path), verify=True)
    assert report.summary.workloads == 12
    assert report == run(simulation_file(tmp_path))  # verification changes nothing


def test_a_run_starts_with_the_memos_empty(tmp_path: Path) -> None:
    """What an earlier run memoised is keyed by that run's objects: equal to the next run's,
    not the same, so every lookup would compare them deeply.  The next run drops it, and
    gives the same report."""
    first = run(simulation_file(tmp_path))
    assert checks_for_flavors.cache_info().currsize > 0
    sim = parse(load_document(simulation_file(tmp_path)))
    Loop(build_world(sim.setup, sim.start, sim.config), sim.config, sim.start)
    assert checks_for_flavors.cache_info().currsize == 0
    assert run(simulation_file(tmp_path)) == first


def test_the_seed_decides_and_the_file_seed_can_be_overridden(tmp_path: Path) -> None:
    path = simulation_file(tmp_path, name="s.yaml")
    assert summary_json(run(path, seed=5)) == summary_json(run(path))
    assert workloads_csv(run(path, seed=6)) != workloads_csv(run(path))


def test_outcomes_latencies_and_requests_add_up(tmp_path: Path) -> None:
    report = run(simulation_file(tmp_path), count=30)
    s = report.summary
    latencies = sorted(r.admitted - r.created for r in report.workloads if r.admitted is not None)
    assert s.admission_latency.max == latencies[-1] and s.admission_latency.p50 == latencies[(len(latencies) - 1) // 2]
    assert s.requests.provisioned + s.requests.failed <= s.requests.created
    assert s.requests.booking_consumed + s.requests.booking_expired <= s.requests.provisioned
    assert sum(r.evictions for r in report.workloads) == sum(s.evictions.values())


def test_capacity_caps_what_admitted_workloads_hold(tmp_path: Path) -> None:
    path = simulation_file(tmp_path, autoscaler={"check-capacity.autoscaling.x-k8s.io": {"capacity": {"nvidia.com/gpu": 4}}})
    report = run(path, count=30)
    assert max(report.series.admitted_quota["nvidia.com/gpu"]) <= 4
    assert report.summary.requests.failed == 0  # no noRetry: a try without capacity waits and retries
    assert report.summary.finished == 30


def test_no_retry_turns_missing_capacity_into_failures(tmp_path: Path) -> None:
    data = yaml.safe_load(simulation_file(tmp_path).read_text())
    prc = data["setup"]["manifests"][-1]
    prc["spec"]["parameters"] = {"noRetry": "true"}
    data["autoscaler"] = {"check-capacity.autoscaling.x-k8s.io": {"capacity": {"nvidia.com/gpu": 2}}}
    path = tmp_path / "noretry.yaml"
    path.write_text(yaml.safe_dump(data))
    s = run(path, count=20).summary
    assert s.requests.failed > 0 and s.evictions.get("AdmissionCheck", 0) > 0


def test_revocations_deactivate_running_workloads(tmp_path: Path) -> None:
    path = simulation_file(tmp_path, autoscaler={"check-capacity.autoscaling.x-k8s.io": {
        "revocationProbability": 1, "revocationTime": "5m"}}, jobs={"runningTime": "1h"})
    s = run(path, count=6).summary
    assert s.requests.capacity_revoked == s.requests.provisioned == 6
    assert s.deactivated == 6 and s.finished == 0


def test_a_class_ca_does_not_handle_is_never_answered(tmp_path: Path) -> None:
    data = yaml.safe_load(simulation_file(tmp_path).read_text())
    data["setup"]["manifests"][-1]["spec"]["provisioningClassName"] = "queued-provisioning.gke.io"
    data["horizon"] = "1h"
    path = tmp_path / "gke.yaml"
    path.write_text(yaml.safe_dump(data))
    s = run(path, count=5).summary
    # 8 GPUs of quota, 2 per job: four hold quota waiting for an answer that never comes
    assert (s.pending, s.requests.created, s.requests.provisioned) == (5, 4, 0)
    assert s.reserved_waiting_quota_seconds["nvidia.com/gpu"] > 0


def test_a_trace_of_templates_is_repeated_or_truncated(tmp_path: Path) -> None:
    path = simulation_file(tmp_path, workloads={
        "templates": [{"name": "train", "job": yaml.safe_load(job(gpus=1))}],
        "trace": [{"at": "0s", "template": "train"}, {"at": "10m", "template": "train"}]})
    assert [r.created for r in run(path).workloads] == [0, 600]
    assert [r.created for r in run(path, count=5).workloads] == [0, 600, 1200, 1800, 2400]
    assert [r.created for r in run(path, count=1).workloads] == [0]


def test_a_kubectl_dump_replays_its_workloads(tmp_path: Path) -> None:
    def workload(name: str, created: str, gpus: int) -> dict[str, object]:
        return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
                "metadata": {"name": name, "namespace": "default", "creationTimestamp": created, "uid": "x",
                             "resourceVersion": "7", "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job",
                                                                            "name": "j", "uid": "u"}]},
                "spec": {"queueName": "lq", "active": False, "podSets": [{"name": "main", "count": 1, "template": {
                    "spec": {"containers": [{"name": "c", "resources": {"requests": {"nvidia.com/gpu": gpus}}}]}}}]},
                "status": {"conditions": [{"type": "Admitted", "status": "True", "reason": "Admitted", "message": "",
                                           "lastTransitionTime": created}]}}
    dump = {"apiVersion": "v1", "kind": "List", "items": [workload("b", "2025-03-01T10:05:00Z", 2),
                                                           workload("a", "2025-03-01T10:00:00Z", 1)]}
    (tmp_path / "workloads.json").write_text(json.dumps(dump))
    path = simulation_file(tmp_path, workloads={"trace": {"file": "workloads.json"}})
    report = run(path)
    assert [(r.name, r.created, r.template) for r in report.workloads] == [("a", 0, ""), ("b", 300, "")]
    assert report.summary.finished == 2
    assert [(r.name, r.created) for r in run(path, count=3).workloads] == [("a", 0), ("b", 300), ("a-2", 600)]


def test_simulate_json_output_is_the_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["simulate", str(simulation_file(tmp_path)), "-o", "json", "--seed", "9"]) == 0
    assert json.loads(capsys.readouterr().out)["seed"] == 9


def test_setup_files_and_a_configuration_file_are_read_relative_to_the_simulation(tmp_path: Path) -> None:
    (tmp_path / "setup.yaml").write_text(SETUP)
    (tmp_path / "kueue.yaml").write_text("apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"
                                         "waitForPodsReady: {timeout: 1m}\n")
    path = simulation_file(tmp_path, setup={"files": ["setup.yaml"]}, configuration="kueue.yaml",
                           jobs={"podsReadyTime": "5m", "runningTime": "10m"})
    s = run(path, count=4).summary
    assert s.evictions.get("PodsReadyTimeout", 0) >= 4  # pods take 5m, the timeout is 1m


def test_the_progress_bar_is_for_a_terminal_only(monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    from kueue_provreq.simulation.progress import progress_bar

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    with progress_bar(10, "workloads") as update:
        assert update is None  # pytest's stderr is no terminal
    terminal = Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    with progress_bar(10, "workloads", quiet=True) as update:
        assert update is None
    with progress_bar(10, "workloads") as update:
        assert update is not None
        update(10)
    assert terminal.getvalue() == ""  # done before the bar's two-second delay
    monkeypatch.setattr("kueue_provreq.simulation.progress.DELAY_SECONDS", 0)
    with progress_bar(10, "workloads") as update:
        assert update is not None
        update(4)
    assert "0/10 [" in terminal.getvalue()  # shown at once without the delay


def test_a_world_forgets_the_owners_of_what_it_deleted() -> None:
    """The owner indexes hold entries only for objects that exist: a world that keeps creating
    and deleting (a simulation) stays as large as what it holds."""
    from kueue_provreq.api import constants as c
    from kueue_provreq.api.meta import Time
    from kueue_provreq.controllers.context import Context
    from kueue_provreq.engine import Manager
    from kueue_provreq.world import Delete
    from kueue_provreq.world_builder import build_world

    world = build_world(objects(SETUP, job()), Time(1_704_067_200))
    Manager(world, verify=False).settle(Context(Time(1_704_067_200)))
    assert world.objects(c.PROVISIONING_REQUEST) and world.objects(c.POD_TEMPLATE)
    for wl in world.objects(c.WORKLOAD):
        world.apply(Delete(wl.KIND, wl.metadata.namespace, wl.metadata.name))
    assert world.objects(c.PROVISIONING_REQUEST) == world.objects(c.POD_TEMPLATE) == []
    assert world._owned_by_name == {} and world._dependents == {}


def test_three_teams_borrowing_from_a_pool_get_figures_per_queue() -> None:
    """The per-queue figures add up to the totals, and leaving the pool changes them: team A,
    with more work than its own quota holds, waits longer alone."""
    path = EXAMPLES / "three-teams-gpu-pool.yaml"
    shared = run(path, count=60).summary
    queues = shared.cluster_queues
    assert sorted(queues) == ["team-a", "team-b", "team-c"]
    assert sum(q.workloads for q in queues.values()) == shared.workloads
    assert sum(q.finished for q in queues.values()) == shared.finished
    assert sum(sum(q.reserved_waiting_quota_seconds.values()) for q in queues.values()) == \
        sum(shared.reserved_waiting_quota_seconds.values())
    document = load_document(path)
    setting = parse_setting("setup.manifests[2].spec.cohortName=solo-a")
    data = apply(document.data, [(setting, "solo-a")])
    alone = simulate(parse(evolve(document, data=data), count=60)).summary.cluster_queues
    assert (alone["team-a"].admission_latency.p90 or 0) > (queues["team-a"].admission_latency.p90 or 0)


# --- replications --------------------------------------------------------------------------------


def test_replications_report_each_figure_as_a_mean_and_interval_the_same_bytes_twice(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from kueue_provreq.simulation.replicate import seeds

    path = simulation_file(tmp_path)
    for run_dir in ("a", "b"):
        assert cli.main(["simulate", str(path), "--replications", "3", "--out", str(tmp_path / run_dir),
                         "-o", "json"]) == 0
    assert (tmp_path / "a" / "summary.json").read_bytes() == (tmp_path / "b" / "summary.json").read_bytes()
    summary = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert summary["seed"] == 5 and summary["workloads"] == {"mean": 12, "ci95": [12, 12], "replications": 3}
    created = [run(path, seed=s).summary.requests.created for s in seeds(5, 3)]
    mean = sum(created) / 3
    sd = (sum((c - mean) ** 2 for c in created) / 2) ** 0.5
    low, high = summary["provisioningRequests"]["created"]["ci95"]
    assert summary["provisioningRequests"]["created"]["mean"] == pytest.approx(mean, abs=1e-3)
    assert (high - low) / 2 == pytest.approx(4.302653 * sd / 3 ** 0.5, abs=2e-3)  # Student t, 2 degrees of freedom
    capsys.readouterr()
    assert cli.main(["simulate", str(path), "--replications", "3", "-q"]) == 0
    table = capsys.readouterr().out
    assert "3 replications" in table and "provisioningRequests.created" in table and " ± " in table


def test_one_replication_is_todays_run_and_the_seeds_are_independent(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    from kueue_provreq.simulation.replicate import seeds

    path = simulation_file(tmp_path)
    assert cli.main(["simulate", str(path), "--replications", "1", "-o", "json"]) == 0
    assert capsys.readouterr().out == summary_json(run(path))
    assert seeds(1, 1) == [1] and seeds(1, 4)[:3] == seeds(1, 3) and len(set(seeds(1, 4))) == 4
    assert seeds(2, 3)[1:] != seeds(1, 3)[1:]
    assert cli.main(["simulate", str(path), "--replications", "0"]) == 2
    assert "--replications: must be at least 1" in capsys.readouterr().err


def test_a_setup_file_may_be_a_kubectl_list(tmp_path: Path) -> None:
    """``kubectl get ... -o json`` prints a List: its items are the setup, as ``-f`` reads them."""
    documents = list(yaml.safe_load_all(SETUP))
    (tmp_path / "setup.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": documents}))
    listed = parse(load_document(simulation_file(tmp_path, setup={"files": ["setup.json"]})))
    plain = parse(load_document(simulation_file(tmp_path, "plain.yaml")))
    assert listed.setup == plain.setup and len(listed.setup) == len(documents)


def test_a_list_item_that_is_no_object_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "setup.yaml").write_text("apiVersion: v1\nkind: List\nitems:\n  - 3\n")
    with pytest.raises(ManifestError) as e:
        parse(load_document(simulation_file(tmp_path, setup={"files": ["setup.yaml"]})))
    assert str(e.value) == f"{tmp_path / 'setup.yaml'}:4: List: items[0]: expected an object, got 3"


@pytest.mark.parametrize("points", [16, 64, 4000])
def test_the_series_shows_a_quiet_stretch_as_it_was(tmp_path: Path, points: int,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Two busy days with a quiet weekend between: however thinly the series is sampled, the
    weekend shows nothing running (not the workloads still running when the last sample kept
    before it was taken), and the series runs to the end of the run; sampled densely, it is
    exact."""
    from kueue_provreq.simulation import run as run_module

    monkeypatch.setattr(run_module, "SERIES_POINTS", points)
    burst = [{"at": at, "template": "train"} for at in ("0s", "60h") for _ in range(16)]
    path = simulation_file(tmp_path, workloads={"trace": burst, "templates": [
        {"name": "train", "job": yaml.safe_load(job(gpus=2))}]}, autoscaler={})
    report = run(path)
    s, records = report.series, report.workloads
    assert all(r.evictions == 0 and r.finished is not None for r in records)
    assert len(s.times) <= points and s.times[-1] == report.summary.simulated_seconds

    def drawn(x: int) -> int:
        return s.admitted[max(i for i, t in enumerate(s.times) if t <= x)]

    def truth(x: int) -> int:
        return sum(1 for r in records if r.admitted is not None and r.admitted <= x < (r.finished or x + 1))

    quiet = max(r.finished or 0 for r in records if r.created == 0)
    assert quiet < 60 * 3600
    assert all(drawn(x) == 0 for x in range(quiet, 60 * 3600, 600))
    if points == 4000:
        assert all(drawn(x) == truth(x) for x in range(0, report.summary.simulated_seconds + 1, 60))
