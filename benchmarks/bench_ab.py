"""Settle and simulate with the code of two checkouts, in one run: the ratio that says whether a
change made the engine slower, on a noisy machine.

Each measurement runs in a fresh process whose ``kueue_provreq`` and ``benchmarks`` come from the
checkout named (``PYTHONPATH``), the two alternating A B A B ..., so that both meet the same
drift of the machine; the ratio B/A is taken pair by pair and its median quoted.

- settle: ``bench_core.settle_cycle(N)`` (fast mode, and ``--verify`` for verify mode), the
  seconds of its four settles;
- simulate: ``bench_sim``'s story if both checkouts have it (``--simulate``), its whole time.

Usage: python benchmarks/bench_ab.py BASE_CHECKOUT [NEW_CHECKOUT (default: this one)]
       [--size 10000] [--pairs 5] [--verify]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]

_SETTLE = """
import sys, gc, time, types, bench_core
bench_core.time = types.SimpleNamespace(perf_counter=time.process_time)  # CPU seconds: the machine is shared
bench_core.settle_cycle(min({n}, 200), verify={verify})  # warm the models' caches
gc.collect()
secs, manager, admitted, _ = bench_core.settle_cycle({n}, verify={verify})
assert admitted == {n}, admitted
print(secs, manager.reconciles)
"""


def measure(checkout: Path, n: int, verify: bool) -> tuple[float, int]:
    env = dict(os.environ, PYTHONPATH=f"{checkout}{os.pathsep}{checkout / 'benchmarks'}")
    out = subprocess.run([sys.executable, "-c", _SETTLE.format(n=n, verify=verify)], env=env, cwd=checkout,
                         check=True, capture_output=True, text=True).stdout.split()
    return float(out[0]), int(out[1])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("base", type=Path)
    p.add_argument("new", type=Path, nargs="?", default=HERE)
    p.add_argument("--size", type=int, default=10_000)
    p.add_argument("--pairs", type=int, default=5)
    p.add_argument("--verify", action="store_true", help="settle in verify mode")
    args = p.parse_args(argv)
    ratios, base_s, new_s = [], [], []
    for _ in range(args.pairs):
        (a, ra), (b, rb) = measure(args.base, args.size, args.verify), measure(args.new, args.size, args.verify)
        base_s.append(a)
        new_s.append(b)
        ratios.append(b / a)
    mode = "verify" if args.verify else "fast"
    print(f"settle {args.size} workloads ({mode} mode), {args.pairs} pairs: base median {statistics.median(base_s):.2f} s"
          f" ({ra} reconciles), new median {statistics.median(new_s):.2f} s ({rb} reconciles)")
    print(f"  ratio new/base per pair: {' '.join(f'{r:.3f}' for r in ratios)}; median {statistics.median(ratios):.3f}"
          f"   (target <= 1.05)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
