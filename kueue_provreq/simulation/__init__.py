"""What-if analysis: forecast one workload's future, simulate a fleet, sweep the settings.

An edge package: ``import kueue_provreq`` does not load it, and it loads neither matplotlib
nor Dask until a plot or a Dask sweep is asked for.  Time is simulated (a discrete-event loop
around the engine, :mod:`~kueue_provreq.simulation.loop`); randomness comes only from seeded
``random.Random`` generators (:mod:`~kueue_provreq.simulation.fleet`); the core stays as it is.

* :func:`forecast` — the future of each workload among some manifests, Cluster Autoscaler
  answering as a SCRIPT says (:mod:`~kueue_provreq.autoscaler`);
* :func:`load_document` / :func:`parse` / :func:`simulate` — a simulation file, validated,
  then run into a :class:`Report`;
* :func:`grid` / :func:`sweep` — one simulation per point of a grid of ``--set`` values.
"""

from kueue_provreq.autoscaler import Script, ScriptError, parse_script
from kueue_provreq.simulation.forecast import Entry, Forecast, WorkloadForecast, forecast
from kueue_provreq.simulation.run import Report, Summary, WorkloadRecord, simulate
from kueue_provreq.simulation.settings import Setting, SettingError, parse_setting
from kueue_provreq.simulation.spec import Document, Simulation, load_document, parse
from kueue_provreq.simulation.sweep import Point, SweepResult, grid, sweep

__all__ = ["Document", "Entry", "Forecast", "Point", "Report", "Script", "ScriptError", "Setting", "SettingError",
           "Simulation", "Summary", "SweepResult", "WorkloadForecast", "WorkloadRecord", "forecast", "grid",
           "load_document", "parse", "parse_script", "parse_setting", "simulate", "sweep"]
