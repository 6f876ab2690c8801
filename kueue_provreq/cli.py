"""``kueue-provreq``: kubectl-style commands over the model.

``conform`` judges conformance scenarios, ``run`` watches one unfold, ``explain`` says what
each controller would do next to real manifests or a live cluster, ``forecast`` runs them
forward in time, ``simulate`` and ``sweep`` run simulation files, ``audit`` checks a cluster
snapshot against the model's guarantees, ``autoscaler`` answers ProvisioningRequests on a test
cluster, ``validate`` checks manifests as the API
server would, ``diagram`` draws the lifecycles, and ``explore`` (when present) searches a
small world exhaustively.  Manifests are given as ``-f FILE|DIR|-``, kubectl's way, with
kubectl's ``--validate=strict|warn|ignore``; a Kueue Configuration with ``--config FILE``.
The what-if commands import :mod:`kueue_provreq.simulation` only when they run, so the CLI
starts as fast as without them.

Exit status: 0 on success (every scenario passed), 1 when a scenario failed, 2 for bad
input (a missing file, a manifest the API server would reject, a bad option, no Graphviz
for SVG).  Errors are one line each on stderr, every one found; ``--debug`` shows the
traceback instead.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import attrs
import yaml

from kueue_provreq import __version__, diagrams
from kueue_provreq.api.config import SEMANTICS, Configuration, parse_semantics
from kueue_provreq.api.meta import Time
from kueue_provreq.api.objects import KubeObject
from kueue_provreq.conformance.runner import Outcome, Run, collect, conform, load_scenarios, scenarios_in
from kueue_provreq.conformance.scenario import Scenario
from kueue_provreq.conformance.timeline import Timeline, jsonl_writer, text_writer
from kueue_provreq.errors import KueueProvreqError
from kueue_provreq.explain import explain
from kueue_provreq.cluster.testbed.command import add_testbed_command
from kueue_provreq.explore.cli import add_explore_command
from kueue_provreq.machines import MACHINES
from kueue_provreq.manifests import ManifestError, ManifestErrors, dump_object, load_configuration_file
from kueue_provreq.manifests.codec import parse_duration, parse_time
from kueue_provreq.manifests.inputs import InputErrors, Inputs, load_inputs
from kueue_provreq.manifests.objects import IGNORE, STRICT, VALIDATION_LEVELS

PROG = "kueue-provreq"
T = TypeVar("T")


class UsageError(KueueProvreqError):
    """Input the command cannot work with (exit status 2)."""


class ModelFailure(KueueProvreqError):
    """The model itself failed on good input (exit status 1): a bug to report."""


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
    conform_cmd.add_argument("--cluster", metavar="KUBECONFIG",
                             help="judge the real Kueue of this cluster instead of the model (a testbed's "
                                  "kubeconfig lets scenarios with a config restart Kueue and read its metrics)")
    conform_cmd.add_argument("--context", metavar="NAME", help="with --cluster: the kubeconfig context")
    conform_cmd.add_argument("--parallel", type=int, default=8, metavar="N",
                             help="with --cluster: scenarios run side by side, each in its own namespaces (default 8)")
    conform_cmd.add_argument("--max-advance", default="2m", metavar="DURATION",
                             help="with --cluster: skip scenarios whose advances add up to more (default 2m)")
    conform_cmd.set_defaults(func=_conform)

    run_cmd = commands.add_parser(
        "run", parents=[debug], help="run scenarios and print their timelines",
        description="Run the scenario(s) of a file (a folder: its *.yaml files, searched "
                    "recursively; -: standard input) and print, step by step, the clock, every "
                    "object change, event and metric increment, the workloads' phase and "
                    "admission-check state changes, and the expectations' outcome.")
    run_cmd.add_argument("scenario", metavar="SCENARIO|DIR|-", help="a scenario YAML file, a folder, or -")
    run_cmd.add_argument("--format", choices=("text", "jsonl"), default="text",
                         help="text (default) or jsonl: one JSON object per line, with the "
                              "manifest of every object written")
    _config_option(run_cmd, "instead of each scenario's own config")
    run_cmd.set_defaults(func=_run)

    explain_cmd = commands.add_parser(
        "explain", parents=[debug], help="say what each controller would do next to manifests, and why",
        description="Load the manifests (Kueue objects, ProvisioningRequests, PodTemplates, and "
                    "Jobs, JobSets and PyTorchJobs, which get their Workload as Kueue's job "
                    "integrations create it), run every controller's reconcile once at TIME, and "
                    "print where each job, workload and admission check stands, with the rule that "
                    "decides it, then each controller's next effects. As kubectl apply does, an "
                    "object the API server would refuse is left out and reported (exit status 2). With --kubeconfig it reads the same "
                    "objects from a live cluster (list calls only).")
    _source_options(explain_cmd, ("table", "yaml", "json"))
    explain_cmd.set_defaults(func=_explain)

    audit_cmd = commands.add_parser(
        "audit", parents=[debug], help="check a cluster snapshot: broken invariants, orphans, "
                                       "misconfiguration, stuck work",
        description="Check the objects of a dump (-f) or a live cluster (--kubeconfig) against what "
                    "the model guarantees and print one line per finding with its object and rule. "
                    "Broken invariants, orphans and duplicate requests are errors (exit status 1); "
                    "misconfiguration and stuck work are warnings (exit status 0, or 1 with --strict).")
    _source_options(audit_cmd, ("table", "json"))
    audit_cmd.add_argument("--strict", action="store_true", help="exit with status 1 on warnings too")
    audit_cmd.add_argument("--overdue", metavar="DURATION", default="5m",
                           help="how long past its time a Retry, or a Provisioned request whose check is "
                                "still Pending, is reported (default 5m)")
    audit_cmd.add_argument("--quota-wait", metavar="DURATION", default="30m",
                           help="how long a workload may hold quota while its checks are not Ready "
                                "(default 30m)")
    audit_cmd.set_defaults(func=_audit)

    validate_cmd = commands.add_parser(
        "validate", parents=[debug], help="check manifests as the API server would on create",
        description="Load the manifests with the CRD defaults applied and check them against "
                    "the CRD schemas, their CEL rules, Kueue's webhooks and core validation. "
                    "-o table prints one line per object; yaml and json print the objects as "
                    "the server would store them.")
    _manifest_options(validate_cmd, ("table", "yaml", "json"))
    validate_cmd.set_defaults(func=_validate)

    diagram_cmd = commands.add_parser(
        "diagram", parents=[debug], help="draw a lifecycle as Mermaid, Graphviz DOT or SVG",
        description="Draw the declared state machine(s); 'all' draws the three side by side. "
                    "SVG needs the Graphviz 'dot' executable.")
    diagram_cmd.add_argument("machine", nargs="?", default="all", choices=(*_MACHINE_NAMES, "all"),
                             help="workload, check, provisioningrequest or all (default)")
    diagram_cmd.add_argument("-o", "--output", choices=("mermaid", "dot", "svg"), default="mermaid",
                             help="mermaid (default), dot or svg")
    diagram_cmd.set_defaults(func=_diagram)

    forecast_cmd = commands.add_parser(
        "forecast", parents=[debug], help="the whole future of each workload, Cluster Autoscaler scripted",
        description="Load the manifests as explain does (Jobs become their Workloads), then run the "
                    "controllers forward in time, Cluster Autoscaler answering each ProvisioningRequest "
                    "as SCRIPT says, until every workload is admitted, deactivated or finished, or "
                    "--until has passed. Prints each workload's timeline.")
    _source_options(forecast_cmd, ("table", "yaml", "json"))
    forecast_cmd.add_argument("--autoscaler", metavar="SCRIPT", default="provision@0s",
                              help="what CA answers to attempt 1, 2, ... of each provisioning check, "
                                   "comma-separated; the last item repeats. Items: provision@D, fail@D, "
                                   "expire@D (booking expired before admission), revoke@D (provisioned at "
                                   "once, capacity revoked D after creation); D a duration like 90s or 5m "
                                   "after the request's creation, default 0s (default: provision@0s)")
    forecast_cmd.add_argument("--until", metavar="DURATION", default="24h",
                              help="stop this long after the start at the latest (default 24h)")
    forecast_cmd.set_defaults(func=_forecast)

    simulate_cmd = commands.add_parser(
        "simulate", parents=[debug], help="run a simulation file: many workloads over time",
        description="Run the simulation a file describes (docs: 'Simulation file') and print its "
                    "summary; --out DIR also writes summary.json, workloads.csv and PNG plots.")
    _simulation_options(simulate_cmd, ("table", "json"))
    simulate_cmd.set_defaults(func=_simulate)

    sweep_cmd = commands.add_parser(
        "sweep", parents=[debug], help="one simulation per point of a grid of settings",
        description="Run the simulation once per combination of the --set values (each with the "
                    "file's seed, or --seed), in parallel, and print one row per point; --out DIR "
                    "writes sweep.csv and a plot.")
    _simulation_options(sweep_cmd, ("table", "csv", "json"))
    sweep_cmd.add_argument("--set", action="append", required=True, dest="settings", metavar="PATH=V1,V2,...",
                           help="values for a field, by its dotted path in the simulation file (a key "
                                "with dots in brackets: autoscaler[\"check-capacity.autoscaling.x-k8s.io\"]"
                                ".failureProbability); retryStrategy.backoffLimitCount, "
                                "retryStrategy.backoffBaseSeconds and retryStrategy.backoffMaxSeconds set "
                                "every ProvisioningRequestConfig; repeatable")
    sweep_cmd.add_argument("-j", "--jobs", type=int, default=None, metavar="N",
                           help="worker processes (default: the CPU count)")
    sweep_cmd.add_argument("--dask", metavar="ADDRESS", default=None,
                           help="run the points on the Dask scheduler at ADDRESS (tcp://host:8786), or "
                                "'local' to start a local Dask cluster of -j workers")
    sweep_cmd.set_defaults(func=_sweep)

    autoscaler_cmd = commands.add_parser(
        "autoscaler", parents=[debug], help="play Cluster Autoscaler for ProvisioningRequests on a test cluster",
        description="Watch the ProvisioningRequests of a (kind or test) cluster and answer them as "
                    "Cluster Autoscaler would, following SCRIPT: item i answers attempt i, the last item "
                    "repeats. It writes only ProvisioningRequest status, through the status "
                    "subresource. Runs until interrupted, or for --for DURATION.")
    autoscaler_cmd.add_argument("--kubeconfig", metavar="PATH", required=True, help="the cluster's kubeconfig")
    autoscaler_cmd.add_argument("--context", metavar="NAME", help="the kubeconfig context (default: its current one)")
    autoscaler_cmd.add_argument("-n", "--namespace", metavar="NS", default="",
                                help="answer requests of NS only (default: all namespaces)")
    autoscaler_cmd.add_argument("--autoscaler", metavar="SCRIPT", default="provision",
                                help="what each attempt gets, e.g. fail@1m,provision@5m (default provision: "
                                     "every attempt provisioned at once); the grammar of forecast --autoscaler")
    autoscaler_cmd.add_argument("--for", dest="duration", metavar="DURATION", default=None,
                                help="stop after DURATION (default: run until interrupted)")
    autoscaler_cmd.set_defaults(func=_autoscaler)

    add_explore_command(commands)
    add_testbed_command(commands)
    return parser


def _simulation_options(cmd: argparse.ArgumentParser, outputs: tuple[str, ...]) -> None:
    cmd.add_argument("simulation", metavar="SIMULATION.yaml", help="a simulation file")
    cmd.add_argument("--workloads", type=int, default=None, metavar="N",
                     help="exactly N arrivals (a trace is truncated or repeated)")
    cmd.add_argument("--seed", type=int, default=None, metavar="S", help="the random seed (default: the file's)")
    _config_option(cmd, "instead of the simulation file's configuration")
    cmd.add_argument("-o", "--output", choices=outputs, default=outputs[0],
                     help=f"{', '.join(outputs)} (default {outputs[0]})")
    cmd.add_argument("--out", metavar="DIR", default=None, help="also write the results and plots to DIR")
    cmd.add_argument("-q", "--quiet", action="store_true", help="no progress bar")


#: ``diagram`` argument -> machine name (``check`` is what users call the admission check).
_MACHINE_NAMES = {"workload": "workload", "check": "admissioncheck",
                  "provisioningrequest": "provisioningrequest"}


def _manifest_options(cmd: argparse.ArgumentParser, outputs: tuple[str, ...]) -> None:
    cmd.add_argument("-f", "--filename", action="append", required=True, metavar="FILE|DIR|-",
                     help="a manifest file, a folder of *.yaml/*.yml/*.json files, or - for stdin; "
                          "repeatable; kubectl get -o yaml|json output (a List) too")
    _reading_options(cmd, outputs)


def _reading_options(cmd: argparse.ArgumentParser, outputs: tuple[str, ...]) -> None:
    """How the objects are read and shown, whatever their source: output, validation,
    Configuration and semantics switches."""
    cmd.add_argument("-o", "--output", choices=outputs, default=outputs[0],
                     help=f"{', '.join(outputs)} (default {outputs[0]})")
    cmd.add_argument("--validate", type=_validation_level, default=STRICT, metavar="|".join(VALIDATION_LEVELS),
                     help="unknown fields are errors (strict, the default), warnings (warn) or "
                          "dropped silently (ignore), as kubectl's --validate (true and false too)")
    _config_option(cmd, "for manageJobsWithoutQueueName, integrations.frameworks, waitForPodsReady and "
                        "feature gates")
    _semantics_option(cmd)


def _semantics_option(cmd: argparse.ArgumentParser) -> None:
    cmd.add_argument("--semantics", type=_semantics, default=None, metavar="SWITCH,...",
                     help="semantics switches the model follows, comma-separated (" + ", ".join(SEMANTICS) +
                          "; default none); kep-993-preemption also lets manifests use KEP-993's "
                          "preemptionPolicy and PreemptionRequired, which today's CRDs refuse")


def _validation_level(text: str) -> str:
    """kubectl's ``--validate`` values, its older ``true``/``false`` included."""
    level = {"true": STRICT, "false": IGNORE}.get(text, text)
    if level not in VALIDATION_LEVELS:
        raise argparse.ArgumentTypeError(f"invalid choice: {text!r} (choose from strict, warn, ignore)")
    return level


