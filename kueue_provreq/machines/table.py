"""Frozen lookup tables derived from a ``transitions.Machine`` declaration.

``transitions`` cannot drive frozen attrs models (it binds methods and
attributes onto each model) and costs tens of microseconds a trigger, so the
runtime never instantiates a machine per object.  The declaration is read once
at import time into ``(state, trigger) -> edges``; a controller asks the table
for the next state, giving the truth value of each named guard.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs
from transitions import Machine


class IllegalTransition(Exception):
    """A controller asked for a (state, trigger) pair the declaration does not have."""


@attrs.frozen
class Edge:
    source: str
    trigger: str
    dest: str | None
    """``None`` for an internal transition: the state stays as it is."""
    conditions: tuple[str, ...] = ()
    unless: tuple[str, ...] = ()

    def enabled(self, guards: Mapping[str, bool]) -> bool:
        return all(guards[g] for g in self.conditions) and not any(guards[g] for g in self.unless)

    @property
    def target(self) -> str:
        return self.source if self.dest is None else self.dest


@attrs.frozen
class MachineTable:
    """One lifecycle: its states, triggers and every edge, in declaration order."""

    name: str
    title: str
    states: tuple[str, ...]
    initial: str
    edges: tuple[Edge, ...]
    by_key: Mapping[tuple[str, str], tuple[Edge, ...]] = attrs.field(eq=False, repr=False)
    machine: Machine = attrs.field(eq=False, repr=False)
    """The ``transitions`` declaration itself, for diagrams and introspection only."""

    @classmethod
    def from_machine(cls, name: str, title: str, machine: Machine) -> MachineTable:
        edges: list[Edge] = []
        for trigger, event in machine.events.items():
            for source, transitions in event.transitions.items():
                for t in transitions:
                    conds = tuple(str(cd.func) for cd in t.conditions if cd.target)
                    unless = tuple(str(cd.func) for cd in t.conditions if not cd.target)
                    edges.append(Edge(source, trigger, t.dest, conds, unless))
        by_key: dict[tuple[str, str], list[Edge]] = {}
        for e in edges:
            by_key.setdefault((e.source, e.trigger), []).append(e)
        return cls(name=name, title=title, states=tuple(machine.states), initial=str(machine.initial),
                   edges=tuple(edges), by_key={k: tuple(v) for k, v in by_key.items()},
                   machine=machine)

    @property
    def triggers(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(e.trigger for e in self.edges))

    def fire(self, state: str, trigger: str, guards: Mapping[str, bool] | None = None) -> str:
        """The state after ``trigger``: the first declared edge whose guards hold."""
        edges = self.by_key.get((state, trigger))
        if edges is None:
            raise IllegalTransition(f"{self.name}: no transition {trigger!r} from state {state!r}")
        g = guards or {}
        for e in edges:
            if e.enabled(g):
                return e.target
        raise IllegalTransition(f"{self.name}: no guard of {trigger!r} from {state!r} holds ({dict(g)})")

    def allows(self, source: str, dest: str) -> bool:
        """Whether some declared edge leads from ``source`` to ``dest`` (any trigger, any guard)."""
        return source == dest or any(e.source == source and e.target == dest for e in self.edges)

    def edge_for(self, source: str, dest: str) -> tuple[Edge, ...]:
        return tuple(e for e in self.edges if e.source == source and e.target == dest)
