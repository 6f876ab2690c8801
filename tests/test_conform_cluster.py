"""``conform --cluster``: the conformance runner drives a real cluster that runs Kueue.

The driver's translation (names, uids, timestamps, metrics text) is checked without a cluster;
the end-to-end tests run scenarios on the testbed's real Kueue (skipped, with the reason, where
``make oracle`` has not built it)."""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Any

import pytest
from kueue_provreq.api import naming
from kueue_provreq.cli import main
from kueue_provreq.cluster.conform import ClusterDriver, _Epoch, _Written, new_suffix, parse_prometheus
from kueue_provreq.cluster.resources import RESOURCES
from kueue_provreq.cluster.testbed import controlplane
from kueue_provreq.conformance.runner import load_scenarios, needs_of
from kueue_provreq.conformance.scenario import Scenario
from kueue_provreq.driver import NEED_RECONCILE, Needs

SPECS = Path(__file__).parents[1] / "specs"


class _Session:
    """What a driver needs of a session, without a cluster."""

    client: Any = None
    metrics_url = None

    def register(self, driver: ClusterDriver) -> str:
        return "-kqzt"

    def unregister(self, suffix: str) -> None:
        pass


def _driver() -> ClusterDriver:
    driver = ClusterDriver(_Session(), sleep=lambda seconds: None)  # type: ignore[arg-type]
    driver._scenario_namespaces = frozenset({"ns", "default"})
    driver._cluster_names = frozenset({"cq", "check1"})
    return driver


def test_suffixes_hold_no_hexadecimal_digit() -> None:
    rng = random.Random(7)
    for _ in range(200):
        suffix = new_suffix(rng)
        assert suffix.startswith("-k") and len(suffix) == 6
        assert not set(suffix[2:]) & set("0123456789abcdef")


def test_names_go_out_with_the_suffix_and_come_back_without_it() -> None:
    d = _driver()
    d.epochs = [_Epoch(1_800_000_000, 1_704_067_200.0)]
    out = d._out({"metadata": {"namespace": "ns", "name": "lq"}, "spec": {"clusterQueue": "cq"}},
                 d._cluster_names)
    assert out == {"metadata": {"namespace": "ns-kqzt", "name": "lq"}, "spec": {"clusterQueue": "cq-kqzt"}}
    # a name Kueue derives from a suffixed one, and a message naming it, read as the model writes them
    back = d._back({"name": "wl-check1-kqzt-1", "message": 'Created ProvisioningRequest: "wl-check1-kqzt-1"'})
    assert back == {"name": "wl-check1-1", "message": 'Created ProvisioningRequest: "wl-check1-1"'}


def test_uids_and_workload_names_read_as_the_model_gives_them() -> None:
    d = _driver()
    d.epochs = [_Epoch(1_800_000_000, 1_704_067_200.0)]
    d._map_uid("9b1deb4d-3b7d-4bad-9bdd-2b0d7b3dcb6d", None)
    assert d.uids == {"9b1deb4d-3b7d-4bad-9bdd-2b0d7b3dcb6d": "00000000-0000-4000-8000-000000000001"}
    real_uid, model_uid = "9b1deb4d-3b7d-4bad-9bdd-2b0d7b3dcb6d", "00000000-0000-4000-8000-000000000001"
    real_name = naming.workload_name_for_owner("Job", "batch", "train", real_uid)
    d._name_workload("Workload", {"metadata": {"name": real_name, "ownerReferences": [
        {"apiVersion": "batch/v1", "kind": "Job", "name": "train", "uid": real_uid, "controller": True}]}})
    # the name Kueue derives from the real uid reads as the one the model derives from its own
    assert d.names == {real_name: naming.workload_name_for_owner("Job", "batch", "train", model_uid)}
    assert d._back("00000000 owner 9b1deb4d-3b7d-4bad-9bdd-2b0d7b3dcb6d") == \
        "00000000 owner 00000000-0000-4000-8000-000000000001"
    # on the way out, the model's uid becomes the real one again (an ownerReference in a world object)
    assert d._out("00000000-0000-4000-8000-000000000001", frozenset()) == "9b1deb4d-3b7d-4bad-9bdd-2b0d7b3dcb6d"


