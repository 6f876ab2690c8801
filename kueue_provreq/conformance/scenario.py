"""Reading a scenario document into typed steps, refusing every key the runner does not know.

The whole document is checked before anything runs, so a typo in step 9 fails the scenario
at once, naming the key's path, instead of after eight steps of work.  Object manifests are
decoded here too (through :mod:`kueue_provreq.manifests`), so an invalid object is reported
the same way.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Union

import attrs

from kueue_provreq.api import constants as c
from kueue_provreq.api.config import Configuration
from kueue_provreq.api.meta import TimeLike
from kueue_provreq.api.objects import KINDS, Key, KubeObject
from kueue_provreq.api.workload import Admission
from kueue_provreq.engine import ALL_CONTROLLERS, SCHEDULER
from kueue_provreq.errors import KueueProvreqError
from kueue_provreq.manifests import (
    ManifestError,
    codec,
    decode,
    load_configuration,
    load_object,
    parse_duration,
)
from kueue_provreq.timestamps import to_time
from kueue_provreq.world import Fault

DEFAULT_CLOCK = "2024-01-01T00:00:00Z"
DEFAULT_NAMESPACE = c.DEFAULT_NAMESPACE
"""Where a namespaced object without a namespace lives, as ``kubectl`` puts it."""

#: Fault verbs and the client call each one makes fail.  The model has one write verb for a
#: change, so Kueue's status patches and server-side applies are faults on ``update``.
FAULT_VERBS = {"create": "create", "update": "update", "patch": "update", "apply": "update",
               "delete": "delete"}

#: reconcile step: the keys that name an object, and its kind
_OBJECT_KEYS = {"workload": "Workload", "admissionCheck": "AdmissionCheck", "clusterQueue": "ClusterQueue",
                "job": "Job", "jobSet": "JobSet", "pyTorchJob": "PyTorchJob"}
#: reconcile step: the keys each controller takes (the job reconciler takes its jobs too)
_RECONCILE_KEYS = {"provisioning": ("workload",), "workload": ("workload",),
                   "job": ("workload", "job", "jobSet", "pyTorchJob"), "scheduler": ("workload",),
                   "admissioncheck": ("admissionCheck",), "clusterqueue": ("clusterQueue",)}

#: Special values an expectation may hold, each alone in its mapping.
SPECIAL_KEYS = ("$absent", "$present", "$after")


class ScenarioError(KueueProvreqError):
    """A scenario the runner cannot run: an unknown key, a wrong type, a bad value.

    ``step`` is the 1-based step the problem is in, or None for the scenario's header.
    """

    def __init__(self, message: str, step: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.step = step

    def __str__(self) -> str:
        return f"step {self.step}: {self.message}" if self.step is not None else self.message


# --- time -------------------------------------------------------------------------------


def parse_time(value: object, path: str) -> float:
    """An RFC 3339 timestamp as epoch seconds (whole seconds, as ``metav1.Time`` keeps them)."""
    if not isinstance(value, str):
        raise ScenarioError(f"{path}: expected an RFC 3339 timestamp, got {_type(value)}")
    try:
        return float(codec.parse_time(value))
    except ValueError as e:
        raise ScenarioError(f"{path}: {e}") from None


def format_time(seconds: float) -> str:
    """Epoch seconds as ``metav1.Time`` serialises them (whole seconds, UTC, ``Z``)."""
    return codec.format_time(math.floor(seconds))


def duration(value: object, path: str) -> float:
    """A Go duration string (a bare ``0`` too, which Go accepts) as seconds."""
    if isinstance(value, int) and not isinstance(value, bool) and value == 0:
        return 0.0
    if not isinstance(value, str):
        raise ScenarioError(f"{path}: expected a duration such as 90s, got {_type(value)}")
    try:
        return parse_duration(value)
    except ValueError as e:
        raise ScenarioError(f"{path}: {e}") from None


# --- steps ------------------------------------------------------------------------------


@attrs.frozen
class Settle:
    KIND: ClassVar[str] = "settle"
    controllers: tuple[str, ...] = ALL_CONTROLLERS


@attrs.frozen
class Reconcile:
    KIND: ClassVar[str] = "reconcile"
    controller: str
    key: Key
    """(kind, namespace, name); ``("scheduler", "", "")`` for a whole scheduling cycle."""
    expect_error: str | None = None
    expect_requeue_after: float | None = None


@attrs.frozen
class Advance:
    KIND: ClassVar[str] = "advance"
    seconds: float


@attrs.frozen
class Autoscaler:
    KIND: ClassVar[str] = "autoscaler"
    request: str
    namespace: str | None
    condition: str
    status: str
    reason: str = ""
    message: str = ""
    details: Mapping[str, str] | None = None


@attrs.frozen
class SetQuotaReservation:
    KIND: ClassVar[str] = "setQuotaReservation"
    namespace: str
    name: str
    admission: Admission | None


@attrs.frozen
class Apply:
    KIND: ClassVar[str] = "apply"
    obj: KubeObject
    has_status: bool
    """Whether the manifest carries a status; without one, an existing object keeps its own."""
    has_generation: bool


@attrs.frozen
class Delete:
    KIND: ClassVar[str] = "delete"
    kind: str
    namespace: str
    name: str


@attrs.frozen
class Patch:
    KIND: ClassVar[str] = "patch"
    kind: str
    namespace: str
    name: str
    merge: Mapping[str, Any]
    api_version: str | None = None


@attrs.frozen
class MetricExpectation:
    name: str
    labels: Mapping[str, str]
    value: float


@attrs.frozen
class Expect:
    KIND: ClassVar[str] = "expect"
    objects: tuple[Mapping[str, Any], ...] = ()
    absent: tuple[Key, ...] = ()
    count: Mapping[str, int] = attrs.field(factory=dict)
    events: tuple[Mapping[str, Any], ...] | None = None
    exact_events: bool = False
    metrics: tuple[MetricExpectation, ...] = ()


Step = Union[Settle, Reconcile, Advance, Autoscaler, SetQuotaReservation, Apply, Delete, Patch, Expect]


def _clock(value: TimeLike) -> float:
    """A start time given in Python: seconds kept as they are (fractions too), RFC 3339 text and
    ``datetime`` read as the edges of the API read them."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return float(to_time(value))


