"""The PNG plots of a simulation and of a sweep, drawn with matplotlib's Agg backend.

matplotlib is the ``sim`` extra's plotting library: the de-facto standard, headless with
Agg, and no server or browser needed.  This module is imported only when a plot is asked
for, so the CLI and the library start without it.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402  (after choosing the backend)

from kueue_provreq.machines import WorkloadPhase as P  # noqa: E402
from kueue_provreq.simulation import units  # noqa: E402
from kueue_provreq.simulation.run import Report, after_warm_up  # noqa: E402

_SAVE: dict[str, Any] = {"dpi": 100, "metadata": {"Software": None}}
_PHASE_COLORS: dict[str, str] = {P.PENDING: "#c7c7c7", P.BACKOFF: "#9e9e9e", P.QUOTA_RESERVED: "#ff9f1c",
                 P.EVICTED: "#e63946", P.ADMITTED: "#2a9d8f", P.INACTIVE: "#6d597a"}
_PHASE_LABELS: dict[str, str] = {P.PENDING: "queued", P.BACKOFF: "backoff", P.QUOTA_RESERVED: "quota held, checks not Ready",
                 P.EVICTED: "evicted, quota held", P.ADMITTED: "admitted", P.INACTIVE: "deactivated"}


def _save(fig: Any, path: Path) -> Path:
    fig.savefig(path, **_SAVE)
    plt.close(fig)
    return path


def _hours(seconds: Sequence[float]) -> list[float]:
    return [s / 3600 for s in seconds]


def simulation_plots(report: Report, out: Path) -> list[Path]:
    """The admission-latency CDF, workloads and quota over time, and for runs of at most 50
    workloads a Gantt chart of each workload's phases."""
    paths = [latency_cdf(report, out / "admission-latency-cdf.png"), over_time(report, out / "workloads-over-time.png")]
    if report.histories:
        paths.append(gantt(report, out / "gantt.png"))
    return paths


def latency_cdf(report: Report, path: Path) -> Path:
    """The admission latency's CDF over every workload counted: those never admitted (the
    censored share) keep the curve below 1."""
    summary = report.summary
    counted = after_warm_up(report.workloads, summary.warm_up_seconds)
    latencies = sorted(r.admitted - r.created for r in counted if r.admitted is not None)
    fig, ax = plt.subplots(figsize=(7, 4))
    if latencies:
        n = len(counted)
        xs = [0.0] + [v / 60 for v in latencies]
        ax.step(xs + [xs[-1] * 1.02 + 0.1], [0.0] + [(i + 1) / n for i in range(len(latencies))]
                + [len(latencies) / n], where="post", color="#264653")
        lat = summary.admission_latency
        for label, value in (("p50", lat.p50), ("p90", lat.p90), ("p99", lat.p99)):
            if value is not None and label not in lat.censored:
                ax.axvline(value / 60, linestyle=":", color="#e76f51")
                ax.annotate(label, (value / 60, 0.02), rotation=90, color="#e76f51", fontsize=8)
        if len(latencies) < n:
            ax.axhline(len(latencies) / n, linestyle="--", color="#6d597a",
                       label=f"never admitted (censored): {1 - len(latencies) / n:.0%}")
            ax.legend(loc="lower right", fontsize=8)
    else:
        ax.text(0.5, 0.5, "no workload was admitted", ha="center", transform=ax.transAxes)
    ax.set_xlabel("admission latency (minutes from creation to admission)")
    ax.set_ylabel("fraction of all workloads")
    ax.set_ylim(0, 1.02)
    ax.set_title(f"{summary.simulation}: admission latency, {len(latencies)} of {len(counted)} admitted")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return _save(fig, path)


def _resources(names: Sequence[str]) -> list[str]:
    """The resources worth a panel: extended ones (GPUs) first, then cpu, then memory; two."""
    return sorted(names, key=lambda r: (0 if "/" in r else 1 if r == "cpu" else 2, r))[:2]


