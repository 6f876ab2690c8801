"""Frozen lookup tables derived from a ``transitions.Machine`` declaration.

``transitions`` cannot drive frozen attrs models (it binds methods and attributes onto each
model) and costs tens of microseconds a trigger, so the runtime never instantiates a machine
per object.  The declaration is read once at import time into ``(state, trigger) -> edges``;
:meth:`MachineTable.fire` is the one decision function: given a state, a trigger and the truth
value of each named guard, it answers the next state, or raises :class:`IllegalTransition`.

A write that moves an object along a lifecycle carries the :class:`Transition` records of the
fires that decided it, so the engine (in verify mode) and the observers know which trigger
each change stands for without guessing it back from the objects.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Generic, TypeVar

import attrs
from transitions import Machine

from kueue_provreq.api.memo import memo
from kueue_provreq.errors import KueueProvreqError
from kueue_provreq.machines.vocabulary import Actor, Guard

S = TypeVar("S", bound=StrEnum)
T = TypeVar("T", bound=StrEnum)


class IllegalTransition(KueueProvreqError):
    """A (state, trigger) pair the declaration does not have, a guard nobody gave a value for,
    or a write whose state differs from what its trigger gives."""


@attrs.frozen
class Edge(Generic[S, T]):
    source: S
    trigger: T
    dest: S | None
    """``None`` for an internal transition: the state stays as it is."""
    conditions: tuple[Guard, ...] = ()
    unless: tuple[Guard, ...] = ()

    @property
    def guards(self) -> tuple[Guard, ...]:
        return self.conditions + self.unless

    def enabled(self, guards: Mapping[Guard, bool]) -> bool:
        return all(guards[g] for g in self.conditions) and not any(guards[g] for g in self.unless)

    @property
    def target(self) -> S:
        return self.source if self.dest is None else self.dest


@attrs.frozen
class Transition:
    """One fire, as a write carries it: ``machine`` moved ``item`` (a check's name for the
    admission-check machine, ``""`` for the object itself) from ``source`` to ``target`` on
    ``trigger``.  The guards were evaluated once, by the fire that made it."""

    machine: str
    source: str
    trigger: str
    target: str
    item: str = ""

    def describe(self) -> str:
        what = f"check {self.item}" if self.item else self.machine
        return f"{what} {self.source} -{self.trigger}-> {self.target}"

    @classmethod
    def of(cls, table: MachineTable[S, T], state: str, trigger: str, target: S, item: str = "") -> Transition:
        """The record of ``table``'s fire of ``trigger`` from ``state`` to ``target``, in plain
        strings: the record ends up in objects, YAML and JSON."""
        return cls(table.name, str(state), str(trigger), target.value, item)


@attrs.frozen
class OptIn:
    """The parts of a declaration that belong to an opt-in semantics switch (``api.config
    .SEMANTICS``): the machine declares them whatever the configuration, so that diagrams and
    the engine know them, but no controller fires them unless the switch is on.  An edge
    belongs to it when its trigger does, or its source or target state does; a guard of it
    (always false with the switch off) may sit on an ordinary edge."""

    semantics: str
    label: str
    """How diagrams mark these parts, e.g. ``KEP-993 only``."""
    states: frozenset[str] = frozenset()
    triggers: frozenset[str] = frozenset()
    guards: frozenset[Guard] = frozenset()


@attrs.frozen(eq=False)
class MachineTable(Generic[S, T]):
    """One lifecycle: its states, triggers, who fires each trigger, and every edge in
    declaration order.  Each table is one of a kind, compared and hashed as itself (its
    answers are memoised by it)."""

    name: str
    title: str
    states: tuple[S, ...]
    initial: S
    edges: tuple[Edge[S, T], ...]
    fired_by: Mapping[T, tuple[Actor, ...]]
    """The actors that fire each trigger (the diagrams' "who fires what" page reads it)."""
    by_key: Mapping[tuple[str, str], tuple[Edge[S, T], ...]] = attrs.field(eq=False, repr=False)
    declared: frozenset[tuple[str, str, str]] = attrs.field(eq=False, repr=False)
    """Every (source, trigger, target) the edges allow: the engine's plain lookup."""
    machine: Machine = attrs.field(eq=False, repr=False)
    """The ``transitions`` declaration itself, for diagrams and introspection only."""
    opt_in: tuple[OptIn, ...] = ()
    """The states, triggers and guards that belong to opt-in semantics switches."""

    @classmethod
    def from_machine(cls, name: str, title: str, machine: Machine, states: type[S], triggers: type[T],
                     fired_by: Mapping[T, tuple[Actor, ...]], opt_in: tuple[OptIn, ...] = ()) -> MachineTable[S, T]:
        edges: list[Edge[S, T]] = []
        for trigger, event in machine.events.items():
            for source, transitions in event.transitions.items():
                for t in transitions:
                    conds = tuple(Guard(str(cd.func)) for cd in t.conditions if cd.target)
                    unless = tuple(Guard(str(cd.func)) for cd in t.conditions if not cd.target)
                    dest = None if t.dest is None else states(str(t.dest))
                    edges.append(Edge(states(source), triggers(trigger), dest, conds, unless))
        missing = set(triggers) ^ set(fired_by)
        if missing:
            raise ValueError(f"{name}: fired_by must name the actors of exactly the declared triggers, "
                             f"mismatch on {sorted(missing)}")
        unknown = [x for o in opt_in for x in (*o.states, *o.triggers)
                   if x not in set(machine.states) | set(machine.events)]
        unknown += [g for o in opt_in for g in o.guards if g not in {g for e in edges for g in e.guards}]
        if unknown:
            raise ValueError(f"{name}: opt-in parts {sorted(unknown)} are not in the declaration")
        by_key: dict[tuple[str, str], list[Edge[S, T]]] = {}
        for e in edges:
            by_key.setdefault((e.source, e.trigger), []).append(e)
        return cls(name=name, title=title, states=tuple(states(s) for s in machine.states),
                   initial=states(str(machine.initial)), edges=tuple(edges), fired_by=dict(fired_by),
                   by_key={k: tuple(v) for k, v in by_key.items()},
                   declared=frozenset((e.source, e.trigger, e.target) for e in edges), machine=machine,
                   opt_in=opt_in)

    def opt_in_of_state(self, state: str) -> OptIn | None:
        return next((o for o in self.opt_in if state in o.states), None)

    def opt_in_of_trigger(self, trigger: str) -> OptIn | None:
        return next((o for o in self.opt_in if trigger in o.triggers), None)

    def opt_in_of_guard(self, guard: Guard) -> OptIn | None:
        return next((o for o in self.opt_in if guard in o.guards), None)

    def opt_in_of_edge(self, edge: Edge[S, T]) -> OptIn | None:
        """The opt-in semantics the edge belongs to: its trigger's, else its source's or
        target's (a guard of one does not make the edge one of its own)."""
        return self.opt_in_of_trigger(edge.trigger) or self.opt_in_of_state(edge.source) or \
            self.opt_in_of_state(edge.target)

    @property
    def triggers(self) -> tuple[T, ...]:
        return tuple(dict.fromkeys(e.trigger for e in self.edges))

    def fire(self, state: str, trigger: str, guards: Mapping[Guard, bool] | None = None) -> S:
        """The state after ``trigger``: the first declared edge whose guards hold."""
        edges = self.by_key.get((state, trigger))
        if edges is None:
            raise IllegalTransition(f"{self.name}: no transition {str(trigger)!r} from state {str(state)!r}")
        g = guards or {}
        for e in edges:
            for name in e.guards:
                if name not in g:
                    raise IllegalTransition(f"{self.name}: {str(trigger)!r} from {str(state)!r} needs guard "
                                            f"{str(name)!r}, which was not given")
        for e in edges:
            if e.enabled(g):
                return e.target
        raise IllegalTransition(f"{self.name}: no guard of {str(trigger)!r} from {str(state)!r} holds "
                                f"({ {str(k): v for k, v in g.items()} })")

    def transition(self, state: str, trigger: str, guards: Mapping[Guard, bool] | None = None,
                   item: str = "") -> Transition:
        """:meth:`fire`, with the record a write carries (memoised: the table is frozen, so
        the answer to a question never changes, and controllers ask the same few on every
        write)."""
        return _transition(self, state, trigger, tuple(guards.items()) if guards else (), item)

    def declares(self, t: Transition) -> bool:
        return (t.source, t.trigger, t.target) in self.declared


@memo(4096)
def _transition(table: MachineTable[S, T], state: str, trigger: str, guards: tuple[tuple[Guard, bool], ...],
                item: str) -> Transition:
    return Transition.of(table, state, trigger, table.fire(state, trigger, dict(guards)), item)
