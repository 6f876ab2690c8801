"""A stand-in API server on the loopback interface that replays recorded answers.

The cluster port is tested at the HTTP boundary: the real Kubernetes client sends real HTTP
requests to ``127.0.0.1:<port>`` and gets back the bytes an API server sent (status, headers,
JSON body; for a watch, a chunked stream of JSON lines).  Each exchange is matched on method,
path and query; when several match one request they answer in turn and the last one repeats.
Every request is kept, with its headers and body, for the test to check; one that matches no
exchange gets a 404 ``Status`` and is listed in ``unexpected``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
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


class RecordedAPIServer:
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

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> RecordedAPIServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)

    def kubeconfig(self, folder: Path, contexts: tuple[str, ...] = ("kind-ml",)) -> Path:
        """A kubeconfig whose contexts all point at this server (the first is current)."""
        config = {
            "apiVersion": "v1", "kind": "Config", "current-context": contexts[0], "preferences": {},
            "clusters": [{"name": "recorded", "cluster": {"server": self.url}}],
            "users": [{"name": "alice", "user": {"token": "recorded-token"}}],
            "contexts": [{"name": name, "context": {"cluster": "recorded", "user": "alice"}} for name in contexts],
        }
        path = folder / "kubeconfig"
        path.write_text(yaml.safe_dump(config))
        return path

    def calls(self, method: str | None = None) -> Iterator[Request]:
        return (r for r in self.requests if method is None or r.method == method)
