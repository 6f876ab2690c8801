"""The Workload machine writes: ``write_workload`` fires a trigger and realises its target, the
realisers and ``workload_phase`` are inverses, and no controller changes a Workload's phase any
other way (statically: the code; dynamically: every phase change of the bundled examples)."""

from __future__ import annotations

import ast
import itertools
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import kueue_provreq.machines.phases as phases_module
import pytest
from hypothesis import given
from hypothesis import strategies as st
from kueue_provreq.api import constants as c
from kueue_provreq.api.config import Configuration
from kueue_provreq.api.meta import Time
from kueue_provreq.api.workload import RequeueState, Workload
from kueue_provreq.conformance.runner import Run, load_scenarios
from kueue_provreq.conformance.scenario import Scenario
from kueue_provreq.conformance.timeline import NONE, Record, Timeline
from kueue_provreq.machines import WORKLOAD_MACHINE, Guard, IllegalTransition, Transition, WorkloadTrigger
from kueue_provreq.machines.phases import REALISERS, held_back, workload_phase, write_workload
from kueue_provreq.machines.status import all_checks_ready

import builders
from builders import T0, cond

W = WorkloadTrigger
NOW = Time(T0 + 60)
CONFIG = Configuration()
CONTROLLERS = Path(phases_module.__file__).resolve().parents[1] / "controllers"
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


# --- a Workload in any phase, and what each trigger writes ------------------------------------

def _workload(finished: bool, quota: bool, admitted: bool, evicted: bool, active: bool, requeued_false: bool,
              requeue_at: bool, checks: tuple[str, ...]) -> Workload:
    conditions = []
    if finished:
        conditions.append(cond(c.WORKLOAD_FINISHED))
    if quota:
        conditions.append(builders.reserved_in())
        if admitted:
            conditions.append(builders.ADMITTED)
    if evicted:
        conditions.append(cond(c.WORKLOAD_EVICTED, reason=c.REASON_PREEMPTED))
    if requeued_false:
        conditions.append(cond(c.WORKLOAD_REQUEUED, c.FALSE, c.REASON_PODS_READY_TIMEOUT))
    return builders.workload(
        conditions=conditions, admission=builders.admission() if quota else None,
        checks=[builders.check_state(f"check{i}", s) for i, s in enumerate(checks)],
        active=None if active else False,
        requeue_state=RequeueState(count=1, requeue_at=Time(T0 + 30)) if requeue_at else None)


FLAGS = ("finished", "quota", "admitted", "evicted", "active", "requeued_false", "requeue_at")
CHECKS = ((), (c.CHECK_READY,), (c.CHECK_PENDING,), (c.CHECK_READY, c.CHECK_RETRY))

workloads = st.builds(_workload, *(st.booleans() for _ in FLAGS), st.sampled_from(CHECKS))

