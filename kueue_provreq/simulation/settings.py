"""``--set PATH=V1,V2,...``: values for a field of a simulation file, by path.

PATH is a dotted path into the simulation file; a key that holds dots (a provisioning class
name) goes in brackets, quoted or not (``autoscaler["check-capacity.autoscaling.x-k8s.io"]``),
and a list item is ``[N]``.  Three shorthands name a field of *every*
ProvisioningRequestConfig of the setup: ``retryStrategy.backoffLimitCount``,
``retryStrategy.backoffBaseSeconds`` and ``retryStrategy.backoffMaxSeconds``; and
``featureGates.NAME`` sets a Kueue feature gate on top of the simulation's configuration,
wherever that comes from (the file's, a file it names, ``--config``).  Each value is read as a
YAML scalar (``3``, ``0.25``, ``5m``, ``true``).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from kueue_provreq.api.config import DEFAULT_FEATURE_GATES
from kueue_provreq.errors import KueueProvreqError
from kueue_provreq.manifests import ManifestError
from kueue_provreq.manifests.yamlio import load_yaml_value

RETRY_STRATEGY_FIELDS = ("backoffLimitCount", "backoffBaseSeconds", "backoffMaxSeconds")
SHORTHANDS = tuple(f"retryStrategy.{f}" for f in RETRY_STRATEGY_FIELDS)
GATES = "featureGates."

_TOKEN = re.compile(r"""\[(?:"([^"]*)"|'([^']*)'|([^\]"']*))\]|([^.\[\]]+)""")


class SettingError(KueueProvreqError, ValueError):
    """A ``--set`` that cannot be read or applied; the message starts with the setting."""


@attrs.frozen
class Setting:
    """One ``--set``: the path as given, its keys (str) and list indexes (int), its values."""

    text: str
    keys: tuple[str | int, ...]
    values: tuple[Any, ...]

    @property
    def shorthand(self) -> str | None:
        """The retryStrategy field this setting names for every ProvisioningRequestConfig, or
        the feature gate it sets (:func:`gates`)."""
        return self.text.split(".", 1)[1] if self.text in SHORTHANDS or self.text.startswith(GATES) else None

    def field_path(self) -> str:
        """The path in the notation of error messages (brackets for keys with dots)."""
        return format_path(self.keys)


def format_path(keys: Sequence[str | int]) -> str:
    """``a.b[c.d][0].e``: how validation errors name a field."""
    out = ""
    for key in keys:
        if isinstance(key, int) or "." in key or not key:
            out += f"[{key}]"
        else:
            out += f".{key}" if out else key
    return out


def parse_keys(path: str) -> tuple[str | int, ...]:
    """The keys of a PATH.

    >>> parse_keys('autoscaler["check-capacity.autoscaling.x-k8s.io"].failureProbability')
    ('autoscaler', 'check-capacity.autoscaling.x-k8s.io', 'failureProbability')
    >>> parse_keys("workloads.templates[0].weight")
    ('workloads', 'templates', 0, 'weight')
    """
    keys: list[str | int] = []
    pos = 0
    while pos < len(path):
        if keys and path[pos] == ".":
            pos += 1
        m = _TOKEN.match(path, pos)
        if m is None or m.end() == pos:
            raise SettingError(f"--set {path}: cannot read the path at {path[pos:]!r} "
                               "(a.b.c, with [\"key.with.dots\"] or [N] for a list item)")
        bare, quoted = m.group(4), m.group(1) if m.group(1) is not None else m.group(2)
        if bare is not None:
            keys.append(bare)
        elif quoted is not None:
            keys.append(quoted)
        else:
            inner = m.group(3)
            keys.append(int(inner) if inner.isdigit() else inner)
        pos = m.end()
    if not keys:
        raise SettingError("--set: empty path")
    return tuple(keys)


