"""``kueue-provreq``: kubectl-style commands over the model.

``conform`` judges conformance scenarios, ``run`` watches one unfold, ``explain`` says what
each controller would do next to real manifests or a live cluster, ``forecast`` runs them
forward in time, ``simulate`` and ``sweep`` run simulation files, ``record`` writes a trace of what a cluster did
and ``calibrate`` fits the Cluster Autoscaler model to it, ``audit`` checks a cluster
snapshot against the model's guarantees, ``autoscaler`` answers ProvisioningRequests on a test
cluster, ``validate`` checks manifests as the API server would, ``diagram`` draws the
lifecycles, ``explore`` searches a small world exhaustively, and ``testbed`` starts the real
Kueue on 127.0.0.1.

Each command is one module of this package with ``register(subparsers)`` (its options, most of
them from the shared groups of :mod:`.options`) and ``run(args) -> exit status``, as
kueuectl lays out its commands.  Manifests are given as ``-f FILE|DIR|-``, kubectl's way, with
kubectl's ``--validate=strict|warn|ignore``; a Kueue Configuration with ``--config FILE``; the
output format with ``-o``; a folder to write files to with ``--out``.  The what-if commands
import :mod:`kueue_provreq.simulation` only when they run, so the CLI starts as fast as without
them.

Exit status: 0 on success (every scenario passed), 1 when a scenario failed (or the model
itself failed on good input), 2 for bad input (a missing file, a manifest the API server would
reject, a bad option, no Graphviz for SVG).  Commands raise; :func:`main` alone turns an error
into lines on stderr and an exit status (:data:`EXIT_STATUS`), every error found one line
each; ``--debug`` shows the traceback instead.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from kueue_provreq import __version__
from kueue_provreq.cli import (
    audit,
    autoscaler,
    calibrate,
    conform,
    diagram,
    explain,
    explore,
    forecast,
    options,
    record,
    run,
    simulate,
    stories,
    sweep,
    testbed,
    validate,
)
from kueue_provreq.cli.options import PROG, Parser, UsageError
from kueue_provreq.engine import SettleError
from kueue_provreq.errors import KueueProvreqError
from kueue_provreq.machines import IllegalTransition
from kueue_provreq.manifests import ManifestErrors
from kueue_provreq.manifests.inputs import InputErrors

__all__ = ["EXIT_STATUS", "PROG", "UsageError", "build_parser", "main"]

#: The commands, in the order ``--help`` lists them.
COMMANDS = (conform, stories, run, explain, audit, validate, diagram, forecast, simulate, sweep, record, calibrate,
            autoscaler, explore, testbed)

#: Error families and the exit status each gets, the first that matches winning: the model
#: failing on good input (a settle that does not converge, a transition its machine refuses) is
#: a bug to report and fails like a verdict; everything else the library refuses is bad input.
EXIT_STATUS: tuple[tuple[type[KueueProvreqError], int], ...] = (
    (SettleError, 1),
    (IllegalTransition, 1),
    (KueueProvreqError, 2),
)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog=PROG, parents=[options.debug_parent()],
                    description="An executable model of Kueue's ProvisioningRequest admission check.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=Parser)
    for command in COMMANDS:
        command.register(commands)
    return parser


def error_lines(error: KueueProvreqError) -> list[str]:
    """Every problem an error carries, one line each (the first 50, then a count)."""
    if isinstance(error, InputErrors):
        return error.lines()
    if isinstance(error, ManifestErrors):
        return InputErrors(error.errors).lines()
    status = exit_status(error)
    return [f"the model failed: {error}" if status == 1 else str(error)]


def exit_status(error: KueueProvreqError) -> int:
    return next(status for family, status in EXIT_STATUS if isinstance(error, family))


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    args.debug = getattr(args, "debug", False)
    try:
        status: int = args.run(args)
        sys.stdout.flush()  # a full disk or a closed pipe is found here, not at exit
    except KueueProvreqError as e:
        if args.debug:
            raise
        for line in error_lines(e):
            print(f"{PROG}: error: {line}", file=sys.stderr)
        return exit_status(e)
    except BrokenPipeError:
        # the reader (``| head``) is gone; say nothing more, and let Python not complain either
        _drop_stdout()
        return 1
    except OSError as e:
        if args.debug:
            raise
        # a write the system refused (standard output on a full disk, a file it could not read)
        where = "standard output" if e.filename is None else str(e.filename)
        print(f"{PROG}: error: {where}: {e.strerror or e}", file=sys.stderr)
        _drop_stdout()
        return 1 if e.filename is None else 2
    return status


def _drop_stdout() -> None:
    """What is still buffered for standard output is dropped: the interpreter's flush at exit
    would fail the same way again, with a traceback."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # no file descriptor (a test's captured stream)
        pass


if __name__ == "__main__":
    sys.exit(main())
