"""``kueue-provreq conform PATH...``: run conformance scenarios and report PASS/FAIL."""

from __future__ import annotations

import argparse

from kueue_provreq.cli import options
from kueue_provreq.conformance.runner import collect, conform


def register(subparsers: argparse._SubParsersAction[options.Parser]) -> None:
    cmd = options.add_command(
        subparsers, "conform", run, help="run conformance scenarios and report PASS/FAIL",
        description="Run every scenario in PATHs (files, or folders searched recursively for "
                    "*.yaml). Prints 'PASS name' or 'FAIL name: step N: <first difference>' per "
                    "scenario, then 'N passed, M failed'. Exit status 0 only when M is 0.")
    cmd.add_argument("paths", nargs="+", metavar="PATH", help="a scenario file or a folder")


def run(args: argparse.Namespace) -> int:
    files = collect(args.paths)
    if not files:
        raise options.UsageError(f"no *.yaml scenario files in {', '.join(args.paths)}")
    passed = failed = 0
    for outcome in conform(files, debug=args.debug):
        print(outcome.line(), flush=True)
        passed, failed = passed + outcome.passed, failed + (not outcome.passed)
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1
