"""One input grammar: manifests, simulation files and scenarios are described with the same schema
nodes, so a bad one of each reads alike: ``FILE:LINE: Kind name: field.path: reason``, every
problem at once, "did you mean" for an unknown key, and one rule for durations and quantities."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from kueue_provreq.manifests import ManifestErrors, load_configuration
from kueue_provreq.manifests.nodes import Duration, Problems
from kueue_provreq.simulation import load_document, parse

from builders import A_WORKLOAD_EXISTS, SETUP, cli, job, simulation_file

LINE = re.compile(r"kueue-provreq: error: (?P<file>[^:]+):(?P<line>\d+): (?P<obj>[A-Z]\w+ [^:]+): "
                  r"(?P<path>[\w.\[\]/-]+): (?P<reason>.+)")


def errors(out: object) -> list[re.Match[str]]:
    """Every stderr line, each of the one form."""
    assert out.returncode == 2, out  # type: ignore[attr-defined]
    lines = out.stderr.splitlines()  # type: ignore[attr-defined]
    matches = [LINE.fullmatch(line) for line in lines]
    assert all(matches), lines
    return matches  # type: ignore[return-value]


def test_a_bad_manifest_a_bad_simulation_and_a_bad_scenario_read_alike(tmp_path: Path) -> None:
    manifest = tmp_path / "cq.yaml"
    manifest.write_text(SETUP.replace("namespaceSelector", "namespaceSelectr").replace("nominalQuota: 8",
                                                                                       "nominalQuota: lots"))
    bad_manifest = errors(cli("validate", "-f", str(manifest)))

    simulation = simulation_file(tmp_path, horizn="1h", seed=-1)
    bad_simulation = errors(cli("simulate", str(simulation), "-q"))

    scenario = tmp_path / "s.yaml"
    scenario.write_text(A_WORKLOAD_EXISTS.replace("objects:\n", "objectz:\n", 1).replace("- expect:", "- expekt:"))
    bad_scenario = errors(cli("run", str(scenario)))

    for found, file, kind in ((bad_manifest, manifest, "ClusterQueue"), (bad_simulation, simulation, "Simulation"),
                              (bad_scenario, scenario, "Scenario")):
        assert len(found) >= 2, found  # every problem at once
        assert {m["file"] for m in found} == {str(file)}
        assert all(m["obj"].startswith(kind) for m in found)
        assert [int(m["line"]) for m in found] == sorted(int(m["line"]) for m in found)  # in file order
        assert any("unknown field, did you mean" in m["reason"] for m in found)
        for m in found:  # the line is the field's own
            key = re.split(r"[.\[]", m["path"])[-1].rstrip("]")
            assert key in file.read_text().splitlines()[int(m["line"]) - 1], m.group(0)


@pytest.mark.parametrize("value", [0, "0", "+0", "0s", "1m30s"])
def test_durations_follow_go_in_the_library_s_own_files(tmp_path: Path, value: object) -> None:
    """Go's time.ParseDuration reads "0" without a unit; YAML reads an unquoted 0 as a number, which
    scenarios and simulation files take as that same 0."""
    scenario = tmp_path / "s.yaml"
    scenario.write_text(A_WORKLOAD_EXISTS + f"  - advance: {yaml.safe_dump(value).splitlines()[0]}\n")
    assert cli("conform", str(scenario)).returncode == 0
    assert parse(load_document(simulation_file(tmp_path, horizon=value))).horizon == \
        (90 if value == "1m30s" else 0)


def test_a_kubernetes_duration_is_a_string_as_its_json_decoder_wants() -> None:
    assert load_configuration({"waitForPodsReady": {"timeout": "0"}}).wait_for_pods_ready is not None
    with pytest.raises(ManifestErrors, match=r"waitForPodsReady.timeout: expected a duration string like 90s"):
        load_configuration({"waitForPodsReady": {"timeout": 0}})


@pytest.mark.parametrize(("value", "reason"), [
    (5, "expected a duration string like 90s or 1m30s, got 5 (a number needs a unit: 5s, 5m or 5h)"),
    ("5", "missing unit in duration '5'"),
    ("-1s", "must not be negative"),
    (True, "expected a duration string like 90s or 1m30s, got true"),
])
def test_one_duration_message_everywhere(value: object, reason: str) -> None:
    out = Problems()
    Duration(minimum=0).check(value, "horizon", out)
    assert [(e.path, e.reason) for e in out.errors] == [("horizon", reason)]


def test_a_capacity_is_a_quantity_as_in_a_manifest(tmp_path: Path) -> None:
    path = simulation_file(tmp_path, autoscaler={"x": {"capacity": {"nvidia.com/gpu": "-1"}}})
    with pytest.raises(ManifestErrors, match=r"autoscaler\[x\].capacity\[nvidia.com/gpu\]: must be greater than or "
                                             r"equal to 0"):
        parse(load_document(path))


def test_a_template_job_is_checked_as_a_manifest(tmp_path: Path) -> None:
    data = yaml.safe_load(job())
    data["spec"]["paralelism"] = 2
    path = simulation_file(tmp_path, workloads={"templates": [{"name": "t", "job": data}]})
    with pytest.raises(ManifestErrors, match=r"Job default/train: workloads.templates\[0\].job.spec.paralelism: "
                                             r'unknown field, did you mean "parallelism"\?'):
        parse(load_document(path))
