"""``kueue-provreq``: judge conformance scenarios (``conform``) or watch one unfold (``run``).

Exit status: 0 when every scenario passed, 1 when one failed, 2 for bad input (a missing
file, an unreadable scenario given to ``run``, a bad option).  Errors are one line on
stderr; ``--debug`` lets exceptions through with their traceback instead.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from kueue_provreq import __version__
from kueue_provreq.conformance.runner import Outcome, Run, collect, conform, load_scenarios
from kueue_provreq.conformance.timeline import Timeline, jsonl_writer, text_writer

PROG = "kueue-provreq"


class UsageError(Exception):
    """Input the command cannot work with (exit status 2)."""


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors on one line like every other error of the command."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def build_parser() -> argparse.ArgumentParser:
    debug = _Parser(add_help=False)
    debug.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                       help="show tracebacks instead of one-line errors")
    parser = _Parser(prog=PROG, parents=[debug],
                     description="An executable model of Kueue's ProvisioningRequest admission check.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                     parser_class=_Parser)

    conform_cmd = commands.add_parser(
        "conform", parents=[debug], help="run conformance scenarios and report PASS/FAIL",
        description="Run every scenario in PATHs (files, or folders searched recursively for "
                    "*.yaml). Prints 'PASS name' or 'FAIL name: step N: <first difference>' per "
                    "scenario, then 'N passed, M failed'. Exit status 0 only when M is 0.")
    conform_cmd.add_argument("paths", nargs="+", metavar="PATH", help="a scenario file or a folder")
    conform_cmd.set_defaults(func=_conform)

    run_cmd = commands.add_parser(
        "run", parents=[debug], help="run one scenario file and print its timeline",
        description="Run the scenario(s) of one file and print, step by step, the clock, every "
                    "object change, event and metric increment, the workloads' phase and "
                    "admission-check state changes, and the expectations' outcome.")
    run_cmd.add_argument("scenario", metavar="SCENARIO", help="a scenario YAML file")
    run_cmd.add_argument("--format", choices=("text", "jsonl"), default="text",
                         help="text (default) or jsonl: one JSON object per line, with the "
                              "manifest of every object written")
    run_cmd.set_defaults(func=_run)
    return parser


def _conform(args: argparse.Namespace) -> int:
    try:
        files = collect(args.paths)
    except FileNotFoundError as e:
        raise UsageError(str(e)) from None
    if not files:
        raise UsageError(f"no *.yaml scenario files in {', '.join(args.paths)}")
    passed = failed = 0
    for outcome in conform(files, debug=args.debug):
        print(outcome.line(), flush=True)
        passed, failed = passed + outcome.passed, failed + (not outcome.passed)
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


def _run(args: argparse.Namespace) -> int:
    path = Path(args.scenario)
    if not path.is_file():
        raise UsageError(f"{path}: no such file")
    items = load_scenarios(path)
    broken = [item for item in items if isinstance(item, Outcome)]
    if broken:
        raise UsageError(f"{path}: {broken[0].failure}")
    jsonl = args.format == "jsonl"
    emit = jsonl_writer(sys.stdout) if jsonl else text_writer(sys.stdout)
    failed = 0
    for scenario in items:
        assert not isinstance(scenario, Outcome)
        outcome = Run(scenario, Timeline(emit, with_objects=jsonl), keep_going=True, debug=args.debug).run()
        failed += not outcome.passed
    return 0 if failed == 0 else 1


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    args.debug = getattr(args, "debug", False)
    try:
        status: int = args.func(args)
    except UsageError as e:
        if args.debug:
            raise
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # the reader (``| head``) is gone; say nothing more, and let Python not complain either
        sys.stderr.close()
        return 1
    return status


if __name__ == "__main__":
    sys.exit(main())