def _source_options(cmd: argparse.ArgumentParser, outputs: tuple[str, ...]) -> None:
    """``-f`` manifests or dumps, or a live cluster; the reading options; the clock."""
    source = cmd.add_mutually_exclusive_group(required=True)
    source.add_argument("-f", "--filename", action="append", metavar="FILE|DIR|-",
                        help="a manifest file, a folder of *.yaml/*.yml/*.json files, or - for stdin; "
                             "repeatable; kubectl get -o yaml|json output (a List) too")
    source.add_argument("--kubeconfig", metavar="PATH",
                        help="read a live cluster through this kubeconfig instead (read-only: list calls; "
                             "needs the 'cluster' extra)")
    source.add_argument("--in-cluster", action="store_true",
                        help="read the cluster this pod runs in, with its service account (as in a CronJob)")
    cmd.add_argument("--context", metavar="NAME", help="the kubeconfig context (default: its current one)")
    cmd.add_argument("-n", "--namespace", metavar="NS", default="",
                     help="with --kubeconfig: read namespaced objects of NS only (default: all namespaces)")
    _reading_options(cmd, outputs)
    cmd.add_argument("--at", metavar="TIME", default=None,
                     help="the clock, an RFC 3339 time like 2024-01-01T00:10:00Z (default: for files, the "
                          "newest time they record, as in a cluster dump, else now; for a cluster, now)")


