"""Reading a scenario document into typed steps, refusing every key the runner does not know.

A scenario is described with the schema nodes manifests use (:mod:`kueue_provreq.manifests.nodes`
and :mod:`kueue_provreq.manifests.documents`): the whole document is checked before anything
runs, every problem at once, so a typo in step 9 fails the scenario at once instead of after
eight steps of work.  Each problem names the file and line, the scenario and the field path from
the document's root (``steps[8].expect.objectz``), with "did you mean" for an unknown key, as a
bad manifest's does; object manifests inside it are checked as the API server checks them.  A
new step kind is one node of :class:`_Schema` and one builder in :data:`_BUILDERS`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import attrs

from kueue_provreq.api import constants as c
from kueue_provreq.api.config import Configuration
from kueue_provreq.api.meta import TimeLike
from kueue_provreq.api.objects import JOB_KINDS, KINDS, Key, KubeObject
from kueue_provreq.api.workload import Admission
from kueue_provreq.engine import ALL_CONTROLLERS, SCHEDULER
from kueue_provreq.errors import KueueProvreqError
from kueue_provreq.manifests import ManifestError, codec, decode, load_configuration
from kueue_provreq.manifests.codec import describe
from kueue_provreq.manifests.documents import KueueConfiguration, Manifest, Model, check_document
from kueue_provreq.manifests.nodes import (
    ANY,
    Arr,
    Bool,
    Choice,
    DateTime,
    Duration,
    Int,
    Node,
    Num,
    Obj,
    Problems,
    Str,
    duration_seconds,
    join,
    unknown,
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
                "localQueue": "LocalQueue", "job": "Job", "jobSet": "JobSet", "pyTorchJob": "PyTorchJob"}
#: reconcile step: the keys each controller takes (the job reconciler takes its jobs too)
_RECONCILE_KEYS = {"provisioning": ("workload",), "workload": ("workload",),
                   "job": ("workload", "job", "jobSet", "pyTorchJob"), "scheduler": ("workload",),
                   "admissioncheck": ("admissionCheck",), "clusterqueue": ("clusterQueue",),
                   "localqueue": ("localQueue",)}

#: Special values an expectation may hold, each alone in its mapping.
SPECIAL_KEYS = ("$absent", "$present", "$after")


class ScenarioError(KueueProvreqError):
    """A scenario that reads well but cannot run as written: two objects of one name, a patch
    of a list element without its key, a special value the matcher does not know.  (A scenario
    that does not read is :class:`~kueue_provreq.manifests.ManifestErrors`, from
    :func:`parse_scenario`.)"""


# --- time -------------------------------------------------------------------------------


def format_time(seconds: float) -> str:
    """Epoch seconds as ``metav1.Time`` serialises them (whole seconds, UTC, ``Z``)."""
    return codec.format_time(math.floor(seconds))


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
class WorkloadOf:
    """``{$workloadOf: {kind, namespace, name}}`` where an object's name goes: the name of the
    Workload Kueue's job integration creates for that job (``<kind>-<name>-<hash>``, the hash of
    the job's uid, read when the step runs)."""

    kind: str
    namespace: str
    name: str


Name = str | WorkloadOf
"""An object's name in a step: as written, or the Workload of a job."""

WORKLOAD_OF = "$workloadOf"


@attrs.frozen
class Delete:
    KIND: ClassVar[str] = "delete"
    kind: str
    namespace: str
    name: Name


@attrs.frozen
class Patch:
    KIND: ClassVar[str] = "patch"
    kind: str
    namespace: str
    name: Name
    merge: Mapping[str, Any]
    api_version: str | None = None


@attrs.frozen
class Refused:
    """``expectRefusal: {apply: OBJECT | patch: {...}, message: TEXT}``: the write must be
    refused (by a webhook, a CEL rule, the schema) with a message containing TEXT, and change
    nothing.  The manifest of an ``apply`` is checked when the step runs, not before."""

    KIND: ClassVar[str] = "expectRefusal"
    message: str
    apply: Mapping[str, Any] | None = None
    patch: Patch | None = None


