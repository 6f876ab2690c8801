"""``calibrate``: the Cluster Autoscaler model of a simulation file, fitted to a recorded trace
(``docs/trace-format.rst`` says how; ``kueue-provreq calibrate TRACE --out DIR``).

Per provisioning class, from each ProvisioningRequest's first answer:

* ``provisionedTime`` and ``failedTime``: lognormal, by maximum likelihood (SciPy's
  ``lognorm.fit`` with the location at 0), over the delays from the request's creation to
  ``Provisioned=True`` and to the no-capacity answer (``Failed=True`` or ``Provisioned=False``);
  95% intervals for the median (Student's t on the logarithms) and sigma (chi-square);
* ``failureProbability``: the share of no-capacity answers, with the exact (Clopper-Pearson)
  binomial interval;
* ``stockouts``: only when the answers in time order cluster (a Wald-Wolfowitz runs test, one
  sided, at 5%: fewer runs of failures and successes than independent tries give).  Then a run
  of two or more no-capacity answers in a row marks a stock-out, lasting from its first answer
  to the next success; available periods last from a success after a stock-out to the next
  stock-out's first answer; both are fitted exponential (the mean's chi-square interval), and
  ``failureProbability`` counts only the failures outside stock-outs.  Otherwise the fit says
  why the data do not identify them.

What a trace cannot say is reported, not guessed: requests still pending when last seen (their
delay is only known to be longer) are left out and counted; so are the later answers of a
request CA retried itself (the time of a retry's own try is not in the trace).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

from kueue_provreq import trace as t
from kueue_provreq.manifests.codec import format_duration

CONFIDENCE = 0.95
#: Timestamps are whole seconds: a delay under one is counted as one (a lognormal needs it positive).
SHORTEST = 1.0
#: Failures in a row, at least, that mark a stock-out once answers are found to cluster.
STOCKOUT_RUN = 2


@attrs.frozen
class Interval:
    value: float
    low: float
    high: float

    def to_json(self) -> dict[str, Any]:
        return {"value": _round(self.value), "ci95": [_round(self.low), _round(self.high)]}


@attrs.frozen
class DelayFit:
    """A lognormal fitted to ``samples`` delays (seconds)."""

    samples: tuple[float, ...]
    median: Interval
    sigma: Interval

    def to_json(self) -> dict[str, Any]:
        return {"n": len(self.samples), "distribution": "lognormal", "medianSeconds": self.median.to_json(),
                "sigma": self.sigma.to_json()}

    def to_yaml(self) -> dict[str, Any]:
        return {"lognormal": {"median": format_duration(max(1, round(self.median.value))),
                              "sigma": _round(self.sigma.value)}}


@attrs.frozen
class Stockouts:
    available: Interval
    stockout: Interval
    available_n: int
    stockout_n: int


@attrs.frozen
class ClassFit:
    """What the trace says of one provisioning class."""

    name: str
    attempts: int
    pending: int
    later_answers: int
    provisioned: DelayFit | None
    failed: DelayFit | None
    failures: int
    answered: int
    failure_probability: Interval | None
    runs_p_value: float | None
    stockouts: Stockouts | None
    unidentified: tuple[str, ...]

    def to_yaml(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.provisioned is not None:
            out["provisionedTime"] = self.provisioned.to_yaml()
        if self.failed is not None:
            out["failedTime"] = self.failed.to_yaml()
        if self.failure_probability is not None:
            out["failureProbability"] = _round(self.failure_probability.value)
        if self.stockouts is not None:
            out["stockouts"] = {
                "available": {"exponential": {"mean": format_duration(max(1, round(self.stockouts.available.value)))}},
                "stockout": {"exponential": {"mean": format_duration(max(1, round(self.stockouts.stockout.value)))}}}
        return out

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "attempts": self.attempts, "answered": self.answered, "pendingLeftOut": self.pending,
            "laterAnswersLeftOut": self.later_answers,
            "provisionedTime": None if self.provisioned is None else self.provisioned.to_json(),
            "failedTime": None if self.failed is None else self.failed.to_json(),
            "failureProbability": None if self.failure_probability is None else {
                "failures": self.failures, "n": self.answered, **self.failure_probability.to_json()},
            "runsTestPValue": None if self.runs_p_value is None else _round(self.runs_p_value),
            "stockouts": None,
            "notIdentified": list(self.unidentified),
        }
        if self.stockouts is not None:
            s = self.stockouts
            out["stockouts"] = {"distribution": "exponential",
                                "availableMeanSeconds": {"n": s.available_n, **s.available.to_json()},
                                "stockoutMeanSeconds": {"n": s.stockout_n, **s.stockout.to_json()}}
        return out


def _round(x: float) -> float:
    return float(f"{x:.6g}")


def fit(recorded: t.Trace) -> tuple[ClassFit, ...]:
    """One fit per provisioning class the trace's attempts name, by class name."""
    by_request: dict[tuple[str, str, int], list[t.Attempt]] = {}
    for attempt in recorded.of(t.Attempt):
        by_request.setdefault((attempt.namespace, attempt.name, attempt.time), []).append(attempt)
    classes: dict[str, list[list[t.Attempt]]] = {}
    for seen in by_request.values():
        classes.setdefault(seen[0].provisioning_class, []).append(seen)
    return tuple(_class_fit(name, classes[name]) for name in sorted(classes))


