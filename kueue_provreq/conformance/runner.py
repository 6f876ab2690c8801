"""Running scenarios: build the world, apply each step, judge each expectation.

One :class:`Run` per scenario.  It drives the library's own :class:`~kueue_provreq.engine.Manager`
(the same loop every other driver uses) and writes the test's own changes (``apply``,
``patch``, ``autoscaler`` ...) to the world directly, as a user or Cluster Autoscaler would.
What happens is reported to an :class:`Observer`, which is how ``kueue-provreq run`` draws
its timeline; ``conform`` needs only the :class:`Outcome`.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import attrs

from kueue_provreq.api import constants as c
from kueue_provreq.api import naming
from kueue_provreq.api.config import Configuration
from kueue_provreq.api.frozen import FrozenMap
from kueue_provreq.api.meta import Condition, Time, set_condition
from kueue_provreq.api.objects import (
    KINDS,
    Key,
    KubeObject,
    already_exists,
    key_of,
    not_found,
)
from kueue_provreq.api.provisioning import ProvisioningRequest
from kueue_provreq.api.workload import Admission, Workload
from kueue_provreq.conformance.match import Matcher, show
from kueue_provreq.conformance.patch import patch_document
from kueue_provreq.conformance.scenario import (
    DEFAULT_NAMESPACE,
    Advance,
    Apply,
    Autoscaler,
    Delete,
    Expect,
    Patch,
    Reconcile,
    Scenario,
    ScenarioError,
    SetQuotaReservation,
    Settle,
    Step,
    format_time,
    parse_scenario,
    scenario_name,
    step_number,
)
from kueue_provreq.controllers import job
from kueue_provreq.controllers.context import Context
from kueue_provreq.controllers.queues import queue_gauges
from kueue_provreq.controllers.workload_status import (
    set_quota_reservation,
    unset_quota_reservation,
)
from kueue_provreq.engine import Manager, Recorder, SettleError
from kueue_provreq.errors import KueueProvreqError
from kueue_provreq.machines import (
    WORKLOAD_MACHINE,
    Guard,
    IllegalTransition,
    Transition,
    WorkloadTrigger,
)
from kueue_provreq.machines.phases import held_back, workload_phase
from kueue_provreq.manifests import (
    ManifestError,
    ManifestErrors,
    dump_object,
    format_duration,
    load_object,
    load_yaml_documents,
)
from kueue_provreq.world import Create, Effect, Event, MetricInc, Update, World
from kueue_provreq.world import Delete as DeleteEffect


class NoSuchPath(KueueProvreqError, FileNotFoundError):
    """A scenario file or folder named that does not exist."""


class StepFailed(KueueProvreqError):
    """A step whose outcome differs from what the scenario says."""


@attrs.frozen
class Outcome:
    name: str
    source: str
    failure: str | None = None
    """The first difference (``step N: ...``), or None when the scenario passed."""
    errors: tuple[ManifestError, ...] = ()
    """For a scenario that cannot be read: every problem, each naming its file, line and field."""

    @property
    def passed(self) -> bool:
        return self.failure is None

    def line(self) -> str:
        """The contract's report line: ``PASS name`` or ``FAIL name: <first difference>``."""
        if self.failure is None:
            return f"PASS {self.name}"
        return f"FAIL {self.name}: {one_line(self.failure)}"


class Observer:
    """What a run reports as it goes.  Every hook does nothing here; a timeline overrides them."""

    def on_start(self, scenario: Scenario, world: World) -> None:
        """The world is built, before the first step."""

    def on_step(self, number: int, step: Step, clock: float) -> None:
        """Step ``number`` (1-based) is about to run at ``clock`` (epoch seconds)."""

    def on_effect(self, actor: str, effect: Effect, world: World) -> None:
        """``actor`` (a controller or a step kind) applied ``effect``; ``world`` is after it."""

    def on_expect(self, number: int, failure: str | None) -> None:
        """An ``expect`` step was judged."""

    def on_finish(self, outcome: Outcome) -> None:
        """The run is over."""


