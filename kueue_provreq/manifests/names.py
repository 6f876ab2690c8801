"""Kubernetes name grammars (``k8s.io/apimachinery/pkg/util/validation``), reporting into
:class:`~kueue_provreq.manifests.nodes.Problems`."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from kueue_provreq.manifests.codec import describe
from kueue_provreq.manifests.nodes import Problems, Str

_DNS1123_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_LABEL: Final = re.compile(_DNS1123_LABEL)
DNS1123_SUBDOMAIN: Final = re.compile(rf"{_DNS1123_LABEL}(\.{_DNS1123_LABEL})*")
_QUALIFIED_NAME = r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
QUALIFIED_NAME: Final = re.compile(_QUALIFIED_NAME)
LABEL_VALUE: Final = re.compile(rf"({_QUALIFIED_NAME})?")
CONDITION_TYPE: Final = re.compile(rf"({_DNS1123_LABEL}(\.{_DNS1123_LABEL})*/)?{_QUALIFIED_NAME}")
CONDITION_REASON: Final = re.compile(r"[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?")
KIND_NAME: Final = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?", re.IGNORECASE)
_IANA_SVC_NAME: Final = re.compile(r"[-a-z0-9]+")

TOTAL_ANNOTATION_BYTES: Final = 256 * 1024
TAINT_EFFECTS: Final = ("NoSchedule", "PreferNoSchedule", "NoExecute")

SUBDOMAIN: Final = Str(max_length=253, pattern=DNS1123_SUBDOMAIN, what="a DNS-1123 subdomain "
                       "(lower case alphanumerics, '-' and '.')")
LABEL: Final = Str(max_length=63, pattern=DNS1123_LABEL, what="a DNS-1123 label "
                   "(lower case alphanumerics and '-')")


def check_label(name: Any, path: str, out: Problems) -> None:
    if isinstance(name, str) and name:
        LABEL.check(name, path, out)


def check_subdomain(name: Any, path: str, out: Problems) -> None:
    if isinstance(name, str) and name:
        SUBDOMAIN.check(name, path, out)


def is_qualified_name(key: str) -> bool:
    prefix, _, name = key.rpartition("/")
    if "/" in key and (not prefix or len(prefix) > 253 or DNS1123_SUBDOMAIN.fullmatch(prefix) is None):
        return False
    return 0 < len(name) <= 63 and QUALIFIED_NAME.fullmatch(name) is not None


def check_qualified_key(key: str, path: str, out: Problems) -> None:
    """A label or annotation key: ``[prefix/]name``, prefix a DNS subdomain, name ≤ 63."""
    prefix, _, name = key.rpartition("/")
    if "/" in key and not prefix:
        out.error(f"key {describe(key)}: prefix part must be non-empty", path)
    elif prefix and (len(prefix) > 253 or DNS1123_SUBDOMAIN.fullmatch(prefix) is None):
        out.error(f"key {describe(key)}: prefix part must be a DNS-1123 subdomain", path)
    elif not name or len(name) > 63 or QUALIFIED_NAME.fullmatch(name) is None:
        out.error(f"key {describe(key)}: name part must be 1-63 characters, alphanumerics, "
                  "'-', '_' or '.', starting and ending with an alphanumeric", path)


def check_labels(labels: Mapping[str, Any], path: str, out: Problems) -> None:
    for key, value in labels.items():
        check_qualified_key(key, f"{path}[{key}]", out)
        if isinstance(value, str) and (len(value) > 63 or LABEL_VALUE.fullmatch(value) is None):
            out.error(f"{describe(value)} is not a valid label value (at most 63 characters, "
                      "alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric)",
                      f"{path}[{key}]")


def check_annotations(annotations: Mapping[str, Any], path: str, out: Problems) -> None:
    total = 0
    for key, value in annotations.items():
        check_qualified_key(key, f"{path}[{key}]", out)
        total += len(key.encode()) + len(str(value).encode())
    if total > TOTAL_ANNOTATION_BYTES:
        out.error(f"may not be more than {TOTAL_ANNOTATION_BYTES} bytes", path)


def check_port_name(name: str, path: str, out: Problems) -> None:
    """``IsValidPortName`` (an IANA service name): at most 15 characters of a-z, 0-9 and '-',
    at least one letter, no '-' at either end nor two in a row."""
    if (len(name) > 15 or _IANA_SVC_NAME.fullmatch(name) is None or "--" in name
            or name.startswith("-") or name.endswith("-") or not re.search(r"[a-z]", name)):
        out.error(f"{describe(name)} is not a port name (at most 15 lower case alphanumerics or "
                  "'-', with a letter, no '-' at either end nor '--')", path)
