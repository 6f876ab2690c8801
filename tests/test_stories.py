"""Random stories: the generator, their replay on the model, and the real Kueue against the model.

The fixed set (seeds 0-19) runs on the testbed's real Kueue (skipped, with the reason, where
``make oracle`` has not built it); ``kueue-provreq stories --cluster KUBECONFIG --count N`` (or
``make stories STORIES=N``) runs more."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kueue_provreq.cli import main
from kueue_provreq.conformance.runner import Run
from kueue_provreq.conformance.scenario import parse_scenario
from kueue_provreq.conformance.stories import HORIZON, MIN_BACKOFF, SETTLE_BOUND, story

#: The fixed set CI runs on both sides.
CI_SEEDS = range(20)


def _kinds(doc: dict[str, Any]) -> Counter[str]:
    """What a story does: each step's kind, autoscaler steps by condition, patches by field."""
    seen: Counter[str] = Counter()
    for step in doc["steps"]:
        ((kind, body),) = step.items()
        if kind == "autoscaler":
            seen[f"autoscaler {body['condition']}"] += 1
        elif kind == "patch":
            seen["finish" if "status" in body["merge"] else f"active={body['merge']['spec']['active']}"] += 1
        else:
            seen[kind] += 1
    return seen


def test_a_seed_gives_the_same_story() -> None:
    assert story(3) == story(3)
    assert story(3) != story(4)


@given(st.integers(min_value=0, max_value=2**32 - 1), st.integers(min_value=1, max_value=10))
def test_the_model_replays_every_story_it_tells(seed: int, length: int) -> None:
    """A story's expectations are the model's settled states: the runner, replaying the
    scenario from scratch, reaches each of them again."""
    doc = story(seed, length)
    outcome = Run(parse_scenario(doc, doc["name"])).run()
    assert outcome.passed, outcome.line()
    # every action is followed by a settle and an expectation
    assert sum(1 for s in doc["steps"] if "expect" in s) == sum(1 for s in doc["steps"] if "settle" in s)


def test_while_a_backoff_runs_the_next_step_is_an_advance() -> None:
    """Real time flows between steps on a cluster: a story never acts while a backoff runs."""
    retries = 0
    for seed in CI_SEEDS:
        doc = story(seed)
        for prc in (o for o in doc["objects"] if o["kind"] == "ProvisioningRequestConfig"):
            assert prc["spec"]["retryStrategy"]["backoffBaseSeconds"] >= MIN_BACKOFF
        steps = doc["steps"]
        for i, step in enumerate(steps[:-1]):
            expected = step.get("expect", {}).get("objects", ())
            if any(s["state"] == "Retry" for o in expected for s in o.get("status", {}).get("admissionChecks", ())):
                retries += 1
                assert "advance" in steps[i + 1], (seed, i, steps[i + 1])
                assert int(steps[i + 1]["advance"].removesuffix("s")) <= HORIZON + 1
    assert retries > 0


def test_an_answer_that_may_start_a_backoff_is_fresh_or_comes_after_it() -> None:
    """Kueue counts a Retry backoff from the check's previous transition, and on a cluster the
    settles since then take real time the story's clock does not count.  An answer to a fresh
    check is compared while its backoff (at least MIN_BACKOFF, more than two steps of
    SETTLE_BOUND) still runs: the workload keeps its quota in Retry.  A stale check's answer
    comes after an advance past the longest backoff it could start: it is over on both sides,
    so no check is left in Retry and the workload is evicted at once."""
    assert MIN_BACKOFF > 2 * SETTLE_BOUND
    fresh = late = 0
    for seed in CI_SEEDS:
        steps = story(seed)["steps"]
        for i, step in enumerate(steps[:-2]):
            answer = steps[i + 1].get("autoscaler", {})
            if "advance" in step and answer.get("condition") in ("Failed", "BookingExpired"):
                late += 1
                after = next(s["expect"] for s in steps[i + 2:] if "expect" in s)
                assert not any(s["state"] == "Retry" for o in after["objects"]
                               for s in o.get("status", {}).get("admissionChecks", ())), (seed, i)
            for o in step.get("expect", {}).get("objects", ()):
                checks = o.get("status", {}).get("admissionChecks", ())
                held = {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved"}
                if any(s["state"] == "Retry" for s in checks) and held in o["status"]["conditions"]:
                    fresh += 1
                    assert all(s["requeueAfterSeconds"] >= MIN_BACKOFF for s in checks if s["state"] == "Retry")
    assert fresh > 0 and late > 0, (fresh, late)


def test_the_fixed_set_tells_every_answer_and_every_user_action() -> None:
    seen = sum((_kinds(story(seed)) for seed in CI_SEEDS), Counter())
    for kind in ("autoscaler Provisioned", "autoscaler Failed", "autoscaler BookingExpired",
                 "autoscaler CapacityRevoked", "finish", "active=False", "active=True", "apply", "advance"):
        assert seen[kind] > 0, (kind, seen)


def test_the_command_replays_stories_on_the_model(capsys: pytest.CaptureFixture[str], tmp_path: Any) -> None:
    assert main(["stories", "--count", "3", "--seed", "5", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split(" (")[0] for line in out[:3]] == ["PASS story 5", "PASS story 6", "PASS story 7"]
    assert out[-1].startswith("3 passed, 0 failed; model ")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["story-5.yaml", "story-6.yaml", "story-7.yaml"]
    assert main(["conform", str(tmp_path)]) == 0


def test_the_fixed_set_agrees_with_the_real_kueue(testbed: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """The CI set on the testbed's real Kueue: every settled state the model reaches, the real
    Kueue reaches too."""
    status = main(["stories", "--cluster", testbed.kubeconfig, "--count", str(len(CI_SEEDS)), "--parallel", "4",
                   "--seed", str(CI_SEEDS[0])])
    out = capsys.readouterr().out.splitlines()
    assert out[-2] == f"{len(CI_SEEDS)} agree, 0 disagree, 0 skipped", "\n".join(out)
    assert status == 0
