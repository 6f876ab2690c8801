"""``sweep``: ``--set`` paths, the grid, and the same rows however the points run."""

from __future__ import annotations

import csv
import json
import sys
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest
from kueue_provreq import cli
from kueue_provreq.manifests import ManifestError
from kueue_provreq.simulation import SettingError, grid, load_document, parse_setting, sweep
from kueue_provreq.simulation.settings import apply, first_created, parse_keys
from kueue_provreq.simulation.spec import Simulation
from kueue_provreq.simulation.sweep import cost_estimate, expensive_first, flatten

from builders import EXAMPLES, simulation_file

CLASS = "check-capacity.autoscaling.x-k8s.io"


# --- paths -----------------------------------------------------------------------------------------


def test_paths_with_dotted_keys_and_list_items() -> None:
    assert parse_keys(f'autoscaler["{CLASS}"].failureProbability') == ("autoscaler", CLASS, "failureProbability")
    assert parse_keys(f"autoscaler['{CLASS}'].capacity") == ("autoscaler", CLASS, "capacity")
    assert parse_keys(f"autoscaler[{CLASS}].failureProbability") == ("autoscaler", CLASS, "failureProbability")
    assert parse_keys("workloads.templates[0].weight") == ("workloads", "templates", 0, "weight")


def test_values_are_yaml_scalars() -> None:
    setting = parse_setting("jobs.runningTime=5m,1h")
    assert setting.values == ("5m", "1h")
    assert parse_setting("seed=1, 2").values == (1, 2)
    assert parse_setting("retryStrategy.backoffLimitCount=0,3").shorthand == "backoffLimitCount"


@pytest.mark.parametrize(("text", "message"), [
    ("seed", "--set seed: expected PATH=V1,V2,..."),
    ("=1", "--set =1: expected PATH=V1,V2,..."),
    ("seed=1,,2", "--set seed: an empty item is not a value"),
    ("seed=[1]", "--set seed: '[1]' is not a value"),
    ('autoscaler["x.y".failureProbability=1', "--set autoscaler[\"x.y\".failureProbability: cannot read the path"),
    ("retryStrategy.backofLimitCount=1", "--set retryStrategy.backofLimitCount: unknown retryStrategy field (known: "
     "retryStrategy.backoffLimitCount, retryStrategy.backoffBaseSeconds, retryStrategy.backoffMaxSeconds)"),
])
def test_bad_settings(text: str, message: str) -> None:
    with pytest.raises(SettingError) as e:
        parse_setting(text)
    assert str(e.value).startswith(message)


def test_apply_creates_mappings_on_the_way_and_refuses_to_walk_through_values() -> None:
    doc = {"autoscaler": {}, "seed": 1, "workloads": {"templates": [{"weight": 1}]}}
    setting = parse_setting(f'autoscaler["{CLASS}"].failureProbability=0.5')
    assert apply(doc, [(setting, 0.5)])["autoscaler"] == {CLASS: {"failureProbability": 0.5}}
    assert doc["autoscaler"] == {}  # a copy
    assert apply(doc, [(parse_setting("workloads.templates[0].weight=3"), 3)])["workloads"]["templates"] == [
        {"weight": 3}]
    with pytest.raises(SettingError, match=r"^--set seed.x=1: seed is the value 1, it has no key 'x'$"):
        apply(doc, [(parse_setting("seed.x=1"), 1)])
    with pytest.raises(SettingError, match=r"workloads.templates has 1 items, no \[4\]"):
        apply(doc, [(parse_setting("workloads.templates[4].weight=1"), 1)])


def test_an_error_on_a_key_a_setting_created_is_the_settings_and_no_other() -> None:
    """Only the first key a setting adds makes the error there its own: an error on a field the
    file already has (its parent ``workloads``) stays the file's."""
    doc = {"seed": 1, "workloads": {"count": 3, "templates": [{"weight": 1}]}}
    assert first_created(doc, parse_setting("arrival.rate=1")) == "arrival"
    assert first_created(doc, parse_setting("arrival.poisson.rate=1")) == "arrival"
    assert first_created(doc, parse_setting("workloads.count=5")) is None
    assert first_created(doc, parse_setting("workloads.templates[0].weight=2")) is None
    assert first_created(doc, parse_setting("seed=2")) is None


def test_flatten() -> None:
    assert flatten({"a": 1, "b": {"c": 2, "d": {"e": None}}}) == {"a": 1, "b.c": 2, "b.d.e": None}


# --- the grid ------------------------------------------------------------------------------------