#: Per trigger, the arguments of its realiser that a controller (or a user, or a test helper)
#: may give; the guards are computed from them below, as the callers compute them.
WHAT: dict[W, st.SearchStrategy[dict[str, Any]]] = {
    W.RESERVE_QUOTA: st.fixed_dictionaries({
        "admission": st.just(builders.admission()), "now": st.just(NOW), "config": st.just(CONFIG),
        "checks_complete": st.booleans(), "preemptions_pending": st.booleans()}),
    W.REVOKE_RESERVATION: st.fixed_dictionaries({
        "reason": st.just(c.REASON_WAITING_FOR_QUOTA), "message": st.just("m"), "now": st.just(NOW),
        "config": st.just(CONFIG)}),
    W.ADMIT: st.fixed_dictionaries({"now": st.just(NOW), "config": st.just(CONFIG)}),
    W.EVICT: st.fixed_dictionaries({
        "reason": st.sampled_from((c.REASON_PREEMPTED, c.REASON_DEACTIVATED)), "message": st.just("m"),
        "now": st.just(NOW), "cause": st.sampled_from(("", c.REASON_REQUEUING_LIMIT_EXCEEDED))}),
    W.RELEASE_QUOTA: st.fixed_dictionaries({
        "requeued": st.booleans(), "reason": st.just(c.REASON_PREEMPTED), "message": st.just("m"),
        "now": st.just(NOW), "config": st.just(CONFIG)}),
    W.UNSET_QUOTA: st.fixed_dictionaries({
        "reason": st.just(c.REASON_EVICTED_BY_TEST), "message": st.just("m"), "now": st.just(NOW),
        "config": st.just(CONFIG)}),
    W.SET_ASIDE: st.fixed_dictionaries({
        "reason": st.just(c.REASON_SUSPENDED), "message": st.just("m"), "now": st.just(NOW),
        "config": st.just(CONFIG)}),
    W.REQUEUE: st.fixed_dictionaries({
        "now": st.just(NOW), "clear_requeue_at": st.booleans(),
        "reason": st.sampled_from(("", c.REASON_REACTIVATED, c.REASON_BACKOFF_FINISHED)), "message": st.just("m")}),
    W.DELAY: st.fixed_dictionaries({"until": st.just(Time(T0 + 120))}),
    W.DEACTIVATE: st.just({}),
    W.REACTIVATE: st.just({}),
    W.FINISH: st.fixed_dictionaries({
        "reason": st.just(c.REASON_FINISHED_SUCCEEDED), "message": st.just("m"), "now": st.just(NOW)}),
}


def guards_of(wl: Workload, trigger: W, what: Mapping[str, Any]) -> dict[Guard, bool]:
    """The guards a trigger's fire is given, from the Workload and the write's arguments."""
    if trigger is W.RESERVE_QUOTA:
        return {Guard.ALL_CHECKS_READY: what["checks_complete"] and all_checks_ready(wl),
                Guard.PREEMPTIONS_PENDING: what["preemptions_pending"]}
    if trigger in (W.REVOKE_RESERVATION, W.UNSET_QUOTA):
        return {Guard.DEACTIVATED: not wl.is_active, Guard.BACKOFF: held_back(wl)}
    if trigger is W.SET_ASIDE:  # the workload controller's, for a queue stopped or gone
        return {Guard.BACKOFF: held_back(wl)}
    if trigger is W.RELEASE_QUOTA:
        rs = wl.status.requeue_state
        return {Guard.DEACTIVATED: not wl.is_active,
                Guard.REQUEUED: what["requeued"] and (rs is None or rs.requeue_at is None)}
    if trigger is W.REQUEUE:  # whether the other half of the backoff still holds it
        return {Guard.BACKOFF: held_back(REALISERS[trigger](wl, **what))}
    if trigger is W.REACTIVATE:
        return {Guard.REQUEUED: not held_back(wl)}
    return {}


def _applies(wl: Workload, trigger: W) -> bool:
    """The callers' preconditions beyond the declared source phases: the scheduler revokes only
    active reservations, the workload controller sets aside only active ones, and a workload
    is admitted only when its checks are all Ready."""
    if trigger is W.REVOKE_RESERVATION:
        return wl.is_active
    if trigger is W.SET_ASIDE and not wl.is_active:
        return False  # the workload controller deactivates an inactive one first
    if trigger is W.ADMIT:
        return all_checks_ready(wl)
    return (workload_phase(wl), trigger) in WORKLOAD_MACHINE.by_key


@given(workloads, st.sampled_from(list(W)), st.data())
def test_realisers_and_workload_phase_are_inverses(wl: Workload, trigger: W, data: st.DataObject) -> None:
    """From any phase a trigger is declared for, the phase read off what its realiser writes
    is the target its fire gives: ``workload_phase(realise(wl)) == fire(workload_phase(wl))``."""
    source = workload_phase(wl)
    if (source, trigger) not in WORKLOAD_MACHINE.by_key or not _applies(wl, trigger):
        return
    what = data.draw(WHAT[trigger])
    guards = guards_of(wl, trigger, what)
    new, fired = write_workload(wl, trigger, guards, **what)
    assert (fired.source, fired.trigger) == (source, trigger)
    assert workload_phase(new) == fired.target == WORKLOAD_MACHINE.fire(source, trigger, guards)


