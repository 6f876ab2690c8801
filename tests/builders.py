"""Shared builders for the tests: one clock, one way to write a condition, a Workload, a pod
template, a check state, and to run the CLI in process; and the what-if commands' inputs (a
small provisioning setup, a Job, a simulation file).

Defaults are the smallest valid object; a test module that needs other defaults wraps these
(``functools.partial`` or a two-line function) rather than writing its own.
"""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys
import textwrap
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml
from kueue_provreq.api import constants as c
from kueue_provreq.api.frozen import FrozenMap, freeze
from kueue_provreq.api.meta import Condition, ObjectMeta, OwnerReference, Time
from kueue_provreq.api.objects import KubeObject
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
from kueue_provreq.manifests import load_object, load_yaml_documents

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


#: the smallest passing scenario: a workload, its quota reservation, one expectation
A_WORKLOAD_EXISTS = textwrap.dedent("""\
    name: a workload exists
    objects:
      - apiVersion: kueue.x-k8s.io/v1beta2
        kind: Workload
        metadata: {namespace: ns, name: wl}
        spec: {queueName: lq, podSets: [{name: main, count: 1, template: {spec: {containers: [{name: c}]}}}]}
    steps:
      - setQuotaReservation: {workload: ns/wl, admission: {clusterQueue: cq, podSetAssignments: [{name: main}]}}
      - expect:
          objects: [{kind: Workload, metadata: {namespace: ns, name: wl},
                     status: {conditions: [{type: QuotaReserved, status: "True"}]}}]
""")


# --- what-if inputs (forecast, simulate, sweep) ---------------------------------------------------------

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "simulations"

RETRYING_PRC = ("{provisioningClassName: check-capacity.autoscaling.x-k8s.io, managedResources: [nvidia.com/gpu],"
                " retryStrategy: {backoffLimitCount: 2, backoffBaseSeconds: 60, backoffMaxSeconds: 1800}}")


def queue_setup(quota: int = 8, prc_spec: str = RETRYING_PRC) -> str:
    """A ResourceFlavor, a ClusterQueue with ``quota`` cpu and GPUs behind check ``prov``, LocalQueue
    ``default/lq`` and ProvisioningRequestConfig ``prc`` with spec ``prc_spec`` (flow style)."""
    return textwrap.dedent(f"""\
    apiVersion: kueue.x-k8s.io/v1beta2
    kind: ResourceFlavor
    metadata: {{name: default-flavor}}
    ---
    apiVersion: kueue.x-k8s.io/v1beta2
    kind: ClusterQueue
    metadata: {{name: cq}}
    spec:
      namespaceSelector: {{}}
      resourceGroups:
        - coveredResources: [cpu, nvidia.com/gpu]
          flavors: [{{name: default-flavor, resources: [{{name: cpu, nominalQuota: {quota}}}, {{name: nvidia.com/gpu, nominalQuota: {quota}}}]}}]
      admissionChecksStrategy: {{admissionChecks: [{{name: prov}}]}}
    ---
    apiVersion: kueue.x-k8s.io/v1beta2
    kind: LocalQueue
    metadata: {{namespace: default, name: lq}}
    spec: {{clusterQueue: cq}}
    ---
    apiVersion: kueue.x-k8s.io/v1beta2
    kind: AdmissionCheck
    metadata: {{name: prov}}
    spec:
      controllerName: kueue.x-k8s.io/provisioning-request
      parameters: {{apiGroup: kueue.x-k8s.io, kind: ProvisioningRequestConfig, name: prc}}
    ---
    apiVersion: kueue.x-k8s.io/v1beta2
    kind: ProvisioningRequestConfig
    metadata: {{name: prc}}
    spec: {prc_spec}
""")


SETUP = queue_setup()


def job(name: str = "train", gpus: int = 1, queue: str | None = "lq", pods: int = 1) -> str:
    labels = f"labels: {{kueue.x-k8s.io/queue-name: {queue}}}" if queue else "labels: {}"
    return textwrap.dedent(f"""\
        apiVersion: batch/v1
        kind: Job
        metadata: {{name: {name}, namespace: default, {labels}}}
        spec:
          parallelism: {pods}
          template:
            spec:
              restartPolicy: Never
              containers:
                - name: c
                  image: busybox
                  resources: {{requests: {{cpu: "1", nvidia.com/gpu: {gpus}}}, limits: {{nvidia.com/gpu: {gpus}}}}}
        """)


def objects(*texts: str) -> list[KubeObject]:
    return [load_object(d) for text in texts for d in load_yaml_documents(text, "<test>")]


def simulation_file(tmp_path: Path, name: str = "sim.yaml", **changes: Any) -> Path:
    """A small simulation file (the SETUP, one GPU Job template), with top-level ``changes``."""
    data: dict[str, Any] = {
        "name": "small",
        "seed": 5,
        "setup": {"manifests": list(yaml.safe_load_all(SETUP))},
        "workloads": {"count": 12, "arrival": {"process": "Poisson", "ratePerHour": 30},
                      "templates": [{"name": "train", "job": yaml.safe_load(job(gpus=2))}]},
        "jobs": {"podsReadyTime": "30s", "runningTime": {"exponential": {"mean": "20m"}}},
        "autoscaler": {"check-capacity.autoscaling.x-k8s.io": {"provisioningTime": {"uniform": {"min": "5s",
                                                                                                 "max": "2m"}},
                                                                "failureProbability": 0.3}},
    }
    data.update(changes)
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path
