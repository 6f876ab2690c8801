"""The simulation file: reading and validating it (``docs/simulation-file.rst`` documents it).

A simulation file is one YAML document.  :func:`load_document` reads it; :func:`parse` checks
every field and returns a :class:`Simulation`, the value :func:`~kueue_provreq.simulation.run.simulate`
runs.  Errors are :class:`~kueue_provreq.manifests.ManifestError`, one line naming the file and
line, the simulation and the field path, like every manifest error; manifests inside the file
(the setup, the templates) are read by :func:`kueue_provreq.manifests.load_object` itself.
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

from kueue_provreq.api import constants as c
from kueue_provreq.api.config import Configuration
from kueue_provreq.api.frozen import FrozenMap
from kueue_provreq.api.meta import Time
from kueue_provreq.api.objects import JOB_KINDS, JobObject, KubeObject
from kueue_provreq.api.quantity import QuantityError, parse_quantity
from kueue_provreq.api.workload import Workload
from kueue_provreq.controllers import job as jobs
from kueue_provreq.manifests import (
    ManifestError,
    load_configuration,
    load_configuration_file,
    load_file,
    load_object,
    load_yaml_documents,
)
from kueue_provreq.manifests.codec import describe, format_duration, parse_duration, parse_time
from kueue_provreq.manifests.yamlio import locate
from kueue_provreq.simulation.settings import RETRY_STRATEGY_FIELDS, format_path
from kueue_provreq.world import World

T = TypeVar("T")
Path_ = tuple[str | int, ...]

DEFAULT_START = "2024-01-01T00:00:00Z"
DEFAULT_HORIZON = 24 * 3600
DEFAULT_COUNT = 100
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
class ClassModel:
    """What Cluster Autoscaler does with requests of one provisioning class."""

    provisioning_time: Distribution = ZERO
    """From the request's creation to CA's answer (and from each retry to the next answer
    too, when a try found no capacity)."""
    failure_probability: float = 0.0
    """That a try finds no capacity (what follows depends on the class, see the docs)."""
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

    def template(self, name: str) -> Template:
        return next(t for t in self.templates if t.name == name)


# --- reading ----------------------------------------------------------------------------


@attrs.frozen
class Document:
    """A simulation file as read: its data and where relative paths in it start."""

    data: Mapping[str, Any]
    source: str
    base: Path


def load_document(path: str | Path) -> Document:
    """Read a simulation file (one YAML document)."""
    path = Path(path)
    if not path.is_file():
        raise ManifestError("no such file", source=str(path))
    documents = load_file(path)
    if len(documents) != 1:
        raise ManifestError(f"expected one simulation document, found {len(documents)}", source=str(path))
    return Document(documents[0], str(path), path.parent)


def _below(path: str, parent: str) -> bool:
    return path.startswith(parent + ".") or path.startswith(parent + "[")


class _Reader:
    """Field-by-field validation with errors naming the file, line and field path."""

    def __init__(self, document: Document, name: str, overridden: Mapping[str, str]) -> None:
        self.root = document.data
        self.document = document
        self.name = name
        self.overridden = overridden  # field path -> the --set that wrote it

    def error(self, path: Path_, reason: str) -> ManifestError:
        text = format_path(path)
        source = next((s for p, s in self.overridden.items() if text == p or _below(text, p)), None)
        return ManifestError(reason, path=text, obj=f"Simulation {self.name}",
                             source=source or locate(self.root, text))

    def mapping(self, value: Any, path: Path_, known: Sequence[str], required: Sequence[str] = ()) -> Mapping[str, Any]:
        if not isinstance(value, Mapping):
            raise self.error(path, f"expected a mapping, got {describe(value)}")
        for key in value:
            if key not in known:
                raise self.error((*path, str(key)), f"unknown field (known: {', '.join(known)})")
        for key in required:
            if value.get(key) is None:
                raise self.error((*path, key), "required value")
        return value

    def typed(self, value: Any, path: Path_, kind: type[T], what: str) -> T:
        if not isinstance(value, kind) or (kind in (int, float) and isinstance(value, bool)):
            raise self.error(path, f"expected {what}, got {describe(value)}")
        return value

    def number(self, value: Any, path: Path_, low: float, high: float = math.inf, open_low: bool = False) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise self.error(path, f"expected a number, got {describe(value)}")
        if value < low or value > high or (open_low and value == low):
            bound = f"greater than {low:g}" if open_low else f"at least {low:g}"
            raise self.error(path, f"must be {bound}" + (f" and at most {high:g}" if high != math.inf else ""))
        return float(value)

    def integer(self, value: Any, path: Path_, low: int) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(path, f"expected an integer, got {describe(value)}")
        if value < low:
            raise self.error(path, f"must be at least {low}")
        return value

    def duration(self, value: Any, path: Path_) -> float:
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            raise self.error(path, f"expected a duration like 90s or 5m, got {describe(value)}")
        try:
            seconds = parse_duration(value) if isinstance(value, str) else float(value)
        except ValueError as e:
            raise self.error(path, str(e)) from None
        if isinstance(value, int) and value != 0:
            raise self.error(path, f"a duration needs a unit: {value}s, {value}m or {value}h")
        if seconds < 0:
            raise self.error(path, "must not be negative")
        return seconds

    def distribution(self, value: Any, path: Path_) -> Distribution:
        if not isinstance(value, Mapping):
            return Distribution("fixed", self.duration(value, path))
        kinds = ("fixed", "uniform", "exponential", "lognormal")
        self.mapping(value, path, kinds)
        if len(value) != 1:
            raise self.error(path, f"expected exactly one of {', '.join(kinds)}")
        kind, body = next(iter(value.items()))
        where = (*path, kind)
        if kind == "fixed":
            return Distribution("fixed", self.duration(body, where))
        if kind == "uniform":
            self.mapping(body, where, ("min", "max"), ("min", "max"))
            low, high = self.duration(body["min"], (*where, "min")), self.duration(body["max"], (*where, "max"))
            if high < low:
                raise self.error((*where, "max"), "must not be less than min")
            return Distribution("uniform", low, high)
        if kind == "exponential":
            self.mapping(body, where, ("mean",), ("mean",))
            return Distribution("exponential", self.duration(body["mean"], (*where, "mean")))
        self.mapping(body, where, ("median", "sigma"), ("median", "sigma"))
        return Distribution("lognormal", self.duration(body["median"], (*where, "median")),
                            self.number(body["sigma"], (*where, "sigma"), 0.0))

    def file(self, value: Any, path: Path_) -> Path:
        text = self.typed(value, path, str, "a file path")
        found = self.document.base / text
        if not found.is_file():
            raise self.error(path, f"{found}: no such file")
        return found


_TOP = ("name", "description", "seed", "start", "horizon", "configuration", "setup", "workloads", "jobs",
        "autoscaler")


def parse(document: Document, *, config: Configuration | None = None, count: int | None = None,
          seed: int | None = None, retry_strategy: Mapping[str, Any] | None = None,
          overridden: Mapping[str, str] | None = None) -> Simulation:
    """Validate a simulation file.  ``config`` (``--config``), ``count`` (``--workloads``) and
    ``seed`` (``--seed``) override the file; ``retry_strategy`` sets fields of every
    ProvisioningRequestConfig of the setup; ``overridden`` maps field paths to the ``--set``
    that wrote them, for error messages."""
    data = document.data
    given = data.get("name") if isinstance(data, Mapping) else None
    name = given if isinstance(given, str) and given else Path(document.source).stem
    r = _Reader(document, name, overridden or {})
    r.mapping(data, (), _TOP, ("workloads",))
    description = r.typed(data.get("description", ""), ("description",), str, "a string")
    file_seed = r.integer(data.get("seed", 0), ("seed",), 0)
    start_text = r.typed(data.get("start", DEFAULT_START), ("start",), str, "an RFC 3339 time")
    try:
        start = Time(parse_time(start_text))
    except ValueError as e:
        raise r.error(("start",), str(e)) from None
    horizon = r.duration(data.get("horizon", format_duration(DEFAULT_HORIZON)), ("horizon",))
    if config is None:
        config = _configuration(r, data.get("configuration"))
    setup = _setup(r, data.get("setup", {}), retry_strategy or {}, overridden or {})
    jobs = _job_model(r, data.get("jobs", {}), ("jobs",), JobModel())
    w = r.mapping(data["workloads"], ("workloads",), ("count", "arrival", "templates", "trace"))
    templates = _templates(r, w.get("templates", []), jobs, config, World(setup))
    trace = _trace(r, w.get("trace"), {t.name for t in templates})
    if not templates and not trace:
        raise r.error(("workloads",), "needs templates or a trace")
    process, rate = _arrival(r, w.get("arrival"), trace)
    if count is None:
        count = r.integer(w["count"], ("workloads", "count"), 1) if "count" in w else \
            len(trace) if trace else DEFAULT_COUNT
    elif count < 1:
        raise ManifestError("must be at least 1", path="--workloads")
    autoscaler = _autoscaler(r, data.get("autoscaler", {}))
    return Simulation(name=name, source=document.source, seed=file_seed if seed is None else seed, start=start,
                      horizon=int(horizon), setup=setup, config=config, count=count, templates=templates,
                      process=process, rate_per_hour=rate, trace=trace, jobs=jobs, autoscaler=autoscaler,
                      description=description)


def _configuration(r: _Reader, value: Any) -> Configuration:
    if value is None:
        return Configuration()
    if isinstance(value, str):
        return load_configuration_file(r.file(value, ("configuration",)))
    if not isinstance(value, Mapping):
        raise r.error(("configuration",), f"expected a file path or a Configuration, got {describe(value)}")
    return load_configuration(value, scenario=False)


def _setup(r: _Reader, value: Any, retry_strategy: Mapping[str, Any],
           overridden: Mapping[str, str]) -> tuple[KubeObject, ...]:
    s = r.mapping(value, ("setup",), ("files", "manifests"))
    documents: list[Mapping[str, Any]] = []
    files = r.typed(s.get("files", []), ("setup", "files"), list, "a list of file paths")
    for i, item in enumerate(files):
        documents += load_file(r.file(item, ("setup", "files", i)))
    manifests = r.typed(s.get("manifests", []), ("setup", "manifests"), list, "a list of manifests")
    documents += manifests
    objects = []
    for doc in documents:
        if isinstance(doc, Mapping) and doc.get("kind") == c.PROVISIONING_REQUEST_CONFIG and retry_strategy:
            try:
                obj = load_object(_with_retry_strategy(doc, retry_strategy))
            except ManifestError as e:
                field = e.path.rsplit(".", 1)[-1]
                setting = overridden.get(f"retryStrategy.{field}") if e.path.startswith("spec.retryStrategy.") \
                    else None
                raise ManifestError(e.reason, path=e.path, obj=e.obj, source=setting or e.source) from None
            objects.append(obj)
            continue
        obj = load_object(doc)
        if isinstance(obj, Workload) or obj.KIND in JOB_KINDS:
            raise ManifestError("workloads go under workloads.templates or workloads.trace, not in the setup",
                                obj=f"{obj.KIND} {obj.metadata.namespace}/{obj.metadata.name}",
                                source=locate(doc, "kind"))
        objects.append(obj)
    if not objects:
        raise r.error(("setup",), "no objects: the setup holds the queues, checks and configs workloads use")
    return tuple(objects)


def _with_retry_strategy(doc: Mapping[str, Any], fields: Mapping[str, Any]) -> Mapping[str, Any]:
    """The ProvisioningRequestConfig manifest with the ``--set retryStrategy.*`` fields."""
    out = dict(doc)
    spec = dict(out.get("spec") or {})
    strategy = dict(spec.get("retryStrategy") or {})
    strategy.update({k: v for k, v in fields.items() if k in RETRY_STRATEGY_FIELDS})
    spec["retryStrategy"] = strategy
    out["spec"] = spec
    return out


def _job_model(r: _Reader, value: Any, path: Path_, default: JobModel) -> JobModel:
    m = r.mapping(value, path, ("podsReadyTime", "runningTime"))
    ready = r.distribution(m["podsReadyTime"], (*path, "podsReadyTime")) if "podsReadyTime" in m \
        else default.pods_ready_time
    running = r.distribution(m["runningTime"], (*path, "runningTime")) if "runningTime" in m \
        else default.running_time
    return JobModel(ready, running)


def _templates(r: _Reader, value: Any, job_model: JobModel, config: Configuration,
               setup: World) -> tuple[Template, ...]:
    items = r.typed(value, ("workloads", "templates"), list, "a list of templates")
    out: list[Template] = []
    for i, item in enumerate(items):
        path: Path_ = ("workloads", "templates", i)
        t = r.mapping(item, path, ("name", "weight", "job", "workload", "podsReadyTime", "runningTime"), ("name",))
        name = r.typed(t["name"], (*path, "name"), str, "a string")
        if any(o.name == name for o in out):
            raise r.error((*path, "name"), f"duplicate template name {name!r}")
        weight = r.number(t.get("weight", 1), (*path, "weight"), 0.0, open_low=True)
        if ("job" in t) == ("workload" in t):
            raise r.error(path, "needs exactly one of job or workload")
        kind = "job" if "job" in t else "workload"
        obj = load_object(t[kind])
        is_job = obj.KIND in JOB_KINDS
        if not (is_job or isinstance(obj, Workload)) or (kind == "job") != is_job:
            wanted = "job (Job, JobSet, PyTorchJob)" if kind == "job" else "Workload"
            raise r.error((*path, kind), f"expected a {wanted}, got a {obj.KIND}")
        if is_job:
            # as Kueue's webhook creates it (the default LocalQueue), then whether Kueue manages it
            obj = jobs.defaulted(setup, obj, config)
            verdict = jobs.management(setup, obj, config)  # type: ignore[arg-type]
            if not verdict.managed:
                raise r.error((*path, kind), f"Kueue would not manage this {obj.KIND}: {verdict.why}")
        overrides = {k: t[k] for k in ("podsReadyTime", "runningTime") if k in t}
        template: Workload | JobObject = obj  # type: ignore[assignment]  # checked above: a Workload or a job
        out.append(Template(name, weight, template, _job_model(r, overrides, path, job_model)))
    return tuple(out)


def _trace(r: _Reader, value: Any, templates: set[str]) -> tuple[Arrival, ...]:
    if value is None:
        return ()
    path: Path_ = ("workloads", "trace")
    if isinstance(value, Mapping):
        r.mapping(value, path, ("file",), ("file",))
        return kubectl_trace(r.file(value["file"], (*path, "file")))
    items = r.typed(value, path, list, "a list of arrivals, or {file: PATH}")
    out = []
    for i, item in enumerate(items):
        a = r.mapping(item, (*path, i), ("at", "template"), ("at", "template"))
        name = r.typed(a["template"], (*path, i, "template"), str, "a template name")
        if name not in templates:
            raise r.error((*path, i, "template"), f"no template named {name!r}")
        out.append(Arrival(int(math.ceil(r.duration(a["at"], (*path, i, "at")))), template=name))
    return tuple(sorted(out, key=lambda x: x.at))


def kubectl_trace(path: Path) -> tuple[Arrival, ...]:
    """The arrivals of ``kubectl get workloads -A -o json`` (a List, or one Workload): each
    Workload arrives at its creationTimestamp, relative to the earliest, with its podSets,
    queue name, priority, labels and annotations; its status, owners and ``spec.active`` are
    left behind (a replay starts every workload afresh)."""
    text = path.read_text(encoding="utf-8")
    if text.lstrip()[:1] in ("{", "["):  # JSON, as kubectl writes it: read fast
        try:
            loaded = json.loads(text)
        except json.JSONDecodeError as e:
            raise ManifestError(e.msg, source=f"{path}:{e.lineno}") from None
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
    return tuple(Arrival(t - first, workload=wl) for t, _, wl in sorted(stamped, key=lambda x: (x[0], x[1])))


def _arrival(r: _Reader, value: Any, trace: tuple[Arrival, ...]) -> tuple[str, float]:
    path: Path_ = ("workloads", "arrival")
    if value is None:
        return ALL_AT_ONCE, 0.0
    if trace:
        raise r.error(path, "a trace sets the arrivals itself")
    a = r.mapping(value, path, ("process", "ratePerHour"), ("process",))
    process = a["process"]
    if process == ALL_AT_ONCE:
        if "ratePerHour" in a:
            raise r.error((*path, "ratePerHour"), "only for process Poisson")
        return ALL_AT_ONCE, 0.0
    if process != POISSON:
        raise r.error((*path, "process"), f"expected {ALL_AT_ONCE} or {POISSON}, got {describe(process)}")
    if "ratePerHour" not in a:
        raise r.error((*path, "ratePerHour"), "required value")
    return POISSON, r.number(a["ratePerHour"], (*path, "ratePerHour"), 0.0, open_low=True)


_CLASS_FIELDS = ("provisioningTime", "failureProbability", "capacity", "revocationProbability", "revocationTime")


def _autoscaler(r: _Reader, value: Any) -> FrozenMap[str, ClassModel]:
    classes = r.mapping(value, ("autoscaler",), list(value) if isinstance(value, Mapping) else ())
    out: dict[str, ClassModel] = {}
    for class_name, body in classes.items():
        path: Path_ = ("autoscaler", str(class_name))
        m = r.mapping(body if body is not None else {}, path, _CLASS_FIELDS)
        field: Callable[[str], Path_] = lambda key: (*path, key)  # noqa: E731
        capacity = None
        if m.get("capacity") is not None:
            caps = r.mapping(m["capacity"], field("capacity"), list(m["capacity"]) if isinstance(m["capacity"], Mapping)
                             else ())
            parsed = {}
            for resource, amount in caps.items():
                try:
                    parsed[str(resource)] = parse_quantity(amount)
                except QuantityError as e:
                    raise r.error((*field("capacity"), str(resource)), str(e)) from None
            capacity = FrozenMap(parsed)
        default = ClassModel()
        out[str(class_name)] = ClassModel(
            provisioning_time=r.distribution(m["provisioningTime"], field("provisioningTime"))
            if "provisioningTime" in m else default.provisioning_time,
            failure_probability=r.number(m.get("failureProbability", 0), field("failureProbability"), 0.0, 1.0),
            capacity=capacity,
            revocation_probability=r.number(m.get("revocationProbability", 0), field("revocationProbability"),
                                            0.0, 1.0),
            revocation_time=r.distribution(m["revocationTime"], field("revocationTime"))
            if "revocationTime" in m else default.revocation_time)
    return FrozenMap(out)
