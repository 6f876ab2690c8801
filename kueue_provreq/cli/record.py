"""``kueue-provreq record``: a trace of what a cluster did (``docs/trace-format.rst``), from dumps
taken over time (``-f``) or from a live cluster (``--kubeconfig``, until interrupted)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from kueue_provreq import trace
from kueue_provreq.cli import options
from kueue_provreq.cli.output import note
from kueue_provreq.manifests import ManifestError, load_file


def register(subparsers: argparse._SubParsersAction[options.Parser]) -> None:
    cmd = options.add_command(
        subparsers, "record", run, help="record a trace of arrivals, provisioning attempts and finishes",
        description="Append to a trace (JSON lines, docs: 'Trace format') what the Workloads and "
                    "ProvisioningRequests of dumps taken over time (-f, e.g. kubectl get workloads,"
                    "provisioningrequests -A -o json) or of a live cluster (--kubeconfig, until interrupted "
                    "or --for DURATION) show: each workload's arrival, each request's first answer, each "
                    "finish. Records the trace already holds are not written again, so a recording can "
                    "be resumed; progress goes to stderr.")
    source = cmd.add_mutually_exclusive_group(required=True)
    source.add_argument("-f", "--filename", action="append", metavar="FILE|DIR",
                        help="a dump (a List or objects, YAML or JSON), or a folder of *.json/*.yaml dumps; "
                             "repeatable; read in the order of the newest time each records")
    options.cluster(cmd, group=source, namespace_help="with --kubeconfig: record namespace NS only "
                                                      "(default: all namespaces)")
    cmd.add_argument("--trace", metavar="FILE", required=True, help="the trace to append to (created if absent)")
    cmd.add_argument("--for", dest="duration", metavar="DURATION", default=None,
                     help="with --kubeconfig: stop after DURATION (default: until interrupted)")


def run(args: argparse.Namespace) -> int:
    for given, option in ((args.duration, "--for"), (args.namespace or None, "--namespace"), (args.context, "--context")):
        if given is not None and args.kubeconfig is None:
            raise options.UsageError(f"{option} needs --kubeconfig (a dump holds what it holds)")
    duration = options.duration("--for", args.duration) if args.duration is not None else None
    path = Path(args.trace)
    known = trace.read(path).records if path.exists() else ()
    if args.kubeconfig is None:
        dumps = _dumps(args.filename)  # every dump read before the trace is touched
        with path.open("a", encoding="utf-8") as stream:
            writer = trace.Writer(stream, known)
            _record_dumps(dumps, writer)
        note("info", f"{path}: {writer.written} new record(s) from {len(dumps)} dump(s)")
        return 0
    from kueue_provreq.cluster import client
    from kueue_provreq.cluster.record import TraceRecorder

    def log(line: str) -> None:
        note("info", line)

    with client.connect(args.kubeconfig, args.context) as api, path.open("a", encoding="utf-8") as stream:
        writer = trace.Writer(stream, known)
        recorder = TraceRecorder(api, writer, args.namespace, time.time, log, time.sleep)
        log(f"recording {api.server} ({'namespace ' + args.namespace if args.namespace else 'all namespaces'}) "
            f"to {path} ({len(known)} record(s) already there); Ctrl-C stops")
        try:
            recorder.run(None if duration is None else time.time() + duration)
        except KeyboardInterrupt:
            pass
        finally:
            recorder.close()
        log(f"stopped: {writer.written} new record(s)")
    return 0


def _dumps(sources: list[str]) -> list[tuple[int, str, list[dict[str, Any]]]]:
    """Each dump's documents and the newest time it records, oldest dump first."""
    files: list[Path] = []
    for source in sources:
        given = Path(source)
        if given.is_dir():
            files += sorted(p for p in given.iterdir() if p.suffix in (".json", ".yaml", ".yml") and p.is_file())
        else:
            files.append(given)
    out = []
    for file in files:
        documents = load_file(file)
        newest = trace.newest_time(documents)
        if newest is None:
            raise ManifestError("no Workloads or ProvisioningRequests with a creationTimestamp", source=str(file))
        out.append((newest, str(file), documents))
    return sorted(out, key=lambda d: (d[0], d[1]))


def _record_dumps(dumps: list[tuple[int, str, list[dict[str, Any]]]], writer: trace.Writer) -> None:
    """Each dump as seen at the newest time it records; one window from the first arrival to
    the last dump."""
    records: list[trace.Record] = []
    for taken, _, documents in dumps:
        records += trace.observe(documents, taken)
    writer.add(records)
    arrivals = [r.time for r in records if isinstance(r, trace.Arrival)]
    if arrivals:
        writer.add([trace.Window(min(arrivals), dumps[-1][0])])
