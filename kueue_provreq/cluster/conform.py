"""The conformance runner's world driver on a real cluster that runs Kueue.

:class:`ClusterDriver` implements :class:`kueue_provreq.driver.WorldDriver` with API calls, so
that a scenario written for the model judges the real Kueue too (``kueue-provreq conform
--cluster``).  The translation, step by step:

* **World objects** are created through the API in the order given; a status given in the
  scenario is written through ``/status`` after the create (a Workload's as Kueue's admission
  field manager applies it, so that Kueue may take it back, see :meth:`ClusterDriver._write_status`).  A Workload no job owns (the format's
  implicit job integration) gets a real suspended Job as its owner: created first without the
  queue-name label (so that Kueue does not make a Workload of its own), the Workload built on
  the Job's pod template as the API server defaulted it, then the label added, so that Kueue's
  job reconciler adopts the Workload.
* **Isolation.** Scenarios run side by side, so each gets a suffix (``-k`` and three letters no
  hexadecimal digit or English suffix uses): its namespaces and the names of its cluster-scoped
  objects carry it on the way in, and every string read back loses it, so that names derived
  from them (a request ``<workload>-<check>-<attempt>``, a message naming a ClusterQueue) read
  as the model writes them.
* **Identity.** Server-assigned uids are mapped to the uids the model would assign (in creation
  order, as :meth:`~kueue_provreq.world.World.created` counts them), and a Workload name derived
  from a job's uid to the name derived from the mapped uid; ``resourceVersion`` and
  ``managedFields`` are dropped.
* **Time.** ``advance`` waits the real time; ``settle`` waits until the scenario's objects have
  not changed for :data:`SETTLE_QUIET` seconds (at most :data:`SETTLE_LIMIT`).  Real timestamps
  are mapped to the scenario's clock: a time written during the *k*-th period between advances
  reads as the clock of that period (the model writes everything at the clock of the step), a
  deadline later than the object's last write (``requeueAt``) as that clock plus its distance
  from the write.  Each period starts on a whole second after every earlier write, so the
  mapping is exact at the API server's one-second resolution.
* **Events** are the core/v1 Events about the scenario's objects in the order the API server
  stored them (an aggregated repeat, ``count`` raised, is one more event); **metrics** are read
  from Kueue's metrics endpoint when the driver knows it (a testbed), with a service account's
  token.

What it cannot do is declared (:meth:`ClusterDriver.refuses`): a single controller's reconcile,
a restricted settle, faults, the model's semantics switches, advances longer than
``max_advance``, a bare Workload that no Job can own, metrics without an endpoint.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import random
import re
import ssl
import string
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from kueue_provreq.api import constants as c
from kueue_provreq.api import naming
from kueue_provreq.api.meta import Condition, Time
from kueue_provreq.api.objects import KINDS, Key, KubeObject
from kueue_provreq.api.queues import cohort_names
from kueue_provreq.api.workload import Admission, Workload
from kueue_provreq.cluster.client import ApiError, Client, ClusterError
from kueue_provreq.cluster.resources import RESOURCES, Resource
from kueue_provreq.cluster.testbed.controlplane import Testbed, restart_kueue
from kueue_provreq.controllers import queues
from kueue_provreq.driver import (
    NEED_FAULTS,
    NEED_RECONCILE,
    NEED_RESTRICTED_SETTLE,
    NEED_SEMANTICS,
    Needs,
    Reconciled,
    StepFailed,
)
from kueue_provreq.machines.status import set_quota_reservation, unset_quota_reservation
from kueue_provreq.manifests import dump_object, load_object
from kueue_provreq.manifests.codec import format_time, parse_time
from kueue_provreq.manifests.objects import IGNORE
from kueue_provreq.manifests.patch import patch_document

#: A settle ends when none of the scenario's objects changed for this long.  Kueue answers a
#: change within a few hundred milliseconds on a laptop; its ClusterQueue and LocalQueue status
#: updates come about 0.6 s after the change that causes them (measured on the testbed), so 1.5 s
#: of quiet leaves a margin of more than twice the slowest answer seen.
SETTLE_QUIET = 1.5
#: ... and gives up (the step fails) when the objects keep changing for this long.
SETTLE_LIMIT = 60.0
#: The longest a bare Workload's create waits for the watch's news of it before its Job is
#: labelled for Kueue (the news comes within milliseconds; the limit only bounds a lost event).
WATCH_WAIT = 5.0
#: The longest an autoscaler step waits for the request it names to appear.  Kueue creates it
#: after the quota reservation; on a loaded machine that once came later than the settle's
#: quiet after the previous write (CI, 2026-12-07), and the step found no request.  A request
#: the real Kueue never creates still fails the step, after this wait.
REQUEST_WAIT = 10.0
#: Scenarios whose advances add up to more than this are skipped: a real cluster waits them out.
MAX_ADVANCE = 120.0

FIELD_MANAGER = "kueue-provreq-conform"
#: Each watch is renewed this often, so that a closed session's threads end soon after.
WATCH_SECONDS = 10
NAMESPACE = Resource("Namespace", "", "v1", "namespaces", False)
EVENT = RESOURCES["Event"]

#: The kinds a scenario's world may hold on a cluster, watched for settling.
WATCHED = (c.RESOURCE_FLAVOR, c.ADMISSION_CHECK, c.PROVISIONING_REQUEST_CONFIG, c.COHORT, c.CLUSTER_QUEUE,
           c.LOCAL_QUEUE, c.JOB, c.JOBSET, c.PYTORCH_JOB, c.WORKLOAD, c.PROVISIONING_REQUEST,
           c.POD_TEMPLATE)

#: The uids the model hands out, counted from 1 (``World.next_uid``).
_MODEL_UID = "00000000-0000-4000-8000-{:012x}"
_TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)")
_SERVER_META = ("resourceVersion", "managedFields", "selfLink")
#: Where a document names a LocalQueue (namespaced: kept as it is).
_QUEUE_NAME_KEYS = frozenset({"queueName", c.LABEL_QUEUE_NAME})
#: The waits Kueue's Admitted and QuotaReserved events give in real seconds.
_WAIT = re.compile(r"(wait time since (?:reservation|queued) was )(\d+)s")


def new_suffix(rng: random.Random) -> str:
    """``-k`` and four letters from ``g`` to ``z`` (never a hexadecimal digit, so no uid or hash
    holds it by chance)."""
    return "-k" + "".join(rng.choice(string.ascii_lowercase[6:]) for _ in range(4))


# --- the shared part: one client and one watch per kind for every scenario --------------------


class Session:
    """What every scenario run against one cluster shares: the client, a watch per kind that
    tells each scenario's driver about changes to its objects, Kueue's metrics endpoint (when
    known) and a token to read it."""

    def __init__(self, client: Client, metrics_url: str | None = None) -> None:
        self.client = client
        self.metrics_url = metrics_url
        # not seeded: a suffix must differ from every earlier run's too (their namespaces may
        # still be terminating)
        self.rng = random.Random()
        self._drivers: dict[str, ClusterDriver] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._token: str | None = None

    def start(self) -> None:
        for kind in (*WATCHED, "Event"):
            ready = threading.Event()
            thread = threading.Thread(target=self._watch, args=(RESOURCES[kind], ready), daemon=True,
                                      name=f"watch {kind}")
            thread.start()
            self._threads.append(thread)
            if not ready.wait(30):
                raise ClusterError(f"cannot watch {RESOURCES[kind].resource_name}")

    def close(self) -> None:
        self._stop.set()

    def register(self, driver: ClusterDriver) -> str:
        with self._lock:
            while True:
                suffix = new_suffix(self.rng)
                if suffix not in self._drivers:
                    self._drivers[suffix] = driver
                    return suffix

    def unregister(self, suffix: str) -> None:
        with self._lock:
            self._drivers.pop(suffix, None)

    def _owner(self, namespace: str, name: str) -> ClusterDriver | None:
        with self._lock:
            for suffix, driver in self._drivers.items():
                if namespace.endswith(suffix) or (not namespace and name.endswith(suffix)):
                    return driver
        return None

    def _watch(self, res: Resource, ready: threading.Event) -> None:
        version = ""
        while not self._stop.is_set():
            try:
                if not version:
                    version = self.client.list(res, limit=500).resource_version
                    ready.set()
                for event in self.client.watch(res, version, timeout_seconds=WATCH_SECONDS):
                    meta = event.object.get("metadata") or {}
                    version = str(meta.get("resourceVersion") or version)
                    if self._stop.is_set():
                        return
                    if event.type == "BOOKMARK":
                        continue
                    about = event.object.get("involvedObject") if res is EVENT else meta
                    about = about or {}
                    driver = self._owner(str(about.get("namespace") or ""), str(about.get("name") or ""))
                    if driver is not None:
                        driver.observe(res.kind, event.type, event.object)
            except ApiError as e:
                if e.code != 410:
                    time.sleep(0.5)
                version = ""
            except Exception:  # the connection broke (the server went away, or is restarting): again
                if self._stop.is_set():
                    return
                time.sleep(0.5)

    def token(self) -> str:
        """A token of a service account allowed to read Kueue's metrics (made once)."""
        with self._lock:
            if self._token is None:
                self._token = _metrics_token(self.client)
            return self._token


