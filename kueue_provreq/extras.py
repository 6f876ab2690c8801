"""The optional extras, and the one line that says which to install when one is missing.

The package runs without its extras; a command that needs one (plots need matplotlib, a Dask
sweep needs ``dask[distributed]``, a live cluster needs the Kubernetes client) checks for it
with :func:`require` before it does any work or writes any file, so that a missing extra is
one line naming the extra as pip spells it, never a traceback after half the output is written.
"""

from __future__ import annotations

import importlib.util

from kueue_provreq.errors import KueueProvreqError

#: The extras of ``pyproject.toml``, as pip spells them.
SIM = "sim"
CLUSTER = "cluster"


class MissingExtra(KueueProvreqError):
    """A module of an extra is not installed (exit status 2, bad input: the environment)."""


def install_hint(extra: str) -> str:
    return f"pip install 'kueue-provreq[{extra}]'"


def require(extra: str, module: str, purpose: str) -> None:
    """:class:`MissingExtra` saying that ``purpose`` needs ``extra`` unless ``module`` can be
    imported; found, not imported (importing Dask alone takes seconds)."""
    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package missing, or a module set to None
        found = False
    if not found:
        top = module.split(".")[0]
        raise MissingExtra(f"{purpose} needs {top}, from the '{extra}' extra: {install_hint(extra)}")
