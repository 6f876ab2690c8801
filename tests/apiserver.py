"""A stand-in API server on the loopback interface that replays recorded answers, and the
proxy that records them from a real one.

The cluster port is tested at the HTTP boundary: the real Kubernetes client sends real HTTP
requests to ``127.0.0.1:<port>`` and gets back the bytes an API server sent (status, headers,
JSON body; for a watch, a chunked stream of JSON lines).  Each exchange is matched on method,
path and query; when several match one request they answer in turn and the last one repeats.
Every request is kept, with its headers and body, for the test to check; one that matches no
exchange gets a 404 ``Status`` and is listed in ``unexpected``.

The answers are recorded, not written: :class:`RecordingProxy` stands between the port and a
real API server (the testbed's, ``tests/data/cluster/record.py``), forwards every request and
keeps each answer in the same form.
"""

from __future__ import annotations

import http.client
import json
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Self
from urllib.parse import parse_qsl, urlsplit

import attrs
import yaml


@attrs.frozen
class Request:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    """Names in lower case: HTTP header names are case-insensitive."""
    body: Any


def _matches(exchange: dict[str, Any], method: str, path: str, query: dict[str, str]) -> bool:
    want = exchange["request"]
    return want["method"] == method and want["path"] == path and want.get("query", {}) == query


class _Served:
    """An HTTP server on a thread of its own, as a context manager, with a kubeconfig pointing at
    it: what the recorded server and the recording proxy share."""

    _server: ThreadingHTTPServer
    _thread: threading.Thread

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)

    def kubeconfig(self, folder: Path, contexts: tuple[str, ...] = ("kind-ml",)) -> Path:
        """A kubeconfig whose contexts all point at this server (the first is current)."""
        return write_kubeconfig(self.url, folder, contexts)


class RecordedAPIServer(_Served):
    def __init__(self, exchanges: list[dict[str, Any]]) -> None:
        self.exchanges = list(exchanges)
        self.served: dict[int, int] = {}
        self.requests: list[Request] = []
        self.unexpected: list[Request] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _handle(self) -> None:
                url = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                body = json.loads(raw) if raw else None
                req = Request(self.command, url.path, dict(parse_qsl(url.query, keep_blank_values=True)),
                              {k.lower(): v for k, v in self.headers.items()}, body)
                answer = server._answer(req)
                if answer is None:
                    self._send(404, {"Content-Type": "application/json"},
                               {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                "message": "the server could not find the requested resource",
                                "reason": "NotFound", "details": {}, "code": 404})
                    return
                if "stream" in answer:
                    self._stream(answer)
                else:
                    self._send(answer["status"], answer.get("headers", {}), answer.get("body"))

            def _send(self, status: int, headers: dict[str, str], body: Any) -> None:
                data = json.dumps(body).encode() if body is not None else b""
                self.send_response(status)
                for k, v in headers.items():
                    if k.lower() != "content-length":
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, answer: dict[str, Any]) -> None:
                """A watch: one JSON event per line, chunked, then the end of the stream."""
                self.send_response(answer.get("status", 200))
                self.send_header("Content-Type", "application/json")
                self.send_header("Transfer-Encoding", "chunked")
                # the connection ends with the stream: say so, or the client may send its next
                # request on a socket the server is closing (RemoteDisconnected, now and then)
                self.send_header("Connection", "close")
                self.end_headers()
                for event in answer["stream"]:
                    line = json.dumps(event).encode() + b"\n"
                    self.wfile.write(f"{len(line):x}\r\n".encode() + line + b"\r\n")
                self.wfile.write(b"0\r\n\r\n")
                self.close_connection = True

            do_GET = do_POST = do_PATCH = do_DELETE = do_PUT = _handle

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @classmethod
    def from_file(cls, path: Path) -> RecordedAPIServer:
        return cls(json.loads(path.read_text())["exchanges"])

    def _answer(self, req: Request) -> dict[str, Any] | None:
        with self._lock:
            self.requests.append(req)
            found = [i for i, ex in enumerate(self.exchanges) if _matches(ex, req.method, req.path, req.query)]
            if not found:
                self.unexpected.append(req)
                return None
            turn = next((i for i in found if i not in self.served), found[-1])
            self.served[turn] = self.served.get(turn, 0) + 1
            answer: dict[str, Any] = self.exchanges[turn]["response"]
            return answer

    def calls(self, method: str | None = None) -> Iterator[Request]:
        return (r for r in self.requests if method is None or r.method == method)


