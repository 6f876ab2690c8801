"""This checkout against another revision of it (a baseline), in one run.

Runs ``bench_core.py`` on this package and on a baseline tree (a checkout of another revision,
for instance ``git worktree add --detach /tmp/base main``, put first on ``PYTHONPATH``)
alternately, ``--rounds`` times each, so that both see the same load on a shared machine, and
prints, per round and as the best of the rounds, the decision (a) and each settle (c) in us, and
the ratio this / baseline (above 1: this checkout is slower).

Usage: python benchmarks/bench_baseline.py --baseline PATH [--rounds 3] [bench_core args]
(bench_core's arguments default to ``--sizes 1000,10000 --repeat 2 --seconds 1``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bench_compiled import DEFAULT_CORE_ARGS, engine_file, run_core


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--baseline", type=Path, required=True, help="the root of the baseline checkout")
    p.add_argument("--rounds", type=int, default=3, help="runs of each, alternated")
    args, core_args = p.parse_known_args(argv)
    baseline = args.baseline.resolve()
    where = engine_file(baseline)
    if not where.startswith(str(baseline)):
        print(f"bench_baseline: kueue_provreq comes from {where}, not from {baseline}", file=sys.stderr)
        return 2
    core_args = core_args or DEFAULT_CORE_ARGS
    print(f"bench_core.py {' '.join(core_args)}, this checkout and {baseline} alternated, {args.rounds} rounds")
    this: list[dict[str, float]] = []
    base: list[dict[str, float]] = []
    for r in range(1, args.rounds + 1):
        for name, tree, into in (("this", None, this), ("baseline", baseline, base)):
            into.append(run_core(tree, core_args))
            print(f"round {r} {name:8}  " + "  ".join(f"{k} {v:8.1f} us" for k, v in into[-1].items()), flush=True)
    print("best of the rounds, this / baseline:")
    for key in this[0]:
        t_us, b_us = min(f[key] for f in this), min(f[key] for f in base)
        print(f"  {key:10} this {t_us:8.1f} us   baseline {b_us:8.1f} us   ratio {t_us / b_us:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