@attrs.frozen
class Input:
    """What explain and audit read: the objects, the kinds that could not be read, the time."""

    objects: tuple[KubeObject, ...]
    now: Time
    unread: frozenset[str] = frozenset()
    refused: int = 0
    """Objects of ``-f`` left out because the API server would refuse them (``keep_going``)."""


def read_input(args: argparse.Namespace, config: Configuration, keep_going: bool = False) -> Input:
    """The objects of ``-f`` or of the live cluster named, checked as ``config``'s semantics
    switches say; warnings go to stderr, and with ``keep_going`` the errors of the objects left
    out too (as ``kubectl apply`` goes on)."""
    if args.context is not None and args.kubeconfig is None:
        raise UsageError("--context needs --kubeconfig")
    live = args.kubeconfig is not None or args.in_cluster
    if args.namespace and not live:
        raise UsageError("--namespace needs --kubeconfig or --in-cluster (a dump holds what it holds)")
    at = _clock(args.at) if args.at is not None else None
    if not live:
        inputs = load_manifests(args, config, keep_going)
        newest = inputs.newest_timestamp
        now = at if at is not None else Time(newest) if newest is not None else _clock(None)
        return Input(inputs.objects, now, refused=len(inputs.errors))
    from kueue_provreq.cluster import client, snapshot

    try:
        connection = client.connect_in_cluster() if args.in_cluster else client.connect(args.kubeconfig, args.context)
        with connection as api:
            snap = snapshot.read(api, args.namespace)
    except (client.ClusterError, client.ApiError) as e:
        raise UsageError(str(e)) from None
    for warning in snap.warnings:
        print(f"{PROG}: warning: {warning}", file=sys.stderr)
    objects, problems = snapshot.to_objects(snap.documents, snap.source, args.validate,
                                             semantics=config.semantics)
    for problem in problems:
        print(f"{PROG}: warning: {problem}", file=sys.stderr)
    return Input(tuple(objects), at if at is not None else _clock(None), snap.unread)


