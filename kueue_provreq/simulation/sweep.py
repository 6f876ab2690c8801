"""``sweep``: one simulation per point of a grid of settings, run in parallel.

Every point is validated before any runs, so a bad value is reported at once.  A point is a
:class:`~kueue_provreq.simulation.spec.Simulation`, a plain value, and
:func:`~kueue_provreq.simulation.run.simulate` a function of it alone: points run in worker
processes (``concurrent.futures``, ``jobs`` of them) or on a Dask distributed cluster, and
give the same rows in the grid's order either way.  They start the most expensive first (by
:func:`cost_estimate`), so that a slow point does not run alone while the other workers idle.

Dask (``dask[distributed]``, in the ``sim`` extra) is what a sweep moves to when it outgrows
one machine: the same code runs on a laptop's ``LocalCluster`` or on a cluster's scheduler,
and it is imported only when ``dask`` is asked for.
"""

from __future__ import annotations

import csv
import io
import itertools
import math
import multiprocessing
import os
import socket
import urllib.parse
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

import attrs

from kueue_provreq.api.config import Configuration
from kueue_provreq.errors import KueueProvreqError
from kueue_provreq.extras import SIM, require
from kueue_provreq.simulation import settings as s
from kueue_provreq.simulation.replicate import CI95, MEAN, aggregate, is_figure, replicas
from kueue_provreq.simulation.run import simulate
from kueue_provreq.simulation.spec import POISSON, Cluster, Document, Simulation, parse

#: Seconds to reach a Dask scheduler before the sweep says it cannot (Dask's own default is 30).
DASK_CONNECT_TIMEOUT = 3.0

#: The most simulations a sweep runs: its points times its replications.
MAX_POINTS = 10_000

LOCAL = "local"
"""``dask="local"``: start a Dask ``LocalCluster`` for this sweep."""


class SweepError(KueueProvreqError):
    """The sweep cannot run where it was asked to (a Dask scheduler that does not answer)."""


@attrs.frozen
class Point:
    """One point of the grid: the value of each setting, and the simulation it makes."""

    values: tuple[Any, ...]
    simulation: Simulation
    replications: int = 1
    """How many times it runs (:mod:`~kueue_provreq.simulation.replicate`)."""


@attrs.frozen
class SweepResult:
    parameters: tuple[str, ...]
    """The settings' paths, as given."""
    rows: tuple[dict[str, Any], ...]
    """Per point, in grid order: each parameter's value, then the summary flattened with dots
    (with replications: ``replications``, then each figure's ``.mean``, ``.ci95_low`` and
    ``.ci95_high``)."""
    samples: tuple[tuple[dict[str, Any], ...], ...] = ()
    """Per point, in grid order: each replication's summary, flattened with dots."""
    order: tuple[int, ...] = ()
    """The rows' order in ``sweep.csv`` (empty: the grid's); a ranked sweep's is its ranking."""
    objective: str = ""
    """The expression a ranked sweep's rows' ``objective`` holds (empty: not ranked)."""

    def columns(self) -> list[str]:
        columns = list(self.parameters)
        for row in self.rows:
            columns += [k for k in row if k not in columns]
        return columns

    def csv(self) -> str:
        columns = self.columns()
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(columns)
        for i in self.order or range(len(self.rows)):
            writer.writerow([_cell(self.rows[i], c) for c in columns])
        return out.getvalue()

    def write(self, out: Path, plot: bool = True) -> list[Path]:
        """``sweep.csv`` and (``plot``) ``sweep.png``, in ``out``."""
        if plot:
            require(SIM, "matplotlib", "plots")  # before any file is written
        out.mkdir(parents=True, exist_ok=True)
        path = out / "sweep.csv"
        path.write_text(self.csv(), encoding="utf-8")
        written = [path]
        if plot:
            from kueue_provreq.simulation.plots import sweep_plot  # matplotlib: only for a plot
            png = sweep_plot(self.parameters, self.rows, out / "sweep.png", self.objective)
            if png is not None:
                written.append(png)
        return written