class Run:
    """One scenario run.  ``keep_going`` carries on past failed expectations (a timeline
    wants the whole story); ``debug`` lets unexpected exceptions propagate with their traceback."""

    def __init__(self, scenario: Scenario, observer: Observer | None = None, *, keep_going: bool = False,
                 debug: bool = False) -> None:
        self.scenario = scenario
        self.observer = observer or Observer()
        self.keep_going = keep_going
        self.debug = debug
        self.clock = scenario.clock
        self.world = World(faults=scenario.faults)
        self.manager = Manager(self.world, Recorder(self._record))
        self.matcher = Matcher(scenario.clock)
        self.events: list[Event] = []
        self.event_cursor = 0
        self.counters: dict[tuple[str, FrozenMap[str, str]], float] = defaultdict(float)

    @property
    def ctx(self) -> Context:
        return Context(now=self.now, config=self.scenario.config)

    @property
    def now(self) -> Time:
        return Time(math.floor(self.clock))

    def run(self) -> Outcome:
        outcome = Outcome(self.scenario.name, self.scenario.source, self._run())
        self.observer.on_finish(outcome)
        return outcome

    def _run(self) -> str | None:
        try:
            self._build_world()
        except (ScenarioError, StepFailed, ManifestError) as e:
            return str(e)
        self.observer.on_start(self.scenario, self.world)
        first: str | None = None
        for number, step in enumerate(self.scenario.steps, 1):
            self.observer.on_step(number, step, self.clock)
            failure = self.run_step(step)
            if isinstance(step, Expect):
                self.observer.on_expect(number, failure)
            if failure is None:
                continue
            first = first or f"step {number}: {failure}"
            if not (self.keep_going and isinstance(step, Expect)):
                break
        return first

    def run_step(self, step: Step) -> str | None:
        """Run one step; returns None, or the failure (every way it can go wrong is one)."""
        try:
            self._step(step)
        except (StepFailed, ScenarioError, SettleError, IllegalTransition, ManifestError) as e:
            return str(e)
        except Exception as e:
            if self.debug:
                raise
            return f"internal error: {type(e).__name__}: {e}"
        return None

    # --- the world ---------------------------------------------------------------------
    def _created(self, obj: KubeObject) -> KubeObject:
        """``obj`` as the API server stores it on create, Kueue's job webhook included."""
        return self.world.created(job.defaulted(self.world, _scoped(obj), self.scenario.config), self.now)

    def _build_world(self) -> None:
        for i, obj in enumerate(self.scenario.objects):
            obj = self._created(obj)
            if key_of(obj) in self.world:
                kind, _, name = key_of(obj)
                raise ScenarioError(f"objects[{i}]: {already_exists(kind, name)}")
            self.world.put(obj)

    def _record(self, actor: str, key: Key, effect: Effect) -> None:
        if isinstance(effect, Event):
            self.events.append(effect)
        elif isinstance(effect, MetricInc):
            self.counters[(effect.name, effect.labels)] += effect.value
        self.observer.on_effect(actor, effect, self.world)

    def _write(self, actor: str, effect: Create | Update | DeleteEffect) -> list[Key]:
        """A change made by the test itself (not a controller): applied as given, unverified."""
        keys = self.world.apply(effect)
        self._record(actor, keys[0] if keys else ("", "", ""), effect)
        return keys

    def _get(self, kind: str, namespace: str, name: str) -> KubeObject:
        obj = self.world.get(kind, namespace, name)
        if obj is None:
            raise StepFailed(not_found(kind, name))
        return obj

    # --- steps -------------------------------------------------------------------------
    def _step(self, step: Step) -> None:
        match step:
            case Settle():
                self.manager.settle(self.ctx, step.controllers)
            case Reconcile():
                self._reconcile(step)
            case Advance():
                self.clock += step.seconds
            case Autoscaler():
                self._autoscaler(step)
            case SetQuotaReservation():
                self._set_quota_reservation(step)
            case Apply():
                self._apply(step)
            case Delete():
                self._get(step.kind, step.namespace, step.name)
                self._write(step.KIND, DeleteEffect(step.kind, step.namespace, step.name))
            case Patch():
                self._patch(step)
            case Expect():
                self._expect(step)

    def _reconcile(self, step: Reconcile) -> None:
        result, _ = self.manager.reconcile(step.controller, step.key, self.ctx)
        if step.expect_error is not None:
            if result.error is None:
                raise StepFailed(f"expected an error containing {step.expect_error!r}, got none")
            if step.expect_error not in result.error:
                raise StepFailed(f"expected an error containing {step.expect_error!r}, got {result.error!r}")
        elif result.error is not None:
            raise StepFailed(f"{step.controller} reconcile failed: {result.error}")
        if step.expect_requeue_after is not None:
            got = result.requeue_after or 0.0
            if abs(got - step.expect_requeue_after) > 1e-9:
                want = format_duration(step.expect_requeue_after) if step.expect_requeue_after else "none"
                raise StepFailed(f"expected requeueAfter {want}, got "
                                 f"{format_duration(got) if got else 'none'}")

    def _autoscaler(self, step: Autoscaler) -> None:
        pr = self._request(step)
        cond = Condition(step.condition, step.status, step.reason, step.message, None, pr.metadata.generation)
        conditions, _ = set_condition(pr.status.conditions, cond, self.now)
        status = attrs.evolve(pr.status, conditions=conditions)
        if step.details is not None:
            status = attrs.evolve(status, provisioning_class_details=FrozenMap(step.details))
        new = attrs.evolve(pr, status=status)
        if new != pr:
            self._write(step.KIND, Update(new))

    def _request(self, step: Autoscaler) -> ProvisioningRequest:
        """The request an autoscaler step names: ``$latest`` is the newest one (by creation
        time, then attempt number) of the scenario's only workload; without a namespace,
        the one namespace that holds a request of that name."""
        if step.request == "$latest":
            workloads = self.world.objects(c.WORKLOAD)
            if len(workloads) != 1:
                raise StepFailed(f"$latest needs exactly one Workload, the world has {len(workloads)}")
            wl = workloads[0].metadata
            owned = [o for o in self.world.owned_by_name(c.PROVISIONING_REQUEST, wl.namespace, wl.name)
                     if isinstance(o, ProvisioningRequest)
                     and any(r.kind == c.WORKLOAD for r in o.metadata.owner_references)]
            if not owned:
                raise StepFailed(f"$latest: Workload {wl.namespace}/{wl.name} has no ProvisioningRequest")
            only = workloads[0]
            checks = [s.name for s in only.status.admission_checks] if isinstance(only, Workload) else []
            return max(owned, key=lambda p: (p.metadata.creation_timestamp or 0, _attempt(p, wl.name, checks),
                                             p.metadata.name))
        if step.namespace is not None:
            pr = self._get(c.PROVISIONING_REQUEST, step.namespace, step.request)
        else:
            found = [p for p in self.world.objects(c.PROVISIONING_REQUEST) if p.metadata.name == step.request]
            if len(found) > 1:
                raise StepFailed(f"ProvisioningRequest {step.request!r} exists in several namespaces "
                                 f"({', '.join(sorted(p.metadata.namespace for p in found))}): give a namespace")
            if not found:
                raise StepFailed(not_found(c.PROVISIONING_REQUEST, step.request))
            pr = found[0]
        assert isinstance(pr, ProvisioningRequest)
        return pr

    def _set_quota_reservation(self, step: SetQuotaReservation) -> None:
        wl = self._get(c.WORKLOAD, step.namespace, step.name)
        assert isinstance(wl, Workload)
        update = quota_step(wl, step.admission, self.now, self.scenario.config)
        if update.obj != wl:
            self._write(step.KIND, update)

    def _apply(self, step: Apply) -> None:
        """``kubectl apply``: create, or replace labels, annotations, owners and spec (and the
        status only when the manifest has one); identity and history stay the server's."""
        obj = _scoped(step.obj)
        old = self.world.get(*key_of(obj))
        if old is None:
            self._write(step.KIND, Create(self._created(obj)))
            return
        if not step.has_status and hasattr(old, "status"):
            obj = attrs.evolve(cast(Any, obj), status=cast(Any, old).status)
        meta = obj.metadata
        generation = meta.generation if step.has_generation else _next_generation(old, obj)
        new = attrs.evolve(obj, metadata=attrs.evolve(
            meta, uid=meta.uid or old.metadata.uid, generation=generation,
            creation_timestamp=meta.creation_timestamp if meta.creation_timestamp is not None
            else old.metadata.creation_timestamp))
        if new != old:
            self._write(step.KIND, Update(new, user_changes(old, new)))

    def _patch(self, step: Patch) -> None:
        old = self._get(step.kind, step.namespace, step.name)
        doc = patch_document(dump_object(old, step.api_version), step.merge, format_time(self.clock))
        new = load_object(doc, semantics=self.scenario.config.semantics)
        if key_of(new) != key_of(old):
            raise StepFailed("a patch cannot change an object's kind, namespace or name")
        meta = step.merge.get("metadata")
        if not (isinstance(meta, Mapping) and meta.get("generation") is not None):
            new = attrs.evolve(new, metadata=attrs.evolve(new.metadata, generation=_next_generation(old, new)))
        if new != old:
            self._write(step.KIND, Update(new, user_changes(old, new)))

    # --- expectations ------------------------------------------------------------------
    def _expect(self, step: Expect) -> None:
        events = self.events[self.event_cursor:]
        self.event_cursor = len(self.events)
        for i, expected in enumerate(step.objects):
            kind, meta = expected["kind"], expected["metadata"]
            scoped = KINDS[kind].NAMESPACED
            ns = (meta.get("namespace") or DEFAULT_NAMESPACE) if scoped else ""
            ref = f"{kind} {ns}/{meta['name']}" if scoped else f"{kind} {meta['name']}"
            obj = self.world.get(kind, ns, meta["name"])
            if obj is None:
                raise StepFailed(f"objects[{i}]: {ref} not found")
            diff = self.matcher.match(expected, dump_object(obj, expected.get("apiVersion")))
            if diff is not None:
                raise StepFailed(f"objects[{i}]: {ref}: {diff}")
        for i, (kind, ns, name) in enumerate(step.absent):
            if (kind, ns, name) in self.world:
                raise StepFailed(f"absent[{i}]: {kind} {f'{ns}/' if ns else ''}{name} exists")
        for kind, n in step.count.items():
            have = len(self.world.objects(kind))
            if have != n:
                raise StepFailed(f"count.{kind}: expected {n}, got {have}")
        if step.events is not None:
            self._expect_events(step.events, events, step.exact_events)
        if step.metrics:
            series = self._series()
            for i, m in enumerate(step.metrics):
                total = sum(v for (name, labels), v in series
                            if name == m.name and all(labels.get(k) == want for k, want in m.labels.items()))
                if total != m.value:
                    labels = ",".join(f"{k}={v}" for k, v in m.labels.items())
                    raise StepFailed(f"metrics[{i}]: {m.name}{{{labels}}}: expected {m.value:g}, got {total:g}")

    def _expect_events(self, expected: Sequence[Mapping[str, Any]], emitted: list[Event], exact: bool) -> None:
        records = [event_record(e) for e in emitted]
        summary = "; ".join(describe_event(e) for e in emitted) or "none"
        if exact and len(records) != len(expected):
            raise StepFailed(f"events: expected exactly {len(expected)}, got {len(records)}: {summary}")
        position = 0
        for i, want in enumerate(expected):
            if exact:
                diff = self.matcher.match(want, records[i])
                if diff is not None:
                    raise StepFailed(f"events[{i}]: {diff} (emitted since the previous expect: {summary})")
                continue
            while position < len(records) and self.matcher.match(want, records[position]) is not None:
                position += 1
            if position == len(records):
                raise StepFailed(f"events[{i}]: no event matches {show(want)} in order "
                                 f"(emitted since the previous expect: {summary})")
            position += 1

    def _series(self) -> list[tuple[tuple[str, Mapping[str, str]], float]]:
        """Counters since the start, and the gauges as the queues stand now."""
        series: list[tuple[tuple[str, Mapping[str, str]], float]] = list(self.counters.items())
        series.extend(((g.name, g.labels), g.value) for g in queue_gauges(self.world, self.ctx))
        return series


