"""examples/kind: the manifests are ones the API server accepts, and the RBAC grants exactly
what the commands do (a snapshot's list calls; the stand-in's list, watch and status patch)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from kueue_provreq.cluster import client
from kueue_provreq.cluster.resources import RESOURCES, SNAPSHOT_KINDS
from kueue_provreq.manifests import load_object

KIND = Path(__file__).parents[1] / "examples" / "kind"


def documents(name: str) -> list[dict[str, object]]:
    return [d for d in yaml.safe_load_all((KIND / name).read_text()) if d]


def test_setup_and_job_validate() -> None:
    objects = [load_object(d) for name in ("setup.yaml", "job.yaml") for d in documents(name)]
    assert [o.KIND for o in objects] == ["ResourceFlavor", "ProvisioningRequestConfig", "AdmissionCheck",
                                         "ClusterQueue", "LocalQueue", "Job"]


def rules(role: str) -> set[tuple[str, str, str]]:
    (cluster_role,) = [d for d in documents("rbac.yaml") if d["metadata"]["name"] == role]  # type: ignore[index]
    return {(group, resource, verb) for rule in cluster_role["rules"]  # type: ignore[index]
            for group in rule["apiGroups"] for resource in rule["resources"] for verb in rule["verbs"]}


def test_the_reader_role_grants_the_snapshot_list_calls() -> None:
    wanted = {(RESOURCES[k].group, RESOURCES[k].plural, "list") for k in SNAPSHOT_KINDS}
    assert rules("kueue-provreq-reader") == wanted


def test_the_autoscaler_role_grants_watch_and_status_patch_only() -> None:
    assert rules("kueue-provreq-autoscaler") == {
        ("autoscaling.x-k8s.io", "provisioningrequests", "list"),
        ("autoscaling.x-k8s.io", "provisioningrequests", "watch"),
        ("autoscaling.x-k8s.io", "provisioningrequests/status", "patch")}


def test_the_cronjob_audits_in_cluster_with_the_reader_role() -> None:
    docs = {d["kind"]: d for d in documents("audit-cronjob.yaml")}  # type: ignore[index]
    binding = docs["ClusterRoleBinding"]
    assert binding["roleRef"]["name"] == "kueue-provreq-reader"  # type: ignore[index]
    job = docs["CronJob"]["spec"]["jobTemplate"]["spec"]["template"]["spec"]  # type: ignore[index]
    assert job["serviceAccountName"] == binding["subjects"][0]["name"]  # type: ignore[index]
    assert job["containers"][0]["command"] == ["kueue-provreq", "audit", "--in-cluster", "--strict", "-o", "json"]


def test_in_cluster_uses_the_pods_service_account(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from kubernetes.config import incluster_config

    with pytest.raises(client.ClusterError, match="^--in-cluster: "):
        monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
        client.connect_in_cluster()
    token, cert = tmp_path / "token", tmp_path / "ca.crt"
    token.write_text("service-account-token")
    cert.write_text("-----BEGIN CERTIFICATE-----\nnot read before a request\n-----END CERTIFICATE-----\n")
    monkeypatch.setattr(incluster_config, "SERVICE_TOKEN_FILENAME", str(token))
    monkeypatch.setattr(incluster_config, "SERVICE_CERT_FILENAME", str(cert))
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    with client.connect_in_cluster() as api:
        assert api.server == "https://10.96.0.1:443" and api.context == "in-cluster"
