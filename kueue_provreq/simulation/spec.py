"""The simulation file: reading and validating it (``docs/simulation-file.rst`` documents it).

A simulation file is one YAML document.  :func:`load_document` reads it; :func:`parse` checks
it against its schema, written with the nodes manifests use (:mod:`kueue_provreq.manifests.nodes`,
:mod:`kueue_provreq.manifests.documents`), and returns a :class:`Simulation`, the value
:func:`~kueue_provreq.simulation.run.simulate` runs.  Every problem is reported at once as a
:class:`~kueue_provreq.manifests.ManifestError` naming the file and line, the simulation and the
field path, like every manifest error (a manifest inside the file names itself); durations,
times and quantities follow the same grammar as everywhere else.  A new field is one node of
:class:`_Schema` and one line where :func:`parse` builds the value.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any, TypeVar

import attrs

from kueue_provreq import trace as trace_format
from kueue_provreq.api import constants as c
from kueue_provreq.api.config import Configuration, UnknownSemantics, parse_semantics
from kueue_provreq.api.evolve import evolve
from kueue_provreq.api.frozen import FrozenMap
from kueue_provreq.api.job import Job, JobSet, PyTorchJob
from kueue_provreq.api.meta import Time
from kueue_provreq.api.objects import JOB_KINDS, JobObject, KubeObject, key_of
from kueue_provreq.api.provisioning import ProvisioningRequestConfig
from kueue_provreq.api.workload import Workload
from kueue_provreq.autoscaler import BOOKING_TIME
from kueue_provreq.controllers import job as jobs
from kueue_provreq.manifests import (
    ManifestError,
    ManifestErrors,
    load_configuration,
    load_configuration_file,
    load_file,
    load_object,
    load_yaml_documents,
)
from kueue_provreq.manifests.codec import MAX_TIME, describe, format_duration, format_time, parse_time
from kueue_provreq.manifests.documents import File, KueueConfiguration, Manifest, check_document, place
from kueue_provreq.manifests.inputs import list_items
from kueue_provreq.manifests.nodes import (
    Arr,
    Choice,
    DateTime,
    Duration,
    Int,
    Node,
    Num,
    Obj,
    Problems,
    Qty,
    Str,
    duration_seconds,
    join,
    quantity_value,
)
from kueue_provreq.manifests.objects import check_object
from kueue_provreq.manifests.yamlio import locate, read_text
from kueue_provreq.simulation.settings import RETRY_STRATEGY_FIELDS, parse_keys
from kueue_provreq.world import World

T = TypeVar("T")
Path_ = tuple[str | int, ...]

DEFAULT_START = "2024-01-01T00:00:00Z"
DEFAULT_HORIZON = 24 * 3600
DEFAULT_COUNT = 100
#: The most workloads one simulation runs (``count``, ``--workloads``): ten times the largest
#: benchmark, minutes of work; checked before any work, the limit in the message.
MAX_WORKLOADS = 1_000_000
#: The slowest and fastest Poisson arrivals: one in six weeks, a thousand a second (a slower
#: rate spells gaps hundreds of digits long; a faster one more workloads an hour than a run holds).
MIN_RATE_PER_HOUR = 0.001
MAX_RATE_PER_HOUR = 3_600_000.0
#: The widest lognormal spread: beyond it a sample's tail is longer than any horizon.
MAX_SIGMA = 10.0
DEFAULT_RUNNING_TIME = 3600
DEFAULT_REVOCATION_TIME = 3600
ALL_AT_ONCE, POISSON = "AllAtOnce", "Poisson"


# --- the model of a run ----------------------------------------------------------------------


@attrs.frozen
class Distribution:
    """A random duration, drawn in whole seconds (never negative).

    ``fixed`` (``a``), ``uniform`` (``a`` to ``b``), ``exponential`` (mean ``a``) or ``lognormal``
    (median ``a``, shape ``b``: the standard deviation of the logarithm).
    """

    kind: str
    a: float
    b: float = 0.0

    def draw(self, rng: random.Random) -> int:
        if self.kind == "fixed":
            value = self.a
        elif self.kind == "uniform":
            value = rng.uniform(self.a, self.b)
        elif self.kind == "exponential":
            value = rng.expovariate(1 / self.a) if self.a > 0 else 0.0
        else:
            value = rng.lognormvariate(math.log(self.a), self.b) if self.a > 0 else 0.0
        return max(0, round(value))

    @property
    def most(self) -> float:
        """The longest it can draw (infinite for the unbounded ones)."""
        if self.kind == "fixed":
            return self.a
        if self.kind == "uniform":
            return self.b
        return math.inf if self.a > 0 else 0.0

    def __str__(self) -> str:
        if self.kind == "fixed":
            return format_duration(self.a)
        if self.kind == "uniform":
            return f"uniform {format_duration(self.a)}..{format_duration(self.b)}"
        if self.kind == "exponential":
            return f"exponential, mean {format_duration(self.a)}"
        return f"lognormal, median {format_duration(self.a)}, sigma {self.b:g}"


ZERO = Distribution("fixed", 0.0)


@attrs.frozen
class JobModel:
    """What happens after admission: the pods are ready ``pods_ready_time`` later (which
    consumes the capacity booking), and the Job completes ``running_time`` after that."""

    pods_ready_time: Distribution = ZERO
    running_time: Distribution = Distribution("fixed", float(DEFAULT_RUNNING_TIME))


@attrs.frozen
class Stockouts:
    """Capacity that comes and goes: an alternating renewal process per class, starting with
    an ``available`` period at the run's start, then a ``stockout`` period, and so on, each
    period drawn from its distribution.  Every try made during a stock-out finds no capacity,
    so tries close together fail together (a zone out of GPUs for an hour)."""

    available: Distribution
    stockout: Distribution


#: What a try that finds no capacity ends with, for a class upstream CA does not handle:
#: ``Failed=True`` (the attempt is over; Kueue retries it with its own backoff) or
#: ``Provisioned=False`` (the request stays pending; CA tries again after its own backoff).
SHORTAGE_FAIL, SHORTAGE_RETRY = "Fail", "Retry"


@attrs.frozen
class ClassModel:
    """What Cluster Autoscaler does with requests of one provisioning class."""

    provisioning_time: Distribution = ZERO
    """From the request's creation to CA's answer: what ``provisioned_time`` and
    ``failed_time`` are when the file does not set them."""
    failure_probability: float = 0.0
    """That a try finds no capacity (what follows depends on the class, see the docs)."""
    provisioned_time: Distribution = ZERO
    """From the request's creation to ``Provisioned=True``, for a try that finds capacity."""
    failed_time: Distribution = ZERO
    """From the request's creation to the no-capacity answer, for a try that finds none."""
    stockouts: Stockouts | None = None
    """When the class has no capacity at all; None: always available."""
    shortage: str | None = None
    """:data:`SHORTAGE_FAIL` or :data:`SHORTAGE_RETRY` for a provider's class; None: as the
    class and its ``noRetry`` parameter say (:func:`~kueue_provreq.autoscaler.no_capacity_answer`)."""
    booking_time: int = BOOKING_TIME
    """How long a provisioned request's capacity stays booked for its pods."""
    booking_loss_probability: float = 0.0
    """That pods not yet ready when the booking expires have lost the capacity: they wait."""
    capacity: FrozenMap[str, Decimal] | None = None
    """The most the class can provide at once, per resource; None: unlimited."""
    revocation_probability: float = 0.0
    revocation_time: Distribution = Distribution("fixed", float(DEFAULT_REVOCATION_TIME))
    """From provisioning to the revocation, when there is one."""


