"""``kueue-provreq forecast``: the whole future of each workload, Cluster Autoscaler scripted."""

from __future__ import annotations

import argparse

from kueue_provreq.api.config import Configuration
from kueue_provreq.api.provisioning import ProvisioningRequestConfig
from kueue_provreq.cli import options
from kueue_provreq.cli.inputs import read_input
from kueue_provreq.cli.output import note, print_data


def register(subparsers: argparse._SubParsersAction[options.Parser]) -> None:
    cmd = options.add_command(
        subparsers, "forecast", run, help="the whole future of each workload, Cluster Autoscaler scripted",
        description="Load the manifests as explain does (Jobs become their Workloads), then run the "
                    "controllers forward in time, Cluster Autoscaler answering each ProvisioningRequest "
                    "as SCRIPT says, until every workload is admitted, deactivated or finished, or "
                    "--until has passed. Prints each workload's timeline.")
    options.input_sources(cmd)
    options.output(cmd, ("table", "yaml", "json"))
    options.autoscaler_script(cmd)
    cmd.add_argument("--until", metavar="DURATION", default="24h",
                     help="stop this long after the start at the latest (default 24h)")


def run(args: argparse.Namespace) -> int:
    from kueue_provreq.autoscaler import retrying_classes
    from kueue_provreq.simulation import forecast

    script = options.script(args.autoscaler)
    until = options.duration("--until", args.until)
    config = options.configuration(args) or Configuration()
    given = read_input(args, config)
    configs = [o for o in given.objects if isinstance(o, ProvisioningRequestConfig)]
    for warning in retrying_classes(script, configs):
        note("warning", f"--autoscaler {args.autoscaler}: {warning}")
    result = forecast(given.objects, given.now, script, config, until)
    if args.output == "table":
        print(result.table(), end="")
    else:
        print_data(result.to_json(), args.output)
    return 0
