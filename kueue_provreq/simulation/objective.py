"""``sweep --objective EXPR --constraint EXPR``: the points ranked by what the reader wants.

An expression is arithmetic over the figures of a point's summary, parsed with :mod:`ast` and
walked node by node over a whitelist (numbers, names, ``+ - * /``, unary minus, comparisons,
a few functions); nothing is ever evaluated as Python.

- A figure is its dotted path in ``summary.json``: ``finished``,
  ``admissionLatencySeconds.p90``, ``provisioningRequests.failed``, ``evictions.AdmissionCheck``,
  ``clusterQueues["team-a"].pending`` (a key that is no Python name goes in brackets, quoted).
- ``p50(X)``, ``p90(X)``, ``p99(X)``, ``max(X)`` are ``X.p50`` ...; ``X`` may be a latency by its
  figure name or by its short name: ``timeToRunning`` (``timeToRunningSeconds``, from a
  workload's creation to its pods' being ready) or ``admissionLatency``
  (``admissionLatencySeconds``, to its admission).  Both count the workloads that never got
  there as censored at the run's end, so dropping workloads never looks fast.
- ``<count>Share`` is a count over the workloads: ``deactivatedShare`` is
  ``deactivated / workloads`` (also ``finishedShare``, ``admittedShare``, ``pendingShare``, and
  per queue: ``clusterQueues["team-a"].deactivatedShare``).

Each expression is evaluated on every replication of a point.  The objective is smaller-better
(negate it to maximise: ``-finished``); a point's objective is the mean of its replications'
values, with their 95% interval.  A constraint is a comparison, ``A <= B`` (``<``, ``>=``,
``>``, ``==``, ``!=``; chains as in Python); it holds at a point when it holds between the
means of its sides.  A figure with no value (the p90 of no admitted workloads) or a division
by zero gives no value: a point whose objective has none is not ranked, and a constraint
with no value is broken.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from kueue_provreq.errors import KueueProvreqError
from kueue_provreq.simulation.replicate import interval, welch

#: Function forms: ``p90(X)`` is the figure ``X.p90``.
PERCENTILES = ("p50", "p90", "p99", "max")

#: The latencies' short names: their summary.json figures without ``Seconds``.
_LATENCY_ALIASES = {"admissionLatency": "admissionLatencySeconds", "timeToRunning": "timeToRunningSeconds"}

#: ``<count>Share``: the count over the workloads of the same scope.
_SHARES = ("finished", "admitted", "deactivated", "pending")
_SHARE = "Share"

#: Figures that count what happened: absent at a point (no such eviction) means 0.
_COUNTED = ("evictions.", "quotaHeldWaiting.")

#: A difference is significant when Welch's two-sided p-value is below this.
ALPHA = 0.05

_ARITHMETIC: dict[type[ast.operator], Callable[[float, float], float]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}
_COMPARISONS: dict[type[ast.cmpop], Callable[[float, float], bool]] = {
    ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
    ast.Eq: operator.eq, ast.NotEq: operator.ne}


class ExpressionError(KueueProvreqError):
    """An objective or constraint that is not an expression over the summary's figures."""


Figures = Mapping[str, Any]
"""One replication's summary, flattened with dots."""


@attrs.frozen
class Expression:
    option: str
    """``--objective`` or ``--constraint``: named in every error."""
    text: str
    tree: ast.expr = attrs.field(eq=False)

    def value(self, figures: Figures) -> float | None:
        """Its value on one replication (a comparison: its sides' values are :meth:`sides`)."""
        return _arithmetic(self, self.tree, figures)

    def sides(self) -> list[ast.expr]:
        tree = self.tree
        return [tree.left, *tree.comparators] if isinstance(tree, ast.Compare) else [tree]


def parse(option: str, text: str, *, comparison: bool) -> Expression:
    """``text`` checked against the language: a comparison for a constraint, arithmetic for
    an objective."""
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as e:
        raise ExpressionError(f"{option} {text!r}: not an expression ({e.msg})") from None
    if comparison != isinstance(tree, ast.Compare):
        want = "a comparison (A <= B)" if comparison else "arithmetic over figures, not a comparison"
        raise ExpressionError(f"{option} {text!r}: must be {want}")
    sides = [tree.left, *tree.comparators] if isinstance(tree, ast.Compare) else [tree]
    if isinstance(tree, ast.Compare):
        for op in tree.ops:
            if type(op) not in _COMPARISONS:
                raise ExpressionError(f"{option} {text!r}: {type(op).__name__} is not a comparison it knows "
                                      "(<, <=, >, >=, ==, !=)")
    for side in sides:
        _check(option, text, side)
    return Expression(option, text, tree)


def _check(option: str, text: str, node: ast.expr) -> None:
    """Only whitelisted nodes: numbers, + - * /, unary signs, and figures (:func:`_figure`)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return
    if isinstance(node, ast.BinOp) and type(node.op) in _ARITHMETIC:
        _check(option, text, node.left)
        _check(option, text, node.right)
        return
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        _check(option, text, node.operand)
        return
    _figure(option, text, node)


def _figure(option: str, text: str, node: ast.expr) -> str:
    """A figure's dotted name, from a name, ``a.b``, ``a["b"]`` or ``p90(a)``."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in PERCENTILES:
        if len(node.args) != 1 or node.keywords:
            raise ExpressionError(f"{option} {text!r}: {node.func.id}() takes one latency figure")
        base = _figure(option, text, node.args[0])
        return f"{_LATENCY_ALIASES.get(base, base)}.{node.func.id}"
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_figure(option, text, node.value)}.{node.attr}"
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
        return f"{_figure(option, text, node.value)}.{node.slice.value}"
    part = ast.get_source_segment(text.strip(), node) or type(node).__name__
    raise ExpressionError(f"{option} {text!r}: {part!r} is not a figure, a number or + - * / of them "
                          f"(functions: {', '.join(PERCENTILES)})")


