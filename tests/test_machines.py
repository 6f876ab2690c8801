"""The declared machines: every table entry is reachable through fire(), and the tables
are exactly what the transitions declaration says (nothing written twice)."""

import pytest

from kueue_provreq.machines import MACHINES, IllegalTransition, MachineTable


@pytest.mark.parametrize("machine", list(MACHINES.values()), ids=list(MACHINES))
def test_every_edge_fires_with_its_guards(machine: MachineTable) -> None:
    guard_names = {g for e in machine.edges for g in e.conditions + e.unless}
    for (state, trigger), edges in machine.by_key.items():
        for i, edge in enumerate(edges):
            # make this edge's guards hold and every earlier edge's guards fail
            guards = {g: False for g in guard_names}
            for g in edge.conditions:
                guards[g] = True
            for g in edge.unless:
                guards[g] = False
            earlier_blocked = all(not e.enabled(guards) for e in edges[:i])
            if earlier_blocked and edge.enabled(guards):
                assert machine.fire(state, trigger, guards) == edge.target


@pytest.mark.parametrize("machine", list(MACHINES.values()), ids=list(MACHINES))
def test_table_matches_the_transitions_declaration(machine: MachineTable) -> None:
    declared = {(src, trig) for trig, ev in machine.machine.events.items() for src in ev.transitions}
    assert declared == set(machine.by_key)
    assert set(machine.states) == set(machine.machine.states)
    for e in machine.edges:
        assert e.source in machine.states and e.target in machine.states


@pytest.mark.parametrize("machine", list(MACHINES.values()), ids=list(MACHINES))
def test_undeclared_pairs_are_refused(machine: MachineTable) -> None:
    for state in machine.states:
        for trigger in machine.triggers:
            if (state, trigger) not in machine.by_key:
                with pytest.raises(IllegalTransition):
                    machine.fire(state, trigger, {})


def test_every_state_is_reachable_from_the_initial_state() -> None:
    for machine in MACHINES.values():
        seen, frontier = {machine.initial}, [machine.initial]
        while frontier:
            s = frontier.pop()
            for e in machine.edges:
                if e.source == s and e.target not in seen:
                    seen.add(e.target)
                    frontier.append(e.target)
        assert seen == set(machine.states), machine.name
