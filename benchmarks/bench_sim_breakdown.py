"""Where a simulated workload's time goes: ``bench_breakdown``'s parts for ``bench_sim``'s
simulation, and what the simulation adds around the engine.

- each controller's own work and the scheduler's cycles, applying effects and routing them,
  timed as ``bench_breakdown`` times them on the settle story (here applying includes the
  watch's hooks, as the loop hears every effect the engine applies);
- the scheduler's cycles that ran, those that wrote and those that did not, per workload;
- the watch: the simulation's processes and observers hearing each effect, inside the
  settles and out;
- the simulation's own work outside the settles: its events (arrivals, Cluster Autoscaler's
  answers, the job model, the retention policy) and the loop between them.

Run ``bench_breakdown.py`` at the same size just before or after, to compare each part per
workload and per call with the settle story's.

Usage: python benchmarks/bench_sim_breakdown.py [--workloads 3000] [--example FILE]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from kueue_provreq.controllers.context import Context
from kueue_provreq.engine import SCHEDULER, Manager
from kueue_provreq.simulation import load_document, parse, simulate
from kueue_provreq.simulation.loop import Loop
from kueue_provreq.simulation.watch import Watch
from kueue_provreq.world import Effect

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_breakdown import Breakdown, report  # noqa: E402
from bench_sim import DEFAULT_EXAMPLE  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workloads", type=int, default=3000)
    p.add_argument("--example", type=Path, default=DEFAULT_EXAMPLE)
    args = p.parse_args(argv)
    sim = parse(load_document(args.example), count=args.workloads)
    breakdown = Breakdown()
    spent = {"settles": 0.0, "watch": 0.0, "cycles that wrote": 0.0, "cycles that did not": 0.0}
    clock = time.perf_counter
    loop_init, watch_call, settle = Loop.__init__, Watch.__call__, Manager.settle

    def made(loop: Loop, *a: Any, **kw: Any) -> None:
        loop_init(loop, *a, **kw)
        breakdown.instrument(loop.manager)
        reconcile = loop.manager.reconcile  # the breakdown's, timing the parts

        def counted(controller: str, key: Any, ctx: Context) -> Any:
            before = loop.manager.reconciles
            result, changed = reconcile(controller, key, ctx)
            if controller == SCHEDULER and loop.manager.reconciles > before:  # a cycle ran
                spent["cycles that wrote" if result.effects else "cycles that did not"] += 1
            return result, changed
        loop.manager.reconcile = counted  # type: ignore[method-assign]

    def heard(watch: Watch, actor: str, effect: Effect) -> None:
        t = clock()
        try:
            watch_call(watch, actor, effect)
        finally:
            spent["watch"] += clock() - t

    def timed_settle(manager: Manager, *a: Any, **kw: Any) -> None:
        t = clock()
        try:
            settle(manager, *a, **kw)
        finally:
            spent["settles"] += clock() - t

    Loop.__init__, Watch.__call__, Manager.settle = made, heard, timed_settle  # type: ignore[method-assign,assignment]
    try:
        t = clock()
        simulated = simulate(sim)
        total = clock() - t
    finally:
        Loop.__init__, Watch.__call__, Manager.settle = loop_init, watch_call, settle  # type: ignore[method-assign]
    n = simulated.summary.workloads
    us = 1e6 / n
    lines = report(n, total, breakdown)
    lines[0] = f"simulate {n} workloads of {args.example.name} (fast mode): {total:.2f} s, {total * us:.0f} us/workload"
    lines += ["", f"  scheduling cycles run: {spent['cycles that wrote'] / n:.2f}/workload wrote, "
                  f"{spent['cycles that did not'] / n:.2f}/workload did not",
              f"  the watch (its hooks, inside the settles and out): {spent['watch'] * us:.1f} us/workload "
              f"({spent['watch'] / total:.1%})",
              f"  outside the settles (events, their writes and hooks, the loop): {(total - spent['settles']) * us:.1f}"
              f" us/workload ({1 - spent['settles'] / total:.1%})"]
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
