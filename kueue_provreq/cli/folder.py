"""``--out DIR``: a folder of results that is complete or absent, never mixed or partial.

A run's files are written into a fresh folder beside ``DIR`` (same file system, so the move is
a rename), which takes ``DIR``'s place only once every file is written.  A non-empty ``DIR`` is
refused before any work unless ``--force`` is given, and then replaced whole: no file of an
earlier run (a ``gantt.png`` this run does not draw) stays beside the new ones.  A failure or
an interrupt while writing removes the unfinished folder and leaves ``DIR`` as it was.  Every
file-system refusal is one line naming the folder.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path

from kueue_provreq.cli.options import UsageError


def check(option: str, out: str, force: bool) -> Path:
    """``out`` as the file system has it, before any work: a folder that does not exist yet,
    an empty one, or (``force``) any folder; never a file, nor a path through one."""
    if out == "":
        raise UsageError(f"{option}: an empty path names no folder")
    path = Path(out)
    try:
        st = path.stat()
    except OSError as e:
        if e.errno in (errno.ENOENT, errno.ENOTDIR):  # to be made: its nearest existing ancestor decides
            _check_parent(option, path)
            return path
        raise UsageError(f"{option} {out}: {_reason(e)}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise UsageError(f"{option} {out}: a file is in the way (a folder is written there)")
    if not force and any(path.iterdir()):
        raise UsageError(f"{option} {out}: the folder is not empty (it holds earlier results?); "
                         "--force replaces it whole")
    return path


def _check_parent(option: str, path: Path) -> None:
    """The nearest existing ancestor must be a folder (``a/file.txt/out`` cannot be made)."""
    for parent in path.absolute().parents:
        try:
            if parent.is_dir():
                return
            if parent.exists():
                raise UsageError(f"{option} {path}: {parent} is a file, not a folder")
        except OSError as e:
            raise UsageError(f"{option} {path}: {_reason(e)}") from None


def _reason(e: OSError) -> str:
    if e.errno == errno.ELOOP:
        return "a symbolic link loop"
    if e.errno == errno.ENOTDIR:
        return "a path through a file"
    if e.errno == errno.ENOSPC:
        return "no space left on the device"
    return e.strerror or str(e)


def write(option: str, target: Path, fill: Callable[[Path], object]) -> None:
    """``fill(folder)`` writes the files into a fresh folder beside ``target``, which then
    takes ``target``'s place (replacing it whole if it exists)."""
    parent = target.absolute().parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".partial", dir=parent))
    except OSError as e:
        raise UsageError(f"{option} {target}: cannot write: {_reason(e)}") from None
    old: Path | None = None
    try:
        fill(staging)
        staging.chmod(0o777 & ~_umask())
        if target.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".old", dir=parent))
            os.replace(target, old / "previous")
        os.replace(staging, target)
    except OSError as e:
        _restore(target, old)
        shutil.rmtree(staging, ignore_errors=True)
        raise UsageError(f"{option} {target}: cannot write {_name(e)}: {_reason(e)}; "
                         "earlier results are untouched") from None
    except BaseException:
        _restore(target, old)
        shutil.rmtree(staging, ignore_errors=True)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def _restore(target: Path, old: Path | None) -> None:
    if old is not None and (old / "previous").exists() and not target.exists():
        os.replace(old / "previous", target)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def _name(e: OSError) -> str:
    return Path(str(e.filename)).name if e.filename else "its files"


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