@attrs.frozen
class MetricExpectation:
    name: str
    labels: Mapping[str, str]
    value: float


@attrs.frozen
class Expect:
    KIND: ClassVar[str] = "expect"
    objects: tuple[Mapping[str, Any], ...] = ()
    """As written: a ``metadata.name`` may be a ``$workloadOf`` mapping."""
    absent: tuple[tuple[str, str, Name], ...] = ()
    count: Mapping[str, int] = attrs.field(factory=dict)
    events: tuple[Mapping[str, Any], ...] | None = None
    exact_events: bool = False
    metrics: tuple[MetricExpectation, ...] = ()


Step = Settle | Reconcile | Advance | Autoscaler | SetQuotaReservation | Apply | Delete | Patch | Refused | Expect


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


# --- the schema: what a scenario may say ------------------------------------------------------


class _NamespacedName(Str):
    """``NS/NAME``, or a bare ``NAME`` in the default namespace (as kubectl reads it)."""

    def __init__(self) -> None:
        super().__init__(min_length=1, pattern=re.compile(r"[^/]+(/[^/]+)?"), what="NAMESPACE/NAME or NAME")


class _ConditionStatus(Node):
    """``"True"``, ``"False"`` or ``"Unknown"``; an unquoted YAML boolean reads as the string."""

    def check(self, value: Any, path: str, out: Problems) -> None:
        if not isinstance(value, bool):
            _STATUS.check(value, path, out)


_STATUS = Str(enum=("True", "False", "Unknown"))


class _LabelValue(Node):
    """A Prometheus label value: a string, or a YAML number or boolean read as its text."""

    def check(self, value: Any, path: str, out: Problems) -> None:
        if not isinstance(value, (str, int, float)):
            out.error(f"expected a label value, got {describe(value)}", path)


def _cluster_scoped(value: Mapping[str, Any], path: str, out: Problems) -> None:
    """A reference to a cluster-scoped kind names no namespace."""
    if value.get("namespace") and not KINDS[value["kind"]].NAMESPACED:
        out.error(f"{value['kind']} is cluster-scoped", join(path, "namespace"))


def _reconcile_keys(value: Mapping[str, Any], path: str, out: Problems) -> None:
    """Each controller takes the key of the objects it reconciles (the scheduler: none)."""
    controller = value["controller"]
    wanted = _RECONCILE_KEYS[controller]
    given = [k for k in _OBJECT_KEYS if k in value]
    for k in given:
        if k not in wanted:
            takes = " or ".join(f'"{w}"' for w in wanted)
            out.error(f"the {controller} controller takes {takes}", join(path, k))
    if len(given) > 1:
        out.error(f"one of {', '.join(given)}, not several", path)
    if not given and controller != SCHEDULER:
        out.error("required value", join(path, wanted[0]))


def _one_write(value: Mapping[str, Any], path: str, out: Problems) -> None:
    """``expectRefusal`` names one write: an ``apply`` or a ``patch``."""
    given = [k for k in ("apply", "patch") if k in value]
    if len(given) != 1:
        out.error("one of apply, patch" if not given else "one of apply, patch, not both", path)


def _admission_given(value: Mapping[str, Any], path: str, out: Problems) -> None:
    """``admission`` must be written, and may be null (the reservation is removed)."""
    if "admission" not in value:
        out.error("required value (null removes the reservation)", join(path, "admission"))


def _special_values(value: Mapping[str, Any], path: str, out: Problems) -> None:
    """``$`` keys the matcher knows, each well formed and alone in its mapping (``$absent`` may
    stand beside the key of a list element)."""
    specials = [k for k in value if isinstance(k, str) and k.startswith("$")]
    for k in specials:
        if k not in SPECIAL_KEYS:
            out.add(unknown(k, SPECIAL_KEYS, join(path, k), "special value"))
        elif k == "$after":
            _AFTER.check(value[k], join(path, k), out)
        elif value[k] is not True:
            out.error(f"expected true, got {describe(value[k])}", join(path, k))
    keyed_element = set(value) - set(specials) <= {"type", "name"} and specials == ["$absent"]
    if specials and len(value) > 1 and not keyed_element:
        out.error(f"{specials[0]} stands alone in its mapping", path)
    for k, v in value.items():
        _walk_special_values(v, join(path, str(k)), out)


