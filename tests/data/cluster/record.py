"""Record the cluster fixtures from a real API server and the real Kueue: the testbed ``make
oracle`` builds (``kueue-provreq testbed``), started and stopped by this script.

    .venv/bin/python tests/data/cluster/record.py        # about two minutes; rewrites tests/data/cluster/*/

Nothing here is written by hand: the script makes the objects a user would (a ClusterQueue
with a provisioning check, Jobs labelled with its LocalQueue), lets the real Kueue do its work,
answers the ProvisioningRequests Kueue makes as Cluster Autoscaler would (through the port, as
``kueue-provreq autoscaler`` does, with its field manager), and records what the API server
answers to the port's requests: the list calls of a snapshot, in pages of 2
(``apiserver.json``, through :class:`tests.apiserver.RecordingProxy`), and ``kubectl get -A
-o json|yaml``-style dumps of the same objects (``dump.json``, ``dump.yaml``).
``recording.json`` says when each cluster was recorded (the clock the tests read it at) and
with which Kueue.

Clusters:

* ``healthy`` -- ClusterQueue ``gpu-queue`` (18 GPUs) with the ``gpu-capacity`` provisioning
  check (``check-capacity.autoscaling.x-k8s.io``, ``noRetry``, retryStrategy 3 retries from a
  20 s base) and four Jobs in namespace ``ml``: ``train-a`` admitted (its request
  provisioned); ``train-b`` waiting behind its second ProvisioningRequest (the first failed,
  the second is Accepted); ``tune-d`` whose first attempt failed 10 s before the recording;
  ``eval-c`` queued without quota.  Plus the Events Kueue wrote, a kind the model skips.
* ``restricted`` -- the healthy cluster as a user who may list everything the model reads but
  PodTemplates sees it (``alice@example.com``, impersonated; RBAC answers 403).
* ``troubled`` -- the healthy cluster plus what ``audit`` must report.  Kueue makes a
  misconfigured ClusterQueue ``research-queue`` inactive, an AdmissionCheck naming a missing
  config inactive, and a config whose managedResources no podset uses; then, with Kueue and
  the garbage collector stopped (and Kueue's webhooks removed, as when a controller is down), the states Kueue itself never
  leaves are written through the API server as a broken controller or a hand edit would: an
  admitted workload's check set back to Pending (``serve-e``), a second live request for one
  check (``train-g``), a check put in Retry with its workload's quota held (``sweep-h``), a
  request provisioned while Kueue is down (``bench-k``), and a Workload deleted whose
  request and templates the garbage collector never got to (``old-f``).  It is read an hour
  after the recording (``recording.json``'s ``auditAt``), when every wait has gone stale.
* ``writes`` -- what the API server answered when the model's controllers' effects were
  applied to the healthy cluster (Kueue stopped, its webhooks set aside, right after the
  healthy recording, so the server holds exactly what the dump holds): the workload
  controller's eviction of ``tune-d`` a second after its Retry is due (a status patch and an
  Event), the same eviction again from the stale read (409 Conflict), the provisioning
  controller's preconditioned delete of the failed request, and a PodTemplate created twice
  (201, then 409 AlreadyExists).  ``tests/test_cluster_write.py`` computes the same effects
  from the healthy dump and replays these answers.
"""

from __future__ import annotations

import copy
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from kueue_provreq.api import constants as c  # noqa: E402
from kueue_provreq.api.evolve import evolve  # noqa: E402
from kueue_provreq.api.meta import Time  # noqa: E402
from kueue_provreq.autoscaler import parse_script, reconcile  # noqa: E402
from kueue_provreq.cluster import client, snapshot  # noqa: E402
from kueue_provreq.cluster.apply import apply_effects  # noqa: E402
from kueue_provreq.cluster.autoscaler import FIELD_MANAGER as AUTOSCALER  # noqa: E402
from kueue_provreq.cluster.resources import EVENT, RESOURCES, SNAPSHOT_KINDS, Resource  # noqa: E402
from kueue_provreq.cluster.testbed import controlplane, processes  # noqa: E402
from kueue_provreq.controllers import provisioning, workload  # noqa: E402
from kueue_provreq.controllers.context import Context  # noqa: E402
from kueue_provreq.manifests.codec import format_time, parse_time  # noqa: E402
from kueue_provreq.manifests.objects import IGNORE  # noqa: E402
from kueue_provreq.world import Create, Update, World  # noqa: E402