@attrs.frozen
class Template:
    name: str
    weight: float
    obj: Workload | JobObject
    """A Workload, or a job as Kueue's webhook leaves it on create."""
    jobs: JobModel


@attrs.frozen
class Arrival:
    """One workload of an explicit trace: ``at`` seconds after the start, made from
    ``template`` (a template name) or given as ``workload``."""

    at: int
    template: str | None = None
    workload: Workload | None = None
    running_time: int | None = None
    """How long it ran in the trace (seconds from pods ready to finished): replaces the job model's draw."""


@attrs.frozen
class Simulation:
    """A validated simulation file."""

    name: str
    source: str
    seed: int
    start: Time
    horizon: int
    """How long the run may go on after the last arrival."""
    setup: tuple[KubeObject, ...]
    config: Configuration
    count: int
    templates: tuple[Template, ...]
    process: str
    rate_per_hour: float
    trace: tuple[Arrival, ...]
    jobs: JobModel
    autoscaler: FrozenMap[str, ClassModel]
    description: str = ""
    trace_period: int | None = None
    """How often a repeated trace starts over: the time it covers, where known (None: estimated
    from its arrivals, see :func:`repeat_period`)."""
    warm_up: int = 0
    """Seconds from the start left out of the summary's figures (``--warm-up``)."""

    def template(self, name: str) -> Template:
        return next(t for t in self.templates if t.name == name)


@attrs.frozen
class Cluster:
    """A cluster's state a run starts from (``--from DUMP``, ``--kubeconfig``): its objects and
    the time they were read at, which becomes the run's start."""

    objects: tuple[KubeObject, ...]
    at: Time


# --- reading ----------------------------------------------------------------------------


@attrs.frozen
class Document:
    """A simulation file as read: its data and where relative paths in it start."""

    data: Mapping[str, Any]
    source: str
    base: Path
    included: Mapping[str, Any] | None = None
    """The autoscaler file ``autoscaler: PATH`` named, as read (its lines name its errors)."""


