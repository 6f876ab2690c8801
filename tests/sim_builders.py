"""Builders shared by the forecast, simulation and sweep tests."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import yaml
from kueue_provreq.api.meta import Time
from kueue_provreq.api.objects import KubeObject
from kueue_provreq.manifests import load_object, load_yaml_documents

T0 = Time(1_704_067_200)  # 2024-01-01T00:00:00Z
ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "simulations"

SETUP = textwrap.dedent("""\
    apiVersion: kueue.x-k8s.io/v1beta2
    kind: ResourceFlavor
    metadata: {name: default-flavor}
    ---
    apiVersion: kueue.x-k8s.io/v1beta2
    kind: ClusterQueue
    metadata: {name: cq}
    spec:
      namespaceSelector: {}
      resourceGroups:
        - coveredResources: [cpu, nvidia.com/gpu]
          flavors: [{name: default-flavor, resources: [{name: cpu, nominalQuota: 8}, {name: nvidia.com/gpu, nominalQuota: 8}]}]
      admissionChecksStrategy: {admissionChecks: [{name: prov}]}
    ---
    apiVersion: kueue.x-k8s.io/v1beta2
    kind: LocalQueue
    metadata: {namespace: default, name: lq}
    spec: {clusterQueue: cq}
    ---
    apiVersion: kueue.x-k8s.io/v1beta2
    kind: AdmissionCheck
    metadata: {name: prov}
    spec:
      controllerName: kueue.x-k8s.io/provisioning-request
      parameters: {apiGroup: kueue.x-k8s.io, kind: ProvisioningRequestConfig, name: prc}
    ---
    apiVersion: kueue.x-k8s.io/v1beta2
    kind: ProvisioningRequestConfig
    metadata: {name: prc}
    spec:
      provisioningClassName: check-capacity.autoscaling.x-k8s.io
      managedResources: [nvidia.com/gpu]
      retryStrategy: {backoffLimitCount: 2, backoffBaseSeconds: 60, backoffMaxSeconds: 1800}
""")


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
