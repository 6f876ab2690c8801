"""How much simulated time costs: 100,000 workloads of a bundled simulation, end to end,
against the settle benchmark's cost per workload measured in the same process.

(s) ``simulate`` of ``--example`` with ``--workloads`` arrivals: wall time, cost per workload,
    peak memory (the process's maximum resident set, read before (c) runs), and how the time
    splits between the engine's settles and the simulation's own work (events, the sampled
    Cluster Autoscaler, the job model, the metrics);
(c) ``bench_core``'s settle story (provision -> fail -> retry -> provision) at ``--settle-size``
    workloads, the fastest of ``--repeat``: its cost per workload is the reference.

The goal is (s) per workload at most 1.5x (c) per workload.

Usage: python benchmarks/bench_sim.py [--workloads 100000] [--example FILE] [--settle-size 10000] [--repeat 2]
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from collections import Counter
from pathlib import Path

from kueue_provreq.controllers.context import Context
from kueue_provreq.engine import Manager
from kueue_provreq.simulation import load_document, parse, simulate

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_core import settle_cycle  # noqa: E402  (the settle story itself, not a copy)

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_EXAMPLE = ROOT / "examples" / "simulations" / "retry-strategy-sweep.yaml"


def peak_rss_mib() -> float:
    """The process's peak resident set so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def timed_simulation(path: Path, workloads: int, cycles: Counter[bool] | None = None
                     ) -> tuple[float, float, int, int, object]:
    """(seconds, seconds inside the engine's settles, settles, reconciles, report); ``cycles``
    counts the scheduling cycles over every queue the engine left out (True: the scheduler
    waited, ``queues.idle``) and ran (False)."""
    settle, idle = Manager.settle, Manager._idle
    spent = [0.0, 0, 0]

    def counted(self: Manager, ctx: Context) -> bool:
        waited = idle(self, ctx)
        if cycles is not None:
            cycles[waited] += 1
        return waited

    def timed(self: Manager, *args: object, **kwargs: object) -> None:
        t = time.perf_counter()
        before = self.reconciles
        try:
            settle(self, *args, **kwargs)  # type: ignore[arg-type]
        finally:
            spent[0] += time.perf_counter() - t
            spent[1] += 1
            spent[2] += self.reconciles - before

    sim = parse(load_document(path), count=workloads)
    Manager.settle, Manager._idle = timed, counted  # type: ignore[method-assign]
    try:
        t = time.perf_counter()
        report = simulate(sim)
        elapsed = time.perf_counter() - t
    finally:
        Manager.settle, Manager._idle = settle, idle  # type: ignore[method-assign]
    return elapsed, float(spent[0]), int(spent[1]), int(spent[2]), report


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workloads", type=int, default=100_000)
    p.add_argument("--example", type=Path, default=DEFAULT_EXAMPLE)
    p.add_argument("--settle-size", type=int, default=10_000)
    p.add_argument("--repeat", type=int, default=2, help="settle runs, the fastest counts (the machine is noisy)")
    args = p.parse_args(argv)

    base_rss = peak_rss_mib()
    cycles: Counter[bool] = Counter()
    secs, in_settle, settles, reconciles, report = timed_simulation(args.example, args.workloads, cycles)
    summary = report.summary  # type: ignore[attr-defined]
    peak = peak_rss_mib()
    n = summary.workloads
    if n != args.workloads:
        print(f"ERROR: {n} of {args.workloads} workloads arrived", file=sys.stderr)
        return 1
    per_workload = secs / n * 1e6
    print(f"(s) simulate {n} workloads of {args.example.name}: {secs:8.1f} s  {per_workload:7.1f} us/workload  "
          f"({summary.simulated_seconds / 86400:.1f} simulated days; finished {summary.finished}, "
          f"deactivated {summary.deactivated})", flush=True)
    print(f"    {settles / n:5.2f} settles/workload, {reconciles / n:5.1f} reconciles/workload; "
          f"{in_settle / secs:5.1%} of the time in the engine's settles, {1 - in_settle / secs:5.1%} in the "
          f"simulation's own work")
    print(f"    scheduling cycles: {cycles[False] / n:5.2f}/workload run, {cycles[True] / n:5.2f}/workload left out "
          "(nothing they read had changed)")
    print(f"    peak memory {peak:7.1f} MiB (process maximum resident set; {base_rss:.1f} MiB before the run)")

    best: float | None = None
    for _ in range(args.repeat):
        settle_secs, _, admitted, settled = settle_cycle(args.settle_size)
        del settled
        if admitted != args.settle_size:
            print(f"ERROR: {admitted} of {args.settle_size} workloads admitted by the settle story", file=sys.stderr)
            return 1
        best = settle_secs if best is None else min(best, settle_secs)
    assert best is not None
    settle_per_workload = best / args.settle_size * 1e6
    print(f"(c) settle {args.settle_size} workloads (provision-fail-retry-provision): {best:8.2f} s  "
          f"{settle_per_workload:7.1f} us/workload", flush=True)
    print(f"    ratio (s)/(c) per workload: {per_workload / settle_per_workload:5.2f}x   (goal <= 1.5x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
