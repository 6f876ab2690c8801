"""A local control plane with the real Kueue: etcd, kube-apiserver, kube-controller-manager and
the Kueue manager, on 127.0.0.1, started from the programs ``make oracle`` builds.

``up`` starts them in order, each polled for readiness with one time limit for the whole:

1. etcd (``--unsafe-no-fsync``: the data is thrown away with the testbed);
2. kube-apiserver, with client-certificate authentication and RBAC (the administrator's
   certificate is in ``system:masters``) and service-account token signing;
3. the CRDs (Kueue's, the ProvisioningRequest CRD, JobSet's and PyTorchJob's), waited for until
   established *before* Kueue starts, because Kueue checks for the ProvisioningRequest API only
   once; Kueue's webhook configurations and the CRDs' conversion webhooks point at Kueue's
   webhook server on 127.0.0.1 with the testbed's CA bundle;
4. kube-controller-manager with only the garbage collector and the namespace controller
   (cascading deletes and namespace deletion; no job controller: pods are not part of the model),
   after the CRDs, so that its garbage collector watches their kinds from its start;
5. Kueue, with a Configuration suited to a laptop (leader election, internal certificate
   management and the on-demand visibility server off), ready when its readiness probe says so.

Everything lives in one folder (certificates, etcd's data, logs, Kueue's Configuration, the
kubeconfig, and ``testbed.json``, the record of what was started); ``down`` stops exactly the
processes recorded there and removes it.
"""

from __future__ import annotations

import base64
import json
import shutil
import socket
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import closing
from pathlib import Path
from typing import Any

import attrs
import yaml

from kueue_provreq.api import constants as c
from kueue_provreq.cluster.client import ApiError, Client, ClusterError, connect
from kueue_provreq.cluster.resources import Resource
from kueue_provreq.cluster.testbed import processes
from kueue_provreq.cluster.testbed.pki import Pki, make_pki
from kueue_provreq.cluster.testbed.processes import Process

#: What ``up`` may take in all before it gives up (Kueue's start is most of it).
START_TIMEOUT = 120.0

PROGRAMS = ("etcd", "kube-apiserver", "kube-controller-manager", "kueue")

#: Where Kueue v0.19 reads its metrics server's certificate when internal certificate
#: management is off (``cmd/kueue/main.go``: a fixed path, not a setting); it exits at start-up
#: without one, so the testbed writes one there.
KUEUE_METRICS_CERT_DIR = Path("/etc/kueue/metrics/certs")

#: The namespace Kueue's Configuration names (its own objects; none of the model's).
KUEUE_NAMESPACE = "kueue-system"

#: The job integrations the testbed enables: those the model has.
FRAMEWORKS = ("batch/job", "jobset.x-k8s.io/jobset", "kubeflow.org/pytorchjob")

#: Feature gates set on the real Kueue: upstream main's values where the release has the gate
#: (``docs/real-kueue.rst`` lists the release's differences from main), and the on-demand
#: visibility server off (an aggregated API server the model has no use for).
MAIN_GATES: Mapping[str, bool] = {
    c.GATE_CLEANUP_ON_EVICTION: True,
    c.GATE_UNADMITTED_OBSERVABILITY: True,
    c.GATE_ADMISSION_GATED_BY: True,
    c.GATE_PARTIAL_ADMISSION: True,
    c.GATE_SCHEDULING_EQUIVALENCE_HASHING: True,
    "VisibilityOnDemand": False,
}

#: Gates of main the release does not have, with the value it behaves as: a scenario's config
#: that sets one to that value asks for what the release does anyway, so the gate is left out
#: (Kueue refuses to start with a gate it does not know); any other value still makes it refuse.
ABSENT_GATES: Mapping[str, bool] = {c.GATE_KEEP_QUOTA_FOR_PROVREQ_RETRY: False}

#: The webhooks the testbed registers: Kueue's own kinds and the enabled integrations'.
WEBHOOK_GROUPS = frozenset({c.KUEUE_GROUP, "batch", "jobset.x-k8s.io", "kubeflow.org"})
WEBHOOK_RESOURCES = frozenset({"jobs", "jobsets", "pytorchjobs"})