def test_the_grid_is_every_combination_each_validated(tmp_path: Path) -> None:
    document = load_document(simulation_file(tmp_path))
    settings = [parse_setting("retryStrategy.backoffLimitCount=0,5"),
                parse_setting(f'autoscaler["{CLASS}"].failureProbability=0.1,0.9,1')]
    points = grid(document, settings, count=3)
    assert [p.values for p in points] == [(0, 0.1), (0, 0.9), (0, 1), (5, 0.1), (5, 0.9), (5, 1)]
    prc = next(o for o in points[4].simulation.setup if o.KIND == "ProvisioningRequestConfig")
    assert prc.spec.retry_strategy.backoff_limit_count == 5  # type: ignore[attr-defined]
    assert points[4].simulation.autoscaler[CLASS].failure_probability == 0.9
    assert all(p.simulation.count == 3 for p in points)


@pytest.mark.parametrize(("text", "message"), [
    (f'autoscaler["{CLASS}"].failureProbability=0.5,2',
     f"--set autoscaler[\"{CLASS}\"].failureProbability=2: Simulation small: autoscaler[{CLASS}].failureProbability: "
     "must be less than or equal to 1"),
    (f'autoscaler["{CLASS}"].failureProbabilty=0.5',
     f"--set autoscaler[\"{CLASS}\"].failureProbabilty=0.5: Simulation small: autoscaler[{CLASS}].failureProbabilty: "
     "unknown field"),
    ("retryStrategy.backoffLimitCount=many",
     "--set retryStrategy.backoffLimitCount=many: ProvisioningRequestConfig prc: "
     "setup.manifests[4].spec.retryStrategy.backoffLimitCount:"),
    ("jobs.runningTime=soon", "--set jobs.runningTime=soon: Simulation small: jobs.runningTime: invalid duration"),
    ("arrival.rate=1", "--set arrival.rate=1: Simulation small: arrival: unknown field"),  # the key the setting made
])
def test_a_bad_value_names_its_setting(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ManifestError) as e:
        grid(load_document(simulation_file(tmp_path)), [parse_setting(text)])
    assert str(e.value).startswith(message)


def test_sweep_command_bad_paths_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = simulation_file(tmp_path)
    for setting, message in (("seed.x=1", "--set seed.x=1: seed is the value 5, it has no key 'x'"),
                             ("workloads[0]=1", "--set workloads[0]=1: workloads is a mapping, it has no [0]"),
                             ("nothing", "--set nothing: expected PATH=V1,V2,...")):
        assert cli.main(["sweep", str(path), "--set", setting]) == 2
        out, err = capsys.readouterr()
        assert out == "" and err == f"kueue-provreq: error: {message}\n"
    assert cli.main(["sweep", str(path), "--set", "seed=1", "-j", "0"]) == 2
    assert "-j: must be at least 1" in capsys.readouterr().err


# --- running it ----------------------------------------------------------------------------------


def test_the_same_rows_in_process_in_worker_processes_and_on_dask(tmp_path: Path) -> None:
    document = load_document(simulation_file(tmp_path))
    texts = ["retryStrategy.backoffBaseSeconds=10,120", f'autoscaler["{CLASS}"].failureProbability=0.2,0.6']
    settings = [parse_setting(t) for t in texts]
    points = grid(document, settings, count=10)
    here = sweep(texts, points, jobs=1)
    assert here == sweep(texts, points, jobs=2)
    assert here == sweep(texts, points, jobs=2, dask="local")
    assert [tuple(r[t] for t in texts) for r in here.rows] == [(10, 0.2), (10, 0.6), (120, 0.2), (120, 0.6)]
    assert here.rows[0]["workloads"] == 10


