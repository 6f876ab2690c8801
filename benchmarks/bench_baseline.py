"""This tree against a baseline tree (a worktree of main), in one run.

Runs ``bench_core.py`` (this tree's) on this tree's package and on the baseline's (its root
first on ``PYTHONPATH``) alternately, ``--rounds`` times each, so that both see the same load
on a shared machine, and prints, per round and as the best of the rounds, the decision (a) and
each one-queue settle (c) in us, and the ratio this / baseline (below 1.10: at most 10% slower).

Usage: python benchmarks/bench_baseline.py --baseline ../main-worktree [--rounds 2] [bench_core args]
(bench_core's arguments default to ``--sizes 1000,10000 --repeat 2 --seconds 1``).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from bench_compiled import BENCH_CORE, DEFAULT_CORE_ARGS, env_for, figures


def package_dir(tree: Path | None) -> str:
    """Where ``kueue_provreq`` comes from with ``tree`` first on the path."""
    out = subprocess.run([sys.executable, "-P", "-c", "import kueue_provreq as k; print(k.__file__)"],
                         env=env_for(tree), capture_output=True, text=True, check=True)
    return str(Path(out.stdout.strip()).parent)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=2, help="this tree's and the baseline's runs, alternated")
    p.add_argument("--baseline", type=Path, required=True, help="the root of the baseline tree")
    args, core_args = p.parse_known_args(argv)
    baseline = args.baseline.resolve()
    mine, theirs = package_dir(None), package_dir(baseline)
    if mine == theirs:
        print(f"bench_baseline: the baseline {baseline} gives the same package ({mine})", file=sys.stderr)
        return 2
    core_args = core_args or DEFAULT_CORE_ARGS
    print(f"bench_core.py {' '.join(core_args)}, this tree ({mine}) and the baseline ({theirs}) alternated, "
          f"{args.rounds} rounds")
    runs: dict[str, list[dict[str, float]]] = {"this": [], "baseline": []}
    for r in range(1, args.rounds + 1):
        for name, tree in (("this", None), ("baseline", baseline)):
            out = subprocess.run([sys.executable, str(BENCH_CORE), *core_args], env=env_for(tree),
                                 capture_output=True, text=True, check=True)
            runs[name].append(figures(out.stdout))
            print(f"round {r} {name:8}  " + "  ".join(f"{k} {v:8.1f} us" for k, v in runs[name][-1].items()),
                  flush=True)
    print("best of the rounds, this / baseline:")
    for key in runs["this"][0]:
        mine_us, base_us = min(f[key] for f in runs["this"]), min(f[key] for f in runs["baseline"])
        print(f"  {key:10} this {mine_us:8.1f} us   baseline {base_us:8.1f} us   ratio {mine_us / base_us:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