STATE_FILE = "testbed.json"
LOGS = "logs"
KUEUE_CONFIG = "kueue-config.yaml"
KUEUE_CERTS = "kueue-webhook-certs"

CRD = Resource("CustomResourceDefinition", "apiextensions.k8s.io", "v1", "customresourcedefinitions", False)
NAMESPACE = Resource("Namespace", "", "v1", "namespaces", False)
MUTATING = Resource("MutatingWebhookConfiguration", "admissionregistration.k8s.io", "v1",
                    "mutatingwebhookconfigurations", False)
VALIDATING = Resource("ValidatingWebhookConfiguration", "admissionregistration.k8s.io", "v1",
                      "validatingwebhookconfigurations", False)
FIELD_MANAGER = "kueue-provreq-testbed"


@attrs.frozen
class Oracle:
    """What ``make oracle`` built: the four programs, the CRDs and Kueue's webhook manifests."""

    folder: Path

    @property
    def bin(self) -> Path:
        return self.folder / "bin"

    def program(self, name: str) -> Path:
        return self.bin / name

    @property
    def crds(self) -> Path:
        return self.folder / "crds"

    @property
    def kueue_config(self) -> Path:
        return self.folder / "kueue-config"

    @property
    def versions(self) -> dict[str, str]:
        try:
            lines = (self.folder / "VERSIONS").read_text().splitlines()
        except OSError:
            return {}
        return dict(line.split(" ", 1) for line in lines if " " in line)


def _repo_oracle() -> Path:
    """``.oracle/`` beside the package's source tree (an editable install, or a checkout)."""
    return Path(__file__).resolve().parents[3] / ".oracle"


def find_oracle(bin_dir: str | Path | None = None) -> Oracle:
    """The programs in ``bin_dir`` (``--bin``), else in ``./.oracle/bin``, else in the checkout's
    ``.oracle/bin``; a ClusterError says how to build them when none has all four."""
    candidates = [Path(bin_dir).resolve().parent] if bin_dir is not None else [Path.cwd() / ".oracle", _repo_oracle()]
    for folder in candidates:
        oracle = Oracle(folder)
        if all(oracle.program(p).is_file() for p in PROGRAMS):
            if not oracle.crds.is_dir() or not oracle.kueue_config.is_dir():
                raise ClusterError(f"{folder}: the programs are there but not the CRDs or Kueue's webhook "
                                   f"manifests: run `make oracle` again")
            return oracle
    where = Path(bin_dir) if bin_dir is not None else candidates[0] / "bin"
    missing = [p for p in PROGRAMS if not Oracle(where.parent).program(p).is_file()]
    raise ClusterError(f"{where}: no {', '.join(missing)}: build the control plane with `make oracle` "
                       f"(needs Go and the Go module proxy), or give --bin DIR")


def free_port() -> int:
    """A port on 127.0.0.1 nobody listens on now (the kernel picks it)."""
    with closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@attrs.frozen
class Testbed:
    """A running (or recorded) control plane: what ``up`` wrote to ``testbed.json``."""

    folder: str
    kubeconfig: str
    ports: dict[str, int]
    processes: tuple[Process, ...]
    versions: dict[str, str]
    kueue_config: str
    oracle: str
    started_in: float
    """Seconds ``up`` took, from the first program started to Kueue ready."""

    @property
    def metrics_url(self) -> str:
        """Kueue's metrics endpoint (HTTPS; a bearer token with ``get`` on ``/metrics``)."""
        return f"https://127.0.0.1:{self.ports['kueue-metrics']}/metrics"

    def process(self, name: str) -> Process:
        return next(p for p in self.processes if p.name == name)

    def save(self) -> None:
        data = attrs.asdict(self, recurse=True)
        data["processes"] = [attrs.asdict(p) for p in self.processes]
        (Path(self.folder) / STATE_FILE).write_text(json.dumps(data, indent=2) + "\n")

    @classmethod
    def load(cls, folder: Path) -> Testbed | None:
        try:
            data = json.loads((folder / STATE_FILE).read_text())
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as e:
            raise ClusterError(f"{folder / STATE_FILE}: unreadable ({e})") from None
        procs = tuple(Process(p["name"], p["pid"], p["start_ticks"], tuple(p["argv"]), p["log"])
                      for p in data.pop("processes"))
        return cls(processes=procs, **data)


