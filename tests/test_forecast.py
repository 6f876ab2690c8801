"""``forecast``: the future of each workload from manifests, Cluster Autoscaler scripted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from kueue_provreq import cli
from kueue_provreq.api import constants as c
from kueue_provreq.api.config import Configuration
from kueue_provreq.api.meta import Time
from kueue_provreq.api.objects import KubeObject
from kueue_provreq.api.provisioning import ProvisioningRequest
from kueue_provreq.autoscaler import Answer, Decision, reconcile
from kueue_provreq.conformance.runner import Run
from kueue_provreq.conformance.scenario import parse_scenario
from kueue_provreq.conformance.timeline import NONE, Timeline
from kueue_provreq.controllers.context import Context
from kueue_provreq.engine import Manager
from kueue_provreq.manifests import dump_object, load_file, load_object
from kueue_provreq.simulation import forecast, parse_script
from kueue_provreq.simulation.forecast import Forecast, relative
from kueue_provreq.world import Update
from kueue_provreq.world_builder import build_world

from builders import SETUP, T0, job, objects


@pytest.fixture
def sample(upstream: Path) -> list[KubeObject]:
    """Kueue's own provisioning example: its setup (backoffLimitCount 2, base 0 s) and Job."""
    examples = upstream / "examples"
    return [load_object(d) for f in ("provisioning-setup.yaml", "sample-job.yaml") for d in load_file(examples / f)]


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = cli.main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


# --- the two stories, through the command line ---------------------------------------------


def test_fail_then_provision_is_admitted_after_two_attempts(capsys: pytest.CaptureFixture[str], upstream: Path) -> None:
    ex = upstream / "examples"
    status, out, _ = run_cli(capsys, "forecast", "-f", str(ex / "provisioning-setup.yaml"), "-f",
                             str(ex / "sample-job.yaml"), "--autoscaler", "fail@1m,provision@5m", "-o", "json",
                             "--at", "2024-01-01T00:00:00Z")
    assert status == 0
    data = json.loads(out)
    assert data["at"] == "2024-01-01T00:00:00Z"
    [wl] = data["workloads"]
    assert set(wl) == {"namespace", "name", "job", "outcome", "admittedAt", "attempts", "timeline"}
    assert (wl["outcome"], wl["attempts"], wl["admittedAt"]) == ("Admitted", 2, "2024-01-01T00:06:00Z")
    assert wl["job"] == "sample-job-hql7p" and wl["name"].startswith("job-sample-job-hql7p-")
    whats = [e["what"] for e in wl["timeline"]]
    assert f"request {wl['name']}-sample-prov-1 Failed: retry 1 of 2 after a 0s backoff" in whats
    assert all(set(e) == {"time", "what"} for e in wl["timeline"])


def test_always_failing_is_deactivated_after_three_attempts(sample: list[KubeObject]) -> None:
    [wl] = forecast(sample, T0, parse_script("fail")).workloads
    assert (wl.outcome, wl.attempts, wl.admitted_at) == ("Deactivated", 3, None)
    assert [e.after for e in wl.timeline if e.kind == "check" and e.before == "Pending"][-1] == "Rejected"
    assert (wl.timeline[-1].kind, wl.timeline[-1].after) == ("phase", "Inactive")


# --- the same story, told to the conformance runner ---------------------------------------------------

ACCEPTED = {"condition": "Accepted", "status": "True", "reason": "Accepted",
            "message": c.CA_MSG_ACCEPTED}
FAILED = {"condition": "Failed", "status": "True", "reason": "CapacityIsNotFound",
          "message": c.CA_MSG_FAILED_CAPACITY_NOT_FOUND}
PROVISIONED = {"condition": "Provisioned", "status": "True", "reason": "CapacityIsFound",
               "message": c.CA_MSG_CAPACITY_IS_FOUND}
BOOKING_EXPIRED = {"condition": "BookingExpired", "status": "True", "reason": "CapacityReservationTimeExpired",
                   "message": c.CA_MSG_CAPACITY_RESERVATION_TIME_EXPIRED}
REVOKED = {"condition": "CapacityRevoked", "status": "True", "reason": "CapacityRevoked", "message": "revoked"}


def ca(*conditions: dict[str, str]) -> list[dict[str, Any]]:
    return [{"autoscaler": {"request": "$latest", "namespace": "default", **cond}} for cond in conditions]


