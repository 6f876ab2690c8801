"""``kueue-provreq conform PATH... [--cluster KUBECONFIG]``: run conformance scenarios and report.

Without ``--cluster`` the scenarios judge the model; with it, the real Kueue of a cluster: the
runner (:mod:`kueue_provreq.conformance`) drives the cluster port's driver
(:mod:`kueue_provreq.cluster.conform`), the two edges joined here.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kueue_provreq.cli import options
from kueue_provreq.conformance import runner
from kueue_provreq.conformance.runner import Outcome, Run, collect, conform, scenarios_in
from kueue_provreq.conformance.scenario import Scenario

if TYPE_CHECKING:
    from kueue_provreq.cluster.client import Client
    from kueue_provreq.cluster.testbed.controlplane import Testbed


def register(subparsers: argparse._SubParsersAction[options.Parser]) -> None:
    cmd = options.add_command(
        subparsers, "conform", run, help="run conformance scenarios and report PASS/FAIL",
        description="Run every scenario in PATHs (files, or folders searched recursively for "
                    "*.yaml). Prints 'PASS name' or 'FAIL name: step N: <first difference>' per "
                    "scenario, then 'N passed, M failed'. Exit status 0 only when M is 0. With "
                    "--cluster the real Kueue of that cluster is judged instead of the model; a "
                    "scenario it cannot run prints 'SKIP name: <reason>' and the closing line is "
                    "'N passed, M failed, K skipped'.")
    cmd.add_argument("paths", nargs="+", metavar="PATH", help="a scenario file or a folder")
    real = cmd.add_argument_group("the real Kueue")
    real.add_argument("--cluster", metavar="KUBECONFIG",
                      help="judge the real Kueue of this cluster instead of the model (a testbed's kubeconfig "
                           "also lets scenarios with a config restart Kueue, and lets metrics be read)")
    real.add_argument("--context", metavar="NAME", help="the kubeconfig context (default: its current one)")
    real.add_argument("--parallel", type=int, default=8, metavar="N",
                      help="scenarios run side by side, each in namespaces of its own (default 8)")
    real.add_argument("--max-advance", default="2m", metavar="DURATION",
                      help="skip scenarios whose advances add up to more than this (default 2m)")
    real.add_argument("--quiet", type=float, default=None, metavar="SECONDS",
                      help="a settle ends after this long without a change to the scenario's objects "
                           "(default 1.5; more on a loaded machine, where Kueue answers late)")


def run(args: argparse.Namespace) -> int:
    files = collect(args.paths)
    if not files:
        raise options.UsageError(f"no *.yaml scenario files in {', '.join(args.paths)}")
    if args.cluster is not None:
        return _on_cluster(args, files)
    if args.context is not None:
        raise options.UsageError("--context needs --cluster")
    passed = failed = 0
    for outcome in conform(files, debug=args.debug):
        print(outcome.line(), flush=True)
        passed, failed = passed + outcome.passed, failed + (not outcome.passed)
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


def _on_cluster(args: argparse.Namespace, files: list[Path]) -> int:
    from kueue_provreq.cluster import client
    from kueue_provreq.cluster.testbed.controlplane import testbed_of

    options.at_least("--parallel", args.parallel, 1)
    max_advance = options.duration("--max-advance", args.max_advance)
    if args.quiet is not None and not args.quiet > 0:
        raise options.UsageError(f"--quiet must be more than 0 seconds, not {args.quiet:g}")
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    with client.connect(args.cluster, args.context) as api:
        for outcome in judge_on_cluster(api, list(scenarios_in(files)), testbed_of(args.cluster),
                                        parallel=args.parallel, max_advance=max_advance, quiet=args.quiet,
                                        debug=args.debug):
            print(outcome.line(), flush=True)
            key = "skipped" if outcome.skipped is not None else "passed" if outcome.passed else "failed"
            counts[key] += 1
    print(f"{counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped")
    return 0 if counts["failed"] == 0 else 1


def judge_on_cluster(api: Client, items: Sequence[Scenario | runner.Outcome], testbed: Testbed | None, *,
                     parallel: int = 8, max_advance: float | None = None, quiet: float | None = None,
                     debug: bool = False) -> Iterator[runner.Outcome]:
    """Every scenario on the real Kueue of ``api``'s cluster, ``parallel`` at a time, grouped by
    their Kueue ``config``: each group after Kueue is restarted with its config (a testbed only;
    on another cluster a scenario with a config is skipped), the default Configuration last
    restored; a settle ends after ``quiet`` seconds without a change (the driver's default when
    None).  Outcomes come in the order of ``items``."""
    from kueue_provreq.cluster.conform import MAX_ADVANCE, SETTLE_QUIET, ClusterDriver, Session

    limit = MAX_ADVANCE if max_advance is None else max_advance
    settle_quiet = SETTLE_QUIET if quiet is None else quiet
    session = Session(api, testbed.metrics_url if testbed is not None else None)
    session.start()
    groups: dict[str, list[int]] = {}
    for i, item in enumerate(items):
        if isinstance(item, Scenario):
            groups.setdefault(_config_key(item), []).append(i)
    outcomes: dict[int, Outcome] = {i: item for i, item in enumerate(items) if isinstance(item, Outcome)}
    shown = 0
    restarted = False
    try:
        for key, members in sorted(groups.items(), key=lambda kv: kv[0] != _DEFAULT):
            config = json.loads(key)
            why_not = None
            if key != _DEFAULT:
                testbed, why_not = _restart(testbed, config)
                restarted = True
            if why_not is not None:
                for i in members:
                    scenario = items[i]
                    assert isinstance(scenario, Scenario)
                    outcomes[i] = Outcome(scenario.name, scenario.source, skipped=why_not)
            else:
                with ThreadPoolExecutor(parallel) as pool:
                    def one(i: int) -> Outcome:
                        scenario = items[i]
                        assert isinstance(scenario, Scenario)
                        return Run(scenario, driver=ClusterDriver(session, max_advance=limit, quiet=settle_quiet),
                                   debug=debug).run()
                    for i, outcome in zip(members, pool.map(one, members), strict=True):
                        outcomes[i] = outcome
            while shown in outcomes:  # what is known, in the order given
                yield outcomes[shown]
                shown += 1
    finally:
        if restarted:
            _restart(testbed, None)
        session.close()
    while shown < len(items):
        yield outcomes[shown]
        shown += 1


_DEFAULT = json.dumps(None)


def _config_key(scenario: Scenario) -> str:
    if not scenario.config_document:
        return _DEFAULT
    return json.dumps(scenario.config_document, sort_keys=True)


def _restart(testbed: Testbed | None, config: Mapping[str, Any] | None) -> tuple[Testbed | None, str | None]:
    """Kueue restarted with ``config``: the testbed as it now runs, and why Kueue did not start
    (a skip reason) or None."""
    from kueue_provreq.cluster.conform import restart_for

    if testbed is None:
        return None, "its Kueue config needs Kueue restarted with it, which only a testbed's kubeconfig allows"
    return restart_for(testbed, config)