@attrs.frozen
class Scenario:
    name: str
    source: str
    clock: float = attrs.field(converter=_clock)
    """The start time, epoch seconds (RFC 3339 text and ``datetime`` are accepted)."""
    config: Configuration
    faults: tuple[Fault, ...]
    objects: tuple[KubeObject, ...]
    steps: tuple[Step, ...]
    description: str = ""
    config_document: Mapping[str, Any] | None = None
    """``config`` as written (a Kueue Configuration fragment), for a driver that runs the real
    Kueue with it."""


# --- reading ----------------------------------------------------------------------------


def scenario_name(data: object) -> str | None:
    """The scenario's name, or None when it has none (it is then reported by its file)."""
    if isinstance(data, dict):
        name = data.get("name")
        if isinstance(name, str) and name:
            return name
    return None


def parse_scenario(data: object, source: str) -> Scenario:
    """Check and decode one scenario document; raises :class:`ScenarioError`."""
    d = _mapping(data, "scenario", required=("name", "steps"),
                 optional=("description", "clock", "config", "faults", "objects"))
    name = scenario_name(d)
    if name is None:
        raise ScenarioError(f'"name": expected a non-empty string, got {_type(d["name"])}')
    clock = parse_time(d.get("clock", DEFAULT_CLOCK), "clock")
    try:
        config = load_configuration(d.get("config"))
    except ManifestError as e:
        raise ScenarioError(f"config: {e}") from None
    faults = tuple(_fault(f, f"faults[{i}]") for i, f in enumerate(_list(d.get("faults"), "faults")))
    # the semantics switches decide which schema the manifests are checked against
    objects = tuple(_object(o, f"objects[{i}]", config.semantics)
                    for i, o in enumerate(_list(d.get("objects"), "objects")))
    steps = tuple(_step(s, i + 1, config.semantics) for i, s in enumerate(_list(d["steps"], "steps")))
    description = d.get("description") or ""
    if not isinstance(description, str):
        raise ScenarioError(f"description: expected a string, got {_type(description)}")
    raw_config = d.get("config")
    return Scenario(name=name, source=source, clock=clock, config=config, faults=faults,
                    objects=objects, steps=steps, description=description,
                    config_document=raw_config if isinstance(raw_config, Mapping) else None)


def _fault(data: object, path: str) -> Fault:
    d = _mapping(data, path, required=("verb", "kind", "error"), optional=("cached", "name"))
    verb = _str(d["verb"], f"{path}.verb")
    if verb not in FAULT_VERBS:
        raise ScenarioError(f"{path}.verb: {verb!r} is not one of {', '.join(FAULT_VERBS)}")
    name = d.get("name")
    return Fault(verb=FAULT_VERBS[verb], kind=_kind(d["kind"], f"{path}.kind"),
                 error=_str(d["error"], f"{path}.error"),
                 cached=_bool(d.get("cached", True), f"{path}.cached"),
                 name=None if name is None else _str(name, f"{path}.name"))


