"""``kueue-provreq conform`` and ``run``, in process; and every command through its real entry
points (the installed script, ``python -m``) in a few subprocess smoke tests."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from builders import A_WORKLOAD_EXISTS as PASSING
from builders import cli

SCRIPT = Path(sys.executable).with_name("kueue-provreq")

FAILING = PASSING.replace("a workload exists", "a wrong count").replace(
    "  - expect:", "  - expect: {count: {Workload: 2}}\n  - expect:")


def real(*args: str, via: str = "script") -> subprocess.CompletedProcess[str]:
    """The installed script, or ``python -m kueue_provreq``, in a subprocess."""
    command = {"script": [str(SCRIPT)], "module": [sys.executable, "-m", "kueue_provreq"]}[via]
    return subprocess.run([*command, *args], capture_output=True, text=True, timeout=120)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "ok.yaml").write_text(PASSING)
    (tmp_path / "nested").mkdir()
    (tmp_path / "nested" / "bad.yaml").write_text(FAILING)
    return tmp_path


# --- smoke tests through the real entry points --------------------------------------------------


@pytest.mark.parametrize("via", ["script", "module"])
def test_the_entry_points_answer(via: str) -> None:
    out = real("--help", via=via)
    assert out.returncode == 0, out.stderr
    assert "usage: kueue-provreq" in out.stdout


def test_a_real_conform_run_prints_its_verdicts(folder: Path) -> None:
    out = real("conform", str(folder))
    assert (out.returncode, out.stdout.splitlines()[-1], out.stderr) == (1, "1 passed, 1 failed", "")


def test_debug_shows_the_traceback() -> None:
    out = real("run", "/nonexistent.yaml", "--debug")
    assert out.returncode != 0
    assert "Traceback" in out.stderr and "NoSuchPath" in out.stderr


# --- in process --------------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["conform", "run"])
def test_help(command: str) -> None:
    out = cli(command, "--help")
    assert out.returncode == 0, out.stderr
    assert "usage:" in out.stdout


def test_conform_prints_a_line_per_scenario_and_a_summary(folder: Path) -> None:
    out = cli("conform", str(folder))
    assert out.returncode == 1
    assert out.stdout.splitlines() == [
        "FAIL a wrong count: step 2: count.Workload: expected 2, got 1",
        "PASS a workload exists",
        "1 passed, 1 failed",
    ]
    assert out.stderr == ""


def test_conform_exits_0_when_everything_passes(folder: Path) -> None:
    out = cli("conform", str(folder / "ok.yaml"))
    assert (out.returncode, out.stdout) == (0, "PASS a workload exists\n1 passed, 0 failed\n")


def test_an_invalid_scenario_is_a_fail_line_not_an_error(tmp_path: Path) -> None:
    (tmp_path / "typo.yaml").write_text(PASSING.replace("setQuotaReservation", "setQuotaReservaton"))
    out = cli("conform", str(tmp_path))
    assert out.returncode == 1
    assert out.stdout.splitlines()[0].startswith(
        f"FAIL a workload exists: step 1: {tmp_path / 'typo.yaml'}:8: Scenario a workload exists: "
        'steps[0].setQuotaReservaton: unknown step kind, did you mean "setQuotaReservation"?')


@pytest.mark.parametrize("args", [["conform", "/nonexistent"], ["run", "/nonexistent.yaml"], ["conform"],
                                  ["frobnicate"], ["run", "x.yaml", "--format", "xml"]])
def test_bad_input_is_one_line_on_stderr_and_status_2(args: list[str]) -> None:
    out = cli(*args)
    assert out.returncode == 2
    assert len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert out.stderr.startswith("kueue-provreq")


def test_conform_of_an_empty_folder_is_bad_input(tmp_path: Path) -> None:
    out = cli("conform", str(tmp_path))
    assert out.returncode == 2
    assert "no *.yaml scenario files" in out.stderr


def test_conform_refuses_a_quiet_of_no_time(folder: Path) -> None:
    """A settle that ends at once would judge the cluster before Kueue answered: refused
    before any cluster is reached."""
    out = cli("conform", str(folder), "--cluster", str(folder / "no-kubeconfig"), "--quiet", "0")
    assert out.returncode == 2
    assert out.stderr.strip().endswith("--quiet must be more than 0 seconds, not 0"), out.stderr


def test_run_prints_a_timeline(folder: Path) -> None:
    out = cli("run", str(folder / "ok.yaml"))
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("scenario: a workload exists")
    assert "[2024-01-01T00:00:00Z] step 1: quota reservation of Workload ns/wl set in ClusterQueue cq" in lines
    assert "    setQuotaReservation: updated Workload ns/wl" in lines
    assert "      Workload ns/wl: Pending -> QuotaReserved (reserve_quota)" in lines
    assert "    expectations met" in lines
    assert lines[-2:] == ["1 expectations met, 0 failed", "PASS a workload exists"]


def test_run_of_a_failing_scenario_goes_on_and_exits_1(folder: Path) -> None:
    out = cli("run", str(folder / "nested" / "bad.yaml"))
    assert out.returncode == 1
    assert "    expectation failed: count.Workload: expected 2, got 1" in out.stdout
    assert out.stdout.splitlines()[-2:] == [
        "1 expectations met, 1 failed", "FAIL a wrong count: step 2: count.Workload: expected 2, got 1"]


def test_run_of_an_invalid_scenario_is_bad_input(tmp_path: Path) -> None:
    path = tmp_path / "typo.yaml"
    path.write_text(PASSING.replace("objects:", "objectz:"))
    out = cli("run", str(path))
    assert out.returncode == 2
    # both typos at once (the header's objects and the expectation's), each with its file, line and path
    assert out.stderr.splitlines() == [
        f'kueue-provreq: error: {path}:2: Scenario a workload exists: objectz: unknown field, did you mean '
        '"objects"? (known: clock, config, description, faults, name, objects, steps)',
        f'kueue-provreq: error: {path}:10: Scenario a workload exists: steps[1].expect.objectz: unknown field, '
        'did you mean "objects"? (known: absent, count, events, exactEvents, metrics, objects)']


def test_run_jsonl_is_one_json_object_per_line(folder: Path) -> None:
    out = cli("run", str(folder / "ok.yaml"), "--format", "jsonl")
    assert out.returncode == 0, out.stderr
    records = [json.loads(line) for line in out.stdout.splitlines()]
    assert [r["record"] for r in records] == ["scenario", "step", "effect", "phase", "step", "expect", "result"]
    effect = records[2]
    assert (effect["actor"], effect["verb"], effect["kind"], effect["namespace"], effect["name"]) == \
        ("setQuotaReservation", "updated", "Workload", "ns", "wl")
    assert effect["object"]["status"]["admission"]["clusterQueue"] == "cq"
    assert records[3] == {"record": "phase", "step": 1, "namespace": "ns", "name": "wl",
                          "from": "Pending", "to": "QuotaReserved", "trigger": "reserve_quota"}
    assert records[-1]["passed"] is True