def test_sweep_writes_its_csv_and_a_plot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = simulation_file(tmp_path)
    out = tmp_path / "out"
    status = cli.main(["sweep", str(path), "--workloads", "6", "-j", "1", "--out", str(out), "--replications", "1",
                       "--set", "retryStrategy.backoffLimitCount=0,2", "--set", "seed=1,2"])
    assert status == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split()[:3] == ["retryStrategy.backoffLimitCount", "seed", "finished"] and len(table) == 5
    rows = list(csv.DictReader((out / "sweep.csv").open()))
    assert len(rows) == 4
    columns = list(rows[0])
    assert columns[:4] == ["retryStrategy.backoffLimitCount", "seed", "simulation", "seed"][:2] + columns[2:4]
    assert "admissionLatencySeconds.p90" in columns and "provisioningRequests.created" in columns
    assert (out / "sweep.png").stat().st_size > 10_000
    assert cli.main(["sweep", str(path), "--workloads", "4", "-j", "1", "-o", "json", "--replications", "1",
                     "--set", "retryStrategy.backoffLimitCount=1"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["retryStrategy.backoffLimitCount"] == 1


def test_one_parameter_gives_a_line_plot_three_small_multiples_and_one_point_none(tmp_path: Path) -> None:
    from kueue_provreq.simulation import plots

    rows = [{"a": v, "b": 1, "c": 2, "deactivated": v, "timeToRunningSeconds.p50": 60 * v,
             "timeToRunningSeconds.p90": 90 * v, "timeToRunningSeconds.p99": None} for v in (1, 2, 3)]
    assert plots.sweep_plot(["a", "b"], rows, tmp_path / "line.png") == tmp_path / "line.png"
    assert plots.sweep_plot(["a", "b"], rows[:1], tmp_path / "one.png") is None
    grid_rows = [{**r, "b": b, "c": c} for r in rows for b in (1, 2) for c in (3, 4, 5)]
    drawn: list[tuple[Any, ...]] = []
    cells = plots._cells

    def spy(ax: Any, mine: Any, *rest: Any) -> Any:
        drawn.append((ax, len(mine)))
        return cells(ax, mine, *rest)

    plots._cells = spy  # type: ignore[assignment]
    try:
        assert plots.sweep_plot(["a", "b", "c"], grid_rows, tmp_path / "multiples.png") == tmp_path / "multiples.png"
    finally:
        plots._cells = cells  # type: ignore[assignment]
    assert [n for _, n in drawn] == [6, 6, 6] and len({id(ax) for ax, _ in drawn}) == 3  # a panel per value of c
    assert (tmp_path / "multiples.png").stat().st_size > 10_000


def test_a_ranked_plot_colours_the_objective_and_hatches_what_breaks_a_constraint(tmp_path: Path) -> None:
    from kueue_provreq.simulation import plots
    from matplotlib.patches import Rectangle

    rows = [{"a": a, "b": b, "objective": 10 * a + b, "feasible": a > 1, "rank": None if a == 1 else (a - 2) * 2 + b,
             "deactivated": 0} for a in (1, 2, 3) for b in (1, 2)]
    seen: list[Any] = []
    cells = plots._cells

    def spy(ax: Any, *rest: Any) -> Any:
        image = cells(ax, *rest)
        seen.append((ax, image))
        return image

    plots._cells = spy  # type: ignore[assignment]
    try:
        plots.sweep_plot(["a", "b"], rows, tmp_path / "ranked.png", "p90(timeToRunning)")
    finally:
        plots._cells = cells  # type: ignore[assignment]
    ((ax, image),) = seen
    hatched = [p for p in ax.patches if isinstance(p, Rectangle) and p.get_hatch()]
    assert sorted((p.get_y() + 0.5, p.get_x() + 0.5) for p in hatched) == [(0, 0), (0, 1)]  # a = 1: infeasible
    assert image.get_array().tolist() == [[11, 12], [21, 22], [31, 32]]  # the objective, not a latency
    assert [t.get_position() for t in ax.texts if t.get_text().startswith("#1\n21")] == [(0, 1)]  # the best
def test_a_parallel_sweep_starts_its_most_expensive_points_first(tmp_path: Path) -> None:
    document = load_document(simulation_file(tmp_path, horizon="2h"))
    texts = ["workloads.count=5,40,10", "workloads.arrival.ratePerHour=30,3"]
    points = grid(document, [parse_setting(t) for t in texts])
    sims = [p.simulation for p in points]
    order = expensive_first(sims)
    # arrivals x (count / rate + 2h): 40 x 55,200 s, 40 x 12,000, 10 x 19,200, 10 x 8,400, 5 x 13,200, 5 x 7,800
    assert [points[i].values for i in order] == [(40, 3), (40, 30), (10, 3), (10, 30), (5, 3), (5, 30)]
    costs = [cost_estimate(sims[i]) for i in order]
    assert costs == sorted(costs, reverse=True) and costs[-1] > 0


def test_worker_processes_are_given_the_expensive_points_first_and_rows_stay_in_grid_order(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    document = load_document(simulation_file(tmp_path, horizon="2h"))
    points = grid(document, [parse_setting("workloads.count=5,40,10")])
    submitted: list[int] = []

    class Pool:
        """Runs nothing: answers each point with its arrivals, noting the order it was given."""

        def __init__(self, **_: object) -> None: ...

        def __enter__(self) -> Pool:
            return self

        def __exit__(self, *_: object) -> None: ...

        def submit(self, _: object, sim: Simulation) -> Future[dict[str, int]]:
            submitted.append(sim.count)
            future: Future[dict[str, int]] = Future()
            future.set_result({"workloads": sim.count})
            return future

    # the module, which the package's ``sweep`` (the function) hides
    monkeypatch.setattr(sys.modules["kueue_provreq.simulation.sweep"], "ProcessPoolExecutor", Pool)
    result = sweep(["workloads.count"], points, jobs=2)
    assert submitted == [40, 10, 5]
    assert [r["workloads"] for r in result.rows] == [5, 40, 10]


# --- replications --------------------------------------------------------------------------------


def test_each_point_runs_its_replications_and_the_csv_has_their_intervals(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = simulation_file(tmp_path)
    out = tmp_path / "out"
    status = cli.main(["sweep", str(path), "--workloads", "8", "-j", "1", "--out", str(out),
                       "--set", f'autoscaler["{CLASS}"].failureProbability=0,0.5'])
    assert status == 0
    table = capsys.readouterr().out.splitlines()
    assert len(table) == 3 and " ± " in table[1]
    rows = list(csv.DictReader((out / "sweep.csv").open()))
    assert len(rows) == 2 and all(r["replications"] == "3" for r in rows)
    for row in rows:
        for figure in ("finished", "admissionLatencySeconds.p90", "provisioningRequests.created"):
            low, mean, high = (float(row[f"{figure}.{part}"]) for part in ("ci95_low", "mean", "ci95_high"))
            assert low <= mean <= high
        assert "finished" not in row
    # the default three replications are the seeds simulate --replications 3 uses: the same means
    document = load_document(path)
    points = grid(document, [parse_setting(f'autoscaler["{CLASS}"].failureProbability=0.5')], count=8,
                  replications=3)
    result = sweep(["p"], points, jobs=1)
    assert result.rows[0]["provisioningRequests.created.mean"] == float(rows[1]["provisioningRequests.created.mean"])
    created = [run["provisioningRequests.created"] for run in result.samples[0]]
    assert len(created) == 3 and sum(created) / 3 == pytest.approx(result.rows[0]["provisioningRequests.created.mean"],
                                                                       abs=1e-3)


def test_the_grid_limit_counts_points_times_replications(tmp_path: Path) -> None:
    document = load_document(simulation_file(tmp_path))
    settings = [parse_setting("seed=" + ",".join(str(i) for i in range(101))),
                parse_setting("retryStrategy.backoffLimitCount=" + ",".join(str(i) for i in range(34)))]
    with pytest.raises(SettingError, match=r"3,434 points \(times 3 replications\), more than 10,000 simulations"):
        grid(document, settings, replications=3)


# --- objective and constraints ---------------------------------------------------------------------


FIGURES = {"workloads": 10, "deactivated": 2, "finished": 8, "admissionLatencySeconds.p90": 120,
           "admissionLatencySeconds.p50": None, "timeToRunningSeconds.p90": 150, "timeToRunningSeconds.p50": None,
           "quotaHeldWaiting.cpu": 2.5, "clusterQueues.team-a.workloads": 4,
           "clusterQueues.team-a.deactivated": 1, "evictions.AdmissionCheck": 3}


@pytest.mark.parametrize(("text", "value"), [
    ("p90(timeToRunning)", 150), ("p90(admissionLatency)", 120), ("admissionLatencySeconds.p90 / 60", 2),
    ("deactivatedShare", 0.2), ('clusterQueues["team-a"].deactivatedShare', 0.25), ("-finished + 2 * 3", -2),
    ("evictions.AdmissionCheck + evictions.PodsReadyTimeout", 3), ("p50(timeToRunning)", None),
    ('quotaHeldWaiting.cpu + quotaHeldWaiting["nvidia.com/gpu"]', 2.5),
    ("finished / (deactivated - 2)", None),
])
def test_expressions_over_a_summarys_figures(text: str, value: float | None) -> None:
    from kueue_provreq.simulation.objective import parse

    assert parse("--objective", text, comparison=False).value(FIGURES) == value


@pytest.mark.parametrize(("text", "comparison", "message"), [
    ("__import__('os').system('true')", False, "\"__import__('os').system('true')\" is not a figure"),
    ("finished ** 2", False, "'finished ** 2' is not a figure"),
    ("finished if pending else 1", False, "is not a figure"),
    ("'finished'", False, "is not a figure"),
    ("finished <=", True, "not an expression"),
    ("finished", True, "must be a comparison"),
    ("finished < 3", False, "must be arithmetic"),
    ("finished in 3", True, "In is not a comparison it knows"),
    ("p90(a, b)", False, "p90() takes one latency figure"),
])
def test_expressions_outside_the_language_are_refused_by_name(text: str, comparison: bool, message: str) -> None:
    from kueue_provreq.simulation.objective import ExpressionError, parse

    with pytest.raises(ExpressionError, match=r"^--x ") as caught:
        parse("--x", text, comparison=comparison)
    assert message in str(caught.value)


def test_an_unknown_figure_is_named() -> None:
    from kueue_provreq.simulation.objective import ExpressionError, parse

    with pytest.raises(ExpressionError, match=r"no figure 'finishd' in the summary \(figures: workloads, "):
        parse("--objective", "finishd", comparison=False).value(FIGURES)


def test_points_are_ranked_feasible_first_and_the_best_is_tested_against_the_runner_up() -> None:
    from kueue_provreq.simulation.objective import judge, order, parse, verdict
    from scipy import stats

    def point(latencies: list[int], deactivated: int) -> list[dict[str, int]]:
        return [{"workloads": 100, "deactivated": deactivated, "timeToRunningSeconds.p90": v} for v in latencies]

    samples = [point([50, 52, 51], 30), point([100, 110, 105], 0), point([80, 81, 79], 1), point([90, 95, 85], 0)]
    goal = parse("--objective", "p90(timeToRunning)", comparison=False)
    standings = judge(samples, goal, [parse("--constraint", "deactivatedShare <= 0.01", comparison=True)])
    assert [s.rank for s in standings] == [None, 3, 1, 2]
    assert standings[0].broken == ("deactivatedShare <= 0.01",) and not standings[0].feasible
    assert order(standings) == [2, 3, 1, 0]
    assert standings[2].mean == 80 and standings[2].low == pytest.approx(80 - 4.302653 / 3 ** 0.5, abs=1e-4)
    a, b = [80.0, 81.0, 79.0], [90.0, 95.0, 85.0]
    se2 = [stats.tvar(x) / 3 for x in (a, b)]
    t = (80 - 90) / sum(se2) ** 0.5
    df = sum(se2) ** 2 / sum(v ** 2 / 2 for v in se2)
    p = 2 * stats.t.sf(abs(t), df)
    text = verdict(standings, ["a", "b", "c", "d"])
    assert text == f"best: c: objective 80, 95% CI [77.52, 82.48]; runner-up d: 90; not significantly better " \
                   f"(Welch's t-test, p = {p:.3g})"
    assert verdict(judge(samples[:2], goal, []), ["a", "b"]).endswith("significantly better (Welch's t-test, p = "
                                                                       f"{stats.ttest_ind([50, 52, 51], [100, 110, 105], equal_var=False).pvalue:.3g})")
    assert verdict(judge([samples[0]], goal, [parse("--constraint", "deactivated < 1", comparison=True)]),
                   ["a"]) == "no point meets every constraint with a value of the objective"


def test_a_ranked_sweep_writes_objective_feasible_and_rank(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    status = cli.main(["sweep", str(EXAMPLES / "retry-strategy-sweep.yaml"), "--workloads", "20", "-j", "1",
                       "--out", str(out), "--set", "retryStrategy.backoffLimitCount=0,3,5",
                       "--objective", "p90(timeToRunning)", "--constraint", "deactivatedShare <= 0.01"])
    assert status == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split()[:2] == ["rank", "objective"] and table[-1].startswith("best: ")
    rows = list(csv.DictReader((out / "sweep.csv").open()))
    assert list(rows[0])[1:7] == ["objective", "objective.ci95_low", "objective.ci95_high", "feasible", "rank", "breaks"]
    ranked = [r for r in rows if r["rank"]]
    assert [int(r["rank"]) for r in ranked] == list(range(1, len(ranked) + 1)) and rows[:len(ranked)] == ranked
    assert all(r["feasible"] == "True" and float(r["deactivated.mean"]) / 20 <= 0.01 for r in ranked)
    assert [float(r["objective"]) for r in ranked] == sorted(float(r["objective"]) for r in ranked)
    assert all(float(r["objective"]) == float(r["timeToRunningSeconds.p90.mean"]) for r in ranked)
    assert all(r["feasible"] == "False" and r["breaks"] == "deactivatedShare <= 0.01" for r in rows if not r["rank"])
    assert [r["retryStrategy.backoffLimitCount"] for r in rows if not r["rank"]] == ["0"]  # no retry: deactivations


def test_ranking_options_are_checked_before_any_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(simulation_file(tmp_path))
    assert cli.main(["sweep", path, "--set", "seed=1", "--constraint", "finished > 1"]) == 2
    assert "--constraint: needs --objective" in capsys.readouterr().err
    assert cli.main(["sweep", path, "--set", "seed=1", "--objective", "os.system('x')"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--objective \"os.system('x')\"" in err
