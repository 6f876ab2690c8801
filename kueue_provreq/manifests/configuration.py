"""Kueue's manager Configuration (``config.kueue.x-k8s.io`` v1beta2 and v1beta1) -> the model.

Kueue reads its configuration file with a strict decoder, so an unknown field stops the
manager; so does it here.  The sections the model uses (``waitForPodsReady``,
``featureGates``, ``manageJobsWithoutQueueName``, ``integrations``) are checked field by field,
with the manager's own validation (``pkg/config/validation.go``); the other top-level sections
are known by name and kept, their contents unchecked.

``integrations.frameworks`` names the job integrations Kueue runs.  Absent from a Kueue file, it
is Kueue's default, ``batch/job`` alone; absent from a scenario's ``config`` fragment, it is the
model's default (every integration the model has, see :mod:`kueue_provreq.api.config`).

A file may hold the Configuration itself or, as Kueue's install manifests ship it, the
``kueue-manager-config`` ConfigMap with the Configuration under
``data["controller_manager_config.yaml"]``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from kueue_provreq.api import constants as c
from kueue_provreq.api.config import DEFAULT_FEATURE_GATES, Configuration, WaitForPodsReady, parse_semantics
from kueue_provreq.api.evolve import evolve
from kueue_provreq.manifests.codec import decode, describe, parse_duration
from kueue_provreq.manifests.errors import ManifestError, ManifestErrors
from kueue_provreq.manifests.nodes import ANY, Arr, Bool, Duration, Int, Obj, Problems, Str, join
from kueue_provreq.manifests.yamlio import load_file, load_yaml_documents, locate

CONFIG_V1BETA1: Final = "config.kueue.x-k8s.io/v1beta1"
CONFIG_MAP_KEY: Final = "controller_manager_config.yaml"
"""The key of the Configuration in Kueue's ``kueue-manager-config`` ConfigMap."""

#: The field the scenario format adds to a Configuration: the semantics switches the model
#: follows (``api.config.SEMANTICS``), one name or a list of names; not a Kueue field, refused
#: in a Kueue file (the CLI takes ``--semantics`` beside ``--config`` instead).
SEMANTICS_FIELD: Final = "admissionCheckSemantics"

_TIMESTAMPS = (c.TIMESTAMP_EVICTION, c.TIMESTAMP_CREATION)
_DEFAULT_WAIT: Final = WaitForPodsReady()
_DURATION: Final = Duration(json_string=True)


def _requeuing_rules(strategy: Mapping[str, Any], path: str, out: Problems) -> None:
    for key in ("backoffLimitCount", "backoffBaseSeconds", "backoffMaxSeconds"):
        value = strategy.get(key)
        if isinstance(value, int) and value < 0:
            out.error("must be greater than or equal to 0", join(path, key))


def _wait_rules(wait: Mapping[str, Any], path: str, out: Problems) -> None:
    for key in ("timeout", "recoveryTimeout"):
        value = wait.get(key)
        if isinstance(value, str) and parse_duration(value) < 0:
            out.error("must be greater than or equal to 0", join(path, key))


def _schema(v1beta1: bool) -> Obj:
    wait: dict[str, Any] = {
        "timeout": _DURATION, "blockAdmission": Bool(), "recoveryTimeout": _DURATION,
        "requeuingStrategy": Obj({
            "timestamp": Str(enum=_TIMESTAMPS), "backoffLimitCount": Int(),
            "backoffBaseSeconds": Int(), "backoffMaxSeconds": Int(),
        }, rules=(_requeuing_rules,)),
    }
    if v1beta1:
        wait["enable"] = Bool()
    integrations: dict[str, Any] = {"frameworks": Arr(Str(enum=c.FRAMEWORKS), is_set=True), "externalFrameworks": Arr(Str()),
                                     "labelKeysToCopy": Arr(Str())}
    if v1beta1:
        integrations["podOptions"] = ANY
    sections = ("namespace", "managedJobsNamespaceSelector", "internalCertManagement",
                "clientConnection", "multiKueue", "fairSharing", "admissionFairSharing",
                "resources", "objectRetentionPolicies", "webhook", "leaderElection", "metrics", "health",
                "pprofBindAddress", "controller", "tls")
    extra = ("queueVisibility",) if v1beta1 else ("visibilityServer",)
    return Obj({
        "apiVersion": Str(), "kind": Str(), "manageJobsWithoutQueueName": Bool(),
        "waitForPodsReady": Obj(wait, rules=(_wait_rules,)), "featureGates": Obj(values=Bool()),
        "integrations": Obj(integrations),
        **{name: ANY for name in (*sections, *extra)},
    })


_SCHEMAS: Final = {c.CONFIG_V1BETA2: _schema(False), CONFIG_V1BETA1: _schema(True)}


def load_configuration(data: Mapping[str, Any] | None, *, scenario: bool = True) -> Configuration:
    """A Kueue Configuration (either version; v1beta2 when ``apiVersion`` is absent) with the
    manager's defaults.  ``scenario`` accepts :data:`SEMANTICS_FIELD` and fragments without
    ``apiVersion``, as scenario files write them.

    In v1beta2, an absent ``waitForPodsReady`` means enabled with its defaults (timeout 30m,
    blockAdmission false, recoveryTimeout = timeout); in v1beta1 it means disabled, and
    ``enable: true`` turns it on with blockAdmission defaulting to true.  Feature gates the
    library does not model are rejected rather than ignored.
    """
    try:
        return _load({} if data is None else data, scenario)
    except ManifestError as e:
        raise e.within(obj="Configuration", locate=lambda path: locate(data, path)) from None