_COUNTED = ("evictions.", "quotaHeldWaiting.")


def _cell(row: Mapping[str, Any], column: str) -> Any:
    """A row's value; a count or quota that did not occur at this point is 0."""
    if column in row:
        value = row[column]
        return "" if value is None else value
    return 0 if column.startswith(_COUNTED) else ""


def flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"a": {"b": 1}}`` -> ``{"a.b": 1}``; a replicated figure ``{"a": {"mean": 1, "ci95":
    [0, 2], ...}}`` -> ``{"a.mean": 1, "a.ci95_low": 0, "a.ci95_high": 2}``."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if is_figure(value):
            low, high = value[CI95]
            out.update({f"{name}.mean": value[MEAN], f"{name}.ci95_low": low, f"{name}.ci95_high": high})
        elif isinstance(value, Mapping):
            out.update(flatten(value, f"{name}."))
        else:
            out[name] = value
    return out


def grid(document: Document, settings: Sequence[s.Setting], *, config: Configuration | None = None,
         count: int | None = None, seed: int | None = None, replications: int = 1,
         cluster: Cluster | None = None, warm_up: int = 0) -> list[Point]:
    """Every combination of the settings' values, each validated into its simulation (starting
    from ``cluster``, when given); a path set twice, or more than :data:`MAX_POINTS`
    simulations (combinations times ``replications``), refused before any is made."""
    seen: set[tuple[Any, ...]] = set()
    for setting in settings:
        key = setting.keys if setting.shorthand is None else (setting.text,)
        if key in seen:
            raise s.SettingError(f"--set {setting.text}: given twice (give its values once, comma-separated)")
        seen.add(key)
    size = math.prod(len(setting.values) for setting in settings)
    if size * replications > MAX_POINTS:
        runs = "one simulation each" if replications == 1 else f"times {replications} replications"
        raise s.SettingError(f"--set: the grid has {size:,} points ({runs}), more than {MAX_POINTS:,} "
                             "simulations: fewer values, fewer replications, or several sweeps")
    points = []
    for values in itertools.product(*(setting.values for setting in settings)):
        assignments = list(zip(settings, values, strict=True))
        data = s.apply(document.data, assignments)
        overridden: dict[str, str] = {}
        for setting, value in assignments:
            given = f"--set {setting.text}={value}"
            overridden[setting.field_path() if setting.shorthand is None else setting.text] = given
            created = None if setting.shorthand is not None else s.first_created(document.data, setting)
            if created is not None:
                overridden[created] = given
        sim = parse(attrs.evolve(document, data=data), config=config, count=count, seed=seed,
                    retry_strategy=s.shorthands(assignments), overridden=overridden, cluster=cluster,
                    warm_up=warm_up, feature_gates=s.gates(assignments))
        points.append(Point(values, sim, replications))
    return points


def cost_estimate(sim: Simulation) -> float:
    """A point's cost, relative to the others': its arrivals times the simulated time they
    span (their arrival span plus the horizon after the last).  Cheap and rough, but the
    order it gives is all a sweep needs."""
    span: float
    if sim.trace:
        span = (sim.trace[-1].at - sim.trace[0].at) * math.ceil(sim.count / len(sim.trace))
    elif sim.process == POISSON:
        span = sim.count / sim.rate_per_hour * 3600
    else:
        span = 0.0
    return sim.count * (span + sim.horizon)


def expensive_first(sims: Sequence[Simulation]) -> list[int]:
    """The points' indices in the order a parallel sweep starts them: by descending
    :func:`cost_estimate`, the grid's order among equals."""
    return sorted(range(len(sims)), key=lambda i: -cost_estimate(sims[i]))


def run_point(sim: Simulation) -> dict[str, Any]:
    """One point's summary (a top-level function: worker processes import it by name)."""
    return simulate(sim).summary.to_json()


