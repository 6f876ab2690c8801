"""The declared machines decide: every edge can be taken, nothing undeclared is, and running the
bundled examples every Workload phase change and check-state change comes out of a fire."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
from kueue_provreq.conformance.runner import Run, load_scenarios
from kueue_provreq.conformance.scenario import Scenario
from kueue_provreq.conformance.timeline import NONE, Record, Timeline
from kueue_provreq.machines import (
    MACHINES,
    WORKLOAD_MACHINE,
    Guard,
    IllegalTransition,
    MachineTable,
)

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
ALL = list(MACHINES.values())


@pytest.mark.parametrize("machine", ALL, ids=list(MACHINES))
def test_every_edge_can_be_taken(machine: MachineTable[Any, Any]) -> None:
    """No edge is shadowed by an earlier one of its (state, trigger) with weaker guards: for each,
    some values of the guards make it the first that holds, and fire answers its target."""
    for (state, trigger), edges in machine.by_key.items():
        names = sorted({g for e in edges for g in e.guards})
        for i, edge in enumerate(edges):
            for values in itertools.product((False, True), repeat=len(names)):
                guards = dict(zip(names, values, strict=True))
                if edge.enabled(guards) and not any(e.enabled(guards) for e in edges[:i]):
                    assert machine.fire(state, trigger, guards) == edge.target
                    break
            else:
                pytest.fail(f"{machine.name}: {trigger} from {state} to {edge.target} can never be taken")


def test_undeclared_pairs_are_refused() -> None:
    refused = 0
    for machine in ALL:
        for state in machine.states:
            for trigger in machine.triggers:
                if (state, trigger) not in machine.by_key:
                    with pytest.raises(IllegalTransition, match="no transition"):
                        machine.fire(state, trigger, {})
                    refused += 1
    assert refused > 0


def test_a_missing_guard_is_an_illegal_transition_not_a_key_error() -> None:
    with pytest.raises(IllegalTransition, match="needs guard 'requeued'"):
        WORKLOAD_MACHINE.fire("Inactive", "reactivate", {})
    # every guard of the pair is asked for, whatever the values given for the others
    with pytest.raises(IllegalTransition, match="needs guard 'keep_quota'"):
        MACHINES["admissioncheck"].fire("Pending", "request_failed", {Guard.WITHIN_BACKOFF_LIMIT: False})


def test_every_state_is_reachable_from_the_initial_state() -> None:
    for machine in ALL:
        seen, frontier = {machine.initial}, [machine.initial]
        while frontier:
            s = frontier.pop()
            for e in machine.edges:
                if e.source == s and e.target not in seen:
                    seen.add(e.target)
                    frontier.append(e.target)
        assert seen == set(machine.states), machine.name


def test_every_trigger_names_who_fires_it() -> None:
    for machine in ALL:
        assert set(machine.fired_by) == set(machine.triggers)
        assert all(machine.fired_by.values())


def _records(path: Path) -> list[Record]:
    records: list[Record] = []
    for scenario in load_scenarios(path):
        assert isinstance(scenario, Scenario), scenario
        outcome = Run(scenario, Timeline(records.append)).run()
        assert outcome.passed, outcome.failure
    return records


def test_running_the_examples_every_change_is_a_fire() -> None:
    """Every phase change, and every state change of a check the workload already had, names
    the trigger whose fire decided it (checks added or dropped are not transitions)."""
    phases = checks = 0
    for path in sorted(EXAMPLES.glob("*.yaml")):
        for r in _records(path):
            if r["record"] == "phase":
                phases += 1
                assert r["trigger"], (path.name, r)
            elif r["record"] == "check" and NONE not in (r["from"], r["to"]):
                checks += 1
                assert r["trigger"], (path.name, r)
    # the examples tell whole stories: admission, retries, evictions, deactivation, requeueing
    assert phases >= 30 and checks >= 10, (phases, checks)