def _walk_special_values(value: Any, path: str, out: Problems) -> None:
    if isinstance(value, Mapping):
        if WORKLOAD_OF in value and path.endswith(".metadata.name"):
            return  # a name, checked by its node
        _special_values(value, path, out)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _walk_special_values(v, f"{path}[{i}]", out)


_AFTER = Duration()


class _Name(Node):
    """An object's name: a non-empty string, or ``{$workloadOf: {kind, namespace, name}}``
    naming a job (Job, JobSet, PyTorchJob)."""

    _TEXT = Str(min_length=1)
    _JOB = Obj({WORKLOAD_OF: Obj({"kind": Str(enum=JOB_KINDS), "namespace": Str(), "name": Str(min_length=1)},
                                 required=("kind", "name"))}, required=(WORKLOAD_OF,))

    def check(self, value: Any, path: str, out: Problems) -> None:
        (self._JOB if isinstance(value, Mapping) else self._TEXT).check(value, path, out)


class _Schema:
    """The nodes of one scenario; the manifests in it are checked as its semantics switches say."""

    def __init__(self, semantics: frozenset[str]) -> None:
        kind = Str(enum=tuple(KINDS))
        name = Str(min_length=1)
        ref = Obj({"kind": kind, "name": _Name(), "namespace": Str()}, required=("kind", "name"),
                  rules=(_cluster_scoped,))
        patch = Obj({"kind": kind, "name": _Name(), "namespace": Str(), "merge": Obj(), "apiVersion": Str()},
                    required=("kind", "name", "merge"), rules=(_cluster_scoped,))
        self.manifests = Manifest(semantics)
        self.steps = Choice({
            "settle": Obj({"controllers": Arr(Str(enum=ALL_CONTROLLERS))}),
            "reconcile": Obj({"controller": Str(enum=tuple(_RECONCILE_KEYS)),
                              **{k: _NamespacedName() if KINDS[kind_].NAMESPACED else name
                                 for k, kind_ in _OBJECT_KEYS.items()},
                              "expectError": Str(), "expectRequeueAfter": Duration()},
                             required=("controller",), rules=(_reconcile_keys,)),
            "advance": Duration(minimum=0),
            "autoscaler": Obj({"request": Str(), "namespace": Str(), "condition": Str(),
                               "status": _ConditionStatus(), "reason": Str(), "message": Str(),
                               "details": Obj(values=Str())}, required=("request", "condition", "status")),
            "setQuotaReservation": Obj({"workload": _NamespacedName(), "admission": Model(Admission)},
                                       required=("workload",), rules=(_admission_given,)),
            "apply": self.manifests,
            "delete": ref,
            "patch": patch,
            "expectRefusal": Obj({"apply": Obj(closed=False), "patch": patch, "message": Str(min_length=1)},
                                 required=("message",), rules=(_one_write,)),
            "expect": Obj({
                "objects": Arr(Obj({"kind": kind, "metadata": Obj({"name": _Name()}, required=("name",),
                                                                  closed=False)},
                                   required=("kind", "metadata"), closed=False, rules=(_special_values,))),
                "absent": Arr(ref),
                "count": Obj({k: Int(minimum=0, bits=64) for k in KINDS}),
                "events": Arr(Obj({"type": ANY, "reason": ANY, "message": ANY,
                                   "object": Obj({"kind": ANY, "namespace": ANY, "name": ANY})},
                                  rules=(_special_values,))),
                "exactEvents": Bool(),
                "metrics": Arr(Obj({"name": Str(), "value": Num(), "labels": Obj(values=_LabelValue())},
                                   required=("name", "value"))),
            }),
        }, what="step kind")
        self.root = Obj({
            "name": name, "description": Str(), "clock": DateTime(), "config": KueueConfiguration(),
            "faults": Arr(Obj({"verb": Str(enum=tuple(FAULT_VERBS)), "kind": kind, "error": Str(),
                               "cached": Bool(), "name": Str()}, required=("verb", "kind", "error"))),
            "objects": Arr(self.manifests),
            "steps": Arr(self.steps),
        }, required=("name", "steps"), rules=(_clock_within_rfc3339,))