def over_time(report: Report, path: Path) -> Path:
    s = report.series
    resources = _resources(list(s.waiting_quota))
    fig, axes = plt.subplots(1 + len(resources), 1, figsize=(8, 2.6 * (1 + len(resources))), sharex=True,
                             squeeze=False)
    t = _hours(s.times)
    ax = axes[0][0]
    ax.step(t, s.pending, where="post", label="pending (waiting for quota)", color="#9e9e9e")
    ax.step(t, s.waiting, where="post", label="quota reserved, checks not Ready", color="#ff9f1c")
    ax.step(t, s.admitted, where="post", label="admitted", color="#2a9d8f")
    ax.set_ylabel("workloads")
    ax.legend(loc="upper right", fontsize=8)
    ax.set_title(f"{report.summary.simulation}: workloads and their quota over time")
    for i, resource in enumerate(resources, 1):
        ax = axes[i][0]
        shown = float(units.scale(resource))
        ax.step(t, [v * shown for v in s.waiting_quota[resource]], where="post", label="held while checks not Ready",
                color="#ff9f1c")
        ax.step(t, [v * shown for v in s.admitted_quota[resource]], where="post", label="held by admitted workloads",
                color="#2a9d8f")
        ax.set_ylabel(f"{resource} quota" + (" (GiB)" if units.is_bytes(resource) else ""))
        ax.legend(loc="upper right", fontsize=8)
    for row in axes:
        row[0].grid(alpha=0.3)
    axes[-1][0].set_xlabel("hours after the start")
    fig.tight_layout()
    return _save(fig, path)


def gantt(report: Report, path: Path) -> Path:
    histories = report.histories
    end = report.summary.simulated_seconds
    fig, ax = plt.subplots(figsize=(9, 0.9 + 0.28 * len(histories)))
    seen: set[str] = set()
    for row, (_name, history) in enumerate(sorted(histories.items(), key=lambda kv: (kv[1][0][0], kv[0]))):
        for (start, phase), nxt in zip(history, [*history[1:], (end, "")], strict=True):
            color = _PHASE_COLORS.get(phase)
            if color is None or nxt[0] <= start and phase != P.INACTIVE:
                continue
            label = _PHASE_LABELS[phase] if phase not in seen else None
            seen.add(phase)
            width = (nxt[0] - start) / 60 if phase != P.INACTIVE else 0.5
            ax.barh(row, max(width, 0.05), left=start / 60, color=color, label=label, height=0.7)
    ax.set_yticks(range(len(histories)))
    ax.set_yticklabels([n.split("/", 1)[1] for n, _ in sorted(histories.items(), key=lambda kv: (kv[1][0][0], kv[0]))],
                       fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("minutes after the start")
    ax.set_title(f"{report.summary.simulation}: each workload's phases")
    ax.legend(loc="lower right", fontsize=8)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    return _save(fig, path)


def sweep_plot(parameters: Sequence[str], rows: Sequence[dict[str, Any]], path: Path, objective: str = "") -> Path | None:
    """The sweep at a glance; None when no parameter varies (one point: the CSV says it all).

    Unranked, one varying parameter gives a line plot of the time to running, two a heatmap
    of its p90.  Ranked (``objective``: the expression the rows' ``objective`` holds), every
    cell is coloured by the objective, the best point marked ``#1`` and a point breaking a
    constraint hatched.  With more than two varying parameters, the first two span each
    panel and every combination of the others gets its own panel (small multiples), on one
    colour scale."""
    varying = [p for p in parameters if len({repr(r[p]) for r in rows}) > 1]
    if not varying:
        return None
    if len(varying) == 1 and not objective:
        return _line(varying[0], rows, path)
    return _panels(varying, rows, path, objective)


def _values(name: str, rows: Sequence[dict[str, Any]]) -> list[Any]:
    return list(dict.fromkeys(r[name] for r in rows))


def _figure(row: dict[str, Any], key: str) -> Any:
    """A sweep row's figure: its value, or its mean across replications."""
    return row[key] if key in row else row.get(f"{key}.mean")


def _minutes(value: Any) -> float:
    return math.nan if value is None or value == "" else float(value) / 60


_RUNNING = "timeToRunningSeconds"


def _line(name: str, rows: Sequence[dict[str, Any]], path: Path) -> Path:
    xs = _values(name, rows)
    numeric = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in xs)
    positions = xs if numeric else list(range(len(xs)))
    fig, ax = plt.subplots(figsize=(7, 4))
    for key, style in (("p50", "-o"), ("p90", "-s"), ("p99", "-^")):
        by_x = {repr(r[name]): _minutes(_figure(r, f"{_RUNNING}.{key}")) for r in rows}
        ax.plot(positions, [by_x[repr(x)] for x in xs], style, label=f"{key} time to running")
    ax.set_xlabel(name)
    if not numeric:
        ax.set_xticks(positions)
        ax.set_xticklabels([str(x) for x in xs])
    ax.set_ylabel("minutes (never ran: counted at the run's end)")
    ax2 = ax.twinx()
    by_x = {repr(r[name]): _figure(r, "deactivated") for r in rows}
    ax2.plot(positions, [by_x[repr(x)] for x in xs], ":x", color="#6d597a", label="deactivated workloads")
    ax2.set_ylabel("deactivated workloads")
    lines = ax.get_legend_handles_labels()
    more = ax2.get_legend_handles_labels()
    ax.legend(lines[0] + more[0], lines[1] + more[1], fontsize=8, loc="best")
    ax.set_title(f"time to running by {name}")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return _save(fig, path)