from apiserver import RecordingProxy  # noqa: E402

Obj = dict[str, Any]

KUEUE = f"{c.KUEUE_GROUP}/v1beta2"
NS = "ml"
CHECK = "gpu-capacity"
CONFIG = "gpu-capacity-config"
FLAVOR = "a100"
CQ = "gpu-queue"
LQ = "team-a"
USER = "alice@example.com"
KUBECTL = "kubectl-create"
BACKOFF_BASE = 20
PAGE = 2
AUDIT_LATER = 3600

RBAC = "rbac.authorization.k8s.io"
CLUSTER_ROLE = Resource("ClusterRole", RBAC, "v1", "clusterroles", False)
BINDING = Resource("ClusterRoleBinding", RBAC, "v1", "clusterrolebindings", False)
PR = RESOURCES[c.PROVISIONING_REQUEST]
WL = RESOURCES[c.WORKLOAD]


def log(line: str) -> None:
    print(f"record: {line}", file=sys.stderr, flush=True)


def wait(what: str, probe: Callable[[], Any], timeout: float = 120.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        found = probe()
        if found:
            return found
        if time.monotonic() > deadline:
            raise SystemExit(f"record: not in {timeout:.0f} s: {what}")
        time.sleep(0.2)


# --- what a user creates ---------------------------------------------------------------------------


def setup() -> list[Obj]:
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}},
        {"apiVersion": KUEUE, "kind": c.RESOURCE_FLAVOR, "metadata": {"name": FLAVOR},
         "spec": {"nodeLabels": {"cloud.google.com/gke-accelerator": "nvidia-tesla-a100"},
                  "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]}},
        {"apiVersion": KUEUE, "kind": c.PROVISIONING_REQUEST_CONFIG, "metadata": {"name": CONFIG},
         "spec": {"provisioningClassName": "check-capacity.autoscaling.x-k8s.io", "parameters": {"noRetry": "true"},
                  "managedResources": ["nvidia.com/gpu"],
                  "retryStrategy": {"backoffLimitCount": 3, "backoffBaseSeconds": BACKOFF_BASE,
                                    "backoffMaxSeconds": 1800}}},
        {"apiVersion": KUEUE, "kind": c.ADMISSION_CHECK, "metadata": {"name": CHECK},
         "spec": {"controllerName": c.PROVISIONING_REQUEST_CONTROLLER_NAME,
                  "parameters": {"apiGroup": c.KUEUE_GROUP, "kind": c.PROVISIONING_REQUEST_CONFIG, "name": CONFIG}}},
        {"apiVersion": KUEUE, "kind": c.CLUSTER_QUEUE, "metadata": {"name": CQ},
         "spec": {"namespaceSelector": {}, "resourceGroups": [{
             "coveredResources": ["cpu", "memory", "nvidia.com/gpu"],
             "flavors": [{"name": FLAVOR, "resources": [{"name": "cpu", "nominalQuota": "96"},
                                                        {"name": "memory", "nominalQuota": "768Gi"},
                                                        {"name": "nvidia.com/gpu", "nominalQuota": "18"}]}]}],
                  "admissionChecksStrategy": {"admissionChecks": [{"name": CHECK}]}}},
        {"apiVersion": KUEUE, "kind": c.LOCAL_QUEUE, "metadata": {"namespace": NS, "name": LQ},
         "spec": {"clusterQueue": CQ}},
    ]


def misconfiguration() -> list[Obj]:
    def check(name: str, config: str) -> Obj:
        return {"apiVersion": KUEUE, "kind": c.ADMISSION_CHECK, "metadata": {"name": name},
                "spec": {"controllerName": c.PROVISIONING_REQUEST_CONTROLLER_NAME,
                         "parameters": {"apiGroup": c.KUEUE_GROUP, "kind": c.PROVISIONING_REQUEST_CONFIG,
                                        "name": config}}}

    return [
        {"apiVersion": KUEUE, "kind": c.PROVISIONING_REQUEST_CONFIG, "metadata": {"name": "a100-best-effort"},
         "spec": {"provisioningClassName": "best-effort-atomic-scale-up.autoscaling.x-k8s.io",
                  "managedResources": ["nvidia.com/gpus"]}},
        check("a100-scale-up", "a100-best-effort"),
        check("h100-capacity", "h100-config"),
        {"apiVersion": KUEUE, "kind": c.CLUSTER_QUEUE, "metadata": {"name": "research-queue"},
         "spec": {"namespaceSelector": {}, "resourceGroups": [{
             "coveredResources": ["cpu", "nvidia.com/gpu"],
             "flavors": [{"name": FLAVOR, "resources": [{"name": "cpu", "nominalQuota": "32"},
                                                        {"name": "nvidia.com/gpu", "nominalQuota": "8"}]}]}],
                  "admissionChecksStrategy": {"admissionChecks": [
                      {"name": "a100-scale-up"}, {"name": "h100-capacity"}, {"name": "tpu-capacity"}]}}},
    ]


def job(name: str, pods: int, gpus: int) -> Obj:
    container = {"name": "trainer", "image": "us-docker.pkg.dev/ml/trainer:2026.11", "args": ["--epochs=20"],
                 "resources": {"requests": {"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": str(gpus)},
                               "limits": {"nvidia.com/gpu": str(gpus)}}}
    return {"apiVersion": "batch/v1", "kind": c.JOB,
            "metadata": {"namespace": NS, "name": name, "labels": {c.LABEL_QUEUE_NAME: LQ},
                         "annotations": {"provreq.kueue.x-k8s.io/ValidUntilSeconds": "1800"}},
            "spec": {"parallelism": pods, "completions": pods, "suspend": True,
                     "template": {"spec": {"restartPolicy": "Never", "containers": [container],
                                           "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists",
                                                            "effect": "NoSchedule"}]}}}}


