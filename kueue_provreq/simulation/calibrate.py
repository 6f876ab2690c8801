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
  sided, at 5%: fewer runs of failures and successes than independent tries give).  Then the
  answers are fitted, by maximum likelihood, as readings of a hidden two-state process: capacity
  available for exponential periods (a try then fails with ``failureProbability``) and out of
  stock for exponential periods (every try fails), switching at any time, seen only when a try
  is answered.  Nights and weekends nobody tries at are thus no evidence either way (counting
  the time between answers would stretch the available periods over them).  Intervals: 95%, from
  the likelihood's curvature (the inverse Hessian), on the logarithm of the means and the
  logit of the probability.  Otherwise the fit says why the data do not identify stock-outs.

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
#: The shortest and longest period mean the stock-out fit considers (a minute, thirty days).
PERIOD_BOUNDS = (60.0, 30 * 86400.0)


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
class FittedStockouts:
    """Mean lengths (seconds) of available and stock-out periods."""

    available: Interval
    stockout: Interval


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
    """Per try; with stock-outs, per try while capacity is available."""
    runs_p_value: float | None
    stockouts: FittedStockouts | None
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
                "failures": self.failures, "n": self.answered, **self.failure_probability.to_json(),
                "method": "binomial, exact (Clopper-Pearson)" if self.stockouts is None else
                          "hidden two-state process, tries while available"},
            "runsTestPValue": None if self.runs_p_value is None else _round(self.runs_p_value),
            "stockouts": None,
            "notIdentified": list(self.unidentified),
        }
        if self.stockouts is not None:
            s = self.stockouts
            out["stockouts"] = {"distribution": "exponential", "availableMeanSeconds": s.available.to_json(),
                                "stockoutMeanSeconds": s.stockout.to_json()}
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
    probability = _binomial(sum(failed), len(failed)) if failed else None
    if p_value is None:
        unidentified.append("stockouts: the answers need both outcomes, at least 10 in all, for the runs test")
    elif p_value >= 1 - CONFIDENCE:
        unidentified.append(f"stockouts: the answers do not cluster in time (runs test p = {p_value:.3g}); "
                            "failures look independent, so no stock-out periods are fitted")
    else:
        stockouts, probability = _stockouts([float(a.outcome_time) for a in firsts], failed)
    if probability is None:
        unidentified.append("failureProbability: no answered attempt")
    return ClassFit(name, len(requests), pending, later, provisioned_fit, failed_fit, sum(failed), len(failed),
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


def _stockouts(times: Sequence[float], failed: Sequence[bool]) -> tuple[FittedStockouts, Interval]:
    """The hidden two-state process's maximum-likelihood means and failure probability."""
    import numpy as np
    from scipy import optimize, special, stats

    def nll(theta: Any) -> float:
        return -_log_likelihood(times, failed, math.exp(theta[0]), math.exp(theta[1]), float(special.expit(theta[2])))

    low, high = (math.log(b) for b in PERIOD_BOUNDS)
    span = max(times) - min(times)
    start = [min(max(math.log(span / 4 or 1), low), high), min(max(math.log(span / 16 or 1), low), high), -2.0]
    found = optimize.minimize(nll, start, method="L-BFGS-B", bounds=[(low, high), (low, high), (-12.0, 12.0)])
    theta = found.x
    covariance = np.linalg.pinv(_hessian(nll, theta))
    z = float(stats.norm.ppf((1 + CONFIDENCE) / 2))
    half = [z * math.sqrt(max(float(covariance[i, i]), 0.0)) for i in range(3)]

    def mean(i: int) -> Interval:
        return Interval(math.exp(theta[i]), math.exp(theta[i] - half[i]), math.exp(theta[i] + half[i]))

    expit = special.expit
    probability = Interval(float(expit(theta[2])), float(expit(theta[2] - half[2])), float(expit(theta[2] + half[2])))
    return FittedStockouts(mean(0), mean(1)), probability


def _log_likelihood(times: Sequence[float], failed: Sequence[bool], available: float, stockout: float,
                    p: float) -> float:
    """The forward algorithm over the answers: between two answers the state moves as a
    two-state Markov process with rates 1/available and 1/stockout."""
    leave, back = 1 / available, 1 / stockout
    total = leave + back
    steady = back / total  # the share of time available
    alpha = (steady, 1 - steady)
    ll = 0.0
    for k, (at, f) in enumerate(zip(times, failed, strict=True)):
        if k:
            e = math.exp(-total * (at - times[k - 1]))
            stay_available, stay_out = steady + (1 - steady) * e, (1 - steady) + steady * e
            alpha = (alpha[0] * stay_available + alpha[1] * (1 - stay_out),
                     alpha[0] * (1 - stay_available) + alpha[1] * stay_out)
        alpha = (alpha[0] * (p if f else 1 - p), alpha[1] * (1.0 if f else 0.0))
        norm = alpha[0] + alpha[1]
        if norm <= 0:
            return -math.inf
        ll += math.log(norm)
        alpha = (alpha[0] / norm, alpha[1] / norm)
    return ll


def _hessian(f: Any, x: Any, step: float = 1e-3) -> Any:
    """Central differences: the curvature of the negative log-likelihood at its minimum."""
    import numpy as np

    n = len(x)
    h = np.zeros((n, n))

    def at(i: int, di: float, j: int, dj: float) -> float:
        y = np.array(x, dtype=float)
        y[i] += di
        y[j] += dj
        return float(f(y))

    for i in range(n):
        for j in range(n):
            h[i, j] = (at(i, step, j, step) - at(i, step, j, -step) - at(i, -step, j, step)
                       + at(i, -step, j, -step)) / (4 * step * step)
    return h


def summary_lines(f: ClassFit) -> list[str]:
    """What was fitted, with its 95% intervals, one line each."""
    lines = []
    for label, delay in (("provisionedTime", f.provisioned), ("failedTime", f.failed)):
        if delay is not None:
            m, s = delay.median, delay.sigma
            lines.append(f"{label}: lognormal, median {format_duration(round(m.value))} "
                         f"[{format_duration(round(m.low))}, {format_duration(round(m.high))}], "
                         f"sigma {s.value:.2f} [{s.low:.2f}, {s.high:.2f}] (n={len(delay.samples)})")
    p = f.failure_probability
    if p is not None:
        lines.append(f"failureProbability: {p.value:.3f} [{p.low:.3f}, {p.high:.3f}]"
                     + (" (while available)" if f.stockouts is not None else ""))
    if f.stockouts is not None:
        for label, mean in (("available", f.stockouts.available), ("stockout", f.stockouts.stockout)):
            lines.append(f"stockouts.{label}: exponential, mean {format_duration(round(mean.value))} "
                         f"[{format_duration(round(mean.low))}, {format_duration(round(mean.high))}]")
    return lines


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
