"""Why the same controller pass costs more per call in the simulation than in the settle story:
each pass timed where it runs (in context) and again at once (repeated), with its bytecodes.

``bench_breakdown`` and ``bench_sim_breakdown`` give a provisioning pass about 1.3 to 1.7 times
the time per call in the simulation, a workload pass 1.4 to 1.9 times.  This tells apart the two
kinds of cause:

- more work per pass (bigger worlds or backlogs scanned, memos missed, more conditions): the
  pass would execute more bytecodes in the simulation, and a repeat of it (the same call on the
  same world at once: a reconcile only reads) would cost as much as the first call;
- the same work run cold (the processor's caches and predictors hold what ran since, not this
  pass): the bytecodes are the same in the first call and the repeat, and only the first call
  costs more.

Every ``--every``-th reconcile of each controller is timed as it runs, then repeated
``--repeat`` times; every other sampled call runs under Python's opcode tracing instead, to
count its bytecodes and a repeat's.  The simulation (``bench_sim``'s example) and the settle
story (``bench_core``) run in the same process, one after the other.  ``--thrash`` evicts the
caches before each pass of the settle story, as the simulation's instants do: ``data`` reads
every cache line of a ``--data-kib`` buffer (8 MiB; the size at which the penalty appears
says which cache level the passes miss), ``code`` runs a little of the standard library's
Python (other code, other data); if the settle story's passes then cost what the
simulation's do, being cold is the cause.

Usage: python benchmarks/bench_sim_cold.py [--workloads 3000] [--every 7] [--repeat 5]
       [--thrash none|data|code] [--data-kib 8192]
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys
import textwrap
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from types import FrameType
from typing import Any

import attrs
from kueue_provreq.api.memo import clear_caches
from kueue_provreq.api.objects import Key
from kueue_provreq.controllers.context import Context
from kueue_provreq.engine import Manager
from kueue_provreq.simulation import load_document, parse, simulate
from kueue_provreq.simulation.loop import Loop
from kueue_provreq.world import Result, World

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_core import settle_cycle  # noqa: E402
from bench_sim import DEFAULT_EXAMPLE  # noqa: E402

Reconcile = Callable[[World, Key, Context], Result]
Tracer = Callable[[FrameType, str, Any], Any]


def other_code() -> None:
    """A little of the standard library's Python: code and data the passes do not use."""
    json.loads(json.dumps({"a": [1, 2, {"b": "c"}], "d": 1.5}))
    textwrap.fill("lorem ipsum dolor sit amet " * 8, 30)
    list(difflib.ndiff(["a", "b", "c"], ["a", "c", "d"]))
    _ = Fraction(3, 7) + Fraction(5, 11)


def thrash(kind: str, kib: int) -> Callable[[], object] | None:
    """What runs before each pass of the settle story: nothing, a read of every cache line of
    a ``kib`` KiB buffer, or other Python code."""
    if kind == "data":
        buffer = bytes(kib << 10)
        return lambda: sum(buffer[::64])
    return other_code if kind == "code" else None


