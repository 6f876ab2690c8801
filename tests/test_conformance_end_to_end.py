"""Scenarios run by the conformance runner against the real controllers (``settle``).

Unlike test_conformance_runner.py, these depend on the controllers' behaviour: a failure
here may be a controller's, not the runner's.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from kueue_provreq.conformance.runner import collect, conform

ROOT = Path(__file__).resolve().parents[1]

STORY = textwrap.dedent("""\
    name: a workload is admitted after provisioning
    objects:
      - {apiVersion: kueue.x-k8s.io/v1beta2, kind: ResourceFlavor, metadata: {name: default}}
      - apiVersion: kueue.x-k8s.io/v1beta2
        kind: ClusterQueue
        metadata: {name: cq}
        spec:
          namespaceSelector: {}
          resourceGroups: [{coveredResources: [cpu], flavors: [{name: default, resources: [{name: cpu, nominalQuota: 4}]}]}]
          admissionChecksStrategy: {admissionChecks: [{name: check}]}
      - {apiVersion: kueue.x-k8s.io/v1beta2, kind: LocalQueue, metadata: {namespace: ns, name: lq}, spec: {clusterQueue: cq}}
      - apiVersion: kueue.x-k8s.io/v1beta2
        kind: AdmissionCheck
        metadata: {name: check}
        spec:
          controllerName: kueue.x-k8s.io/provisioning-request
          parameters: {apiGroup: kueue.x-k8s.io, kind: ProvisioningRequestConfig, name: conf}
      - apiVersion: kueue.x-k8s.io/v1beta2
        kind: ProvisioningRequestConfig
        metadata: {name: conf}
        spec: {provisioningClassName: check-capacity.autoscaling.x-k8s.io}
      - apiVersion: kueue.x-k8s.io/v1beta2
        kind: Workload
        metadata: {namespace: ns, name: wl}
        spec:
          queueName: lq
          podSets: [{name: main, count: 1, template: {spec: {containers: [{name: c, resources: {requests: {cpu: "1"}}}]}}}]
    steps:
      - settle: {}
      - expect:
          objects:
            - kind: Workload
              metadata: {namespace: ns, name: wl}
              status:
                conditions: [{type: QuotaReserved, status: "True"}, {type: Admitted, status: "False"}]
                admissionChecks: [{name: check, state: Pending}]
          count: {ProvisioningRequest: 1, PodTemplate: 1}
          events:
            - {type: Normal, reason: QuotaReserved, object: {kind: Workload, namespace: ns, name: wl}}
            - {type: Normal, reason: ProvisioningRequestCreated, message: 'Created ProvisioningRequest: "wl-check-1"'}
          metrics:
            - {name: reserving_active_workloads, labels: {cluster_queue: cq}, value: 1}
            - {name: pending_workloads, labels: {cluster_queue: cq}, value: 0}
      - autoscaler: {request: $latest, condition: Provisioned, status: "True", reason: CapacityIsFound}
      - advance: 5s
      - settle: {}
      - expect:
          objects:
            - kind: Workload
              metadata: {namespace: ns, name: wl}
              status:
                conditions: [{type: Admitted, status: "True", lastTransitionTime: {$after: 5s}}]
                admissionChecks: [{name: check, state: Ready}]
          events: [{reason: AdmissionCheckUpdated}, {reason: Admitted}]
""")


def test_a_provisioning_story_passes(tmp_path: Path) -> None:
    (tmp_path / "story.yaml").write_text(STORY)
    [outcome] = conform(collect([tmp_path]))
    assert outcome.line() == "PASS a workload is admitted after provisioning"


# examples/ itself holds runnable stories; its sub-folders hold other inputs (clusters, simulations)
BUNDLED = collect([ROOT / "specs"]) + sorted((ROOT / "examples").glob("*.yaml"))


@pytest.mark.parametrize("path", BUNDLED, ids=[str(p.relative_to(ROOT)) for p in BUNDLED])
def test_every_bundled_scenario_passes(path: Path) -> None:
    """Every scenario of ``specs/`` and every runnable story of ``examples/``."""
    outcomes = list(conform([path]))
    assert outcomes and [o.line() for o in outcomes if not o.passed] == []


def test_the_bundle_is_all_there() -> None:
    assert len(BUNDLED) >= 69