# --- helpers ------------------------------------------------------------------------------


def event_record(e: Event) -> dict[str, Any]:
    """An emitted event in the scenario format's shape."""
    return {"type": e.type, "reason": e.reason, "message": e.message,
            "object": {"kind": e.kind, "namespace": e.namespace, "name": e.name}}


def describe_event(e: Event) -> str:
    where = f"{e.namespace}/{e.name}" if e.namespace else e.name
    return f"{e.type} {e.reason} {e.kind} {where} {e.message!r}"


def one_line(text: str) -> str:
    return " ".join(text.split("\n"))


def _scoped(obj: KubeObject) -> KubeObject:
    """A namespaced object given without a namespace lives in ``default``, as kubectl puts it."""
    if not obj.NAMESPACED or obj.metadata.namespace:
        return obj
    return attrs.evolve(obj, metadata=attrs.evolve(obj.metadata, namespace=DEFAULT_NAMESPACE))


def _spec(obj: KubeObject) -> tuple[Any, ...]:
    """Everything but metadata and status: what moves ``metadata.generation``."""
    return tuple(getattr(obj, f.name) for f in attrs.fields(type(obj)) if f.name not in ("metadata", "status"))


def _next_generation(old: KubeObject, new: KubeObject) -> int:
    generation = old.metadata.generation or 1
    return generation + 1 if _spec(new) != _spec(old) else generation