# --- the cluster, driven ---------------------------------------------------------------------------


class Recorder:
    def __init__(self, bed: controlplane.Testbed, api: client.Client) -> None:
        self.bed, self.api = bed, api
        self.jobs: dict[str, Obj] = {}

    def create(self, *docs: Obj) -> None:
        for doc in docs:
            kind = doc["kind"]
            res = controlplane.NAMESPACE if kind == "Namespace" else RESOURCES[kind]
            stored = self.api.create(res, doc["metadata"].get("namespace", ""), doc, KUBECTL)
            if kind == c.JOB:
                self.jobs[doc["metadata"]["name"]] = stored

    def workload(self, job_name: str) -> Obj | None:
        uid = self.jobs[job_name]["metadata"]["uid"]
        for wl in self.api.list(WL, NS).items:
            if any(r.get("uid") == uid for r in wl["metadata"].get("ownerReferences") or ()):
                return wl
        return None

    def request(self, job_name: str, attempt: int) -> Obj | None:
        wl = self.workload(job_name)
        if wl is None:
            return None
        name = f"{wl['metadata']['name']}-{CHECK}-{attempt}"
        return next((pr for pr in self.api.list(PR, NS).items if pr["metadata"]["name"] == name), None)

    def wait_request(self, job_name: str, attempt: int) -> Obj:
        found: Obj = wait(f"request {attempt} of {job_name}", lambda: self.request(job_name, attempt))
        return found

    def answer(self, pr: Obj, script: str) -> None:
        """Cluster Autoscaler's answer, as the ``autoscaler`` stand-in writes it."""
        (model,), _ = snapshot.to_objects([pr], "", IGNORE)
        now = Time(int(time.time()))
        result = reconcile(model, now, parse_script(script).decision(model))  # type: ignore[arg-type]
        applied = apply_effects(self.api, [Update(result.request)], World([model]), AUTOSCALER, now)
        assert not applied.requeue, applied.errors

    def accept(self, pr: Obj) -> None:
        """``Accepted=True`` alone: CA has picked the request and not answered it yet."""
        changed = copy.deepcopy(pr)
        changed.setdefault("status", {})["conditions"] = [
            *((pr.get("status") or {}).get("conditions") or ()),
            {"type": c.PR_ACCEPTED, "status": "True", "reason": "Accepted",
             "message": "ProvisioningRequest is accepted by ClusterAutoscaler",
             "lastTransitionTime": format_time(int(time.time())),
             "observedGeneration": pr["metadata"].get("generation", 1)}]
        self.write(pr, changed, AUTOSCALER)

    def write(self, before: Obj, after: Obj, manager: str) -> None:
        """``after`` written over ``before`` through the port (merge patches, the version read)."""
        (old,), _ = snapshot.to_objects([before], "", IGNORE)
        (new,), _ = snapshot.to_objects([after], "", IGNORE)
        applied = apply_effects(self.api, [Update(new)], World([old]), manager, Time(int(time.time())))
        assert not applied.requeue, applied.errors

    def condition(self, obj: Obj, type_: str) -> str:
        return next((cd["status"] for cd in (obj.get("status") or {}).get("conditions") or ()
                     if cd["type"] == type_), "")

    def stop(self, name: str) -> None:
        processes.stop(self.bed.process(name))

    # --- the writes ------------------------------------------------------------------------------
    def writes(self, documents: list[Obj]) -> dict[str, list[Obj]]:
        """The model's effects on the healthy cluster, applied through a recording proxy with
        Kueue stopped (its webhooks set aside meanwhile, or they would refuse every write)."""
        self.stop("kueue")
        for doc in documents:  # Kueue stopped before it moved anything: the cluster is the dump
            if doc["kind"] == c.WORKLOAD:
                now = self.api.get(WL, NS, doc["metadata"]["name"])["metadata"]["resourceVersion"]
                if now != doc["metadata"]["resourceVersion"]:
                    raise SystemExit(f"record: Workload {doc['metadata']['name']} changed after the recording")
        hooks = {res: list(self.api.list(res).items) for res in (controlplane.MUTATING, controlplane.VALIDATING)}
        for res, found in hooks.items():
            for doc in found:
                self.api.delete(res, "", doc["metadata"]["name"])
        try:
            return write_scenarios(self.bed, documents)
        finally:
            for res, found in hooks.items():
                for doc in found:
                    self.api.create(res, "", {**doc, "metadata": {"name": doc["metadata"]["name"]}}, KUBECTL)
            self.bed = controlplane.restart_kueue(self.bed)

    # --- the healthy cluster ----------------------------------------------------------------------
    def healthy(self) -> None:
        self.create(*setup())
        wait("ClusterQueue gpu-queue active",
             lambda: self.condition(self.api.get(RESOURCES[c.CLUSTER_QUEUE], "", CQ), "Active") == "True")
        self.create(job("train-a", 3, 2), job("train-b", 2, 2))
        self.answer(self.wait_request("train-a", 1), "provision")
        self.answer(self.wait_request("train-b", 1), "fail")
        wait("train-a admitted", lambda: self.condition(self.workload("train-a") or {}, c.WORKLOAD_ADMITTED) == "True")
        log(f"train-b fails attempt 1; attempt 2 after the {BACKOFF_BASE} s backoff")
        self.accept(self.wait_request("train-b", 2))
        self.create(job("tune-d", 1, 2))
        self.answer(self.wait_request("tune-d", 1), "fail")
        failed = time.time()
        self.create(job("eval-c", 2, 5))
        wait("eval-c queued without quota", lambda: self.condition(self.workload("eval-c") or {},
                                                                   c.WORKLOAD_QUOTA_RESERVED) == "False")
        time.sleep(max(0.0, failed + BACKOFF_BASE / 2 - time.time()))

    def grant_all_but_podtemplates(self) -> None:
        plurals = sorted(RESOURCES[k].plural for k in SNAPSHOT_KINDS if k != c.POD_TEMPLATE)
        groups = sorted({RESOURCES[k].group for k in SNAPSHOT_KINDS})
        name = "kueue-provreq-reader"
        self.api.create(CLUSTER_ROLE, "", {"apiVersion": f"{RBAC}/v1", "kind": "ClusterRole", "metadata": {"name": name},
                                           "rules": [{"apiGroups": groups, "resources": plurals,
                                                      "verbs": ["get", "list", "watch"]}]}, KUBECTL)
        self.api.create(BINDING, "", {"apiVersion": f"{RBAC}/v1", "kind": "ClusterRoleBinding",
                                      "metadata": {"name": name},
                                      "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": name},
                                      "subjects": [{"apiGroup": RBAC, "kind": "User", "name": USER}]}, KUBECTL)

    # --- the troubled cluster -----------------------------------------------------------------------
    def troubled(self) -> None:
        self.create(*misconfiguration())
        wait("research-queue inactive", lambda: self.api.get(RESOURCES[c.CLUSTER_QUEUE], "", "research-queue")
             .get("status", {}).get("conditions"))
        for name in ("serve-e", "train-g", "sweep-h", "bench-k", "old-f"):
            self.create(job(name, 1, 1))
        self.answer(self.wait_request("serve-e", 1), "provision")
        wait("serve-e admitted", lambda: self.condition(self.workload("serve-e") or {}, c.WORKLOAD_ADMITTED) == "True")
        for name in ("train-g", "sweep-h", "old-f"):
            self.accept(self.wait_request(name, 1))
        bench = self.wait_request("bench-k", 1)
        log("stopping Kueue (and removing its webhooks, which would refuse every write) and the garbage collector")
        self.stop("kueue")
        for res in (controlplane.MUTATING, controlplane.VALIDATING):
            for hooks in self.api.list(res).items:
                self.api.delete(res, "", hooks["metadata"]["name"])
        self.stop("kube-controller-manager")
        self.answer(bench, "provision")  # Kueue is not there to see it
        now = format_time(int(time.time()))
        # serve-e: its check set back to Pending, the admission left as it is
        wl = self.workload("serve-e")
        assert wl is not None
        reset = copy.deepcopy(wl)
        reset["status"]["admissionChecks"] = [
            {**{k: v for k, v in s.items() if k != "podSetUpdates"}, "state": "Pending", "message": ""}
            for s in wl["status"]["admissionChecks"]]
        self.write(wl, reset, "hand-edit")
        # train-g: a second request for its check while the first is live
        first = self.request("train-g", 1)
        assert first is not None
        second = {"apiVersion": PR.api_version, "kind": c.PROVISIONING_REQUEST,
                  "metadata": {"namespace": NS, "name": first["metadata"]["name"][:-2] + "-2",
                               "labels": first["metadata"]["labels"],
                               "ownerReferences": first["metadata"]["ownerReferences"]},
                  "spec": first["spec"]}
        self.api.create(PR, NS, second, "kueue")
        self.accept(self.api.get(PR, NS, second["metadata"]["name"]))
        # sweep-h: its check in Retry, quota held, nobody to evict it
        wl = self.workload("sweep-h")
        assert wl is not None
        retry = copy.deepcopy(wl)
        retry["status"]["admissionChecks"] = [
            {**s, "state": "Retry", "lastTransitionTime": now, "requeueAfterSeconds": BACKOFF_BASE,
             "message": "Retrying after failure: CA could not find requested capacity"}
            for s in wl["status"]["admissionChecks"]]
        self.write(wl, retry, "hand-edit")
        # old-f: its Workload deleted (finalizer and all); its request and templates stay
        wl = self.workload("old-f")
        assert wl is not None
        self.api.patch(WL, NS, wl["metadata"]["name"], {"metadata": {"finalizers": None}}, "hand-edit")
        self.api.delete(WL, NS, wl["metadata"]["name"])
        self.api.delete(RESOURCES[c.JOB], NS, "old-f")


