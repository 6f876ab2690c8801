"""The Kubernetes API, as this port uses it: JSON in, JSON out, over the official client.

Why the official ``kubernetes`` client (the ``cluster`` extra): it reads a kubeconfig the
way ``kubectl`` does (contexts, client certificates, tokens, ``exec`` credential plugins
such as ``aws eks get-token`` or ``gke-gcloud-auth-plugin``), it is maintained with each
Kubernetes release, and its request layer sends any body with any verb -- a DELETE with
``DeleteOptions.preconditions`` included, which :mod:`~kueue_provreq.cluster.apply` needs
and lightkube's ``Client.delete`` cannot send.  Only its request layer is used
(``ApiClient.param_serialize`` and ``call_api``, which every generated method calls): the
objects stay the plain JSON the API server sent, with every field the model does not know
about, exactly as ``kubectl get -o json`` prints it, and the codec in
:mod:`kueue_provreq.manifests` turns them into models.

The client is imported when :func:`connect` is called, never at import time, so that the
rest of the library starts without it (and without its 0.4 s of imports).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs

from kueue_provreq.cluster.resources import Resource
from kueue_provreq.errors import KueueProvreqError
from kueue_provreq.extras import CLUSTER, install_hint
from kueue_provreq.manifests import ManifestError, load_file

INSTALL_HINT = install_hint(CLUSTER)

#: Seconds to connect, and to wait for the next bytes of an answer to a list or a get: a server
#: that accepts connections and never answers is said within seconds, not minutes.
CONNECT_TIMEOUT = 5.0
READ_TIMEOUT = 10.0
#: ... and of an answer to a write, which an admission webhook may hold up to its own 30 s.
WRITE_TIMEOUT = 60.0

JSON_CONTENT = "application/json"
MERGE_PATCH = "application/merge-patch+json"
#: Server-side apply (JSON is YAML, so the body goes as JSON).
APPLY_PATCH = "application/apply-patch+yaml"


class ClusterError(KueueProvreqError):
    """The cluster cannot be used at all: no client installed, a bad kubeconfig, an API server
    that does not answer.  ``str(e)`` is one line for the user."""


@attrs.frozen
class ApiError(KueueProvreqError):
    """A call the API server answered with an error ``Status``."""

    code: int
    reason: str
    message: str

    def __str__(self) -> str:
        return f"{self.message} ({self.code} {self.reason})" if self.message else f"{self.code} {self.reason}"


@attrs.frozen
class Listing:
    """One complete list (every page): the items, and the collection's resourceVersion to
    watch from."""

    items: tuple[dict[str, Any], ...]
    resource_version: str


@attrs.frozen
class WatchEvent:
    type: str
    object: dict[str, Any]


def _import_client() -> Any:
    try:
        import kubernetes  # noqa: F401  (the extra's presence is what is checked here)
        from kubernetes import config
    except ImportError:
        raise ClusterError(f"reading a cluster needs the Kubernetes client: {INSTALL_HINT}") from None
    return config


def connect(kubeconfig: str, context: str | None = None) -> Client:
    """A client for ``context`` (default: the kubeconfig's current context) of ``kubeconfig``.

    The kubeconfig is read first as every other input is (:func:`~kueue_provreq.manifests.load_file`:
    size and alias limits, the path as the file system has it), and the exec credential plugin
    it names is looked for, so that a missing one is said as such rather than as a server that
    refuses; every call is then one attempt (urllib3's retries off) with short timeouts."""
    config = _import_client()
    from kubernetes.client import ApiClient, Configuration

    try:
        docs = load_file(Path(kubeconfig).expanduser())
    except ManifestError as e:
        raise ClusterError(f"kubeconfig {e}") from None
    doc = docs[0] if len(docs) == 1 else {}
    names = [str(ctx.get("name")) for ctx in _entries(doc, "contexts")]
    name = context if context is not None else str(doc.get("current-context") or "")
    if context is not None and context not in names:
        raise ClusterError(f"kubeconfig {kubeconfig}: no context {context!r} "
                           f"(contexts: {', '.join(names) or 'none'})")
    _check_exec_plugin(kubeconfig, doc, name)
    settings = Configuration()
    try:
        config.load_kube_config(config_file=str(Path(kubeconfig).expanduser()), context=context,
                                client_configuration=settings, persist_config=False)
    except Exception as e:  # the loader raises ConfigException, ValueError, KeyError, yaml errors
        raise ClusterError(f"kubeconfig {kubeconfig}: {_one_line(e)}") from None
    # one attempt per call: a retry loop hides an unreachable server for minutes (urllib3 reads
    # this when the client's connection pool is made, so it is set before ApiClient exists)
    settings.retries = False
    return Client(ApiClient(settings), name)


def _entries(doc: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    value = doc.get(key)
    return [e for e in value if isinstance(e, Mapping)] if isinstance(value, list) else []


def _check_exec_plugin(kubeconfig: str, doc: Mapping[str, Any], context: str) -> None:
    """The ``exec`` credential plugin of the context's user, found on PATH (the Kubernetes
    client only logs a missing one, then calls the server without credentials)."""
    ctx = next((c.get("context") for c in _entries(doc, "contexts") if c.get("name") == context), None)
    user_name = ctx.get("user") if isinstance(ctx, Mapping) else None
    user = next((u.get("user") for u in _entries(doc, "users") if u.get("name") == user_name), None)
    plugin = user.get("exec") if isinstance(user, Mapping) else None
    command = plugin.get("command") if isinstance(plugin, Mapping) else None
    if isinstance(command, str) and command and shutil.which(command) is None:
        raise ClusterError(f"kubeconfig {kubeconfig}: context {context!r}: the exec credential plugin "
                           f"{command!r} of user {user_name!r} is not installed (not on PATH)")


def connect_in_cluster() -> Client:
    """A client for the cluster this process runs in, with its pod's service account (what a
    CronJob running ``audit`` uses)."""
    config = _import_client()
    from kubernetes.client import ApiClient, Configuration

    settings = Configuration()
    try:
        config.load_incluster_config(client_configuration=settings)
    except Exception as e:  # ConfigException: not in a pod, or no service account token
        raise ClusterError(f"--in-cluster: {_one_line(e)}") from None
    settings.retries = False
    return Client(ApiClient(settings), "in-cluster")


def _one_line(e: BaseException) -> str:
    text = str(e).strip() or type(e).__name__
    return " ".join(text.split())


def _status_error(code: int, body: bytes, fallback: str) -> ApiError:
    """The API server's ``Status`` (kind Status) as an ApiError; other bodies keep the
    HTTP reason."""
    try:
        status = json.loads(body)
    except ValueError:
        status = None
    if isinstance(status, Mapping) and status.get("kind") == "Status":
        return ApiError(int(status.get("code") or code), str(status.get("reason") or fallback),
                        str(status.get("message") or ""))
    return ApiError(code, fallback, body.decode(errors="replace").strip()[:200])


class Client:
    """The calls the port makes, each one HTTP request (a list follows ``continue``)."""

    def __init__(self, api: Any, context: str = "") -> None:
        self._api = api
        self.context = context

    @property
    def server(self) -> str:
        host: str = self._api.configuration.host
        return host

    def close(self) -> None:
        self._api.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- the one request path ---------------------------------------------------------------
    def _send(self, method: str, path: str, query: list[tuple[str, str]] | None = None,
              body: Any = None, content_type: str = JSON_CONTENT, read_timeout: float = READ_TIMEOUT) -> Any:
        headers = {"Accept": JSON_CONTENT}
        if body is not None:
            headers["Content-Type"] = content_type
        method, url, headers, body, post = self._api.param_serialize(
            method=method, resource_path=path, query_params=query or [], header_params=headers,
            body=body, auth_settings=["BearerToken"])
        try:
            return self._api.call_api(method, url, header_params=headers, body=body, post_params=post,
                                      _request_timeout=(CONNECT_TIMEOUT, read_timeout))
        except Exception as e:  # urllib3's connection, TLS and timeout errors
            if type(e).__module__.startswith("kubernetes"):
                raise
            where = f"context {self.context!r}: " if self.context else ""
            raise ClusterError(f"{where}cannot reach the API server at {self.server} ({method} {path}, "
                               f"{CONNECT_TIMEOUT:g} s to connect, {read_timeout:g} s to answer): "
                               f"{_one_line(e)}") from None

    def _json(self, method: str, path: str, query: list[tuple[str, str]] | None = None,
              body: Any = None, content_type: str = JSON_CONTENT) -> dict[str, Any]:
        timeout = READ_TIMEOUT if method == "GET" else WRITE_TIMEOUT
        resp = self._send(method, path, query, body, content_type, read_timeout=timeout)
        data = resp.read()
        if not 200 <= resp.status <= 299:
            raise _status_error(resp.status, data, resp.reason or "")
        try:
            out = json.loads(data) if data else {}
        except ValueError:
            raise ClusterError(f"{self.server}{path}: the answer is not JSON") from None
        if not isinstance(out, dict):
            raise ClusterError(f"{self.server}{path}: the answer is not a JSON object")
        return out

    # --- reads -----------------------------------------------------------------------------------
    def list(self, res: Resource, namespace: str = "", limit: int = 500, selector: str = "") -> Listing:
        """Every object of ``res`` (in ``namespace``, or in all of them; matching the label
        ``selector``), page by page as the API server hands them out (``limit`` and
        ``continue``), each with its ``apiVersion`` and ``kind`` (list items of built-in kinds
        come without them)."""
        items: list[dict[str, Any]] = []
        token = ""
        version = ""
        while True:
            query = [("labelSelector", selector)] if selector else []
            query += [("limit", str(limit))] + ([("continue", token)] if token else [])
            page = self._json("GET", res.path(namespace), query)
            meta = page.get("metadata") or {}
            version = str(meta.get("resourceVersion") or version)
            for item in page.get("items") or ():
                if isinstance(item, dict):
                    items.append({"apiVersion": res.api_version, "kind": res.kind, **item})
            token = str(meta.get("continue") or "")
            if not token:
                return Listing(tuple(items), version)

    def get(self, res: Resource, namespace: str, name: str) -> dict[str, Any]:
        """One object, with its ``apiVersion`` and ``kind``."""
        return {"apiVersion": res.api_version, "kind": res.kind, **self._json("GET", res.path(namespace, name))}

    def watch(self, res: Resource, resource_version: str, namespace: str = "",
              timeout_seconds: int = 300) -> Iterator[WatchEvent]:
        """The changes to ``res`` after ``resource_version``, until the API server ends the
        stream (after ``timeout_seconds``).  An ``ERROR`` event (410 Gone when the version is
        too old) is raised as :class:`ApiError`: the caller lists again."""
        query = [("watch", "true"), ("resourceVersion", resource_version),
                 ("allowWatchBookmarks", "true"), ("timeoutSeconds", str(timeout_seconds))]
        resp = self._send("GET", res.path(namespace), query, read_timeout=timeout_seconds + CONNECT_TIMEOUT)
        if not 200 <= resp.status <= 299:
            raise _status_error(resp.status, resp.read(), resp.reason or "")
        raw = resp.response
        try:
            pending = b""
            for chunk in raw.stream(4096, decode_content=True):
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    if line.strip():
                        yield self._event(res, line)
            if pending.strip():
                yield self._event(res, pending)
        finally:
            raw.close()  # a watch left early must not go back to the pool half read
            raw.release_conn()

    @staticmethod
    def _event(res: Resource, line: bytes) -> WatchEvent:
        try:
            event = json.loads(line)
        except ValueError:
            raise ClusterError(f"watch of {res.resource_name}: an event is not JSON") from None
        obj = event.get("object") if isinstance(event, dict) else None
        if not isinstance(obj, dict):
            raise ClusterError(f"watch of {res.resource_name}: an event has no object")
        if event.get("type") == "ERROR":
            raise _status_error(int(obj.get("code") or 500), json.dumps(obj).encode(), "Error")
        return WatchEvent(str(event.get("type")), {"apiVersion": res.api_version, "kind": res.kind, **obj})

    # --- writes ----------------------------------------------------------------------------------
    def create(self, res: Resource, namespace: str, body: Mapping[str, Any], field_manager: str) -> dict[str, Any]:
        return self._json("POST", res.path(namespace), [("fieldManager", field_manager)], dict(body))

    def replace(self, res: Resource, namespace: str, name: str, body: Mapping[str, Any],
                field_manager: str) -> dict[str, Any]:
        """PUT: the whole object, conditional on the ``metadata.resourceVersion`` in ``body``."""
        return self._json("PUT", res.path(namespace, name), [("fieldManager", field_manager)], dict(body))

    def patch(self, res: Resource, namespace: str, name: str, body: Mapping[str, Any], field_manager: str,
              subresource: str = "") -> dict[str, Any]:
        """A JSON merge patch (RFC 7386); a ``metadata.resourceVersion`` in ``body`` makes it
        conditional: the API server answers 409 Conflict when the object has changed since."""
        return self._json("PATCH", res.path(namespace, name, subresource), [("fieldManager", field_manager)],
                          dict(body), MERGE_PATCH)

    def apply(self, res: Resource, namespace: str, name: str, body: Mapping[str, Any], field_manager: str,
              subresource: str = "") -> dict[str, Any]:
        """A server-side apply that forces ownership, as a controller applies: ``field_manager``
        owns every field in ``body`` afterwards, and a field it owned that ``body`` leaves out
        is removed (unless another manager owns it too).  A ``metadata.resourceVersion`` in
        ``body`` makes it conditional, as for :meth:`patch`."""
        return self._json("PATCH", res.path(namespace, name, subresource),
                          [("fieldManager", field_manager), ("force", "true")], dict(body), APPLY_PATCH)

    def delete(self, res: Resource, namespace: str, name: str, uid: str = "", resource_version: str = "") -> None:
        """DELETE with ``preconditions``: only the object with that uid (and resourceVersion)
        is deleted, never a namesake created since, nor one changed since it was read."""
        preconditions = {k: v for k, v in (("uid", uid), ("resourceVersion", resource_version)) if v}
        body = {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Background",
                **({"preconditions": preconditions} if preconditions else {})}
        self._json("DELETE", res.path(namespace, name), None, body)
