"""``kueue-provreq sweep SIMULATION.yaml --set PATH=V1,V2``: one simulation per point of a grid."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from kueue_provreq.cli import folder, options
from kueue_provreq.cli.output import print_data
from kueue_provreq.extras import SIM, require


def register(subparsers: argparse._SubParsersAction[options.Parser]) -> None:
    cmd = options.add_command(
        subparsers, "sweep", run, help="one simulation per point of a grid of settings",
        description="Run the simulation once per combination of the --set values (each with the "
                    "file's seed, or --seed), in parallel, and print one row per point; --out DIR "
                    "writes sweep.csv and a plot.")
    options.simulation(cmd)
    options.replications(cmd, 3)
    options.output(cmd, ("table", "csv", "yaml", "json"))
    options.out_folder(cmd, "sweep.csv and a plot")
    cmd.add_argument("--set", action="append", required=True, dest="settings", metavar="PATH=V1,V2,...",
                     help="values for a field, by its dotted path in the simulation file (a key "
                          "with dots in brackets: autoscaler[\"check-capacity.autoscaling.x-k8s.io\"]"
                          ".failureProbability); retryStrategy.backoffLimitCount, "
                          "retryStrategy.backoffBaseSeconds and retryStrategy.backoffMaxSeconds set "
                          "every ProvisioningRequestConfig; repeatable")
    cmd.add_argument("-j", "--jobs", type=int, default=None, metavar="N",
                     help="worker processes (default: the CPU count)")
    cmd.add_argument("--dask", metavar="ADDRESS", default=None,
                     help="run the points on the Dask scheduler at ADDRESS (tcp://host:8786), or "
                          "'local' to start a local Dask cluster of -j workers")


def run(args: argparse.Namespace) -> int:
    from kueue_provreq.simulation import grid, load_document, parse_setting, sweep
    from kueue_provreq.simulation.progress import progress_bar
    from kueue_provreq.simulation.replicate import MAX_REPLICATIONS
    from kueue_provreq.simulation.spec import MAX_WORKLOADS
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
    config = options.configuration_file(args.config)
    document = load_document(args.simulation)
    settings = [parse_setting(text) for text in args.settings]
    points = grid(document, settings, config=config, count=args.workloads, seed=args.seed,
                  replications=args.replications)
    parameters = [setting.text for setting in settings]
    with progress_bar(len(points) * args.replications, "runs", args.quiet) as progress:
        result = sweep(parameters, points, jobs=args.jobs, dask=args.dask, progress=progress)
    if args.out is not None:
        folder.write("--out", target, result.write)
    if args.output == "csv":
        print(result.csv(), end="")
    elif args.output == "table":
        print(_table(parameters, result.rows), end="")
    else:
        print_data(list(result.rows), args.output)
    return 0


def _table(parameters: Sequence[str], rows: Sequence[dict[str, Any]]) -> str:
    """One line per point: its values, outcomes and admission latency (with replications:
    mean ± the 95% interval's half-width)."""
    header = [*parameters, "finished", "admitted", "deactivated", "pending", "p50", "p90", "p99"]
    keys = ["finished", "admitted", "deactivated", "pending", "admissionLatencySeconds.p50",
            "admissionLatencySeconds.p90", "admissionLatencySeconds.p99"]
    table = [header] + [[str(r[p]) for p in parameters] + [_cell(r, k) for k in keys] for r in rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    return "".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() + "\n"
                   for row in table)


def _cell(row: dict[str, Any], key: str) -> str:
    if f"{key}.mean" in row:
        mean, low, high = (row[f"{key}.{part}"] for part in ("mean", "ci95_low", "ci95_high"))
        return f"{mean:g} ± {(high - low) / 2:.3g}"
    return "-" if row.get(key) is None else str(row[key])
