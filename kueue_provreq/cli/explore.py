"""``kueue-provreq explore``: options in, a search, its size and time out; a counterexample as YAML.

The search itself is :mod:`kueue_provreq.explore` (pure: no clock, no printing, no files); this
module is the command's glue, registered like every other command.

Exit status 0 when every invariant held in every state up to the depth; 1 when one was violated
(the shortest counterexample is printed as a conformance scenario, each violation labelled as
upstream behaviour when upstream is known to break that invariant under the semantics chosen,
else as a possible defect of the model), and 1 when ``--max-states`` cut the search short, since
the states it did not reach were not checked.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
from pathlib import Path

import yaml

from kueue_provreq import invariants as inv
from kueue_provreq.api.config import SEMANTICS_CURRENT
from kueue_provreq.cli import options
from kueue_provreq.explore.scenario import to_scenario
from kueue_provreq.explore.search import GRANULARITIES, Options, Report, explore
from kueue_provreq.machines import RequestTrigger


def register(subparsers: argparse._SubParsersAction[options.Parser]) -> None:
    p = options.add_command(
        subparsers, "explore", run, help="exhaustively explore a small world and check every invariant",
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
    options.semantics_switches(p, default=frozenset(), reads_manifests=False)
    p.add_argument("--granularity", choices=GRANULARITIES, default="settle",
                   help="settle: controllers catch up fully after each event (default); "
                        "reconcile: every single reconcile is an interleaving point")
    p.add_argument("--no-symmetry", action="store_true", help="do not identify states that differ "
                                                               "only by which identical workload is which")
    p.add_argument("--outcomes", type=_outcomes, default=tuple(RequestTrigger), metavar="TRIGGER,...",
                   help="the ProvisioningRequest triggers Cluster Autoscaler may fire (default: all of "
                        + ", ".join(RequestTrigger) + ")")
    p.add_argument("--preemption", action="store_true",
                   help="preemption within the ClusterQueue: with --workloads 2, the second workload has a "
                        "higher priority and arrives at any moment, and the quota (one pod unless --quota) "
                        "makes it preempt the first; under kep-993-preemption the checks are "
                        "AfterCheckPassedOrOnDemand")
    p.add_argument("--cohort", action="store_true",
                   help="a second ClusterQueue (cq2, no checks) in cohort team with cq lends it its quota: cq "
                        "holds one pod (or --quota) and borrows the rest; with --preemption, cq holds none, the "
                        "first workload borrows cq2's pod, and the second arrives in cq2 to reclaim it")
    p.add_argument("--max-states", type=int, default=None, help="stop after this many states")
    p.add_argument("--scenario-out", type=Path, default=None,
                   help="write the counterexample scenario there instead of to stdout")


def _outcomes(text: str) -> tuple[str, ...]:
    chosen = tuple(t.strip() for t in text.split(",") if t.strip())
    unknown = [t for t in chosen if t not in set(RequestTrigger)]
    if unknown or not chosen:
        raise argparse.ArgumentTypeError(f"unknown trigger(s) {', '.join(unknown)} (known: {', '.join(RequestTrigger)})")
    return chosen


def summary(report: Report, seconds: float) -> str:
    depth = f"depth {report.depth}" + (" (state space exhausted)" if report.complete else "")
    return f"{report.states} states, {report.transitions} transitions, {depth}, {seconds:.1f}s"


def semantics_label(switches: frozenset[str]) -> str:
    return ",".join(sorted(switches)) or SEMANTICS_CURRENT


def run(args: argparse.Namespace) -> int:
    options.at_least("--depth", args.depth, 0)
    options.at_least("--max-states", args.max_states, 1)
    options.at_least("--quota", args.quota, 0)
    opts = Options(workloads=args.workloads, checks=args.checks, depth=args.depth,
                   backoff_limit=args.backoff_limit, keep_quota=args.keep_quota, semantics=args.semantics,
                   granularity=args.granularity, symmetry=not args.no_symmetry, max_states=args.max_states,
                   quota=args.quota, outcomes=args.outcomes, preemption=args.preemption,
                   cohort=args.cohort)
    start = time.perf_counter()

    def progress(depth: int, states: int) -> None:
        print(f"  depth {depth}: {states} states, {time.perf_counter() - start:.1f}s", file=sys.stderr, flush=True)

    report, ex = explore(opts, progress)
    print(summary(report, time.perf_counter() - start))
    v = report.violation
    if v is None:
        if report.cut_off:
            print(f"search incomplete: --max-states {opts.max_states} stopped it at depth {report.depth}; "
                  f"no invariant is violated in the {report.states} states reached, the others were not checked")
            return 1
        print(f"every invariant holds in every state up to depth {report.depth}"
              + (", the whole state space" if report.complete else ""))
        return 0
    trace = " -> ".join(a.describe() for a in v.trace)
    print("VIOLATION after " + trace)
    labels = []
    for m in v.messages:
        record = inv.upstream_behaviour(m, ex.config)
        labels.append(f"upstream behaviour: {record}" if record is not None else
                      "not known upstream behaviour: a defect of the model, or an upstream bug to report")
        print(f"  {m}")
        print(f"    ({labels[-1]})")
    names = sorted({m.partition(":")[0] for m in v.messages})
    digest = hashlib.sha1(trace.encode()).hexdigest()[:6]
    scenario = to_scenario(
        ex, v, f"explorer counterexample {digest}: {', '.join(names)} ({semantics_label(opts.semantics)}, {opts.granularity})",
        f"Found by kueue-provreq explore after {trace}: "
        + "; ".join(f"{m} ({label})" for m, label in zip(v.messages, labels, strict=True)))
    text = yaml.safe_dump(scenario, sort_keys=False, width=100)
    if args.scenario_out is not None:
        args.scenario_out.write_text(text)
        print(f"scenario written to {args.scenario_out}")
    else:
        print("---")
        print(text, end="")
    return 1