def load_document(path: str | Path) -> Document:
    """Read a simulation file (one YAML document), with the autoscaler file it names, if it
    names one (``autoscaler: PATH``, as ``kueue-provreq calibrate`` writes it): its mapping
    takes the path's place, so ``--set autoscaler...`` reaches it as any other field."""
    path = Path(path)
    documents = load_file(path)
    if len(documents) != 1:
        raise ManifestError(f"expected one simulation document, found {len(documents)}", source=str(path))
    data = documents[0]
    include = data.get("autoscaler")
    if not isinstance(include, str):
        return Document(data, str(path), path.parent)
    where = locate(data, "autoscaler")
    given = data.get("name")
    obj = f"Simulation {given if isinstance(given, str) and given else path.stem}"
    if not include or not (path.parent / include).is_file():
        problems = Problems()
        File(path.parent).check(include, "autoscaler", problems)
        raise ManifestErrors([ManifestError(e.reason, path="autoscaler", obj=obj, source=where) for e in problems.errors])
    included = load_file(path.parent / include)
    if len(included) != 1:
        raise ManifestError(f"expected one autoscaler document (the autoscaler section), found {len(included)}",
                            path="autoscaler", obj=obj, source=str(path.parent / include))
    data["autoscaler"] = included[0]
    return Document(data, str(path), path.parent, included[0])


# --- the schema: what a simulation file may say ------------------------------------------------


class _Distribution(Node):
    """A random duration: a duration (fixed), or exactly one of the named distributions."""

    def __init__(self) -> None:
        duration = Duration(minimum=0)
        self.fixed = duration
        self.named = Choice({
            "fixed": duration,
            "uniform": Obj({"min": duration, "max": duration}, required=("min", "max"), rules=(_min_max,)),
            "exponential": Obj({"mean": duration}, required=("mean",)),
            "lognormal": Obj({"median": Duration(minimum=1), "sigma": Num(minimum=0, maximum=MAX_SIGMA)},
                             required=("median", "sigma")),
        }, what="distribution")

    def check(self, value: Any, path: str, out: Problems) -> None:
        (self.named if isinstance(value, Mapping) else self.fixed).check(value, path, out)


def _min_max(value: Mapping[str, Any], path: str, out: Problems) -> None:
    if duration_seconds(value["max"]) < duration_seconds(value["min"]):
        out.error("must not be less than min", join(path, "max"))


def _arrival_rules(value: Mapping[str, Any], path: str, out: Problems) -> None:
    if value["process"] == ALL_AT_ONCE and "ratePerHour" in value:
        out.error("only for process Poisson", join(path, "ratePerHour"))
    if value["process"] == POISSON and value.get("ratePerHour") is None:
        out.error("required value", join(path, "ratePerHour"))


def _workloads_rules(value: Mapping[str, Any], path: str, out: Problems) -> None:
    templates = value.get("templates") or []
    trace = value.get("trace")
    if not templates and not trace:
        out.error("needs templates or a trace", path)
    if trace and value.get("arrival") is not None:
        out.error("a trace sets the arrivals itself", join(path, "arrival"))
    names: set[str] = set()
    for i, template in enumerate(templates):
        if template["name"] in names:
            out.error(f"duplicate template name {template['name']!r}", f"{path}.templates[{i}].name")
        names.add(template["name"])
    for i, arrival in enumerate(trace if isinstance(trace, list) else ()):
        if arrival["template"] not in names:
            out.error(f"no template named {arrival['template']!r}", f"{path}.trace[{i}].template")


def _template_rules(value: Mapping[str, Any], path: str, out: Problems) -> None:
    if ("job" in value) == ("workload" in value):
        out.error("needs exactly one of job or workload", path)
        return
    kind = "job" if "job" in value else "workload"
    given = value[kind].get("kind")
    if (given in JOB_KINDS) != (kind == "job") or (kind == "workload" and given != c.WORKLOAD):
        wanted = "job (Job, JobSet, PyTorchJob)" if kind == "job" else "Workload"
        out.error(f"expected a {wanted}, got a {given}", join(path, kind))


def _setup_rules(value: Mapping[str, Any], path: str, out: Problems) -> None:
    for i, doc in enumerate(value.get("manifests") or ()):
        if doc.get("kind") == c.WORKLOAD or doc.get("kind") in JOB_KINDS:
            out.error("workloads go under workloads.templates or workloads.trace, not in the setup",
                      f"{path}.manifests[{i}].kind")
    if not value.get("manifests") and not value.get("files"):
        out.error("no objects: the setup holds the queues, checks and configs workloads use", path)


def _some_time(value: Mapping[str, Any], path: str, out: Problems) -> None:
    """Stock-out periods that always last 0s would never let time pass."""
    if _always_zero(value["available"]) and _always_zero(value["stockout"]):
        out.error("available and stockout cannot both always be 0s", path)


def _always_zero(value: Any) -> bool:
    return _distribution(value).most == 0


