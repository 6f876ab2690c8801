"""This checkout's settle against another revision's (a baseline), as a ratio from one run.

Settles bench_core's story (c) (N workloads through provision -> fail -> retry -> provision,
fast mode) with this package and with a baseline tree (a checkout of another revision, for
instance ``git worktree add --detach /tmp/base main``, put first on ``PYTHONPATH``), each in a
fresh process, alternately, ``--rounds`` times, and prints per round and as the best of the
rounds the CPU time per workload and the ratio this / baseline (above 1: this checkout is
slower).  CPU time, as ``bench_verify`` measures, so that the other processes of a shared
machine move the figures less than they move wall time.

Usage: python benchmarks/bench_baseline.py --baseline PATH [--sizes 1000,3000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

#: One settle story in a fresh process: bench_core's, its clock made the process's CPU time.
_PROGRAM = """
import sys, time
sys.path.insert(0, {here!r})
time.perf_counter = time.process_time
import bench_core, kueue_provreq
seconds, _, admitted, _ = bench_core.settle_cycle({n})
assert admitted == {n}, admitted
print(kueue_provreq.__file__, seconds / {n} * 1e6)
"""


def settle_us(baseline: Path | None, n: int) -> tuple[str, float]:
    """(where kueue_provreq came from, CPU us per workload) of one story of ``n`` workloads."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if baseline is not None:
        env["PYTHONPATH"] = str(baseline)
    out = subprocess.run([sys.executable, "-P", "-c", _PROGRAM.format(here=str(HERE), n=n)], env=env,
                         capture_output=True, text=True, check=True)
    where, us = out.stdout.split()
    return where, float(us)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--baseline", type=Path, required=True, help="the root of the baseline checkout")
    p.add_argument("--sizes", default="1000,3000")
    p.add_argument("--rounds", type=int, default=5, help="runs of each, alternated")
    args = p.parse_args(argv)
    baseline = args.baseline.resolve()
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"settle (c), CPU us/workload, this checkout and {baseline} alternated, {args.rounds} rounds")
    best: dict[tuple[str, int], float] = {}
    for r in range(1, args.rounds + 1):
        for n in sizes:
            for name, tree in (("this", None), ("baseline", baseline)):
                where, us = settle_us(tree, n)
                if (tree is not None) != where.startswith(str(baseline)):
                    print(f"bench_baseline: kueue_provreq came from {where}", file=sys.stderr)
                    return 2
                best[(name, n)] = min(us, best.get((name, n), us))
                print(f"round {r} {name:8} {n:6} workloads {us:8.1f} us", flush=True)
    print("best of the rounds, this / baseline:")
    for n in sizes:
        t, b = best[("this", n)], best[("baseline", n)]
        print(f"  {n:6} workloads  this {t:8.1f} us  baseline {b:8.1f} us  ratio {t / b:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
