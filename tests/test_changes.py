"""What a write changed, read once off the transition records it carries (``kueue_provreq.changes``),
and trusted by both the conformance timeline and the simulation's loop."""

from __future__ import annotations

from pathlib import Path

import pytest
from kueue_provreq.api import constants as c
from kueue_provreq.api.workload import Workload
from kueue_provreq.changes import CheckChange, WorkloadChange, WorkloadStates
from kueue_provreq.conformance.model import Observer
from kueue_provreq.conformance.runner import Run, collect, scenarios_in
from kueue_provreq.conformance.scenario import Scenario
from kueue_provreq.machines import ADMISSION_CHECK_MACHINE, WORKLOAD_MACHINE, Transition
from kueue_provreq.machines import WorkloadPhase as P
from kueue_provreq.machines.phases import workload_phase
from kueue_provreq.simulation import load_document, parse, simulate
from kueue_provreq.world import Create, Effect, Update, World

from builders import check_state, cond, workload

ROOT = Path(__file__).resolve().parents[1]


def test_a_write_naming_a_workload_transition_is_in_its_target() -> None:
    wl = workload()
    states = WorkloadStates([wl])
    finished = workload(conditions=[cond(c.WORKLOAD_FINISHED)])
    fired = (Transition(WORKLOAD_MACHINE.name, P.PENDING, "finish", P.FINISHED),)
    assert states.written(finished, fired) == WorkloadChange(P.PENDING, P.FINISHED, "finish")
    assert states.phases[("Workload", "ns", "wl")] == P.FINISHED


def test_a_write_naming_none_is_read_and_creations_come_from_nothing() -> None:
    states = WorkloadStates()
    created = states.written(workload(checks=[check_state("prov")]))
    assert created == WorkloadChange(None, P.PENDING, None, (CheckChange("prov", None, c.CHECK_PENDING, None),))
    assert states.written(workload(checks=[check_state("prov")])) is None  # the same again: nothing moved
    ready = (Transition(ADMISSION_CHECK_MACHINE.name, c.CHECK_PENDING, "provisioned", c.CHECK_READY, "prov"),)
    change = states.written(workload(checks=[check_state("prov", c.CHECK_READY)]), ready)
    assert change == WorkloadChange(P.PENDING, P.PENDING, None, (CheckChange("prov", c.CHECK_PENDING, c.CHECK_READY,
                                                                            "provisioned"),))
    assert not change.moved
    gone = states.deleted(("Workload", "ns", "wl"))
    assert gone == WorkloadChange(P.PENDING, None, None, (CheckChange("prov", c.CHECK_READY, None, None),))
    assert states.deleted(("Workload", "ns", "wl")) is None


class _Checked(Observer):
    """Every Workload write of a run, read by :class:`WorkloadStates` and by ``workload_phase``."""

    def __init__(self) -> None:
        self.states = WorkloadStates()
        self.writes = 0

    def on_start(self, scenario: Scenario, world: World) -> None:
        self.states = WorkloadStates(world)

    def on_effect(self, actor: str, effect: Effect, world: World) -> None:
        if isinstance(effect, (Create, Update)) and isinstance(effect.obj, Workload):
            self.states.written(effect.obj, effect.transitions if isinstance(effect, Update) else ())
            assert self.states.phases[("Workload", effect.obj.metadata.namespace, effect.obj.metadata.name)] \
                == workload_phase(effect.obj), (actor, effect.transitions)
            self.writes += 1


def test_on_every_bundled_scenario_the_transitions_say_the_phase_the_write_leaves() -> None:
    checked = _Checked()
    for scenario in scenarios_in(collect([ROOT / "specs", *sorted((ROOT / "examples").glob("*.yaml"))])):
        assert isinstance(scenario, Scenario), scenario
        outcome = Run(scenario, checked, debug=True).run()  # debug: an assertion above propagates
        assert outcome.passed, outcome.failure
    assert checked.writes > 500


@pytest.mark.parametrize("example", sorted((ROOT / "examples" / "simulations").glob("*.yaml")), ids=lambda p: p.stem)
def test_in_a_fast_simulation_the_transitions_say_the_phase_the_write_leaves(
        example: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The simulation runs without the engine's verification: the reading still holds."""
    written = WorkloadStates.written
    count = [0]

    def checked(self: WorkloadStates, wl: Workload, fired: tuple[Transition, ...] = ()) -> WorkloadChange | None:
        change = written(self, wl, fired)
        key = ("Workload", wl.metadata.namespace, wl.metadata.name)
        assert self.phases[key] == workload_phase(wl), fired
        count[0] += 1
        return change

    monkeypatch.setattr(WorkloadStates, "written", checked)
    report = simulate(parse(load_document(example), count=150))
    assert report.summary.workloads == 150 and count[0] > 150