def _object(data: object, path: str, semantics: frozenset[str]) -> KubeObject:
    if not isinstance(data, dict):
        raise ScenarioError(f"{path}: expected an object manifest, got {_type(data)}")
    try:
        return load_object(data, semantics=semantics)
    except ManifestError as e:
        raise ScenarioError(f"{path}: {e}") from None


def _step(data: object, number: int, semantics: frozenset[str] = frozenset()) -> Step:
    if not isinstance(data, dict) or not data:
        raise ScenarioError(f"expected a mapping with one step kind, got {_type(data)}", number)
    if len(data) != 1:
        raise ScenarioError(f"a step has exactly one kind, got {', '.join(map(str, data))}", number)
    kind, body = next(iter(data.items()))
    parser = _STEP_PARSERS.get(kind) if isinstance(kind, str) else None
    if parser is None:
        raise ScenarioError(f'unknown key "{kind}" (step kinds: {", ".join(_STEP_PARSERS)})', number)
    try:
        if parser is _apply:  # the one step that carries a manifest, checked as the semantics say
            return _apply(body, kind, semantics)
        return parser(body, kind)
    except ScenarioError as e:
        raise ScenarioError(e.message, number) from None


def _settle(body: object, path: str) -> Settle:
    d = _mapping(body, path, optional=("controllers",))
    if "controllers" not in d:
        return Settle()
    names = [_str(n, f"{path}.controllers[{i}]") for i, n in enumerate(_list(d["controllers"], f"{path}.controllers"))]
    for i, n in enumerate(names):
        if n not in ALL_CONTROLLERS:
            raise ScenarioError(f"{path}.controllers[{i}]: unknown controller {n!r} "
                                f"(controllers: {', '.join(ALL_CONTROLLERS)})")
    return Settle(tuple(names))


def _reconcile(body: object, path: str) -> Reconcile:
    d = _mapping(body, path, required=("controller",),
                 optional=(*_OBJECT_KEYS, "expectError", "expectRequeueAfter"))
    controller = _str(d["controller"], f"{path}.controller")
    wanted = _RECONCILE_KEYS.get(controller)
    if wanted is None:
        raise ScenarioError(f"{path}.controller: unknown controller {controller!r} "
                            f"(controllers: {', '.join(ALL_CONTROLLERS)})")
    given = [k for k in _OBJECT_KEYS if k in d]
    for k in given:
        if k not in wanted:
            takes = " or ".join(f'"{w}"' for w in wanted)
            raise ScenarioError(f"{path}.{k}: the {controller} controller takes {takes}")
    if len(given) > 1:
        raise ScenarioError(f"{path}: one of {', '.join(given)}, not several")
    key: Key
    if given and KINDS[_OBJECT_KEYS[given[0]]].NAMESPACED:
        ns, name = namespaced_name(d[given[0]], f"{path}.{given[0]}")
        key = (_OBJECT_KEYS[given[0]], ns, name)
    elif given:
        key = (_OBJECT_KEYS[given[0]], "", _str(d[given[0]], f"{path}.{given[0]}"))
    elif controller == SCHEDULER:
        key = (SCHEDULER, "", "")
    else:
        raise ScenarioError(f'{path}: missing required key "{wanted[0]}"')
    expect_error = d.get("expectError")
    requeue = d.get("expectRequeueAfter")
    return Reconcile(controller, key,
                     None if expect_error is None else _str(expect_error, f"{path}.expectError"),
                     None if requeue is None else duration(requeue, f"{path}.expectRequeueAfter"))


def _advance(body: object, path: str) -> Advance:
    seconds = duration(body, path)
    if seconds < 0:
        raise ScenarioError(f"{path}: the clock only moves forward, got {body}")
    return Advance(seconds)


