"""Whether a workload's cost grows with the backlog: ``bench_sim``'s bundled example simulated
with N arrivals twice in one run, as written (``backoffBaseSeconds: 60``) and with the retry
backoff at ``--backoff`` seconds (900: failed attempts wait long enough that the queue backs up
for hours), each timed in CPU seconds of this process; the ratio per workload is the measure.

Issue 25's goal: the backed-up point within 2x of the base-60 point per workload.

Usage: python benchmarks/bench_backlog.py [--workloads 2000] [--backoff 900]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_sim  # noqa: E402  (its simulation timing, not a copy)

_AS_WRITTEN = "backoffBaseSeconds: 60,"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workloads", type=int, default=2000)
    p.add_argument("--backoff", type=int, default=900, help="backoffBaseSeconds of the backed-up point")
    args = p.parse_args(argv)
    text = bench_sim.DEFAULT_EXAMPLE.read_text()
    if text.count(_AS_WRITTEN) != 1:
        print(f"ERROR: {bench_sim.DEFAULT_EXAMPLE} no longer says {_AS_WRITTEN!r} once", file=sys.stderr)
        return 1
    per_workload = []
    clock = bench_sim.time  # type: ignore[attr-defined]
    bench_sim.time = types.SimpleNamespace(perf_counter=time.process_time)  # type: ignore[attr-defined,assignment]
    with tempfile.TemporaryDirectory() as tmp:
        backed_up = Path(tmp) / bench_sim.DEFAULT_EXAMPLE.name
        backed_up.write_text(text.replace(_AS_WRITTEN, f"backoffBaseSeconds: {args.backoff},"))
        for base, path in ((60, bench_sim.DEFAULT_EXAMPLE), (args.backoff, backed_up)):
            secs, _, settles, reconciles, _ = bench_sim.timed_simulation(path, args.workloads)
            per_workload.append(secs / args.workloads * 1e6)
            print(f"backoffBaseSeconds {base:4d}: {secs:7.2f} s CPU  {per_workload[-1]:7.1f} us/workload  "
                  f"{reconciles / args.workloads:5.1f} reconciles/workload, {settles} settles", flush=True)
    bench_sim.time = clock  # type: ignore[attr-defined]
    print(f"ratio backed-up/base per workload: {per_workload[1] / per_workload[0]:5.2f}x   (goal <= 2x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