def test_timestamps_read_on_the_scenario_clock() -> None:
    d = _driver()
    start, clock = 1_800_000_000, 1_704_067_200.0
    d.epochs = [_Epoch(start, clock), _Epoch(start + 5, clock + 60)]
    assert d._to_scenario(start + 2, None) == clock  # written during the first period
    assert d._to_scenario(start + 7, None) == clock + 60  # after the advance of 60 s
    assert d._to_scenario(start - 30, None) == clock - 30  # given in the world, before the start
    # a deadline later than the write: the clock of the period of its origin plus the distance,
    # the origin being the object's latest time before the write (a settle's real seconds later)
    assert d._to_scenario(start + 7 + 120, _Written(start + 9, start + 7, {})) == clock + 60 + 120
    # ... or the transition time of a check it was counted from (requeueAfterSeconds later)
    assert d._to_scenario(start + 2 + 60, _Written(start + 9, start + 7, {start + 62: start + 2})) == clock + 60
    assert d._to_real(clock + 90) == start + 90


def test_waits_in_event_messages_read_on_the_scenario_clock() -> None:
    """Reserved in the first period, admitted 20 scenario seconds later after a real wait of
    20 s plus the settles' 3.4 s: the message says what the model says, 20s."""
    d = _driver()
    start, clock = 1_800_000_000, 1_704_067_200.0
    d.epochs = [_Epoch(start, clock), _Epoch(start + 3, clock + 20)]
    d._record_event({"metadata": {"name": "e1"}, "type": "Normal", "reason": "Admitted",
                     "eventTime": "2027-01-15T08:00:23.400000Z",  # start + 23.4
                     "message": "Admitted by ClusterQueue cq-kqzt, wait time since reservation was 23s",
                     "involvedObject": {"kind": "Workload", "namespace": "ns-kqzt", "name": "wl"}})
    assert d._events[0]["message"] == "Admitted by ClusterQueue cq-kqzt, wait time since reservation was 20s"


