"""``make test-oracle``: every scenario judged twice, by the model and by the real Kueue.

Starts a testbed of its own (``.oracle/bin``, a temporary state folder), runs the scenarios of
the given paths on the model (``conform``) and on the testbed's Kueue (``conform --cluster``),
stops the testbed, and prints one line per scenario file with both verdicts::

    specs/provisioning/request-created.yaml: model PASS, real Kueue PASS
    specs/provisioning/fault-request-create-error.yaml: model PASS, real Kueue SKIP (API faults ...)

and the closing line ``model N passed, M failed; real Kueue N passed, M failed, K skipped;
disagree D``, where a disagreement is a scenario one side passes and the other fails (a skip
disagrees with nothing: docs/real-kueue.rst lists every skip and every real failure with its
reason).  Exit status 0 only when nothing disagrees.  Usage: ``python oracle/compare.py
[--parallel N] PATH...`` (default ``specs``).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from kueue_provreq.cli.conform import judge_on_cluster
from kueue_provreq.cluster import client
from kueue_provreq.cluster.testbed import controlplane
from kueue_provreq.conformance.runner import Outcome, Run, collect, scenarios_in


def _verdict(outcome: Outcome) -> str:
    if outcome.skipped is not None:
        return f"SKIP ({outcome.skipped})"
    return "PASS" if outcome.passed else f"FAIL ({outcome.failure})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", default=["specs"])
    parser.add_argument("--parallel", type=int, default=4)
    args = parser.parse_args(argv)
    items = list(scenarios_in(collect(args.paths)))
    model = [item if isinstance(item, Outcome) else Run(item).run() for item in items]
    oracle = controlplane.find_oracle()
    with tempfile.TemporaryDirectory(prefix="kueue-provreq-oracle-") as folder:
        testbed = controlplane.up(oracle, Path(folder) / "testbed")
        started = time.monotonic()
        try:
            with client.connect(testbed.kubeconfig, None) as api:
                real = list(judge_on_cluster(api, items, testbed, parallel=args.parallel))
        finally:
            controlplane.down(Path(testbed.folder))
        took = time.monotonic() - started
    counts = {"model": [0, 0], "real": [0, 0, 0]}
    disagree = 0
    for m, r in zip(model, real, strict=True):
        print(f"{m.source}: {m.name}: model {_verdict(m)}, real Kueue {_verdict(r)}")
        counts["model"][0 if m.passed else 1] += 1
        counts["real"][2 if r.skipped is not None else 0 if r.passed else 1] += 1
        disagree += r.skipped is None and m.passed != r.passed
    (mp, mf), (rp, rf, rs) = counts["model"], counts["real"]
    print(f"(the real Kueue's run took {took:.0f} s)", file=sys.stderr)
    print(f"model {mp} passed, {mf} failed; real Kueue {rp} passed, {rf} failed, {rs} skipped; disagree {disagree}")
    return 0 if disagree == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
