"""Running scenarios: build the world, apply each step, judge each expectation.

One :class:`Run` per scenario.  It speaks to a world driver (:mod:`kueue_provreq.driver`): by
default the model (:class:`~kueue_provreq.conformance.model.ModelDriver`, the library's own
engine in simulated time), or any other implementation of Kueue, such as a real cluster
(:mod:`kueue_provreq.cluster.conform`).  The steps, the matching and the report are the same
for every driver, so a scenario means the same thing to each; what a driver cannot do, it
says before the scenario starts, and the scenario is skipped with that reason.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from kueue_provreq.api import constants as c
from kueue_provreq.api import naming
from kueue_provreq.api.meta import Condition
from kueue_provreq.api.objects import JOB_KINDS, KINDS
from kueue_provreq.api.queues import AdmissionCheck, ClusterQueue, Cohort, LocalQueue
from kueue_provreq.api.workload import Workload
from kueue_provreq.conformance.match import Matcher, show
from kueue_provreq.conformance.model import ModelDriver, Observer, quota_step, user_changes
from kueue_provreq.conformance.scenario import (
    DEFAULT_NAMESPACE,
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
    ScenarioError,
    SetQuotaReservation,
    Settle,
    Step,
    object_name,
    parse_scenario,
    scenario_name,
    step_number,
)
from kueue_provreq.controllers.cohorts import has_cycle
from kueue_provreq.controllers.integrations import INTEGRATIONS
from kueue_provreq.driver import (
    NEED_FAULTS,
    NEED_RECONCILE,
    NEED_RESTRICTED_SETTLE,
    NEED_SEMANTICS,
    Needs,
    StepFailed,
    WorldDriver,
)
from kueue_provreq.engine import ALL_CONTROLLERS, SettleError
from kueue_provreq.errors import KueueProvreqError
from kueue_provreq.machines import IllegalTransition
from kueue_provreq.manifests import ManifestError, ManifestErrors, format_duration, load_object, load_yaml_documents
from kueue_provreq.manifests.yamlio import path_problem, read_text

__all__ = ["NoSuchPath", "Observer", "Outcome", "Run", "StepFailed", "collect", "conform", "load_scenarios",
           "needs_of", "quota_step", "scenarios_in", "user_changes"]


class NoSuchPath(KueueProvreqError, FileNotFoundError):
    """A scenario file or folder named that does not exist."""


@attrs.frozen
class Outcome:
    name: str
    source: str
    failure: str | None = None
    """The first difference (``step N: ...``), or None when the scenario passed."""
    skipped: str | None = None
    """Why the driver could not run it (only a driver other than the model skips)."""
    errors: tuple[ManifestError, ...] = ()
    """For a scenario that cannot be read: every problem, each naming its file, line and field."""

    @property
    def passed(self) -> bool:
        return self.failure is None and self.skipped is None

    def line(self) -> str:
        """The contract's report line: ``PASS name`` or ``FAIL name: <first difference>``
        (and ``SKIP name: <reason>`` for a scenario a driver cannot run)."""
        if self.skipped is not None:
            return f"SKIP {self.name}: {one_line(self.skipped)}"
        if self.failure is None:
            return f"PASS {self.name}"
        return f"FAIL {self.name}: {one_line(self.failure)}"


def needs_of(scenario: Scenario) -> Needs:
    """What ``scenario`` asks of a driver beyond the verbs every driver has."""
    features = set()
    advance = 0.0
    for step in scenario.steps:
        if isinstance(step, Reconcile):
            features.add(NEED_RECONCILE)
        elif isinstance(step, Settle) and set(step.controllers) != set(ALL_CONTROLLERS):
            features.add(NEED_RESTRICTED_SETTLE)
        elif isinstance(step, Advance):
            advance += step.seconds
    if scenario.faults:
        features.add(NEED_FAULTS)
    if scenario.config.semantics:
        features.add(NEED_SEMANTICS)
    bare = tuple(((c.WORKLOAD, o.metadata.namespace or DEFAULT_NAMESPACE, o.metadata.name), len(o.spec.pod_sets))
                 for o in scenario.objects if isinstance(o, Workload)
                 and not any(r.kind in JOB_KINDS for r in o.metadata.owner_references))
    stamps = [o.metadata.creation_timestamp for o in scenario.objects
              if isinstance(o, Workload) and o.metadata.creation_timestamp is not None]
    checks = [o for o in scenario.objects if isinstance(o, AdmissionCheck)]
    multikueue = any(ch.spec.controller_name == c.MULTIKUEUE_CONTROLLER_NAME for ch in checks)
    # the longest name Kueue derives: a request's PodTemplate, ppt-<workload>-<check>-<attempt>-<pod set>
    longest = max((len(f"ppt-{o.metadata.name}-{ch.metadata.name}-1-{ps.name}") for o in scenario.objects
                   if isinstance(o, Workload) for ch in checks for ps in o.spec.pod_sets), default=0)
    parents = {o.metadata.name: o.spec.parent_name for o in scenario.objects
               if isinstance(o, Cohort) and o.spec.parent_name}
    return Needs(frozenset(features), advance, scenario.config_document, bare, multikueue, longest,
                 len(set(stamps)) < len(stamps), cohort_cycle=any(has_cycle(name, parents) for name in parents),
                 cluster_names=_cluster_names(scenario))


def _cluster_names(scenario: Scenario) -> frozenset[str]:
    """See :attr:`Needs.cluster_names`."""
    created = [*scenario.objects, *(step.obj for step in scenario.steps if isinstance(step, Apply))]
    names = {o.metadata.name for o in created if not o.NAMESPACED}
    for o in created:
        if isinstance(o, ClusterQueue):
            names.update(o.flavor_names(), o.checks_with_flavors())
        elif isinstance(o, AdmissionCheck) and o.spec.parameters is not None:
            names.add(o.spec.parameters.name)
        elif isinstance(o, LocalQueue):
            names.add(o.spec.cluster_queue)
    return frozenset(names)


class Run:
    """One scenario run.  ``keep_going`` carries on past failed expectations (a timeline
    wants the whole story); ``debug`` lets unexpected exceptions propagate with their traceback."""

    def __init__(self, scenario: Scenario, observer: Observer | None = None, *, keep_going: bool = False,
                 debug: bool = False, driver: WorldDriver | None = None) -> None:
        self.scenario = scenario
        self.observer = observer or Observer()
        self.keep_going = keep_going
        self.debug = debug
        self.driver: WorldDriver = driver if driver is not None else ModelDriver(scenario, self.observer)
        self.matcher = Matcher(scenario.clock)

    @property
    def world(self) -> Any:
        """The model's world (only when the driver is the model)."""
        assert isinstance(self.driver, ModelDriver)
        return self.driver.world

    def run(self) -> Outcome:
        skip = self.driver.refuses(needs_of(self.scenario))
        if skip is not None:
            outcome = Outcome(self.scenario.name, self.scenario.source, skipped=skip)
        else:
            try:
                outcome = Outcome(self.scenario.name, self.scenario.source, self._run())
            finally:
                self.driver.end()
        self.observer.on_finish(outcome)
        return outcome

    def _run(self) -> str | None:
        try:
            self.driver.begin(self.scenario.objects, self.scenario.clock)
        except (ScenarioError, StepFailed, ManifestError) as e:
            return str(e)
        first: str | None = None
        for number, step in enumerate(self.scenario.steps, 1):
            self.observer.on_step(number, step, self.driver.now)
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

    # --- steps -------------------------------------------------------------------------
    def _step(self, step: Step) -> None:
        d = self.driver
        match step:
            case Settle():
                d.settle(None if set(step.controllers) == set(ALL_CONTROLLERS) else step.controllers)
            case Reconcile():
                self._reconcile(step)
            case Advance():
                d.advance(step.seconds)
            case Autoscaler():
                d.autoscaler(step.namespace, step.request,
                             Condition(step.condition, step.status, step.reason, step.message), step.details)
            case SetQuotaReservation():
                d.set_quota_reservation(step.namespace, step.name, step.admission)
            case Apply():
                d.apply(step.obj, step.has_status, step.has_generation)
            case Delete():
                d.delete(step.kind, step.namespace, self._name(step.name))
            case Patch():
                d.patch(step.kind, step.namespace, self._name(step.name), step.api_version, step.merge)
            case Refused():
                self._refused(step)
            case Expect():
                self._expect(step)

    def _refused(self, step: Refused) -> None:
        """The write must fail with the message; an ``apply`` whose manifest the API server
        would refuse on create is refused by the manifest checks (as ``validate`` refuses it)."""
        d = self.driver
        try:
            if step.apply is not None:
                obj = load_object(step.apply, semantics=self.scenario.config.semantics)
                meta = step.apply.get("metadata")
                d.apply(obj, "status" in step.apply, isinstance(meta, Mapping) and meta.get("generation") is not None)
                what = "apply"
            else:
                assert step.patch is not None
                p = step.patch
                d.patch(p.kind, p.namespace, self._name(p.name), p.api_version, p.merge)
                what = "patch"
        except (StepFailed, ManifestError) as e:
            if step.message not in str(e):
                raise StepFailed(f"expected a refusal containing {step.message!r}, got {str(e)!r}") from None
            return
        raise StepFailed(f"expected the {what} to be refused ({step.message!r}), it was accepted")

    def _name(self, name: Name) -> str:
        """A name as the step runs: a job's Workload (``$workloadOf``) is named as Kueue's job
        integration names it, from the job's uid as the world holds it now."""
        if isinstance(name, str):
            return name
        job = self.driver.read(name.kind, name.namespace, name.name, None)
        if job is None:
            raise StepFailed(f"$workloadOf: {name.kind} {name.namespace}/{name.name} not found")
        uid = str((job.get("metadata") or {}).get("uid") or "")
        return naming.workload_name_for_owner(name.kind, INTEGRATIONS[name.kind].group, name.name, uid)

    def _reconcile(self, step: Reconcile) -> None:
        result = self.driver.reconcile(step.controller, step.key)
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

    # --- expectations ------------------------------------------------------------------
    def _expect(self, step: Expect) -> None:
        events = self.driver.take_events()
        for i, expected in enumerate(step.objects):
            kind, meta = expected["kind"], expected["metadata"]
            name = self._name(object_name(meta["name"]))
            if name != meta["name"]:
                expected = {**expected, "metadata": {**meta, "name": name}}
            scoped = KINDS[kind].NAMESPACED
            ns = (meta.get("namespace") or DEFAULT_NAMESPACE) if scoped else ""
            ref = f"{kind} {ns}/{name}" if scoped else f"{kind} {name}"
            doc = self.driver.read(kind, ns, name, expected.get("apiVersion"))
            if doc is None:
                raise StepFailed(f"objects[{i}]: {ref} not found")
            diff = self.matcher.match(expected, doc)
            if diff is not None:
                raise StepFailed(f"objects[{i}]: {ref}: {diff}")
        for i, (kind, ns, written) in enumerate(step.absent):
            name = self._name(written)
            if self.driver.read(kind, ns, name, None) is not None:
                raise StepFailed(f"absent[{i}]: {kind} {f'{ns}/' if ns else ''}{name} exists")
        for kind, n in step.count.items():
            have = self.driver.count(kind)
            if have != n:
                raise StepFailed(f"count.{kind}: expected {n}, got {have}")
        if step.events is not None:
            self._expect_events(step.events, events, step.exact_events)
        if step.metrics:
            series = self.driver.metric_series()
            for i, m in enumerate(step.metrics):
                total = sum(v for name, labels, v in series
                            if name == m.name and all(labels.get(k) == want for k, want in m.labels.items()))
                if total != m.value:
                    labels = ",".join(f"{k}={v}" for k, v in m.labels.items())
                    raise StepFailed(f"metrics[{i}]: {m.name}{{{labels}}}: expected {m.value:g}, got {total:g}")

    def _expect_events(self, expected: Sequence[Mapping[str, Any]], emitted: list[dict[str, Any]],
                       exact: bool) -> None:
        summary = "; ".join(describe_event(e) for e in emitted) or "none"
        if exact and len(emitted) != len(expected):
            raise StepFailed(f"events: expected exactly {len(expected)}, got {len(emitted)}: {summary}")
        position = 0
        for i, want in enumerate(expected):
            if exact:
                diff = self.matcher.match(want, emitted[i])
                if diff is not None:
                    raise StepFailed(f"events[{i}]: {diff} (emitted since the previous expect: {summary})")
                continue
            while position < len(emitted) and self.matcher.match(want, emitted[position]) is not None:
                position += 1
            if position == len(emitted):
                raise StepFailed(f"events[{i}]: no event matches {show(want)} in order "
                                 f"(emitted since the previous expect: {summary})")
            position += 1


