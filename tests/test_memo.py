"""The memos of the core are gathered in ``api.memo``: every one is declared there, and clearing
them all changes no answer."""

from __future__ import annotations

import ast
from pathlib import Path

import kueue_provreq
from kueue_provreq.api import memo
from kueue_provreq.conformance.runner import Run, load_scenarios
from kueue_provreq.conformance.scenario import Scenario
from kueue_provreq.conformance.timeline import Record, Timeline

PACKAGE = Path(kueue_provreq.__file__).parent
CORE = ("api", "machines", "controllers", "engine", "world.py", "errors.py")
EXAMPLE = PACKAGE.parent / "examples" / "check-capacity-fails-twice.yaml"


def _core_files() -> list[Path]:
    return [p for part in CORE for p in ([PACKAGE / part] if part.endswith(".py") else (PACKAGE / part).rglob("*.py"))]


def test_every_memo_of_the_core_is_declared_with_memo() -> None:
    """No ``functools.lru_cache``/``cache`` beside ``api.memo``: a memo :func:`memo.clear_caches`
    would not know of."""
    found = []
    for path in _core_files():
        if path.name == "memo.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr in ("lru_cache", "cache") or \
                    isinstance(node, ast.Name) and node.id in ("lru_cache", "cache"):
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert not found, found
    assert memo.cache_count() >= 10


def _records() -> list[Record]:
    records: list[Record] = []
    for scenario in load_scenarios(EXAMPLE):
        assert isinstance(scenario, Scenario)
        assert Run(scenario, Timeline(records.append)).run().passed
    return records


def test_clearing_the_caches_changes_no_answer() -> None:
    warm = _records()
    memo.clear_caches()
    cold = _records()
    assert cold == warm and len(cold) > 20