# --- recording -------------------------------------------------------------------------------------


def tls(bed: controlplane.Testbed, client_cert: bool = True) -> Any:
    import ssl

    pki = Path(bed.folder) / "pki"
    context = ssl.create_default_context(cafile=str(pki / "ca.crt"))
    if client_cert:
        context.load_cert_chain(str(pki / "admin.crt"), str(pki / "admin.key"))
    return context


def record_snapshot(bed: controlplane.Testbed, impersonate: str = "") -> tuple[list[Obj], list[Obj]]:
    """The snapshot's list calls through a recording proxy, in pages of 2: the exchanges, and
    the objects read."""
    headers = {"Impersonate-User": impersonate} if impersonate else {}
    snapshot.PAGE_SIZE = PAGE
    server = f"https://127.0.0.1:{bed.ports['apiserver']}"
    with RecordingProxy(server, tls(bed), headers) as proxy, \
            tempfile.TemporaryDirectory() as tmp, client.connect(str(proxy.kubeconfig(Path(tmp)))) as api:
        snap = snapshot.read(api)
    return proxy.exchanges, list(snap.documents)


def write_scenarios(bed: controlplane.Testbed, documents: list[Obj]) -> dict[str, list[Obj]]:
    """Each scenario's exchanges (see the module's docstring); the effects are computed from
    ``documents``, the healthy recording, as tests/test_cluster_write.py computes them."""
    (tune,) = [d for d in documents if d["kind"] == c.WORKLOAD and d["metadata"]["name"].startswith("job-tune-d-")]
    key = (c.WORKLOAD, NS, tune["metadata"]["name"])
    due = Time(parse_time(tune["status"]["requeueState"]["requeueAt"]) + 1)
    world = World(snapshot.to_objects(documents)[0])
    evict = workload.reconcile(world.copy(), key, Context(now=due)).effects
    after = world.copy()
    for effect in evict:
        after.apply(effect)
    delete = provisioning.reconcile(after.copy(), key, Context(now=due)).effects
    template = next(o for o in world.objects(c.POD_TEMPLATE))
    fresh = Create(evolve(template, metadata=evolve(template.metadata, name="ppt-new-main")))
    steps: list[tuple[str, list[Any], World, Time]] = [
        ("eviction", list(evict), world, due), ("conflict", list(evict), world, Time(0)),
        ("delete", list(delete), after, Time(0)), ("create", [fresh, fresh], world, Time(0))]
    out: dict[str, list[Obj]] = {}
    server = f"https://127.0.0.1:{bed.ports['apiserver']}"
    for name, effects, read, now in steps:
        with RecordingProxy(server, tls(bed)) as proxy, tempfile.TemporaryDirectory() as tmp, \
                client.connect(str(proxy.kubeconfig(Path(tmp)))) as api:
            batches = [effects] if name != "create" else [[e] for e in effects]
            for batch in batches:
                apply_effects(api, batch, read, "kueue", now)
        out[name] = proxy.exchanges
    return out