def _clock_within_rfc3339(value: Mapping[str, Any], path: str, out: Problems) -> None:
    """The clock stays within RFC 3339's years through every ``advance``, so that every time
    the run writes can be read back."""
    clock = codec.parse_time(value.get("clock") or DEFAULT_CLOCK)
    for i, step in enumerate(value["steps"]):
        if isinstance(step, Mapping) and step.get("advance") is not None:
            clock += int(duration_seconds(step["advance"]))
            if clock > codec.MAX_TIME:
                out.error(f"the clock passes {codec.format_time(codec.MAX_TIME)}, the last time RFC 3339 "
                          "can write", join(path, f"steps[{i}].advance"))
                return


# --- reading ------------------------------------------------------------------------------------


def scenario_name(data: object) -> str | None:
    """The scenario's name, or None when it has none (it is then reported by its file)."""
    if isinstance(data, dict):
        name = data.get("name")
        if isinstance(name, str) and name:
            return name
    return None


def _semantics(data: Any) -> frozenset[str]:
    """The semantics switches the scenario's manifests are checked under (none when its
    ``config`` cannot be read: the check of ``config`` then reports why)."""
    try:
        return load_configuration(data.get("config") if isinstance(data, Mapping) else None).semantics
    except ManifestError:
        return frozenset()


def parse_scenario(data: object, source: str) -> Scenario:
    """Check and decode one scenario document.  Every problem is raised at once as
    :class:`~kueue_provreq.manifests.ManifestErrors`, each naming the file and line (when the
    document was read from YAML), ``Scenario <name>`` and the field path."""
    schema = _Schema(_semantics(data))
    check_document(schema.root, data, obj=f"Scenario {scenario_name(data) or source}")
    assert isinstance(data, Mapping)  # the schema checked it
    config = load_configuration(data.get("config"))
    return Scenario(
        name=data["name"], source=source, clock=float(codec.parse_time(data.get("clock") or DEFAULT_CLOCK)),
        config=config, faults=tuple(_fault(f) for f in data.get("faults") or ()),
        objects=tuple(schema.manifests.object(o) for o in data.get("objects") or ()),
        steps=tuple(_step(schema, s) for s in data["steps"]), description=data.get("description") or "",
        config_document=data.get("config"))


def step_number(error: ManifestError) -> int | None:
    """The 1-based step a problem of a scenario is in, or None for the header."""
    m = re.match(r"steps\[(\d+)\]", error.path)
    return int(m.group(1)) + 1 if m else None


def _fault(d: Mapping[str, Any]) -> Fault:
    return Fault(verb=FAULT_VERBS[d["verb"]], kind=d["kind"], error=d["error"], cached=d.get("cached", True),
                 name=d.get("name"))


def _step(schema: _Schema, data: Mapping[str, Any]) -> Step:
    ((kind, body),) = data.items()
    return _BUILDERS[kind](schema, body if body is not None else {})


def _settle(schema: _Schema, d: Any) -> Settle:
    controllers = d.get("controllers")
    return Settle() if controllers is None else Settle(tuple(controllers))