def _colour_value(row: dict[str, Any], objective: str) -> float:
    if objective:
        value = row.get("objective")
        return math.nan if value is None or value == "" else float(value)
    return _minutes(_figure(row, f"{_RUNNING}.p90"))


def _panels(varying: Sequence[str], rows: Sequence[dict[str, Any]], path: Path, objective: str) -> Path:
    """One heatmap per combination of the parameters past the first two (one panel for two)."""
    from matplotlib.colors import Normalize

    first, second = (None, varying[0]) if len(varying) == 1 else (varying[0], varying[1])
    rest = list(varying[2:])
    combos = list(dict.fromkeys(tuple(repr(r[p]) for p in rest) for r in rows))
    ys = _values(first, rows) if first is not None else [None]
    xs = _values(second, rows)
    finite = [v for v in (_colour_value(r, objective) for r in rows) if not math.isnan(v)]
    norm = Normalize(min(finite, default=0.0), max(finite, default=1.0))
    columns = min(len(combos), 3)
    lines = math.ceil(len(combos) / columns)
    width, height = 1.6 + 1.4 * len(xs), 1.6 + 0.8 * len(ys)
    fig, axes = plt.subplots(lines, columns, figsize=(width * columns + 1.2, height * lines + 0.6), squeeze=False,
                             layout="constrained")
    image = None
    for k, combo in enumerate(combos):
        ax = axes[k // columns][k % columns]
        mine = [r for r in rows if tuple(repr(r[p]) for p in rest) == combo]
        image = _cells(ax, mine, first, second, ys, xs, objective, norm)
        if rest:
            ax.set_title("\n".join(textwrap.fill(f"{p}={mine[0][p]}", 45) for p in rest), fontsize=7)
    for k in range(len(combos), lines * columns):
        axes[k // columns][k % columns].axis("off")
    label = f"objective: {objective}" if objective else "p90 time to running (minutes)"
    if image is not None:
        fig.colorbar(image, ax=axes.ravel().tolist(), label=label)
    what = f"ranked by {objective} (hatched: breaks a constraint)" if objective else "p90 time to running"
    fig.suptitle(what, fontsize=10)
    return _save(fig, path)


def _cells(ax: Any, rows: Sequence[dict[str, Any]], first: str | None, second: str, ys: Sequence[Any],
           xs: Sequence[Any], objective: str, norm: Any) -> Any:
    """One panel: a cell per (``first``, ``second``) value, coloured, hatched when infeasible."""
    from matplotlib.patches import Rectangle

    by_cell = {(repr(r[first]) if first is not None else None, repr(r[second])): r for r in rows}
    key = (lambda y: repr(y)) if first is not None else (lambda y: None)
    grid = [[_colour_value(by_cell[(key(y), repr(x))], objective) if (key(y), repr(x)) in by_cell else math.nan
             for x in xs] for y in ys]
    image = ax.imshow(grid, cmap="viridis_r", aspect="auto", norm=norm)
    ax.set_xticks(range(len(xs)))
    ax.set_xticklabels([str(x) for x in xs], fontsize=8)
    ax.set_xlabel(second, fontsize=8)
    ax.set_yticks(range(len(ys)) if first is not None else [])
    if first is not None:
        ax.set_yticklabels([str(y) for y in ys], fontsize=8)
        ax.set_ylabel(first, fontsize=8)
    middle = (norm.vmin + norm.vmax) / 2
    for i, y in enumerate(ys):
        for j, x in enumerate(xs):
            cell = by_cell.get((key(y), repr(x)))
            value = grid[i][j]
            text = "-" if math.isnan(value) else f"{value:.4g}" if objective else f"{value:.1f} min"
            if cell is not None:
                if objective and cell.get("rank") == 1:
                    text = f"#1\n{text}"
                text += f"\n{_figure(cell, 'deactivated'):g} deactivated"
                if objective and cell.get("feasible") is False:
                    ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, hatch="///", edgecolor="#e63946",
                                           linewidth=0))
            ax.text(j, i, text, ha="center", va="center", fontsize=7,
                    color="black" if math.isnan(value) or value < middle else "white")
    return image