def _load(data: Mapping[str, Any], scenario: bool) -> Configuration:
    if not isinstance(data, Mapping):
        raise ManifestError(f"expected an object, got {describe(data)}")
    body = {k: v for k, v in data.items() if not (scenario and k == SEMANTICS_FIELD)}
    api_version = body.get("apiVersion", c.CONFIG_V1BETA2 if scenario else None)
    if api_version not in _SCHEMAS:
        raise ManifestError(f"unsupported apiVersion {describe(api_version)} "
                            f"(supported: {', '.join(_SCHEMAS)})", path="apiVersion")
    if body.get("kind", "Configuration" if scenario else None) != "Configuration":
        raise ManifestError(f"expected kind Configuration, got {describe(body.get('kind'))}", path="kind")
    out = Problems()
    _SCHEMAS[api_version].check(body, "", out)
    problems = out.errors + [u.error() for u in out.unknown]
    if problems:
        raise ManifestErrors(problems)
    known = {"manageJobsWithoutQueueName", "waitForPodsReady", "featureGates"}
    wait = body.get("waitForPodsReady")
    if api_version == CONFIG_V1BETA1:
        if wait is None or not wait.get("enable"):
            wait = None
        else:
            if wait.get("timeout") is not None and parse_duration(wait["timeout"]) == 0:
                raise ManifestError("required value: must be specified", path="waitForPodsReady.timeout")
            wait = {k: v for k, v in wait.items() if k != "enable"}
            wait.setdefault("blockAdmission", True)
    elif wait is None:
        wait = {}
    model: dict[str, Any] = {k: v for k, v in body.items() if k in known and k != "waitForPodsReady"}
    config = decode(Configuration, model)
    if scenario and SEMANTICS_FIELD in data:
        config = evolve(config, semantics=_semantics(data[SEMANTICS_FIELD]))
    unknown = [name for name in config.feature_gates if name not in DEFAULT_FEATURE_GATES]
    if unknown:
        raise ManifestError(f"unknown feature gate {', '.join(unknown)} "
                            f"(known: {', '.join(DEFAULT_FEATURE_GATES)})", path="featureGates")
    config = evolve(config, feature_gates=DEFAULT_FEATURE_GATES.merged(config.feature_gates))
    frameworks = (body.get("integrations") or {}).get("frameworks")
    if frameworks:
        config = evolve(config, frameworks=tuple(frameworks))
    elif not scenario:
        config = evolve(config, frameworks=(c.FRAMEWORK_JOB,))
    if wait is None:
        return evolve(config, wait_for_pods_ready=None)
    waiting = decode(Configuration, {"waitForPodsReady": wait}).wait_for_pods_ready
    assert waiting is not None
    if not waiting.timeout:  # Go cannot tell 0s from absent: the default applies
        waiting = evolve(waiting, timeout=_DEFAULT_WAIT.timeout)
    if waiting.recovery_timeout is None:
        waiting = evolve(waiting, recovery_timeout=waiting.timeout)
    return evolve(config, wait_for_pods_ready=waiting)


def _semantics(value: Any) -> frozenset[str]:
    if not isinstance(value, (str, list)):
        raise ManifestError(f"expected a switch name or a list of them, got {describe(value)}",
                            path=SEMANTICS_FIELD)
    try:
        return parse_semantics(value)
    except ValueError as e:
        raise ManifestError(str(e), path=SEMANTICS_FIELD) from None


def load_configuration_file(path: str | Path, text: str | None = None) -> Configuration:
    """The Configuration in a Kueue config file: the Configuration document itself, or the
    ``kueue-manager-config`` ConfigMap that carries it.  ``text`` is the file's content when
    it was read already (standard input)."""
    source = str(path)
    docs = load_yaml_documents(text, source) if text is not None else load_file(path)
    found = [d for d in docs if d.get("kind") in ("Configuration", "ConfigMap")]
    if len(found) != 1:
        kinds = ", ".join(str(d.get("kind")) for d in docs) or "nothing"
        raise ManifestError(f"expected one Kueue Configuration (or the ConfigMap that holds it), "
                            f"found {kinds}", source=source)
    (doc,) = found
    if doc.get("kind") == "ConfigMap":
        data = doc.get("data")
        inner = data.get(CONFIG_MAP_KEY) if isinstance(data, Mapping) else None
        if not isinstance(inner, str):
            raise ManifestError(f"ConfigMap without data[{CONFIG_MAP_KEY}]",
                                source=locate(doc, "data") or source)
        inner_docs = load_yaml_documents(inner, f"{source}[{CONFIG_MAP_KEY}]")
        if len(inner_docs) != 1:
            raise ManifestError(f"expected one Configuration in data[{CONFIG_MAP_KEY}]", source=source)
        doc = inner_docs[0]
    return load_configuration(doc, scenario=False)