def _reconcile(schema: _Schema, d: Any) -> Reconcile:
    controller = d["controller"]
    given = next((k for k in _OBJECT_KEYS if k in d), None)
    key: Key
    if given is None:
        key = (SCHEDULER, "", "")
    elif KINDS[_OBJECT_KEYS[given]].NAMESPACED:
        key = (_OBJECT_KEYS[given], *namespaced_name(d[given]))
    else:
        key = (_OBJECT_KEYS[given], "", d[given])
    requeue = d.get("expectRequeueAfter")
    return Reconcile(controller, key, d.get("expectError"), None if requeue is None else duration_seconds(requeue))


def _advance(schema: _Schema, body: Any) -> Advance:
    return Advance(duration_seconds(body))


def _autoscaler(schema: _Schema, d: Any) -> Autoscaler:
    status = d["status"]
    return Autoscaler(request=d["request"], namespace=d.get("namespace"), condition=d["condition"],
                      status=("True" if status else "False") if isinstance(status, bool) else status,
                      reason=d.get("reason") or "", message=d.get("message") or "", details=d.get("details"))


def _set_quota_reservation(schema: _Schema, d: Any) -> SetQuotaReservation:
    ns, name = namespaced_name(d["workload"])
    raw = d["admission"]
    return SetQuotaReservation(ns, name, None if raw is None else decode(Admission, raw))


def _apply(schema: _Schema, body: Any) -> Apply:
    meta = body.get("metadata")
    return Apply(schema.manifests.object(body), has_status="status" in body,
                 has_generation=isinstance(meta, Mapping) and meta.get("generation") is not None)


def _delete(schema: _Schema, d: Any) -> Delete:
    return Delete(*object_ref(d))


def _patch(schema: _Schema, d: Any) -> Patch:
    return Patch(*object_ref(d), d["merge"], d.get("apiVersion"))


def _refused(schema: _Schema, d: Any) -> Refused:
    return Refused(d["message"], apply=d.get("apply"), patch=_patch(schema, d["patch"]) if "patch" in d else None)


def _expect(schema: _Schema, d: Any) -> Expect:
    events = d.get("events")
    exact = d.get("exactEvents", False)
    return Expect(
        objects=tuple(d.get("objects") or ()),
        absent=tuple(object_ref(a) for a in d.get("absent") or ()),
        count={kind: n for kind, n in (d.get("count") or {}).items() if n is not None},
        events=None if events is None and not exact else tuple(events or ()),
        exact_events=exact,
        metrics=tuple(MetricExpectation(m["name"], {str(k): _label(v) for k, v in (m.get("labels") or {}).items()},
                                        float(m["value"])) for m in d.get("metrics") or ()))


_BUILDERS: dict[str, Callable[[_Schema, Any], Step]] = {
    "settle": _settle, "reconcile": _reconcile, "advance": _advance, "autoscaler": _autoscaler,
    "setQuotaReservation": _set_quota_reservation, "apply": _apply, "delete": _delete,
    "patch": _patch, "expectRefusal": _refused, "expect": _expect,
}


def namespaced_name(text: str) -> tuple[str, str]:
    """``NS/NAME``; a bare ``NAME`` is in the default namespace, as kubectl reads it."""
    ns, sep, name = text.partition("/")
    return (ns, name) if sep else (DEFAULT_NAMESPACE, text)


def object_ref(d: Mapping[str, Any]) -> tuple[str, str, Name]:
    """``{kind, namespace, name}``: cluster-scoped kinds have no namespace, namespaced kinds
    default to ``default``; the name may be a job's Workload (:class:`WorkloadOf`)."""
    kind = d["kind"]
    name = object_name(d["name"])
    if not KINDS[kind].NAMESPACED:
        return kind, "", name
    return kind, d.get("namespace") or DEFAULT_NAMESPACE, name


def object_name(value: str | Mapping[str, Any]) -> Name:
    """A name as written: text, or ``{$workloadOf: {kind, namespace, name}}``."""
    if isinstance(value, str):
        return value
    job = value[WORKLOAD_OF]
    return WorkloadOf(job["kind"], job.get("namespace") or DEFAULT_NAMESPACE, job["name"])


def _label(value: Any) -> str:
    """Label values are strings; a YAML number or boolean is read as its Prometheus text."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
