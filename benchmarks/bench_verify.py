"""What verify mode's extra cost over fast mode is made of, on bench_core's settle story.

Verify mode (``Manager(verify=True)``, the default of the runner, the explorer and the tests)
does four things fast mode does not; this settles the same N workloads as bench_core's (c)
and (c') with each of them knocked out in turn, interleaved and repeated so that the ratios
come from one run on a noisy machine (the fastest of each counts; CPU time, not wall time,
so that other processes on the machine move them less):

- ``verify_change``: every Workload write checked against the declared machines;
- ``check_index``: the queue index compared with one rebuilt from the objects, per settle;
- the sweeps (``_check_quiet``): before and after each settle every reconcile is quiet, by
  the evidence of an earlier run whose reads still answer the same, else by a rerun;
- the skip proofs (``_prove_skipped``): every reconcile a watch left out, rerun.  Knocked
  out together with the sweeps, which would otherwise rerun what the proofs left as evidence.

What is left with all four knocked out is keeping what each reconcile reads.  It then
counts the proofs by controller and reason.  The knock-outs are for measuring only: with
one, verify mode proves less than it says.

Usage: python benchmarks/bench_verify.py [--size 3000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
import types
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kueue_provreq import engine
from kueue_provreq.api.objects import Key
from kueue_provreq.controllers import queues
from kueue_provreq.controllers.context import Context
from kueue_provreq.engine import verify as verify_mode

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_core  # noqa: E402  (the settle story itself, not a copy)

Manager = engine.VerifyingManager

#: variant -> what it knocks out
VARIANTS: dict[str, tuple[str, ...]] = {
    "fast": (),
    "verify": (),
    "- verify_change": ("verify_change",),
    "- check_index": ("check_index",),
    "- sweeps": ("sweeps",),
    "- sweeps, skip proofs": ("sweeps", "proofs"),
    "- all four": ("verify_change", "check_index", "sweeps", "proofs"),
}


@contextmanager
def knocked_out(parts: tuple[str, ...]) -> Iterator[None]:
    saved = verify_mode.verify_change, queues.check_index, Manager._check_quiet, Manager._prove_skipped
    try:
        if "verify_change" in parts:
            verify_mode.verify_change = lambda old, update: None
        if "check_index" in parts:
            queues.check_index = lambda world: None
        if "sweeps" in parts:
            Manager._check_quiet = lambda self, ctx, names, skip=frozenset(): None  # type: ignore[assignment]
        if "proofs" in parts:
            def forget(self: engine.VerifyingManager, ctx: Context) -> None:
                self._witnessed.skips = {}
            Manager._prove_skipped = forget  # type: ignore[method-assign]
        yield
    finally:
        verify_mode.verify_change, queues.check_index, Manager._check_quiet, Manager._prove_skipped = saved


def proof_counts(n: int) -> tuple[Counter[tuple[str, str]], Counter[str]]:
    """Skip proofs by (controller, reason) and sweep reruns by controller, in one verify settle."""
    skips: Counter[tuple[str, str]] = Counter()
    reruns: Counter[str] = Counter()
    prove, rerun = Manager._prove_skipped, Manager._check_quiet_one

    def counting_prove(self: engine.VerifyingManager, ctx: Context) -> None:
        for (name, key), why in self._witnessed.skips.items():
            if (name, key) not in self.due.queued and key in self.world:
                skips[(name, why.split(" by ")[0])] += 1
        prove(self, ctx)

    def counting_rerun(self: engine.VerifyingManager, name: str, key: Key, why: str, ctx: Context) -> None:
        reruns[name] += 1
        rerun(self, name, key, why, ctx)

    Manager._prove_skipped = counting_prove  # type: ignore[method-assign]
    Manager._check_quiet_one = counting_rerun  # type: ignore[method-assign]
    try:
        bench_core.settle_cycle(n, verify=True)
    finally:
        Manager._prove_skipped, Manager._check_quiet_one = prove, rerun  # type: ignore[method-assign]
    return skips, reruns


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", type=int, default=3000)
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args(argv)
    n = args.size
    bench_core.time = types.SimpleNamespace(perf_counter=time.process_time)  # type: ignore[assignment]
    for verify in (False, True):  # warm the models' caches, as bench_core's repeats do
        bench_core.settle_cycle(min(n, 100), verify=verify)
    seconds: dict[str, list[float]] = {name: [] for name in VARIANTS}
    for _ in range(args.repeat):
        for name, parts in VARIANTS.items():
            gc.collect()
            with knocked_out(parts):
                seconds[name].append(bench_core.settle_cycle(n, verify=name != "fast")[0])
    best = {name: min(s) for name, s in seconds.items()}
    fast = best["fast"]

    def ratio(name: str) -> float:
        return best[name] / fast

    print(f"settle {n} workloads, the fastest of {args.repeat} (CPU time), as a multiple of fast mode:")
    for name in VARIANTS:
        print(f"  {name:<24} {best[name] / n * 1e6:7.1f} us/workload  {ratio(name):5.3f}x")
    print("verify mode's extra cost, by part:")
    print(f"  verify_change            {ratio('verify') - ratio('- verify_change'):+6.3f}x")
    print(f"  check_index              {ratio('verify') - ratio('- check_index'):+6.3f}x")
    print(f"  sweeps                   {ratio('verify') - ratio('- sweeps'):+6.3f}x")
    print(f"  skip proofs (no sweeps)  {ratio('- sweeps') - ratio('- sweeps, skip proofs'):+6.3f}x")
    print(f"  keeping reads, the rest  {ratio('- all four') - 1:+6.3f}x")
    skips, reruns = proof_counts(n)
    print(f"proofs per workload: {sum(skips.values()) / n:.1f} of skipped reconciles, "
          f"{sum(reruns.values()) / n:.1f} sweep reruns")
    for (name, why), count in skips.most_common():
        print(f"  {count / n:5.2f}  {name:<14} {why}")
    for name, count in reruns.most_common():
        print(f"  {count / n:5.2f}  {name:<14} rerun by a sweep")
    return 0


if __name__ == "__main__":
    sys.exit(main())
