"""Recording a live cluster's trace (``kueue-provreq record --kubeconfig``): every Workload and
ProvisioningRequest as it changes, turned into trace records (:func:`kueue_provreq.trace.observe`)
and appended at once.

It lists both kinds, then watches them, one after the other for at most :data:`WATCH_SECONDS`
each: the API server queues the changes made meanwhile, so nothing between two watches is
missed, and a deleted object's last state (a failed request Kueue deleted before its next
attempt) arrives as its ``DELETED`` event.  Each pass appends a ``window`` record up to the
time it reached, so a recording stopped at any moment (Ctrl-C) says what time it covered, and
one resumed on the same file covers the gap as a new window.
"""

from __future__ import annotations

from collections.abc import Callable

from kueue_provreq import trace
from kueue_provreq.api import constants as c
from kueue_provreq.cluster.client import ApiError, Client
from kueue_provreq.cluster.resources import RESOURCES, Resource

#: The longest one watch stays open before the other kind's turn.
WATCH_SECONDS = 1
#: How often a window record says how far the recording got.
WINDOW_EVERY = 60

KINDS = (RESOURCES[c.WORKLOAD], RESOURCES[c.PROVISIONING_REQUEST])


class Recorder:
    """Appends what it sees to ``writer``; :meth:`run` until a time or until interrupted."""

    def __init__(self, client: Client, writer: trace.Writer, namespace: str = "",
                 clock: Callable[[], float] = lambda: 0.0, log: Callable[[str], None] = lambda line: None) -> None:
        self.client, self.writer, self.namespace = client, writer, namespace
        self.clock, self.log = clock, log
        self.versions: dict[str, str] = {}
        self.start = int(clock())
        self.reached = self.start

    def _list(self, res: Resource) -> None:
        listing = self.client.list(res, self.namespace)
        self.versions[res.kind] = listing.resource_version
        self._seen(list(listing.items))

    def _seen(self, documents: list[dict[str, object]]) -> None:
        added = self.writer.add(trace.observe(documents, int(self.clock())))
        if added:
            self.log(f"{added} new record(s), {self.writer.written} this session")

    def close(self) -> None:
        """Say how far the recording got (also on Ctrl-C: every record is already written)."""
        self.writer.add([trace.Window(self.start, max(self.reached, int(self.clock())))])

    def run(self, until: float | None = None) -> None:
        for res in KINDS:
            self._list(res)
        marked = self.clock()
        while until is None or self.clock() < until:
            for res in KINDS:
                try:
                    for event in self.client.watch(res, self.versions[res.kind], self.namespace, WATCH_SECONDS):
                        meta = event.object.get("metadata")
                        version = meta.get("resourceVersion") if isinstance(meta, dict) else None
                        self.versions[res.kind] = str(version or self.versions[res.kind])
                        if event.type != "BOOKMARK":
                            self._seen([event.object])
                except ApiError as e:
                    if e.code != 410:  # 410 Gone: too old to watch from; list again
                        raise
                    self._list(res)
            self.reached = int(self.clock())
            if self.clock() - marked >= WINDOW_EVERY:
                self.writer.add([trace.Window(self.start, self.reached)])
                marked = self.clock()
