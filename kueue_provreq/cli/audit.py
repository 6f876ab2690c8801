"""``kueue-provreq audit``: a cluster snapshot against the model's guarantees."""

from __future__ import annotations

import argparse

from kueue_provreq.api.config import Configuration
from kueue_provreq.cli import options
from kueue_provreq.cli.inputs import read_input
from kueue_provreq.cli.output import print_data


def register(subparsers: argparse._SubParsersAction[options.Parser]) -> None:
    cmd = options.add_command(
        subparsers, "audit", run,
        help="check a cluster snapshot: broken invariants, orphans, misconfiguration, stuck work",
        description="Check the objects of a dump (-f) or a live cluster (--kubeconfig) against what "
                    "the model guarantees and print one line per finding with its object and rule. "
                    "Broken invariants, orphans and duplicate requests are errors (exit status 1); "
                    "misconfiguration and stuck work are warnings (exit status 0, or 1 with --strict).")
    options.input_sources(cmd)
    options.output(cmd, ("table", "yaml", "json"))
    cmd.add_argument("--strict", action="store_true", help="exit with status 1 on warnings too")
    cmd.add_argument("--overdue", metavar="DURATION", default="5m",
                     help="how long past its time a Retry, or a Provisioned request whose check is "
                          "still Pending, is reported (default 5m)")
    cmd.add_argument("--quota-wait", metavar="DURATION", default="30m",
                     help="how long a workload may hold quota while its checks are not Ready (default 30m)")


def run(args: argparse.Namespace) -> int:
    from kueue_provreq.audit import Thresholds, audit

    limits = Thresholds(overdue=options.duration("--overdue", args.overdue),
                        quota_wait=options.duration("--quota-wait", args.quota_wait))
    config = options.configuration(args) or Configuration()
    given = read_input(args, config)
    report = audit(given.objects, given.now, limits, given.unread, config)
    if args.output == "table":
        print(report.table(), end="")
    else:
        print_data(report.to_json(), args.output)
    return report.exit_status(args.strict)