def parse_setting(text: str) -> Setting:
    """``PATH=V1,V2,...``."""
    path, sep, raw = text.partition("=")
    path = path.strip()
    if not sep or not path:
        raise SettingError(f"--set {text}: expected PATH=V1,V2,...")
    if path.startswith("retryStrategy.") and path not in SHORTHANDS:
        raise SettingError(f"--set {path}: unknown retryStrategy field (known: {', '.join(SHORTHANDS)})")
    if path.startswith(GATES) and path[len(GATES):] not in DEFAULT_FEATURE_GATES:
        raise SettingError(f"--set {path}: unknown feature gate (known: {', '.join(DEFAULT_FEATURE_GATES)})")
    values = []
    for item in raw.split(","):
        try:
            value = load_yaml_value(item, f"--set {path}") if item.strip() else None
        except ManifestError:
            value = item.strip()
        if value is None or isinstance(value, (dict, list)):
            shown = repr(item.strip()) if item.strip() else "an empty item"
            raise SettingError(f"--set {path}: {shown} is not a value "
                               "(values are numbers, strings, durations or booleans, comma-separated)")
        values.append(value)
    if path.startswith(GATES) and not all(isinstance(v, bool) for v in values):
        raise SettingError(f"--set {path}: a feature gate is true or false")
    return Setting(path, parse_keys(path), tuple(values))


def apply(document: Mapping[str, Any], assignments: Sequence[tuple[Setting, Any]]) -> dict[str, Any]:
    """A copy of ``document`` with each (setting, value) written at its path (shorthands
    excepted: they apply to the setup's ProvisioningRequestConfigs or the configuration, see
    :func:`shorthands` and :func:`gates`).
    Mappings missing on the way are created; a list item must exist."""
    copied: Any = copy.deepcopy(document)  # a mapping read from YAML keeps its lines
    out: dict[str, Any] = copied if isinstance(copied, dict) else dict(copied)
    for setting, value in assignments:
        if setting.shorthand is not None:
            continue
        node: Any = out
        for depth, key in enumerate(setting.keys):
            where = format_path(setting.keys[:depth]) or "the file"
            given = f"--set {setting.text}={value}"
            last = depth == len(setting.keys) - 1
            if isinstance(node, dict) and isinstance(key, str):
                if last:
                    node[key] = value
                else:
                    if node.get(key) is None:
                        node[key] = {}
                    node = node[key]
            elif isinstance(node, list) and isinstance(key, int):
                if key >= len(node):
                    raise SettingError(f"{given}: {where} has {len(node)} items, no [{key}]")
                if last:
                    node[key] = value
                else:
                    node = node[key]
            else:
                what = "a list" if isinstance(node, list) else "a mapping" if isinstance(node, dict) else \
                    f"the value {node!r}"
                asked = f"[{key}]" if isinstance(key, int) else f"key {key!r}"
                raise SettingError(f"{given}: {where} is {what}, it has no {asked}")
    return out


def first_created(document: Mapping[str, Any], setting: Setting) -> str | None:
    """The path of the first mapping key ``setting`` adds to ``document`` (:func:`apply` creates
    what is missing on the way), or None when every key but the last is there: an error about
    that key (a misspelt field) is the setting's, not the file's."""
    node: Any = document
    for depth, key in enumerate(setting.keys[:-1]):
        if isinstance(node, Mapping) and isinstance(key, str):
            if node.get(key) is None:
                return format_path(setting.keys[:depth + 1])
            node = node[key]
        elif isinstance(node, list) and isinstance(key, int) and key < len(node):
            node = node[key]
        else:
            return None
    return None


def shorthands(assignments: Sequence[tuple[Setting, Any]]) -> dict[str, Any]:
    """The retryStrategy fields the assignments set for every ProvisioningRequestConfig."""
    return {s.shorthand: v for s, v in assignments if s.shorthand is not None and s.text in SHORTHANDS}


def gates(assignments: Sequence[tuple[Setting, Any]]) -> dict[str, bool]:
    """The feature gates the assignments set (``featureGates.NAME``)."""
    return {s.shorthand: bool(v) for s, v in assignments if s.shorthand is not None and s.text.startswith(GATES)}
