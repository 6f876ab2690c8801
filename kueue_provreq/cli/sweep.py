"""``kueue-provreq sweep SIMULATION.yaml --set PATH=V1,V2``: one simulation per point of a grid."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import attrs

from kueue_provreq.api.config import Configuration
from kueue_provreq.cli import folder, options
from kueue_provreq.cli.inputs import note_left_out, starting_state
from kueue_provreq.cli.output import print_data
from kueue_provreq.extras import SIM, require

if TYPE_CHECKING:
    from kueue_provreq.simulation.objective import Standing


def register(subparsers: argparse._SubParsersAction[options.Parser]) -> None:
    cmd = options.add_command(
        subparsers, "sweep", run, help="one simulation per point of a grid of settings",
        description="Run the simulation once per combination of the --set values (each with the "
                    "file's seed, or --seed), in parallel, and print one row per point; --out DIR "
                    "writes sweep.csv and a plot.")
    options.simulation(cmd)
    options.starting_state(cmd)
    options.replications(cmd, 3)
    options.output(cmd, ("table", "csv", "yaml", "json"))
    options.out_folder(cmd, "sweep.csv and a plot")
    cmd.add_argument("--set", action="append", required=True, dest="settings", metavar="PATH=V1,V2,...",
                     help="values for a field, by its dotted path in the simulation file (a key "
                          "with dots in brackets: autoscaler[\"check-capacity.autoscaling.x-k8s.io\"]"
                          ".failureProbability); retryStrategy.backoffLimitCount, "
                          "retryStrategy.backoffBaseSeconds and retryStrategy.backoffMaxSeconds set "
                          "every ProvisioningRequestConfig; repeatable")
    cmd.add_argument("--objective", metavar="EXPR", default=None,
                     help="rank the points by this expression over the summary's figures, smaller "
                          "first (docs: 'Rank the points'), e.g. 'p90(timeToRunning)'")
    cmd.add_argument("--constraint", action="append", default=[], metavar="EXPR", dest="constraints",
                     help="a comparison every ranked point must meet, e.g. 'deactivatedShare <= 0.01'; "
                          "repeatable (needs --objective)")
    cmd.add_argument("-j", "--jobs", type=int, default=None, metavar="N",
                     help="worker processes (default: the CPU count)")
    cmd.add_argument("--dask", metavar="ADDRESS", default=None,
                     help="run the points on the Dask scheduler at ADDRESS (tcp://host:8786), or "
                          "'local' to start a local Dask cluster of -j workers")


def run(args: argparse.Namespace) -> int:
    from kueue_provreq.simulation import grid, load_document, parse_setting, sweep
    from kueue_provreq.simulation import objective as obj
    from kueue_provreq.simulation.progress import progress_bar
    from kueue_provreq.simulation.replicate import MAX_REPLICATIONS
    from kueue_provreq.simulation.spec import MAX_WORKLOADS, left_out, parse
    from kueue_provreq.simulation.sweep import check_scheduler

    options.at_least("-j", args.jobs, 1)
    options.between("--workloads", args.workloads, 1, MAX_WORKLOADS)
    options.at_least("--seed", args.seed, 0)
    options.between("--replications", args.replications, 1, MAX_REPLICATIONS)
    if args.out is not None:
        options.plots_available("--out")
        target = folder.check("--out", args.out, args.force)
    if args.dask is not None:
        require(SIM, "dask.distributed", "--dask")
        check_scheduler(args.dask)  # before any work
    if args.constraints and args.objective is None:
        raise options.UsageError("--constraint: needs --objective (what to rank the feasible points by)")
    goal = None if args.objective is None else obj.parse("--objective", args.objective, comparison=False)
    constraints = [obj.parse("--constraint", text, comparison=True) for text in args.constraints]
    config = options.configuration_file(args.config)
    document = load_document(args.simulation)
    settings = [parse_setting(text) for text in args.settings]
    # the file as it is: how to read the cluster (its semantics switches), and its own setup
    plain = parse(document, config=config, count=args.workloads, seed=args.seed) \
        if args.filename is not None or args.kubeconfig is not None else None
    cluster = starting_state(args, plain.config if plain is not None else Configuration())
    points = grid(document, settings, config=config, count=args.workloads, seed=args.seed,
                  replications=args.replications, cluster=cluster,
                  warm_up=options.duration("--warm-up", args.warm_up))
    if cluster is not None and plain is not None:
        note_left_out(cluster, left_out(cluster.objects, plain.setup, points[0].simulation.setup))
    parameters = [setting.text for setting in settings]
    with progress_bar(len(points) * args.replications, "runs", args.quiet) as progress:
        result = sweep(parameters, points, jobs=args.jobs, dask=args.dask, progress=progress)
    verdict = None
    if goal is not None:
        standings = obj.judge(result.samples, goal, constraints)
        result = attrs.evolve(result, rows=tuple(_ranked(parameters, r, s) for r, s in zip(result.rows, standings,
                                                                                              strict=True)),
                              order=tuple(obj.order(standings)), objective=goal.text)
        labels = [", ".join(f"{p}={r[p]}" for p in parameters) for r in result.rows]
        verdict = obj.verdict(standings, labels)
    if args.out is not None:
        folder.write("--out", target, result.write)
    rows = [result.rows[i] for i in result.order or range(len(result.rows))]
    if args.output == "csv":
        print(result.csv(), end="")
    elif args.output == "table":
        print(_table(parameters, rows, ranked=goal is not None), end="")
        if verdict is not None:
            print(verdict)
    else:
        print_data(rows, args.output)
    return 0


def _ranked(parameters: Sequence[str], row: dict[str, Any], standing: Standing) -> dict[str, Any]:
    """The row with the objective (its interval with replications), feasibility and rank after
    its parameters."""
    head = {p: row[p] for p in parameters}
    judged: dict[str, Any] = {"objective": _round(standing.mean)}
    if len(standing.values) > 1:
        judged |= {"objective.ci95_low": _round(standing.low), "objective.ci95_high": _round(standing.high)}
    judged |= {"feasible": standing.feasible, "rank": standing.rank,
               "breaks": "; ".join(standing.broken)}
    return {**head, **judged, **{k: v for k, v in row.items() if k not in head}}


def _table(parameters: Sequence[str], rows: Sequence[dict[str, Any]], ranked: bool = False) -> str:
    """One line per point: its values, outcomes and time to running with the share censored
    (with replications: mean ± the 95% interval's half-width); ranked: its rank and objective
    first, and the constraints it breaks last."""
    header = [*parameters, "finished", "admitted", "deactivated", "pending", "running p50", "p90", "p99",
              "censored"]
    keys = ["finished", "admitted", "deactivated", "pending", *(f"timeToRunningSeconds.{k}" for k in
                                                                ("p50", "p90", "p99", "censoredShare"))]
    table = [header] + [[str(r[p]) for p in parameters] + [_cell(r, k) for k in keys] for r in rows]
    if ranked:
        table = [["rank", "objective", *table[0], "breaks"]] + [
            ["-" if r["rank"] is None else str(r["rank"]), _objective(r), *line, r["breaks"] or "-"]
            for r, line in zip(rows, table[1:], strict=True)]
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    return "".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() + "\n"
                   for row in table)


def _cell(row: dict[str, Any], key: str) -> str:
    if f"{key}.mean" in row:
        mean, low, high = (row[f"{key}.{part}"] for part in ("mean", "ci95_low", "ci95_high"))
        return f"{mean:g} ± {(high - low) / 2:.3g}"
    return "-" if row.get(key) is None else str(row[key])


def _objective(row: dict[str, Any]) -> str:
    if row["objective"] is None:
        return "-"
    if "objective.ci95_low" in row:
        return f"{row['objective']:.4g} ± {(row['objective.ci95_high'] - row['objective.ci95_low']) / 2:.3g}"
    return f"{row['objective']:.4g}"


def _round(value: float | None) -> float | None:
    """3 decimals, as the figures beside it."""
    return None if value is None else round(value, 3)