def default_folder(oracle: Oracle) -> Path:
    return oracle.folder / "testbed"


# --- the configuration files -------------------------------------------------------------------

#: The kubeconfig's extension that names the testbed it belongs to, so that a tool given only
#: the kubeconfig (``conform --cluster``) can restart Kueue with another Configuration and read
#: its metrics.
KUBECONFIG_EXTENSION = "kueue-provreq.testbed"


def testbed_of(kubeconfig: str | Path) -> Testbed | None:
    """The running testbed a kubeconfig ``up`` wrote belongs to, or None (another cluster's)."""
    try:
        doc = yaml.safe_load(Path(kubeconfig).read_text())
    except (OSError, yaml.YAMLError):
        return None
    for ext in (doc or {}).get("extensions") or () if isinstance(doc, dict) else ():
        if isinstance(ext, dict) and ext.get("name") == KUBECONFIG_EXTENSION:
            folder = (ext.get("extension") or {}).get("folder")
            return Testbed.load(Path(folder)) if isinstance(folder, str) else None
    return None


def kubeconfig_text(server: str, pki: Pki, folder: Path) -> str:
    def b64(path: Path) -> str:
        return base64.b64encode(path.read_bytes()).decode()

    doc = {
        "apiVersion": "v1", "kind": "Config", "preferences": {},
        "clusters": [{"name": "testbed", "cluster": {"server": server,
                                                     "certificate-authority-data": b64(pki.ca.cert)}}],
        "users": [{"name": "admin", "user": {"client-certificate-data": b64(pki.admin.cert),
                                              "client-key-data": b64(pki.admin.key)}}],
        "contexts": [{"name": "testbed", "context": {"cluster": "testbed", "user": "admin"}}],
        "current-context": "testbed",
        "extensions": [{"name": KUBECONFIG_EXTENSION, "extension": {
            "apiVersion": "kueue-provreq/v1", "kind": "Testbed", "folder": str(folder)}}],
    }
    return yaml.safe_dump(doc, sort_keys=False)