def _autoscaler(body: object, path: str) -> Autoscaler:
    d = _mapping(body, path, required=("request", "condition", "status"),
                 optional=("namespace", "reason", "message", "details"))
    details = d.get("details")
    if details is not None:
        details = _mapping(details, f"{path}.details")
        for k, v in details.items():
            _str(v, f"{path}.details.{k}")
    namespace = d.get("namespace")
    return Autoscaler(
        request=_str(d["request"], f"{path}.request"),
        namespace=None if namespace is None else _str(namespace, f"{path}.namespace"),
        condition=_str(d["condition"], f"{path}.condition"),
        status=condition_status(d["status"], f"{path}.status"),
        reason=_str(d.get("reason", ""), f"{path}.reason"),
        message=_str(d.get("message", ""), f"{path}.message"),
        details=details,
    )


def _set_quota_reservation(body: object, path: str) -> SetQuotaReservation:
    d = _mapping(body, path, required=("workload", "admission"))
    ns, name = namespaced_name(d["workload"], f"{path}.workload")
    raw = d["admission"]
    if raw is None:
        return SetQuotaReservation(ns, name, None)
    try:
        admission = decode(Admission, raw, f"{path}.admission")
    except ManifestError as e:
        raise ScenarioError(str(e)) from None
    return SetQuotaReservation(ns, name, admission)


def _apply(body: object, path: str, semantics: frozenset[str] = frozenset()) -> Apply:
    obj = _object(body, path, semantics)
    assert isinstance(body, dict)  # _object checked it
    meta = body.get("metadata")
    return Apply(obj, has_status="status" in body,
                 has_generation=isinstance(meta, dict) and meta.get("generation") is not None)


def _delete(body: object, path: str) -> Delete:
    kind, ns, name = object_ref(body, path)
    return Delete(kind, ns, name)


def _patch(body: object, path: str) -> Patch:
    d = _mapping(body, path, required=("kind", "name", "merge"), optional=("namespace", "apiVersion"))
    kind, ns, name = object_ref({k: d[k] for k in ("kind", "namespace", "name") if k in d}, path)
    api_version = d.get("apiVersion")
    return Patch(kind, ns, name, _mapping(d["merge"], f"{path}.merge"),
                 None if api_version is None else _str(api_version, f"{path}.apiVersion"))


def _expect(body: object, path: str) -> Expect:
    d = _mapping(body, path, optional=("objects", "absent", "count", "events", "exactEvents", "metrics"))
    objects = []
    for i, o in enumerate(_list(d.get("objects"), f"{path}.objects")):
        p = f"{path}.objects[{i}]"
        o = _mapping(o, p)
        _kind(o.get("kind"), f"{p}.kind")
        meta = _mapping(o.get("metadata"), f"{p}.metadata")
        _str(meta.get("name"), f"{p}.metadata.name")
        check_special_values(o, p)
        objects.append(o)
    absent = tuple(object_ref(a, f"{path}.absent[{i}]") for i, a in enumerate(_list(d.get("absent"), f"{path}.absent")))
    count = {}
    for kind, n in _mapping(d.get("count") or {}, f"{path}.count").items():
        _kind(kind, f"{path}.count.{kind}")
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise ScenarioError(f"{path}.count.{kind}: expected a whole number, got {n!r}")
        count[kind] = n
    events = None
    if "events" in d:
        events = []
        for i, e in enumerate(_list(d["events"], f"{path}.events")):
            p = f"{path}.events[{i}]"
            e = _mapping(e, p, optional=("type", "reason", "message", "object"))
            if "object" in e:
                _mapping(e["object"], f"{p}.object", optional=("kind", "namespace", "name"))
            check_special_values(e, p)
            events.append(e)
    exact = _bool(d.get("exactEvents", False), f"{path}.exactEvents")
    metrics = []
    for i, m in enumerate(_list(d.get("metrics"), f"{path}.metrics")):
        p = f"{path}.metrics[{i}]"
        m = _mapping(m, p, required=("name", "value"), optional=("labels",))
        value = m["value"]
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise ScenarioError(f"{p}.value: expected a number, got {_type(value)}")
        labels = _mapping(m.get("labels") or {}, f"{p}.labels")
        metrics.append(MetricExpectation(_str(m["name"], f"{p}.name"),
                                         {str(k): _label(v, f"{p}.labels.{k}") for k, v in labels.items()},
                                         float(value)))
    return Expect(tuple(objects), absent, count, None if events is None and not exact else tuple(events or ()),
                  exact, tuple(metrics))


_STEP_PARSERS: dict[str, Callable[[object, str], Step]] = {
    "settle": _settle, "reconcile": _reconcile, "advance": _advance, "autoscaler": _autoscaler,
    "setQuotaReservation": _set_quota_reservation, "apply": _apply, "delete": _delete,
    "patch": _patch, "expect": _expect,
}


