"""The command line as a package: one module per command, one spelling per option, ``-o`` for the
output format everywhere, and ``main`` alone turning errors into exit statuses."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
import yaml
from kueue_provreq import cli
from kueue_provreq.cli import options
from kueue_provreq.engine import SettleError
from kueue_provreq.errors import KueueProvreqError
from kueue_provreq.machines import IllegalTransition
from kueue_provreq.manifests import ManifestError, ManifestErrors

from builders import A_WORKLOAD_EXISTS, SETUP, job, simulation_file
from builders import cli as run_cli


def subcommands() -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in cli.build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_every_command_is_a_module_with_register_and_run() -> None:
    names = {module.__name__.rpartition(".")[2] for module in cli.COMMANDS}
    assert names == set(subcommands())
    for module in cli.COMMANDS:
        parser = subcommands()[module.__name__.rpartition(".")[2]]
        assert parser.get_default("run") is module.run


def test_every_output_choice_is_o_and_json_comes_with_yaml() -> None:
    for name, parser in subcommands().items():
        flags = {flag: action for action in parser._actions for flag in action.option_strings}
        if "--output" not in flags:
            continue
        assert "-o" in flags, name
        choices = set(flags["-o"].choices or ())
        assert "json" not in choices or "yaml" in choices, name
        assert "--out" not in flags or flags["--out"].metavar == "DIR", name  # --out is only a folder


def test_the_autoscaler_default_is_one_script_everywhere() -> None:
    defaults = {name: parser.get_default("autoscaler") for name, parser in subcommands().items()
                if parser.get_default("autoscaler") is not None}
    assert set(defaults) == {"forecast", "autoscaler"}
    assert set(defaults.values()) == {options.DEFAULT_AUTOSCALER}


def test_run_o_jsonl_and_its_older_spelling_print_the_same_records(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(A_WORKLOAD_EXISTS)
    new, old = run_cli("run", str(path), "-o", "jsonl"), run_cli("run", str(path), "--format", "jsonl")
    assert new.returncode == old.returncode == 0 and new.stdout == old.stdout
    records = [json.loads(line) for line in new.stdout.splitlines()]
    phases = [r for r in records if r["record"] == "phase"]
    assert phases and {"from", "to", "trigger"} <= set(phases[0])


def test_audit_o_yaml_is_its_json_as_yaml(tmp_path: Path) -> None:
    path = tmp_path / "setup.yaml"
    path.write_text(SETUP)
    as_json = run_cli("audit", "-f", str(path), "--at", "2024-01-01T00:00:00Z", "-o", "json")
    as_yaml = run_cli("audit", "-f", str(path), "--at", "2024-01-01T00:00:00Z", "-o", "yaml")
    assert as_json.returncode == as_yaml.returncode == 0, as_yaml.stderr
    assert yaml.safe_load(as_yaml.stdout) == json.loads(as_json.stdout)


def test_simulate_and_sweep_o_yaml(tmp_path: Path) -> None:
    path = simulation_file(tmp_path)
    as_json = run_cli("simulate", str(path), "--workloads", "3", "-q", "-o", "json")
    as_yaml = run_cli("simulate", str(path), "--workloads", "3", "-q", "-o", "yaml")
    assert as_yaml.returncode == 0, as_yaml.stderr
    assert yaml.safe_load(as_yaml.stdout) == json.loads(as_json.stdout)
    swept = run_cli("sweep", str(path), "--workloads", "2", "--set", "seed=1,2", "-j", "1", "-q", "-o", "yaml")
    assert swept.returncode == 0, swept.stderr
    assert [row["seed"] for row in yaml.safe_load(swept.stdout)] == [1, 2]


def test_forecast_without_autoscaler_provisions_every_attempt_at_once(tmp_path: Path) -> None:
    path = tmp_path / "all.yaml"
    path.write_text(SETUP + "---\n" + job(), encoding="utf-8")
    # one instant for both runs: without --at each reads the clock, and the two may straddle a second
    at = ("--at", "2024-01-01T00:00:00Z")
    given = run_cli("forecast", "-f", str(path), "-o", "json", *at)
    explicit = run_cli("forecast", "-f", str(path), "-o", "json", *at, "--autoscaler", "provision@0s")
    assert given.returncode == 0, given.stderr
    assert json.loads(given.stdout) == json.loads(explicit.stdout)


@pytest.mark.parametrize(("error", "status", "lines"), [
    (SettleError("no fixed point"), 1, ["the model failed: no fixed point"]),
    (IllegalTransition("no edge"), 1, ["the model failed: no edge"]),
    (ManifestError("bad", path="spec.x", source="f.yaml:3"), 2, ["f.yaml:3: spec.x: bad"]),
    (ManifestErrors([ManifestError("one", source="a:1"), ManifestError("two", source="a:2")]), 2,
     ["a:1: one", "a:2: two"]),
    (options.UsageError("--at: nope"), 2, ["--at: nope"]),
    (KueueProvreqError("anything else"), 2, ["anything else"]),
])
def test_main_alone_maps_error_families_to_exit_statuses(error: KueueProvreqError, status: int,
                                                         lines: list[str]) -> None:
    assert cli.exit_status(error) == status
    assert cli.error_lines(error) == lines


def test_no_command_catches_an_error_of_the_family(tmp_path: Path) -> None:
    """Commands raise; ``main`` reports.  (``options`` and ``folder`` alone catch, to name the
    option a value came from, to hand argparse the ``ArgumentTypeError`` it wants, or to remove
    a half-written ``--out`` folder.)"""
    package = Path(cli.__file__).parent
    for module in package.glob("*.py"):
        if module.name in ("__init__.py", "options.py", "folder.py"):
            continue
        text = module.read_text()
        assert "except" not in text.replace("except KeyboardInterrupt", ""), module.name