# --- helpers ------------------------------------------------------------------------------


def describe_event(e: Mapping[str, Any]) -> str:
    obj = e["object"]
    where = f"{obj['namespace']}/{obj['name']}" if obj["namespace"] else obj["name"]
    return f"{e['type']} {e['reason']} {obj['kind']} {where} {e['message']!r}"


def one_line(text: str) -> str:
    return " ".join(text.split("\n"))


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
            try:
                os.stat(p)
            except OSError as e:  # said as the file system has it: missing, a loop, through a file
                raise NoSuchPath(f"{p}: {path_problem(e)}") from None
            raise NoSuchPath(f"{p}: not a regular file or folder")
    return list(dict.fromkeys(files))


def load_scenarios(path: Path, text: str | None = None) -> list[Scenario | Outcome]:
    """Every scenario document of one file (``text`` when it was read already, as standard
    input is); a document that cannot be read is a failed Outcome (named by the file when it
    has no name)."""
    source = str(path)
    try:
        documents = load_yaml_documents(read_text(path) if text is None else text, source)
    except ManifestError as e:
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
            out.append(Outcome(name, source, unreadable(e.errors), errors=e.errors))
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


def scenarios_in(files: Iterable[Path]) -> Iterator[Scenario | Outcome]:
    """Every scenario of ``files`` (see :func:`collect`), and an Outcome for each that cannot
    run: unreadable, or reusing a name already taken in its folder."""
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
            yield item


def conform(files: Iterable[Path], *, debug: bool = False) -> Iterator[Outcome]:
    """Run every scenario of ``files`` on the model, yielding outcomes as they come.
    Names must be unique within a folder: a later scenario reusing one fails."""
    for item in scenarios_in(files):
        yield item if isinstance(item, Outcome) else Run(item, debug=debug).run()