def _shortage_rules(value: Mapping[str, Any], path: str, out: Problems) -> None:
    """Upstream CA's classes answer a shortage as their code and parameters say."""
    for class_name, body in value.items():
        if isinstance(body, Mapping) and "shortage" in body and class_name in c.CA_CLASSES:
            out.error("only for a provider's class: upstream CA's classes answer a shortage themselves "
                      "(check-capacity fails with parameters noRetry: \"true\" and retries without it; "
                      "best-effort-atomic-scale-up always retries)", f"{path}[{class_name}].shortage")


def _end_within_rfc3339(value: Mapping[str, Any], path: str, out: Problems) -> None:
    """``start`` plus ``horizon`` within RFC 3339's years: every time the run writes can be read back."""
    start = parse_time(value.get("start") or DEFAULT_START)
    horizon = DEFAULT_HORIZON if value.get("horizon") is None else duration_seconds(value["horizon"])
    if start + horizon > MAX_TIME:
        out.error(f"start plus horizon passes {format_time(MAX_TIME)}, the last time RFC 3339 can write",
                  join(path, "horizon"))


class _Trace(Node):
    """An explicit trace: a list of arrivals, or ``{file: PATH}`` (``kubectl get workloads -o json``,
    or a recorded trace, ``*.jsonl``), optionally with the ``period`` it repeats on."""

    def __init__(self, base: Path) -> None:
        self.arrivals = Arr(Obj({"at": Duration(minimum=0), "template": Str(min_length=1)},
                                required=("at", "template")))
        self.file = Obj({"file": File(base), "period": Duration(minimum=1)}, required=("file",))

    def check(self, value: Any, path: str, out: Problems) -> None:
        if isinstance(value, Mapping):
            self.file.check(value, path, out)
        elif isinstance(value, list):
            self.arrivals.check(value, path, out)
        else:
            out.error(f"expected a list of arrivals, or {{file: PATH}}, got {describe(value)}", path)


class _ConfigurationSource(Node):
    """A Kueue Configuration: a file path, or the Configuration itself."""

    def __init__(self, base: Path) -> None:
        self.file = File(base)
        self.inline = KueueConfiguration(scenario=False)

    def check(self, value: Any, path: str, out: Problems) -> None:
        if isinstance(value, str):
            self.file.check(value, path, out)
        elif isinstance(value, Mapping):
            self.inline.check(value, path, out)
        else:
            out.error(f"expected a file path or a Configuration, got {describe(value)}", path)


class _Semantics(Node):
    """Semantics switches (``api.config.SEMANTICS``): a list of names, or one string of
    comma-separated names; ``current`` is none (the default), so a sweep can vary it."""

    def check(self, value: Any, path: str, out: Problems) -> None:
        if not isinstance(value, (str, list)):
            out.error(f"expected switch names (a list, or a comma-separated string), got {describe(value)}", path)
            return
        try:
            parse_semantics(value)
        except UnknownSemantics as e:
            out.error(str(e), path)


class _Schema:
    """The nodes of one simulation file (its files are named relative to its folder)."""

    def __init__(self, base: Path) -> None:
        distribution = _Distribution()
        job_model = {"podsReadyTime": distribution, "runningTime": distribution}
        probability = Num(minimum=0, maximum=1)
        self.manifests = Manifest()
        self.root = Obj({
            "name": Str(), "description": Str(), "seed": Int(minimum=0, bits=64), "start": DateTime(),
            "horizon": Duration(minimum=0), "configuration": _ConfigurationSource(base), "semantics": _Semantics(),
            "setup": Obj({"files": Arr(File(base)), "manifests": Arr(self.manifests)}, rules=(_setup_rules,)),
            "workloads": Obj({
                "count": Int(minimum=1, maximum=MAX_WORKLOADS, bits=64),
                "arrival": Obj({"process": Str(enum=(ALL_AT_ONCE, POISSON)),
                                "ratePerHour": Num(minimum=MIN_RATE_PER_HOUR, maximum=MAX_RATE_PER_HOUR)},
                               required=("process",), rules=(_arrival_rules,)),
                "templates": Arr(Obj({"name": Str(min_length=1), "weight": Num(minimum=0, exclusive_minimum=True),
                                      "job": self.manifests, "workload": self.manifests, **job_model},
                                     required=("name",), rules=(_template_rules,))),
                "trace": _Trace(base),
            }, required=(), rules=(_workloads_rules,)),
            "jobs": Obj(job_model),
            "autoscaler": Obj(values=Obj({
                "provisioningTime": distribution, "failureProbability": probability,
                "capacity": Obj(values=Qty(non_negative=True)), "revocationProbability": probability,
                "revocationTime": distribution,
                "provisionedTime": distribution, "failedTime": distribution,
                "stockouts": Obj({"available": distribution, "stockout": distribution},
                                 required=("available", "stockout"), rules=(_some_time,)),
                "shortage": Str(enum=(SHORTAGE_FAIL, SHORTAGE_RETRY)),
                "bookingTime": Duration(minimum=0), "bookingLossProbability": probability,
            }), rules=(_shortage_rules,)),
        }, required=("workloads",), rules=(_end_within_rfc3339,))


