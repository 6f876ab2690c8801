"""A reconcile's effects, applied to a real cluster: the inverse of reading a snapshot.

For people who write controllers in Python on top of the model: build a World from what
your informers hold, call a controller, and hand its :class:`~kueue_provreq.world.Result`'s
effects to :func:`apply_effects` with the World the reconcile read.  Each effect becomes one
API call, as a controller-runtime controller would make it:

* ``Create`` -- POST, with ``fieldManager``; the server-set metadata the model filled in
  (uid, resourceVersion, creationTimestamp, generation, managedFields) is left out;
* ``Update`` -- a JSON merge patch of what changed, against the object as it was read:
  metadata and spec through the object, status through its ``status`` subresource, each with
  ``fieldManager`` and the ``resourceVersion`` read, so a write over a change made since is
  refused (409 Conflict) instead of silently undoing it;
* ``Delete`` -- DELETE with ``preconditions`` (the uid and resourceVersion read), so neither
  a namesake created since nor an object changed since is deleted; NotFound counts as done;
* ``Event`` -- a core/v1 Event about the object; a failure here is reported, not fatal;
* ``MetricInc`` -- not an API call: metrics are the caller's.

A failed call ends the batch with ``requeue=True``, as a Go controller returns on its first
error and controller-runtime requeues it: a conflict (409: the object changed since it was
read, a precondition failed, or a create found the object already there) means the reconcile
decided on a stale view, so its remaining effects are not applied and the caller reads again
and reconciles again; any other error is also listed in ``errors``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from kueue_provreq.api.meta import Time
from kueue_provreq.api.objects import KubeObject
from kueue_provreq.cluster.client import ApiError, Client
from kueue_provreq.cluster.resources import EVENT, RESOURCES
from kueue_provreq.manifests import dump_object
from kueue_provreq.manifests.codec import format_time
from kueue_provreq.world import Create, Delete, Effect, Event, MetricInc, Update, World

#: What the API server sets and a client never sends on create.
_SERVER_SET = ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields", "selfLink")


@attrs.frozen
class Applied:
    """What a batch of effects did."""

    written: tuple[dict[str, Any], ...] = ()
    """The objects as the API server returned them after each create or patch, in order."""
    requeue: bool = False
    """A call failed and stopped the batch: read again and reconcile again."""
    errors: tuple[str, ...] = ()
    """Calls that failed for another reason (``Kind ns/name: message``)."""


def merge_patch(old: Any, new: Any) -> Any:
    """The RFC 7386 JSON merge patch that turns ``old`` into ``new``: changed keys, ``None``
    for removed ones; lists are replaced whole, as merge patches replace them.

    >>> merge_patch({"a": 1, "b": {"c": 2, "d": 3}}, {"a": 1, "b": {"c": 4}, "e": [1]})
    {'b': {'c': 4, 'd': None}, 'e': [1]}
    """
    if not isinstance(old, Mapping) or not isinstance(new, Mapping):
        return new
    patch: dict[str, Any] = {}
    for key, value in new.items():
        if key not in old:
            patch[key] = value
        elif old[key] != value:
            patch[key] = merge_patch(old[key], value)
    for key in old:
        if key not in new:
            patch[key] = None
    return patch


def _label(kind: str, namespace: str, name: str) -> str:
    return f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"


def _create_body(obj: KubeObject) -> dict[str, Any]:
    body = dump_object(obj)
    body.pop("status", None)
    meta = body.get("metadata") or {}
    body["metadata"] = {k: v for k, v in meta.items() if k not in _SERVER_SET}
    return body


def _resource_version(obj: KubeObject | None) -> str:
    rv = obj.metadata.extra.get("resourceVersion") if obj is not None else None
    return rv if isinstance(rv, str) else ""


def _stored_version(stored: Mapping[str, Any], default: str) -> str:
    """The resourceVersion the API server answered a write with."""
    return str((stored.get("metadata") or {}).get("resourceVersion") or default)


def _event_body(effect: Event, involved: KubeObject | None, field_manager: str, now: Time) -> dict[str, Any]:
    res = RESOURCES[effect.kind]
    stamp = format_time(now)
    ref = {"apiVersion": res.api_version, "kind": effect.kind, "name": effect.name,
           **({"namespace": effect.namespace} if effect.namespace else {}),
           **({"uid": involved.metadata.uid} if involved is not None and involved.metadata.uid else {})}
    return {"apiVersion": "v1", "kind": "Event",
            "metadata": {"generateName": f"{effect.name}.", "namespace": effect.namespace or "default"},
            "involvedObject": ref, "type": effect.type, "reason": effect.reason, "message": effect.message,
            "source": {"component": field_manager}, "reportingComponent": field_manager,
            "firstTimestamp": stamp, "lastTimestamp": stamp, "count": 1}


class _Batch:
    def __init__(self, client: Client, world: World, field_manager: str, now: Time) -> None:
        self.client, self.world, self.manager, self.now = client, world, field_manager, now
        self.written: list[dict[str, Any]] = []
        self.errors: list[str] = []

    def create(self, obj: KubeObject) -> None:
        res = RESOURCES[obj.KIND]
        meta = obj.metadata
        stored = self.client.create(res, meta.namespace, _create_body(obj), self.manager)
        self.written.append(stored)
        status = dump_object(obj).get("status")
        if status:
            self._patch_status(obj, _stored_version(stored, ""), status)

    def update(self, new: KubeObject) -> None:
        res = RESOURCES[new.KIND]
        meta = new.metadata
        old = self.world.get(new.KIND, meta.namespace, meta.name)
        before = dump_object(old) if old is not None else {}
        after = dump_object(new)
        version = _resource_version(old)
        main = merge_patch({k: v for k, v in before.items() if k != "status"},
                           {k: v for k, v in after.items() if k != "status"})
        status = merge_patch(before.get("status") or {}, after.get("status") or {})
        if main:
            main.setdefault("metadata", {})["resourceVersion"] = version
            stored = self.client.patch(res, meta.namespace, meta.name, main, self.manager)
            self.written.append(stored)
            version = _stored_version(stored, version)
        if status:
            self._patch_status(new, version, status)

    def _patch_status(self, obj: KubeObject, version: str, status: Any) -> None:
        """A merge patch of the ``status`` subresource, conditioned on ``version``."""
        meta = obj.metadata
        self.written.append(self.client.patch(
            RESOURCES[obj.KIND], meta.namespace, meta.name,
            {"metadata": {"resourceVersion": version}, "status": status}, self.manager, "status"))

    def delete(self, effect: Delete) -> None:
        old = self.world.get(effect.kind, effect.namespace, effect.name)
        uid = old.metadata.uid if old is not None else ""
        try:
            self.client.delete(RESOURCES[effect.kind], effect.namespace, effect.name, uid, _resource_version(old))
        except ApiError as e:
            if e.code != 404:
                raise

    def event(self, effect: Event) -> None:
        involved = self.world.get(effect.kind, effect.namespace, effect.name)
        body = _event_body(effect, involved, self.manager, self.now)
        try:
            self.client.create(RESOURCES[EVENT], body["metadata"]["namespace"], body, self.manager)
        except ApiError as e:
            self.errors.append(f"{_label(EVENT, effect.namespace, effect.name)}: {e}")


def _effect_label(effect: Create | Update | Delete) -> str:
    if isinstance(effect, Delete):
        return _label(effect.kind, effect.namespace, effect.name)
    return _label(effect.obj.KIND, effect.obj.metadata.namespace, effect.obj.metadata.name)


def apply_effects(client: Client, effects: Iterable[Effect], world: World, field_manager: str,
                  now: Time) -> Applied:
    """Apply ``effects`` in order; ``world`` is what the reconcile read (for the
    resourceVersions and uids the writes are conditioned on), ``now`` stamps events."""
    batch = _Batch(client, world, field_manager, now)
    for effect in effects:
        if isinstance(effect, MetricInc):
            continue
        if isinstance(effect, Event):
            batch.event(effect)
            continue
        try:
            if isinstance(effect, Create):
                batch.create(effect.obj)
            elif isinstance(effect, Update):
                batch.update(effect.obj)
            else:
                batch.delete(effect)
        except ApiError as e:
            if e.code != 409:
                batch.errors.append(f"{_effect_label(effect)}: {e}")
            return Applied(tuple(batch.written), True, tuple(batch.errors))
    return Applied(tuple(batch.written), False, tuple(batch.errors))