def _grid() -> Iterator[Workload]:
    for flags in itertools.product((False, True), repeat=len(FLAGS)):
        for checks in CHECKS:
            yield _workload(**dict(zip(FLAGS, flags, strict=True)), checks=checks)


def _whats(trigger: W) -> Iterator[dict[str, Any]]:
    """Every combination of the boolean and sampled arguments of ``trigger``'s realiser."""
    example = {"requeued": (False, True), "checks_complete": (False, True), "preemptions_pending": (False, True),
               "clear_requeue_at": (False, True), "reason": ("", c.REASON_REACTIVATED)}
    names = {W.RESERVE_QUOTA: ("checks_complete", "preemptions_pending"), W.RELEASE_QUOTA: ("requeued",),
             W.REQUEUE: ("clear_requeue_at", "reason")}.get(trigger, ())
    fixed = _FIXED[trigger]
    for values in itertools.product(*(example[n] for n in names)):
        yield {**fixed, **dict(zip(names, values, strict=True))}


_FIXED: dict[W, dict[str, Any]] = {
    W.RESERVE_QUOTA: {"admission": builders.admission(), "now": NOW, "config": CONFIG},
    W.REVOKE_RESERVATION: {"reason": c.REASON_WAITING_FOR_QUOTA, "message": "m", "now": NOW, "config": CONFIG},
    W.ADMIT: {"now": NOW, "config": CONFIG},
    W.EVICT: {"reason": c.REASON_PREEMPTED, "message": "m", "now": NOW},
    W.RELEASE_QUOTA: {"reason": c.REASON_PREEMPTED, "message": "m", "now": NOW, "config": CONFIG},
    W.UNSET_QUOTA: {"reason": c.REASON_EVICTED_BY_TEST, "message": "m", "now": NOW, "config": CONFIG},
    W.SET_ASIDE: {"reason": c.REASON_SUSPENDED, "message": "m", "now": NOW, "config": CONFIG},
    W.REQUEUE: {"now": NOW, "message": "m"},
    W.DELAY: {"until": Time(T0 + 120)},
    W.DEACTIVATE: {},
    W.REACTIVATE: {},
    W.FINISH: {"reason": c.REASON_FINISHED_SUCCEEDED, "message": "m", "now": NOW},
}


def test_every_declared_edge_is_written_by_its_realiser() -> None:
    """The other way round: every (source, trigger, target) the declaration has is what
    ``write_workload`` realises for some Workload in the source phase."""
    realised = set()
    for wl in _grid():
        for trigger in W:
            if (workload_phase(wl), trigger) not in WORKLOAD_MACHINE.by_key or not _applies(wl, trigger):
                continue
            for what in _whats(trigger):
                _, fired = write_workload(wl, trigger, guards_of(wl, trigger, what), **what)
                realised.add((fired.source, fired.trigger, fired.target))
    assert realised == set(WORKLOAD_MACHINE.declared)


def test_a_write_whose_phase_is_not_the_fires_target_is_refused() -> None:
    """Guards that say otherwise than the write: the fire says Admitted, the realiser cannot
    write it (the checks are not Ready), and the write is refused at once, in any mode."""
    wl = builders.workload(checks=[builders.check_state("check1", c.CHECK_PENDING)])
    with pytest.raises(IllegalTransition, match="Pending -reserve_quota-> Admitted wrote QuotaReserved"):
        write_workload(wl, W.RESERVE_QUOTA, {Guard.ALL_CHECKS_READY: True, Guard.PREEMPTIONS_PENDING: False},
                       admission=builders.admission(), now=NOW, config=CONFIG, checks_complete=True)


# --- no controller writes a phase change by hand -----------------------------------------------

#: Condition types whose True status moves a phase (and Requeued either way).
_PHASE_CONDITIONS = {"WORKLOAD_FINISHED", "WORKLOAD_QUOTA_RESERVED", "WORKLOAD_ADMITTED", "WORKLOAD_EVICTED",
                     "WORKLOAD_REQUEUED"}
