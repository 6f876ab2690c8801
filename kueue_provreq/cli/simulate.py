"""``kueue-provreq simulate SIMULATION.yaml``: many workloads over simulated time."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from kueue_provreq.cli import folder, options
from kueue_provreq.cli.inputs import note_left_out, starting_state
from kueue_provreq.cli.output import print_data


def register(subparsers: argparse._SubParsersAction[options.Parser]) -> None:
    cmd = options.add_command(
        subparsers, "simulate", run, help="run a simulation file: many workloads over time",
        description="Run the simulation a file describes (docs: 'Simulation file') and print its "
                    "summary; --out DIR also writes summary.json, workloads.csv and PNG plots.")
    options.simulation(cmd)
    options.starting_state(cmd)
    options.replications(cmd, 1)
    options.output(cmd, ("table", "yaml", "json"))
    options.out_folder(cmd, "summary.json, workloads.csv and the plots")


def run(args: argparse.Namespace) -> int:
    from kueue_provreq.simulation import load_document, parse, simulate
    from kueue_provreq.simulation import output as out
    from kueue_provreq.simulation.progress import progress_bar
    from kueue_provreq.simulation.replicate import MAX_REPLICATIONS, aggregate, replicas
    from kueue_provreq.simulation.spec import MAX_WORKLOADS, left_out

    options.between("--workloads", args.workloads, 1, MAX_WORKLOADS)
    options.at_least("--seed", args.seed, 0)
    options.between("--replications", args.replications, 1, MAX_REPLICATIONS)
    if args.out is not None:
        options.plots_available("--out")
        target = folder.check("--out", args.out, args.force)
    config = options.configuration_file(args.config)
    warm_up = options.duration("--warm-up", args.warm_up)
    document = load_document(args.simulation)
    sim = parse(document, config=config, count=args.workloads, seed=args.seed, warm_up=warm_up)
    cluster = starting_state(args, sim.config)
    if cluster is not None:
        setup = sim.setup
        sim = parse(document, config=config, count=args.workloads, seed=args.seed, cluster=cluster, warm_up=warm_up)
        note_left_out(cluster, left_out(cluster.objects, setup, sim.setup))
    runs = replicas(sim, args.replications)
    reports = []
    with progress_bar(sim.count * len(runs), "workloads", args.quiet) as progress:
        for i, replica in enumerate(runs):
            reports.append(simulate(replica, progress=None if progress is None else _offset(progress, i * sim.count)))
    report = reports[0]  # workloads.csv and the plots: the first replication's (the file's seed)
    summary = aggregate([r.summary.to_json() for r in reports])
    if args.out is not None:
        folder.write("--out", target, lambda staging: out.write(report, staging, summary=summary))
    if args.output == "table":
        print(out.table(report) if len(reports) == 1 else out.replicated_table(report, summary), end="")
    elif args.output == "json":
        print(out.summary_json(report, summary), end="")
    else:
        print_data(summary, args.output)
    return 0


def _offset(progress: Callable[[int], None], done: int) -> Callable[[int], None]:
    """A replication's progress, after the ``done`` workloads of those before it."""
    return lambda n: progress(done + n)
