"""``kueue-provreq explore``: options in, a search, its size and time out; a counterexample as YAML.

Exit status 0 when every invariant held up to the depth, 1 when one was violated (the
shortest counterexample is printed as a conformance scenario).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from kueue_provreq import invariants as inv
from kueue_provreq.explore.scenario import to_scenario
from kueue_provreq.explore.search import GRANULARITIES, Options, Report, explore
from kueue_provreq.machines import RequestTrigger


def add_explore_command(subparsers: Any) -> None:
    """Register ``explore`` on the ``kueue-provreq`` command's subparsers."""
    p = subparsers.add_parser(
        "explore", help="exhaustively explore a small world and check every invariant",
        description="Breadth-first search over every interleaving of Cluster Autoscaler outcomes, "
                    "controller reconciles and clock advances in a world of one ClusterQueue, "
                    "1-2 workloads and 1-2 ProvisioningRequest checks; every reached state and "
                    "step is checked against kueue_provreq.invariants.  Prints the number of "
                    "states, the depth and the time; on a violation, the shortest trace as a "
                    "conformance scenario (exit status 1).")
    p.add_argument("--workloads", type=int, choices=(1, 2), default=1, help="identical workloads (default 1)")
    p.add_argument("--checks", type=int, choices=(1, 2), default=1, help="provisioning checks (default 1)")
    p.add_argument("--quota", type=int, default=None,
                   help="the ClusterQueue's quota in pods (default: one per workload; less makes them compete)")
    p.add_argument("--depth", type=int, default=12, help="steps after the initial settle (default 12)")
    p.add_argument("--backoff-limit", type=int, choices=range(4), default=1,
                   help="retryStrategy.backoffLimitCount of every check (0-3, default 1)")
    p.add_argument("--keep-quota", action="store_true", help="turn the KeepQuotaForProvReqRetry gate on")
    p.add_argument("--semantics", choices=(inv.CURRENT, inv.PRE_KEP_3258), default=inv.CURRENT,
                   help="admission check semantics: current (default) or pre-kep-3258 (Kueue < v0.15)")
    p.add_argument("--granularity", choices=GRANULARITIES, default="settle",
                   help="settle: controllers catch up fully after each event (default); "
                        "reconcile: every single reconcile is an interleaving point")
    p.add_argument("--no-symmetry", action="store_true", help="do not identify states that differ "
                                                               "only by which identical workload is which")
    p.add_argument("--outcomes", type=_outcomes, default=tuple(RequestTrigger), metavar="TRIGGER,...",
                   help="the ProvisioningRequest triggers Cluster Autoscaler may fire (default: all of "
                        + ", ".join(RequestTrigger) + ")")
    p.add_argument("--max-states", type=int, default=None, help="stop after this many states")
    p.add_argument("--scenario-out", type=Path, default=None,
                   help="write the counterexample scenario there instead of to stdout")
    p.set_defaults(func=run_explore)


def _outcomes(text: str) -> tuple[str, ...]:
    chosen = tuple(t.strip() for t in text.split(",") if t.strip())
    unknown = [t for t in chosen if t not in set(RequestTrigger)]
    if unknown or not chosen:
        raise argparse.ArgumentTypeError(f"unknown trigger(s) {', '.join(unknown)} (known: {', '.join(RequestTrigger)})")
    return chosen


def summary(report: Report, seconds: float) -> str:
    depth = f"depth {report.depth}" + (" (state space exhausted)" if report.complete else "")
    return f"{report.states} states, {report.transitions} transitions, {depth}, {seconds:.1f}s"


def run_explore(args: argparse.Namespace) -> int:
    opts = Options(workloads=args.workloads, checks=args.checks, depth=args.depth,
                   backoff_limit=args.backoff_limit, keep_quota=args.keep_quota, semantics=args.semantics,
                   granularity=args.granularity, symmetry=not args.no_symmetry, max_states=args.max_states,
                   quota=args.quota, outcomes=args.outcomes)
    start = time.perf_counter()

    def progress(depth: int, states: int) -> None:
        print(f"  depth {depth}: {states} states, {time.perf_counter() - start:.1f}s", file=sys.stderr, flush=True)

    report, ex = explore(opts, progress)
    print(summary(report, time.perf_counter() - start))
    v = report.violation
    if v is None:
        print("every invariant holds")
        return 0
    print("VIOLATION after " + " -> ".join(a.describe() for a in v.trace))
    for m in v.messages:
        print(f"  {m}")
    scenario = to_scenario(ex, v, f"explorer counterexample ({opts.semantics})",
                           "Found by kueue-provreq explore: " + "; ".join(v.messages))
    text = yaml.safe_dump(scenario, sort_keys=False, width=100)
    if args.scenario_out is not None:
        args.scenario_out.write_text(text)
        print(f"scenario written to {args.scenario_out}")
    else:
        print("---")
        print(text, end="")
    return 1
