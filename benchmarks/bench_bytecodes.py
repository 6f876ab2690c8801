"""Where fast mode's settle spends its bytecodes, function by function, on bench_core's settle
story (its (c) line): a count that is the same at every run, on any machine.

A timed profile of the settle is noisy on a shared machine, and cProfile weighs every Python
call by its own overhead; ``bench_ab.py --instructions`` is exact but says only how much, not
where. This counts the bytecodes each function executes during the four settles (Python's
tracing, opcode by opcode), per settled workload, by module and by function. A bytecode is not
an instruction: a call, an allocation or a dict operation costs many more instructions than a
comparison or a local's load, so the counts say where the interpreter works, and
``bench_ab.py --instructions`` what a change saves.

Usage: python benchmarks/bench_bytecodes.py [--size 300] [--top 30]
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

from kueue_provreq.engine import Manager

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_core import settle_cycle  # noqa: E402

Tracer = Callable[[FrameType, str, Any], Any]


def where(frame: FrameType) -> tuple[str, str]:
    """(module, function) of a frame, the module as a path inside the package."""
    code = frame.f_code
    return code.co_filename.rpartition("kueue_provreq/")[2], code.co_name


def count(n: int) -> Counter[tuple[str, str]]:
    """The bytecodes each (module, function) executes during ``settle_cycle(n)``'s settles."""
    counts: Counter[tuple[str, str]] = Counter()

    def per_opcode(frame: FrameType, event: str, arg: Any) -> Tracer:
        if event == "opcode":
            counts[where(frame)] += 1
        return per_opcode

    def on_call(frame: FrameType, event: str, arg: Any) -> Tracer:
        frame.f_trace_opcodes = True
        frame.f_trace_lines = False
        return per_opcode

    def instrument(manager: Manager) -> None:
        settle = manager.settle

        def traced(*args: Any, **kwargs: Any) -> None:
            sys.settrace(on_call)
            try:
                settle(*args, **kwargs)
            finally:
                sys.settrace(None)
        manager.settle = traced  # type: ignore[method-assign]

    settle_cycle(n, instrument=instrument)
    return counts


def report(n: int, counts: Counter[tuple[str, str]], top: int) -> list[str]:
    total = sum(counts.values())
    modules: Counter[str] = Counter()
    for (module, _), ops in counts.items():
        modules[module] += ops
    lines = [f"settle {n} workloads (fast mode): {total / n:.0f} bytecodes per workload", "",
             "  by module (per workload, share):"]
    lines += [f"  {ops / n:9.0f} {ops / total:6.1%}  {module}" for module, ops in modules.most_common(top)]
    lines += ["", "  by function:"]
    lines += [f"  {ops / n:9.0f} {ops / total:6.1%}  {module} {name}"
              for (module, name), ops in counts.most_common(top)]
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", type=int, default=300)
    p.add_argument("--top", type=int, default=30, help="modules and functions listed")
    args = p.parse_args(argv)
    settle_cycle(min(args.size, 50))  # the models' caches warm, as in the timed benchmarks
    print("\n".join(report(args.size, count(args.size), args.top)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