SETTLE: dict[str, Any] = {"settle": {}}
STORIES = {
    "fail@1m,provision@5m": [SETTLE, {"advance": "60s"}, *ca(ACCEPTED, FAILED), SETTLE,
                             {"advance": "300s"}, *ca(ACCEPTED, PROVISIONED), SETTLE],
    "fail": [SETTLE, *ca(ACCEPTED, FAILED), SETTLE, *ca(ACCEPTED, FAILED), SETTLE, *ca(ACCEPTED, FAILED), SETTLE],
    "expire@2m,provision@5m": [SETTLE, {"advance": "120s"}, *ca(ACCEPTED, PROVISIONED, BOOKING_EXPIRED), SETTLE,
                               {"advance": "300s"}, *ca(ACCEPTED, PROVISIONED), SETTLE],
    "revoke@20m": [SETTLE, *ca(ACCEPTED, PROVISIONED), SETTLE, {"advance": "20m"}, *ca(REVOKED), SETTLE],
}


def runner_changes(objs: list[KubeObject], steps: list[dict[str, Any]]) -> list[tuple[int, str, str, str, str]]:
    """(time, phase|check, check name, from, to) as the conformance runner's timeline reports them."""
    world = build_world(objs, T0)
    doc = {"name": "story", "clock": "2024-01-01T00:00:00Z",
           "objects": [dump_object(o) for o in world], "steps": steps}
    records: list[tuple[float, dict[str, Any]]] = []
    clock = [0.0]

    class Clocked(Timeline):
        def on_step(self, number: int, step: Any, at: float) -> None:
            clock[0] = at
            super().on_step(number, step, at)

    outcome = Run(parse_scenario(doc, "<story>"), Clocked(lambda r: records.append((clock[0], r)))).run()
    assert outcome.passed, outcome.failure
    changes = [(int(t), r["record"], r.get("check", ""), r["from"], r["to"])
               for t, r in records if r["record"] in ("phase", "check")]
    # the forecast tells a backoff that takes no time as one change (X -> Pending), not two
    folded: list[tuple[int, str, str, str, str]] = []
    for change in changes:
        if (folded and change[1] == "phase" and change[3:] == ("Backoff", "Pending")
                and folded[-1][1] == "phase" and folded[-1][4] == "Backoff" and folded[-1][0] == change[0]):
            folded[-1] = (*folded[-1][:4], "Pending")
            continue
        folded.append(change)
    return folded


def forecast_changes(result: Forecast) -> list[tuple[int, str, str, str, str]]:
    [wl] = result.workloads
    return [(e.time, e.kind, e.subject, e.before or NONE, e.after or NONE)
            for e in wl.timeline if e.kind in ("phase", "check")]


@pytest.mark.parametrize("script", list(STORIES))
def test_the_forecast_agrees_with_the_conformance_runner(script: str, sample: list[KubeObject]) -> None:
    got = forecast_changes(forecast(sample, T0, parse_script(script)))
    assert got == runner_changes(sample, STORIES[script])
    assert len(got) > 4


# --- other stories -------------------------------------------------------------------------------------


def test_an_expired_booking_before_admission_is_retried(sample: list[KubeObject]) -> None:
    [wl] = forecast(sample, T0, parse_script("expire@2m,provision@5m")).workloads
    assert (wl.outcome, wl.attempts, wl.admitted_at) == ("Admitted", 2, T0 + 420)
    assert any("BookingExpired: retry 1 of 2" in e.what for e in wl.timeline)


def test_a_revocation_after_admission_deactivates(sample: list[KubeObject]) -> None:
    [wl] = forecast(sample, T0, parse_script("revoke@20m")).workloads
    assert (wl.outcome, wl.admitted_at) == ("Deactivated", T0)
    assert wl.timeline[-1].time == T0 + 1200


def test_pods_start_at_admission_so_the_booking_is_consumed(sample: list[KubeObject]) -> None:
    [wl] = forecast(sample, T0).workloads
    assert (wl.outcome, wl.attempts) == ("Admitted", 1)
    assert "CapacityBookingConsumed" in wl.timeline[-1].what


def test_until_stops_a_forecast_that_has_not_answered() -> None:
    result = forecast(objects(SETUP, job()), T0, parse_script("provision@2h"), until=3600)
    [wl] = result.workloads
    assert (wl.outcome, wl.attempts) == ("Pending", 1)
    assert "Pending" in result.table()