class _Writes:
    """A client that records the status writes a driver makes."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, dict[str, Any]]] = []

    def apply(self, res: Any, namespace: str, name: str, body: dict[str, Any], field_manager: str,
              subresource: str = "") -> dict[str, Any]:
        self.calls.append(("apply", field_manager, body))
        return body

    def patch(self, res: Any, namespace: str, name: str, body: dict[str, Any], field_manager: str,
              subresource: str = "") -> dict[str, Any]:
        self.calls.append(("patch", field_manager, body))
        return body


def test_a_workload_status_is_applied_as_kueue_admission_writes_it() -> None:
    """Kueue releases a quota reservation by a server-side apply without ``admission``, which
    removes the field only from its own: a Workload's status goes in as ``kueue-admission``'s
    apply (conditional on the version read), another kind's as the driver's merge patch."""
    d = _driver()
    writes = _Writes()
    d.client = writes  # type: ignore[assignment]
    status = {"admission": {"clusterQueue": "cq-kqzt"}}
    d._write_status(RESOURCES["Workload"], {"metadata": {"namespace": "ns-kqzt", "name": "wl",
                                                          "resourceVersion": "7"}}, status)
    d._write_status(RESOURCES["ProvisioningRequest"], {"metadata": {"namespace": "ns-kqzt", "name": "pr",
                                                                     "resourceVersion": "8"}}, {"conditions": []})
    assert writes.calls == [
        ("apply", "kueue-admission", {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
                                      "metadata": {"resourceVersion": "7", "name": "wl", "namespace": "ns-kqzt"},
                                      "status": status}),
        ("patch", "kueue-provreq-conform", {"status": {"conditions": []}, "metadata": {"resourceVersion": "8"}}),
    ]


def test_prometheus_text_is_read_into_samples() -> None:
    text = ('# HELP kueue_evicted_workloads_total x\n# TYPE kueue_evicted_workloads_total counter\n'
            'kueue_evicted_workloads_total{cluster_queue="cq-kqzt",reason="Deactivated"} 2\n'
            'kueue_pending_workloads{cluster_queue="a \\"b\\"",status="active"} 0\n')
    assert list(parse_prometheus(text)) == [
        ("kueue_evicted_workloads_total", {"cluster_queue": "cq-kqzt", "reason": "Deactivated"}, 2.0),
        ("kueue_pending_workloads", {"cluster_queue": 'a "b"', "status": "active"}, 0.0)]


def _scenario(path: str) -> Scenario:
    (scenario,) = load_scenarios(SPECS / path)
    assert isinstance(scenario, Scenario)
    return scenario


def test_the_driver_refuses_what_only_the_model_can_do() -> None:
    d = _driver()
    assert d.refuses(Needs(frozenset({NEED_RECONCILE}))) == "a single controller's reconcile is the model's alone"
    assert "300s" in (d.refuses(Needs(advance=300.0)) or "")
    assert d.refuses(Needs(bare_workloads=((("Workload", "ns", "wl"), 2),))) is not None
    assert d.refuses(needs_of(_scenario("jobs/job-gets-workload-admitted-and-started.yaml"))) is None


def test_conform_on_the_real_kueue(testbed: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """One scenario passes on the real Kueue, one it cannot run is skipped with the reason, and
    the closing line counts all three kinds."""
    started = time.monotonic()
    status = main(["conform", "--cluster", testbed.kubeconfig,
                   str(SPECS / "jobs" / "job-gets-workload-admitted-and-started.yaml"),
                   str(SPECS / "provisioning" / "bad-parameters-ref-reconcile-error.yaml")])
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("PASS a Job gets its Workload"), out
    assert out[1].startswith("SKIP ") and out[1].endswith("a single controller's reconcile is the model's alone")
    assert out[-1] == "1 passed, 0 failed, 1 skipped"
    assert status == 0
    assert time.monotonic() - started < 120


#: The scenarios of specs/ CI runs on the real Kueue (at most 20, none with a Kueue config, so no
#: restart): each passes there as on the model.  ``make test-oracle`` runs all of them.
ON_THE_REAL_KUEUE = (
    "admissioncheck/active.yaml", "admissioncheck/clusterqueue-missing-check.yaml",
    "jobs/job-gets-workload-admitted-and-started.yaml", "jobs/job-without-queue-name-is-not-managed.yaml",
    "jobs/pytorchjob-master-and-worker.yaml", "jobs/default-local-queue.yaml",
    "preemption/fungibility-try-next-flavor.yaml",
    "provisioning/accepted-eta-then-none.yaml", "provisioning/cleanup-on-eviction.yaml",
    "provisioning/cleanup-on-finish.yaml", "provisioning/config-deleted-request-removed.yaml",
    "provisioning/flavor-node-labels-and-tolerations.yaml", "provisioning/failed-sets-retry.yaml",
    "provisioning/parameters-from-config-and-annotations.yaml", "provisioning/ready-check-request-not-recreated.yaml",
    "provisioning/request-created.yaml", "provisioning/provisioned-ready-with-pod-set-updates.yaml",
    "scheduler/best-effort-fifo-skips.yaml", "scheduler/order-by-priority.yaml", "scheduler/strict-fifo-blocks.yaml",
)


def test_fixed_scenarios_pass_on_the_real_kueue(testbed: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """The real Kueue agrees with the model on CI's fixed set of scenarios."""
    assert len(ON_THE_REAL_KUEUE) <= 20
    # 3 s of quiet, as the stories use: in the middle of make test, with four scenarios side by
    # side on two cores, Kueue once took longer than the driver's default 1.5 s to admit after
    # its previous write, and the settle ended before the admission (CI, 2026-12-07).
    status = main(["conform", "--cluster", testbed.kubeconfig, "--parallel", "4", "--quiet", "3",
                   *(str(SPECS / path) for path in ON_THE_REAL_KUEUE)])
    out = capsys.readouterr().out.splitlines()
    assert [line for line in out if not line.startswith("PASS ")] == [f"{len(ON_THE_REAL_KUEUE)} passed, 0 failed, 0 skipped"]
    assert status == 0


def test_a_config_restarts_kueue_and_leaves_one_running(testbed: Any, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """A scenario with a Kueue config runs after Kueue is restarted with it; afterwards Kueue runs
    again with the testbed's own Configuration, as one process, the one the testbed records."""
    scenario = tmp_path / "config.yaml"
    scenario.write_text(
        "name: a config restarts Kueue\n"
        "config: {waitForPodsReady: {timeout: 7m}}\n"
        "objects:\n"
        "- {apiVersion: kueue.x-k8s.io/v1beta2, kind: ResourceFlavor, metadata: {name: default}}\n"
        "steps:\n- settle: {}\n- expect: {count: {ResourceFlavor: 1}}\n")
    assert main(["conform", "--cluster", testbed.kubeconfig, str(scenario)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "1 passed, 0 failed, 0 skipped"
    recorded = controlplane.Testbed.load(Path(testbed.folder))
    assert recorded is not None
    kueue = recorded.process("kueue")
    running = [pid for pid in _pids_with(str(Path(testbed.folder) / controlplane.KUEUE_CONFIG))]
    assert running == [kueue.pid]
    assert "7m" not in Path(recorded.kueue_config).read_text()  # the testbed's own Configuration again


def _pids_with(text: str) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if text in cmdline and state != "Z":
                pids.append(int(entry.name))
    return pids