# --- reading ------------------------------------------------------------------------------------


def _overridden_by(overridden: Mapping[str, str]) -> Callable[[str], str | None]:
    """The ``--set`` that wrote a field path (or a path above it), if one did."""
    settings = [(parse_keys(path), given) for path, given in overridden.items()]

    def source(path: str) -> str | None:
        keys = parse_keys(path) if path else ()
        return next((given for written, given in settings if keys[:len(written)] == written), None)

    return source


def _included(document: Document, source: Callable[[str], str | None]) -> Callable[[str], str | None]:
    """Errors under ``autoscaler`` name the line of the autoscaler file the path came from."""
    included = document.included
    if included is None:
        return source

    def where(path: str) -> str | None:
        if path.startswith("autoscaler") and source(path) is None:
            return locate(included, path.removeprefix("autoscaler").lstrip(".")) or None
        return source(path)

    return where


def parse(document: Document, *, config: Configuration | None = None, count: int | None = None,
          seed: int | None = None, retry_strategy: Mapping[str, Any] | None = None,
          overridden: Mapping[str, str] | None = None, cluster: Cluster | None = None, warm_up: int = 0,
          feature_gates: Mapping[str, bool] | None = None) -> Simulation:
    """Validate a simulation file.  ``config`` (``--config``), ``count`` (``--workloads``) and
    ``seed`` (``--seed``) override the file; ``retry_strategy`` sets fields of every
    ProvisioningRequestConfig of the setup; ``overridden`` maps field paths to the ``--set``
    that wrote them, for error messages; ``cluster`` is the state the run starts from
    (:func:`starting_world`), at its time instead of the file's ``start``; ``warm_up``
    (``--warm-up``, seconds) is left out of the figures; ``feature_gates`` (``--set
    featureGates.NAME``) go on top of the configuration, whichever it is.  Every problem of the file is raised at once
    (:class:`~kueue_provreq.manifests.ManifestErrors`), each naming the file and line (or the
    ``--set``), the simulation and the field path."""
    data = document.data
    given = data.get("name") if isinstance(data, Mapping) else None
    name = given if isinstance(given, str) and given else Path(document.source).stem
    obj = f"Simulation {name}"
    source = _included(document, _overridden_by(overridden or {}))
    schema = _Schema(document.base)
    check_document(schema.root, data, obj=obj, source=source)
    if count is not None and not 1 <= count <= MAX_WORKLOADS:
        raise ManifestError(f"must be between 1 and {MAX_WORKLOADS:,}", path="--workloads")
    if config is None:
        config = _configuration(document, data.get("configuration"))
    if feature_gates:
        config = evolve(config, feature_gates=config.feature_gates.merged(feature_gates))
    if data.get("semantics") is not None:
        config = evolve(config, semantics=parse_semantics(data["semantics"]))
    setup = _setup(document, schema, data.get("setup") or {}, retry_strategy or {}, source)
    job_model = _job_model(data.get("jobs") or {}, JobModel())
    w = data["workloads"]
    templates = _templates(schema, w.get("templates") or [], job_model, config, World(setup), data, obj)
    trace, period = _trace(document, w.get("trace"))
    if count is None:
        count = w["count"] if w.get("count") is not None else len(trace) if trace else DEFAULT_COUNT
    arrival = w.get("arrival") or {"process": ALL_AT_ONCE}
    start = Time(parse_time(data.get("start") or DEFAULT_START))
    if cluster is not None:
        setup, start = starting_world(cluster.objects, setup, retry_strategy or {}, config), cluster.at
    return Simulation(
        name=name, source=document.source, seed=(data.get("seed") or 0) if seed is None else seed,
        start=start,
        horizon=DEFAULT_HORIZON if data.get("horizon") is None else int(duration_seconds(data["horizon"])),
        setup=setup, config=config,
        count=count, templates=templates, process=arrival["process"],
        rate_per_hour=float(arrival.get("ratePerHour") or 0.0), trace=trace, jobs=job_model,
        autoscaler=_autoscaler(data.get("autoscaler") or {}), description=data.get("description") or "",
        trace_period=period, warm_up=warm_up)


def _configuration(document: Document, value: Any) -> Configuration:
    if value is None:
        return Configuration()
    if isinstance(value, str):
        return load_configuration_file(document.base / value)
    return load_configuration(value, scenario=False)