def sweep(parameters: Sequence[str], points: Sequence[Point], *, jobs: int | None = None, dask: str | None = None,
          progress: Callable[[int], None] | None = None) -> SweepResult:
    """Run every point's replications: ``jobs`` worker processes (default: the CPU count; 1
    runs here), or on the Dask cluster at ``dask`` (``"local"`` starts one with ``jobs``
    workers)."""
    sims = [replica for p in points for replica in replicas(p.simulation, p.replications)]
    if dask is not None:
        summaries = _on_dask(sims, dask, jobs, progress)
    elif (jobs or os.cpu_count() or 1) <= 1 or len(sims) <= 1:
        summaries = []
        for i, sim in enumerate(sims, 1):
            summaries.append(run_point(sim))
            if progress is not None:
                progress(i)
    else:
        summaries = _in_processes(sims, jobs or os.cpu_count() or 1, progress)
    per_point = []
    for p in points:
        per_point.append(summaries[:p.replications])
        summaries = summaries[p.replications:]
    rows = []
    for p, runs in zip(points, per_point, strict=True):
        row = dict(zip(parameters, p.values, strict=True))
        if p.replications > 1:
            row["replications"] = p.replications
        rows.append({**row, **flatten(aggregate(runs))})
    samples = tuple(tuple(flatten(run) for run in runs) for runs in per_point)
    return SweepResult(tuple(parameters), tuple(rows), samples)


def _in_processes(sims: Sequence[Simulation], jobs: int, progress: Callable[[int], None] | None
                  ) -> list[dict[str, Any]]:
    # "spawn": workers start clean, whatever threads the parent has (a progress bar's)
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=min(jobs, len(sims)), mp_context=context) as pool:
        futures = {pool.submit(run_point, sims[i]): i for i in expensive_first(sims)}
        return _gather(futures, as_completed(futures), len(sims), progress)


def _gather(futures: Mapping[Any, int], completed: Iterable[Any], n: int,
            progress: Callable[[int], None] | None) -> list[dict[str, Any]]:
    results: list[dict[str, Any] | None] = [None] * n
    for done, future in enumerate(completed, 1):
        results[futures[future]] = future.result()
        if progress is not None:
            progress(done)
    return [r for r in results if r is not None]


def check_scheduler(address: str) -> None:
    """A ``tcp://host:port`` scheduler that refuses connections is said at once, before Dask's
    own connection loop waits out its timeout (``local`` and other addresses: Dask says)."""
    parsed = urllib.parse.urlsplit(address)
    if parsed.scheme != "tcp" or parsed.hostname is None or parsed.port is None:
        return
    try:
        socket.create_connection((parsed.hostname, parsed.port), timeout=DASK_CONNECT_TIMEOUT).close()
    except OSError as e:
        raise SweepError(f"--dask {address}: no Dask scheduler answers there ({e.strerror or e})") from None


def _on_dask(sims: Sequence[Simulation], address: str, jobs: int | None,
             progress: Callable[[int], None] | None) -> list[dict[str, Any]]:
    require(SIM, "dask.distributed", "a Dask sweep")
    check_scheduler(address)  # before Dask's own import, which takes seconds
    from dask.distributed import Client, LocalCluster
    from dask.distributed import as_completed as dask_completed

    if address == LOCAL:
        cluster = LocalCluster(n_workers=jobs or os.cpu_count() or 1, threads_per_worker=1, processes=True,
                               dashboard_address=None)
        client = Client(cluster)
    else:
        cluster = None
        try:
            client = Client(address, timeout=DASK_CONNECT_TIMEOUT)
        except (OSError, TimeoutError, ValueError) as e:  # refused, unreachable, or not an address
            reason = " ".join(str(e).split()) or type(e).__name__
            raise SweepError(f"--dask {address}: no Dask scheduler answers there within "
                             f"{DASK_CONNECT_TIMEOUT:g} s ({reason})") from None
    try:
        order = expensive_first(sims)
        futures = client.map(run_point, [sims[i] for i in order], pure=False)
        index = dict(zip(futures, order, strict=True))
        return _gather(index, dask_completed(futures), len(sims), progress)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
