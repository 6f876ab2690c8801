"""``kueue-provreq calibrate TRACE --out DIR``: the Cluster Autoscaler model fitted to a trace."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import yaml

from kueue_provreq.cli import folder, options
from kueue_provreq.extras import SIM, require


def register(subparsers: argparse._SubParsersAction[options.Parser]) -> None:
    cmd = options.add_command(
        subparsers, "calibrate", run, help="fit the Cluster Autoscaler model to a recorded trace",
        description="Fit, per provisioning class, the time to Provisioned and to the no-capacity answer "
                    "(lognormal, maximum likelihood), the failure probability (binomial) and, where the "
                    "answers cluster in time, stock-outs, to a trace that kueue-provreq record wrote. "
                    "Writes autoscaler.yaml (a simulation file's autoscaler section: autoscaler: "
                    "autoscaler.yaml includes it), fit.json (sample sizes, values with 95%% intervals, "
                    "what the trace cannot identify) and fit.png (fitted against observed delays).")
    cmd.add_argument("trace", metavar="TRACE", help="a trace file (JSON lines)")
    options.out_folder(cmd, "autoscaler.yaml, fit.json and fit.png")


def run(args: argparse.Namespace) -> int:
    if args.out is None:
        raise options.UsageError("--out DIR is required: calibrate writes autoscaler.yaml, fit.json and fit.png")
    require(SIM, "scipy", "calibrate")
    options.plots_available("--out")
    target = folder.check("--out", args.out, args.force)
    from kueue_provreq import trace
    from kueue_provreq.simulation import calibrate

    recorded = trace.read(args.trace)
    fits = calibrate.fit(recorded)

    def fill(out: Path) -> None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "autoscaler.yaml").write_text(
            yaml.safe_dump(calibrate.autoscaler_section(fits), sort_keys=False), encoding="utf-8")
        (out / "fit.json").write_text(json.dumps(calibrate.fit_json(recorded, fits), indent=2) + "\n",
                                      encoding="utf-8")
        calibrate.plot(fits, out / "fit.png")

    folder.write("--out", target, fill)
    for f in fits:
        print(f"{f.name}: {f.attempts} attempt(s), {f.answered} answered, {f.failures} without capacity")
        for line in calibrate.summary_lines(f):
            print(f"  {line}")
        for line in f.unidentified:
            print(f"  not identified: {line}")
    print("wrote autoscaler.yaml, fit.json and fit.png")
    return 0