def _clock(at: str | None) -> Time:
    if at is None:
        return Time(int(time.time()))
    try:
        return Time(parse_time(at))
    except ValueError as e:
        raise UsageError(f"--at: {e}") from None


def _duration(option: str, text: str) -> int:
    try:
        seconds = parse_duration(text)
    except ValueError as e:
        raise UsageError(f"{option}: {e}") from None
    if seconds < 0:
        raise UsageError(f"{option}: must not be negative, got {text}")
    return int(seconds)


def _config_option(cmd: argparse.ArgumentParser, purpose: str) -> None:
    cmd.add_argument("--config", metavar="FILE", default=None,
                     help=f"a Kueue Configuration (config.kueue.x-k8s.io v1beta2 or v1beta1), or the "
                          f"kueue-manager-config ConfigMap holding it; {purpose}")


def _semantics(text: str) -> frozenset[str]:
    try:
        return parse_semantics(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _configuration(args: argparse.Namespace) -> Configuration | None:
    """The ``--config`` file's Configuration with ``--semantics`` on top; None when neither
    is given."""
    config = _configuration_file(args.config)
    if args.semantics is None:
        return config
    return attrs.evolve(config or Configuration(), semantics=args.semantics)


def _configuration_file(path: str | None) -> Configuration | None:
    if path is None:
        return None
    try:
        if path == "-":
            return load_configuration_file("<stdin>", sys.stdin.read())
        return load_configuration_file(path)
    except ManifestErrors as e:
        raise InputErrors(e.errors) from None
    except ManifestError as e:
        raise UsageError(str(e)) from None


def load_manifests(args: argparse.Namespace, config: Configuration | None, keep_going: bool = False) -> Inputs:
    """Every object of every ``-f`` source, checked as the semantics switches say; warnings and
    the skipped kinds on stderr, and with ``keep_going`` the errors of the objects left out."""
    inputs = load_inputs(args.filename, validation=args.validate, keep_going=keep_going,
                         semantics=config.semantics if config is not None else frozenset())
    for error in InputErrors(inputs.errors).lines() if inputs.errors else ():
        print(f"{PROG}: error: {error}", file=sys.stderr)
    for warning in inputs.warnings:
        print(f"{PROG}: warning: {warning}", file=sys.stderr)
    skipped = inputs.skipped_line()
    if skipped is not None:
        print(f"{PROG}: {skipped}", file=sys.stderr)
    return inputs


def _print_data(data: Any, output: str) -> None:
    if output == "json":
        print(json.dumps(data, indent=2))
    else:
        print(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), end="")


