"""Reading a live cluster, tested at the HTTP boundary: the real Kubernetes client talks to a
loopback server that replays what the real API server answered (tests/data/cluster/*/apiserver.json,
recorded by tests/data/cluster/record.py from the testbed's API server and Kueue)."""

from __future__ import annotations

import http.server
import json
import socket
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from kueue_provreq.cluster import client, snapshot
from kueue_provreq.cluster.resources import RESOURCES

from apiserver import RecordedAPIServer
from builders import cli
from recorded import DATA, RECORDING, at, items, named, request, workload

AT = at("healthy")
LATER = RECORDING["troubled"]["auditAt"]


@pytest.fixture(autouse=True)
def pages_of_two(monkeypatch: pytest.MonkeyPatch) -> None:
    """The recordings were made with ``limit=2``, so every kind with more objects pages."""
    monkeypatch.setattr(snapshot, "PAGE_SIZE", 2)


def serve(name: str) -> RecordedAPIServer:
    return RecordedAPIServer.from_file(DATA / name / "apiserver.json")


@pytest.fixture
def healthy(tmp_path: Path) -> Iterator[tuple[RecordedAPIServer, Path]]:
    with serve("healthy") as server:
        yield server, server.kubeconfig(tmp_path)


def run(argv: list[str]) -> tuple[int, str, str]:
    """The command in process (tests/builders.py): exit status, stdout, stderr."""
    done = cli(*argv)
    return done.returncode, done.stdout, done.stderr


# --- the port -----------------------------------------------------------------------------------------


def test_snapshot_lists_every_kind_page_by_page(healthy: tuple[RecordedAPIServer, Path]) -> None:
    server, kubeconfig = healthy
    with client.connect(str(kubeconfig)) as api:
        snap = snapshot.read(api)
    assert server.unexpected == []
    assert {r.method for r in server.requests} == {"GET"}  # read-only
    continued = [r for r in server.requests if "continue" in r.query]
    assert {r.path.rsplit("/", 1)[-1] for r in continued} >= {"workloads", "jobs", "podtemplates"}
    kinds = [d["kind"] for d in snap.documents]
    assert kinds.count("Workload") == 4 and kinds.count("Job") == 4
    assert kinds.count("PodTemplate") == sum(i["kind"] == "PodTemplate" for i in items("healthy")) > 2
    # list items of built-in kinds come without kind/apiVersion; the snapshot restores them
    job = next(d for d in snap.documents if d["kind"] == "Job")
    assert job["apiVersion"] == "batch/v1"
    assert job["spec"]["selector"]["matchLabels"]["batch.kubernetes.io/controller-uid"] == job["metadata"]["uid"]
    assert snap.unread == frozenset() and snap.warnings == ()
    assert snap.source == f"cluster kind-ml ({server.url})"
    jobs = next(r for r in server.requests if r.path.endswith("/jobs"))
    assert jobs.query["labelSelector"] == "kueue.x-k8s.io/queue-name"
    assert jobs.headers["authorization"] == "Bearer recorded-token"


def test_forbidden_kind_is_skipped_with_a_warning(tmp_path: Path) -> None:
    with serve("restricted") as server, client.connect(str(server.kubeconfig(tmp_path))) as api:
        snap = snapshot.read(api)
    assert snap.unread == {"PodTemplate"}
    assert [d for d in snap.documents if d["kind"] == "PodTemplate"] == []
    assert snap.warnings == ('cannot list podtemplates: forbidden; skipped (podtemplates is forbidden: User '
                             '"alice@example.com" cannot list resource "podtemplates" in API group "" at the '
                             'cluster scope)',)


def test_context_is_chosen_and_checked(tmp_path: Path) -> None:
    with serve("healthy") as server:
        kubeconfig = server.kubeconfig(tmp_path, ("kind-ml", "kind-other"))
        with client.connect(str(kubeconfig), "kind-other") as api:
            assert api.context == "kind-other"
        with pytest.raises(client.ClusterError, match=r"no context 'prod' \(contexts: kind-ml, kind-other\)"):
            client.connect(str(kubeconfig), "prod")
    with pytest.raises(client.ClusterError, match="no such file"):
        client.connect(str(tmp_path / "missing"))