def _setup(document: Document, schema: _Schema, value: Mapping[str, Any], retry_strategy: Mapping[str, Any],
           source: Callable[[str], str | None]) -> tuple[KubeObject, ...]:
    """The setup's objects: the files' (each read and checked here, every problem at once; a
    ``kubectl get -o yaml|json`` List gives its items, as ``-f`` reads it), then the file's own
    manifests (checked with the file), each ProvisioningRequestConfig with the ``--set
    retryStrategy.*`` fields."""
    objects: list[KubeObject] = []
    errors: list[ManifestError] = []
    for name in value.get("files") or ():
        for doc in (item for listed in load_file(document.base / name) for item in list_items(listed)):
            if isinstance(doc, ManifestError):  # a List's item that is no object
                errors.append(doc)
                continue
            checked = check_object(_with_retry_strategy(doc, retry_strategy))
            errors += [_retry_source(e, source) for e in checked.errors]
            obj = checked.obj
            if obj is not None and (obj.KIND == c.WORKLOAD or obj.KIND in JOB_KINDS):
                errors.append(ManifestError("workloads go under workloads.templates or workloads.trace, not in "
                                            "the setup", path="kind", source=locate(doc, "kind"),
                                            obj=f"{obj.KIND} {obj.metadata.namespace}/{obj.metadata.name}"))
            elif obj is not None:
                objects.append(obj)
    for i, doc in enumerate(value.get("manifests") or ()):
        if doc.get("kind") != c.PROVISIONING_REQUEST_CONFIG or not retry_strategy:
            objects.append(schema.manifests.object(doc))
            continue
        checked = check_object(_with_retry_strategy(doc, retry_strategy))
        errors += [_retry_source(ManifestError(e.reason, path=f"setup.manifests[{i}].{e.path}", obj=e.obj,
                                               source=e.source), source) for e in checked.errors]
        if checked.obj is not None:
            objects.append(checked.obj)
    if errors:
        raise ManifestErrors(errors)
    return tuple(objects)


def starting_world(cluster: Sequence[KubeObject], setup: Sequence[KubeObject], retry_strategy: Mapping[str, Any],
                   config: Configuration) -> tuple[KubeObject, ...]:
    """The objects a run from a cluster's state starts with: the setup's, then the cluster's
    but those the setup replaces (same kind, namespace and name: the file says how the cluster
    is to be configured) and the workloads already finished or deactivated, with the requests
    they own (a retention policy's: they matter to nobody); each ProvisioningRequestConfig with
    the ``--set retryStrategy.*`` fields.  Jobs stay implicit, as a simulation's own are (the
    job model plays their pods): a job Kueue manages that has no Workload yet becomes the one
    Kueue would create for it, at the job's creation; the others are left out."""
    replaced = {key_of(o) for o in setup}
    done = {key_of(o) for o in cluster if isinstance(o, Workload) and (o.is_finished() or not o.is_active)}
    owners = {(r.kind, o.metadata.namespace, r.name) for o in cluster if isinstance(o, Workload)
              for r in o.metadata.owner_references}
    kept: list[KubeObject] = list(setup)
    for obj in cluster:
        ref = obj.metadata.controller_ref() if obj.KIND == c.PROVISIONING_REQUEST else None
        owner = (c.WORKLOAD, obj.metadata.namespace, ref.name) if ref is not None else None
        if key_of(obj) not in replaced | done and owner not in done and obj.KIND not in JOB_KINDS:
            kept.append(obj)
    for job in cluster:
        if not isinstance(job, Job | JobSet | PyTorchJob) or key_of(job) in owners:
            continue
        if jobs.management(World(kept), job, config).managed:
            wl = jobs.workload_for(job, config)
            kept.append(evolve(wl, metadata=evolve(wl.metadata,
                                                               creation_timestamp=job.metadata.creation_timestamp)))
    fields = {attr: retry_strategy[name] for name, attr in zip(
        RETRY_STRATEGY_FIELDS, ("backoff_limit_count", "backoff_base_seconds", "backoff_max_seconds"), strict=True)
        if name in retry_strategy}
    return tuple(_retried(o, fields) if isinstance(o, ProvisioningRequestConfig) and fields else o for o in kept)


def left_out(cluster: Sequence[KubeObject], setup: Sequence[KubeObject], start: Sequence[KubeObject]) -> list[str]:
    """The cluster's objects :func:`starting_world` left out or replaced, in words (``Kind
    ns/name``); jobs, implicit in a run, are not named."""
    kept = {key_of(o) for o in start} - {key_of(o) for o in setup}
    return [f"{o.KIND} {o.metadata.namespace + '/' if o.metadata.namespace else ''}{o.metadata.name}"
            for o in cluster if key_of(o) not in kept and o.KIND not in JOB_KINDS]


def _retried(prc: ProvisioningRequestConfig, fields: Mapping[str, int]) -> ProvisioningRequestConfig:
    strategy = evolve(prc.spec.retry_strategy, **fields)
    return evolve(prc, spec=evolve(prc.spec, retry_strategy=strategy))


def _retry_source(error: ManifestError, source: Callable[[str], str | None]) -> ManifestError:
    """A ProvisioningRequestConfig's error, naming the ``--set retryStrategy.*`` that wrote the field."""
    field = error.path.rpartition("spec.retryStrategy.")[2] if "spec.retryStrategy." in error.path else None
    setting = source(f"retryStrategy.{field}") if field is not None else None
    return ManifestError(error.reason, path=error.path, obj=error.obj, source=setting or error.source)