def quota_step(wl: Workload, admission: Admission | None, now: Time, config: Configuration) -> Update:
    """The ``setQuotaReservation`` step: Kueue's ``SetQuotaReservation`` test helper, or with no
    admission ``UnsetQuotaReservationWithCondition``, and the user trigger each stands for."""
    if admission is None:
        return Update(unset_quota_reservation(wl, c.REASON_EVICTED_BY_TEST, c.MSG_EVICTED_BY_TEST, now, config),
                      _user_fire(workload_phase(wl), WorkloadTrigger.UNSET_QUOTA,
                                 {Guard.DEACTIVATED: not wl.is_active, Guard.BACKOFF: held_back(wl)}))
    new = set_quota_reservation(wl, admission, now)
    return Update(new, _user_fire(workload_phase(wl), WorkloadTrigger.RESERVE_QUOTA,
                                  {Guard.ALL_CHECKS_READY: new.is_admitted(), Guard.PREEMPTIONS_PENDING: False}))


def _user_fire(phase: str, trigger: WorkloadTrigger, guards: Mapping[Guard, bool] | None = None
               ) -> tuple[Transition, ...]:
    """A scenario step standing for a user or one of Kueue's test helpers fires the workload
    machine as that actor would; a step the machine has no transition for (the format lets a
    scenario write anything) is an outside write that names no trigger."""
    try:
        return (WORKLOAD_MACHINE.transition(phase, trigger, guards),)
    except IllegalTransition:
        return ()


