"""The option groups commands share, and the readers of their values.

One place says what ``-f``, ``--kubeconfig``, ``--validate``, ``--config``, ``--semantics``,
``--autoscaler``, ``-o`` and ``--out`` mean, so that every command that takes one spells it,
defaults it and reads it the same way.  A value that cannot be read is a
:class:`UsageError` naming the option; :func:`kueue_provreq.cli.main`
alone turns errors into exit statuses.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, NoReturn

from kueue_provreq.api.config import SEMANTICS, Configuration, parse_semantics
from kueue_provreq.api.evolve import evolve
from kueue_provreq.api.meta import Time
from kueue_provreq.errors import KueueProvreqError
from kueue_provreq.extras import SIM, require
from kueue_provreq.manifests import ManifestError, load_configuration_file
from kueue_provreq.manifests.codec import parse_duration, parse_time
from kueue_provreq.manifests.objects import IGNORE, STRICT, VALIDATION_LEVELS
from kueue_provreq.manifests.yamlio import read_stream

if TYPE_CHECKING:
    from kueue_provreq.autoscaler import Script

PROG = "kueue-provreq"


class UsageError(KueueProvreqError):
    """Input the command cannot work with: a bad option value, a missing file (exit status 2)."""

#: What Cluster Autoscaler answers when no ``--autoscaler`` is given, in every command that
#: takes one: every attempt provisioned at once.
DEFAULT_AUTOSCALER = "provision"


class Parser(argparse.ArgumentParser):
    """argparse, with its errors on one line like every other error of the command."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def debug_parent() -> Parser:
    """``--debug``, accepted before and after the command name."""
    debug = Parser(add_help=False)
    debug.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                       help="show tracebacks instead of one-line errors")
    return debug


def add_command(subparsers: argparse._SubParsersAction[Parser], name: str, run: Callable[[argparse.Namespace], int],
                *, help: str, description: str) -> argparse.ArgumentParser:
    """A command's parser, with ``--debug`` and the function that runs it."""
    cmd = subparsers.add_parser(name, parents=[debug_parent()], help=help, description=description)
    cmd.set_defaults(run=run)
    return cmd


# --- option groups -------------------------------------------------------------------------------


def output(cmd: argparse.ArgumentParser, formats: tuple[str, ...], *aliases: str) -> None:
    """``-o``/``--output FORMAT``: what is printed on standard output (the first is the default);
    ``aliases`` are older spellings kept working."""
    cmd.add_argument("-o", "--output", *aliases, dest="output", choices=formats, default=formats[0],
                     help=f"{', '.join(formats)} (default {formats[0]})")


def out_folder(cmd: argparse.ArgumentParser, what: str) -> None:
    """``--out DIR [--force]``: a folder to write files to, beside what ``-o`` prints
    (:mod:`kueue_provreq.cli.folder` writes it)."""
    cmd.add_argument("--out", metavar="DIR", default=None,
                     help=f"also write {what} to DIR, a new or empty folder; DIR appears only once "
                          "every file is written")
    cmd.add_argument("--force", action="store_true",
                     help="with --out: replace a non-empty DIR whole (its earlier files go)")


def config_file(cmd: argparse.ArgumentParser, purpose: str) -> None:
    cmd.add_argument("--config", metavar="FILE", default=None,
                     help=f"a Kueue Configuration (config.kueue.x-k8s.io v1beta2 or v1beta1), or the "
                          f"kueue-manager-config ConfigMap holding it; {purpose}")


def semantics_switches(cmd: argparse.ArgumentParser, default: frozenset[str] | None = None,
                       reads_manifests: bool = True) -> None:
    note = ("; kep-993-preemption also lets manifests use KEP-993's preemptionPolicy and "
            "PreemptionRequired, which today's CRDs refuse") if reads_manifests else ""
    cmd.add_argument("--semantics", type=_semantics, default=default, metavar="SWITCH,...",
                     help="semantics switches the model follows, comma-separated: " + "; ".join(
                         f"{name} ({what})" for name, what in SEMANTICS.items()) +
                     " (default: none, upstream main with #14309)" + note)


