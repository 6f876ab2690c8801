"""``kueue-provreq run SCENARIO|DIR|-``: run scenarios and print their timelines."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kueue_provreq.api.evolve import evolve
from kueue_provreq.cli import options
from kueue_provreq.conformance.runner import Outcome, Run, collect, load_scenarios
from kueue_provreq.conformance.scenario import Scenario
from kueue_provreq.conformance.timeline import Timeline, jsonl_writer, text_writer
from kueue_provreq.manifests import ManifestError
from kueue_provreq.manifests.inputs import InputErrors
from kueue_provreq.manifests.yamlio import read_stream


def register(subparsers: argparse._SubParsersAction[options.Parser]) -> None:
    cmd = options.add_command(
        subparsers, "run", run, help="run scenarios and print their timelines",
        description="Run the scenario(s) of a file (a folder: its *.yaml files, searched "
                    "recursively; -: standard input) and print, step by step, the clock, every "
                    "object change, event and metric increment, the workloads' phase and "
                    "admission-check state changes, and the expectations' outcome. -o jsonl prints "
                    "one JSON object per line, with the manifest of every object written.")
    cmd.add_argument("scenario", metavar="SCENARIO|DIR|-", help="a scenario YAML file, a folder, or -")
    options.output(cmd, ("text", "jsonl"), "--format")
    options.config_file(cmd, "instead of each scenario's own config")


def _scenarios(source: str) -> list[Scenario]:
    """The scenarios of ``run``'s argument: a file, a folder (searched as ``conform`` does) or
    ``-``; every problem of every unreadable one is an error line."""
    if source == "-":
        items = load_scenarios(Path("<stdin>"), read_stream(sys.stdin))
    else:
        files = collect([source])
        if not files:
            raise options.UsageError(f"{source}: no *.yaml scenario files")
        items = [item for path in files for item in load_scenarios(path)]
    broken = [item for item in items if isinstance(item, Outcome)]
    if broken:
        raise InputErrors([error for item in broken
                           for error in item.errors or (ManifestError(item.failure or "cannot be read",
                                                                      source=item.source),)])
    return [item for item in items if not isinstance(item, Outcome)]


def run(args: argparse.Namespace) -> int:
    config = options.configuration_file(args.config)
    scenarios = _scenarios(args.scenario)
    if config is not None:
        # a Kueue Configuration has no semantics switches: each scenario keeps its own
        scenarios = [evolve(s, config=evolve(config, semantics=s.config.semantics)) for s in scenarios]
    jsonl = args.output == "jsonl"
    emit = jsonl_writer(sys.stdout) if jsonl else text_writer(sys.stdout)
    failed = 0
    for scenario in scenarios:
        outcome = Run(scenario, Timeline(emit, with_objects=jsonl), keep_going=True, debug=args.debug).run()
        failed += not outcome.passed
    return 0 if failed == 0 else 1