_CONDITION_WRITERS = {"set_cond", "set_condition", "_set", "condition"}
_OTHER_MACHINES = {"ADMISSION_CHECK_MACHINE", "PROVISIONING_REQUEST_MACHINE"}
"""The machines a controller may fire itself: a check's or a request's state is no phase."""


def _phase_writes_by_hand(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """Where a module builds a Workload phase change itself: its own workload Transitions
    (the machine, the record, a fire), a trigger given to anything but ``write_workload``, a
    phase-deciding condition set True (``Requeued`` either way), ``spec.active`` or
    ``requeueAt`` changed, or a realiser called directly."""
    allowed: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _name(node.func) == "write_workload" and len(node.args) >= 2:
            allowed.add(id(node.args[1]))
    for node in ast.walk(tree):
        name = _name(node) if isinstance(node, (ast.Name, ast.Attribute)) else None
        if isinstance(node, (ast.Name, ast.Attribute)) and name in ("WORKLOAD_MACHINE", "REALISERS",
                                                                    "set_quota_reservation"):
            yield node.lineno, name
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
                node.value.id == "WorkloadTrigger" and id(node) not in allowed:
            yield node.lineno, f"WorkloadTrigger.{node.attr} outside write_workload"
        if not isinstance(node, ast.Call):
            continue
        func = _name(node.func)
        receiver = _name(node.func.value) if isinstance(node.func, ast.Attribute) else None
        if func == "Transition" or func == "fire" and receiver not in _OTHER_MACHINES:
            yield node.lineno, f"{func}(...)"
        if func in _CONDITION_WRITERS:
            types = {n for a in node.args if (n := _name(a)) is not None}
            moved = types & _PHASE_CONDITIONS
            if moved and ("WORKLOAD_REQUEUED" in moved or "TRUE" in types):
                yield node.lineno, f"{func}({', '.join(sorted(moved))}, ...)"
        for kw in node.keywords if func == "evolve" else ():  # a new object's spec is no change
            if kw.arg in ("active", "requeue_at"):
                yield node.lineno, f"{kw.arg}=..."


def _name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


@pytest.mark.parametrize("module", sorted(p.name for p in CONTROLLERS.glob("*.py")))
def test_no_controller_builds_a_phase_change_itself(module: str) -> None:
    found = list(_phase_writes_by_hand(ast.parse((CONTROLLERS / module).read_text())))
    assert not found, f"controllers/{module} changes a Workload's phase beside write_workload: {found}"


def test_the_check_sees_a_phase_change_built_by_hand() -> None:
    """The static check is not vacuous: the ways a controller used to write phases are seen."""
    by_hand = '''
def reconcile(wl, now):
    fired = ws.fire(wl, WorkloadTrigger.ADMIT)
    new = ws.set_cond(wl, c.WORKLOAD_ADMITTED, c.TRUE, "Admitted", "", now)
    spec = evolve(wl.spec, active=False)
    record = Transition("workload", "Pending", "admit", "Admitted")
    new, ok = write_workload(wl, WorkloadTrigger.ADMIT, now=now)
    check = ADMISSION_CHECK_MACHINE.fire(state, trigger)
'''
    found = sorted(_phase_writes_by_hand(ast.parse(by_hand)))
    assert found == [(3, "WorkloadTrigger.ADMIT outside write_workload"), (3, "fire(...)"),
                     (4, "set_cond(WORKLOAD_ADMITTED, ...)"), (5, "active=..."), (6, "Transition(...)")], found


# --- every phase change of the bundled examples is a write_workload call -------------------------

def _recording(calls: list[tuple[str, str, str, str]]) -> Callable[..., tuple[Workload, Transition]]:
    write = write_workload

    def recorded(wl: Workload, trigger: W, guards: Mapping[Guard, bool] | None = None,
                 **what: Any) -> tuple[Workload, Transition]:
        new, fired = write(wl, trigger, guards, **what)
        calls.append((wl.metadata.namespace, wl.metadata.name, fired.source, fired.target))
        return new, fired
    return recorded


@pytest.mark.skipif(not str(phases_module.__file__).endswith(".py"),
                    reason="the machines are compiled (make test-compiled): their callers call write_workload directly, "
                           "not through a module attribute a test can replace")
def test_on_the_examples_every_phase_change_is_a_write_workload_call(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, str, str, str]] = []
    recorded = _recording(calls)
    for module in list(sys.modules.values()):
        if getattr(module, "write_workload", None) is write_workload and module.__name__.startswith("kueue_provreq."):
            monkeypatch.setattr(module, "write_workload", recorded)
    changes = 0
    for path in sorted(EXAMPLES.glob("*.yaml")):
        records: list[Record] = []
        for scenario in load_scenarios(path):
            assert isinstance(scenario, Scenario), scenario
            assert Run(scenario, Timeline(records.append)).run().passed
        for r in records:
            if r["record"] != "phase" or NONE in (r["from"], r["to"]):
                continue  # created or deleted: no phase change
            changes += 1
            # the write's chain of calls, from the phase it left, ends in the phase it wrote
            phase = r["from"]
            while phase != r["to"]:
                call = next((x for x in calls if x[:3] == (r["namespace"], r["name"], phase) and x[3] != phase), None)
                assert call is not None, f"{path.name}: {r} was written by no write_workload call"
                calls.remove(call)
                phase = call[3]
    assert changes >= 30, changes