def reading(cmd: argparse.ArgumentParser) -> None:
    """How objects are read, whatever their source: validation, Configuration, semantics."""
    cmd.add_argument("--validate", type=_validation_level, default=STRICT, metavar="|".join(VALIDATION_LEVELS),
                     help="unknown fields are errors (strict, the default), warnings (warn) or "
                          "dropped silently (ignore), as kubectl's --validate (true and false too)")
    config_file(cmd, "for manageJobsWithoutQueueName, integrations.frameworks, waitForPodsReady and "
                     "feature gates")
    semantics_switches(cmd)


def manifest_files(cmd: argparse.ArgumentParser, *, required: bool = True,
                   group: argparse._MutuallyExclusiveGroup | None = None) -> None:
    (group or cmd).add_argument(
        "-f", "--filename", action="append", required=required, metavar="FILE|DIR|-",
        help="a manifest file, a folder of *.yaml/*.yml/*.json files, or - for stdin; "
             "repeatable; kubectl get -o yaml|json output (a List) too")


def cluster(cmd: argparse.ArgumentParser, *, required: bool = False,
            group: argparse._MutuallyExclusiveGroup | None = None, namespace_help: str = "") -> None:
    """``--kubeconfig PATH [--context NAME] [-n NS]``: a live cluster."""
    (group or cmd).add_argument("--kubeconfig", metavar="PATH", required=required,
                                help="the cluster's kubeconfig" if required else
                                "read a live cluster through this kubeconfig instead (read-only: list "
                                "calls; needs the 'cluster' extra)")
    cmd.add_argument("--context", metavar="NAME", help="the kubeconfig context (default: its current one)")
    cmd.add_argument("-n", "--namespace", metavar="NS", default="",
                     help=namespace_help or "with --kubeconfig: read namespaced objects of NS only "
                                            "(default: all namespaces)")


def input_sources(cmd: argparse.ArgumentParser) -> None:
    """``-f`` manifests or dumps, or a live cluster; the reading options; the clock."""
    source = cmd.add_mutually_exclusive_group(required=True)
    manifest_files(cmd, required=False, group=source)
    cluster(cmd, group=source)
    source.add_argument("--in-cluster", action="store_true",
                        help="read the cluster this pod runs in, with its service account (as in a CronJob)")
    reading(cmd)
    cmd.add_argument("--at", metavar="TIME", default=None,
                     help="the clock, an RFC 3339 time like 2024-01-01T00:10:00Z (default: for files, the "
                          "newest time they record, as in a cluster dump, else now; for a cluster, now)")


def autoscaler_script(cmd: argparse.ArgumentParser) -> None:
    cmd.add_argument("--autoscaler", metavar="SCRIPT", default=DEFAULT_AUTOSCALER,
                     help="what Cluster Autoscaler answers to attempt 1, 2, ... of each provisioning check, "
                          "comma-separated; the last item repeats. Items: provision@D, fail@D, expire@D "
                          "(booking expired before admission), revoke@D (provisioned at once, capacity "
                          "revoked D after creation); D a duration like 90s or 5m after the request's "
                          f"creation, default 0s (default: {DEFAULT_AUTOSCALER}, every attempt provisioned "
                          "at once)")


def simulation(cmd: argparse.ArgumentParser) -> None:
    """A simulation file and what may override it; the progress bar."""
    cmd.add_argument("simulation", metavar="SIMULATION.yaml", help="a simulation file")
    cmd.add_argument("--workloads", type=int, default=None, metavar="N",
                     help="exactly N arrivals (a trace is truncated or repeated)")
    cmd.add_argument("--seed", type=int, default=None, metavar="S", help="the random seed (default: the file's)")
    cmd.add_argument("--warm-up", default="0s", metavar="DURATION",
                     help="leave the first DURATION of the run out of the figures: the workloads "
                          "created in it and what happened in it (default: 0s)")
    config_file(cmd, "instead of the simulation file's configuration")
    cmd.add_argument("-q", "--quiet", action="store_true", help="no progress bar")


