"""How the commands take their input, in process: ``-f`` with ``--validate`` and ``--config``,
``run -`` and ``run DIR``, and what they say when given the other kind of file."""

from __future__ import annotations

import io
import textwrap
from pathlib import Path

import pytest
from kueue_provreq import cli

from builders import A_WORKLOAD_EXISTS

CQ_TYPO = textwrap.dedent("""\
    apiVersion: kueue.x-k8s.io/v1beta2
    kind: ClusterQueue
    metadata: {name: cq}
    spec: {admissionCheckStrategy: {admissionChecks: [{name: prov}]}}
""")
JOB_TYPO = textwrap.dedent("""\
    apiVersion: batch/v1
    kind: Job
    metadata: {name: j, namespace: default}
    spec:
      paralelism: 3
      template: {spec: {containers: [{name: c, image: x}], restartPolicy: Never}}
""")
PRC_TYPO = textwrap.dedent("""\
    apiVersion: kueue.x-k8s.io/v1beta2
    kind: ProvisioningRequestConfig
    metadata: {name: prc}
    spec: {provisioningClassName: check-capacity.autoscaling.x-k8s.io, managedResource: [nvidia.com/gpu]}
""")
CONFIG = textwrap.dedent("""\
    apiVersion: config.kueue.x-k8s.io/v1beta2
    kind: Configuration
    waitForPodsReady: {timeout: 5m, requeuingStrategy: {backoffLimitCount: 1}}
""")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = cli.main(list(argv))
    out = capsys.readouterr()
    return status, out.out, out.err


def write(tmp_path: Path, name: str, text: str) -> str:
    (tmp_path / name).write_text(text)
    return str(tmp_path / name)


@pytest.mark.parametrize(("text", "field"), [(CQ_TYPO, "spec.admissionCheckStrategy"),
                                             (JOB_TYPO, "spec.paralelism"),
                                             (PRC_TYPO, "spec.managedResource")])
def test_validate_rejects_each_misspelled_field(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                text: str, field: str) -> None:
    status, out, err = run(capsys, "validate", "-f", write(tmp_path, "x.yaml", text))
    assert (status, out) == (2, "")
    (line,) = err.splitlines()
    assert f": {field}: unknown field, did you mean" in line


def test_two_bad_files_are_at_least_two_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run(capsys, "validate", "-f", write(tmp_path, "a.yaml", CQ_TYPO),
                         "-f", write(tmp_path, "b.yaml", JOB_TYPO))
    lines = err.splitlines()
    assert status == 2 and len(lines) >= 2
    assert lines[0].startswith(f"kueue-provreq: error: {tmp_path}/a.yaml:4: ClusterQueue cq: ")
    assert lines[1].startswith(f"kueue-provreq: error: {tmp_path}/b.yaml:5: Job default/j: ")


def test_validate_warn_loads_with_a_warning_and_ignore_is_silent(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "x.yaml", JOB_TYPO)
    status, out, err = run(capsys, "validate", "-f", path, "--validate", "warn")
    assert (status, out) == (0, "valid Job default/j\n")
    assert err.startswith(f"kueue-provreq: warning: {path}:5: Job default/j: spec.paralelism: unknown field")
    assert run(capsys, "validate", "-f", path, "--validate=ignore") == (0, "valid Job default/j\n", "")
    assert run(capsys, "validate", "-f", path, "--validate=false") == (0, "valid Job default/j\n", "")
    assert run(capsys, "validate", "-f", path, "--validate=true")[0] == 2
    with pytest.raises(SystemExit):
        cli.main(["validate", "-f", path, "--validate=loose"])


def test_skipped_kinds_are_one_line_on_stderr(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dump = ("apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Pod, metadata: {name: p}}\n"
            "- {apiVersion: v1, kind: Node, metadata: {name: n}}\n"
            "- {apiVersion: kueue.x-k8s.io/v1beta2, kind: ResourceFlavor, metadata: {name: f}}\n")
    status, out, err = run(capsys, "validate", "-f", write(tmp_path, "dump.yaml", dump))
    assert (status, out) == (0, "valid ResourceFlavor f\n")
    assert err == "kueue-provreq: skipped 2 objects of kinds the model does not use: 1 Node (v1), 1 Pod (v1)\n"


def test_explain_takes_now_from_a_dump(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    flavor = ("apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\n"
              "metadata: {name: f, creationTimestamp: '2024-03-01T12:00:00Z'}\n")
    status, out, _ = run(capsys, "explain", "-f", write(tmp_path, "f.yaml", flavor), "-o", "json")
    assert status == 0 and '"at": "2024-03-01T12:00:00Z"' in out


def test_config_is_read_by_explain_validate_and_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = write(tmp_path, "config.yaml", CONFIG)
    flavor = write(tmp_path, "f.yaml", "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: f}\n")
    assert run(capsys, "validate", "-f", flavor, "--config", config)[0] == 0
    assert run(capsys, "explain", "-f", flavor, "--config", config, "--at", "2024-01-01T00:00:00Z")[0] == 0
    assert run(capsys, "run", write(tmp_path, "s.yaml", A_WORKLOAD_EXISTS), "--config", config)[0] == 0
    bad = write(tmp_path, "bad.yaml", CONFIG.replace("waitForPodsReady", "waitForPodReady"))
    status, _, err = run(capsys, "validate", "-f", flavor, "--config", bad)
    assert status == 2 and f"{bad}:3: Configuration: waitForPodReady: unknown field" in err


def test_run_reads_a_folder_and_standard_input(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "nested").mkdir()
    write(tmp_path, "nested/s.yaml", A_WORKLOAD_EXISTS)
    write(tmp_path, "t.yaml", A_WORKLOAD_EXISTS.replace("a workload exists", "another"))
    status, out, _ = run(capsys, "run", str(tmp_path))
    assert status == 0 and out.count("\nPASS ") + out.startswith("PASS ") == 2
    monkeypatch.setattr("sys.stdin", io.StringIO(A_WORKLOAD_EXISTS))
    status, out, _ = run(capsys, "run", "-")
    assert status == 0 and out.splitlines()[-1] == "PASS a workload exists"


def test_a_manifest_given_to_run_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "cq.yaml", CQ_TYPO)
    status, _, err = run(capsys, "run", path)
    assert status == 2
    assert err == (f"kueue-provreq: error: {path}: ClusterQueue cq is a manifest, not a scenario (name, "
                   "objects, steps): give manifests to explain -f or validate -f\n")


@pytest.mark.parametrize("command", ["explain", "validate"])
def test_a_scenario_given_to_explain_or_validate_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                        command: str) -> None:
    path = write(tmp_path, "s.yaml", A_WORKLOAD_EXISTS)
    status, _, err = run(capsys, command, "-f", path)
    assert status == 2
    assert err == (f"kueue-provreq: error: {path}:1: scenario 'a workload exists': a conformance scenario, "
                   "not a manifest: give scenarios to run or conform\n")


def test_every_error_of_a_configuration_is_a_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = write(tmp_path, "c.yaml", CONFIG.replace("waitForPodsReady", "waitForPodReady") + "fairShring: {}\n")
    flavor = write(tmp_path, "f.yaml", "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: f}\n")
    status, _, err = run(capsys, "validate", "-f", flavor, "--config", bad)
    assert status == 2
    assert [line.split(": ")[4] for line in err.splitlines()] == ["waitForPodReady", "fairShring"]
