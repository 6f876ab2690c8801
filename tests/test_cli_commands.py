"""``explain``, ``validate`` and ``diagram`` through the command's entry point, in process
(``tests/test_cli.py`` runs the installed script), good input and bad."""

from __future__ import annotations

import json
import re
import subprocess
import textwrap
from pathlib import Path

import pytest
import yaml
from kueue_provreq.cli import main
from kueue_provreq.diagrams import dot_available
from kueue_provreq.manifests.inputs import InputErrors

from builders import cli, queue_setup

SETUP = queue_setup(quota=9, prc_spec="{provisioningClassName: check-capacity.autoscaling.x-k8s.io,"
                                            " managedResources: [nvidia.com/gpu]}")

FAILED_ATTEMPT = textwrap.dedent("""\
    apiVersion: kueue.x-k8s.io/v1beta2
    kind: Workload
    metadata: {name: wl, namespace: default, uid: 00000000-0000-4000-8000-000000000010}
    spec:
      queueName: lq
      podSets:
        - name: main
          count: 2
          template: {spec: {containers: [{name: c, resources: {requests: {nvidia.com/gpu: 1}}}]}}
    status:
      conditions:
        - {type: QuotaReserved, status: "True", reason: QuotaReserved, message: Quota reserved in ClusterQueue cq,
           lastTransitionTime: "2024-01-01T00:00:00Z"}
      admission:
        clusterQueue: cq
        podSetAssignments: [{name: main, count: 2, flavors: {nvidia.com/gpu: default-flavor}}]
      admissionChecks:
        - {name: prov, state: Pending, message: "", lastTransitionTime: "2024-01-01T00:00:00Z"}
    ---
    apiVersion: autoscaling.x-k8s.io/v1
    kind: ProvisioningRequest
    metadata:
      name: wl-prov-1
      namespace: default
      ownerReferences: [{apiVersion: kueue.x-k8s.io/v1beta2, kind: Workload, name: wl,
                         uid: 00000000-0000-4000-8000-000000000010, controller: true}]
    spec:
      provisioningClassName: check-capacity.autoscaling.x-k8s.io
      parameters: {}
      podSets: [{podTemplateRef: {name: ppt-wl-prov-1-main}, count: 2}]
    status:
      conditions:
        - {type: Failed, status: "True", reason: CapacityIsNotFound, message: no capacity,
           lastTransitionTime: "2024-01-01T00:01:00Z"}
""")

JOB = textwrap.dedent("""\
    apiVersion: batch/v1
    kind: Job
    metadata:
      generateName: sample-job-
      namespace: default
      labels: {kueue.x-k8s.io/queue-name: lq}
      annotations: {provreq.kueue.x-k8s.io/maxRunDurationSeconds: "600"}
    spec:
      parallelism: 3
      template:
        spec:
          containers: [{name: c, image: agnhost, resources: {limits: {nvidia.com/gpu: 1}}}]
          restartPolicy: Never
""")


@pytest.fixture
def manifests(tmp_path: Path) -> Path:
    (tmp_path / "setup.yaml").write_text(SETUP)
    (tmp_path / "story.yaml").write_text(FAILED_ATTEMPT)
    (tmp_path / "job.yaml").write_text(JOB)
    return tmp_path


def error_lines(out: subprocess.CompletedProcess[str]) -> list[str]:
    """Every error, one line each."""
    assert out.returncode == 2, out
    # explain, as kubectl apply creates what the server accepts, still explains the other objects
    assert out.stdout == "" or out.args[1] == "explain"
    assert "Traceback" not in out.stderr
    lines = out.stderr.splitlines()
    for line in lines:
        assert re.match(r"kueue-provreq( \w+)?: error: ", line), line
    return lines


def one_error_line(out: subprocess.CompletedProcess[str]) -> str:
    (line,) = error_lines(out)
    return line


@pytest.mark.parametrize("command", ["explain", "validate", "diagram", "explore"])
def test_help(command: str) -> None:
    out = cli(command, "--help")
    assert out.returncode == 0 and "usage:" in out.stdout


def test_explain_names_the_rule_behind_a_retry(manifests: Path) -> None:
    out = cli("explain", "-f", str(manifests / "setup.yaml"), "-f", str(manifests / "story.yaml"),
              "--at", "2024-01-01T00:01:00Z")
    assert out.returncode == 0, out.stderr
    # backoffLimitCount counts retries (3 allow 4 attempts); the wait is counted from the check's
    # lastTransitionTime, which Kueue's provisioning controller keeps when it moves the check to
    # Retry (00:00, so the 1m backoff is over at 00:01)
    assert ("check prov is Retry: request wl-prov-1 Failed: attempt 1 of 4 failed; retry 1 of 3: "
            "its 1m0s backoff is over") in out.stdout
    assert "set check prov Pending -> Retry (Retrying after failure: no capacity)" in out.stdout
    assert "workload default/wl is QuotaReserved" in out.stdout


