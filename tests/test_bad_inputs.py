"""The corpus of bad inputs (tests/data/bad-inputs/): each ends at once, in one line naming
the file, the object and the field, with the exit status it should; input the API server
accepts is accepted.  File-system oddities are made here."""

from __future__ import annotations

import copy
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from kueue_provreq import cli

CORPUS = Path(__file__).parent / "data" / "bad-inputs"
CASES: list[dict[str, Any]] = yaml.safe_load((CORPUS / "cases.yaml").read_text(encoding="utf-8"))
#: What "nothing hangs" means here: a child process that must be done in this many seconds.
HANG_SECONDS = 8


def merged(base: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """``base`` with ``changes`` merged in, a null removing a key."""
    out = copy.deepcopy(base)
    for key, value in changes.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merged(out[key], value)
        else:
            out[key] = value
    return out


def simulation_for(case: dict[str, Any], tmp_path: Path) -> Path:
    data = merged(yaml.safe_load((CORPUS / "simulation.yaml").read_text()), case["simulation"])
    data["setup"] = {"files": [str(CORPUS / "setup.yaml")]}
    trace = data["workloads"].get("trace")
    if isinstance(trace, dict):
        trace["file"] = str(CORPUS / trace["file"])
    path = tmp_path / f"{case['id']}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def argv_for(case: dict[str, Any], tmp_path: Path) -> list[str]:
    out = []
    for word in case["argv"]:
        if word == "{simulation}":
            out.append(str(simulation_for(case, tmp_path)))
        elif word == "{tmp}":
            out.append(str(tmp_path))
        elif word and (CORPUS / word).is_file():
            out.append(str(CORPUS / word))
        else:
            out.append(word)
    return out


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_each_bad_input_is_one_line_and_each_good_one_passes(
        case: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = argv_for(case, tmp_path)
    if case.get("hang"):
        start = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "kueue_provreq", *argv], capture_output=True, text=True,
                              timeout=HANG_SECONDS)
        assert time.monotonic() - start < HANG_SECONDS
        status, err = done.returncode, done.stderr
    else:
        status = cli.main(argv)
        err = capsys.readouterr().err
    assert status == case["status"], err
    assert "Traceback" not in err
    if "says" in case:
        assert case["says"] in err
        assert err.count("\n") == 1, err
    elif status == 0:
        assert err == ""


@pytest.mark.parametrize(("make", "says"), [
    (lambda d: (d / "x.yaml").symlink_to(d / "x.yaml"), "x.yaml: a symbolic link loop"),
    (lambda d: (d / "x.yaml").mkdir(), None),  # a folder is read as a folder of manifests
    (lambda d: (d / "f").write_text("x"), "a path through a file (a part of it is not a folder)"),
], ids=["symlink-loop", "folder", "through-a-file"])
def test_paths_are_said_as_the_file_system_has_them(make: Any, says: str | None, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    make(tmp_path)
    target = tmp_path / ("f/x.yaml" if (tmp_path / "f").is_file() else "x.yaml")
    assert cli.main(["validate", "-f", str(target)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert says is None or f"{target}: {says.removeprefix('x.yaml: ')}" in err


@pytest.mark.parametrize(("make", "says"), [
    (lambda p: p.symlink_to(p), "a symbolic link loop"),
    (lambda p: p.mkdir(), "a folder, not a file"),
], ids=["symlink-loop", "folder"])
def test_a_simulation_file_is_read_as_the_file_system_has_it(make: Any, says: str, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "sim.yaml"
    make(path)
    assert cli.main(["simulate", str(path)]) == 2
    assert capsys.readouterr().err == f"kueue-provreq: error: {path}: {says}\n"


@pytest.mark.parametrize(("name", "status", "says"), [
    ("utf16-bom.yaml", 0, ""),
    ("not-utf8.yaml", 2, "kueue-provreq: error: <stdin>: not UTF-8 text (byte 56)\n"),
])
def test_standard_input_is_read_as_a_file_is(name: str, status: int, says: str) -> None:
    """``-f -``: the bytes, so that a byte-order mark counts, as kubectl reads them."""
    done = subprocess.run([sys.executable, "-m", "kueue_provreq", "validate", "-f", "-"],
                          input=(CORPUS / name).read_bytes(), capture_output=True, timeout=60)
    assert done.returncode == status and done.stderr.decode() == says