def _class_fit(name: str, requests: list[list[t.Attempt]]) -> ClassFit:
    firsts: list[t.Attempt] = []
    pending = later = 0
    for seen in requests:
        answers = sorted((a for a in seen if a.outcome != t.PENDING), key=lambda a: a.outcome_time)
        if not answers:
            pending += 1
            continue
        firsts.append(answers[0])
        later += len({a.outcome for a in answers[1:]})
    firsts.sort(key=lambda a: (a.outcome_time, a.namespace, a.name))
    failed = [a.outcome != t.PROVISIONED for a in firsts]
    unidentified = []
    delays = {o: [max(SHORTEST, float(a.outcome_time - a.time)) for a, f in zip(firsts, failed, strict=True) if f == o]
              for o in (False, True)}
    provisioned_fit, failed_fit = _lognormal(delays[False]), _lognormal(delays[True])
    if provisioned_fit is None:
        unidentified.append(f"provisionedTime: {len(delays[False])} provisioned answer(s), a fit needs 2")
    if failed_fit is None:
        unidentified.append(f"failedTime: {len(delays[True])} no-capacity answer(s), a fit needs 2")
    p_value = _runs_test(failed)
    stockouts = None
    independent = failed
    if p_value is None:
        unidentified.append("stockouts: the answers need both outcomes, at least 10 in all, for the runs test")
    elif p_value >= 1 - CONFIDENCE:
        unidentified.append(f"stockouts: the answers do not cluster in time (runs test p = {p_value:.3g}); "
                            "failures look independent, so no stock-out periods are fitted")
    else:
        stockouts, independent = _stockouts(firsts, failed)
        if stockouts is None:
            unidentified.append(f"stockouts: the answers cluster (runs test p = {p_value:.3g}) but the trace "
                                "holds no complete stock-out followed by an available period")
            independent = failed
    failures = sum(independent)
    probability = _binomial(failures, len(independent)) if independent else None
    if probability is None:
        unidentified.append("failureProbability: no answered attempt")
    return ClassFit(name, len(requests), pending, later, provisioned_fit, failed_fit, failures, len(independent),
                    probability, p_value, stockouts, tuple(unidentified))


def _lognormal(samples: Sequence[float]) -> DelayFit | None:
    """The maximum-likelihood lognormal, with exact intervals for its median and sigma."""
    if len(samples) < 2:
        return None
    from scipy import stats

    n = len(samples)
    sigma_mle, _, median = stats.lognorm.fit(samples, floc=0)
    logs = [math.log(x) for x in samples]
    mean = sum(logs) / n
    s2 = sum((x - mean) ** 2 for x in logs) / (n - 1)
    half = float(stats.t.ppf((1 + CONFIDENCE) / 2, n - 1)) * math.sqrt(s2 / n)
    tail = (1 - CONFIDENCE) / 2
    sigma_low = math.sqrt((n - 1) * s2 / float(stats.chi2.ppf(1 - tail, n - 1)))
    sigma_high = math.sqrt((n - 1) * s2 / float(stats.chi2.ppf(tail, n - 1)))
    return DelayFit(tuple(samples), Interval(float(median), math.exp(mean - half), math.exp(mean + half)),
                    Interval(float(sigma_mle), sigma_low, sigma_high))


def _binomial(k: int, n: int) -> Interval | None:
    if n == 0:
        return None
    from scipy import stats

    ci = stats.binomtest(k, n).proportion_ci(confidence_level=CONFIDENCE, method="exact")
    return Interval(k / n, float(ci.low), float(ci.high))


