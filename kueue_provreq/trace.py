"""The trace: what a cluster did, as JSON lines (``docs/trace-format.rst`` documents it).

``kueue-provreq record`` writes a trace from dumps or a live cluster, ``calibrate`` fits the
Cluster Autoscaler model to it and a simulation file replays its arrivals and running times.
The recorder (the cluster edge, the command line) and the readers (the simulation edge) never
import each other, so the format lives here, below both: the records, reading and appending
them, and :func:`observe`, which turns the objects of one look at a cluster (a dump, or one
listing of a live one) into records.

A trace only grows: a record is appended once (:meth:`Record.key` says when two are the same
fact), so recording again over the same dumps, or resuming a live recording, adds only what is
new.  Times are RFC 3339, as the API server writes them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, TextIO

import attrs

from kueue_provreq.api import constants as c
from kueue_provreq.manifests.codec import format_time, parse_time
from kueue_provreq.manifests.errors import ManifestError
from kueue_provreq.manifests.yamlio import read_text

#: The record types, in the order a workload's life writes them.
WINDOW, ARRIVAL, ATTEMPT, FINISH = "window", "arrival", "attempt", "finish"
#: What an attempt (one ProvisioningRequest) ended with, as Cluster Autoscaler answered it.
PROVISIONED = "Provisioned"
FAILED = "Failed"
"""``Failed=True``: the attempt is over (``CapacityIsNotFound``, or ``Expired``: see ``reason``)."""
NOT_PROVISIONED = "NotProvisioned"
"""``Provisioned=False``: no capacity this try; the request stays and CA tries again itself."""
PENDING = "Pending"
"""No answer yet when it was last seen: the delay is only known to be longer (censored)."""
OUTCOMES = (PROVISIONED, FAILED, NOT_PROVISIONED, PENDING)
#: How a workload left: it finished, or was deactivated (``spec.active: false``).
FINISHED, DEACTIVATED = "Finished", "Deactivated"


@attrs.frozen
class Window:
    """The time the recording looked at the cluster: records outside it were not seen."""

    start: int
    end: int

    def key(self) -> tuple[Any, ...]:
        return (WINDOW, self.start, self.end)

    def to_json(self) -> dict[str, Any]:
        return {"type": WINDOW, "from": format_time(self.start), "to": format_time(self.end)}


@attrs.frozen
class Arrival:
    """A Workload was created: what it asked for, and, where already known, how long it ran
    (from ``PodsReady``, else ``Admitted``, to ``Finished``)."""

    time: int
    namespace: str
    name: str
    queue: str
    priority: int
    podsets: tuple[Mapping[str, Any], ...]
    running_seconds: int | None = None

    def key(self) -> tuple[Any, ...]:
        return (ARRIVAL, self.namespace, self.name, self.time)

    def to_json(self) -> dict[str, Any]:
        out = {"type": ARRIVAL, "time": format_time(self.time), "namespace": self.namespace, "name": self.name,
               "queue": self.queue, "priority": self.priority, "podsets": list(self.podsets)}
        return out if self.running_seconds is None else {**out, "runningSeconds": self.running_seconds}


@attrs.frozen
class Attempt:
    """A ProvisioningRequest (one attempt of a workload's provisioning check) and its first
    answer: created at ``time``, answered ``outcome`` at ``outcome_time``."""

    time: int
    namespace: str
    name: str
    workload: str
    provisioning_class: str
    outcome: str
    outcome_time: int
    reason: str = ""

    def key(self) -> tuple[Any, ...]:
        # a pending attempt is superseded by its answer, never the other way round
        return (ATTEMPT, self.namespace, self.name, self.time, self.outcome)

    def to_json(self) -> dict[str, Any]:
        return {"type": ATTEMPT, "time": format_time(self.time), "namespace": self.namespace, "name": self.name,
                "workload": self.workload, "class": self.provisioning_class, "outcome": self.outcome,
                "outcomeTime": format_time(self.outcome_time), "reason": self.reason}


@attrs.frozen
class Finish:
    """A workload finished or was deactivated at ``time``; ``running_seconds`` as for an arrival."""

    time: int
    namespace: str
    name: str
    outcome: str
    running_seconds: int | None = None

    def key(self) -> tuple[Any, ...]:
        return (FINISH, self.namespace, self.name)

    def to_json(self) -> dict[str, Any]:
        out = {"type": FINISH, "time": format_time(self.time), "namespace": self.namespace, "name": self.name,
               "outcome": self.outcome}
        return out if self.running_seconds is None else {**out, "runningSeconds": self.running_seconds}


Record = Window | Arrival | Attempt | Finish


@attrs.frozen
class Trace:
    """A trace as read: every record, in file order."""

    source: str
    records: tuple[Record, ...]

    def of(self, kind: type[Any]) -> list[Any]:
        return [r for r in self.records if isinstance(r, kind)]

    @property
    def window(self) -> Window | None:
        """The span every window and record covers together (None: an empty trace)."""
        times = [t for r in self.records for t in ((r.start, r.end) if isinstance(r, Window) else (r.time,))]
        times += [r.outcome_time for r in self.records if isinstance(r, Attempt)]
        return Window(min(times), max(times)) if times else None


# --- reading -------------------------------------------------------------------------------


def read(path: str | Path) -> Trace:
    """Every record of a trace file; a bad line is one error naming the file, the line and the field."""
    source = str(path)
    records = []
    for number, line in enumerate(read_text(path).splitlines(), 1):
        if line.strip():
            records.append(parse_line(line, f"{source}:{number}"))
    return Trace(source, tuple(records))


def parse_line(line: str, where: str) -> Record:
    try:
        data = json.loads(line)
    except json.JSONDecodeError as e:
        raise ManifestError(f"not JSON: {e.msg}", source=where) from None
    if not isinstance(data, dict):
        raise ManifestError("expected a JSON object", source=where)
    fields = _Fields(data, where)
    kind = fields.text("type")
    if kind == WINDOW:
        return Window(fields.time("from"), fields.time("to"))
    if kind == ARRIVAL:
        at, namespace, name, queue = fields.time("time"), fields.text("namespace"), fields.text("name"), fields.text("queue")
        podsets = data.get("podsets")
        if not isinstance(podsets, list) or not all(isinstance(p, dict) for p in podsets):
            raise ManifestError("expected a list of podSets", path="podsets", source=where)
        return Arrival(at, namespace, name, queue, fields.integer("priority", 0), tuple(podsets),
                       fields.seconds("runningSeconds"))
    if kind == ATTEMPT:
        outcome = fields.text("outcome")
        if outcome not in OUTCOMES:
            raise ManifestError(f"expected one of {', '.join(OUTCOMES)}, got {outcome!r}", path="outcome",
                                source=where)
        return Attempt(fields.time("time"), fields.text("namespace"), fields.text("name"), fields.text("workload"),
                       fields.text("class"), outcome, fields.time("outcomeTime"), str(data.get("reason") or ""))
    if kind == FINISH:
        outcome = fields.text("outcome")
        if outcome not in (FINISHED, DEACTIVATED):
            raise ManifestError(f"expected {FINISHED} or {DEACTIVATED}, got {outcome!r}", path="outcome",
                                source=where)
        return Finish(fields.time("time"), fields.text("namespace"), fields.text("name"), outcome,
                      fields.seconds("runningSeconds"))
    raise ManifestError(f"unknown record type {kind!r} (expected {WINDOW}, {ARRIVAL}, {ATTEMPT} or {FINISH})",
                        path="type", source=where)


@attrs.frozen
class _Fields:
    data: Mapping[str, Any]
    where: str

    def text(self, name: str) -> str:
        value = self.data.get(name)
        if not isinstance(value, str):
            raise ManifestError("required string" if value is None else f"expected a string, got {value!r}",
                                path=name, source=self.where)
        return value

    def time(self, name: str) -> int:
        try:
            return parse_time(self.text(name))
        except ManifestError as e:
            raise ManifestError(e.reason, path=name, source=self.where) from None

    def integer(self, name: str, default: int) -> int:
        value = self.data.get(name, default)
        if isinstance(value, bool) or not isinstance(value, int):
            raise ManifestError(f"expected an integer, got {value!r}", path=name, source=self.where)
        return value

    def seconds(self, name: str) -> int | None:
        value = self.data.get(name)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ManifestError(f"expected whole seconds (0 or more), got {value!r}", path=name, source=self.where)
        return value


# --- writing -------------------------------------------------------------------------------


class Writer:
    """Appends records not yet in the trace, one line each, flushed at once: a recording
    stopped at any moment keeps every line written, and one resumed skips what it holds."""

    def __init__(self, stream: TextIO, known: Iterable[Record] = ()) -> None:
        self.stream = stream
        self.seen: set[tuple[Any, ...]] = {r.key() for r in known}
        self.written = 0

    def add(self, records: Iterable[Record]) -> int:
        """Append the new ones; how many were new."""
        lines = []
        for record in records:
            key = record.key()
            if key not in self.seen:
                self.seen.add(key)
                lines.append(json.dumps(record.to_json(), separators=(",", ":")) + "\n")
        if lines:
            self.stream.write("".join(lines))
            self.stream.flush()
            self.written += len(lines)
        return len(lines)


def dumps(records: Iterable[Record]) -> str:
    """Records as the lines of a trace file."""
    return "".join(json.dumps(r.to_json(), separators=(",", ":")) + "\n" for r in records)


# --- what one look at a cluster shows ------------------------------------------------------


def observe(documents: Iterable[Mapping[str, Any]], now: int) -> list[Record]:
    """The records a look at the cluster at ``now`` shows: every Workload's arrival (and finish),
    every ProvisioningRequest's attempt with its first answer (``Pending`` if none yet).
    ``documents`` are the objects as the API server sends them (Lists are opened); other
    kinds are passed over."""
    out: list[Record] = []
    for doc in _items(documents):
        kind = doc.get("kind")
        if kind == c.WORKLOAD:
            out += _workload(doc)
        elif kind == c.PROVISIONING_REQUEST:
            attempt = _attempt(doc, now)
            if attempt is not None:
                out.append(attempt)
    return out


def newest_time(documents: Iterable[Mapping[str, Any]]) -> int | None:
    """The newest time a dump records (a creation or a condition's transition): when nothing
    says when a dump was taken, it was taken no earlier than that."""
    times = []
    for doc in _items(documents):
        meta = doc.get("metadata") or {}
        times.append(_time(meta.get("creationTimestamp")))
        times += [_time(cd.get("lastTransitionTime")) for cd in _conditions(doc)]
    found = [t for t in times if t is not None]
    return max(found) if found else None


def _items(documents: Iterable[Mapping[str, Any]]) -> Iterator[Mapping[str, Any]]:
    for doc in documents:
        listed = doc.get("items")
        if isinstance(listed, list):
            yield from (item for item in listed if isinstance(item, Mapping))
        else:
            yield doc


def _time(value: Any) -> int | None:
    if not isinstance(value, str):
        return None
    try:
        return parse_time(value)
    except ManifestError:
        return None


def _conditions(doc: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    found = ((doc.get("status") or {}).get("conditions")) or []
    return [cd for cd in found if isinstance(cd, Mapping)]


def _true_since(doc: Mapping[str, Any], type_: str) -> int | None:
    for cd in _conditions(doc):
        if cd.get("type") == type_ and cd.get("status") == c.TRUE:
            return _time(cd.get("lastTransitionTime"))
    return None


def _workload(doc: Mapping[str, Any]) -> list[Record]:
    meta = doc.get("metadata") or {}
    spec = doc.get("spec") or {}
    created = _time(meta.get("creationTimestamp"))
    if created is None:
        return []
    ns, name = str(meta.get("namespace") or c.DEFAULT_NAMESPACE), str(meta.get("name") or "")
    finished = _true_since(doc, c.WORKLOAD_FINISHED)
    started = _true_since(doc, c.WORKLOAD_PODS_READY) or _true_since(doc, c.WORKLOAD_ADMITTED)
    running = finished - started if finished is not None and started is not None and finished >= started else None
    priority = spec.get("priority")
    out: list[Record] = [Arrival(created, ns, name, str(spec.get("queueName") or ""),
                                 priority if isinstance(priority, int) else 0,
                                 tuple(p for p in spec.get("podSets") or () if isinstance(p, Mapping)), running)]
    if finished is not None:
        out.append(Finish(finished, ns, name, FINISHED, running))
    elif spec.get("active") is False:
        evicted = _true_since(doc, c.WORKLOAD_EVICTED)
        out.append(Finish(evicted if evicted is not None else created, ns, name, DEACTIVATED))
    return out


def _attempt(doc: Mapping[str, Any], now: int) -> Attempt | None:
    meta = doc.get("metadata") or {}
    created = _time(meta.get("creationTimestamp"))
    if created is None:
        return None
    owner = next((str(o.get("name")) for o in meta.get("ownerReferences") or ()
                  if isinstance(o, Mapping) and o.get("kind") == c.WORKLOAD), "")
    outcome, at, reason = PENDING, now, ""
    for cd in _conditions(doc):
        when = _time(cd.get("lastTransitionTime"))
        answer = {(c.PR_PROVISIONED, c.TRUE): PROVISIONED, (c.PR_FAILED, c.TRUE): FAILED,
                  (c.PR_PROVISIONED, c.FALSE): NOT_PROVISIONED}.get((str(cd.get("type")), str(cd.get("status"))))
        if answer is None or when is None or cd.get("reason") == c.CA_REASON_ACCEPTED:
            continue
        # the first answer: a later Provisioned after Provisioned=False replaces the condition,
        # so the earliest transition seen is what CA answered first
        if outcome == PENDING or when < at:
            outcome, at, reason = answer, when, str(cd.get("reason") or "")
    spec = doc.get("spec") or {}
    return Attempt(created, str(meta.get("namespace") or c.DEFAULT_NAMESPACE), str(meta.get("name") or ""), owner,
                   str(spec.get("provisioningClassName") or ""), outcome, at, reason)
