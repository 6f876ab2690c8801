"""Each audit rule on the healthy cluster's objects with one thing broken, and the states a
snapshot catches in passing that are not findings."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kueue_provreq.api.meta import Time
from kueue_provreq.audit import RULES, Thresholds, audit
from kueue_provreq.cluster.snapshot import to_objects
from kueue_provreq.explain import explain
from kueue_provreq.manifests.codec import format_time, parse_time
from kueue_provreq.manifests.inputs import load_inputs
from kueue_provreq.timestamps import to_time

from recorded import at, items, workload

DOCS = Path(__file__).parents[1] / "docs"
ITEMS: list[dict[str, Any]] = list(items("healthy"))
AT = at("healthy")
LOCAL_QUEUE = "LocalQueue ml/team-a"
TRAIN_A, TRAIN_B, TUNE_D = (f"Workload ml/{workload('healthy', job)}" for job in ("train-a", "train-b", "tune-d"))

Obj = dict[str, Any]


def find(items: list[Obj], kind: str, prefix: str) -> Obj:
    return next(i for i in items if i["kind"] == kind and i["metadata"]["name"].startswith(prefix))


def cond(wl: Obj, type_: str) -> Obj:
    return next(c for c in wl["status"]["conditions"] if c["type"] == type_)


def findings(change: Callable[[list[Obj]], None] = lambda items: None, at: str = AT,
             **limits: int) -> list[tuple[str, str, str]]:
    items = copy.deepcopy(ITEMS)
    change(items)
    report = audit(to_objects(items)[0], Time(parse_time(at)), Thresholds(**limits))
    return [(f.severity, f.rule, f.object) for f in report.findings]


def test_the_healthy_cluster_is_clean() -> None:
    assert findings() == []


def quota_gone(items: list[Obj]) -> None:
    wl = find(items, "Workload", "job-train-a")
    cond(wl, "QuotaReserved").update(status="False", reason="PendingEvaluation")


def rejected(items: list[Obj]) -> None:
    wl = find(items, "Workload", "job-train-b")
    wl["status"]["admissionChecks"][0]["state"] = "Rejected"


def rejected_twice(items: list[Obj]) -> None:
    """Two Rejected checks: one finding, naming both."""
    wl = find(items, "Workload", "job-train-b")
    first = wl["status"]["admissionChecks"][0]
    first["state"] = "Rejected"
    wl["status"]["admissionChecks"].append({**first, "name": "h100-capacity"})


def deactivated(items: list[Obj]) -> None:
    find(items, "Workload", "job-train-b")["spec"]["active"] = False


def finished(items: list[Obj]) -> None:
    wl = find(items, "Workload", "job-train-a")
    wl["status"]["conditions"].append({"type": "Finished", "status": "True", "reason": "Succeeded",
                                       "message": "Job finished successfully",
                                       "lastTransitionTime": AT})


def not_controlled(items: list[Obj]) -> None:
    find(items, "ProvisioningRequest", "job-train-a")["metadata"]["ownerReferences"][0]["controller"] = False


def bad_ref(items: list[Obj]) -> None:
    find(items, "AdmissionCheck", "gpu-capacity")["spec"]["parameters"]["kind"] = "ConfigMap"


def no_namespace_selector(items: list[Obj]) -> None:
    del find(items, "ClusterQueue", "gpu-queue")["spec"]["namespaceSelector"]


@pytest.mark.parametrize(("change", "want"), [
    (quota_gone, [("error", "admitted-without-quota", TRAIN_A),
                  ("error", "admission-without-reservation", TRAIN_A)]),
    (rejected, [("error", "rejected-check-active", TRAIN_B)]),
    (rejected_twice, [("error", "rejected-check-active", TRAIN_B)]),
    (deactivated, [("error", "deactivated-holds-quota", TRAIN_B)]),
    (finished, [("error", "finished-keeps-requests", TRAIN_A)]),
    (not_controlled, [("error", "not-owned-as-kueue-owns", f"ProvisioningRequest ml/{workload('healthy', 'train-a')}-gpu-capacity-1")]),
    # the check's controller makes it inactive, and so the queue that uses it, as explain says
    (bad_ref, [("warning", "check-config-missing", "AdmissionCheck gpu-capacity"),
               ("warning", "cluster-queue-inactive", "ClusterQueue gpu-queue")]),
    # the API's default selects no namespace: every LocalQueue of the queue is told
    (no_namespace_selector, [("warning", "namespace-not-selected", LOCAL_QUEUE)]),
], ids=lambda v: getattr(v, "__name__", ""))
def test_each_rule(change: Callable[[list[Obj]], None], want: list[tuple[str, str, str]]) -> None:
    assert sorted(findings(change)) == sorted(want)


def test_audit_and_explain_agree_on_activity_of_fresh_manifests() -> None:
    """Fresh manifests carry no status: both settle it as Kueue's controllers would, so neither
    calls a queue or a check inactive that the other calls active (the bundled forecast example)."""
    objects = list(load_inputs([str(Path(__file__).parent.parent / "examples" / "forecast")]).objects)
    now = to_time("2024-01-01T00:00:00Z")
    assert [f for f in audit(objects, now).findings if f.rule == "cluster-queue-inactive"] == []
    states = {(f.subject, f.state) for f in explain(objects, now).findings}
    assert ("ClusterQueue training", "Active") in states and ("AdmissionCheck gpu-capacity", "Active") in states


def test_stuck_work_is_judged_against_the_time() -> None:
    """tune-d's Retry is due at its requeueAt; the default --overdue is 5 minutes."""
    tune = find(ITEMS, "Workload", "job-tune-d")
    due = parse_time(tune["status"]["requeueState"]["requeueAt"])
    assert tune["status"]["admissionChecks"][0]["state"] == "Retry" and due > parse_time(AT)
    assert findings(at=format_time(due + 300)) == []
    assert findings(at=format_time(due + 301)) == [("warning", "retry-overdue", TUNE_D)]
    assert findings(at=format_time(due + 301), overdue=600) == []
    # train-b has held quota since its second reservation, waiting for its check
    reserved = parse_time(cond(find(ITEMS, "Workload", "job-train-b"), "QuotaReserved")["lastTransitionTime"])
    assert ("warning", "quota-held-waiting", TRAIN_B) in findings(quota_wait=parse_time(AT) - reserved - 1)