def _metrics_token(client: Client) -> str:
    sa = Resource("ServiceAccount", "", "v1", "serviceaccounts", True)
    role = Resource("ClusterRole", "rbac.authorization.k8s.io", "v1", "clusterroles", False)
    binding = Resource("ClusterRoleBinding", "rbac.authorization.k8s.io", "v1", "clusterrolebindings", False)
    name, ns = "kueue-provreq-conform", "kueue-system"
    for res, body in (
        (sa, {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": ns}}),
        (role, {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": name},
                "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]}),
        (binding, {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                   "metadata": {"name": name},
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
                   "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": ns}]}),
    ):
        try:
            client.create(res, ns if res.namespaced else "", body, FIELD_MANAGER)
        except ApiError as e:
            if e.code != 409:
                raise ClusterError(f"cannot create {res.kind} {name}: {e}") from None
    answer = client.create(Resource("TokenRequest", "", "v1", f"serviceaccounts/{name}/token", True), ns,
                           {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                            "spec": {"expirationSeconds": 86400}}, FIELD_MANAGER)
    return str(answer["status"]["token"])


# --- one scenario ------------------------------------------------------------------------------


@attrs.define
class _Epoch:
    """A period between advances: from ``real`` (a whole second, epoch seconds) the scenario's
    clock reads ``clock``."""

    real: int
    clock: float


class ClusterDriver:
    """One scenario's world on a real cluster (see the module's docstring)."""

    def __init__(self, session: Session, *, max_advance: float = MAX_ADVANCE, quiet: float = SETTLE_QUIET,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.session = session
        self.quiet = quiet
        """The quiet that ends a settle (:data:`SETTLE_QUIET`; more on a loaded machine)."""
        self.client = session.client
        self.max_advance = max_advance
        self.sleep = sleep
        self.suffix = session.register(self)
        self.epochs: list[_Epoch] = []
        self.namespaces: set[str] = set()
        self.uids: dict[str, str] = {}
        """Real uid -> the uid the model would have given."""
        self._real_uids: dict[str, str] = {}
        self.names: dict[str, str] = {}
        """Real Workload name -> the name the model derives from the mapped owner uid."""
        self._counter = 0
        # held while this driver creates an object and maps its uid, so that the watch's news of
        # the create (which may come before the create's answer) does not map it first
        self._changed = threading.Condition(threading.RLock())
        self._last_change = time.monotonic()
        self._events: list[dict[str, Any]] = []
        self._released: list[dict[str, Any]] = []
        self.implicit_jobs: dict[tuple[str, str], str] = {}
        """(namespace, Workload) on the cluster -> the name of the Job made to own it."""
        self._event_counts: dict[str, int] = {}
        self._watched: set[str] = set()
        """The uids of the objects the watch has told of."""
        self._named: frozenset[str] = frozenset()
        """The scenario's cluster-scoped names (:attr:`Needs.cluster_names`), told by :meth:`refuses`."""

    # --- what it cannot do ---------------------------------------------------------------------
    def refuses(self, needs: Needs) -> str | None:
        self._named = needs.cluster_names
        why = {NEED_RECONCILE: "a single controller's reconcile is the model's alone",
               NEED_RESTRICTED_SETTLE: "a settle restricted to some controllers is the model's alone",
               NEED_FAULTS: "API faults are injected by the model only",
               NEED_SEMANTICS: "semantics switches are the model's, not Kueue settings"}
        for feature in sorted(needs.features):
            if feature in why:
                return why[feature]
        several = [f"{key[1]}/{key[2]}" for key, pod_sets in needs.bare_workloads if pod_sets != 1]
        if several:
            return (f"Workload {several[0]} has several pod sets and no job: the format's implicit job "
                    "integration has a real counterpart (a batch/v1 Job) for one pod set only")
        if needs.tied_creations:
            return ("two Workloads give the same creationTimestamp, so their queue order rests on their uids, "
                    "which a real API server draws at random")
        if needs.cohort_cycle:
            return ("a cohort cycle: Kueue v0.19.2 keeps a ClusterQueue added under one half-built (no namespace "
                    "selector, Active=False) and crashes at the next Namespace update (docs/differences.rst)")
        if needs.multikueue:
            return ("a MultiKueue admission check: the real MultiKueue controller keeps it inactive without a "
                    "MultiKueueConfig and worker clusters, which the model does not model")
        if needs.longest_derived_name > _HASHED_NAME:
            return ("names so long that Kueue hashes them: the isolation suffix of a run on a shared cluster "
                    "changes the hash")
        if needs.advance > self.max_advance:
            return (f"its advances add up to {needs.advance:g}s, more than the {self.max_advance:g}s "
                    "a real cluster is given to wait")
        return None

    # --- naming ----------------------------------------------------------------------------------
    def _out(self, value: Any, cluster_names: frozenset[str], key: str | None = None) -> Any:
        """A document on its way to the cluster: the scenario's namespaces and cluster-scoped
        names with the suffix, its timestamps on the real clock.  A LocalQueue's name keeps
        its own, even where it is also a namespace's (``default``: Kueue's webhook looks for
        that very name)."""
        if isinstance(value, Mapping):
            return {k: self._out(v, cluster_names, k) for k, v in value.items()}
        if isinstance(value, list):
            return [self._out(v, cluster_names, key) for v in value]
        if isinstance(value, str):
            if key in _QUEUE_NAME_KEYS:
                return value
            if value in cluster_names or value in self._scenario_namespaces:
                return value + self.suffix
            real_uid = self._real_uids.get(value)
            if real_uid is not None:
                return real_uid
            if _TIMESTAMP.fullmatch(value):
                return format_time(self._to_real(parse_time(value)))
        return value

    def _back(self, value: Any, written: _Written | None = None) -> Any:
        """A document read from the cluster, as the model would show it."""
        if isinstance(value, Mapping):
            if written is None and isinstance(value.get("metadata"), Mapping):
                written = _written(value)
            return {k: self._back(v, written) for k, v in value.items()
                    if not (k in _SERVER_META and isinstance(value, Mapping) and "uid" in value)}
        if isinstance(value, list):
            return [self._back(v, written) for v in value]
        if isinstance(value, str):
            if _TIMESTAMP.fullmatch(value):
                return format_time(math.floor(self._to_scenario(parse_time(value), written)))
            text = value.replace(self.suffix, "")
            for real, model in self.uids.items():
                text = text.replace(real, model)
            for real, model in self.names.items():
                text = text.replace(real, model)
            return text
        return value

    def _to_real(self, t: float) -> int:
        first = self.epochs[0]
        return int(first.real + (t - first.clock))

    def _to_scenario(self, t: int, written: _Written | None) -> float:
        """``t`` on the scenario's clock.  A deadline (later than the object's last write) is
        its distance from the time it was counted from, mapped: a check's transition time when
        it is that plus the check's ``requeueAfterSeconds``, else the object's latest time
        before the write (settles take real time the scenario's clock does not count, so the
        write itself is a worse origin)."""
        first = self.epochs[0]
        if t < first.real:
            return first.clock + (t - first.real)
        if written is not None and written.last is not None and t > written.last:
            base = written.origins.get(t, written.latest if written.latest is not None else written.last)
            return self._to_scenario(base, None) + (t - base)
        epoch = first
        for e in self.epochs:
            if e.real <= t:
                epoch = e
        return epoch.clock

    # --- building the world ----------------------------------------------------------------------
    def begin(self, objects: Sequence[KubeObject], clock: float) -> None:
        self._scenario_namespaces = frozenset(
            o.metadata.namespace or c.DEFAULT_NAMESPACE for o in objects if o.NAMESPACED) | {c.DEFAULT_NAMESPACE}
        # cohorts a queue or a Cohort names exist without an object: their names are isolated too
        self._cluster_names = frozenset(o.metadata.name for o in objects if not o.NAMESPACED) | frozenset(
            name for o in objects for name in cohort_names(o)) | self._named
        self.epochs = [_Epoch(self._next_second(), clock)]
        for ns in sorted(self._scenario_namespaces):
            self._create_namespace(ns)
        # the model builds its world whole before the first step; a real Kueue acts on each object
        # as it comes.  ClusterQueues come last, so that Kueue meets every workload of a queue
        # before it may admit any (queue order, not creation order, decides), and Workloads with a
        # creationTimestamp come in its order, each in a later second than the one before
        # (the API server sets the time of its own).
        # An object comes after the world objects it names as owners, so that its owner
        # references carry their real uids (the garbage collector deletes an object whose owner
        # does not exist).
        # A Workload in backoff (``requeueAt`` to come, or Requeued=False) joins its queue only
        # once the ClusterQueues exist: Kueue's queue manager honours a backoff for a workload it
        # hears of while its ClusterQueue exists (``PushOrUpdate``), not for those a new
        # ClusterQueue collects from its LocalQueues (``AddFromLocalQueue``), nor for one queued
        # at its create, before the driver could write its status.
        model_uids = [self._model_uid(o.metadata.uid or None) for o in objects]  # in the model's order
        depth = _owner_depths(objects)
        order = sorted(range(len(objects)), key=lambda i: (
            objects[i].KIND == c.CLUSTER_QUEUE, depth[i], objects[i].metadata.creation_timestamp or 0, i))
        stamp: int | None = None
        in_backoff: list[Callable[[], None]] = []
        for i in order:
            obj = objects[i]
            given = obj.metadata.creation_timestamp
            if isinstance(obj, Workload) and given is not None:
                if stamp is not None and given > stamp:
                    self._next_second()
                stamp = given
            if isinstance(obj, Workload) and not any(r.kind in _JOB_KINDS for r in obj.metadata.owner_references):
                join = self._create_owned_workload(obj, model_uids[i], join=not _waits_out_backoff(obj, clock))
                if join is not None:
                    in_backoff.append(join)
            else:
                if obj.KIND in _JOB_KINDS and c.LABEL_QUEUE_NAME not in obj.metadata.labels:
                    self._await_default_queue(obj.metadata.namespace or c.DEFAULT_NAMESPACE, objects)
                self._create(obj, model_uids[i])
        for join in in_backoff:
            join()

    def _await_default_queue(self, namespace: str, objects: Sequence[KubeObject]) -> None:
        """Kueue's job webhook gives a job without a queue name the LocalQueue ``default`` of its
        namespace only once Kueue knows that queue; the model's world has it from the start.
        Waits (at most :data:`SETTLE_LIMIT`) until Kueue has written the queue's status, which
        it does after adding the queue to its queue manager."""
        if not any(o.KIND == c.LOCAL_QUEUE and o.metadata.name == c.DEFAULT_LOCAL_QUEUE_NAME
                   and (o.metadata.namespace or c.DEFAULT_NAMESPACE) == namespace for o in objects):
            return
        deadline = time.monotonic() + SETTLE_LIMIT
        while time.monotonic() < deadline:
            queue = self._get_raw(RESOURCES[c.LOCAL_QUEUE], namespace + self.suffix, c.DEFAULT_LOCAL_QUEUE_NAME)
            if queue is not None and (queue.get("status") or {}).get("conditions"):
                return
            time.sleep(0.1)

    def _next_second(self) -> int:
        """Waits for the next whole second and returns it: a period of the clock starts after
        every write of the one before (the API server keeps whole seconds)."""
        now = time.time()
        start = math.floor(now) + 1
        self.sleep(start - now + 0.01)
        return start

    def _create_namespace(self, ns: str) -> None:
        name = ns + self.suffix
        self.namespaces.add(name)
        try:
            self.client.create(NAMESPACE, "", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
                               FIELD_MANAGER)
        except ApiError as e:
            raise StepFailed(f"cannot create namespace {name}: {e}") from None

    def _model_uid(self, given: str | None) -> str:
        """The uid the model gives the next object it creates (``given``, if the object has
        one), counted as :meth:`~kueue_provreq.world.World.created` counts."""
        if given is None:
            self._counter += 1
            return _MODEL_UID.format(self._counter)
        if given.startswith(_MODEL_UID[:24]):
            with contextlib.suppress(ValueError):
                self._counter = max(self._counter, int(given.rsplit("-", 1)[1], 16))
        return given

    def _map_uid(self, real: str, model: str | None) -> None:
        """``real`` reads as ``model``, or, for an object a controller made, as the next uid the
        model would give."""
        if model is None:
            model = self._model_uid(None)
        self.uids[real] = model
        self._real_uids[model] = real
        self._real_uids[model] = real

    def _document(self, obj: KubeObject) -> dict[str, Any]:
        doc = dump_object(obj)
        meta = doc["metadata"]
        if obj.NAMESPACED and not meta.get("namespace"):
            meta["namespace"] = c.DEFAULT_NAMESPACE
        for key in ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields"):
            meta.pop(key, None)
        out: dict[str, Any] = self._out(doc, self._cluster_names)
        if obj.NAMESPACED:  # its namespace isolates it
            out["metadata"]["name"] = meta["name"]
        return out

    def _create(self, obj: KubeObject, model_uid: str | None) -> dict[str, Any]:
        doc = self._document(obj)
        status = doc.pop("status", None)
        res = RESOURCES[obj.KIND]
        ns = doc["metadata"].get("namespace", "") if res.namespaced else ""
        with self._changed:
            try:
                created = self.client.create(res, ns, doc, FIELD_MANAGER)
            except ApiError as e:
                raise StepFailed(f"cannot create {obj.KIND} {obj.metadata.name}: {self._back(str(e))}") from None
            self._map_uid(created["metadata"]["uid"], model_uid)
        if status:
            created = self._write_status(res, created, status, conditional=False)
        return created

    def _write_status(self, res: Resource, current: Mapping[str, Any], status: Any,
                      conditional: bool = True) -> dict[str, Any]:
        """A write of the status subresource: conditional on the resourceVersion read (a 409
        when Kueue wrote since), or not (a world object's status as the scenario gives it,
        whatever Kueue wrote in between).

        A Workload's status is written as Kueue writes it, a server-side apply by its admission
        field manager (upstream's test helper ``util.SetQuotaReservation`` does the same), so
        that Kueue owns it: Kueue releases a quota reservation by applying a status without
        ``admission``, which removes the field only where no other manager owns it (a merge
        patch by this driver would keep the admission of a pre-admitted Workload for ever).
        Other kinds get a merge patch."""
        meta = current["metadata"]
        body: dict[str, Any] = {"status": status}
        if conditional:
            body["metadata"] = {"resourceVersion": meta["resourceVersion"]}
        try:
            if res.kind == c.WORKLOAD:
                body = {"apiVersion": res.api_version, "kind": res.kind,
                        "metadata": {**body.get("metadata", {}), "name": meta["name"],
                                     "namespace": meta.get("namespace", "")},
                        "status": status}
                return self.client.apply(res, meta.get("namespace", ""), meta["name"], body,
                                         c.ADMISSION_FIELD_MANAGER, "status")
            return self.client.patch(res, meta.get("namespace", ""), meta["name"], body, FIELD_MANAGER, "status")
        except ApiError as e:
            if e.code == 409 and conditional:
                raise _Conflict from None
            raise StepFailed(f"cannot write the status of {res.kind} {self._back(meta['name'])}: "
                             f"{self._back(str(e))}") from None

    def _create_owned_workload(self, wl: Workload, model_uid: str | None, *,
                               join: bool = True) -> Callable[[], None] | None:
        """A real suspended Job owning a scenario's bare Workload (see the module's docstring).
        Without ``join`` the Workload is created without its queue name, and what sets it
        (the Job's queue-name label, which Kueue's job reconciler copies to the Workload) is
        returned, for later."""
        if len(wl.spec.pod_sets) != 1:
            raise StepFailed(f"Workload {wl.metadata.name}: {len(wl.spec.pod_sets)} pod sets; the implicit job "
                             "integration has a real counterpart for one (a batch/v1 Job) only")
        doc = self._document(wl)
        queue = doc["spec"].get("queueName") if join else doc["spec"].pop("queueName", None)
        pod_set = doc["spec"]["podSets"][0]
        ns = doc["metadata"]["namespace"]
        template = json.loads(json.dumps(pod_set["template"]))
        spec = template.setdefault("spec", {})
        spec.setdefault("restartPolicy", "Never")
        for container in spec.get("containers") or ():
            container.setdefault("image", "busybox")
        jobs = RESOURCES[c.JOB]
        with self._changed:  # the model's implicit Job has no uid: keep the watch from counting this one
            job = self.client.create(jobs, ns, {
            "apiVersion": "batch/v1", "kind": "Job",
            # the Workload's annotations, which Kueue's job reconciler copies from a job to its
            # Workload (the admission gate, the provreq parameters)
            "metadata": {"name": _job_name(doc["metadata"]["name"]), "namespace": ns,
                         "annotations": doc["metadata"].get("annotations") or {}},
            "spec": {"suspend": True, "parallelism": pod_set.get("count", 1), "completions": pod_set.get("count", 1),
                     "template": template}}, FIELD_MANAGER)
            self.uids[job["metadata"]["uid"]] = job["metadata"]["uid"]
            self.implicit_jobs[(ns, doc["metadata"]["name"])] = job["metadata"]["name"]
        pod_set["template"] = job["spec"]["template"]
        doc["metadata"]["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "Job", "name": job["metadata"]["name"],
                                               "uid": job["metadata"]["uid"], "controller": True,
                                               "blockOwnerDeletion": True}]
        status = doc.pop("status", None)
        with self._changed:
            created = self.client.create(RESOURCES[c.WORKLOAD], ns, doc, FIELD_MANAGER)
            self._map_uid(created["metadata"]["uid"], model_uid)
        if status:
            self._write_status(RESOURCES[c.WORKLOAD], created, status, conditional=False)
        # Labelling the Job wakes Kueue's job reconciler; if its cache has not seen the Workload
        # yet, it makes one of its own and then deletes one of the two, sometimes the scenario's
        # (seen once in 60 stories on a loaded machine).  Kueue's informers and this driver's watch
        # hear of the create from the same API server at about the same time: wait for ours.
        with self._changed:
            self._changed.wait_for(lambda: created["metadata"]["uid"] in self._watched, WATCH_WAIT)
        labels = {c.LABEL_QUEUE_NAME: queue} if queue else {}

        def label() -> None:
            self.client.patch(jobs, ns, job["metadata"]["name"], {"metadata": {"labels": labels}}, FIELD_MANAGER)
        if join:
            label()
            return None

        def join_queue() -> None:
            # the Job's label alone does not do it: Kueue's job reconciler copies it to an evicted
            # Workload only once the eviction is handled
            if queue:
                self.client.patch(RESOURCES[c.WORKLOAD], ns, created["metadata"]["name"], {"spec": {"queueName": queue}},
                                  FIELD_MANAGER)
            label()
        return join_queue

    # --- steps -------------------------------------------------------------------------------------
    @property
    def now(self) -> float:
        return self.epochs[-1].clock if self.epochs else 0.0

    def observe(self, kind: str, verb: str, obj: Mapping[str, Any]) -> None:
        """The session's watch saw a change to one of this scenario's objects."""
        with self._changed:
            self._last_change = time.monotonic()
            if kind == "Event":
                self._record_event(obj)
            elif verb == "ADDED":
                meta = obj.get("metadata") or {}
                uid = str(meta.get("uid") or "")
                self._watched.add(uid)
                if uid and uid not in self.uids:
                    self._map_uid(uid, None)
                    self._name_workload(kind, obj)
            self._changed.notify_all()

    def _name_workload(self, kind: str, obj: Mapping[str, Any]) -> None:
        """A Workload a job integration made is named from the job's uid: read as the name the
        model derives from the job's mapped uid."""
        if kind != c.WORKLOAD:
            return
        meta = obj["metadata"]
        for ref in meta.get("ownerReferences") or ():
            if ref.get("controller") and ref.get("kind") in _JOB_KINDS and ref.get("uid") in self.uids:
                group = str(ref.get("apiVersion", "")).rpartition("/")[0]
                real = naming.workload_name_for_owner(ref["kind"], group, ref["name"], ref["uid"])
                if real == meta["name"]:
                    model = naming.workload_name_for_owner(ref["kind"], group, ref["name"].replace(self.suffix, ""),
                                                           self.uids[ref["uid"]])
                    self.names[real] = model

    def _record_event(self, event: Mapping[str, Any]) -> None:
        name = str((event.get("metadata") or {}).get("name"))
        count = int(event.get("count") or 1)
        seen = self._event_counts.get(name, 0)
        self._event_counts[name] = max(seen, count)
        about = event.get("involvedObject") or {}
        message = _WAIT.sub(lambda m: self._scenario_wait(m, event), str(event.get("message") or ""))
        record = {"type": event.get("type"), "reason": event.get("reason"), "message": message,
                  "object": {"kind": about.get("kind"), "namespace": about.get("namespace") or "",
                             "name": about.get("name")}}
        for _ in range(max(0, count - seen)):
            self._events.append(record)

    def _scenario_wait(self, m: re.Match[str], event: Mapping[str, Any]) -> str:
        """A wait Kueue measured on the real clock (``wait time since reservation was 22s``),
        read on the scenario's clock: from the event's time back to the reservation (the time
        less the wait, rounded, as Kueue rounds from a condition kept in whole seconds), each
        mapped to the scenario's clock."""
        stamp = str(event.get("eventTime") or event.get("lastTimestamp") or "")
        if not _TIMESTAMP.fullmatch(stamp) or not self.epochs:
            return m.group(0)
        fraction = re.search(r"\.(\d+)", stamp)
        at = parse_time(stamp) + (float("0." + fraction.group(1)) if fraction else 0.0)
        since = round(at - int(m.group(2)))
        wait = self._to_scenario(math.floor(at), None) - self._to_scenario(since, None)
        return f"{m.group(1)}{max(0.0, wait):.0f}s"

    def settle(self, controllers: tuple[str, ...] | None) -> None:
        deadline = time.monotonic() + SETTLE_LIMIT
        with self._changed:
            self._last_change = max(self._last_change, time.monotonic())
            while True:
                quiet = time.monotonic() - self._last_change
                if quiet >= self.quiet:
                    self._released.extend(self._events)
                    self._events.clear()
                    return
                if time.monotonic() > deadline:
                    raise StepFailed(f"the cluster did not settle in {SETTLE_LIMIT:g}s")
                self._changed.wait(self.quiet - quiet)

    def reconcile(self, controller: str, key: Key) -> Reconciled:
        raise StepFailed("a single controller's reconcile is the model's alone")

    def advance(self, seconds: float) -> None:
        start = self._next_second()
        self.epochs.append(_Epoch(start, self.now + seconds))
        self.sleep(max(0.0, start + seconds - time.time()))

    def apply(self, obj: KubeObject, has_status: bool, has_generation: bool) -> None:
        res = RESOURCES[obj.KIND]
        doc = self._document(obj)
        status = doc.pop("status", None)
        ns = doc["metadata"].get("namespace", "") if res.namespaced else ""
        current = self._get_raw(res, ns, doc["metadata"]["name"])
        if current is None:
            if isinstance(obj, Workload) and not any(r.kind in _JOB_KINDS for r in obj.metadata.owner_references):
                # the format's implicit job integration holds for a Workload created by a step too;
                # one in backoff joins its queue once its status says so (see :meth:`begin`)
                join = self._create_owned_workload(obj, obj.metadata.uid or None,
                                                   join=not _waits_out_backoff(obj, self.now))
                if join is not None:
                    join()
            else:
                self._create(obj, obj.metadata.uid or None)
            return
        doc["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
        try:
            updated = self.client.replace(res, ns, doc["metadata"]["name"], {**doc, "status": current.get("status")},
                                          FIELD_MANAGER)
        except ApiError as e:
            raise StepFailed(f"cannot apply {obj.KIND} {obj.metadata.name}: {self._back(str(e))}") from None
        if has_status and status is not None:
            self._write_status(res, updated, status)

    def patch(self, kind: str, namespace: str, name: str, api_version: str | None,
              merge: Mapping[str, Any]) -> None:
        """The merge, translated to the cluster's names and clock, applied to the object as the
        API server holds it: metadata and spec as an RFC 7386 merge patch, the status (whose
        conditions and check states merge by key) through ``/status``."""
        res = RESOURCES[kind]
        if api_version and api_version != res.api_version:
            group, _, version = api_version.rpartition("/")
            res = attrs.evolve(res, group=group, version=version)
        real_ns, real_name = self._real_key(kind, namespace, name)
        out = self._out(merge, self._cluster_names)
        rest = {k: v for k, v in out.items() if k != "status"}
        if isinstance(rest.get("metadata"), Mapping):
            rest["metadata"] = {k: v for k, v in rest["metadata"].items() if k in ("labels", "annotations")}
        try:
            if rest:
                self.client.patch(res, real_ns, real_name, rest, FIELD_MANAGER)
            job = self.implicit_jobs.get((real_ns, real_name))
            annotations = (rest.get("metadata") or {}).get("annotations")
            if job is not None and annotations is not None:  # the implicit Job says what its Workload says
                self.client.patch(RESOURCES[c.JOB], real_ns, job, {"metadata": {"annotations": annotations}},
                                  FIELD_MANAGER)
        except ApiError as e:
            raise StepFailed(f"cannot patch {kind} {name}: {self._back(str(e))}") from None
        if "status" in out:
            def write() -> None:
                current = self._get_raw(res, real_ns, real_name)
                if current is None:
                    raise StepFailed(f'{res.resource_name} "{name}" not found')
                patched = patch_document(current, {"status": out["status"]}, format_time(int(time.time())))
                self._write_status(res, current, patched.get("status"))
            self._conflicts(write)

    def delete(self, kind: str, namespace: str, name: str) -> None:
        res = RESOURCES[kind]
        real_ns, real_name = self._real_key(kind, namespace, name)
        try:
            self.client.delete(res, real_ns, real_name)
        except ApiError as e:
            raise StepFailed(self._back(str(e))) from None

    def _conflicts(self, write: Callable[[], None]) -> None:
        """A read-modify-write as a controller does it: again, on fresh data, while Kueue's own
        writes in between make it conflict (409)."""
        for _ in range(9):
            try:
                write()
                return
            except _Conflict:
                time.sleep(0.05)
        write()

    def autoscaler(self, namespace: str | None, request: str, condition: Condition,
                   details: Mapping[str, str] | None) -> None:
        self._conflicts(lambda: self._autoscaler(namespace, request, condition, details))

    def _autoscaler(self, namespace: str | None, request: str, condition: Condition,
                    details: Mapping[str, str] | None) -> None:
        res = RESOURCES[c.PROVISIONING_REQUEST]
        current = self._request(namespace, request)
        meta = current["metadata"]
        status = dict(current.get("status") or {})
        conditions = [dict(cd) for cd in status.get("conditions") or ()]
        now = format_time(int(time.time()))
        old = next((cd for cd in conditions if cd.get("type") == condition.type), None)
        new = {"type": condition.type, "status": condition.status, "reason": condition.reason or "Unknown",
               "message": condition.message, "observedGeneration": meta.get("generation"),
               "lastTransitionTime": old["lastTransitionTime"] if old and old.get("status") == condition.status
               else now}
        if old is not None:
            conditions[conditions.index(old)] = new
        else:
            conditions.append(new)
        status["conditions"] = conditions
        if details is not None:
            status["provisioningClassDetails"] = dict(details)
        self._write_status(res, current, status)

    def _request(self, namespace: str | None, request: str) -> dict[str, Any]:
        res = RESOURCES[c.PROVISIONING_REQUEST]
        mine = self._list(res)  # a namespaced resource is listed in the scenario's namespaces only
        if request == "$latest":
            workloads = self._list(RESOURCES[c.WORKLOAD])
            if len(workloads) != 1:
                raise StepFailed(f"$latest needs exactly one Workload, the world has {len(workloads)}")
            wl = workloads[0]
            owned = [o for o in mine if any(r.get("uid") == wl["metadata"]["uid"]
                                            for r in o["metadata"].get("ownerReferences") or ())]
            if not owned:
                raise StepFailed(f"$latest: Workload {self._back(wl['metadata']['name'])} has no ProvisioningRequest")
            checks = [s["name"] for s in (wl.get("status") or {}).get("admissionChecks") or ()]

            def order(o: Mapping[str, Any]) -> tuple[int, int, str]:
                name = o["metadata"]["name"]
                attempt = next((n for ch in checks
                                if (n := naming.attempt_of(name, wl["metadata"]["name"], ch)) is not None), 0)
                return parse_time(o["metadata"]["creationTimestamp"]), attempt, name
            return max(owned, key=order)
        found = self._requests_named(mine, namespace, request)
        deadline = time.monotonic() + REQUEST_WAIT
        while not found and time.monotonic() < deadline:
            time.sleep(0.1)
            found = self._requests_named(self._list(res), namespace, request)
        if not found:
            raise StepFailed(f'provisioningrequests.autoscaling.x-k8s.io "{request}" not found')
        if len(found) > 1:
            raise StepFailed(f"ProvisioningRequest {request!r} exists in several namespaces: give a namespace")
        return found[0]

    def _requests_named(self, requests: list[dict[str, Any]], namespace: str | None, request: str) -> list[dict[str, Any]]:
        """The requests of ``requests`` that the scenario calls ``request`` (in ``namespace``)."""
        return [o for o in requests if self._back(o["metadata"]["name"]) == request
                and (namespace is None or o["metadata"]["namespace"] == namespace + self.suffix)]

    def set_quota_reservation(self, namespace: str, name: str, admission: Admission | None) -> None:
        self._conflicts(lambda: self._set_quota_reservation(namespace, name, admission))

    def _set_quota_reservation(self, namespace: str, name: str, admission: Admission | None) -> None:
        res = RESOURCES[c.WORKLOAD]
        real_ns, real_name = self._real_key(c.WORKLOAD, namespace, name)
        current = self._get_raw(res, real_ns, real_name)
        if current is None:
            raise StepFailed(f'workloads.kueue.x-k8s.io "{name}" not found')
        wl = load_object(self._back(current), validation=IGNORE)
        assert isinstance(wl, Workload)
        now = Time(math.floor(self.now))
        if admission is None:
            new = unset_quota_reservation(wl, c.REASON_EVICTED_BY_TEST, c.MSG_EVICTED_BY_TEST, now, _DEFAULT_CONFIG)
        else:
            new = set_quota_reservation(wl, admission, now)
        status = self._out(dump_object(new).get("status") or {}, self._cluster_names)
        self._write_status(res, current, status)

    # --- reading -------------------------------------------------------------------------------------
    def _real_key(self, kind: str, namespace: str, name: str) -> tuple[str, str]:
        """Where the object the scenario calls ``namespace/name`` is on the cluster: names derived
        from a cluster-scoped name or a uid (a request's, a job's Workload's) are found by
        reading each object of the namespace back."""
        if not KINDS[kind].NAMESPACED:
            return "", name + self.suffix
        real_ns = namespace + self.suffix
        if real_ns not in self.namespaces:
            return real_ns, name
        for obj in self.client.list(RESOURCES[kind], real_ns).items:
            if self._back(obj["metadata"]["name"]) == name:
                return real_ns, obj["metadata"]["name"]
        return real_ns, name

    def _get_raw(self, res: Resource, namespace: str, name: str, api_version: str | None = None) -> dict[str, Any] | None:
        if api_version and api_version != res.api_version:
            group, _, version = api_version.rpartition("/")
            res = attrs.evolve(res, group=group, version=version)
        try:
            return self.client.get(res, namespace, name)
        except ApiError as e:
            if e.code == 404:
                return None
            raise StepFailed(self._back(str(e))) from None

    def _list(self, res: Resource) -> list[dict[str, Any]]:
        if not res.namespaced:
            return [o for o in self.client.list(res).items if o["metadata"]["name"].endswith(self.suffix)]
        return [o for ns in sorted(self.namespaces) for o in self.client.list(res, ns).items]

    def read(self, kind: str, namespace: str, name: str, api_version: str | None) -> dict[str, Any] | None:
        real_ns, real_name = self._real_key(kind, namespace, name)
        doc = self._get_raw(RESOURCES[kind], real_ns, real_name, api_version)
        return None if doc is None else self._back(doc)

    def count(self, kind: str) -> int:
        return len(self._list(RESOURCES[kind]))

    def take_events(self) -> list[dict[str, Any]]:
        """The events of the settles since the last call.  The model emits events only when
        it settles; a real Kueue emits them as it goes, so an event it emits after a settle (an
        answer to a step that came before the next settle) is held until that settle, as the
        model would emit it then."""
        with self._changed:
            taken, self._released = self._released, []
        return [self._back(e) for e in taken]

    def metric_series(self) -> list[tuple[str, Mapping[str, str], float]]:
        url = self.session.metrics_url
        if url is None:
            raise StepFailed("metrics: Kueue's metrics endpoint is not known (give the testbed's kubeconfig)")
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        request = urllib.request.Request(url, headers={"Authorization": f"Bearer {self.session.token()}"})
        with urllib.request.urlopen(request, timeout=10, context=context) as resp:
            text = resp.read().decode()
        series: list[tuple[str, Mapping[str, str], float]] = []
        for name, labels, value in parse_prometheus(text):
            if name.startswith("kueue_"):
                shown = {k: self._back(v) for k, v in labels.items()}
                mine = any(v.endswith(self.suffix) for v in labels.values())
                if mine:
                    series.append((name.removeprefix("kueue_"), shown, value))
        return series

    def end(self) -> None:
        self.session.unregister(self.suffix)
        for ns in self.namespaces:
            with contextlib.suppress(ApiError):
                self.client.delete(NAMESPACE, "", ns)
        for kind in (c.CLUSTER_QUEUE, c.COHORT, c.ADMISSION_CHECK, c.PROVISIONING_REQUEST_CONFIG, c.RESOURCE_FLAVOR):
            for name in self._cluster_names:
                with contextlib.suppress(ApiError):
                    self.client.delete(RESOURCES[kind], "", name + self.suffix)


def restart_for(testbed: Testbed, config: Mapping[str, Any] | None) -> tuple[Testbed, str | None]:
    """Restarts the testbed's Kueue with ``config`` (a scenario's Configuration fragment, or
    None for the testbed's own).  Returns the testbed as it now runs and, when Kueue did not
    start, why (a gate the release lacks, a field it does not know), for the scenarios that
    need it to be skipped with."""
    try:
        return restart_kueue(testbed, config), None
    except ClusterError as e:
        return Testbed.load(Path(testbed.folder)) or testbed, (
            f"Kueue {testbed.versions.get('kueue', '')} does not start with its config: {e}")


class _Conflict(Exception):
    """A conditional write found the object changed since it was read."""


_JOB_KINDS = (c.JOB, c.JOBSET, c.PYTORCH_JOB)
#: Past this length Kueue hashes a name it derives (``limitObjectName``); with a margin for
#: the isolation suffix.
_HASHED_NAME = 253 - 2 * 6
#: The longest Job name the API server takes (its pods' job-name label is derived from it).
_JOB_NAME_MAX = 63


def _job_name(workload: str) -> str:
    """The implicit Job's name: the Workload's, or a digest of it when too long for a Job."""
    if len(workload) <= _JOB_NAME_MAX:
        return workload
    return "implicit-" + hashlib.sha1(workload.encode()).hexdigest()[:16]


def _waits_out_backoff(wl: Workload, clock: float) -> bool:
    """A pending Workload in backoff at ``clock`` (``requeueAt`` to come, or Requeued=False):
    one that must join its queue only once its status is written (see :meth:`ClusterDriver.begin`)."""
    return not wl.has_quota_reservation() and queues.in_backoff(wl, Time(math.floor(clock)))


def _owner_depths(objects: Sequence[KubeObject]) -> list[int]:
    """How many owner references lead from each object to one no world object owns."""
    by_uid = {o.metadata.uid: i for i, o in enumerate(objects) if o.metadata.uid}
    depths: dict[int, int] = {}

    def depth(i: int, seen: frozenset[int]) -> int:
        if i not in depths:
            owners = [by_uid[r.uid] for r in objects[i].metadata.owner_references
                      if r.uid in by_uid and by_uid[r.uid] not in seen]
            depths[i] = 1 + max((depth(o, seen | {i}) for o in owners), default=-1)
        return depths[i]
    return [depth(i, frozenset()) for i in range(len(objects))]


@attrs.frozen
class _Written:
    """What the times of one object read from the cluster are mapped with."""

    last: int | None
    """Its last write (:func:`_last_write`)."""
    latest: int | None
    """Its latest own time not after the last write."""
    origins: Mapping[int, int]
    """Deadline -> the check transition time it was counted from (plus ``requeueAfterSeconds``)."""


def _written(doc: Mapping[str, Any]) -> _Written:
    last = _last_write(doc["metadata"])
    stamps: list[int] = []

    def collect(value: Any) -> None:
        if isinstance(value, Mapping):
            for k, v in value.items():
                if k != "managedFields":
                    collect(v)
        elif isinstance(value, list):
            for v in value:
                collect(v)
        elif isinstance(value, str) and _TIMESTAMP.fullmatch(value):
            stamps.append(parse_time(value))
    collect(doc)
    origins: dict[int, int] = {}
    for check in (doc.get("status") or {}).get("admissionChecks") or ():
        after, at = check.get("requeueAfterSeconds"), check.get("lastTransitionTime")
        if isinstance(after, int) and isinstance(at, str) and _TIMESTAMP.fullmatch(at):
            origins[parse_time(at) + after] = parse_time(at)
    before = [t for t in stamps if last is None or t <= last]
    return _Written(last, max(before) if before else None, origins)


def _last_write(meta: Mapping[str, Any]) -> int | None:
    """When the object was last written, to the second: its newest managedFields entry."""
    times = [parse_time(str(f["time"])) for f in meta.get("managedFields") or () if f.get("time")]
    return max(times) if times else None


def parse_prometheus(text: str) -> Iterator[tuple[str, dict[str, str], float]]:
    """The samples of Prometheus' text exposition format: ``name{label="value",...} value``."""
    line_re = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)')
    label_re = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = line_re.match(line)
        if m is None:
            continue
        labels = {k: v.replace('\\"', '"').replace("\\\\", "\\") for k, v in label_re.findall(m.group(3) or "")}
        try:
            yield m.group(1), labels, float(m.group(4))
        except ValueError:
            continue


def _default_config() -> Any:
    from kueue_provreq.api.config import Configuration
    return Configuration()


_DEFAULT_CONFIG = _default_config()
