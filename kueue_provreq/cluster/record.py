"""Recording a live cluster's trace (``kueue-provreq record --kubeconfig``): every Workload and
ProvisioningRequest as it changes, turned into trace records (:func:`kueue_provreq.trace.observe`)
and appended at once.

It lists both kinds, then watches them, one after the other for at most :data:`WATCH_SECONDS`
each: the API server queues the changes made meanwhile, so nothing between two watches is
missed, and a deleted object's last state (a failed request Kueue deleted before its next
attempt) arrives as its ``DELETED`` event.  A failed watch or list (an API server restarting, a
timeout) is said on stderr and retried after :data:`RETRY_SECONDS`: a week's recording outlives
it.  Each pass appends a ``window`` record up to the time it reached, so a recording stopped at
any moment (Ctrl-C) says what time it covered, and one resumed on the same file covers the gap
as a new window.
"""

from __future__ import annotations

from collections.abc import Callable

from urllib3.exceptions import HTTPError

from kueue_provreq import trace
from kueue_provreq.api import constants as c
from kueue_provreq.cluster.client import ApiError, Client, ClusterError
from kueue_provreq.cluster.resources import RESOURCES, Resource

#: The longest one watch stays open before the other kind's turn.
WATCH_SECONDS = 1
#: How often a window record says how far the recording got.
WINDOW_EVERY = 60
#: How long to wait after a failed watch before listing again.
RETRY_SECONDS = 5

KINDS = (RESOURCES[c.WORKLOAD], RESOURCES[c.PROVISIONING_REQUEST])


class TraceRecorder:
    """Appends what it sees to ``writer``; :meth:`run` until a time or until interrupted."""

    def __init__(self, client: Client, writer: trace.Writer, namespace: str = "",
                 clock: Callable[[], float] = lambda: 0.0, log: Callable[[str], None] = lambda line: None,
                 sleep: Callable[[float], None] = lambda seconds: None) -> None:
        self.client, self.writer, self.namespace = client, writer, namespace
        self.clock, self.log, self.sleep = clock, log, sleep
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

    def _watch(self, res: Resource) -> None:
        for event in self.client.watch(res, self.versions[res.kind], self.namespace, WATCH_SECONDS):
            meta = event.object.get("metadata")
            version = meta.get("resourceVersion") if isinstance(meta, dict) else None
            self.versions[res.kind] = str(version or self.versions[res.kind])
            if event.type != "BOOKMARK":
                self._seen([event.object])

    def _relist(self, res: Resource) -> None:
        try:
            self._list(res)
        except (ApiError, ClusterError, HTTPError, OSError) as e:
            self.log(f"list of {res.resource_name} failed ({e}); trying again")

    def close(self) -> None:
        """Say how far the recording got (also on Ctrl-C: every record is already written)."""
        self.writer.add([trace.Window(self.start, max(self.reached, int(self.clock())))])

    def run(self, until: float | None = None) -> None:
        for res in KINDS:
            self._list(res)
        # from here on nothing is missed: what a caller (or a test) does after this line is seen
        self.log(f"listed {' and '.join(res.resource_name for res in KINDS)}; watching their changes")
        marked = self.clock()
        while until is None or self.clock() < until:
            for res in KINDS:
                try:
                    self._watch(res)
                except (ApiError, ClusterError, HTTPError, OSError) as e:
                    # a week-long recording outlives a restarting API server: say so, wait, list again
                    gone = isinstance(e, ApiError) and e.code == 410  # too old to watch from
                    if not gone:
                        self.log(f"watch of {res.resource_name} failed ({e}); listing again in {RETRY_SECONDS} s")
                        self.sleep(RETRY_SECONDS)
                    self._relist(res)
            self.reached = int(self.clock())
            if self.clock() - marked >= WINDOW_EVERY:
                self.writer.add([trace.Window(self.start, self.reached)])
                marked = self.clock()
