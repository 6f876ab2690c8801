"""What ``kueue-provreq explore`` reports: a search cut short is incomplete and fails; every
counterexample it writes replays with ``conform``, at either granularity; a violation is labelled
upstream behaviour where upstream is known to break that invariant, else a possible defect of the
model."""

from __future__ import annotations

from pathlib import Path

import pytest
from kueue_provreq import invariants as inv
from kueue_provreq.api.config import Configuration
from kueue_provreq.conformance.runner import collect, conform

from builders import cli


def test_a_search_cut_short_by_max_states_is_incomplete_and_fails() -> None:
    out = cli("explore", "--max-states", "5")
    assert out.returncode == 1
    assert "search incomplete: --max-states 5 stopped it" in out.stdout
    assert "every invariant holds" not in out.stdout


def test_a_search_to_its_depth_holds_and_passes() -> None:
    out = cli("explore", "--depth", "3")
    assert out.returncode == 0
    assert "every invariant holds in every state up to depth 3" in out.stdout


@pytest.mark.parametrize("options", [
    ["--granularity", "settle", "--backoff-limit", "0"],
    ["--granularity", "settle", "--backoff-limit", "1"],
    ["--granularity", "settle", "--backoff-limit", "1", "--workloads", "2"],
    ["--granularity", "reconcile", "--backoff-limit", "0"],
    ["--granularity", "reconcile", "--backoff-limit", "1"],
    ["--granularity", "reconcile", "--backoff-limit", "2", "--outcomes", "accept,not_provisioned,provision,fail"],
], ids=lambda o: "-".join(x.lstrip("-") for x in o))
def test_every_counterexample_replays_with_conform(tmp_path: Path, options: list[str]) -> None:
    target = tmp_path / "counterexample.yaml"
    out = cli("explore", "--semantics", "pre-kep-3258", "--depth", "10", *options, "--scenario-out", str(target))
    assert out.returncode == 1, out.stdout
    assert "(upstream behaviour: Kueue before v0.15" in out.stdout
    (outcome,) = conform([target])
    assert outcome.passed, outcome.failure


def test_counterexamples_of_different_searches_have_different_names(tmp_path: Path) -> None:
    for i, limit in enumerate(("0", "1")):
        cli("explore", "--semantics", "pre-kep-3258", "--backoff-limit", limit,
            "--scenario-out", str(tmp_path / f"{i}.yaml"))
    assert [o.passed for o in conform(collect([tmp_path]))] == [True, True]


def test_a_violation_upstream_is_not_known_for_is_labelled_a_possible_model_defect(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def always(world: object, ctx: object) -> list[str]:
        return ["made up"]
    monkeypatch.setitem(inv.STATE_INVARIANTS, "made_up", inv.Invariant("made_up", "", state=always))  # type: ignore[arg-type]
    out = cli("explore", "--depth", "2")
    assert out.returncode == 1
    assert "made_up: made up" in out.stdout
    assert "(not known upstream behaviour: a defect of the model, or an upstream bug to report)" in out.stdout


def test_upstream_behaviour_is_known_only_under_the_semantics_that_has_it() -> None:
    message = "single_request_per_check: default/wla check check1: requests ['a', 'b']"
    assert inv.upstream_behaviour(message, Configuration(admission_check_semantics=inv.PRE_KEP_3258))
    assert inv.upstream_behaviour(message, Configuration()) is None


def test_a_violation_that_raised_ends_with_the_step_that_raised() -> None:
    from kueue_provreq.explore.scenario import to_scenario
    from kueue_provreq.explore.search import SETTLE, Action, Explorer, Options, Violation, initial_world
    ex = Explorer(Options())
    world = initial_world(ex.objects, 0)  # type: ignore[arg-type]
    fail = Action("autoscaler", request="wla-check1-1", trigger="fail")
    v = Violation(("IllegalTransition: x",), (SETTLE, fail), world, 0, raised=True)  # type: ignore[arg-type]
    steps = to_scenario(ex, v, "n", "d")["steps"]
    assert [next(iter(s)) for s in steps] == ["settle", "autoscaler", "settle"]