def _with_retry_strategy(doc: Mapping[str, Any], fields: Mapping[str, Any]) -> Mapping[str, Any]:
    """The ProvisioningRequestConfig manifest with the ``--set retryStrategy.*`` fields."""
    if doc.get("kind") != c.PROVISIONING_REQUEST_CONFIG or not fields:
        return doc
    out = dict(doc)
    spec = dict(out.get("spec") or {})
    strategy = dict(spec.get("retryStrategy") or {})
    strategy.update({k: v for k, v in fields.items() if k in RETRY_STRATEGY_FIELDS})
    spec["retryStrategy"] = strategy
    out["spec"] = spec
    return out


def _distribution(value: Any) -> Distribution:
    """A distribution the schema checked."""
    if not isinstance(value, Mapping):
        return Distribution("fixed", duration_seconds(value))
    ((kind, body),) = value.items()
    if kind == "fixed":
        return Distribution("fixed", duration_seconds(body))
    if kind == "uniform":
        return Distribution("uniform", duration_seconds(body["min"]), duration_seconds(body["max"]))
    if kind == "exponential":
        return Distribution("exponential", duration_seconds(body["mean"]))
    return Distribution("lognormal", duration_seconds(body["median"]), float(body["sigma"]))


def _job_model(value: Mapping[str, Any], default: JobModel) -> JobModel:
    ready, running = value.get("podsReadyTime"), value.get("runningTime")
    return JobModel(default.pods_ready_time if ready is None else _distribution(ready),
                    default.running_time if running is None else _distribution(running))


def _templates(schema: _Schema, items: Sequence[Mapping[str, Any]], job_model: JobModel, config: Configuration,
               setup: World, data: Any, obj: str) -> tuple[Template, ...]:
    out: list[Template] = []
    errors: list[ManifestError] = []
    for i, t in enumerate(items):
        kind = "job" if "job" in t else "workload"
        template = schema.manifests.object(t[kind])
        if template.KIND in JOB_KINDS:
            # as Kueue's webhook creates it (the default LocalQueue), then whether Kueue manages it
            template = jobs.defaulted(setup, template, config)
            verdict = jobs.management(setup, template, config)  # type: ignore[arg-type]
            if not verdict.managed:
                errors.append(place(ManifestError(f"Kueue would not manage this {template.KIND}: {verdict.why}",
                                                  path=f"workloads.templates[{i}].{kind}"), data, obj=obj))
                continue
        model: Workload | JobObject = template  # type: ignore[assignment]  # the schema checked: a Workload or a job
        out.append(Template(t["name"], float(t.get("weight") or 1), model, _job_model(t, job_model)))
    if errors:
        raise ManifestErrors(errors)
    return tuple(out)


def _trace(document: Document, value: Any) -> tuple[tuple[Arrival, ...], int | None]:
    """The arrivals, and the period they repeat on where the file says or the trace knows."""
    if value is None:
        return (), None
    if isinstance(value, Mapping):
        path = document.base / value["file"]
        arrivals, period = recorded_trace(path) if path.suffix == ".jsonl" else kubectl_trace(path)
        return arrivals, (int(duration_seconds(value["period"])) if value.get("period") is not None else period)
    listed = [Arrival(math.ceil(duration_seconds(a["at"])), template=a["template"]) for a in value]
    return tuple(sorted(listed, key=lambda x: x.at)), None


