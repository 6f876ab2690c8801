"""``--out DIR``: complete or absent, never mixed, never partial; a missing extra said before any
file is written; every write error one line and a non-zero exit."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest
from kueue_provreq import cli
from kueue_provreq.simulation import plots

from builders import simulation_file

SIM_HINT = "pip install 'kueue-provreq[sim]'"
SWEEP = ["--workloads", "4", "-j", "1", "--set", "seed=1,2"]


def one_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("kueue-provreq: error: "), err
    return err


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


# --- a missing extra ------------------------------------------------------------------------------


@pytest.mark.parametrize("command", [["simulate"], ["sweep", *SWEEP]], ids=["simulate", "sweep"])
def test_without_matplotlib_out_is_refused_in_one_line_before_any_file(
        command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # what an environment without the extra sees
    out = tmp_path / "out"
    argv = [command[0], str(simulation_file(tmp_path)), *command[1:], "--out", str(out)]
    assert cli.main(argv) == 2
    err = one_error(capsys)
    assert "needs matplotlib, from the 'sim' extra" in err and SIM_HINT in err
    assert not out.exists() and leftovers(tmp_path) == []


def test_without_dask_a_dask_sweep_is_refused_in_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "dask.distributed", None)
    assert cli.main(["sweep", str(simulation_file(tmp_path)), *SWEEP, "--dask", "local"]) == 2
    assert f"--dask needs dask, from the 'sim' extra: {SIM_HINT}" in one_error(capsys)


def test_without_tqdm_there_is_no_bar_and_the_run_goes_on(monkeypatch: pytest.MonkeyPatch) -> None:
    from kueue_provreq.simulation.progress import progress_bar

    monkeypatch.setitem(sys.modules, "tqdm", None)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    with progress_bar(10, "workloads") as bar:
        assert bar is None


# --- complete or absent -----------------------------------------------------------------------------


def earlier_results(out: Path) -> dict[str, bytes]:
    out.mkdir()
    (out / "summary.json").write_text("{}\n")
    (out / "gantt.png").write_bytes(b"an earlier run's chart")
    return {p.name: p.read_bytes() for p in out.iterdir()}


def contents(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in out.iterdir()}


@pytest.mark.parametrize("command", [["simulate"], ["sweep", *SWEEP]], ids=["simulate", "sweep"])
def test_a_non_empty_out_is_refused_before_the_run_and_force_replaces_it_whole(
        command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    before = earlier_results(out)
    argv = [command[0], str(simulation_file(tmp_path)), *command[1:], "--out", str(out)]
    assert cli.main(argv) == 2
    assert "the folder is not empty" in one_error(capsys) and contents(out) == before
    assert cli.main([*argv, "--force", "-o", "json"]) == 0
    capsys.readouterr()
    after = contents(out)
    assert all(after.get(name) != data for name, data in before.items())  # each earlier file gone or new
    assert {"summary.json", "sweep.csv"} & set(after)
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("failure", [OSError(errno.ENOSPC, "No space left on device", "gantt.png"),
                                     KeyboardInterrupt()], ids=["disk-full", "interrupted"])
@pytest.mark.parametrize("command", [["simulate"], ["sweep", *SWEEP]], ids=["simulate", "sweep"])
def test_a_failing_or_interrupted_write_leaves_the_earlier_results_and_no_partial_folder(
        command: list[str], failure: BaseException, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*args: object, **kwargs: object) -> None:
        raise failure

    monkeypatch.setattr(plots, "simulation_plots", fail)
    monkeypatch.setattr(plots, "sweep_plot", fail)
    out = tmp_path / "out"
    before = earlier_results(out)
    argv = [command[0], str(simulation_file(tmp_path)), *command[1:], "--out", str(out), "--force"]
    if isinstance(failure, KeyboardInterrupt):
        with pytest.raises(KeyboardInterrupt):
            cli.main(argv)
    else:
        assert cli.main(argv) == 2
        err = one_error(capsys)
        assert "cannot write gantt.png: no space left on the device; earlier results are untouched" in err
    assert contents(out) == before and leftovers(tmp_path) == []


def test_a_new_out_appears_only_complete(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    seen: list[bool] = []
    real = plots.simulation_plots

    def watch(report: object, folder: Path) -> list[Path]:
        seen.append((tmp_path / "new").exists())
        return real(report, folder)  # type: ignore[arg-type]

    monkeypatch.setattr(plots, "simulation_plots", watch)
    assert cli.main(["simulate", str(simulation_file(tmp_path)), "--out", str(tmp_path / "new")]) == 0
    assert seen == [False] and (tmp_path / "new" / "summary.json").is_file()
    assert leftovers(tmp_path) == []


# --- where a folder cannot be -------------------------------------------------------------------------


@pytest.mark.parametrize(("make", "out", "message"), [
    (lambda d: (d / "f").write_text("x"), "f", "a file is in the way"),
    (lambda d: (d / "f").write_text("x"), "f/out", "is a file, not a folder"),
    (lambda d: (d / "loop").symlink_to(d / "loop"), "loop", "a symbolic link loop"),
    (lambda d: None, "", "an empty path names no folder"),
], ids=["file-in-the-way", "path-under-a-file", "symlink-loop", "empty"])
def test_where_no_folder_can_be_written_is_one_line_before_the_run(
        make: object, out: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    make(tmp_path)  # type: ignore[operator]
    target = str(tmp_path / out) if out else ""
    assert cli.main(["simulate", str(simulation_file(tmp_path)), "--out", target]) == 2
    assert message in one_error(capsys)


# --- standard output ---------------------------------------------------------------------------------


def test_a_full_standard_output_is_one_line_and_a_non_zero_exit(tmp_path: Path) -> None:
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full on this system")
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "kueue_provreq", "diagram", "workload"], stdout=full,
                              stderr=subprocess.PIPE, text=True, timeout=60)
    assert done.returncode == 1
    assert done.stderr == "kueue-provreq: error: standard output: No space left on device\n"


def test_a_closed_pipe_is_a_quiet_non_zero_exit() -> None:
    """``kueue-provreq ... | head``, head gone: nothing more is said."""
    read, write = os.pipe()
    os.close(read)
    done = subprocess.run([sys.executable, "-m", "kueue_provreq", "diagram", "workload"], stdout=write,
                          stderr=subprocess.PIPE, text=True, timeout=60)
    os.close(write)
    assert done.returncode == 1 and done.stderr == ""