def _explain(args: argparse.Namespace) -> int:
    config = _configuration(args) or Configuration()
    given = read_input(args, config, keep_going=True)
    report = explain(given.objects, given.now, config)
    if args.output == "table":
        print(report.table(), end="")
    else:
        _print_data(report.to_json(), args.output)
    return 2 if given.refused else 0


def _audit(args: argparse.Namespace) -> int:
    from kueue_provreq.audit import Thresholds, audit

    limits = Thresholds(overdue=_duration("--overdue", args.overdue),
                        quota_wait=_duration("--quota-wait", args.quota_wait))
    config = _configuration(args) or Configuration()
    given = read_input(args, config)
    report = audit(given.objects, given.now, limits, given.unread, config)
    if args.output == "json":
        print(json.dumps(report.to_json(), indent=2))
    else:
        print(report.table(), end="")
    return report.exit_status(args.strict)


def _autoscaler(args: argparse.Namespace) -> int:
    from kueue_provreq.simulation.autoscaler import ScriptError, parse_script

    try:
        script = parse_script(args.autoscaler)
    except ScriptError as e:
        raise UsageError(f"--autoscaler: {e}") from None
    duration = _duration("--for", args.duration) if args.duration is not None else None
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
    except (client.ClusterError, client.ApiError) as e:
        raise UsageError(str(e)) from None
    except KeyboardInterrupt:
        return 0
    return 0