#: Headers an answer is recorded without: the transport's, which the replay sets itself.
_TRANSPORT = frozenset({"date", "content-length", "transfer-encoding", "connection", "keep-alive"})


class RecordingProxy(_Served):
    """A plain-HTTP server on the loopback interface that forwards each request to ``upstream``
    (a real API server, over ``tls``, with ``headers`` added: an ``Impersonate-User`` makes the
    server judge the request as that user) and records the exchange as
    :class:`RecordedAPIServer` replays it: method, path and query; status, headers and JSON
    body, or, for a watch, its events.  ``exchanges`` is every one so far, in order."""

    def __init__(self, upstream: str, tls: ssl.SSLContext, headers: dict[str, str] | None = None) -> None:
        self.exchanges: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        target = urlsplit(upstream)
        extra = dict(headers or {})
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _handle(self) -> None:
                url = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                sent = {k: v for k, v in self.headers.items() if k.lower() in ("content-type", "accept")}
                conn = http.client.HTTPSConnection(target.hostname or "127.0.0.1", target.port, context=tls,
                                                   timeout=330)
                try:
                    conn.request(self.command, self.path, body=raw or None, headers={**sent, **extra})
                    resp = conn.getresponse()
                    query = dict(parse_qsl(url.query, keep_blank_values=True))
                    request = {"method": self.command, "path": url.path, "query": query}
                    headers = {k: v for k, v in resp.getheaders() if k.lower() not in _TRANSPORT}
                    if query.get("watch") == "true" and resp.status == 200:
                        self._relay_stream(request, resp)
                    else:
                        data = resp.read()
                        body = json.loads(data) if data else None
                        proxy._record({"request": request,
                                       "response": {"status": resp.status, "headers": headers, "body": body}})
                        self.send_response(resp.status)
                        for k, v in headers.items():
                            self.send_header(k, v)
                        self.send_header("Content-Length", str(len(data)))
                        self.end_headers()
                        self.wfile.write(data)
                finally:
                    conn.close()

            def _relay_stream(self, request: dict[str, Any], resp: http.client.HTTPResponse) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Transfer-Encoding", "chunked")
                self.send_header("Connection", "close")
                self.end_headers()
                events: list[Any] = []
                try:
                    for line in iter(resp.readline, b""):
                        if not line.strip():
                            continue
                        events.append(json.loads(line))
                        self.wfile.write(f"{len(line):x}\r\n".encode() + line + b"\r\n")
                        self.wfile.flush()
                    self.wfile.write(b"0\r\n\r\n")
                except OSError:  # the client left the watch early
                    pass
                finally:
                    proxy._record({"request": request, "response": {"status": 200, "stream": events}})
                    self.close_connection = True

            do_GET = do_POST = do_PATCH = do_DELETE = do_PUT = _handle

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def _record(self, exchange: dict[str, Any]) -> None:
        with self._lock:
            self.exchanges.append(exchange)



def write_kubeconfig(url: str, folder: Path, contexts: tuple[str, ...]) -> Path:
    config = {
        "apiVersion": "v1", "kind": "Config", "current-context": contexts[0], "preferences": {},
        "clusters": [{"name": "recorded", "cluster": {"server": url}}],
        "users": [{"name": "alice", "user": {"token": "recorded-token"}}],
        "contexts": [{"name": name, "context": {"cluster": "recorded", "user": "alice"}} for name in contexts],
    }
    path = folder / "kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return path