# --- shared readers -------------------------------------------------------------------


def namespaced_name(value: object, path: str) -> tuple[str, str]:
    """``NS/NAME``; a bare ``NAME`` is in the default namespace, as kubectl reads it."""
    text = _str(value, path)
    ns, sep, name = text.partition("/")
    if not sep:
        return DEFAULT_NAMESPACE, text
    if not ns or not name or "/" in name:
        raise ScenarioError(f"{path}: expected NAMESPACE/NAME, got {text!r}")
    return ns, name


def object_ref(value: object, path: str) -> Key:
    """``{kind, namespace, name}``: cluster-scoped kinds have no namespace, namespaced kinds
    default to ``default``."""
    d = _mapping(value, path, required=("kind", "name"), optional=("namespace",))
    kind = _kind(d["kind"], f"{path}.kind")
    name = _str(d["name"], f"{path}.name")
    ns = d.get("namespace")
    if not KINDS[kind].NAMESPACED:
        if ns:
            raise ScenarioError(f"{path}.namespace: {kind} is cluster-scoped")
        return kind, "", name
    return kind, DEFAULT_NAMESPACE if ns is None else _str(ns, f"{path}.namespace"), name


def condition_status(value: object, path: str) -> str:
    """``"True"``/``"False"``/``"Unknown"``; an unquoted YAML boolean reads as the string."""
    if isinstance(value, bool):
        return "True" if value else "False"
    text = _str(value, path)
    if text not in ("True", "False", "Unknown"):
        raise ScenarioError(f'{path}: expected "True", "False" or "Unknown", got {text!r}')
    return text


def check_special_values(value: object, path: str) -> None:
    """Refuse ``$`` keys the matcher does not know, and special values that are misformed."""
    if isinstance(value, dict):
        specials = [k for k in value if isinstance(k, str) and k.startswith("$")]
        for k in specials:
            if k not in SPECIAL_KEYS:
                raise ScenarioError(f'unknown key "{path}.{k}" (special values: {", ".join(SPECIAL_KEYS)})')
            if k == "$after":
                duration(value[k], f"{path}.{k}")
            elif value[k] is not True:
                raise ScenarioError(f"{path}.{k}: expected true, got {value[k]!r}")
        keyed_element = set(value) - set(specials) <= {"type", "name"} and specials == ["$absent"]
        if specials and len(value) > 1 and not keyed_element:
            raise ScenarioError(f"{path}: {specials[0]} stands alone in its mapping")
        for k, v in value.items():
            check_special_values(v, f"{path}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            check_special_values(v, f"{path}[{i}]")


def _mapping(value: object, path: str, required: tuple[str, ...] = (),
             optional: tuple[str, ...] = ()) -> dict[str, Any]:
    """A mapping with exactly the allowed keys (``None`` reads as empty: YAML's bare ``settle:``)."""
    if value is None:
        value = {}
    if not isinstance(value, dict):
        raise ScenarioError(f"{path}: expected a mapping, got {_type(value)}")
    if required or optional:
        allowed = set(required) | set(optional)
        for k in value:
            if k not in allowed:
                raise ScenarioError(f'unknown key "{path}.{k}"' if path != "scenario" else f'unknown key "{k}"')
        for k in required:
            if k not in value:
                where = f"{path}: " if path != "scenario" else ""
                raise ScenarioError(f'{where}missing required key "{k}"')
    return value


def _list(value: object, path: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ScenarioError(f"{path}: expected a list, got {_type(value)}")
    return value


def _str(value: object, path: str) -> str:
    if not isinstance(value, str):
        raise ScenarioError(f"{path}: expected a string, got {_type(value)}")
    return value


def _bool(value: object, path: str) -> bool:
    if not isinstance(value, bool):
        raise ScenarioError(f"{path}: expected true or false, got {_type(value)}")
    return value


def _kind(value: object, path: str) -> str:
    kind = _str(value, path)
    if kind not in KINDS:
        raise ScenarioError(f"{path}: unknown kind {kind!r} (kinds: {', '.join(KINDS)})")
    return kind


def _label(value: object, path: str) -> str:
    """Label values are strings; a YAML number or boolean is read as its Prometheus text."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, str)):
        return str(value)
    raise ScenarioError(f"{path}: expected a label value, got {_type(value)}")


def _type(value: object) -> str:
    """How a wrong value is named in an error, in YAML's words."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return f"the string {value!r}"
    return f"{type(value).__name__} {value!r}"
