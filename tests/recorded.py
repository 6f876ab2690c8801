"""The cluster recordings of tests/data/cluster, as the tests read them.

They are made by ``tests/data/cluster/record.py`` from a real API server and the real Kueue, so
the names Kueue derives from uids (a Workload's ``job-<name>-<hash>``) and the times differ
from one recording to the next: the tests look them up here instead of writing them down.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

DATA = Path(__file__).parent / "data" / "cluster"
RECORDING: dict[str, Any] = json.loads((DATA / "recording.json").read_text())
#: The kinds of the dumps the model does not use (Kueue's events).
UNMODELLED = frozenset({"Event"})


def at(cluster: str) -> str:
    """When ``cluster`` was recorded: the clock its tests read it at."""
    return str(RECORDING[cluster]["at"])


@cache
def items(cluster: str) -> tuple[dict[str, Any], ...]:
    """The dump's modelled objects."""
    listing = json.loads((DATA / cluster / "dump.json").read_text())
    return tuple(i for i in listing["items"] if i["kind"] not in UNMODELLED)


def workload(cluster: str, job: str) -> str:
    """The name the real Kueue gave the Workload of Job ``job``."""
    uid = next(i["metadata"]["uid"] for i in items(cluster) if i["kind"] == "Job" and i["metadata"]["name"] == job)
    return next(str(i["metadata"]["name"]) for i in items(cluster) if i["kind"] == "Workload"
                and any(r["uid"] == uid for r in i["metadata"].get("ownerReferences", ())))


def request(cluster: str, job: str, attempt: int, check: str = "gpu-capacity") -> str:
    return f"{workload(cluster, job)}-{check}-{attempt}"


def named(cluster: str, kind: str, prefix: str) -> str:
    """The one ``kind`` object whose name starts with ``prefix`` (one whose job is gone)."""
    (name,) = [i["metadata"]["name"] for i in items(cluster) if i["kind"] == kind
               and i["metadata"]["name"].startswith(prefix)]
    return str(name)