def starting_state(cmd: argparse.ArgumentParser) -> None:
    """``--from DUMP... | --kubeconfig PATH``: a cluster's state a run starts from, read as
    ``explain`` reads ``-f`` or a live cluster (:func:`kueue_provreq.cli.inputs.read_input`)."""
    source = cmd.add_mutually_exclusive_group()
    source.add_argument("--from", action="append", dest="filename", default=None, metavar="FILE|DIR|-",
                        help="start from the cluster state in these dumps (kubectl get -A -o yaml|json), "
                             "repeatable: its workloads go on from where they are, at the dump's time, and "
                             "the file's arrivals come on top")
    cluster(cmd, group=source, namespace_help="with --kubeconfig: read namespaced objects of NS only "
                                              "(default: all namespaces)")
    cmd.set_defaults(in_cluster=False)
    cmd.add_argument("--validate", type=_validation_level, default=STRICT, metavar="|".join(VALIDATION_LEVELS),
                     help="with --from or --kubeconfig: unknown fields are errors (strict, the default), "
                          "warnings (warn) or dropped silently (ignore)")
    cmd.add_argument("--at", metavar="TIME", default=None,
                     help="with --from or --kubeconfig: the run's start, an RFC 3339 time (default: the "
                          "newest time the dump records; for a cluster, now)")


def replications(cmd: argparse.ArgumentParser, default: int) -> None:
    """How many independent runs each figure is a mean of (docs: 'Replications')."""
    cmd.add_argument("--replications", type=int, default=default, metavar="N",
                     help=f"run N times with independent seeds derived from the file's (the first is the "
                          f"file's own) and report each figure as a mean and 95%% confidence interval "
                          f"(default: {default})")


# --- reading option values -------------------------------------------------------------------------


def _semantics(text: str) -> frozenset[str]:
    try:
        return parse_semantics(text)
    except KueueProvreqError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _validation_level(text: str) -> str:
    """kubectl's ``--validate`` values, its older ``true``/``false`` included."""
    level = {"true": STRICT, "false": IGNORE}.get(text, text)
    if level not in VALIDATION_LEVELS:
        raise argparse.ArgumentTypeError(f"invalid choice: {text!r} (choose from strict, warn, ignore)")
    return level


def clock(at: str | None) -> Time:
    """``--at``, or now."""
    if at is None:
        return Time(int(time.time()))
    try:
        return Time(parse_time(at))
    except ManifestError as e:
        raise UsageError(f"--at: {e}") from None


def duration(option: str, text: str) -> int:
    """A non-negative duration option, in whole seconds."""
    try:
        seconds = parse_duration(text)
    except ManifestError as e:
        raise UsageError(f"{option}: {e}") from None
    if seconds < 0:
        raise UsageError(f"{option}: must not be negative, got {text}")
    return int(seconds)


def at_least(option: str, value: int | None, low: int) -> None:
    if value is not None and value < low:
        raise UsageError(f"{option}: must be at least {low}" if low else f"{option}: must not be negative")


def between(option: str, value: int | None, low: int, high: int) -> None:
    """A count with a floor and a ceiling, checked before any work (the limit in the message)."""
    at_least(option, value, low)
    if value is not None and value > high:
        raise UsageError(f"{option}: at most {high:,}, got {value:,}")


def script(text: str) -> Script:
    """``--autoscaler``: imports the Cluster Autoscaler model only when a command needs it."""
    from kueue_provreq.autoscaler import ScriptError, parse_script

    try:
        return parse_script(text)
    except ScriptError as e:
        raise UsageError(f"--autoscaler: {e}") from None


def plots_available(option: str) -> None:
    """The plots an ``--out`` folder holds need matplotlib: said before any work is done."""
    require(SIM, "matplotlib", f"{option} (its plots)")


def configuration(args: argparse.Namespace) -> Configuration | None:
    """The ``--config`` file's Configuration with ``--semantics`` on top; None when neither
    is given."""
    config = configuration_file(args.config)
    if args.semantics is None:
        return config
    return evolve(config or Configuration(), semantics=args.semantics)


def configuration_file(path: str | None) -> Configuration | None:
    """``--config`` (``-``: standard input)."""
    if path is None:
        return None
    if path == "-":
        return load_configuration_file("<stdin>", read_stream(sys.stdin))
    return load_configuration_file(path)