@attrs.define
class Sampler:
    """Per controller: seconds in context and repeated, bytecodes in context and repeated."""

    every: int
    repeat: int
    thrash: Callable[[], object] | None = None
    calls: Counter[str] = attrs.field(factory=Counter)
    timed: Counter[str] = attrs.field(factory=Counter)
    first: defaultdict[str, float] = attrs.field(factory=lambda: defaultdict(float))
    again: defaultdict[str, float] = attrs.field(factory=lambda: defaultdict(float))
    traced: Counter[str] = attrs.field(factory=Counter)
    ops_first: Counter[str] = attrs.field(factory=Counter)
    ops_again: Counter[str] = attrs.field(factory=Counter)

    def instrument(self, manager: Manager) -> None:
        """Wrap each controller's reconcile in ``manager`` (its own copy of the registry)."""
        for name, controller in list(manager.controllers.items()):
            manager.controllers[name] = attrs.evolve(controller, reconcile=self._sampled(name, controller.reconcile))

    def _sampled(self, name: str, reconcile: Reconcile) -> Reconcile:
        clock = time.perf_counter

        def run(world: World, key: Key, ctx: Context) -> Result:
            n = self.calls[name] = self.calls[name] + 1
            if n % self.every:
                if self.thrash is not None:
                    self.thrash()
                return reconcile(world, key, ctx)
            if n % (2 * self.every) == 0:
                self.traced[name] += 1
                ops, result = bytecodes(lambda: reconcile(world, key, ctx))
                self.ops_first[name] += ops
                self.ops_again[name] += bytecodes(lambda: reconcile(world, key, ctx))[0]
                return result
            if self.thrash is not None:
                self.thrash()
            t = clock()
            result = reconcile(world, key, ctx)
            self.first[name] += clock() - t
            t = clock()
            for _ in range(self.repeat):
                reconcile(world, key, ctx)
            self.again[name] += (clock() - t) / self.repeat
            self.timed[name] += 1
            return result
        return run

    def lines(self, title: str) -> list[str]:
        lines = [title, f"  {'controller':<14} {'sampled':>7} {'in context':>10} {'repeated':>9} {'ratio':>6}"
                        f" {'bytecodes in context':>21} {'repeated':>9}"]
        for name in sorted(self.timed, key=lambda k: -self.first[k]):
            timed, traced = self.timed[name], self.traced[name] or 1
            first, again = self.first[name] / timed * 1e6, self.again[name] / timed * 1e6
            lines.append(f"  {name:<14} {timed:7d} {first:8.1f}us {again:7.1f}us {first / again:5.2f}x"
                         f" {self.ops_first[name] / traced:21.0f} {self.ops_again[name] / traced:9.0f}")
        return lines


def bytecodes(call: Callable[[], Result]) -> tuple[int, Result]:
    """The bytecodes ``call`` executes (Python's opcode tracing), and its result."""
    count = [0]

    def per_opcode(frame: FrameType, event: str, arg: Any) -> Tracer:
        if event == "opcode":
            count[0] += 1
        return per_opcode

    def on_call(frame: FrameType, event: str, arg: Any) -> Tracer:
        frame.f_trace_opcodes = True
        frame.f_trace_lines = False
        return per_opcode

    sys.settrace(on_call)
    try:
        result = call()
    finally:
        sys.settrace(None)
    return count[0], result


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workloads", type=int, default=3000, help="simulated arrivals, and the settle story's size")
    p.add_argument("--example", type=Path, default=DEFAULT_EXAMPLE)
    p.add_argument("--every", type=int, default=7, help="sample every n-th reconcile of each controller")
    p.add_argument("--repeat", type=int, default=5, help="repeats of a sampled call, timed together")
    p.add_argument("--thrash", choices=("none", "data", "code"), default="none",
                   help="evict the caches before each pass of the settle story")
    p.add_argument("--data-kib", type=int, default=8192, help="the buffer --thrash data reads")
    args = p.parse_args(argv)

    sim = Sampler(args.every, args.repeat)
    loop_init = Loop.__init__

    def made(loop: Loop, *a: Any, **kw: Any) -> None:
        loop_init(loop, *a, **kw)
        sim.instrument(loop.manager)

    Loop.__init__ = made  # type: ignore[method-assign,assignment]
    try:
        simulate(parse(load_document(args.example), count=args.workloads))
    finally:
        Loop.__init__ = loop_init  # type: ignore[method-assign]
    print("\n".join(sim.lines(f"simulate {args.workloads} workloads of {args.example.name}, per sampled pass:")))

    settle_cycle(min(args.workloads, 50))  # the interpreter warm, as in the timed benchmarks
    clear_caches()  # and the memos empty, not keyed by the warm-up's equal objects (bench_core does so)
    story = Sampler(args.every, args.repeat, thrash(args.thrash, args.data_kib))
    settle_cycle(args.workloads, instrument=story.instrument)
    evicted = {"none": "", "code": ", other code run before each pass",
               "data": f", {args.data_kib} KiB read before each pass"}[args.thrash]
    print("\n".join(story.lines(f"settle story, {args.workloads} workloads{evicted}, per sampled pass:")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
