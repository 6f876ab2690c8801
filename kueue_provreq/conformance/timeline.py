"""The story of a run, for people (``kueue-provreq run``) and for tools (``--format jsonl``).

A :class:`Timeline` turns what a :class:`~kueue_provreq.conformance.runner.Run` reports into
flat records: steps, object changes, events, metric increments, and the changed workloads'
phase changes and admission-check state changes (which is what a reader is usually after), as
:class:`~kueue_provreq.changes.WorkloadStates` reads them off the transition records each
write carries (the same reading the simulation's loop makes).  Both formats render the same
records, so they never disagree.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, TextIO

from kueue_provreq.api.objects import Key, key_of
from kueue_provreq.api.workload import Workload
from kueue_provreq.changes import WorkloadChange, WorkloadStates
from kueue_provreq.conformance.runner import Observer, Outcome, one_line
from kueue_provreq.conformance.scenario import (
    Advance,
    Apply,
    Autoscaler,
    Delete,
    Expect,
    Name,
    Patch,
    Reconcile,
    Refused,
    Scenario,
    SetQuotaReservation,
    Settle,
    Step,
    format_time,
)
from kueue_provreq.engine import ALL_CONTROLLERS
from kueue_provreq.manifests import dump_object, format_duration
from kueue_provreq.world import Create, Effect, Event, MetricInc, Update, World
from kueue_provreq.world import Delete as DeleteEffect

Record = dict[str, Any]
NONE = "(none)"
"""The phase or check state of something that does not exist (yet, or any more)."""

_VERBS = {Create: "created", Update: "updated", DeleteEffect: "deleted"}


class Timeline(Observer):
    """Collects a run into records and hands each one to ``emit`` as it happens."""

    def __init__(self, emit: Callable[[Record], None], with_objects: bool = False) -> None:
        self.emit = emit
        self.with_objects = with_objects
        self.step = 0
        self.expectations = [0, 0]  # met, failed
        self.known: set[Key] = set()
        self.states = WorkloadStates()

    def on_start(self, scenario: Scenario, world: World) -> None:
        self.known = {key_of(o) for o in world}
        self.states = WorkloadStates(world)
        self.emit({"record": "scenario", "name": scenario.name, "source": scenario.source,
                   "clock": format_time(scenario.clock), "objects": len(self.known)})

    def on_step(self, number: int, step: Step, clock: float) -> None:
        self.step = number
        self.emit({"record": "step", "step": number, "kind": step.KIND, "clock": format_time(clock),
                   "summary": summarize(step)})

    def on_effect(self, actor: str, effect: Effect, world: World) -> None:
        base = {"step": self.step, "actor": actor}
        if isinstance(effect, Event):
            self.emit({"record": "event", **base, "type": effect.type, "reason": effect.reason,
                       "message": effect.message,
                       "object": {"kind": effect.kind, "namespace": effect.namespace, "name": effect.name}})
        elif isinstance(effect, MetricInc):
            self.emit({"record": "metric", **base, "name": effect.name, "labels": dict(effect.labels),
                       "value": effect.value})
        elif isinstance(effect, DeleteEffect):
            gone = [k for k in self.known if k not in world]
            self.known.difference_update(gone)
            requested = (effect.kind, effect.namespace, effect.name)
            for key in sorted(gone, key=lambda k: k != requested):
                self.emit({"record": "effect", **base, "actor": actor if key == requested else "garbage-collector",
                           "verb": "deleted", **_ref(key)})
                self._changed(key, self.states.deleted(key))
        else:
            obj = effect.obj
            key = key_of(obj)
            self.known.add(key)
            record: Record = {"record": "effect", **base, "verb": _VERBS[type(effect)], **_ref(key)}
            if self.with_objects:
                record["object"] = dump_object(obj)
            self.emit(record)
            if isinstance(obj, Workload):
                self._changed(key, self.states.written(obj, effect.transitions if isinstance(effect, Update) else ()))

    def _changed(self, key: Key, change: WorkloadChange | None) -> None:
        """Phase and check-state records, each with the trigger the write says decided it
        (``None`` for a write from outside the model that names none)."""
        if change is None:
            return
        where = {"step": self.step, "namespace": key[1], "name": key[2]}
        if change.moved:
            self.emit({"record": "phase", **where, "from": change.before or NONE, "to": change.after or NONE,
                       "trigger": change.trigger})
        for check in change.checks:
            self.emit({"record": "check", **where, "check": check.check, "from": check.before or NONE,
                       "to": check.after or NONE, "trigger": check.trigger})

    def on_expect(self, number: int, failure: str | None) -> None:
        self.expectations[failure is not None] += 1
        self.emit({"record": "expect", "step": number, "ok": failure is None, "failure": failure})

    def on_finish(self, outcome: Outcome) -> None:
        met, failed = self.expectations
        self.emit({"record": "result", "name": outcome.name, "passed": outcome.passed,
                   "failure": outcome.failure, "expectations_met": met, "expectations_failed": failed})


def _ref(key: Key) -> Record:
    return {"kind": key[0], "namespace": key[1], "name": key[2]}


def summarize(step: Step) -> str:
    """A step in a few words, for the timeline's step headers."""
    match step:
        case Settle():
            if step.controllers == ALL_CONTROLLERS:
                return "settle"
            return f"settle {', '.join(step.controllers)}"
        case Reconcile():
            target = "" if step.key[0] == "scheduler" else f" {_name(step.key)}"
            return f"reconcile {step.controller}{target}"
        case Advance():
            return f"advance {format_duration(step.seconds)}"
        case Autoscaler():
            where = f"{step.namespace}/{step.request}" if step.namespace else step.request
            return f"autoscaler sets {step.condition}={step.status} on ProvisioningRequest {where}"
        case SetQuotaReservation():
            what = "unset" if step.admission is None else f"set in ClusterQueue {step.admission.cluster_queue}"
            return f"quota reservation of Workload {step.namespace}/{step.name} {what}"
        case Apply():
            return f"apply {step.obj.KIND} {_name(key_of(step.obj))}"
        case Delete():
            return f"delete {step.kind} {_name((step.kind, step.namespace, _written(step.name)))}"
        case Patch():
            return f"patch {step.kind} {_name((step.kind, step.namespace, _written(step.name)))}"
        case Refused():
            if step.patch is not None:
                return f"patch {step.patch.kind} {_name((step.patch.kind, step.patch.namespace, _written(step.patch.name)))}" \
                    " (to be refused)"
            return f"apply {(step.apply or {}).get('kind')} (to be refused)"
        case Expect():
            return "expect"