def _arithmetic(expr: Expression, node: ast.expr, figures: Figures) -> float | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return float(node.value)
    if isinstance(node, ast.BinOp):
        left, right = _arithmetic(expr, node.left, figures), _arithmetic(expr, node.right, figures)
        if left is None or right is None or (isinstance(node.op, ast.Div) and right == 0):
            return None
        return _ARITHMETIC[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp):
        value = _arithmetic(expr, node.operand, figures)
        return None if value is None else (-value if isinstance(node.op, ast.USub) else value)
    return _lookup(expr, _figure(expr.option, expr.text, node), figures)


def _lookup(expr: Expression, name: str, figures: Figures) -> float | None:
    scope, _, last = name.rpartition(".")
    if last.endswith(_SHARE) and last[:-len(_SHARE)] in _SHARES:
        prefix = f"{scope}." if scope else ""
        count, total = (_lookup(expr, f"{prefix}{key}", figures) for key in (last[:-len(_SHARE)], "workloads"))
        return None if count is None or not total else count / total
    if name in figures:
        value = figures[name]
        return None if value is None else float(value)
    if name.startswith(_COUNTED):
        return 0.0
    raise ExpressionError(f"{expr.option} {expr.text!r}: no figure {name!r} in the summary "
                          f"(figures: {', '.join(k for k in figures if k not in ('simulation', 'seed'))})")


@attrs.frozen
class Standing:
    """One point judged: its objective across replications, its constraints, its rank."""

    values: tuple[float, ...]
    """The objective on each replication (empty: some replication gives it no value)."""
    mean: float | None
    low: float | None
    high: float | None
    broken: tuple[str, ...]
    """The constraints it breaks, as given."""
    rank: int | None
    """1 for the best feasible point; None for a point that breaks a constraint or has no objective."""

    @property
    def feasible(self) -> bool:
        return not self.broken


def judge(samples: Sequence[Sequence[Figures]], objective: Expression,
          constraints: Sequence[Expression]) -> list[Standing]:
    """Every point's :class:`Standing`, in the points' order; ``samples`` holds each point's
    replications' figures."""
    judged: list[Standing] = []
    for runs in samples:
        values = [objective.value(run) for run in runs]
        defined = tuple(v for v in values if v is not None)
        broken = tuple(c.text for c in constraints if not _holds(c, runs))
        if defined and len(defined) == len(values):
            judged.append(Standing(defined, *interval(defined), broken=broken, rank=None))
        else:
            judged.append(Standing((), None, None, None, broken=broken, rank=None))
    means = {i: s.mean for i, s in enumerate(judged) if s.mean is not None and s.feasible}
    ranked = sorted(means, key=lambda i: means[i])
    return [attrs.evolve(s, rank=ranked.index(i) + 1) if i in means else s for i, s in enumerate(judged)]


def _holds(constraint: Expression, runs: Sequence[Figures]) -> bool:
    tree = constraint.tree
    assert isinstance(tree, ast.Compare)
    means = []
    for side in constraint.sides():
        values = [_arithmetic(constraint, side, run) for run in runs]
        if any(v is None for v in values):
            return False
        means.append(math.fsum(v for v in values if v is not None) / len(values))
    return all(_COMPARISONS[type(op)](a, b) for op, a, b in zip(tree.ops, means, means[1:], strict=False))


def order(standings: Sequence[Standing]) -> list[int]:
    """The points' indexes as the ranked table lists them: ranked points by rank, then those
    breaking a constraint by objective, then those without one."""
    def key(i: int) -> tuple[int, float]:
        s = standings[i]
        if s.rank is not None:
            return 0, s.rank
        return (1, s.mean) if s.mean is not None else (2, 0.0)
    return sorted(range(len(standings)), key=key)


def verdict(standings: Sequence[Standing], labels: Sequence[str]) -> str:
    """The best point named with its interval, and whether it beats the runner-up (Welch's
    t-test across replications, two-sided, at :data:`ALPHA`)."""
    ranked = sorted((s.rank, i) for i, s in enumerate(standings) if s.rank is not None)
    if not ranked:
        return "no point meets every constraint with a value of the objective"
    best = standings[ranked[0][1]]
    line = f"best: {labels[ranked[0][1]]}: objective {_g(best.mean)}"
    if len(best.values) > 1:
        line += f", 95% CI [{_g(best.low)}, {_g(best.high)}]"
    if len(ranked) == 1:
        return line + "; the only feasible point"
    second = standings[ranked[1][1]]
    line += f"; runner-up {labels[ranked[1][1]]}: {_g(second.mean)}"
    p = welch(best.values, second.values)
    if p is None:
        reason = "one replication each" if len(best.values) < 2 else "no variation across replications"
        return line + f"; significance not tested ({reason})"
    word = "significantly better" if p < ALPHA else "not significantly better"
    return line + f"; {word} (Welch's t-test, p = {p:.3g})"


def _g(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


__all__ = ["ALPHA", "Expression", "ExpressionError", "Standing", "judge", "order", "parse", "verdict"]
