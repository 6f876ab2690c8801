"""Replications: the same simulation under independent seeds, and each figure as a mean and
a 95% confidence interval across them.

Replication 1 runs with the simulation's own seed, so one replication is exactly today's run;
replication *i* > 1 runs with the first 8 bytes of SHA-256 of ``"<seed>/<i>"``, big-endian:
independent of each other, and the same on every machine.  Every point of a sweep uses the
same replication seeds (common random numbers), so the points differ by their settings and
not by their luck.

The interval is Student's t (two-sided, 95%) over the replications' values: the replications
are few (3 by default in a sweep) and the normal quantile would make it too narrow there
(1.96 against t's 4.30 for 3).  The t quantile comes from SciPy (``scipy.stats.t``), in the
``sim`` extra, imported only when more than one replication is asked for.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from kueue_provreq.extras import SIM, require
from kueue_provreq.simulation.spec import Simulation

#: The most replications of one run (a sweep counts its points times its replications too).
MAX_REPLICATIONS = 1_000

#: A confidence interval's level.
LEVEL = 0.95

#: What a summary.json figure holds with more than one replication.
MEAN, CI95, REPLICATIONS = "mean", "ci95", "replications"

#: Figures that are not measured, and stay as the first replication has them.
_LABELS = frozenset({"simulation", "seed", "warmUpSeconds"})

#: Maps whose missing keys are a count of 0 (an eviction reason or a resource that did not occur).
_COUNTED = frozenset({"evictions", "quotaHeldWaiting"})


def seeds(seed: int, replications: int) -> list[int]:
    """The seeds of ``replications`` replications of a run seeded ``seed``."""
    return [seed] + [int.from_bytes(hashlib.sha256(f"{seed}/{i}".encode()).digest()[:8], "big")
                     for i in range(2, replications + 1)]


def replicas(sim: Simulation, replications: int) -> list[Simulation]:
    return [attrs.evolve(sim, seed=seed) for seed in seeds(sim.seed, replications)]


def t_quantile(replications: int) -> float:
    """Student's t quantile for a two-sided 95% interval over ``replications`` values."""
    require(SIM, "scipy", "--replications")
    from scipy.stats import t  # the sim extra: only when replications are asked for

    return float(t.ppf((1 + LEVEL) / 2, replications - 1))


def interval(values: Sequence[float]) -> tuple[float, float, float]:
    """Mean and the 95% interval's bounds; all three the mean when the values agree."""
    n = len(values)
    mean = math.fsum(values) / n
    if n < 2:
        return mean, mean, mean
    sd = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1))
    half = t_quantile(n) * sd / math.sqrt(n)
    return mean, mean - half, mean + half


def welch(a: Sequence[float], b: Sequence[float]) -> float | None:
    """The two-sided p-value of Welch's t-test that ``a`` and ``b`` have the same mean; None
    when it cannot be computed (fewer than two values each, or no variation in either)."""
    if len(a) < 2 or len(b) < 2 or (len(set(a)) == 1 and len(set(b)) == 1):
        return None
    require(SIM, "scipy", "--objective")
    from scipy.stats import ttest_ind  # the sim extra

    return float(ttest_ind(a, b, equal_var=False).pvalue)


def _round(value: float) -> int | float:
    """Figures as summary.json writes them: integers stay integers, others keep 3 decimals."""
    return int(value) if value == int(value) else round(value, 3)


def aggregate(summaries: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The replications' summaries as one: unchanged for one replication; otherwise each
    figure ``{"mean": x, "ci95": [low, high], "replications": n}`` over the replications
    where it has a value (a percentile of no workloads has none), null where none has."""
    if len(summaries) == 1:
        return dict(summaries[0])
    return _merge(summaries, "")


def _merge(parts: Sequence[Mapping[str, Any]], parent: str) -> dict[str, Any]:
    keys = list(dict.fromkeys(k for part in parts for k in part))
    out: dict[str, Any] = {}
    for key in keys:
        if key in _LABELS and not parent:
            out[key] = parts[0][key]
            continue
        present = [part[key] for part in parts if key in part]
        if any(isinstance(v, Mapping) for v in present):
            out[key] = _merge([v for v in present if isinstance(v, Mapping)], key)
            continue
        values = [float(v) for v in present if v is not None]
        if parent in _COUNTED:
            values += [0.0] * (len(parts) - len(present))
        if not values:
            out[key] = None
            continue
        mean, low, high = interval(values)
        out[key] = {MEAN: _round(mean), CI95: [_round(low), _round(high)], REPLICATIONS: len(values)}
    return out


def is_figure(value: Any) -> bool:
    """A replicated figure (as :func:`aggregate` writes it)."""
    return isinstance(value, Mapping) and set(value) == {MEAN, CI95, REPLICATIONS}


__all__ = ["MAX_REPLICATIONS", "aggregate", "interval", "is_figure", "replicas", "seeds", "t_quantile", "welch"]