def user_changes(old: KubeObject, new: KubeObject) -> tuple[Transition, ...]:
    """The user actions an ``apply`` or ``patch`` of a Workload stands for: (de)activating it,
    and finishing it (its job completed)."""
    if not isinstance(old, Workload) or not isinstance(new, Workload):
        return ()
    fired: tuple[Transition, ...] = ()
    phase: str = workload_phase(old)
    if old.is_active != new.is_active:
        if new.is_active:
            fired = _user_fire(phase, WorkloadTrigger.REACTIVATE, {Guard.REQUEUED: not held_back(old)})
        else:
            fired = _user_fire(phase, WorkloadTrigger.DEACTIVATE)
        phase = fired[-1].target if fired else phase
    if new.is_finished() and not old.is_finished():
        fired += _user_fire(phase, WorkloadTrigger.FINISH)
    return fired


def _attempt(pr: ProvisioningRequest, workload: str, checks: list[str]) -> int:
    """The attempt number a request's name carries for one of the workload's checks (else 0)."""
    return next((n for check in checks if (n := naming.attempt_of(pr.metadata.name, workload, check)) is not None), 0)


# --- files -----------------------------------------------------------------------------------


def collect(paths: Iterable[str | Path]) -> list[Path]:
    """The scenario files named: files as given, folders searched recursively for ``*.yaml``.
    Raises :class:`NoSuchPath` (a ``FileNotFoundError``) for a path that does not exist."""
    files: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            files.extend(sorted(f for f in p.rglob("*.yaml") if f.is_file()))
        elif p.is_file():
            files.append(p)
        else:
            raise NoSuchPath(f"{p}: no such file or directory")
    return list(dict.fromkeys(files))