def _runs_test(failed: Sequence[bool]) -> float | None:
    """One-sided Wald-Wolfowitz: the chance of so few runs if tries were independent."""
    n1, n = sum(failed), len(failed)
    n2 = n - n1
    if n < 10 or n1 == 0 or n2 == 0:
        return None
    from scipy import stats

    runs = 1 + sum(a != b for a, b in zip(failed, failed[1:], strict=False))
    mean = 1 + 2 * n1 * n2 / n
    variance = 2 * n1 * n2 * (2 * n1 * n2 - n) / (n * n * (n - 1))
    return float(stats.norm.cdf((runs - mean) / math.sqrt(variance))) if variance > 0 else None


def _stockouts(firsts: Sequence[t.Attempt], failed: Sequence[bool]) -> tuple[Stockouts | None, list[bool]]:
    """Stock-out and available periods from runs of failures, and the answers outside stock-outs."""
    runs: list[tuple[bool, int, int]] = []  # (failed, first index, last index)
    for i, f in enumerate(failed):
        if runs and runs[-1][0] == f:
            runs[-1] = (f, runs[-1][1], i)
        else:
            runs.append((f, i, i))
    outs = [(a, b) for f, a, b in runs if f and b - a + 1 >= STOCKOUT_RUN]
    inside = {i for a, b in outs for i in range(a, b + 1)}
    stockout, available = [], []
    for k, (a, b) in enumerate(outs):
        if b + 1 < len(firsts):
            ended = firsts[b + 1].outcome_time
            stockout.append(max(SHORTEST, float(ended - firsts[a].outcome_time)))
            if k + 1 < len(outs):
                available.append(max(SHORTEST, float(firsts[outs[k + 1][0]].outcome_time - ended)))
    independent = [f for i, f in enumerate(failed) if i not in inside]
    if not stockout or not available:
        return None, independent
    return Stockouts(_exponential(available), _exponential(stockout), len(available), len(stockout)), independent


def _exponential(samples: Sequence[float]) -> Interval:
    from scipy import stats

    n, mean = len(samples), sum(samples) / len(samples)
    tail = (1 - CONFIDENCE) / 2
    return Interval(mean, 2 * n * mean / float(stats.chi2.ppf(1 - tail, 2 * n)),
                    2 * n * mean / float(stats.chi2.ppf(tail, 2 * n)))


# --- the files -----------------------------------------------------------------------------------


def autoscaler_section(fits: Sequence[ClassFit]) -> dict[str, Any]:
    """The ``autoscaler`` section of a simulation file (``autoscaler: autoscaler.yaml`` includes it)."""
    return {f.name: f.to_yaml() for f in fits}


def fit_json(recorded: t.Trace, fits: Sequence[ClassFit]) -> dict[str, Any]:
    window = recorded.window
    return {"trace": recorded.source, "confidence": CONFIDENCE,
            "window": None if window is None else {k: v for k, v in window.to_json().items() if k != "type"},
            "classes": {f.name: f.to_json() for f in fits}}


def plot(fits: Sequence[ClassFit], path: Path) -> Path:
    """Per class, the observed delays' cumulative share (steps) against the fitted lognormal's."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from scipy import stats

    rows = max(1, len(fits))
    fig, axes = plt.subplots(rows, 1, figsize=(7, 3.2 * rows), squeeze=False)
    for ax, f in zip(axes[:, 0], fits, strict=False):
        for label, fitted, color in (("provisioned", f.provisioned, "#2a9d8f"), ("no capacity", f.failed, "#e63946")):
            if fitted is None:
                continue
            xs = sorted(fitted.samples)
            ax.step(xs, [(i + 1) / len(xs) for i in range(len(xs))], where="post", color=color,
                    label=f"{label}: observed (n={len(xs)})")
            grid = [xs[0] * (xs[-1] / xs[0]) ** (i / 199) for i in range(200)] if xs[-1] > xs[0] else xs
            ax.plot(grid, stats.lognorm.cdf(grid, fitted.sigma.value, scale=fitted.median.value), color=color,
                    linestyle="--", label=f"{label}: lognormal median {format_duration(round(fitted.median.value))}, "
                                          f"sigma {fitted.sigma.value:.2f}")
        ax.set_xscale("log")
        ax.set_xlabel("seconds from the request's creation to its first answer")
        ax.set_ylabel("share of answers")
        ax.set_title(f.name if f.provisioned or f.failed else f"{f.name}: too few answers to fit")
        if f.provisioned or f.failed:
            ax.legend(fontsize="small", loc="lower right")
    if not fits:
        axes[0, 0].set_title("no ProvisioningRequests in the trace")
    fig.tight_layout()
    fig.savefig(path, dpi=100, metadata={"Software": None})
    plt.close(fig)
    return path