def _forecast(args: argparse.Namespace) -> int:
    from kueue_provreq.simulation import ScriptError, forecast, parse_script

    try:
        script = parse_script(args.autoscaler)
    except ScriptError as e:
        raise UsageError(f"--autoscaler {args.autoscaler}: {e}") from None
    until = _duration("--until", args.until)
    config = _configuration(args) or Configuration()
    given = read_input(args, config)
    result = _guarded(lambda: forecast(given.objects, given.now, script, config, until))
    if args.output == "table":
        print(result.table(), end="")
    else:
        _print_data(result.to_json(), args.output)
    return 0


def _guarded(run: Callable[[], T]) -> T:
    """Bad input is a UsageError; a model that fails to settle is reported on one line."""
    from kueue_provreq.engine import SettleError
    from kueue_provreq.machines import IllegalTransition

    try:
        return run()
    except ManifestError as e:
        raise UsageError(str(e)) from None
    except (SettleError, IllegalTransition) as e:
        raise ModelFailure(f"the model failed: {e}") from None


def _simulation_input(args: argparse.Namespace) -> tuple[Any, Configuration | None]:
    from kueue_provreq.simulation import load_document

    if args.workloads is not None and args.workloads < 1:
        raise UsageError("--workloads: must be at least 1")
    if args.seed is not None and args.seed < 0:
        raise UsageError("--seed: must not be negative")
    config = _configuration_file(args.config)
    try:
        return load_document(args.simulation), config
    except ManifestError as e:
        raise UsageError(str(e)) from None


def _simulate(args: argparse.Namespace) -> int:
    from kueue_provreq.simulation import output as out
    from kueue_provreq.simulation import parse, simulate
    from kueue_provreq.simulation.progress import progress_bar

    document, config = _simulation_input(args)
    sim = _guarded(lambda: parse(document, config=config, count=args.workloads, seed=args.seed))
    with progress_bar(sim.count, "workloads", args.quiet) as progress:
        report = _guarded(lambda: simulate(sim, progress=progress))
    if args.out is not None:
        out.write(report, Path(args.out))
    print(out.table(report) if args.output == "table" else out.summary_json(report), end="")
    return 0


def _sweep(args: argparse.Namespace) -> int:
    from kueue_provreq.simulation import SettingError, grid, parse_setting, sweep
    from kueue_provreq.simulation.progress import progress_bar

    if args.jobs is not None and args.jobs < 1:
        raise UsageError("-j: must be at least 1")
    document, config = _simulation_input(args)
    try:
        settings = [parse_setting(text) for text in args.settings]
        points = _guarded(lambda: grid(document, settings, config=config, count=args.workloads, seed=args.seed))
    except SettingError as e:
        raise UsageError(str(e)) from None
    parameters = [setting.text for setting in settings]
    with progress_bar(len(points), "points", args.quiet) as progress:
        result = _guarded(lambda: sweep(parameters, points, jobs=args.jobs, dask=args.dask, progress=progress))
    if args.out is not None:
        result.write(Path(args.out))
    if args.output == "csv":
        print(result.csv(), end="")
    elif args.output == "json":
        print(json.dumps(list(result.rows), indent=2))
    else:
        print(_sweep_table(parameters, result.rows), end="")
    return 0


def _sweep_table(parameters: Sequence[str], rows: Sequence[dict[str, Any]]) -> str:
    """One line per point: its values, outcomes and admission latency."""
    header = [*parameters, "finished", "admitted", "deactivated", "pending", "p50", "p90", "p99"]
    keys = ["finished", "admitted", "deactivated", "pending", "admissionLatencySeconds.p50",
            "admissionLatencySeconds.p90", "admissionLatencySeconds.p99"]
    table = [header] + [[str(r[p]) for p in parameters] + ["-" if r.get(k) is None else str(r[k]) for k in keys]
                        for r in rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    return "".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() + "\n" for row in table)


def _validate(args: argparse.Namespace) -> int:
    objects = load_manifests(args, _configuration(args)).objects
    if args.output == "table":
        for obj in objects:
            meta = obj.metadata
            name = meta.name or f"{meta.extra.get('generateName', '')}*"
            print(f"valid {obj.KIND} {meta.namespace + '/' if meta.namespace else ''}{name}")
    else:
        dumped = [dump_object(obj) for obj in objects]
        _print_data(dumped[0] if len(dumped) == 1 else {"apiVersion": "v1", "kind": "List", "items": dumped},
                    args.output)
    return 0


