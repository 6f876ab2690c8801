"""The explorer's preemption world: a higher-priority workload arrives at any moment in a queue
too small for both, under upstream's semantics and under KEP-993's preemption policy; the search
reaches the states the new invariants judge, and finds a preemption issued too early when the
policy is broken on purpose."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from kueue_provreq.api import constants as c
from kueue_provreq.conformance.runner import conform
from kueue_provreq.controllers import kep993
from kueue_provreq.explore.scenario import step_of, to_scenario
from kueue_provreq.explore.search import Action, Explorer, Options, explore, late_arrival
from kueue_provreq.manifests import dump_object

from builders import cli

KEP = "kep-993-preemption"


class Watching(Explorer):
    """An explorer that notes what the states it checks show."""

    seen: set[str]

    def check(self, before, after):  # type: ignore[no-untyped-def]
        w = after.world
        low, high = (w.get(c.WORKLOAD, "default", n) for n in ("wla", "wlb"))
        if low is not None and low.status.is_true(c.WORKLOAD_PREEMPTED):
            self.seen.add("preempted")
        if high is not None:
            self.seen.update(f"high {s.state}" for s in high.status.admission_checks)
            if high.is_admitted():
                self.seen.add("high admitted")
            if high.has_quota_reservation() and low is not None and low.is_admitted():
                self.seen.add("both hold quota")
        return super().check(before, after)


def watch(opts: Options) -> tuple[set[str], object]:
    ex = Watching(opts)
    ex.seen = set()
    return ex.seen, ex.run()


def test_upstream_preemption_keeps_every_invariant_and_never_over_commits() -> None:
    seen, report = watch(Options(workloads=2, preemption=True, depth=8))
    assert report.violation is None, report.violation  # type: ignore[attr-defined]
    assert {"preempted", "high admitted"} <= seen and "both hold quota" not in seen


def test_kep_993_keeps_every_invariant_and_reaches_every_road_to_preemption() -> None:
    seen, report = watch(Options(workloads=2, preemption=True, depth=8, semantics=KEP))
    assert report.violation is None, report.violation  # type: ignore[attr-defined]
    assert {"preempted", "high admitted", "both hold quota", f"high {c.CHECK_PREEMPTION_REQUIRED}",
            f"high {c.CHECK_READY}"} <= seen


def test_a_preemption_issued_before_the_policy_allows_it_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kep993, "policy_allows", lambda world, wl, cq: True)
    report, ex = explore(Options(workloads=2, preemption=True, depth=6, semantics=KEP))
    assert report.violation is not None
    assert any(m.startswith("no_preemption_before_the_policy_allows_it:") for m in report.violation.messages)
    assert [a.kind for a in report.violation.trace] == ["settle", "submit"]


def test_the_arrival_is_an_apply_step_and_the_counterexample_replays(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    opts = Options(workloads=2, preemption=True, depth=6, semantics=KEP)
    arrival = late_arrival(opts)
    assert arrival is not None and arrival.spec.priority == 10
    assert step_of(Action("submit", workload="default/wlb"), True, arrival) == [
        {"apply": dump_object(arrival)}, {"settle": {}}]
    monkeypatch.setattr(kep993, "policy_allows", lambda world, wl, cq: True)
    report, ex = explore(opts)
    assert report.violation is not None
    path = tmp_path / "cx.yaml"
    path.write_text(yaml.safe_dump(to_scenario(ex, report.violation, "cx", "found")))
    monkeypatch.undo()
    [outcome] = list(conform([path]))
    assert not outcome.passed  # the model, unbroken, does not reach the broken state


def test_the_preemption_world_has_two_workloads() -> None:
    with pytest.raises(ValueError, match="two workloads"):
        Options(preemption=True)
    out = cli("explore", "--preemption", "--depth", "0")
    assert out.returncode == 2 and "two workloads" in out.stderr


def test_kep_993_checks_wait_for_their_check_in_the_preemption_world() -> None:
    ex = Explorer(Options(workloads=2, preemption=True, semantics=KEP))
    [check] = [o for o in ex.objects if o.KIND == c.ADMISSION_CHECK]
    assert check.spec.preemption_policy == c.PREEMPTION_POLICY_AFTER_CHECK_PASSED_OR_ON_DEMAND  # type: ignore[attr-defined]
    [plain] = [o for o in Explorer(Options(workloads=2, preemption=True)).objects if o.KIND == c.ADMISSION_CHECK]
    assert plain.spec.preemption_policy is None  # type: ignore[attr-defined]