def test_a_job_without_a_queue_is_managed_only_with_manage_jobs_without_queue_name() -> None:
    objs = objects(SETUP, job(queue=None))
    result = forecast(objs, T0)
    assert result.workloads == ()
    assert result.unmanaged == ("Job default/train: no kueue.x-k8s.io/queue-name label, and "
                                "manageJobsWithoutQueueName is off",)
    assert "not managed by Kueue" in result.table()
    [wl] = forecast(objs, T0, config=Configuration(manage_jobs_without_queue_name=True)).workloads
    assert wl.outcome == "Pending" and "no queue name" in wl.timeline[0].what


def test_a_cluster_dump_s_requests_are_answered_too() -> None:
    """Requests already in the manifests (a dump taken mid-story) get their attempt's item,
    timed from their own creation."""
    world = build_world(objects(SETUP, job()), T0)
    Manager(world, verify=False).settle(Context(T0))
    dumped = [load_object(dump_object(o)) for o in world]
    assert any(o.KIND == c.PROVISIONING_REQUEST for o in dumped)
    [wl] = forecast(dumped, Time(T0 + 30), parse_script("fail@1m,provision@5m")).workloads
    assert (wl.outcome, wl.attempts) == ("Admitted", 2)
    assert "already exists (New, " in wl.timeline[1].what
    assert wl.timeline[2].time == T0 + 60 and "Failed: retry 1 of 2" in wl.timeline[2].what


def _dump_with_a_live_request(tmp_path: Path, answer: Answer, at: int) -> Path:
    """A cluster dump (a kubectl List) taken at T0+30s: the job's first request, created at T0,
    answered ``answer`` by Cluster Autoscaler at ``at``, and what Kueue made of it by then."""
    world = build_world(objects(SETUP, job()), T0)
    manager = Manager(world, verify=False)
    manager.settle(Context(T0))
    [pr] = world.objects(c.PROVISIONING_REQUEST)
    assert isinstance(pr, ProvisioningRequest)
    done = reconcile(pr, Time(at), Decision(answer, Time(at)))
    world.apply(Update(done.request, done.transitions))
    for t in range(at, T0 + 31):
        manager.settle(Context(Time(t)))
    path = tmp_path / "dump.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [dump_object(o) for o in world]}))
    return path


def test_a_dump_s_live_request_is_answered_as_scripted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Cluster Autoscaler answered the live request Provisioned=False at +10s and retries after its
    backoff: the script's provision@0s was due before the dump, so it comes at that retry (it
    used to wait for the request's 7-day expiry), and the timeline says why."""
    dump = _dump_with_a_live_request(tmp_path, Answer.NOT_FOUND, T0 + 10)
    status, out, _ = run_cli(capsys, "forecast", "-f", str(dump), "-o", "json", "--at", "2024-01-01T00:00:30Z")
    assert status == 0
    data = json.loads(out)
    assert data["at"] == "2024-01-01T00:00:30Z"
    [wl] = data["workloads"]
    assert (wl["outcome"], wl["admittedAt"], wl["attempts"]) == ("Admitted", "2024-01-01T00:01:10Z", 1)
    name = f"{wl['name']}-prov-1"
    assert f"request {name}: provision@0s for attempt 1 was due at -30s, before the start; Cluster " \
           "Autoscaler answered Provisioned=False at -20s and tries again after its backoff (1m0s at the " \
           "earliest): it answers then, at +40s" in [e["what"] for e in wl["timeline"]]
    # an item still to come when the dump was taken comes at its own time
    [later] = forecast([load_object(o) for o in json.loads(dump.read_text())["items"]], Time(T0 + 30),
                       parse_script("provision@5m")).workloads
    assert later.admitted_at == T0 + 300 and not any("was due" in e.what for e in later.timeline)


def test_a_dump_s_later_attempt_gets_its_item_and_counts_those_before(tmp_path: Path) -> None:
    """Attempt 1 failed before the dump and Kueue created attempt 2 (deleting the first): the
    script's second item answers it, and ``attempts`` counts both."""
    world = build_world(objects(SETUP, job()), T0)
    manager = Manager(world, verify=False)
    manager.settle(Context(T0))
    [pr] = world.objects(c.PROVISIONING_REQUEST)
    assert isinstance(pr, ProvisioningRequest)
    done = reconcile(pr, Time(T0 + 5), Decision(Answer.FAIL, Time(T0 + 5)))
    world.apply(Update(done.request, done.transitions))
    for t in range(T0 + 5, T0 + 90):
        manager.settle(Context(Time(t)))
    assert [p.metadata.name.rsplit("-", 1)[1] for p in world.objects(c.PROVISIONING_REQUEST)] == ["2"]
    dumped = [load_object(dump_object(o)) for o in world]
    [wl] = forecast(dumped, Time(T0 + 90), parse_script("fail,provision@10m")).workloads
    created = next(p for p in world.objects(c.PROVISIONING_REQUEST)).metadata.creation_timestamp
    assert created is not None
    assert (wl.outcome, wl.admitted_at, wl.attempts) == ("Admitted", created + 600, 2)
    # a failed attempt 2 then makes a third: three in all
    [failing] = forecast(dumped, Time(T0 + 90), parse_script("fail")).workloads
    assert failing.attempts == 3 and failing.outcome == "Deactivated"


