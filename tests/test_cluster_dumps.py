"""explain and audit on what ``kubectl get ... -A -o json|yaml`` prints (the sample dumps of
tests/data/cluster), through the CLI as a user runs it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from builders import cli

DATA = Path(__file__).parent / "data" / "cluster"
SKIPPED = ("kueue-provreq: skipped 8 objects of kinds the model does not use: 1 ConfigMap (v1), "
           "1 Deployment (apps/v1), 1 Event (v1), 4 Pod (v1), 1 Service (v1)\n")


def run(argv: list[str]) -> tuple[int, str, str]:
    """The command in process (tests/builders.py): exit status, stdout, stderr."""
    done = cli(*argv)
    return done.returncode, done.stdout, done.stderr


@pytest.mark.parametrize("dump", ["dump.json", "dump.yaml"])
def test_a_healthy_cluster_audits_clean(dump: str) -> None:
    assert run(["audit", "-f", str(DATA / "healthy" / dump)]) == (0, "0 errors, 0 warnings\n", SKIPPED)


def test_strict_fails_on_warnings_alone() -> None:
    """train-b has held quota for 52 s at the dump's time: a warning with --quota-wait 50s."""
    argv = ["audit", "-f", str(DATA / "healthy" / "dump.json"), "--quota-wait", "50s"]
    status, out, _ = run(argv)
    assert (status, out.splitlines()[-1]) == (0, "0 errors, 1 warning")
    assert run([*argv, "--strict"])[:2] == (1, out)


def test_json_and_yaml_dumps_audit_alike() -> None:
    as_json = run(["audit", "-f", str(DATA / "troubled" / "dump.json"), "-o", "json"])
    as_yaml = run(["audit", "-f", str(DATA / "troubled" / "dump.yaml"), "-o", "json"])
    assert as_json[0] == 1 and as_json == as_yaml


def troubled_with(tmp_path: Path, *prefixes: str) -> Path:
    """The healthy dump plus the troubled cluster's objects whose names start with a prefix."""
    healthy = json.loads((DATA / "healthy" / "dump.json").read_text())
    troubled = json.loads((DATA / "troubled" / "dump.json").read_text())["items"]
    healthy["items"] += [i for i in troubled if i["metadata"]["name"].startswith(prefixes)
                         and i["kind"] != "Event"]
    path = tmp_path / "dump.json"
    path.write_text(json.dumps(healthy))
    return path


@pytest.mark.parametrize(("prefixes", "offenders"), [
    (("serve-e", "job-serve-e", "ppt-job-serve-e"), ["Workload ml/job-serve-e-51cd2"]),
    (("job-old-f-2052c-gpu-capacity-1",), ["ProvisioningRequest ml/job-old-f-2052c-gpu-capacity-1"]),
    (("train-g", "job-train-g", "ppt-job-train-g"), ["ProvisioningRequest ml/job-train-g-88ed5-gpu-capacity-1",
                                                     "ProvisioningRequest ml/job-train-g-88ed5-gpu-capacity-2"]),
], ids=["admitted-check-pending", "orphaned-request", "two-live-requests"])
def test_each_broken_dump_exits_1_naming_its_objects(prefixes: tuple[str, ...], offenders: list[str],
                                                     tmp_path: Path) -> None:
    status, out, _ = run(["audit", "-f", str(troubled_with(tmp_path, *prefixes)), "-o", "json"])
    errors = [f["object"] for f in json.loads(out)["findings"] if f["severity"] == "error"]
    assert (status, errors) == (1, offenders)


def test_explain_names_the_request_its_message_and_the_attempt() -> None:
    """train-b waits behind its second attempt; the clock is the dump's newest time."""
    status, out, err = run(["explain", "-f", str(DATA / "healthy" / "dump.yaml")])
    assert status == 0 and err == SKIPPED
    assert out.startswith("at 2026-11-20T10:00:00Z (the newest time the inputs record; --at sets another)\n")
    assert ("ProvisioningRequest ml/job-train-b-9fa8c-gpu-capacity-2 (check gpu-capacity, attempt 2 of 4): "
            "Accepted=True (Accepted: ProvisioningRequest is accepted by ClusterAutoscaler), just now") in out
    status, out, _ = run(["explain", "-f", str(DATA / "healthy" / "dump.yaml"), "--at", "2026-11-20T10:05:00Z"])
    assert out.startswith("at 2026-11-20T10:05:00Z (given by --at)\n") and "5m0s ago" in out


def test_explain_flags_what_audit_finds_in_the_same_dump() -> None:
    """One voice: the Admitted-while-check-Pending workload audit reports is flagged by explain."""
    dump = str(DATA / "troubled" / "dump.yaml")
    _, audited, _ = run(["audit", "-f", dump])
    _, explained, _ = run(["explain", "-f", dump])
    section = explained[explained.index("AUDIT (as kueue-provreq audit finds it)\n"):explained.index("\nNEXT\n")]
    assert "Workload ml/job-serve-e-51cd2: Admitted=True while check gpu-capacity is Pending" in section
    assert [line.strip() for line in section.splitlines()[1:]] == audited.splitlines()[:-1]
