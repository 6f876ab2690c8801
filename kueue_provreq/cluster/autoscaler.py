"""A stand-in for Cluster Autoscaler that answers ProvisioningRequests on a test cluster.

Kueue's ProvisioningRequest admission check needs something to answer the requests it
makes; on kind, minikube or a test cluster nothing does.  This loop plays Cluster Autoscaler
for them: it watches ProvisioningRequests and writes the conditions CA would write, when CA
would write them, as the SCRIPT says (the grammar and the behaviour are the pure model
:mod:`kueue_provreq.autoscaler`, shared with ``forecast`` and ``simulate``: item *i* answers
attempt *i*, the last item repeats; a provisioned request's booking expires after 10
minutes; ``CapacityRevoked`` only when the script asks, as upstream CA never sets it).

What it touches: it lists and watches ``provisioningrequests`` and patches
``provisioningrequests/status`` -- conditions only, through the status subresource, with
field manager :data:`FIELD_MANAGER` and the resourceVersion it read (a conflict just waits
for the next event).  It is also the worked example of :mod:`kueue_provreq.cluster.apply`:
the model's decision is an ``Update`` effect, and the port turns it into that one call.  Like upstream CA it answers only the classes CA handles
(``check-capacity.autoscaling.x-k8s.io`` and ``best-effort-atomic-scale-up.autoscaling.x-k8s.io``)
and leaves every other request alone.  It reads no Pods, so a booking always runs its 10
minutes (upstream ends it early, ``CapacityBookingConsumed``, once all pods are scheduled).

Timing: the clock is the caller's (wall-clock seconds); between changes the loop sleeps
inside a watch whose server-side timeout ends at the next thing the model has to do (a
change that brings something due earlier ends that watch and starts a shorter one), so a
scripted ``provision@5m`` is written within a second of five minutes after the request's
creation, and a new request is answered as soon as its watch event arrives.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kueue_provreq.api import constants as c
from kueue_provreq.api.meta import Conditions, Time
from kueue_provreq.api.provisioning import ProvisioningRequest
from kueue_provreq.autoscaler import Script, reconcile
from kueue_provreq.cluster.apply import apply_effects
from kueue_provreq.cluster.client import ApiError, Client
from kueue_provreq.cluster.resources import RESOURCES
from kueue_provreq.cluster.snapshot import to_objects
from kueue_provreq.manifests.codec import format_time
from kueue_provreq.manifests.objects import IGNORE
from kueue_provreq.world import Update, World

FIELD_MANAGER = "kueue-provreq-autoscaler"
#: The longest a watch stays open with nothing to do (the API server's own limit is higher).
MAX_WATCH_SECONDS = 300

_REQUESTS = RESOURCES[c.PROVISIONING_REQUEST]

Key = tuple[str, str]


class StandIn:
    """The loop: :meth:`run` until a time (or forever); :meth:`step` answers what is due now."""

    def __init__(self, client: Client, script: Script, namespace: str = "",
                 clock: Callable[[], float] = lambda: 0.0, log: Callable[[str], None] = lambda line: None) -> None:
        self.client, self.script, self.namespace = client, script, namespace
        self.clock, self.log = clock, log
        self.requests: dict[Key, dict[str, Any]] = {}
        self.ignored: set[Key] = set()
        #: Each request's model, with the document it was decoded from: every step looks at
        #: every request, and decoding (a full validation) is what a step would spend most on.
        self._decoded: dict[Key, tuple[dict[str, Any], ProvisioningRequest]] = {}

    # --- the pure part, applied -----------------------------------------------------------------
    def step(self, now: Time) -> Time | None:
        """Write every condition change due by ``now``; return when the next one is due."""
        wake: list[Time] = []
        for key in sorted(self.requests):
            pr = self._model(key)
            if pr is None:
                continue
            result = reconcile(pr, now, self.script.decision(pr))
            if result.written:
                self._write(key, pr, result.request, result.written)
            if result.next_at is not None:
                wake.append(result.next_at)
        return min(wake) if wake else None

    def _model(self, key: Key) -> ProvisioningRequest | None:
        raw = self.requests[key]
        decoded = self._decoded.get(key)
        if decoded is None or decoded[0] is not raw:
            (obj,), _ = to_objects([raw], f"ProvisioningRequest {key[0]}/{key[1]}", IGNORE)
            assert isinstance(obj, ProvisioningRequest)
            decoded = self._decoded[key] = (raw, obj)
        pr = decoded[1]
        if pr.metadata.terminating:
            return None
        if pr.spec.provisioning_class_name not in c.CA_CLASSES:
            if key not in self.ignored:
                self.ignored.add(key)
                self.log(f"ignoring {key[0]}/{key[1]}: class {pr.spec.provisioning_class_name} is not one "
                         "Cluster Autoscaler handles")
            return None
        return pr

    def _write(self, key: Key, before: ProvisioningRequest, after: ProvisioningRequest,
               written: Conditions) -> None:
        """The change, as an Update effect applied through the port: a merge patch of the status
        subresource, conditioned on the resourceVersion read, under :data:`FIELD_MANAGER`."""
        now = Time(int(self.clock()))
        applied = apply_effects(self.client, [Update(after)], World([before]), FIELD_MANAGER, now)
        if applied.requeue:  # changed since, or gone: the watch brings the news
            why = "; ".join(applied.errors) or "it changed since it was read"
            self.log(f"{key[0]}/{key[1]}: not written ({why}); waiting for the next change")
            return
        self.requests[key] = {"apiVersion": _REQUESTS.api_version, "kind": _REQUESTS.kind, **applied.written[-1]}
        said = ", ".join(f"{cd.type}={cd.status} ({cd.reason}: {cd.message})" for cd in written)
        self.log(f"{format_time(now)} {key[0]}/{key[1]}: {said}")

    # --- the loop ----------------------------------------------------------------------------------
    def _relist(self) -> str:
        listing = self.client.list(_REQUESTS, self.namespace)
        self.requests = {_key(o): o for o in listing.items}
        self._decoded.clear()
        return listing.resource_version

    def run(self, until: float | None = None) -> None:
        """Answer requests until the clock reaches ``until`` (None: until interrupted)."""
        version = self._relist()
        while True:
            now = self.clock()
            due = self.step(Time(int(now)))
            if until is not None and now >= until:
                return
            horizon = [t - now for t in (due, until) if t is not None]
            timeout = max(1, min(MAX_WATCH_SECONDS, int(min(horizon)) + 1 if horizon else MAX_WATCH_SECONDS))
            ends = now + timeout
            try:
                for event in self.client.watch(_REQUESTS, version, self.namespace, timeout):
                    version = str((event.object.get("metadata") or {}).get("resourceVersion") or version)
                    if event.type == "BOOKMARK":
                        continue
                    if event.type == "DELETED":
                        self.requests.pop(_key(event.object), None)
                        self._decoded.pop(_key(event.object), None)
                    else:
                        self.requests[_key(event.object)] = event.object
                    due = self.step(Time(int(self.clock())))
                    if due is not None and due < ends:
                        break  # something is due before this watch would end: watch again, shorter
            except ApiError as e:
                if e.code != 410:  # 410 Gone: the version is too old to watch from; list again
                    raise
                version = self._relist()


def _key(obj: dict[str, Any]) -> Key:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")