def kueue_configuration(ports: Mapping[str, int], cert_dir: Path,
                        overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Kueue's Configuration for a laptop, with ``overrides`` (a Configuration fragment, such as
    a conformance scenario's ``config``) merged over it; ``featureGates`` merge by gate."""
    config: dict[str, Any] = {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
        "namespace": KUEUE_NAMESPACE,
        "health": {"healthProbeBindAddress": f"127.0.0.1:{ports['kueue-health']}"},
        "metrics": {"bindAddress": f"127.0.0.1:{ports['kueue-metrics']}"},
        "webhook": {"host": "127.0.0.1", "port": ports["kueue-webhook"], "certDir": str(cert_dir)},
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {"enable": False},
        "integrations": {"frameworks": list(FRAMEWORKS)},
        "featureGates": dict(MAIN_GATES),
    }
    for key, value in (overrides or {}).items():
        if key == "featureGates" and isinstance(value, Mapping):
            given = {gate: on for gate, on in value.items() if ABSENT_GATES.get(gate) is not on}
            config["featureGates"] = {**config["featureGates"], **given}
        elif key == "integrations" and isinstance(value, Mapping):
            config["integrations"] = {**config["integrations"], **value}
        else:
            config[key] = value
    return config


def _conversion_crds(oracle: Oracle) -> set[str]:
    """The CRDs Kueue's release converts between API versions through its webhook: those whose
    conversion-webhook patch its CRD kustomization applies (not every patch file is listed)."""
    folder = oracle.kueue_config / "crd-patches"
    kustomization = yaml.safe_load((folder / "kustomization.yaml").read_text()) or {}
    names = set()
    for entry in kustomization.get("patches") or ():
        doc = yaml.safe_load((folder / entry["path"]).read_text()) or {}
        if (doc.get("spec", {}).get("conversion") or {}).get("strategy") == "Webhook":
            names.add(str(doc["metadata"]["name"]))
    return names


def _crd_documents(oracle: Oracle, webhook_url: str, ca_bundle: str) -> Iterator[dict[str, Any]]:
    converted = _conversion_crds(oracle)
    for path in sorted(oracle.crds.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if not isinstance(doc, dict) or doc.get("kind") != "CustomResourceDefinition":
                continue
            if doc["metadata"]["name"] in converted:
                doc["spec"]["conversion"] = {"strategy": "Webhook", "webhook": {
                    "conversionReviewVersions": ["v1"],
                    "clientConfig": {"url": f"{webhook_url}/convert", "caBundle": ca_bundle}}}
            yield doc


def _webhook_documents(oracle: Oracle, webhook_url: str, ca_bundle: str) -> Iterator[dict[str, Any]]:
    """Kueue's webhook configurations, pointed at its server on 127.0.0.1 and kept to the
    webhooks of Kueue's own kinds and the enabled integrations (a webhook whose handler Kueue
    does not serve would refuse every such object)."""
    manifests = oracle.kueue_config / "webhook-manifests.yaml"
    for doc in yaml.safe_load_all(manifests.read_text()):
        if not isinstance(doc, dict):
            continue
        kept = []
        for hook in doc.get("webhooks") or ():
            rules = hook.get("rules") or ()
            if not all(set(r.get("apiGroups", ())) <= WEBHOOK_GROUPS and
                       (c.KUEUE_GROUP in r.get("apiGroups", ()) or set(r.get("resources", ())) <= WEBHOOK_RESOURCES)
                       for r in rules):
                continue
            path = hook["clientConfig"]["service"]["path"]
            hook["clientConfig"] = {"url": f"{webhook_url}{path}", "caBundle": ca_bundle}
            hook["namespaceSelector"] = {"matchExpressions": [{
                "key": "kubernetes.io/metadata.name", "operator": "NotIn",
                "values": ["kube-system", KUEUE_NAMESPACE]}]}
            kept.append(hook)
        doc["webhooks"] = kept
        yield doc


# --- probes ------------------------------------------------------------------------------------

def _http_ok(url: str, context: ssl.SSLContext | None = None) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2, context=context) as resp:
            return 200 <= int(resp.status) < 300
    except (OSError, urllib.error.URLError, ssl.SSLError):
        return False


def _client_tls(pki: Pki) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(pki.ca.cert))
    context.load_cert_chain(str(pki.admin.cert), str(pki.admin.key))
    return context


