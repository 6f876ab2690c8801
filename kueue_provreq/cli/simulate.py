"""``kueue-provreq simulate SIMULATION.yaml``: many workloads over simulated time."""

from __future__ import annotations

import argparse

from kueue_provreq.cli import folder, options
from kueue_provreq.cli.output import print_data


def register(subparsers: argparse._SubParsersAction[options.Parser]) -> None:
    cmd = options.add_command(
        subparsers, "simulate", run, help="run a simulation file: many workloads over time",
        description="Run the simulation a file describes (docs: 'Simulation file') and print its "
                    "summary; --out DIR also writes summary.json, workloads.csv and PNG plots.")
    options.simulation(cmd)
    options.output(cmd, ("table", "yaml", "json"))
    options.out_folder(cmd, "summary.json, workloads.csv and the plots")


def run(args: argparse.Namespace) -> int:
    from kueue_provreq.simulation import load_document, parse, simulate
    from kueue_provreq.simulation import output as out
    from kueue_provreq.simulation.progress import progress_bar
    from kueue_provreq.simulation.spec import MAX_WORKLOADS

    options.between("--workloads", args.workloads, 1, MAX_WORKLOADS)
    options.at_least("--seed", args.seed, 0)
    if args.out is not None:
        options.plots_available("--out")
        target = folder.check("--out", args.out, args.force)
    config = options.configuration_file(args.config)
    sim = parse(load_document(args.simulation), config=config, count=args.workloads, seed=args.seed)
    with progress_bar(sim.count, "workloads", args.quiet) as progress:
        report = simulate(sim, progress=progress)
    if args.out is not None:
        folder.write("--out", target, lambda staging: out.write(report, staging))
    if args.output == "table":
        print(out.table(report), end="")
    elif args.output == "json":
        print(out.summary_json(report), end="")
    else:
        print_data(report.summary.to_json(), args.output)
    return 0