def test_explain_turns_a_job_into_its_workload(manifests: Path) -> None:
    out = cli("explain", "-f", str(manifests / "setup.yaml"), "-f", str(manifests / "job.yaml"),
              "--at", "2024-01-01T00:00:00Z", "-o", "json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    (workload,) = [s for s in report["state"] if s["subject"].startswith("workload ")]
    assert re.fullmatch(r"workload default/job-sample-job-[b-z2-9]{5}-[0-9a-f]{5}", workload["subject"])
    assert workload["state"] == "Pending"
    assert {a["controller"] for a in report["next"]} >= {"scheduler", "workload"}
    # the queue and its check as Kueue's controllers leave them once started
    assert {"subject": "ClusterQueue cq", "state": "Active", "why": "Ready: Can admit new workloads"} \
        in report["state"]


def test_explain_reads_a_folder_and_stdin_and_prints_yaml(manifests: Path) -> None:
    (manifests / "job.yaml").unlink()
    out = cli("explain", "-f", str(manifests), "-f", "-", "-o", "yaml", stdin=JOB)
    assert out.returncode == 0, out.stderr
    report = yaml.safe_load(out.stdout)
    assert len([s for s in report["state"] if s["subject"].startswith("workload ")]) == 2


def test_explain_is_deterministic_for_a_given_time(manifests: Path) -> None:
    args = ("explain", "-f", str(manifests), "--at", "2024-01-01T00:01:00Z")
    assert cli(*args).stdout == cli(*args).stdout


def test_validate_prints_objects_as_stored(manifests: Path) -> None:
    out = cli("validate", "-f", str(manifests / "setup.yaml"))
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[0] == "valid ResourceFlavor default-flavor"
    out = cli("validate", "-f", str(manifests / "setup.yaml"), "-o", "json")
    items = json.loads(out.stdout)["items"]
    prc = items[-1]
    assert prc["spec"]["retryStrategy"] == {"backoffLimitCount": 3, "backoffBaseSeconds": 60,
                                            "backoffMaxSeconds": 1800}


@pytest.mark.parametrize(("text", "expected"), [
    (FAILED_ATTEMPT.replace("count: 2}]", "count: 0}]"),
     r"bad.yaml:\d+: ProvisioningRequest default/wl-prov-1: spec.podSets\[0\].count: must be greater "
     r"than or equal to 1"),
    (SETUP.replace("name: lq}", "name: Bad_Queue}"),
     r"bad.yaml:\d+: LocalQueue default/Bad_Queue: metadata.name: 'Bad_Queue' is not a DNS-1123 subdomain"),
    (SETUP.replace("{name: cpu, nominalQuota: 9}, ", ""),
     r"ClusterQueue cq: spec.resourceGroups\[0\].flavors\[0\].resources: flavors must have the same "
     r"number of resources as the coveredResources"),
    (JOB.replace("restartPolicy: Never", "restartPolicy: Always"),
     r"Job default/sample-job-\*: spec.template.spec.restartPolicy: unsupported value 'Always'"),
    ("apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSett\nmetadata: {name: j}\n",
     r"bad.yaml:\d+: JobSett j: kind: unsupported kind 'JobSett'"),
    ("a: [\n", r"bad.yaml:2: while parsing"),
    ("- 1\n", r"bad.yaml:1: a document must be a mapping"),
    ("a: 1\na: 2\n", r"bad.yaml:2: duplicate key 'a'"),
    ("---\n", r"no objects in"),
    ("a: " + "[" * 3000 + "]" * 3000 + "\n", r"bad.yaml(:1)?: (nested too deeply|.*exceeded maximum nesting depth)"),
    ("apiVersion: v1\nkind: PodTemplate\nmetadata: {name: t, namespace: n, annotations: {a: '"
     + "x" * 300_000 + "'}}\n", r"metadata.annotations: may not be more than 262144 bytes"),
], ids=["count", "name", "cq-resources", "job-restart", "jobset", "yaml-syntax", "not-a-mapping",
        "duplicate-key", "empty", "deep", "huge-annotations"])
@pytest.mark.parametrize("command", ["explain", "validate"])
def test_bad_input_is_one_line_naming_file_object_and_field(tmp_path: Path, command: str, text: str,
                                                            expected: str) -> None:
    (tmp_path / "bad.yaml").write_text(text)
    lines = error_lines(cli(command, "-f", str(tmp_path / "bad.yaml")))
    assert any(re.search(expected, line) for line in lines), lines


@pytest.mark.parametrize("args", [
    ["explain"],
    ["explain", "-f", "/nonexistent.yaml"],
    ["explain", "-f", "/tmp", "--at", "yesterday"],
    ["validate", "-f", "-", "-o", "wide"],
    ["diagram", "everything"],
])
def test_bad_options_are_one_line_and_status_2(args: list[str]) -> None:
    one_error_line(cli(*args, stdin=""))


def test_debug_lets_the_exception_through(tmp_path: Path) -> None:
    """(``tests/test_cli.py`` checks that the installed script then prints the traceback.)"""
    (tmp_path / "bad.yaml").write_text("- 1\n")
    with pytest.raises(InputErrors, match="a document must be a mapping"):
        main(["validate", "--debug", "-f", str(tmp_path / "bad.yaml")])


@pytest.mark.parametrize(("machine", "output", "start"), [
    ("workload", "mermaid", "%% Workload"),
    ("check", "dot", 'digraph "admissioncheck"'),
    ("provisioningrequest", "mermaid", "%%"),
    ("all", "dot", 'digraph "kueue_provreq"'),
])
def test_diagram_text_formats(machine: str, output: str, start: str) -> None:
    out = cli("diagram", machine, "-o", output)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(start)


def test_diagram_svg() -> None:
    out = cli("diagram", "-o", "svg")
    if dot_available():
        assert out.returncode == 0 and "<svg" in out.stdout
    else:
        assert "Graphviz" in one_error_line(out)
