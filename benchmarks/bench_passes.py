"""What each pass of the Workload controllers costs, one by one, on bench_core's settle story.

``bench_breakdown`` says how much of a settle each controller takes; this says which of its
passes over one workload take it.  A reconcile is a pure function of the world (it returns its
effects; the Manager applies them), so each pass the story makes of one workload (``--workload``,
of a settle of ``--size``) is run again ``--runs`` times on the world as that pass found it,
before the Manager runs it, and its CPU time is divided by the runs (the least of three
repeats: the machine is shared).  Memos are warm, as they are in a large settle.

Each line: the controller, the pass's place among its passes of the workload, its cost, and
what it wrote (the kinds of its effects).

Usage: python benchmarks/bench_passes.py [--size 20] [--workload wl-5] [--runs 2000]
           [--controllers workload,provisioning,job]
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from collections import Counter
from pathlib import Path

from kueue_provreq.api.objects import Key
from kueue_provreq.controllers import registry
from kueue_provreq.controllers.context import Context
from kueue_provreq.engine import Manager
from kueue_provreq.world import Result

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_core import settle_cycle  # noqa: E402

Pass = tuple[str, int, float, str]
"""(controller, its pass number over the workload, microseconds, what it wrote)."""


def _wrote(result: Result) -> str:
    kinds = Counter(type(e).__name__ for e in result.effects)
    return ", ".join(f"{n} {kind}" if n > 1 else kind for kind, n in kinds.items()) or "nothing"


def measure(size: int, workload: str, runs: int, controllers: set[str]) -> list[Pass]:
    """Every pass of ``controllers`` over ``workload`` in a settle story of ``size``, timed."""
    passes: list[Pass] = []
    seen: Counter[str] = Counter()

    def instrument(manager: Manager) -> None:
        reconcile = manager.reconcile

        def timed(controller: str, key: Key, ctx: Context) -> tuple[Result, object]:
            name = str(controller)
            if key[2] == workload and name in controllers:
                fn = registry.BY_NAME[controller].reconcile
                collecting = gc.isenabled()
                gc.disable()
                best = float("inf")
                for _ in range(3):
                    t = time.process_time()
                    for _ in range(runs):
                        fn(manager.world, key, ctx)
                    best = min(best, time.process_time() - t)
                if collecting:
                    gc.enable()
                seen[name] += 1
                passes.append((name, seen[name], best / runs * 1e6, _wrote(fn(manager.world, key, ctx))))
            return reconcile(controller, key, ctx)

        manager.reconcile = timed  # type: ignore[method-assign,assignment]

    settle_cycle(size, instrument=instrument)
    return passes


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", type=int, default=20)
    p.add_argument("--workload", default="wl-5")
    p.add_argument("--runs", type=int, default=2000)
    p.add_argument("--controllers", default="workload,provisioning,job")
    args = p.parse_args(argv)
    wanted = set(args.controllers.split(","))
    unknown = wanted - set(registry.BY_NAME)
    if unknown:
        print(f"ERROR: --controllers: no controller named {', '.join(sorted(unknown))}", file=sys.stderr)
        return 2
    passes = measure(args.size, args.workload, args.runs, wanted)
    if not passes:
        print(f"ERROR: --workload: no pass over {args.workload} (the story names wl-0 .. wl-{args.size - 1})",
              file=sys.stderr)
        return 2
    print(f"the passes over {args.workload} in a settle of {args.size} (CPU time, {args.runs} runs each)")
    totals: dict[str, float] = {}
    for name, n, us, wrote in passes:
        totals[name] = totals.get(name, 0.0) + us
        print(f"  {name:<13} {n:>2} {us:8.1f} us   {wrote}")
    ranked = sorted(totals.items(), key=lambda item: -item[1])
    print("  per workload: " + ", ".join(f"{name} {us:.1f} us" for name, us in ranked))
    return 0


if __name__ == "__main__":
    sys.exit(main())
