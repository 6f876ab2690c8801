"""Where fast mode's settle time goes, on bench_core's settle story (its (c) line).

Issue 10 asks 100,000 workloads in 20 s, about 200 us per workload; this says what the
per-workload cost is made of, so that the next change aims at a measured part:

- each controller's own work (its reconciles, less the engine's share below), with how many
  reconciles it ran per workload, how many of them wrote, and what one costs;
- the scheduler's cycles, the same way;
- applying a reconcile's effects to the world (``Manager._apply``: the no-op check, the
  world's maps and the queue index it keeps);
- routing the changes to the reconciles they make due (``Router.on_change``: the watches,
  the parts a write changed, what a quiet pass read);
- the rest: the engine's loop between reconciles, and what the Manager does at each settle.

The parts are timed by wrapping the Manager's own methods on the instance (nothing global is
patched).  The wrappers add a few calls per reconcile, included in the total printed; compare it
with a bench_core run of the same size on the machine at hand to see what they cost there.

Usage: python benchmarks/bench_breakdown.py [--size 3000]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
from kueue_provreq.api.objects import Key
from kueue_provreq.controllers.context import Context
from kueue_provreq.engine import SCHEDULER, Manager
from kueue_provreq.world import Result

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_core import settle_cycle  # noqa: E402

ENGINE_PARTS = ("apply effects", "route changes")


@attrs.define
class Breakdown:
    """Seconds and calls per part; ``writes`` per controller: reconciles that returned effects."""

    seconds: Counter[str] = attrs.field(factory=Counter)
    calls: Counter[str] = attrs.field(factory=Counter)
    writes: Counter[str] = attrs.field(factory=Counter)

    def instrument(self, manager: Manager) -> None:
        """Time ``manager``'s reconciles, its applying and its routing (on the instance)."""
        clock = time.perf_counter
        inner = {"apply effects": manager._apply, "route changes": manager.router.on_change}
        nested = [0.0]  # engine time spent inside the reconcile being timed

        def timed_part(part: str) -> Callable[..., Any]:
            method = inner[part]

            def run(*args: Any, **kwargs: Any) -> Any:
                t = clock()
                try:
                    return method(*args, **kwargs)
                finally:
                    dt = clock() - t
                    nested[0] += dt
                    self.seconds[part] += dt
                    self.calls[part] += 1
            return run

        reconcile = manager.reconcile

        def timed_reconcile(controller: str, key: Key, ctx: Context) -> tuple[Result, list[Key]]:
            nested[0] = 0.0
            t = clock()
            result, changed = reconcile(controller, key, ctx)
            name = str(controller)
            self.seconds[name] += clock() - t - nested[0]
            self.calls[name] += 1
            if result.effects:
                self.writes[name] += 1
            return result, changed

        manager._apply = timed_part("apply effects")  # type: ignore[method-assign]
        manager.router.on_change = timed_part("route changes")  # type: ignore[method-assign]
        manager.reconcile = timed_reconcile  # type: ignore[method-assign]


def report(n: int, total: float, b: Breakdown) -> list[str]:
    us = 1e6 / n
    lines = [f"settle {n} workloads (fast mode): {total:.2f} s, {total * us:.0f} us/workload", ""]
    lines.append(f"  {'part':<16} {'us/workload':>11} {'share':>6} {'calls/workload':>15} {'us/call':>8}"
                 f" {'wrote/workload':>15}")
    controllers = [name for name in b.seconds if name not in ENGINE_PARTS]
    for name in [*sorted(controllers, key=lambda k: -b.seconds[k]), *ENGINE_PARTS]:
        secs, calls = b.seconds[name], b.calls[name]
        wrote = f"{b.writes[name] / n:15.2f}" if name not in ENGINE_PARTS else ""
        label = "scheduler cycles" if name == SCHEDULER else name
        lines.append(f"  {label:<16} {secs * us:11.1f} {secs / total:6.1%} {calls / n:15.2f}"
                     f" {secs / calls * 1e6 if calls else 0:8.1f} {wrote}")
    rest = total - sum(b.seconds.values())
    lines.append(f"  {'the rest':<16} {rest * us:11.1f} {rest / total:6.1%}")
    writes = b.calls["apply effects"]
    if writes:
        engine = b.seconds["apply effects"] + b.seconds["route changes"]
        lines.append("")
        lines.append(f"  per reconcile that wrote: applying and routing its effects {engine / writes * 1e6:.1f} us"
                     f" ({writes / n:.1f} per workload)")
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", type=int, default=3000)
    args = p.parse_args(argv)
    breakdown = Breakdown()
    total, _, admitted, _ = settle_cycle(args.size, instrument=breakdown.instrument)
    if admitted != args.size:
        print(f"ERROR: {admitted} of {args.size} workloads admitted after the cycle", file=sys.stderr)
        return 1
    print("\n".join(report(args.size, total, breakdown)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
