"""``kueue-provreq testbed up|down|status``: a local control plane with the real Kueue.

``up`` prints the kubeconfig's path on standard output (and nothing else there), so that a
script can write ``export KUBECONFIG=$(kueue-provreq testbed up)``; progress and timings go to
standard error.  The control plane itself is :mod:`kueue_provreq.cluster.testbed`; this module is
the command's glue, registered like every other command.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kueue_provreq.cli import options
from kueue_provreq.cluster.testbed import controlplane as cp


def register(subparsers: argparse._SubParsersAction[options.Parser]) -> None:
    p = options.add_command(
        subparsers, "testbed", run, help="start or stop a local control plane with the real Kueue (built by `make oracle`)",
        description="etcd, kube-apiserver, kube-controller-manager (garbage collector and namespace "
                    "controller only) and the Kueue manager on 127.0.0.1, from the programs `make oracle` "
                    "builds; no Docker. `up` returns once Kueue is ready and prints the kubeconfig's path.")
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True, parser_class=options.Parser)
    up = actions.add_parser("up", help="start it; print the kubeconfig's path")
    up.add_argument("--kubeconfig-out", metavar="FILE", help="also copy the kubeconfig to FILE")
    up.add_argument("--timeout", type=float, default=cp.START_TIMEOUT, metavar="SECONDS",
                    help=f"give up (and stop what started) after this long (default {cp.START_TIMEOUT:.0f})")
    actions.add_parser("down", help="stop exactly the processes `up` started and remove the testbed's folder")
    actions.add_parser("status", help="say what runs")
    for action in (up, *[actions.choices[a] for a in ("down", "status")]):
        action.add_argument("--bin", metavar="DIR", help="where the programs are (default: .oracle/bin)")
        action.add_argument("--state", metavar="DIR",
                            help="the testbed's folder (default: .oracle/testbed beside the programs)")


def _folder(args: argparse.Namespace, oracle: cp.Oracle | None) -> Path:
    if args.state:
        return Path(args.state).resolve()
    if oracle is None:
        oracle = cp.find_oracle(args.bin)
    return cp.default_folder(oracle)


def run(args: argparse.Namespace) -> int:
    if args.action == "up":
        oracle = cp.find_oracle(args.bin)
        out = Path(args.kubeconfig_out).resolve() if args.kubeconfig_out else None
        print(f"testbed: starting {', '.join(cp.PROGRAMS)} from {oracle.bin}", file=sys.stderr)
        testbed = cp.up(oracle, _folder(args, oracle), out, args.timeout)
        versions = ", ".join(f"{k} {v}" for k, v in testbed.versions.items())
        print(f"testbed: ready in {testbed.started_in:.1f} s ({versions})", file=sys.stderr)
        print(out or testbed.kubeconfig)
        return 0
    folder = _folder(args, None if args.state else cp.find_oracle(args.bin))
    if args.action == "down":
        stopped = cp.down(folder)
        print(f"testbed: stopped {', '.join(stopped)}" if stopped else f"testbed: nothing runs from {folder}")
        return 0
    found = cp.status(folder)
    if found is None:
        print(f"testbed: none at {folder}")
        return 1
    testbed, running = found
    print(f"testbed at {testbed.folder}, kubeconfig {testbed.kubeconfig}")
    for proc in testbed.processes:
        state = "running" if running[proc.name] else "NOT RUNNING"
        print(f"  {proc.name:<24} pid {proc.pid:<8} {state:<12} log {proc.log}")
    return 0 if all(running.values()) else 1
