"""Fast mode and verify mode are one engine: the same world and the same effects in the same order.

Fast mode (``Manager(world, verify=False)``) shares verify mode's routing and takes shortcuts on
the write path (the changed parts of a write computed once, and taken as its no-op test in
place of a deep equality); verify mode checks every write and proves every reconcile left out.  Neither may
change what happens: every bundled scenario (``specs/`` and ``examples/*.yaml``) and every
generated story runs both ways, and the two runs must record the same effects, by the same
actors, in the same order, run the same reconciles and end in equal worlds with the same outcome.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kueue_provreq.api.evolve import evolve
from kueue_provreq.api.frozen import FrozenMap
from kueue_provreq.api.workload import Workload
from kueue_provreq.conformance.model import ModelDriver, Observer
from kueue_provreq.conformance.runner import Run, collect, scenarios_in
from kueue_provreq.conformance.scenario import Scenario, parse_scenario
from kueue_provreq.conformance.stories import story
from kueue_provreq.controllers.parts import changed_parts
from kueue_provreq.engine import Manager, SettleError, VerifyingManager
from kueue_provreq.engine.verify import checked_change
from kueue_provreq.explore.search import Options, build_objects
from kueue_provreq.world import Effect, Update, World

ROOT = Path(__file__).resolve().parents[1]
BUNDLED = collect([ROOT / "specs"]) + sorted((ROOT / "examples").glob("*.yaml"))


class Recording(Observer):
    """Every effect applied, with who applied it."""

    def __init__(self) -> None:
        self.effects: list[tuple[str, Effect]] = []

    def on_effect(self, actor: str, effect: Effect, world: World) -> None:
        self.effects.append((actor, effect))


def run(scenario: Scenario, verify: bool) -> tuple[str, list[tuple[str, Effect]], frozenset[Any], int]:
    """The outcome, the effects, the final world and the reconciles of one run of ``scenario``."""
    observer = Recording()
    driver = ModelDriver(scenario, observer)
    if not verify:
        driver.manager = Manager(driver.world, driver.manager.record, verify=False)
    assert isinstance(driver.manager, VerifyingManager) == verify
    outcome = Run(scenario, observer, driver=driver).run()
    return outcome.line(), observer.effects, driver.world.snapshot(), driver.manager.reconciles


def assert_same_both_ways(scenario: Scenario) -> None:
    verified, fast = run(scenario, verify=True), run(scenario, verify=False)
    assert fast[0] == verified[0]
    assert len(fast[1]) == len(verified[1])
    for n, (a, b) in enumerate(zip(verified[1], fast[1], strict=True)):
        assert a == b, f"effect {n} differs: verify mode {a}, fast mode {b}"
    assert fast[2] == verified[2]
    assert fast[3] == verified[3]


@pytest.mark.parametrize("path", BUNDLED, ids=[str(p.relative_to(ROOT)) for p in BUNDLED])
def test_every_bundled_scenario_runs_alike_in_both_modes(path: Path) -> None:
    scenarios = [s for s in scenarios_in([path]) if isinstance(s, Scenario)]
    assert scenarios
    for scenario in scenarios:
        assert_same_both_ways(scenario)


def test_a_story_that_writes_records_effects_in_both_modes() -> None:
    """The comparison has something to compare: a story's run applies writes and events."""
    doc = story(0)
    _, effects, world, reconciles = run(parse_scenario(doc, doc["name"]), verify=False)
    assert len(effects) > 10 and reconciles > 10 and world


@given(st.integers(min_value=0, max_value=2**32 - 1), st.integers(min_value=1, max_value=10))
def test_every_generated_story_runs_alike_in_both_modes(seed: int, length: int) -> None:
    doc = story(seed, length)
    assert_same_both_ways(parse_scenario(doc, doc["name"]))


def test_verify_mode_catches_a_no_op_test_that_drops_a_write() -> None:
    """The fast engine drops a Workload write whose parts are 0; verify mode checks every such
    answer against a deep equality (the write path's answer is given to the check here, as a
    wrong one: the compiled engine's functions cannot be patched to give it)."""
    (wl,) = (o for o in build_objects(Options()) if isinstance(o, Workload))
    new = evolve(wl, metadata=evolve(wl.metadata, labels=FrozenMap({"seen": "yes"})))
    diff = changed_parts(wl, new)
    assert diff
    checked_change(wl, Update(new), diff)  # the write path's answer: right
    with pytest.raises(SettleError, match=f"the write path found Workload {wl.metadata.name} unchanged by a "
                                          "write that changes it"):
        checked_change(wl, Update(new), 0)
    with pytest.raises(SettleError, match="changed by a write that leaves it"):
        checked_change(wl, Update(evolve(wl)), diff)
