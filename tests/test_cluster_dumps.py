"""explain and audit on what ``kubectl get ... -A -o json|yaml`` prints (the dumps of
tests/data/cluster, recorded from the real API server and Kueue), through the CLI as a user runs it."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from builders import cli
from recorded import DATA, RECORDING, named, request, workload


def skipped(cluster: str) -> str:
    events = sum(i["kind"] == "Event" for i in json.loads((DATA / cluster / "dump.json").read_text())["items"])
    return f"kueue-provreq: skipped {events} objects of kinds the model does not use: {events} Event (v1)\n"


SKIPPED = skipped("healthy")


def run(argv: list[str]) -> tuple[int, str, str]:
    """The command in process (tests/builders.py): exit status, stdout, stderr."""
    done = cli(*argv)
    return done.returncode, done.stdout, done.stderr


@pytest.mark.parametrize("dump", ["dump.json", "dump.yaml"])
def test_a_healthy_cluster_audits_clean(dump: str) -> None:
    assert run(["audit", "-f", str(DATA / "healthy" / dump)]) == (0, "0 errors, 0 warnings\n", SKIPPED)


def test_strict_fails_on_warnings_alone() -> None:
    """train-b and tune-d hold quota at the dump's time: warnings with --quota-wait 0s."""
    argv = ["audit", "-f", str(DATA / "healthy" / "dump.json"), "--quota-wait", "0s"]
    status, out, _ = run(argv)
    assert (status, out.splitlines()[-1]) == (0, "0 errors, 2 warnings")
    assert run([*argv, "--strict"])[:2] == (1, out)


def test_json_and_yaml_dumps_audit_alike() -> None:
    later = RECORDING["troubled"]["auditAt"]
    as_json = run(["audit", "-f", str(DATA / "troubled" / "dump.json"), "-o", "json", "--at", later])
    as_yaml = run(["audit", "-f", str(DATA / "troubled" / "dump.yaml"), "-o", "json", "--at", later])
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
    (("serve-e", "job-serve-e", "ppt-job-serve-e"), lambda: [f"Workload ml/{workload('troubled', 'serve-e')}"]),
    (("job-old-f",), lambda: [f"ProvisioningRequest ml/{named('troubled', 'ProvisioningRequest', 'job-old-f-')}"]),
    (("train-g", "job-train-g", "ppt-job-train-g"), lambda: [
        f"ProvisioningRequest ml/{request('troubled', 'train-g', 1)}",
        f"ProvisioningRequest ml/{request('troubled', 'train-g', 2)}"]),
], ids=["admitted-check-pending", "orphaned-request", "two-live-requests"])
def test_each_broken_dump_exits_1_naming_its_objects(prefixes: tuple[str, ...], offenders: Callable[[], list[str]],
                                                     tmp_path: Path) -> None:
    status, out, _ = run(["audit", "-f", str(troubled_with(tmp_path, *prefixes)), "-o", "json"])
    errors = [f["object"] for f in json.loads(out)["findings"] if f["severity"] == "error"]
    assert (status, errors) == (1, offenders())


def test_explain_names_the_request_its_message_and_the_attempt() -> None:
    """train-b waits behind its second attempt; the clock is the dump's newest time."""
    status, out, err = run(["explain", "-f", str(DATA / "healthy" / "dump.yaml")])
    assert status == 0 and err == SKIPPED
    newest = out.splitlines()[0].removeprefix("at ").removesuffix(" (the newest time the inputs record; --at sets another)")
    assert newest <= RECORDING["healthy"]["at"] and out.splitlines()[0] != f"at {newest}"
    assert (f"ProvisioningRequest ml/{request('healthy', 'train-b', 2)} (check gpu-capacity, attempt 2 of 4): "
            "Accepted=True (Accepted: ProvisioningRequest is accepted by ClusterAutoscaler)") in out
    later = RECORDING["troubled"]["auditAt"]
    status, out, _ = run(["explain", "-f", str(DATA / "healthy" / "dump.yaml"), "--at", later])
    assert out.startswith(f"at {later} (given by --at)\n") and "1h0m" in out


def test_explain_flags_what_audit_finds_in_the_same_dump() -> None:
    """One voice: the Admitted-while-check-Pending workload audit reports is flagged by explain."""
    dump = str(DATA / "troubled" / "dump.yaml")
    _, audited, _ = run(["audit", "-f", dump])
    _, explained, _ = run(["explain", "-f", dump])
    section = explained[explained.index("AUDIT (as kueue-provreq audit finds it)\n"):explained.index("\nNEXT\n")]
    assert f"Workload ml/{workload('troubled', 'serve-e')}: Admitted=True while check gpu-capacity is Pending" in section
    assert [line.strip() for line in section.splitlines()[1:]] == audited.splitlines()[:-1]