def _unverified_tls() -> ssl.SSLContext:
    """kube-controller-manager serves its health checks with a certificate it makes itself."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


def _established(client: Client, name: str) -> bool:
    try:
        crd = client.get(CRD, "", name)
    except ApiError:
        return False
    return any(cond.get("type") == "Established" and cond.get("status") == "True"
               for cond in crd.get("status", {}).get("conditions") or ())


def _create_or_replace(client: Client, res: Resource, body: dict[str, Any]) -> None:
    name = body["metadata"]["name"]
    try:
        client.create(res, "", body, FIELD_MANAGER)
    except ApiError as e:
        if e.code != 409:
            raise ClusterError(f"cannot create {res.kind} {name}: {e}") from None
        current = client.get(res, "", name)
        body = {**body, "metadata": {**body["metadata"],
                                     "resourceVersion": current["metadata"]["resourceVersion"]}}
        client.replace(res, "", name, body, FIELD_MANAGER)


# --- up, down, status --------------------------------------------------------------------------

def up(oracle: Oracle, folder: Path, kubeconfig_out: Path | None = None, timeout: float = START_TIMEOUT,
       kueue_overrides: Mapping[str, Any] | None = None) -> Testbed:
    """Starts the control plane and Kueue; returns once Kueue is ready.  On any failure every
    program already started is stopped again and the folder removed."""
    if Testbed.load(folder) is not None:
        raise ClusterError(f"{folder}: a testbed is recorded there already: `kueue-provreq testbed down` first")
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    started: list[Process] = []
    try:
        return _up(oracle, folder, kubeconfig_out, timeout, kueue_overrides, started)
    except BaseException:
        for proc in reversed(started):
            processes.stop(proc)
        shutil.rmtree(folder, ignore_errors=True)
        raise


def _up(oracle: Oracle, folder: Path, kubeconfig_out: Path | None, timeout: float,
        kueue_overrides: Mapping[str, Any] | None, started: list[Process]) -> Testbed:
    begin = time.monotonic()
    deadline = begin + timeout
    pki = make_pki(folder / "pki")
    ports = {name: free_port() for name in ("etcd-client", "etcd-peer", "apiserver", "controller-manager",
                                            "kueue-webhook", "kueue-health", "kueue-metrics")}
    logs = folder / LOGS
    server = f"https://127.0.0.1:{ports['apiserver']}"
    kubeconfig = folder / "kubeconfig"
    kubeconfig.write_text(kubeconfig_text(server, pki, folder))
    kubeconfig.chmod(0o600)

    def launch(name: str, argv: list[str]) -> Process:
        proc = processes.start(name, [str(oracle.program(name)), *argv], logs / f"{name}.log")
        started.append(proc)
        return proc

    etcd_url = f"http://127.0.0.1:{ports['etcd-client']}"
    etcd = launch("etcd", [
        "--name=testbed", f"--data-dir={folder / 'etcd'}",
        f"--listen-client-urls={etcd_url}", f"--advertise-client-urls={etcd_url}",
        f"--listen-peer-urls=http://127.0.0.1:{ports['etcd-peer']}",
        f"--initial-advertise-peer-urls=http://127.0.0.1:{ports['etcd-peer']}",
        f"--initial-cluster=testbed=http://127.0.0.1:{ports['etcd-peer']}",
        "--unsafe-no-fsync", "--log-level=warn",
    ])
    processes.wait_ready(etcd, lambda: _http_ok(f"{etcd_url}/health"), deadline, "healthy")

    apiserver = launch("kube-apiserver", [
        f"--etcd-servers={etcd_url}", "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
        f"--secure-port={ports['apiserver']}", f"--cert-dir={folder / 'apiserver-certs'}",
        f"--tls-cert-file={pki.apiserver.cert}", f"--tls-private-key-file={pki.apiserver.key}",
        f"--client-ca-file={pki.ca.cert}", "--authorization-mode=RBAC",
        "--service-account-issuer=https://kubernetes.default.svc",
        f"--service-account-key-file={pki.service_accounts.cert}",
        f"--service-account-signing-key-file={pki.service_accounts.key}",
        "--service-cluster-ip-range=10.0.0.0/24", "--allow-privileged=true",
        "--disable-admission-plugins=ServiceAccount", "--enable-priority-and-fairness=false",
        "--v=0",
    ])
    tls = _client_tls(pki)
    processes.wait_ready(apiserver, lambda: _http_ok(f"{server}/readyz", tls), deadline, "ready")

    webhook_url = f"https://127.0.0.1:{ports['kueue-webhook']}"
    ca_bundle = base64.b64encode(pki.ca.cert.read_bytes()).decode()
    with connect(str(kubeconfig)) as client:
        crds = list(_crd_documents(oracle, webhook_url, ca_bundle))
        for doc in crds:
            _create_or_replace(client, CRD, doc)
        _create_or_replace(client, NAMESPACE, {"apiVersion": "v1", "kind": "Namespace",
                                               "metadata": {"name": KUEUE_NAMESPACE}})
        while not all(_established(client, d["metadata"]["name"]) for d in crds):
            if time.monotonic() > deadline:
                raise ClusterError("the CRDs are not established in time")
            time.sleep(processes.POLL)
        for doc in _webhook_documents(oracle, webhook_url, ca_bundle):
            _create_or_replace(client, MUTATING if doc["kind"] == MUTATING.kind else VALIDATING, doc)

    # the garbage collector learns the resources it watches when it starts (and only every 30 s
    # after): started once the CRDs are established, it collects a deleted request's PodTemplates
    # from the first scenario on
    controller_manager = launch("kube-controller-manager", [
        f"--kubeconfig={kubeconfig}", f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}", "--controllers=garbage-collector-controller,namespace-controller",
        "--leader-elect=false", "--bind-address=127.0.0.1", f"--secure-port={ports['controller-manager']}",
        f"--cert-dir={folder / 'controller-manager-certs'}", "--use-service-account-credentials=false",
        "--v=0",
    ])
    processes.wait_ready(controller_manager,
                         lambda: _http_ok(f"https://127.0.0.1:{ports['controller-manager']}/healthz",
                                          _unverified_tls()), deadline, "healthy")

    _write_kueue_certificates(folder, pki)
    testbed = Testbed(
        folder=str(folder), kubeconfig=str(kubeconfig), ports=ports, processes=tuple(started),
        versions=oracle.versions, kueue_config=str(folder / KUEUE_CONFIG), oracle=str(oracle.folder),
        started_in=0.0)
    kueue = _start_kueue(testbed, kueue_overrides, deadline)
    started.append(kueue)
    testbed = attrs.evolve(testbed, processes=tuple(started), started_in=round(time.monotonic() - begin, 1))
    testbed.save()
    if kubeconfig_out is not None:
        kubeconfig_out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(kubeconfig, kubeconfig_out)
        kubeconfig_out.chmod(0o600)
    return testbed


def _write_kueue_certificates(folder: Path, pki: Pki) -> None:
    """The certificates Kueue insists on: its webhook server's (in the folder its Configuration
    names) and its metrics server's (at Kueue's fixed path)."""
    cert_dir = folder / KUEUE_CERTS
    cert_dir.mkdir(exist_ok=True)
    shutil.copyfile(pki.webhook.cert, cert_dir / "tls.crt")
    shutil.copyfile(pki.webhook.key, cert_dir / "tls.key")
    try:
        KUEUE_METRICS_CERT_DIR.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(pki.webhook.cert, KUEUE_METRICS_CERT_DIR / "tls.crt")
        shutil.copyfile(pki.webhook.key, KUEUE_METRICS_CERT_DIR / "tls.key")
    except OSError as e:
        raise ClusterError(f"Kueue reads its metrics certificate from {KUEUE_METRICS_CERT_DIR}, a fixed path: "
                           f"cannot write it ({e.strerror}); run as a user who may, or create it writable") from None


def _start_kueue(testbed: Testbed, overrides: Mapping[str, Any] | None, deadline: float) -> Process:
    """Writes Kueue's Configuration (the laptop one with ``overrides`` over it), starts Kueue and
    waits until its readiness probe answers (webhook server and certificates ready)."""
    folder = Path(testbed.folder)
    config = Path(testbed.kueue_config)
    config.write_text(yaml.safe_dump(kueue_configuration(testbed.ports, folder / KUEUE_CERTS, overrides),
                                     sort_keys=False))
    program = Oracle(Path(testbed.oracle)).program("kueue")
    kueue = processes.start("kueue", [str(program), f"--config={config}", "--zap-log-level=info"],
                            folder / LOGS / "kueue.log", {"KUBECONFIG": testbed.kubeconfig})
    try:
        processes.wait_ready(kueue, lambda: _http_ok(f"http://127.0.0.1:{testbed.ports['kueue-health']}/readyz"),
                             deadline, "ready")
    except BaseException:
        processes.stop(kueue)
        raise
    return kueue


def restart_kueue(testbed: Testbed, overrides: Mapping[str, Any] | None = None,
                  timeout: float = START_TIMEOUT) -> Testbed:
    """Stops Kueue and starts it again with ``overrides`` over the laptop Configuration (what a
    conformance scenario's ``config`` needs); the rest of the control plane keeps running."""
    processes.stop(testbed.process("kueue"))
    kueue = _start_kueue(testbed, overrides, time.monotonic() + timeout)
    updated = attrs.evolve(testbed, processes=(*(p for p in testbed.processes if p.name != "kueue"), kueue))
    updated.save()
    return updated


def down(folder: Path) -> list[str]:
    """Stops exactly the processes ``up`` recorded in ``folder`` (newest first) and removes the
    folder; returns the names of those that were still running."""
    testbed = Testbed.load(folder)
    if testbed is None:
        return []
    stopped = []
    for proc in reversed(testbed.processes):
        if processes.alive(proc):
            stopped.append(proc.name)
        processes.stop(proc)
    shutil.rmtree(folder, ignore_errors=True)
    return stopped


def status(folder: Path) -> tuple[Testbed, dict[str, bool]] | None:
    """The recorded testbed and, per program, whether its process still runs."""
    testbed = Testbed.load(folder)
    if testbed is None:
        return None
    return testbed, {p.name: processes.alive(p) for p in testbed.processes}
