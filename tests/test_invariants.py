"""The oracle as a whole: its entry points, when an invariant applies, what its docstrings say,
and its independence from what it judges.  Each invariant's own tests are in
``test_invariants_state.py`` and ``test_invariants_step.py``."""

from __future__ import annotations

import ast
import pathlib
import re

import pytest
from kueue_provreq import invariants as inv
from kueue_provreq.api import constants as c

from invariant_builders import CTX, PENDING, QUIET, RETRY, cond, good_world, request, workload, world_with


def test_a_healthy_world_violates_nothing() -> None:
    w = good_world()
    assert inv.check_state(w, QUIET) == []
    assert inv.check_step(w.snapshot(), w, QUIET) == []


def test_each_violation_names_its_invariant() -> None:
    admitted_without_quota = workload("wl", cond(c.WORKLOAD_QUOTA_RESERVED, c.FALSE), cond(c.WORKLOAD_ADMITTED))
    assert inv.check_state(world_with(admitted_without_quota), CTX) == [
        "admitted_only_with_quota: ns/wl is Admitted without QuotaReserved=True"]
    before = world_with(workload("wl", cond(c.WORKLOAD_FINISHED)))
    after = world_with(workload("wl", cond(c.WORKLOAD_FINISHED), checks=PENDING))
    assert inv.check_step(before.snapshot(), after, CTX) == [
        "finished_is_final: finished ns/wl changed: phase Finished"]


@pytest.mark.parametrize("settled, quiescent, expected", [
    (False, False, []),
    (True, False, ["single_request_per_check"]),
    (True, True, ["single_request_per_check", "no_stuck_workload"]),
])
def test_an_invariant_applies_once_the_driver_guarantees_enough(settled: bool, quiescent: bool,
                                                                 expected: list[str]) -> None:
    """``settled`` invariants apply once the controllers have caught up, ``quiescent`` ones once
    nothing is scheduled either; the world breaks one of each, and nothing that always applies."""
    waiting = workload("wl", cond(c.WORKLOAD_QUOTA_RESERVED, c.FALSE), checks=(RETRY,))
    world = world_with(waiting, request(1, cond(c.PR_FAILED)), request(2, cond(c.PR_FAILED)))
    ctx = inv.CheckContext(now=CTX.now, settled=settled, quiescent=quiescent)
    assert [v.split(":")[0] for v in inv.check_state(world, ctx)] == expected


HISTORY = re.compile(r"found by|explorer found|\d{1,2},000|thorough|shrunk|stateful tests?", re.IGNORECASE)
SOURCE = re.compile(r"PC §\d|AR [A-E]\.\d|KEP-\d+|machines\.declarations")


@pytest.mark.parametrize("name", sorted({**inv.STATE_INVARIANTS, **inv.STEP_INVARIANTS}))
def test_each_invariant_states_its_rule_and_source_and_not_its_history(name: str) -> None:
    invariant = inv.STATE_INVARIANTS.get(name) or inv.STEP_INVARIANTS[name]
    assert SOURCE.search(invariant.doc), f"{name} names no source (PC §x, AR x.y, a KEP or the declarations)"
    assert not HISTORY.search(invariant.doc), f"{name}'s docstring tells how it was found: that is for the commit"


ORACLE = pathlib.Path(inv.__file__).parent
ROOT = ORACLE.parent
#: what the oracle may read: the declarations (models, names, machine tables) and the World container
DECLARATIONS = ("kueue_provreq.api", "kueue_provreq.machines", "kueue_provreq.world", "kueue_provreq.errors",
                "kueue_provreq.invariants")


def _imports(path: pathlib.Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("kueue_provreq"):
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names
                       if (ROOT.parent / f"{node.module}.{a.name}".replace(".", "/")).with_suffix(".py").exists())
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith("kueue_provreq"))
    return out


def _source(module: str) -> pathlib.Path:
    path = ROOT.parent / module.replace(".", "/")
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def test_the_oracle_imports_no_controller() -> None:
    """Every module the oracle's imports reach, followed through the source, is a declaration:
    a controller's mistake must not be mirrored by the check meant to catch it."""
    seen: set[str] = set()
    todo = [f"kueue_provreq.invariants.{p.stem}" if p.stem != "__init__" else "kueue_provreq.invariants"
            for p in ORACLE.glob("*.py")]
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        todo.extend(_imports(_source(module)) - seen)
    assert {"kueue_provreq.api.naming", "kueue_provreq.machines.requests"} <= seen
    assert sorted(m for m in seen if not m.startswith(DECLARATIONS)) == []
