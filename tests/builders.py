"""Shared builders for the tests: one clock, one way to write a condition, a Workload, a pod
template, a check state, and to run the CLI in process.

Defaults are the smallest valid object; a test module that needs other defaults wraps these
(``functools.partial`` or a two-line function) rather than writing its own.
"""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys
from collections.abc import Iterable, Mapping
from typing import Any

from kueue_provreq.api import constants as c
from kueue_provreq.api.frozen import FrozenMap, freeze
from kueue_provreq.api.meta import Condition, ObjectMeta, OwnerReference, Time
from kueue_provreq.api.workload import (
    Admission,
    AdmissionCheckState,
    PodSet,
    PodSetAssignment,
    RequeueState,
    Workload,
    WorkloadSpec,
    WorkloadStatus,
)
from kueue_provreq.cli import main

T0 = Time(1_704_067_200)
"""2024-01-01T00:00:00Z: every test's clock starts here, as the conformance format's does."""
NS = "ns"


def at(seconds: float) -> Time:
    """``seconds`` after ``T0``."""
    return Time(T0 + seconds)


def cond(type_: str, status: str = c.TRUE, reason: str = "", message: str = "", at: float = T0,
         generation: int | None = 1) -> Condition:
    """A condition; the reason defaults to the type (as many of Kueue's do)."""
    return Condition(type_, status, reason or type_, message, Time(at), generation)


def reserved_in(cq: str = "cq", at: float = T0) -> Condition:
    return cond(c.WORKLOAD_QUOTA_RESERVED, c.TRUE, c.REASON_QUOTA_RESERVED, c.MSG_QUOTA_RESERVED.format(cq=cq), at)


ADMITTED = cond(c.WORKLOAD_ADMITTED, c.TRUE, c.REASON_ADMITTED, c.MSG_ADMITTED)


def template(requests: Mapping[str, str] | None = None, **spec: Any) -> FrozenMap[str, Any]:
    """A pod template with one container asking for ``requests`` (default one cpu)."""
    ctr = {"name": "c", "resources": {"requests": dict({"cpu": "1"} if requests is None else requests)}}
    frozen: FrozenMap[str, Any] = freeze({"spec": {"containers": [ctr], **spec}})
    return frozen


MAIN = PodSet("main", 1, template())
"""One pod of one cpu, the podset most tests need."""


def admission(cq: str = "cq", *assignments: PodSetAssignment) -> Admission:
    """An admission to ``cq``; by default the ``main`` podset on flavor ``default``."""
    return Admission(cq, assignments or (PodSetAssignment("main", FrozenMap({"cpu": "default"})),))


def check_state(name: str = "check1", state: str = c.CHECK_PENDING, message: str = "", at: float = T0,
                requeue_after: int | None = None, retry_count: int | None = None) -> AdmissionCheckState:
    return AdmissionCheckState(name=name, state=state, last_transition_time=Time(at), message=message,
                               retry_count=retry_count, requeue_after_seconds=requeue_after)


def workload(name: str = "wl", *, namespace: str = NS, uid: str | None = None, created: float = T0,
             conditions: Iterable[Condition] = (), checks: Iterable[AdmissionCheckState] = (),
             admission: Admission | None = None, requeue_state: RequeueState | None = None,
             active: bool | None = None, pod_sets: tuple[PodSet, ...] = (MAIN,), queue: str = "lq",
             priority: int | None = None, annotations: Mapping[str, str] | None = None,
             owners: tuple[OwnerReference, ...] = (), generation: int = 1) -> Workload:
    """A Workload as the API server stores it (uid, generation, creation time)."""
    return Workload(
        ObjectMeta(name=name, namespace=namespace, uid=uid or f"{name}-uid", generation=generation,
                   creation_timestamp=Time(created), annotations=FrozenMap(annotations or {}),
                   owner_references=owners),
        WorkloadSpec(pod_sets=pod_sets, queue_name=queue, priority=priority, active=active),
        WorkloadStatus(conditions=tuple(conditions), admission=admission, admission_checks=tuple(checks),
                       requeue_state=requeue_state))


def cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """``kueue-provreq ARGS`` in this process: its exit status and what it printed."""
    out, err = io.StringIO(), io.StringIO()
    saved = sys.stdin
    sys.stdin = io.StringIO(stdin or "")
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                status = main(list(args))
            except SystemExit as e:  # argparse: --help, usage errors
                status = e.code if isinstance(e.code, int) else 1
    finally:
        sys.stdin = saved
    return subprocess.CompletedProcess(["kueue-provreq", *args], status, out.getvalue(), err.getvalue())