def load_scenarios(path: Path, text: str | None = None) -> list[Scenario | Outcome]:
    """Every scenario document of one file (``text`` when it was read already, as standard
    input is); a document that cannot be read is a failed Outcome (named by the file when it
    has no name)."""
    source = str(path)
    try:
        documents = load_yaml_documents(path.read_text(encoding="utf-8") if text is None else text, source)
    except (ManifestError, OSError, UnicodeDecodeError) as e:
        return [Outcome(source, source, f"cannot read scenario: {e}")]
    if not documents:
        return [Outcome(source, source, "the file holds no scenario")]
    out: list[Scenario | Outcome] = []
    for i, doc in enumerate(documents):
        name = scenario_name(doc) or (source if len(documents) == 1 else f"{source}#{i + 1}")
        if "kind" in doc and "apiVersion" in doc and "steps" not in doc:
            out.append(Outcome(name, source, f"{doc['kind']} {_manifest_name(doc)} is a manifest, not a "
                               "scenario (name, objects, steps): give manifests to explain -f or validate -f"))
            continue
        try:
            out.append(parse_scenario(doc, source))
        except ManifestErrors as e:
            out.append(Outcome(name, source, unreadable(e.errors), e.errors))
    return out


def unreadable(errors: Sequence[ManifestError]) -> str:
    """The failure of a scenario that cannot be read: every problem, ``step N:`` before those of
    a step, on one line."""
    def line(error: ManifestError) -> str:
        number = step_number(error)
        return str(error) if number is None else f"step {number}: {error}"

    return "; ".join(map(line, errors))


def _manifest_name(doc: Mapping[str, Any]) -> str:
    meta = doc.get("metadata")
    name = meta.get("name") or meta.get("generateName") if isinstance(meta, Mapping) else None
    return str(name or "(no name)")


def conform(files: Iterable[Path], *, debug: bool = False) -> Iterator[Outcome]:
    """Run every scenario of ``files`` (see :func:`collect`), yielding outcomes as they come.
    Names must be unique within a folder: a later scenario reusing one fails."""
    seen: dict[tuple[Path, str], str] = {}
    for path in files:
        for item in load_scenarios(path):
            if isinstance(item, Outcome):
                yield item
                continue
            key = (path.resolve().parent, item.name)
            if key in seen:
                yield Outcome(item.name, item.source, f"duplicate scenario name (also in {seen[key]})")
                continue
            seen[key] = item.source
            yield Run(item, debug=debug).run()