def _diagram(args: argparse.Namespace) -> int:
    tables = [MACHINES[_MACHINE_NAMES[args.machine]]] if args.machine != "all" else list(MACHINES.values())
    if args.output == "mermaid":
        text = diagrams.to_mermaid(tables[0]) if len(tables) == 1 else diagrams.combined_mermaid(tables)
    else:
        text = diagrams.to_dot(tables[0]) if len(tables) == 1 else diagrams.combined_dot(tables)
        if args.output == "svg":
            try:
                text = diagrams.render_svg(text)
            except diagrams.GraphvizError as e:
                raise UsageError(str(e)) from None
    print(text, end="")
    return 0


def _conform(args: argparse.Namespace) -> int:
    try:
        files = collect(args.paths)
    except FileNotFoundError as e:
        raise UsageError(str(e)) from None
    if not files:
        raise UsageError(f"no *.yaml scenario files in {', '.join(args.paths)}")
    if args.cluster is not None:
        return _conform_cluster(args, files)
    passed = failed = 0
    for outcome in conform(files, debug=args.debug):
        print(outcome.line(), flush=True)
        passed, failed = passed + outcome.passed, failed + (not outcome.passed)
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


def _conform_cluster(args: argparse.Namespace, files: list[Path]) -> int:
    """``conform --cluster``: the runner (conformance) drives the cluster port's driver."""
    from kueue_provreq.cluster import client
    from kueue_provreq.cluster.conform import judge_on_cluster
    from kueue_provreq.cluster.testbed.controlplane import testbed_of

    if args.parallel < 1:
        raise UsageError(f"--parallel: expected a positive number, got {args.parallel}")
    try:
        max_advance = parse_duration(args.max_advance)
    except ValueError as e:
        raise UsageError(f"--max-advance: {e}") from None
    counts = {"passed": 0, "failed": 0, "skipped": 0}

    def report(outcome: Outcome) -> None:
        print(outcome.line(), flush=True)
        key = "skipped" if outcome.skipped is not None else "passed" if outcome.passed else "failed"
        counts[key] += 1

    try:
        with client.connect(args.cluster, args.context) as api:
            judge_on_cluster(api, list(scenarios_in(files)), testbed_of(args.cluster), report,
                             lambda scenario, driver: Run(scenario, driver=driver, debug=args.debug).run(),
                             parallel=args.parallel, max_advance=max_advance)
    except (client.ClusterError, client.ApiError) as e:
        raise UsageError(str(e)) from None
    print(f"{counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped")
    return 0 if counts["failed"] == 0 else 1


def _scenarios(source: str) -> list[Scenario]:
    """The scenarios of ``run``'s argument: a file, a folder (searched as ``conform`` does) or
    ``-``; every unreadable one is an error line."""
    if source == "-":
        items = load_scenarios(Path("<stdin>"), sys.stdin.read())
    else:
        try:
            files = collect([source])
        except FileNotFoundError as e:
            raise UsageError(str(e)) from None
        if not files:
            raise UsageError(f"{source}: no *.yaml scenario files")
        items = [item for path in files for item in load_scenarios(path)]
    broken = [item for item in items if isinstance(item, Outcome)]
    if broken:
        raise InputErrors([ManifestError(item.failure or "cannot be read", source=item.source) for item in broken])
    return [item for item in items if not isinstance(item, Outcome)]


def _run(args: argparse.Namespace) -> int:
    config = _configuration_file(args.config)
    scenarios = _scenarios(args.scenario)
    if config is not None:
        # a Kueue Configuration has no semantics switches: each scenario keeps its own
        scenarios = [attrs.evolve(s, config=attrs.evolve(config, semantics=s.config.semantics)) for s in scenarios]
    jsonl = args.format == "jsonl"
    emit = jsonl_writer(sys.stdout) if jsonl else text_writer(sys.stdout)
    failed = 0
    for scenario in scenarios:
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
    except InputErrors as e:
        if args.debug:
            raise
        for line in e.lines():
            print(f"{PROG}: error: {line}", file=sys.stderr)
        return 2
    except ModelFailure as e:
        if args.debug:
            raise
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        # the reader (``| head``) is gone; say nothing more, and let Python not complain either
        sys.stderr.close()
        return 1
    return status


if __name__ == "__main__":
    sys.exit(main())