def test_unreachable_server_is_one_line(tmp_path: Path) -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = tmp_path / "kubeconfig"
    config.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "x", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "c", "context": {"cluster": "x", "user": "u"}}]}))
    status, out, err = run(["audit", "--kubeconfig", str(config)])
    assert status == 2 and out == ""
    assert err.startswith(f"kueue-provreq: error: context 'c': cannot reach the API server at http://127.0.0.1:{port} ")
    assert err.count("\n") == 1


def kubeconfig_for(path: Path, server: str, user: dict[str, object] | None = None) -> Path:
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "x", "cluster": {"server": server}}],
        "users": [{"name": "u", "user": user or {"token": "t"}}],
        "contexts": [{"name": "c", "context": {"cluster": "x", "user": "u"}}]}))
    return path


def test_a_server_that_never_answers_is_one_attempt_and_one_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The kernel completes the connection, nothing answers: one attempt (urllib3's retries
    off), ended by the read timeout (shortened here; the real one is seconds, not minutes)."""
    monkeypatch.setattr(client, "READ_TIMEOUT", 0.5)
    assert client.CONNECT_TIMEOUT + client.READ_TIMEOUT < 15 <= 60
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)  # connections are queued, never accepted nor answered
        port = listener.getsockname()[1]
        config = kubeconfig_for(tmp_path / "kubeconfig", f"http://127.0.0.1:{port}")
        status, out, err = run(["explain", "--kubeconfig", str(config)])
        listener.setblocking(False)
        attempts = 0
        while True:
            try:
                listener.accept()[0].close()
            except BlockingIOError:
                break
            attempts += 1
    assert status == 2 and out == "" and attempts == 1
    assert err.startswith(f"kueue-provreq: error: context 'c': cannot reach the API server at http://127.0.0.1:{port} ")
    assert "timed out" in err and err.count("\n") == 1


def test_a_refused_read_names_the_context_and_the_server(tmp_path: Path) -> None:
    class Unauthorized(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802  (http.server's spelling)
            body = json.dumps({"kind": "Status", "code": 401, "reason": "Unauthorized",
                               "message": "Unauthorized"}).encode()
            self.send_response(401)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), Unauthorized) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        port = server.server_address[1]
        config = kubeconfig_for(tmp_path / "kubeconfig", f"http://127.0.0.1:{port}")
        status, out, err = run(["audit", "--kubeconfig", str(config)])
        server.shutdown()
    assert status == 2 and out == ""
    assert err.startswith(f"kueue-provreq: error: cluster c (http://127.0.0.1:{port}): cannot list ")
    assert err.endswith(": Unauthorized (401 Unauthorized)\n") and err.count("\n") == 1


def test_a_missing_exec_credential_plugin_is_said_before_any_call(tmp_path: Path) -> None:
    config = kubeconfig_for(tmp_path / "kubeconfig", "http://127.0.0.1:1", {
        "exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": "no-such-plugin-xyz"}})
    status, _, err = run(["audit", "--kubeconfig", str(config)])
    assert status == 2
    assert err == (f"kueue-provreq: error: kubeconfig {config}: context 'c': the exec credential plugin "
                   "'no-such-plugin-xyz' of user 'u' is not installed (not on PATH)\n")


@pytest.mark.parametrize(("make", "message"), [
    (lambda p: p.mkdir(), "a folder, not a file"),
    (lambda p: p.symlink_to(p), "a symbolic link loop"),
    (lambda p: p.write_text("a: &a [" + ",".join(["*a"] * 0) + "]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
                            + "".join(f"{x}: &{x} [{','.join([f'*{y}'] * 10)}]\n"
                                      for y, x in zip("bcdefgh", "cdefghi", strict=True))), "alias bomb"),
], ids=["folder", "symlink-loop", "alias-bomb"])
def test_a_kubeconfig_is_read_as_every_input_is(make: object, message: str, tmp_path: Path) -> None:
    path = tmp_path / "kubeconfig"
    make(path)  # type: ignore[operator]
    status, _, err = run(["audit", "--kubeconfig", str(path)])
    assert status == 2 and message in err and err.count("\n") == 1


def test_without_the_extra_a_clear_message(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "kubernetes", None)  # what an environment without it sees
    status, _, err = run(["explain", "--kubeconfig", str(tmp_path / "k")])
    assert status == 2
    assert err == ("kueue-provreq: error: reading a cluster needs the Kubernetes client: "
                   "pip install 'kueue-provreq[cluster]'\n")


# --- audit ----------------------------------------------------------------------------------------------


def test_audit_of_a_healthy_cluster_is_clean(healthy: tuple[RecordedAPIServer, Path]) -> None:
    _, kubeconfig = healthy
    status, out, err = run(["audit", "--kubeconfig", str(kubeconfig), "--at", AT])
    assert (status, out, err) == (0, "0 errors, 0 warnings\n", "")


def test_audit_names_each_offending_object(tmp_path: Path) -> None:
    """An hour after the recording (Kueue and the garbage collector stopped, record.py)."""
    with serve("troubled") as server:
        status, out, _ = run(["audit", "--kubeconfig", str(server.kubeconfig(tmp_path)), "--at", LATER])
    assert status == 1
    lines = out.splitlines()
    warnings = sum(line.startswith("warning") for line in lines)  # the stuck work of each recording
    assert lines[-1] == f"4 errors, {warnings} warnings" and warnings >= 8
    errors = [(line.split(": ", 1)[0], line.rsplit("[", 1)[1].rstrip("]")) for line in lines
              if line.startswith("error")]
    first, second = request("troubled", "train-g", 1), request("troubled", "train-g", 2)
    assert errors == [
        (f"error   ProvisioningRequest ml/{named('troubled', 'ProvisioningRequest', 'job-old-f-')}",
         "orphaned-request"),
        (f"error   ProvisioningRequest ml/{first}", "duplicate-live-requests"),
        (f"error   ProvisioningRequest ml/{second}", "duplicate-live-requests"),
        (f"error   Workload ml/{workload('troubled', 'serve-e')}", "admitted-check-not-ready"),
    ]
    # the two live requests each name the other
    duplicate = [line for line in lines if "duplicate-live-requests" in line]
    assert all(f"{first}, {second}" in line for line in duplicate)


def test_audit_json_and_thresholds(tmp_path: Path) -> None:
    with serve("troubled") as server:
        kubeconfig = str(server.kubeconfig(tmp_path))
        status, out, _ = run(["audit", "--kubeconfig", kubeconfig, "--at", LATER, "-o", "json"])
        assert status == 1
        findings = json.loads(out)["findings"]
        assert set(findings[0]) == {"severity", "rule", "object", "message"}
        assert {f["severity"] for f in findings} == {"error", "warning"}
        stuck = {f["rule"] for f in findings if f["severity"] == "warning"}
        assert stuck == {"cluster-queue-inactive", "check-config-missing", "managed-resources-unused",
                         "retry-overdue", "provisioned-check-pending", "quota-held-waiting"}
        # thresholds: a generous --overdue and --quota-wait silence the stuck-work warnings
        status, out, _ = run(["audit", "--kubeconfig", kubeconfig, "--at", LATER, "-o", "json",
                              "--overdue", "2h", "--quota-wait", "2h"])
        rules = {f["rule"] for f in json.loads(out)["findings"]}
        assert not rules & {"retry-overdue", "provisioned-check-pending", "quota-held-waiting"}
        status, _, err = run(["audit", "--kubeconfig", kubeconfig, "--overdue", "soon"])
        assert status == 2 and err.startswith("kueue-provreq: error: --overdue: ")


def test_a_forbidden_owner_kind_is_not_judged(tmp_path: Path) -> None:
    """Without PodTemplates the audit still runs, says what it could not read, and judges the rest."""
    with serve("restricted") as server:
        status, out, err = run(["audit", "--kubeconfig", str(server.kubeconfig(tmp_path)), "--at", AT])
    assert status == 0 and out == "0 errors, 0 warnings\n"
    assert err.startswith("kueue-provreq: warning: cannot list podtemplates: forbidden; skipped")


def test_source_options_are_checked(tmp_path: Path) -> None:
    status, _, err = run(["audit", "-f", str(tmp_path), "--context", "x"])
    assert status == 2 and err == "kueue-provreq: error: --context needs --kubeconfig\n"
    status, _, err = run(["audit", "-f", "x", "--kubeconfig", "y"])
    assert status == 2 and "not allowed with argument" in err


# --- explain on live state ------------------------------------------------------------------------------


def test_explain_says_what_a_waiting_workload_waits_for(healthy: tuple[RecordedAPIServer, Path]) -> None:
    _, kubeconfig = healthy
    status, out, _ = run(["explain", "--kubeconfig", str(kubeconfig), "--at", AT])
    assert status == 0
    waits = out[out.index("WAITS FOR"):out.index("NEXT")]
    train_b, tune_d = workload("healthy", "train-b"), workload("healthy", "tune-d")
    assert (f"  workload ml/{train_b} (Job ml/train-b)\n"
            f"    ProvisioningRequest ml/{request('healthy', 'train-b', 2)} (check gpu-capacity, attempt 2 of 4): "
            "Accepted=True (Accepted: ProvisioningRequest is accepted by ClusterAutoscaler), ") in waits
    assert ("    next: Cluster Autoscaler answers: Provisioned=True makes check gpu-capacity Ready; Failed=True "
            "puts check gpu-capacity in Retry: attempt 3 of 4 after a 40s backoff\n") in waits
    # tune-d's first attempt failed; the real Kueue holds its quota in Retry until its requeueAt
    assert f"  workload ml/{tune_d} (Job ml/tune-d)\n    check gpu-capacity Retry: Retrying after failure" in waits
    assert "to release its quota, then queued again; attempt 2 of 4 once quota is reserved again" in waits
    assert "quota: position 1 of 1 in ClusterQueue gpu-queue; last try: couldn't assign flavors" in waits
    assert f"  workload controller, Workload ml/{tune_d}:\n    requeue after " in out[out.index("NEXT"):]
    status, out, _ = run(["explain", "--kubeconfig", str(kubeconfig), "--at", AT, "-o", "json"])
    wait = next(w for w in json.loads(out)["waits"] if w["job"] == "ml/train-b")
    assert wait["workload"] == f"ml/{train_b}" and len(wait["waitsFor"]) == 1


def test_one_namespace_reads_namespaced_kinds_there_only(tmp_path: Path) -> None:
    """-n ml: namespaced kinds through /namespaces/ml/..., cluster-scoped ones as before."""
    exchanges = json.loads((DATA / "healthy" / "apiserver.json").read_text())["exchanges"]
    namespaced = {r.plural for r in RESOURCES.values() if r.namespaced}
    for ex in exchanges:
        prefix, plural = ex["request"]["path"].rsplit("/", 1)
        if plural in namespaced:
            ex["request"]["path"] = f"{prefix}/namespaces/ml/{plural}"
    with RecordedAPIServer(exchanges) as server:
        status, out, _ = run(["audit", "--kubeconfig", str(server.kubeconfig(tmp_path)), "-n", "ml", "--at", AT])
    assert (status, out) == (0, "0 errors, 0 warnings\n")
    assert server.unexpected == []
    assert {r.path for r in server.requests if "/namespaces/" in r.path} == {
        "/apis/kueue.x-k8s.io/v1beta2/namespaces/ml/localqueues", "/apis/batch/v1/namespaces/ml/jobs",
        "/apis/jobset.x-k8s.io/v1alpha2/namespaces/ml/jobsets", "/apis/kubeflow.org/v1/namespaces/ml/pytorchjobs",
        "/apis/kueue.x-k8s.io/v1beta2/namespaces/ml/workloads",
        "/apis/autoscaling.x-k8s.io/v1/namespaces/ml/provisioningrequests", "/api/v1/namespaces/ml/podtemplates"}


def test_forecast_runs_a_live_cluster_forward(healthy: tuple[RecordedAPIServer, Path]) -> None:
    """forecast takes --kubeconfig as explain does: tune-d's failed attempt is retried at its
    requeueAt and the second one, provisioned at once, admits it; train-b's second attempt is
    provisioned at once."""
    _, kubeconfig = healthy
    status, out, _ = run(["forecast", "--kubeconfig", str(kubeconfig), "--at", AT, "-o", "json"])
    assert status == 0
    forecast = {w["name"]: w for w in json.loads(out)["workloads"]}
    tune = forecast[workload("healthy", "tune-d")]
    requeue_at = next(i for i in items("healthy") if i["metadata"]["name"] == workload("healthy", "tune-d"))[
        "status"]["requeueState"]["requeueAt"]
    assert (tune["outcome"], tune["admittedAt"], tune["attempts"]) == ("Admitted", requeue_at, 2)
    assert forecast[workload("healthy", "train-b")]["admittedAt"] == AT
