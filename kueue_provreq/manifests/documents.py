"""The library's own files, described with the nodes manifests use.

A scenario (:mod:`kueue_provreq.conformance.scenario`) and a simulation file
(:mod:`kueue_provreq.simulation.spec`) are trees of :mod:`.nodes`: the same strings, integers,
numbers, durations, times and quantities as a manifest, the same closed objects whose unknown
keys say "did you mean", and every problem collected before anything is built.  The few nodes
they need beyond Kubernetes' own types are here: a manifest inside the file, the Kueue
Configuration inside it, a model decoded as the codec decodes it, and a file named relative to
the document.  :func:`check_document` runs a schema over a document and raises every problem at
once, each naming the file and line, the object and the field path, as a bad manifest does.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import attrs

from kueue_provreq.api.objects import KubeObject
from kueue_provreq.manifests.codec import decode, describe
from kueue_provreq.manifests.configuration import load_configuration
from kueue_provreq.manifests.errors import ManifestError, ManifestErrors
from kueue_provreq.manifests.nodes import Node, Problems, join
from kueue_provreq.manifests.objects import check_object, in_file_order
from kueue_provreq.manifests.yamlio import locate, path_problem


def _below(path: str, inner: ManifestError) -> ManifestError:
    """``inner``, an error of an object found at ``path`` of a document, with the whole path."""
    return ManifestError(inner.reason, path=join(path, inner.path) if inner.path else path, obj=inner.obj,
                         source=inner.source)


class Manifest(Node):
    """A Kubernetes object written inside the document, checked as the API server checks it on
    create.  What it decodes is kept (by the identity of the manifest), so that building the
    document after the check does not decode it twice."""

    def __init__(self, semantics: frozenset[str] = frozenset()) -> None:
        self.semantics = semantics
        self.decoded: dict[int, KubeObject] = {}

    def check(self, value: Any, path: str, out: Problems) -> None:
        if not isinstance(value, Mapping):
            out.error(f"expected an object manifest, got {describe(value)}", path)
            return
        checked = check_object(value, semantics=self.semantics)
        for error in checked.errors:
            out.add(_below(path, error))
        if checked.obj is not None:
            self.decoded[id(value)] = checked.obj

    def object(self, value: Mapping[str, Any]) -> KubeObject:
        """The object the check decoded from ``value``."""
        return self.decoded[id(value)]


@attrs.frozen
class KueueConfiguration(Node):
    """A Kueue Configuration written inside the document (``scenario``: a fragment that may
    name the semantics switches, as scenarios write it)."""

    scenario: bool = True

    def check(self, value: Any, path: str, out: Problems) -> None:
        try:
            load_configuration(value, scenario=self.scenario)
        except ManifestErrors as e:
            for error in e.errors:
                out.add(_below(path, error))
        except ManifestError as e:
            out.add(_below(path, e))


@attrs.frozen
class Model(Node):
    """A value of one of the library's models, decoded by the manifest codec (an Admission)."""

    cls: type

    def check(self, value: Any, path: str, out: Problems) -> None:
        try:
            decode(self.cls, value, path)
        except ManifestError as e:
            out.add(e)


@attrs.frozen
class File(Node):
    """A file named relative to the document's folder."""

    base: Path

    def check(self, value: Any, path: str, out: Problems) -> None:
        if not isinstance(value, str) or not value:
            out.error(f"expected a file path, got {describe(value)}", path)
        elif not (self.base / value).is_file():
            try:
                os.stat(self.base / value)
                problem = "not a regular file"
            except OSError as e:  # missing, a symbolic link loop, a path through a file
                problem = path_problem(e)
            out.error(f"{self.base / value}: {problem}", path)


def check_document(schema: Node, data: Any, *, obj: str,
                   source: Callable[[str], str | None] | None = None) -> None:
    """Every problem ``schema`` finds in ``data``, a document read from YAML, raised at once as
    :class:`ManifestErrors` in file order.  Each names the document as ``obj`` (unless it belongs
    to a manifest inside it, which names itself), the field path from the document's root, and
    the file and line where the field is; ``source`` may name another origin for a path (a
    ``--set`` that wrote it)."""
    out = Problems()
    schema.check(data, "", out)
    problems = [*out.errors, *(u.error() for u in out.unknown)]
    if problems:
        raise ManifestErrors(in_file_order(place(e, data, obj=obj, source=source) for e in problems))


def place(error: ManifestError, data: Any, *, obj: str, source: Callable[[str], str | None] | None = None) -> ManifestError:
    """``error`` with the document's name, unless it names its own object, and the origin of its
    path: what ``source`` says first, else where the error found itself, else the line of the
    path in ``data``."""
    origin = (source(error.path) if source is not None else None) or error.source or locate(data, error.path)
    return ManifestError(error.reason, path=error.path, obj=error.obj or obj, source=origin)
