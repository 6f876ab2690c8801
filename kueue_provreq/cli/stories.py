"""``kueue-provreq stories``: random stories on the model, and with ``--cluster`` on the real Kueue too.

The stories are :mod:`kueue_provreq.conformance.stories` (scenarios whose expectations are the
model's settled states); on a cluster each runs through the cluster port's driver
(:mod:`kueue_provreq.cluster.conform`), the two edges joined here.  Every story is timed on each
side, so the closing line gives the model's speed advantage as measured.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import attrs
import yaml

from kueue_provreq.cli import options
from kueue_provreq.conformance.runner import Outcome, Run
from kueue_provreq.conformance.scenario import Scenario, parse_scenario
from kueue_provreq.conformance.stories import story

#: A story's advances add up to far less; the limit only keeps a runaway story from waiting long.
MAX_ADVANCE = 600.0
#: A settle's quiet on the cluster: twice the driver's default, since stories run side by side on
#: machines shared with other work, and a settle that ends before Kueue answered is a false
#: disagreement (the stories' backoffs are longer than a settle with it, see MIN_BACKOFF).
QUIET = 3.0


def register(subparsers: argparse._SubParsersAction[options.Parser]) -> None:
    cmd = options.add_command(
        subparsers, "stories", run, help="random stories on the model, and on the real Kueue (--cluster)",
        description="Make COUNT random stories from SEED on (a ClusterQueue with flavors and "
                    "provisioning checks with retry settings, jobs of random sizes and priorities, "
                    "Cluster Autoscaler's answers, finishes and deactivations), each a conformance "
                    "scenario whose expectations are the model's settled state after every step, and "
                    "replay them on the model; with --cluster run them on the real Kueue too. Prints "
                    "'AGREE story N' or 'DISAGREE story N: step M: <first difference>' (or 'SKIP') per "
                    "story, then 'N agree, M disagree, K skipped' and the time per story on each side. "
                    "Exit status 0 only when no story disagrees.")
    cmd.add_argument("--seed", type=int, default=0, help="the first story's seed (default 0)")
    cmd.add_argument("--count", type=int, default=20, help="how many stories, seeds SEED, SEED+1, ... (default 20)")
    cmd.add_argument("--length", type=int, default=8, help="actions per story, each then settled (default 8)")
    options.out_folder(cmd, "each story as a scenario file (story-SEED.yaml)")
    real = cmd.add_argument_group("the real Kueue")
    real.add_argument("--cluster", metavar="KUBECONFIG", help="run the stories on the real Kueue of this cluster too")
    real.add_argument("--context", metavar="NAME", help="the kubeconfig context (default: its current one)")
    real.add_argument("--parallel", type=int, default=4, metavar="N",
                      help="stories run side by side on the cluster, each in namespaces of its own (default 4)")
    real.add_argument("--quiet", type=float, default=QUIET, metavar="SECONDS",
                      help=f"a settle ends after this long without a change (default {QUIET:g}; more on a "
                           "loaded machine, where Kueue answers slowly)")


@attrs.frozen
class Verdict:
    """One story on each side."""

    seed: int
    model: Outcome
    model_seconds: float
    real: Outcome | None = None
    real_seconds: float = 0.0

    def line(self) -> str:
        name = f"story {self.seed}"
        if not self.model.passed:  # the model does not replay its own story: a defect to fix first
            return f"FAIL {name}: the model does not replay it: {self.model.failure}"
        if self.real is None:
            return f"PASS {name} ({self.model_seconds:.3f} s)"
        if self.real.skipped is not None:
            return f"SKIP {name}: {self.real.skipped}"
        if self.real.failure is not None:
            return f"DISAGREE {name}: {self.real.failure}"
        return f"AGREE {name} (model {self.model_seconds:.3f} s, real Kueue {self.real_seconds:.1f} s)"


def run(args: argparse.Namespace) -> int:
    options.at_least("--count", args.count, 1)
    options.at_least("--length", args.length, 1)
    options.at_least("--parallel", args.parallel, 1)
    if args.cluster is None and args.context is not None:
        raise options.UsageError("--context needs --cluster")
    seeds = list(range(args.seed, args.seed + args.count))
    documents = [story(seed, args.length) for seed in seeds]
    if args.out is not None:
        folder = Path(args.out)
        folder.mkdir(parents=True, exist_ok=True)
        for seed, doc in zip(seeds, documents, strict=True):
            (folder / f"story-{seed}.yaml").write_text(yaml.safe_dump(doc, sort_keys=False, width=120))
    scenarios = [parse_scenario(doc, doc["name"]) for doc in documents]
    on_model = [_timed(Run(s, debug=args.debug).run) for s in scenarios]
    if args.cluster is None:
        verdicts = [Verdict(seed, o, t) for seed, (o, t) in zip(seeds, on_model, strict=True)]
        for v in verdicts:
            print(v.line())
        failed = sum(not v.model.passed for v in verdicts)
        print(f"{len(verdicts) - failed} passed, {failed} failed; model {_mean([v.model_seconds for v in verdicts]):.3f} "
              "s per story")
        return 0 if failed == 0 else 1
    real = on_cluster(args, scenarios)
    verdicts = [Verdict(seed, o, t, r, rt)
                for seed, (o, t), (r, rt) in zip(seeds, on_model, real, strict=True)]
    for v in verdicts:
        print(v.line())
    return _close(verdicts)


def on_cluster(args: argparse.Namespace, scenarios: Sequence[Scenario]) -> list[tuple[Outcome, float]]:
    """Each story on the real Kueue, ``--parallel`` at a time, timed one by one."""
    from kueue_provreq.cluster import client
    from kueue_provreq.cluster.conform import ClusterDriver, Session
    from kueue_provreq.cluster.testbed.controlplane import testbed_of

    testbed = testbed_of(args.cluster)
    with client.connect(args.cluster, args.context) as api:
        session = Session(api, testbed.metrics_url if testbed is not None else None)
        session.start()
        try:
            with ThreadPoolExecutor(args.parallel) as pool:
                return list(pool.map(lambda s: _timed(lambda: Run(
                    s, driver=ClusterDriver(session, max_advance=MAX_ADVANCE, quiet=args.quiet), debug=args.debug).run()), scenarios))
        finally:
            session.close()


def _timed(work: Callable[[], Outcome]) -> tuple[Outcome, float]:
    start = time.perf_counter()
    outcome = work()
    return outcome, time.perf_counter() - start


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _close(verdicts: Sequence[Verdict]) -> int:
    """The closing lines: agreement, then the time per story on each side of those that ran."""
    ran = [v for v in verdicts if v.model.passed and v.real is not None and v.real.skipped is None]
    agree = sum(v.real is not None and v.real.passed for v in ran)
    broken = sum(not v.model.passed for v in verdicts)
    skipped = len(verdicts) - len(ran) - broken
    print(f"{agree} agree, {len(ran) - agree} disagree, {skipped} skipped"
          + (f", {broken} not replayed by the model" if broken else ""))
    if ran:
        model, real = _mean([v.model_seconds for v in ran]), _mean([v.real_seconds for v in ran])
        print(f"per story: model {model:.3f} s, real Kueue {real:.1f} s "
              f"(the model {real / model:,.0f} times faster)")
    return 0 if agree == len(ran) and not broken else 1