def dump(api: client.Client, documents: list[Obj]) -> Obj:
    """``kubectl get <the kinds a snapshot reads>,events -A -o json``: a v1 List whose items all
    carry kind and apiVersion, in the order kubectl prints them (kind by kind, as listed)."""
    events = list(api.list(RESOURCES[EVENT], NS).items)
    return {"apiVersion": "v1", "items": [*documents, *events], "kind": "List", "metadata": {"resourceVersion": ""}}


def main() -> None:
    oracle = controlplane.find_oracle()
    state = Path(tempfile.mkdtemp(prefix="record-cluster-")) / "testbed"
    log(f"starting a testbed in {state}")
    bed = controlplane.up(oracle, state)
    written: dict[Path, str] = {}
    stamps: dict[str, Any] = {"command": "python tests/data/cluster/record.py", "versions": bed.versions}
    try:
        with client.connect(bed.kubeconfig) as api:
            rec = Recorder(bed, api)
            rec.healthy()
            rec.grant_all_but_podtemplates()
            at = int(time.time())
            for name, who in (("healthy", ""), ("restricted", USER)):
                exchanges, documents = record_snapshot(bed, who)
                written[HERE / name / "apiserver.json"] = json.dumps({"exchanges": exchanges}, indent=1,
                                                                     sort_keys=True) + "\n"
                if name == "healthy":
                    write_dump(written, HERE / name, dump(api, documents))
                    healthy_documents = documents
            stamps["healthy"] = stamps["restricted"] = {"at": format_time(at)}
            log("healthy and restricted recorded")
            written[HERE / "writes" / "apiserver.json"] = json.dumps(rec.writes(healthy_documents), indent=1,
                                                                     sort_keys=True) + "\n"
            log("writes recorded")
            rec.troubled()
            at = int(time.time())
            exchanges, documents = record_snapshot(bed)
            written[HERE / "troubled" / "apiserver.json"] = json.dumps({"exchanges": exchanges}, indent=1,
                                                                       sort_keys=True) + "\n"
            write_dump(written, HERE / "troubled", dump(api, documents))
            stamps["troubled"] = {"at": format_time(at), "auditAt": format_time(at + AUDIT_LATER)}
    finally:
        controlplane.down(state)
        shutil.rmtree(state.parent, ignore_errors=True)
    written[HERE / "recording.json"] = json.dumps(stamps, indent=2, sort_keys=True) + "\n"
    for path, text in written.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        log(f"wrote {path.relative_to(ROOT)}")


def write_dump(written: dict[Path, str], folder: Path, listing: Obj) -> None:
    written[folder / "dump.json"] = json.dumps(listing, indent=4, sort_keys=True) + "\n"
    written[folder / "dump.yaml"] = yaml.safe_dump(listing, sort_keys=True, allow_unicode=True, width=1000)


if __name__ == "__main__":
    main()
