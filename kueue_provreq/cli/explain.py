"""``kueue-provreq explain``: what each controller would do next to manifests or a live cluster, and why."""

from __future__ import annotations

import argparse

from kueue_provreq.api.config import Configuration
from kueue_provreq.cli import options
from kueue_provreq.cli.inputs import read_input
from kueue_provreq.cli.output import print_data
from kueue_provreq.explain import explain


def register(subparsers: argparse._SubParsersAction[options.Parser]) -> None:
    cmd = options.add_command(
        subparsers, "explain", run, help="say what each controller would do next to manifests, and why",
        description="Load the manifests (Kueue objects, ProvisioningRequests, PodTemplates, and "
                    "Jobs, JobSets and PyTorchJobs, which get their Workload as Kueue's job "
                    "integrations create it), run every controller's reconcile once at TIME, and "
                    "print where each job, workload and admission check stands, with the rule that "
                    "decides it, then each controller's next effects. As kubectl apply does, an "
                    "object the API server would refuse is left out and reported (exit status 2). "
                    "With --kubeconfig it reads the same objects from a live cluster (list calls only).")
    options.input_sources(cmd)
    options.output(cmd, ("table", "yaml", "json"))


def run(args: argparse.Namespace) -> int:
    config = options.configuration(args) or Configuration()
    given = read_input(args, config, keep_going=True)
    report = explain(given.objects, given.now, config, given.clock)
    if args.output == "table":
        print(report.table(), end="")
    else:
        print_data(report.to_json(), args.output)
    return 2 if given.refused else 0