def test_relative_times() -> None:
    assert [relative(s) for s in (0, 59, 60, 3599, 3600, 90061)] == \
        ["+0s", "+59s", "+1m00s", "+59m59s", "+1h00m00s", "+25h01m01s"]


# --- the command line ----------------------------------------------------------------------------------


@pytest.fixture
def manifests(tmp_path: Path) -> Path:
    path = tmp_path / "all.yaml"
    path.write_text(SETUP + "---\n" + job(), encoding="utf-8")
    return path


def test_the_table_reads_as_a_story(capsys: pytest.CaptureFixture[str], manifests: Path) -> None:
    status, out, _ = run_cli(capsys, "forecast", "-f", str(manifests), "--at", "2024-01-01T00:00:00Z",
                             "--autoscaler", "fail@30s,provision@2m")
    assert status == 0
    assert out.splitlines()[0] == ("at 2024-01-01T00:00:00Z, autoscaler fail@30s,provision@2m0s (the last item "
                                   "repeats), for at most 24h0m0s")
    # the backoff counts from the check's lastTransitionTime (+0s), which the move to Retry keeps
    assert "Admitted at +3m00s, 2 attempts" in out
    assert "     +30s  request job-train-" in out and "Failed: retry 1 of 2 after a 1m0s backoff" in out


def test_yaml_output(capsys: pytest.CaptureFixture[str], manifests: Path) -> None:
    status, out, _ = run_cli(capsys, "forecast", "-f", str(manifests), "-o", "yaml", "--at", "2024-01-01T00:00:00Z")
    assert status == 0 and yaml.safe_load(out)["workloads"][0]["outcome"] == "Admitted"


def test_config_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "all.yaml"
    path.write_text(SETUP + "---\n" + job(queue=None), encoding="utf-8")
    config = tmp_path / "config.yaml"
    config.write_text("apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"
                      "manageJobsWithoutQueueName: true\n", encoding="utf-8")
    status, out, _ = run_cli(capsys, "forecast", "-f", str(path), "--config", str(config), "-o", "json")
    assert status == 0 and len(json.loads(out)["workloads"]) == 1


@pytest.mark.parametrize(("args", "message"), [
    (["--autoscaler", "provison@5m"], "--autoscaler: item 1 'provison@5m': unknown answer"),
    (["--until", "soon"], "--until: invalid duration 'soon'"),
    (["--at", "yesterday"], "--at: expected an RFC 3339 time"),
    (["--config", "/nonexistent.yaml"], "/nonexistent.yaml: no such file or directory"),
])
def test_bad_options_are_one_line(capsys: pytest.CaptureFixture[str], manifests: Path, args: list[str],
                                  message: str) -> None:
    status, out, err = run_cli(capsys, "forecast", "-f", str(manifests), *args)
    assert status == 2 and out == ""
    assert err.startswith(f"kueue-provreq: error: {message}") and err.count("\n") == 1


@pytest.mark.parametrize(("folder", "warned"), [("demo", True), ("forecast", False)])
def test_a_fail_item_where_cluster_autoscaler_would_retry_is_warned(
        folder: str, warned: bool, capsys: pytest.CaptureFixture[str]) -> None:
    """Upstream's sample config has no noRetry: CA answers Provisioned=False and tries again,
    never Failed=True; the bundled forecast example sets noRetry: "true"."""
    examples = Path(__file__).parent.parent / "examples" / folder
    assert cli.main(["forecast", "-f", str(examples), "--at", "2024-01-01T00:00:00Z",
                     "--autoscaler", "fail@1m,provision@2m"]) == 0
    err = capsys.readouterr().err
    assert ("Cluster Autoscaler would answer a try without capacity with Provisioned=False and try again itself"
            in err) is warned
    assert err.count("\n") == int(warned)
