"""The local control plane with the real Kueue (``kueue-provreq testbed``), built by ``make oracle``:
it starts, it runs Kueue for real, and ``down`` leaves no process behind.  Skipped, with the
reason, on a machine where ``make oracle`` has not built the programs."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from kueue_provreq import cli
from kueue_provreq.api import constants as c
from kueue_provreq.autoscaler import parse_script
from kueue_provreq.cluster import client
from kueue_provreq.cluster.autoscaler import StandIn
from kueue_provreq.cluster.resources import RESOURCES
from kueue_provreq.cluster.testbed import controlplane, processes

EXAMPLES = Path(__file__).parents[1] / "examples" / "kind"


def _oracle() -> controlplane.Oracle:
    try:
        return controlplane.find_oracle()
    except client.ClusterError as e:
        pytest.skip(f"no real Kueue: {e}")


def _cmdlines_mentioning(text: str) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if text in cmdline and int(entry.name) != os.getpid():
                pids.append(int(entry.name))
    return pids


def test_up_status_down_through_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    oracle = _oracle()
    state = tmp_path / "state"
    kubeconfig = tmp_path / "kubeconfig"
    assert cli.main(["testbed", "up", "--bin", str(oracle.bin), "--state", str(state),
                     "--kubeconfig-out", str(kubeconfig)]) == 0
    out = capsys.readouterr()
    assert out.out.strip() == str(kubeconfig)  # only the path on standard output: scripts read it
    assert "ready in" in out.err
    recorded = json.loads((state / controlplane.STATE_FILE).read_text())
    pids = [p["pid"] for p in recorded["processes"]]
    assert [p["name"] for p in recorded["processes"]] == list(controlplane.PROGRAMS)
    try:
        with client.connect(str(kubeconfig)) as api:  # the kubeconfig written reaches the server
            api.list(RESOURCES[c.CLUSTER_QUEUE])
        assert cli.main(["testbed", "status", "--state", str(state)]) == 0
        status = capsys.readouterr().out
        assert all(f"{name}" in status for name in controlplane.PROGRAMS) and "NOT RUNNING" not in status
    finally:
        assert cli.main(["testbed", "down", "--state", str(state)]) == 0
    assert "stopped kueue, kube-controller-manager, kube-apiserver, etcd" in capsys.readouterr().out
    assert not state.exists()
    assert [pid for pid in pids if Path(f"/proc/{pid}").exists()
            and "Z" not in (Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[:1])] == []
    assert _cmdlines_mentioning(str(state)) == []
    assert cli.main(["testbed", "status", "--state", str(state)]) == 1
    assert "none at" in capsys.readouterr().out


def test_up_without_the_programs_says_how_to_build_them(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # a control plane that cannot be had is bad input, as a cluster that cannot be read is
    assert cli.main(["testbed", "up", "--bin", str(tmp_path / "bin"), "--state", str(tmp_path / "s")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("kueue-provreq: error: ") and "make oracle" in err
    assert len(err.splitlines()) == 1


def _create_all(api: client.Client, path: Path, namespace: str) -> list[dict[str, Any]]:
    created = []
    for doc in yaml.safe_load_all(path.read_text()):
        if not doc:
            continue
        res = RESOURCES[doc["kind"]]
        if res.namespaced:
            doc["metadata"]["namespace"] = namespace
        created.append(api.create(res, namespace if res.namespaced else "", doc, "test"))
    return created


def _wait(what: str, probe: Any, timeout: float = 90.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = probe()
        if found:
            return found
        time.sleep(0.2)
    raise AssertionError(f"not in {timeout:.0f} s: {what}")


def test_the_kind_example_end_to_end_on_the_real_kueue(testbed: controlplane.Testbed) -> None:
    """examples/kind: a Job labelled with a LocalQueue gets its Workload from the real Kueue, the
    Workload its ProvisioningRequest, and the stand-in's answer gets the Job admitted and started."""
    with client.connect(testbed.kubeconfig) as api:
        api.create(controlplane.NAMESPACE, "", {"apiVersion": "v1", "kind": "Namespace",
                                                "metadata": {"name": "kind-story"}}, "test")
        setup = EXAMPLES / "setup.yaml"
        (local_queue,) = [d for d in yaml.safe_load_all(setup.read_text()) if d and d["kind"] == c.LOCAL_QUEUE]
        _create_all(api, setup, "kind-story")
        (job,) = _create_all(api, EXAMPLES / "job.yaml", "kind-story")
        assert job["metadata"]["labels"][c.LABEL_QUEUE_NAME] == local_queue["metadata"]["name"]
        jobs = RESOURCES[c.JOB]

        def workload() -> dict[str, Any] | None:
            for wl in api.list(RESOURCES[c.WORKLOAD], "kind-story").items:
                if any(ref["uid"] == job["metadata"]["uid"] for ref in wl["metadata"].get("ownerReferences", ())):
                    return wl
            return None

        _wait("the Job's Workload", workload)
        _wait("a ProvisioningRequest", lambda: api.list(RESOURCES[c.PROVISIONING_REQUEST], "kind-story").items)
        assert api.get(jobs, "kind-story", job["metadata"]["name"])["spec"]["suspend"] is True

        stand_in = StandIn(api, parse_script("provision"), "kind-story", time.time)
        answering = threading.Thread(target=stand_in.run, args=(time.time() + 30,), daemon=True)
        answering.start()
        _wait("the Job started", lambda: api.get(jobs, "kind-story", job["metadata"]["name"])["spec"]["suspend"]
              is False)
        answering.join()
        wl = workload()
        assert wl is not None
        conditions = {cd["type"]: cd["status"] for cd in wl["status"]["conditions"]}
        assert conditions[c.WORKLOAD_ADMITTED] == "True" and conditions[c.WORKLOAD_QUOTA_RESERVED] == "True"
        (request,) = api.list(RESOURCES[c.PROVISIONING_REQUEST], "kind-story").items
        assert {cd["type"]: cd["status"] for cd in request["status"]["conditions"]}[c.PR_PROVISIONED] == "True"


