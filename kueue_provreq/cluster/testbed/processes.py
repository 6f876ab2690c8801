"""Starting and stopping the control plane's programs: a process supervisor, nothing more.

A started program runs in a session of its own (``testbed up`` returns while they keep
running), writes to a log file in the testbed's folder, and is remembered by its process id
*and* its start time (field 22 of ``/proc/<pid>/stat``), so that ``down`` stops exactly the
processes ``up`` started and never a stranger that reused an id.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import attrs

from kueue_provreq.cluster.client import ClusterError

#: How long a program gets to stop after SIGTERM before it is killed.
STOP_GRACE = 10.0
#: How often readiness and exits are polled.
POLL = 0.1


@attrs.frozen
class Process:
    """One program ``up`` started."""

    name: str
    pid: int
    start_ticks: int
    argv: tuple[str, ...]
    log: str


def _start_ticks(pid: int) -> int | None:
    """The process's start time in clock ticks since boot, or None when no such live process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # the command name (field 2) is in parentheses and may hold spaces: split after it
    fields = stat[stat.rindex(")") + 2:].split()
    if fields[0] == "Z":  # exited, not yet reaped
        return None
    return int(fields[19])


def start(name: str, argv: Sequence[str], log: Path, env: Mapping[str, str] | None = None) -> Process:
    """Starts ``argv`` detached from this process's session, its output appended to ``log``."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        try:
            child = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                     env=None if env is None else {**os.environ, **env}, start_new_session=True)
        except OSError as e:
            raise ClusterError(f"cannot start {name} ({argv[0]}): {e.strerror}") from None
    ticks = _start_ticks(child.pid)
    if ticks is None:
        raise ClusterError(f"{name} exited at once: {log_tail(log)}")
    return Process(name, child.pid, ticks, tuple(argv), str(log))


def alive(proc: Process) -> bool:
    """Whether the very process ``proc`` describes still runs."""
    return _start_ticks(proc.pid) == proc.start_ticks


def _reap(pid: int) -> None:
    """Collects the exit status when the process is this one's child (the pytest fixture's
    case), so that it leaves no zombie."""
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def stop(proc: Process, grace: float = STOP_GRACE) -> None:
    """SIGTERM, then SIGKILL after ``grace`` seconds; nothing if the process is gone already."""
    if not alive(proc):
        _reap(proc.pid)
        return
    os.kill(proc.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        _reap(proc.pid)
        if not alive(proc):
            return
        time.sleep(POLL)
    if alive(proc):
        os.kill(proc.pid, signal.SIGKILL)
        while alive(proc):
            _reap(proc.pid)
            time.sleep(POLL)


def log_tail(log: Path | str, lines: int = 5) -> str:
    """Why a program stopped, on one line, for an error message: the last error a structured
    (JSON) log records among its last lines (etcd's and Kueue's logs are JSON: the error is
    what a user needs, not the configuration dump logged before it), else the last lines."""
    try:
        text = Path(log).read_text(errors="replace").strip().splitlines()
    except OSError:
        return "(no log)"
    for line in reversed(text[-50:]):
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and entry.get("level") in _ERROR_LEVELS:
            return ": ".join(str(entry[k]) for k in ("msg", "error") if entry.get(k))
    return " | ".join(line.strip() for line in text[-lines:]) or "(empty log)"


#: The levels of a structured log line that say why a program stopped (zap's names).
_ERROR_LEVELS = frozenset({"error", "dpanic", "panic", "fatal"})


def wait_ready(proc: Process, probe: Callable[[], bool], deadline: float, what: str) -> None:
    """Polls ``probe`` until it answers True, the process exits, or ``deadline`` (monotonic)."""
    while True:
        if not alive(proc):
            _reap(proc.pid)
            raise ClusterError(f"{proc.name} exited while starting; its log ({proc.log}) ends: {log_tail(proc.log)}")
        if probe():
            return
        if time.monotonic() > deadline:
            raise ClusterError(f"{proc.name} is not {what} in time; its log ({proc.log}) ends: {log_tail(proc.log)}")
        time.sleep(POLL)
