"""The Cluster Autoscaler stand-in at the HTTP boundary: a listed request and a replayed watch
stream answered as the SCRIPT says, status written through the subresource."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kueue_provreq import cli
from kueue_provreq.autoscaler import parse_script
from kueue_provreq.cluster import client
from kueue_provreq.cluster.autoscaler import FIELD_MANAGER, StandIn
from kueue_provreq.manifests.codec import parse_time

from apiserver import RecordedAPIServer

PR_PATH = "/apis/autoscaling.x-k8s.io/v1/namespaces/ml/provisioningrequests"
JSON = {"Content-Type": "application/json"}


def ok(body: Any, status: int = 200) -> dict[str, Any]:
    return {"status": status, "headers": JSON, "body": body}


def connect(server: RecordedAPIServer, tmp_path: Path) -> client.Client:
    return client.connect(str(server.kubeconfig(tmp_path)))


def request(name: str, created: str, version: str, klass: str = "check-capacity.autoscaling.x-k8s.io",
            conditions: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"apiVersion": "autoscaling.x-k8s.io/v1", "kind": "ProvisioningRequest",
            "metadata": {"name": name, "namespace": "ml", "uid": f"uid-{name}", "resourceVersion": version,
                         "generation": 1, "creationTimestamp": created, "labels": {"kueue.x-k8s.io/managed": "true"},
                         "ownerReferences": [{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
                                              "name": "job-x", "uid": "uid-wl", "controller": True,
                                              "blockOwnerDeletion": True}]},
            "spec": {"provisioningClassName": klass, "parameters": {"noRetry": "true"},
                     "podSets": [{"count": 2, "podTemplateRef": {"name": f"ppt-{name}-main"}}]},
            "status": {"conditions": conditions or []}}


class Clock:
    def __init__(self, at: str) -> None:
        self.now = float(parse_time(at))

    def __call__(self) -> float:
        return self.now


def test_stand_in_answers_requests_as_the_script_says(tmp_path: Path) -> None:
    """SCRIPT fail,provision@30s: attempt 1 fails at once; attempt 2 arrives on the watch and is
    provisioned 30 s after its creation; a request of a class CA does not handle is left alone."""
    first = request("job-x-prov-1", "2026-11-20T10:00:00Z", "100")
    other = request("dws-1", "2026-11-20T10:00:00Z", "101", klass="queued-provisioning.gke.io")
    second = request("job-x-prov-2", "2026-11-20T10:01:00Z", "120")
    accepted = {"type": "Accepted", "status": "True", "reason": "Accepted", "observedGeneration": 1,
                "message": "ProvisioningRequest is accepted by ClusterAutoscaler"}
    failed = request("job-x-prov-1", "2026-11-20T10:00:00Z", "110", conditions=[
        {**accepted, "lastTransitionTime": "2026-11-20T10:00:00Z"},
        {"type": "Failed", "status": "True", "reason": "CapacityIsNotFound", "observedGeneration": 1,
         "message": "CA could not find requested capacity", "lastTransitionTime": "2026-11-20T10:00:00Z"}])
    provisioned = request("job-x-prov-2", "2026-11-20T10:01:00Z", "130", conditions=[
        {**accepted, "lastTransitionTime": "2026-11-20T10:01:30Z"},
        {"type": "Provisioned", "status": "True", "reason": "CapacityIsFound", "observedGeneration": 1,
         "message": "Capacity is found in the cluster", "lastTransitionTime": "2026-11-20T10:01:30Z"}])
    all_ns = "/apis/autoscaling.x-k8s.io/v1/provisioningrequests"
    exchanges = [
        {"request": {"method": "GET", "path": all_ns, "query": {"limit": "500"}},
         "response": ok({"apiVersion": "autoscaling.x-k8s.io/v1", "kind": "ProvisioningRequestList",
                         "metadata": {"resourceVersion": "105"},
                         "items": [first, other]})},
        {"request": {"method": "PATCH", "path": f"{PR_PATH}/job-x-prov-1/status",
                     "query": {"fieldManager": FIELD_MANAGER}}, "response": ok(failed)},
        {"request": {"method": "GET", "path": all_ns,
                     "query": {"watch": "true", "resourceVersion": "105", "allowWatchBookmarks": "true",
                               "timeoutSeconds": "91"}},
         "response": {"stream": [
             {"type": "MODIFIED", "object": {k: v for k, v in failed.items() if k not in ("apiVersion", "kind")}},
             {"type": "ADDED", "object": second},
             {"type": "MODIFIED", "object": second}]}},
        # attempt 2 is due at 10:01:30, before that watch would end: a shorter one follows
        {"request": {"method": "GET", "path": all_ns,
                     "query": {"watch": "true", "resourceVersion": "120", "allowWatchBookmarks": "true",
                               "timeoutSeconds": "31"}},
         "response": {"stream": [
             {"type": "BOOKMARK", "object": {"kind": "ProvisioningRequest", "apiVersion": "autoscaling.x-k8s.io/v1",
                                             "metadata": {"resourceVersion": "125"}}}]}},
        {"request": {"method": "PATCH", "path": f"{PR_PATH}/job-x-prov-2/status",
                     "query": {"fieldManager": FIELD_MANAGER}}, "response": ok(provisioned)},
    ]
    clock = Clock("2026-11-20T10:00:00Z")
    lines: list[str] = []
    with RecordedAPIServer(exchanges) as server, connect(server, tmp_path) as api:
        original = api.watch
        watches: list[Any] = []

        def watch(*args: Any, **kwargs: Any) -> Iterator[Any]:
            watches.append(args)
            if len(watches) == 1:
                clock.now = parse_time("2026-11-20T10:01:00Z")  # the events arrive a minute later
                yield from original(*args, **kwargs)
            else:
                yield from original(*args, **kwargs)
                clock.now = parse_time("2026-11-20T10:01:30Z")  # the stream ends at its timeout

        api.watch = watch  # type: ignore[method-assign]
        StandIn(api, parse_script("fail,provision@30s"), clock=clock, log=lines.append).run(
            until=parse_time("2026-11-20T10:01:30Z"))
    assert server.unexpected == []
    patches = [r for r in server.requests if r.method == "PATCH"]
    assert [r.path.split("/")[-2] for r in patches] == ["job-x-prov-1", "job-x-prov-2"]
    fail, provision = patches
    assert fail.body["metadata"] == {"resourceVersion": "100"}
    assert [(cd["type"], cd["status"], cd["reason"]) for cd in fail.body["status"]["conditions"]] == [
        ("Accepted", "True", "Accepted"), ("Failed", "True", "CapacityIsNotFound")]
    assert fail.body["status"]["conditions"][1]["message"] == "CA could not find requested capacity"
    assert set(fail.body["status"]) == {"conditions"}  # conditions only, through /status
    times = {cd["lastTransitionTime"] for cd in provision.body["status"]["conditions"]}
    assert times == {"2026-11-20T10:01:30Z"}  # 30 s after its creation, not when it was noticed
    assert [cd["type"] for cd in provision.body["status"]["conditions"]] == ["Accepted", "Provisioned"]
    assert lines == [
        "ignoring ml/dws-1: class queued-provisioning.gke.io is not one Cluster Autoscaler handles",
        "2026-11-20T10:00:00Z ml/job-x-prov-1: Accepted=True (Accepted: ProvisioningRequest is accepted by "
        "ClusterAutoscaler), Failed=True (CapacityIsNotFound: CA could not find requested capacity)",
        "2026-11-20T10:01:30Z ml/job-x-prov-2: Accepted=True (Accepted: ProvisioningRequest is accepted by "
        "ClusterAutoscaler), Provisioned=True (CapacityIsFound: Capacity is found in the cluster)",
    ]


def test_stand_in_command_checks_its_script(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status_ = cli.main(["autoscaler", "--kubeconfig", str(tmp_path / "k"), "--autoscaler", "provison@5m"])
    assert status_ == 2
    assert capsys.readouterr().err.startswith("kueue-provreq: error: --autoscaler: item 1 'provison@5m': "
                                              "unknown answer 'provison'")


def test_the_command_answers_what_is_due_and_stops(tmp_path: Path) -> None:
    """``kueue-provreq autoscaler --for 0s``: one pass over the listed requests, on the wall clock."""
    from kueue_provreq.manifests.codec import format_time

    from builders import cli as run

    created = format_time(int(time.time()) - 10)
    pending = request("job-y-prov-1", created, "200")
    answered = request("job-y-prov-1", created, "201", conditions=[
        {"type": "Accepted", "status": "True", "reason": "Accepted", "message": "", "lastTransitionTime": created}])
    all_ns = "/apis/autoscaling.x-k8s.io/v1/namespaces/ml/provisioningrequests"
    exchanges = [
        {"request": {"method": "GET", "path": all_ns, "query": {"limit": "500"}},
         "response": ok({"apiVersion": "autoscaling.x-k8s.io/v1", "kind": "ProvisioningRequestList",
                         "metadata": {"resourceVersion": "200"}, "items": [pending]})},
        {"request": {"method": "PATCH", "path": f"{PR_PATH}/job-y-prov-1/status",
                     "query": {"fieldManager": FIELD_MANAGER}}, "response": ok(answered)},
    ]
    with RecordedAPIServer(exchanges) as server:
        done = run("autoscaler", "--kubeconfig", str(server.kubeconfig(tmp_path)), "-n", "ml", "--for", "0s")
    assert server.unexpected == [] and done.returncode == 0, done.stderr
    (patch,) = [r for r in server.requests if r.method == "PATCH"]
    assert [c["type"] for c in patch.body["status"]["conditions"]] == ["Accepted", "Provisioned"]
    header, written = done.stdout.splitlines()
    assert header == f"answering ProvisioningRequests on {server.url} (namespace ml) with provision@0s"
    assert written.endswith("ml/job-y-prov-1: Accepted=True (Accepted: ProvisioningRequest is accepted by "
                            "ClusterAutoscaler), Provisioned=True (CapacityIsFound: Capacity is found in the cluster)")