def test_a_gate_the_release_lacks_is_left_out_at_the_value_it_behaves_as(tmp_path: Path) -> None:
    """KeepQuotaForProvReqRetry: false asks for what v0.19.2 does anyway (it has no such gate, and
    refuses to start with one it does not know); true is passed on, for Kueue to refuse."""
    ports = {"kueue-health": 1, "kueue-metrics": 2, "kueue-webhook": 3}
    off = controlplane.kueue_configuration(ports, tmp_path, {"featureGates": {"KeepQuotaForProvReqRetry": False}})
    on = controlplane.kueue_configuration(ports, tmp_path, {"featureGates": {"KeepQuotaForProvReqRetry": True}})
    assert "KeepQuotaForProvReqRetry" not in off["featureGates"]
    assert on["featureGates"]["KeepQuotaForProvReqRetry"] is True


def test_a_program_that_stops_is_explained_by_its_last_logged_error(tmp_path: Path) -> None:
    """Kueue logs its whole configuration just before it refuses a gate: a skip reason carries
    the error, not the dump."""
    log = tmp_path / "kueue.log"
    log.write_text("\n".join(json.dumps(entry) for entry in (
        {"level": "info", "msg": "Configuration loaded", "config": "apiVersion: config.kueue.x-k8s.io/v1beta2 ..."},
        {"level": "error", "msg": "conflicting feature gates detected",
         "error": "featureGates: unrecognized feature gate: KeepQuotaForProvReqRetry", "stacktrace": "main.main ..."},
        {"level": "info", "msg": "shutting down server"},
    )) + "\n")
    assert processes.log_tail(log) == \
        "conflicting feature gates detected: featureGates: unrecognized feature gate: KeepQuotaForProvReqRetry"
    plain = tmp_path / "apiserver.log"
    plain.write_text("E1207 starting\nI1207 listening\n")
    assert processes.log_tail(plain) == "E1207 starting | I1207 listening"
    assert processes.log_tail(tmp_path / "absent.log") == "(no log)"
