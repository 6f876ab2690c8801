"""Bad simulation files: one line naming the file and line, the simulation and the field."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from kueue_provreq import cli
from kueue_provreq.manifests import ManifestError
from kueue_provreq.simulation import load_document, parse
from kueue_provreq.simulation.spec import Distribution

from builders import SETUP, job, simulation_file

GOOD = {
    "name": "bad",
    "setup": {"manifests": list(yaml.safe_load_all(SETUP))},
    "workloads": {"templates": [{"name": "t", "job": yaml.safe_load(job())}]},
}


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "sim.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def error(path: Path) -> str:
    with pytest.raises(ManifestError) as e:
        parse(load_document(path))
    return str(e.value)


def with_lines(data: dict[str, object], **changes: object) -> str:
    """The file as YAML, ``changes`` applied at the top level (each key on its own line)."""
    merged = {**data, **changes}
    return yaml.safe_dump(merged, sort_keys=False)


def line_of(path: Path, needle: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if needle in line)


def test_a_good_file_parses_with_its_defaults(tmp_path: Path) -> None:
    sim = parse(load_document(write(tmp_path, with_lines(GOOD))))
    assert (sim.name, sim.seed, sim.count, sim.horizon, sim.process) == ("bad", 0, 100, 86400, "AllAtOnce")
    assert sim.jobs.running_time == Distribution("fixed", 3600.0) and sim.autoscaler == {}


@pytest.mark.parametrize(("changes", "needle", "message"), [
    ({"seed": -1}, "seed:", "Simulation bad: seed: must be greater than or equal to 0"),
    ({"horizon": "forever"}, "horizon:", "Simulation bad: horizon: invalid duration 'forever'"),
    ({"horizon": 5}, "horizon:", "horizon: expected a duration string like 90s or 1m30s, got 5 (a number needs a unit: 5s, 5m or 5h)"),
    ({"start": "tomorrow"}, "start:", "start: expected an RFC 3339 time"),
    ({"horizn": "1h"}, "horizn:", 'Simulation bad: horizn: unknown field, did you mean "horizon"? (known: autoscaler, configuration, '),
    ({"jobs": {"runningTime": {"gamma": {"k": 2}}}}, "gamma", "jobs.runningTime.gamma: unknown distribution (known: exponential, fixed, "),
    ({"jobs": {"runningTime": {"uniform": {"min": "5m", "max": "1m"}}}}, "max:", "uniform.max: must not be less than min"),
    ({"jobs": {"podsReadyTime": {"lognormal": {"median": "1m"}}}}, "lognormal", "lognormal.sigma: required value"),
    ({"autoscaler": {"check-capacity.autoscaling.x-k8s.io": {"failureProbability": 1.5}}}, "failureProbability",
     "autoscaler[check-capacity.autoscaling.x-k8s.io].failureProbability: must be less than or equal to 1"),
    ({"autoscaler": {"x": {"capacity": {"nvidia.com/gpu": "lots"}}}}, "nvidia.com/gpu",
     "autoscaler[x].capacity[nvidia.com/gpu]: quantities must match"),
    ({"workloads": {"templates": []}}, "workloads:", "workloads: needs templates or a trace"),
    ({"workloads": {"count": 0, "templates": GOOD["workloads"]["templates"]}}, "count:",  # type: ignore[index]
     "workloads.count: must be greater than or equal to 1"),
    ({"workloads": {"arrival": {"process": "Bursty"}, "templates": GOOD["workloads"]["templates"]}},  # type: ignore[index]
     "process:", "workloads.arrival.process: unsupported value 'Bursty': supported values: 'AllAtOnce', 'Poisson'"),
    ({"workloads": {"arrival": {"process": "Poisson"}, "templates": GOOD["workloads"]["templates"]}},  # type: ignore[index]
     "process:", "workloads.arrival.ratePerHour: required value"),
    ({"workloads": {"templates": GOOD["workloads"]["templates"],  # type: ignore[index]
                    "trace": [{"at": "0s", "template": "nope"}]}}, "template: nope",
     "workloads.trace[0].template: no template named 'nope'"),
    ({"setup": {"files": ["missing.yaml"]}}, "missing.yaml", "setup.files[0]: "),
])
def test_bad_fields(tmp_path: Path, changes: dict[str, object], needle: str, message: str) -> None:
    path = write(tmp_path, with_lines(GOOD, **changes))
    text = error(path)
    assert message in text
    assert text.startswith(f"{path}:{line_of(path, needle)}: ") or text.startswith(f"{path}:")
    assert "\n" not in text


def test_the_line_is_the_field_s_own(tmp_path: Path) -> None:
    path = write(tmp_path, with_lines(GOOD, autoscaler={"check-capacity.autoscaling.x-k8s.io":
                                                        {"failureProbability": 2}}))
    assert error(path).startswith(f"{path}:{line_of(path, 'failureProbability')}: Simulation bad: ")


def test_manifest_errors_come_from_the_manifest_loader(tmp_path: Path) -> None:
    data = yaml.safe_load(with_lines(GOOD))
    data["setup"]["manifests"][-1]["spec"]["retryStrategy"]["backoffLimitCount"] = "three"
    path = write(tmp_path, yaml.safe_dump(data, sort_keys=False))
    text = error(path)
    assert text.startswith(f"{path}:{line_of(path, 'backoffLimitCount')}: ProvisioningRequestConfig prc: "
                           "setup.manifests[4].spec.retryStrategy.backoffLimitCount: ")


def test_workloads_do_not_belong_in_the_setup(tmp_path: Path) -> None:
    data = yaml.safe_load(with_lines(GOOD))
    data["setup"]["manifests"].append(yaml.safe_load(job()))
    assert "Simulation bad: setup.manifests[5].kind: workloads go under workloads.templates" in \
        error(write(tmp_path, yaml.safe_dump(data)))


def test_a_template_job_kueue_would_not_manage(tmp_path: Path) -> None:
    data = yaml.safe_load(with_lines(GOOD))
    data["workloads"]["templates"][0]["job"] = yaml.safe_load(job(queue=None))
    assert "workloads.templates[0].job: Kueue would not manage this Job" in error(write(tmp_path, yaml.safe_dump(data)))


@pytest.mark.parametrize(("text", "message"), [
    ("name: [unclosed\n", "sim.yaml:2: while parsing a flow sequence"),
    ("a: 1\n---\nb: 2\n", "expected one simulation document, found 2"),
    ("- 1\n", "a document must be a mapping"),
    ("name: x\n", "Simulation x: workloads: required value"),
])
def test_files_that_are_not_simulations(tmp_path: Path, text: str, message: str) -> None:
    assert message in error(write(tmp_path, text))


@pytest.mark.parametrize("command", ["simulate", "sweep"])
def test_the_cli_says_it_in_one_line_with_status_2(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                   command: str) -> None:
    path = write(tmp_path, with_lines(GOOD, horizon="forever"))
    extra = ["--set", "seed=1,2"] if command == "sweep" else []
    status = cli.main([command, str(path), *extra])
    out, err = capsys.readouterr()
    assert status == 2 and out == ""
    assert err == (f"kueue-provreq: error: {path}:{line_of(path, 'horizon')}: Simulation bad: horizon: "
                   "invalid duration 'forever'\n")


def test_missing_files_and_bad_numbers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["simulate", str(tmp_path / "nope.yaml")]) == 2
    assert "nope.yaml: no such file" in capsys.readouterr().err
    assert cli.main(["simulate", str(simulation_file(tmp_path)), "--workloads", "0"]) == 2
    assert "--workloads: must be at least 1" in capsys.readouterr().err