def test_a_status_write_that_keeps_the_conditions_keeps_what_was_derived_from_them() -> None:
    """``with_status`` hands the new status the old one's index of its conditions when the
    conditions are the very same, and a status with other conditions derives its own."""
    wl = builders.workload(conditions=(builders.reserved_in(), cond(c.WORKLOAD_EVICTED, c.FALSE)))
    assert wl.status.true_types == (c.WORKLOAD_QUOTA_RESERVED,)
    moved = wl.with_status(admission=builders.admission())
    assert moved.status.conditions_by_type is wl.status.conditions_by_type
    assert moved.status.true_types is wl.status.true_types
    fresh = builders.workload(conditions=wl.status.conditions).with_status(admission=builders.admission())
    assert fresh.status.true_types == (c.WORKLOAD_QUOTA_RESERVED,)  # nothing derived yet: derived on demand
    evicted = wl.with_status(conditions=(builders.reserved_in(), cond(c.WORKLOAD_EVICTED)))
    assert evicted.status.true_types == (c.WORKLOAD_QUOTA_RESERVED, c.WORKLOAD_EVICTED)
    assert workload_phase(evicted) is phases_module.WorkloadPhase.EVICTED


@given(st.sampled_from([c.TRUE, c.FALSE]), st.sampled_from([c.TRUE, c.FALSE, None]),
       st.lists(st.sampled_from([c.CHECK_READY, c.CHECK_PENDING]), max_size=2), st.booleans())
def test_status_writes_change_nothing_when_nothing_is_to_change(reserved: str, admitted: str | None,
                                                                states: list[str], observability: bool) -> None:
    """``SyncAdmittedCondition`` and ``UnsetQuotaReservation`` hand back the workload itself when
    they leave its status as it was (the scheduler tells a changed workload from the same one by
    identity), and a second call never changes what the first wrote."""
    from kueue_provreq.api.frozen import FrozenMap
    from kueue_provreq.machines.status import sync_admitted_condition, unset_quota_reservation
    config = Configuration(feature_gates=FrozenMap({c.GATE_UNADMITTED_OBSERVABILITY: observability}))
    conds = [cond(c.WORKLOAD_QUOTA_RESERVED, reserved)]
    if admitted is not None:
        conds.append(cond(c.WORKLOAD_ADMITTED, admitted))
    wl = builders.workload(conditions=conds, checks=[builders.check_state(f"c{i}", s) for i, s in enumerate(states)],
                           admission=builders.admission() if reserved == c.TRUE else None)
    for write in (lambda w: sync_admitted_condition(w, Time(T0 + 5), config),
                  lambda w: unset_quota_reservation(w, "Pending", "waiting", Time(T0 + 5), config)):
        once = write(wl)
        assert (once is wl) == (once == wl)
        assert write(once) is once
