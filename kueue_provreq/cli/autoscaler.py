"""``kueue-provreq autoscaler --kubeconfig PATH``: play Cluster Autoscaler on a test cluster."""

from __future__ import annotations

import argparse
import time

from kueue_provreq.cli import options


def register(subparsers: argparse._SubParsersAction[options.Parser]) -> None:
    cmd = options.add_command(
        subparsers, "autoscaler", run, help="play Cluster Autoscaler for ProvisioningRequests on a test cluster",
        description="Watch the ProvisioningRequests of a (kind or test) cluster and answer them as "
                    "Cluster Autoscaler would, following SCRIPT: item i answers attempt i, the last item "
                    "repeats. It writes only ProvisioningRequest status, through the status "
                    "subresource. Runs until interrupted, or for --for DURATION.")
    options.cluster(cmd, required=True, namespace_help="answer requests of NS only (default: all namespaces)")
    options.autoscaler_script(cmd)
    cmd.add_argument("--for", dest="duration", metavar="DURATION", default=None,
                     help="stop after DURATION (default: run until interrupted)")


def run(args: argparse.Namespace) -> int:
    script = options.script(args.autoscaler)
    duration = options.duration("--for", args.duration) if args.duration is not None else None
    from kueue_provreq.cluster import client
    from kueue_provreq.cluster.autoscaler import StandIn

    def log(line: str) -> None:
        print(line, flush=True)

    try:
        with client.connect(args.kubeconfig, args.context) as api:
            log(f"answering ProvisioningRequests on {api.server} "
                f"({'namespace ' + args.namespace if args.namespace else 'all namespaces'}) with {script}")
            stand_in = StandIn(api, script, args.namespace, time.time, log)
            stand_in.run(None if duration is None else time.time() + duration)
    except KeyboardInterrupt:
        return 0
    return 0
