"""Writing a simulation's report: ``summary.json``, ``workloads.csv`` and a readable table.

``summary.json`` is written the same way every time (keys in a fixed order, exact numbers,
a final newline), so the same simulation and seed give the same bytes.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kueue_provreq.extras import SIM, require
from kueue_provreq.manifests.codec import format_duration
from kueue_provreq.simulation.replicate import CI95, MEAN, REPLICATIONS, is_figure
from kueue_provreq.simulation.run import Report

CSV_COLUMNS = ("namespace", "name", "template", "created", "quotaReserved", "admitted", "finished", "deactivated",
               "attempts", "evictions", "outcome")


def summary_json(report: Report, summary: Mapping[str, Any] | None = None) -> str:
    """The report's summary, or ``summary`` (replications' figures) in its place."""
    return json.dumps(report.summary.to_json() if summary is None else summary, indent=2) + "\n"


def workloads_csv(report: Report) -> str:
    """One row per workload; times in seconds after the start, empty when it never happened."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for r in report.workloads:
        writer.writerow([r.namespace, r.name, r.template, r.created, _blank(r.quota_reserved), _blank(r.admitted),
                         _blank(r.finished), _blank(r.deactivated), r.attempts, r.evictions, r.outcome])
    return out.getvalue()


def _blank(value: int | None) -> str | int:
    return "" if value is None else value


def write(report: Report, out: Path, plots: bool = True, summary: Mapping[str, Any] | None = None) -> list[Path]:
    """``summary.json`` (``summary`` when given: the replications'), ``workloads.csv`` and
    (``plots``) the PNG plots of ``report``, in ``out``."""
    if plots:
        require(SIM, "matplotlib", "plots")  # before any file is written
    out.mkdir(parents=True, exist_ok=True)
    written = [out / "summary.json", out / "workloads.csv"]
    written[0].write_text(summary_json(report, summary), encoding="utf-8")
    written[1].write_text(workloads_csv(report), encoding="utf-8")
    if plots:
        from kueue_provreq.simulation import plots as p  # matplotlib: only when plots are asked for
        written += p.simulation_plots(report, out)
    return written


def _duration(seconds: int | None) -> str:
    return "-" if seconds is None else format_duration(seconds)


def table(report: Report) -> str:
    s = report.summary
    sim = report.simulation
    lat = s.admission_latency
    req = s.requests
    lines = [f"simulation {s.simulation} ({sim.source}), seed {s.seed}: {s.workloads} workloads, "
             f"{format_duration(s.simulated_seconds)} simulated",
             f"  outcome              finished {s.finished}, admitted (still running) {s.admitted}, "
             f"deactivated {s.deactivated}, pending {s.pending}",
             f"  admission latency    p50 {_duration(lat.p50)}, p90 {_duration(lat.p90)}, "
             f"p99 {_duration(lat.p99)}, max {_duration(lat.max)}",
             f"  requests             created {req.created}, provisioned {req.provisioned}, failed {req.failed}, "
             f"booking expired {req.booking_expired} (consumed {req.booking_consumed}), "
             f"capacity revoked {req.capacity_revoked}",
             "  evictions            " + (", ".join(f"{k} {v}" for k, v in sorted(s.evictions.items())) or "none")]
    waiting = s.reserved_waiting_quota_seconds
    if waiting:
        lines.append("  quota held waiting   " + ", ".join(
            f"{k} {float(v) / 3600:.4g}" for k, v in sorted(waiting.items())) + "  (resource-hours)")
    for name, q in sorted(s.cluster_queues.items()):
        lat = q.admission_latency
        held = ", ".join(f"{k} {float(v) / 3600:.4g}" for k, v in sorted(q.reserved_waiting_quota_seconds.items()))
        lines.append(f"  ClusterQueue {name}: {q.workloads} workloads (finished {q.finished}, pending {q.pending}), "
                     f"latency p50 {_duration(lat.p50)}, p90 {_duration(lat.p90)}, max {_duration(lat.max)}"
                     + (f"; held waiting {held} (resource-hours)" if held else ""))
    return "\n".join(lines) + "\n"


def replicated_table(report: Report, summary: Mapping[str, Any]) -> str:
    """Replications' figures, one a line: mean ± the 95% interval's half-width, and the interval."""
    sim = report.simulation
    n = max((v[REPLICATIONS] for v in _figures(summary).values() if v is not None), default=0)
    lines = [f"simulation {summary['simulation']} ({sim.source}), seed {summary['seed']}, {n} replications: "
             "mean ± 95% half-width [interval]"]
    figures = _figures(summary)
    width = max(map(len, figures), default=0)
    for name, figure in figures.items():
        if figure is None:
            lines.append(f"  {name.ljust(width)}  -")
            continue
        low, high = figure[CI95]
        lines.append(f"  {name.ljust(width)}  {plus_minus(figure)}  [{low:g}, {high:g}]")
    return "\n".join(lines) + "\n"


def plus_minus(figure: Mapping[str, Any]) -> str:
    """``mean ± half-width`` of a replicated figure."""
    low, high = figure[CI95]
    return f"{figure[MEAN]:g} ± {(high - low) / 2:.4g}"


def _figures(summary: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in summary.items():
        if is_figure(value) or (value is None and prefix + key not in ("simulation", "seed")):
            out[prefix + key] = value
        elif isinstance(value, Mapping):
            out.update(_figures(value, f"{prefix}{key}."))
    return out