def repeat_period(arrivals: Sequence[Arrival], period: int | None) -> int:
    """How often a trace starts over when a run asks for more workloads than it holds: the time
    it covers (``period``) where known, else its arrivals' span plus one mean gap."""
    if period is not None:
        return period
    span = arrivals[-1].at - arrivals[0].at
    return span + (span // (len(arrivals) - 1) if len(arrivals) > 1 else 0)


def recorded_trace(path: Path) -> tuple[tuple[Arrival, ...], int | None]:
    """The arrivals of a recorded trace (``kueue-provreq record``; ``docs/trace-format.rst``),
    relative to the start of the time it covers, each with its podSets, queue and priority and
    the running time the trace knows (an arrival's own, else its finish's); the period is the
    time the trace covers, so a repeated week keeps its quiet weekend."""
    recorded = trace_format.read(path)
    window = recorded.window
    records = recorded.of(trace_format.Arrival)
    if window is None or not records:
        raise ManifestError("no arrivals", source=str(path))
    ran = {(f.namespace, f.name): f.running_seconds for f in recorded.of(trace_format.Finish)
           if f.running_seconds is not None}
    out = []
    for a in sorted(records, key=lambda r: r.time):
        spec: dict[str, Any] = {"queueName": a.queue, "podSets": list(a.podsets)}
        if a.priority:
            spec["priority"] = a.priority
        manifest = {"apiVersion": c.KUEUE_V1BETA2, "kind": c.WORKLOAD,
                    "metadata": {"name": a.name, "namespace": a.namespace}, "spec": spec}
        try:
            wl = load_object(manifest)
        except ManifestError as e:
            raise ManifestError(e.reason, path=f"podsets ({e.path})" if e.path else "", obj=e.obj,
                                source=f"{path}: arrival {a.namespace}/{a.name}") from None
        assert isinstance(wl, Workload)
        running = a.running_seconds if a.running_seconds is not None else ran.get((a.namespace, a.name))
        out.append(Arrival(a.time - window.start, workload=wl, running_time=running))
    return tuple(out), max(1, window.end - window.start)


def kubectl_trace(path: Path) -> tuple[tuple[Arrival, ...], int | None]:
    """The arrivals of ``kubectl get workloads -A -o json`` (a List, or one Workload): each
    Workload arrives at its creationTimestamp, relative to the earliest, with its podSets,
    queue name, priority, labels and annotations; its status, owners and ``spec.active`` are
    left behind (a replay starts every workload afresh).  The period: from the earliest
    creation to the newest time the dump records (it was taken no earlier), when that is
    later than the last arrival."""
    text = read_text(path)
    if text.lstrip()[:1] in ("{", "["):  # JSON, as kubectl writes it: read fast
        try:
            loaded = json.loads(text)
        except json.JSONDecodeError as e:
            raise ManifestError(e.msg, source=f"{path}:{e.lineno}") from None
        except RecursionError:
            raise ManifestError("nested too deeply", source=str(path)) from None
        documents = loaded if isinstance(loaded, list) else [loaded]
    else:
        documents = load_yaml_documents(text, str(path))
    items: list[Any] = []
    for doc in documents:
        listed = doc.get("items") if isinstance(doc, Mapping) else None
        items += listed if isinstance(listed, list) else [doc]
    stamped = []
    for i, item in enumerate(items):
        where = f"{path}: items[{i}]"
        if not isinstance(item, Mapping) or item.get("kind") not in (None, c.WORKLOAD):
            raise ManifestError(f"expected a Workload, got {describe(item.get('kind') if isinstance(item, Mapping) else item)}",
                                source=where)
        meta = item.get("metadata") or {}
        try:
            created = parse_time(str(meta.get("creationTimestamp")))
        except ValueError as e:
            raise ManifestError(f"metadata.creationTimestamp: {e}", source=where) from None
        spec = {k: v for k, v in (item.get("spec") or {}).items() if k != "active"}
        manifest = {"apiVersion": item.get("apiVersion", c.KUEUE_V1BETA2), "kind": c.WORKLOAD,
                    "metadata": {k: meta[k] for k in ("name", "namespace", "labels", "annotations") if k in meta},
                    "spec": spec}
        try:
            wl = load_object(manifest)
        except ManifestError as e:
            raise ManifestError(e.reason, path=e.path, obj=e.obj, source=where) from None
        assert isinstance(wl, Workload)
        stamped.append((created, i, wl))
    if not stamped:
        raise ManifestError("no Workloads", source=str(path))
    first = min(t for t, _, _ in stamped)
    arrivals = tuple(Arrival(t - first, workload=wl) for t, _, wl in sorted(stamped, key=lambda x: (x[0], x[1])))
    newest = trace_format.newest_time(items)
    return arrivals, (newest - first if newest is not None and newest - first > arrivals[-1].at else None)


def _autoscaler(value: Mapping[str, Any]) -> FrozenMap[str, ClassModel]:
    default = ClassModel()
    out: dict[str, ClassModel] = {}
    for class_name, body in value.items():
        m = body or {}
        capacity = m.get("capacity")
        ready, revocation = m.get("provisioningTime"), m.get("revocationTime")
        answer = default.provisioning_time if ready is None else _distribution(ready)
        provisioned, failed, stockouts = m.get("provisionedTime"), m.get("failedTime"), m.get("stockouts")
        booking = m.get("bookingTime")
        out[str(class_name)] = ClassModel(
            provisioning_time=answer,
            failure_probability=float(m.get("failureProbability") or 0.0),
            capacity=None if capacity is None else FrozenMap({str(k): quantity_value(v) for k, v in capacity.items()}),
            revocation_probability=float(m.get("revocationProbability") or 0.0),
            revocation_time=default.revocation_time if revocation is None else _distribution(revocation),
            provisioned_time=answer if provisioned is None else _distribution(provisioned),
            failed_time=answer if failed is None else _distribution(failed),
            stockouts=None if stockouts is None else Stockouts(_distribution(stockouts["available"]),
                                                               _distribution(stockouts["stockout"])),
            shortage=m.get("shortage"),
            booking_time=default.booking_time if booking is None else int(duration_seconds(booking)),
            booking_loss_probability=float(m.get("bookingLossProbability") or 0.0))
    return FrozenMap(out)
