"""The pure-Python package against the optional mypyc build (``make compiled``), in one run.

Runs ``bench_core.py`` on the pure package and on the compiled tree (``build/compiled``, put
first on ``PYTHONPATH``) alternately, ``--rounds`` times each, so that both see the same load
on a shared machine, and prints, per round and as the best of the rounds, the decision (a) and
each settle (c) in us, and the ratio pure / compiled (above 1: the compiled build is faster).

Usage: python benchmarks/bench_compiled.py [--rounds 2] [--compiled build/compiled] [bench_core args]
(bench_core's arguments default to ``--sizes 1000,10000 --repeat 2 --seconds 1``).
"""

from __future__ import annotations

import argparse
import importlib.machinery
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH_CORE = ROOT / "benchmarks" / "bench_core.py"
DEFAULT_CORE_ARGS = ["--sizes", "1000,10000", "--repeat", "2", "--seconds", "1"]

_DECISION = re.compile(r"^\(a\) provisioning decision, library:\s+([\d.]+) us", re.M)
_SETTLE = re.compile(r"^\(c\) settle\s+(\d+) workloads .*?([\d.]+) us/workload", re.M)


def figures(output: str) -> dict[str, float]:
    """The decision and the fast-mode settles of one bench_core output, in us: ``{"(a)": ..,
    "(c) 1000": .., ...}``."""
    found = {f"(c) {n}": float(us) for n, us in _SETTLE.findall(output)}
    decision = _DECISION.search(output)
    if decision is None or not found:
        raise ValueError(f"bench_core printed no (a) or (c) line:\n{output}")
    return {"(a)": float(decision.group(1)), **found}


def env_for(compiled: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if compiled is not None:
        env["PYTHONPATH"] = str(compiled)
    return env


def engine_file(compiled: Path) -> str:
    """Where the engine's manager (``kueue_provreq.engine.manager``) comes from with the compiled
    tree on the path (the packages' ``__init__`` modules are not compiled)."""
    out = subprocess.run([sys.executable, "-P", "-c", "import kueue_provreq.engine.manager as m; print(m.__file__)"],
                         env=env_for(compiled), capture_output=True, text=True, check=True)
    return out.stdout.strip()


def run_core(compiled: Path | None, core_args: list[str]) -> dict[str, float]:
    out = subprocess.run([sys.executable, str(BENCH_CORE), *core_args], env=env_for(compiled),
                         capture_output=True, text=True, check=True)
    return figures(out.stdout)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=2, help="pure and compiled runs, alternated")
    p.add_argument("--compiled", type=Path, default=ROOT / "build" / "compiled", help="the tree `make compiled` built")
    args, core_args = p.parse_known_args(argv)
    compiled = args.compiled.resolve()
    where = engine_file(compiled)
    if not where.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES)):
        print(f"bench_compiled: no compiled build in {compiled} (kueue_provreq.engine.manager comes from {where}); "
              "run `make compiled` first", file=sys.stderr)
        return 2
    core_args = core_args or DEFAULT_CORE_ARGS
    print(f"bench_core.py {' '.join(core_args)}, pure and compiled ({compiled}) alternated, {args.rounds} rounds")
    pure: list[dict[str, float]] = []
    fast: list[dict[str, float]] = []
    for r in range(1, args.rounds + 1):
        for name, tree, into in (("pure", None, pure), ("compiled", compiled, fast)):
            into.append(run_core(tree, core_args))
            print(f"round {r} {name:8}  " + "  ".join(f"{k} {v:8.1f} us" for k, v in into[-1].items()), flush=True)
    print("best of the rounds, pure / compiled:")
    for key in pure[0]:
        p_us, c_us = min(f[key] for f in pure), min(f[key] for f in fast)
        print(f"  {key:10} pure {p_us:8.1f} us   compiled {c_us:8.1f} us   ratio {p_us / c_us:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
