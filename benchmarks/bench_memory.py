"""What a settled workload holds, and where: the memory behind ``bench_core.py``'s (c) line.

``bench_core.py`` charges the peak RSS of its settle to each workload, which says how much but
not what, and moves with the allocator's pages.  This script settles the same story
(``bench_core.settle_cycle``) under ``tracemalloc`` and prints, per workload, the bytes
allocated and still held after each of the four settles with the peak during it, then the
allocation sites holding the most once all is settled (``--top``), and what dropping the
engine's bookkeeping (the Manager: due queue, quiet passes) would give back.  The counts are
the interpreter's own (no pages, no allocator slack), so they move only with the code: two
checkouts compare without noise.

Usage: python benchmarks/bench_memory.py [--size 3000] [--top 15]
"""

from __future__ import annotations

import argparse
import gc
import sys
import tracemalloc
from pathlib import Path

from kueue_provreq.api.memo import clear_caches
from kueue_provreq.engine import Manager

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_core  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", type=int, default=3000)
    p.add_argument("--top", type=int, default=15, help="allocation sites listed")
    args = p.parse_args(argv)
    n = args.size
    clear_caches()
    gc.collect()
    settles: list[tuple[int, int]] = []
    settle = Manager.settle

    def traced_settle(self: Manager, *a: object, **kw: object) -> None:
        tracemalloc.reset_peak()
        settle(self, *a, **kw)  # type: ignore[arg-type]
        settles.append(tracemalloc.get_traced_memory())

    Manager.settle = traced_settle  # type: ignore[method-assign]
    tracemalloc.start()
    try:
        start = tracemalloc.take_snapshot()
        _, manager, admitted, world = bench_core.settle_cycle(n)
        held = tracemalloc.take_snapshot()
        with_manager = tracemalloc.get_traced_memory()[0]
        del manager
        gc.collect()
        without = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
        Manager.settle = settle  # type: ignore[method-assign]
    assert admitted == n, admitted
    for i, (current, peak) in enumerate(settles, 1):
        print(f"settle {i}: {current / n:7.0f} B/workload held after it, {peak / n:7.0f} at its peak")
    print(f"settled: {with_manager / n:.0f} B/workload, of which the Manager's bookkeeping"
          f" {(with_manager - without) / n:.0f}")
    print(f"what holds the most ({len(world)} objects in the world):")
    for stat in held.compare_to(start, "lineno")[:args.top]:
        frame = stat.traceback[0]
        print(f"  {stat.size_diff / n:6.0f} B/workload {stat.count_diff / n:5.2f} blocks/workload"
              f"  {Path(frame.filename).name}:{frame.lineno}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
