"""Settle and simulate with the code of two checkouts, in one run: the ratio that says whether a
change made the engine slower, on a noisy machine.

Each measurement runs in a fresh process whose ``kueue_provreq`` and ``benchmarks`` come from the
checkout named (``PYTHONPATH``), the two alternating A B A B ..., so that both meet the same
drift of the machine; the ratio B/A is taken pair by pair and its median quoted.

- settle: ``bench_core.settle_cycle(N)`` (fast mode, and ``--verify`` for verify mode), the
  seconds of its four settles;
- simulate (``--simulate N``): ``bench_sim``'s simulation of its bundled example with N
  arrivals, its whole time.

Times are CPU seconds of the measuring process (the machine is shared).  On a machine so shared
that they still drift by more than the difference sought, ``--instructions`` counts instructions
instead (valgrind's cachegrind, deterministic with a fixed hash seed): each checkout settles
``--size`` (or simulates ``--simulate``) and three times as many workloads, and the difference,
the cost of the extra workloads without the interpreter's start, is compared.

Usage: python benchmarks/bench_ab.py BASE_CHECKOUT [NEW_CHECKOUT (default: this one)]
       [--size 10000] [--pairs 5] [--verify | --simulate N] [--instructions]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
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

_SIMULATE = """
import time, types, bench_sim
bench_sim.time = types.SimpleNamespace(perf_counter=time.process_time)  # CPU seconds: the machine is shared
secs, _, _, reconciles, _ = bench_sim.timed_simulation(bench_sim.DEFAULT_EXAMPLE, {n})
print(secs, reconciles)
"""


def instructions(checkout: Path, code: str) -> int:
    """The instructions (cachegrind's ``Ir``) the process running ``code`` executes."""
    env = dict(os.environ, PYTHONPATH=f"{checkout}{os.pathsep}{checkout / 'benchmarks'}", PYTHONHASHSEED="0")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "cachegrind.out"
        subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no", f"--cachegrind-out-file={out}",
                        sys.executable, "-c", code], env=env, cwd=checkout, check=True, capture_output=True)
        summary = next(line for line in out.read_text().splitlines() if line.startswith("summary:"))
    return int(summary.split()[1])


def measure(checkout: Path, code: str) -> tuple[float, int]:
    env = dict(os.environ, PYTHONPATH=f"{checkout}{os.pathsep}{checkout / 'benchmarks'}")
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=checkout,
                         check=True, capture_output=True, text=True).stdout.split()
    return float(out[0]), int(out[1])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("base", type=Path)
    p.add_argument("new", type=Path, nargs="?", default=HERE)
    p.add_argument("--size", type=int, default=10_000)
    p.add_argument("--pairs", type=int, default=5)
    what = p.add_mutually_exclusive_group()
    what.add_argument("--verify", action="store_true", help="settle in verify mode")
    what.add_argument("--simulate", type=int, metavar="N", help="simulate N arrivals instead of settling")
    p.add_argument("--instructions", action="store_true", help="count instructions (valgrind) instead of seconds")
    args = p.parse_args(argv)
    if args.instructions:
        size, form = (args.simulate, _SIMULATE) if args.simulate else (args.size, _SETTLE)
        small, large = (form.format(n=n, verify=args.verify) for n in (size, 3 * size))
        cost = {tree: instructions(tree, large) - instructions(tree, small) for tree in (args.base, args.new)}
        what = "simulate" if args.simulate else "settle"
        print(f"{what} {2 * size} more workloads ({'verify' if args.verify else 'fast'} mode): base "
              f"{cost[args.base] / 1e9:.3f}G instructions, new {cost[args.new] / 1e9:.3f}G;"
              f" ratio new/base {cost[args.new] / cost[args.base]:.3f}   (target <= 1.05)")
        return 0
    if args.simulate:
        code, title = _SIMULATE.format(n=args.simulate), f"simulate {args.simulate} workloads"
    else:
        code = _SETTLE.format(n=args.size, verify=args.verify)
        title = f"settle {args.size} workloads ({'verify' if args.verify else 'fast'} mode)"
    ratios, base_s, new_s = [], [], []
    for _ in range(args.pairs):
        (a, ra), (b, rb) = measure(args.base, code), measure(args.new, code)
        base_s.append(a)
        new_s.append(b)
        ratios.append(b / a)
    print(f"{title}, {args.pairs} pairs: base median {statistics.median(base_s):.2f} s"
          f" ({ra} reconciles), new median {statistics.median(new_s):.2f} s ({rb} reconciles)")
    print(f"  ratio new/base per pair: {' '.join(f'{r:.3f}' for r in ratios)}; median {statistics.median(ratios):.3f}"
          f"   (target <= 1.05)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
