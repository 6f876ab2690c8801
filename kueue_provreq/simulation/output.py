"""Writing a simulation's report: ``summary.json``, ``workloads.csv`` and a readable table.

``summary.json`` is written the same way every time (keys in a fixed order, exact numbers,
a final newline), so the same simulation and seed give the same bytes.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping
from decimal import Decimal
from pathlib import Path
from typing import Any

from kueue_provreq.extras import SIM, require
from kueue_provreq.manifests.codec import format_duration
from kueue_provreq.simulation import units
from kueue_provreq.simulation.replicate import CI95, MEAN, REPLICATIONS, is_figure
from kueue_provreq.simulation.run import Percentiles, Report

#: summary.json's quota held while waiting, in :func:`units.readable`'s units.
QUOTA_HELD = "quotaHeldWaiting"

CSV_COLUMNS = ("namespace", "name", "template", "created", "quotaReserved", "admitted", "finished", "deactivated",
               "attempts", "evictions", "outcome", "podsReady", "clusterQueue", "localQueue")


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
                         _blank(r.finished), _blank(r.deactivated), r.attempts, r.evictions, r.outcome,
                         _blank(r.pods_ready), r.cluster_queue, r.local_queue])
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


def latency(lat: Percentiles, *, p99: bool = True) -> str:
    """``p50 .., p90 .., p99 .., max ..`` with ``>=`` before a censored percentile (a lower
    bound), and the censored share."""
    names = ("p50", "p90", "p99", "max") if p99 else ("p50", "p90", "max")
    shown = ", ".join(f"{n} {'>=' if n in lat.censored else ''}{_duration(getattr(lat, n))}" for n in names)
    share = lat.censored_share
    return shown + (f" ({float(share):.0%} censored)" if share else "")


def quota(held: Mapping[str, Decimal]) -> str:
    """Quota in readable units (:func:`units.readable`'s), per resource."""
    return ", ".join(f"{k} {float(v):.4g} {units.unit(k)}" for k, v in sorted(held.items()))


def table(report: Report) -> str:
    s = report.summary
    sim = report.simulation
    req = s.requests
    warm = f", the first {format_duration(s.warm_up_seconds)} left out" if s.warm_up_seconds else ""
    att = s.attempts
    lines = [f"simulation {s.simulation} ({sim.source}), seed {s.seed}: {s.workloads} workloads, "
             f"{format_duration(s.simulated_seconds)} simulated{warm}",
             f"  outcome              finished {s.finished}, admitted (still running) {s.admitted}, "
             f"deactivated {s.deactivated}, pending {s.pending}",
             f"  admission latency    {latency(s.admission_latency)}",
             f"  time to running      {latency(s.time_to_running)}",
             f"  attempts/workload    mean {_g(att.mean)}, p90 {_g(att.p90)}, max {_g(att.max)}",
             f"  requests             created {req.created}, provisioned {req.provisioned}, failed {req.failed}, "
             f"booking expired {req.booking_expired} (consumed {req.booking_consumed}), "
             f"capacity revoked {req.capacity_revoked}",
             "  evictions            " + (", ".join(f"{k} {v}" for k, v in sorted(s.evictions.items())) or "none")]
    if s.quota_held_waiting:
        lines.append(f"  quota held waiting   {quota(s.quota_held_waiting)}")
    same = sorted(map(repr, s.local_queues.values())) == sorted(map(repr, s.cluster_queues.values()))
    for kind, queues in (("ClusterQueue", s.cluster_queues), ("LocalQueue", {} if same else s.local_queues)):
        for name, q in sorted(queues.items()):
            held = quota(q.quota_held_waiting)
            lines.append(f"  {kind} {name}: {q.workloads} workloads (finished {q.finished}, "
                         f"deactivated {q.deactivated}, pending {q.pending}), "
                         f"running after {latency(q.time_to_running, p99=False)}"
                         + (f"; held waiting {held}" if held else ""))
    return "\n".join(lines) + "\n"


def _g(value: Decimal | int | None) -> str:
    return "-" if value is None else f"{float(value):.3g}"


def replicated_table(report: Report, summary: Mapping[str, Any]) -> str:
    """Replications' figures, one a line: mean ± the 95% interval's half-width, and the interval."""
    sim = report.simulation
    n = max((v[REPLICATIONS] for v in _figures(summary).values() if v is not None), default=0)
    warm = summary.get("warmUpSeconds")
    lines = [f"simulation {summary['simulation']} ({sim.source}), seed {summary['seed']}, {n} replications"
             + (f", the first {format_duration(warm)} left out" if warm else "") + ": mean ± 95% half-width [interval]"]
    figures = _figures(summary)
    width = max(map(len, figures), default=0)
    for name, figure in figures.items():
        if figure is None:
            lines.append(f"  {name.ljust(width)}  -")
            continue
        low, high = figure[CI95]
        held = name.partition(f"{QUOTA_HELD}.")[2]
        lines.append(f"  {name.ljust(width)}  {plus_minus(figure)}  [{low:g}, {high:g}]"
                     + (f"  {units.unit(held)}" if held else ""))
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