def test_what_a_snapshot_catches_in_passing_is_not_a_finding() -> None:
    def being_evicted(items: list[Obj]) -> None:
        """Admitted, then evicted: the checks are reset to Pending before the quota is released."""
        wl = find(items, "Workload", "job-train-a")
        wl["status"]["conditions"].append({"type": "Evicted", "status": "True", "reason": "PodsReadyTimeout",
                                           "message": "Exceeded the PodsReady timeout",
                                           "lastTransitionTime": AT})
        wl["status"]["admissionChecks"][0].update(state="Pending", lastTransitionTime=AT)
        wl["spec"]["active"] = True

    def check_added_after_admission(items: list[Obj]) -> None:
        """AR A.2: a check added to the ClusterQueue later is Pending on an admitted workload."""
        wl = find(items, "Workload", "job-train-a")
        wl["status"]["admissionChecks"].append({"name": "late-check", "state": "Pending", "message": "",
                                                "lastTransitionTime": AT})

    def being_deactivated(items: list[Obj]) -> None:
        rejected(items)
        wl = find(items, "Workload", "job-train-b")
        wl["status"]["conditions"].append({"type": "DeactivationTarget", "status": "True", "reason": "AdmissionCheck",
                                           "message": 'AdmissionCheck in Rejected state: "gpu-capacity"',
                                           "lastTransitionTime": AT})

    def rejected_during_the_retry_wait(items: list[Obj]) -> None:
        """tune-d waits for its requeueAt: the workload controller acts after it."""
        find(items, "Workload", "job-tune-d")["status"]["admissionChecks"][0]["state"] = "Rejected"

    for change in (being_evicted, check_added_after_admission, being_deactivated, rejected_during_the_retry_wait):
        assert findings(change) == [], change.__name__


def test_every_rule_is_documented_with_its_source() -> None:
    page = (DOCS / "cluster.rst").read_text()
    for rule in RULES.values():
        assert f"``{rule.name}``" in page, rule.name
        row = page[page.index(f"``{rule.name}``"):].split("\n", 3)
        assert rule.source in " ".join(row), rule.name


def test_live_is_what_the_provisioning_controller_counts() -> None:
    """A booking that expired after admission does not end the attempt (PC §1.7): a second
    request beside it is a duplicate.  Before admission it does, and the next attempt is due."""
    def second_attempt(items: list[Obj], admitted: bool) -> None:
        first = find(items, "ProvisioningRequest", "job-train-a")  # Provisioned, workload admitted
        first["status"]["conditions"].append({"type": "BookingExpired", "status": "True",
                                              "reason": "CapacityBookingConsumed", "message": "booking consumed",
                                              "lastTransitionTime": AT})
        second = copy.deepcopy(first)
        second["metadata"].update(name=first["metadata"]["name"][:-1] + "2", uid="second-attempt")
        second["status"] = {"conditions": [c for c in first["status"]["conditions"] if c["type"] == "Accepted"]}
        items.append(second)
        if not admitted:
            cond(find(items, "Workload", "job-train-a"), "Admitted").update(status="False", reason="NoReservation")

    request = f"ProvisioningRequest ml/{workload('healthy', 'train-a')}-gpu-capacity"
    assert findings(lambda items: second_attempt(items, admitted=True)) == [
        ("error", "duplicate-live-requests", f"{request}-1"), ("error", "duplicate-live-requests", f"{request}-2")]
    assert [f for f in findings(lambda items: second_attempt(items, admitted=False))
            if f[1] == "duplicate-live-requests"] == []