def _name(key: Key) -> str:
    return f"{key[1]}/{key[2]}" if key[1] else key[2]


def _written(name: Name) -> str:
    """A step's name as written (a job's Workload by its job)."""
    return name if isinstance(name, str) else f"(the Workload of {name.kind} {name.namespace}/{name.name})"


# --- renderers ----------------------------------------------------------------------------


def jsonl_writer(out: TextIO) -> Callable[[Record], None]:
    """One JSON object per line, flushed as it comes (a trace can be followed live)."""
    def emit(record: Record) -> None:
        out.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
        out.flush()
    return emit


def text_writer(out: TextIO) -> Callable[[Record], None]:
    """The readable timeline: a header per step, its effects indented beneath."""
    def emit(record: Record) -> None:
        out.write(render(record) + "\n")
    return emit


def render(record: Mapping[str, Any]) -> str:
    kind = record["record"]
    if kind == "scenario":
        return f"scenario: {record['name']} ({record['source']}), {record['objects']} objects at {record['clock']}"
    if kind == "step":
        return f"[{record['clock']}] step {record['step']}: {record['summary']}"
    if kind == "effect":
        return f"    {record['actor']}: {record['verb']} {record['kind']} {_name(_key(record))}"
    if kind == "event":
        o = record["object"]
        return (f"    {record['actor']}: event {record['type']} {record['reason']} on {o['kind']} "
                f"{_name((o['kind'], o['namespace'], o['name']))}: {record['message']}")
    if kind == "metric":
        labels = ",".join(f"{k}={v}" for k, v in record["labels"].items())
        return f"    {record['actor']}: metric {record['name']}{{{labels}}} +{record['value']:g}"
    if kind == "phase":
        return (f"      Workload {record['namespace']}/{record['name']}: {record['from']} -> {record['to']}"
                f"{_by(record)}")
    if kind == "check":
        return (f"      Workload {record['namespace']}/{record['name']}: check {record['check']} "
                f"{record['from']} -> {record['to']}{_by(record)}")
    if kind == "expect":
        return "    expectations met" if record["ok"] else f"    expectation failed: {one_line(record['failure'])}"
    if kind == "result":
        verdict = Outcome(record["name"], "", record["failure"]).line()
        return (f"{record['expectations_met']} expectations met, {record['expectations_failed']} failed\n"
                f"{verdict}")
    raise ValueError(f"unknown timeline record {kind!r}")


def _by(record: Mapping[str, Any]) -> str:
    trigger = record.get("trigger")
    return f" ({trigger})" if trigger else ""


def _key(record: Mapping[str, Any]) -> Key:
    return record["kind"], record["namespace"], record["name"]


__all__ = ["Timeline", "jsonl_writer", "render", "summarize", "text_writer"]
