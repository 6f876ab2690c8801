"""Everything given with ``-f``, read as ``kubectl`` would, for every command that takes manifests.

:func:`load_inputs` reads files, folders and standard input; unpacks what ``kubectl get -o
yaml|json`` prints (a ``v1 List``, or a typed ``<Kind>List``); loads every object of a kind
the model uses, with every problem of every file collected before anything fails; skips real
kinds the model does not use with a count for one summary line; gives each ``generateName``
object its own reproducible name; puts a namespaced object that names no namespace in
``default``, as kubectl does with its default context; applies an object defined twice in order, as ``kubectl
apply`` would, with a warning naming both places; and finds the newest timestamp, the moment
a cluster dump was taken.

Which kinds are skipped and which are errors: a kind the model uses must be in a served
version; in a group the model reads (the core group, ``batch``, ``kueue.x-k8s.io``,
``autoscaling.x-k8s.io`` and the job groups), an unknown kind is an error, a real one it does
not use (a Pod, a CronJob, a Cohort) is skipped; in the other groups of Kubernetes
:data:`~kueue_provreq.manifests.kubernetes.KUBERNETES_VERSION` a kind it serves is skipped and
any other is an error; kinds of groups Kubernetes does not define (other operators' CRDs) are
skipped.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, TextIO

import attrs

from kueue_provreq.api import constants as c
from kueue_provreq.api.evolve import evolve
from kueue_provreq.api.naming import generated_name
from kueue_provreq.api.objects import KubeObject, key_of
from kueue_provreq.errors import KueueProvreqError
from kueue_provreq.manifests import kubernetes
from kueue_provreq.manifests.codec import describe, parse_time
from kueue_provreq.manifests.errors import ManifestError
from kueue_provreq.manifests.objects import API_VERSIONS, STRICT, check_object
from kueue_provreq.manifests.yamlio import SourcedDict, load_file, load_yaml_documents, locate, read_stream

#: Real kinds of the groups the model reads that it does not use: skipped, not errors.
UNUSED_KINDS: Final[dict[str, frozenset[str]]] = {
    "kueue.x-k8s.io": frozenset({"Topology", "WorkloadPriorityClass", "MultiKueueCluster",
                                 "MultiKueueConfig"}),
    "autoscaling.x-k8s.io": frozenset(),
    "jobset.x-k8s.io": frozenset(),
    "kubeflow.org": frozenset({"TFJob", "MPIJob", "XGBoostJob", "PaddleJob", "JAXJob", "TrainJob"}),
}

MAX_ERRORS: Final = 50
"""The errors shown before the rest are only counted."""


#: Fields that record when something happened (not when it will): the newest is a dump's "now".
OBSERVED_TIMES: Final = frozenset({
    "creationTimestamp", "time", "lastTransitionTime", "lastProbeTime", "lastUpdateTime",
    "lastHeartbeatTime", "startTime", "completionTime", "lastTimestamp", "firstTimestamp",
    "eventTime", "lastObservedTime", "lastScheduleTime", "lastSuccessfulTime", "renewTime",
    "acquireTime", "lastChangeTime", "lastUpdate", "startedAt", "finishedAt",
})


@attrs.frozen
class Inputs:
    """What ``-f`` gave: the objects, in order, and what a user should hear about them."""

    objects: tuple[KubeObject, ...]
    warnings: tuple[ManifestError, ...] = ()
    skipped: Mapping[str, int] = attrs.field(factory=dict)
    """``Kind (group/version)`` -> how many objects of it were skipped."""
    newest_timestamp: int | None = None
    """The newest time any input records (epoch seconds), or None when none records one."""
    errors: tuple[ManifestError, ...] = ()
    """With ``keep_going``: what the API server would refuse, left out of ``objects``."""

    def skipped_line(self) -> str | None:
        """One line naming the skipped kinds, or None when nothing was skipped."""
        if not self.skipped:
            return None
        total = sum(self.skipped.values())
        kinds = ", ".join(f"{count} {kind}" for kind, count in sorted(self.skipped.items()))
        return f"skipped {total} object{'s' * (total != 1)} of kinds the model does not use: {kinds}"


class InputErrors(KueueProvreqError):
    """The inputs cannot be used: every error found, one line each."""

    def __init__(self, errors: Sequence[ManifestError]) -> None:
        self.errors = tuple(errors)
        super().__init__("\n".join(self.lines()))

    def lines(self, limit: int = MAX_ERRORS) -> list[str]:
        shown = [str(e) for e in self.errors[:limit]]
        if len(self.errors) > limit:
            more = len(self.errors) - limit
            shown.append(f"... and {more} more error{'s' * (more != 1)}")
        return shown


def read_source(source: str, stdin: TextIO | None = None) -> list[dict[str, Any]]:
    """The documents of one ``-f`` argument: a file, a folder's ``*.yaml``, ``*.yml`` and
    ``*.json`` files in name order, or ``-`` for standard input."""
    if source == "-":
        return load_yaml_documents(read_stream(stdin or sys.stdin), "<stdin>")
    if source == "":
        raise ManifestError("an empty path names no file", source="-f ''")
    path = Path(source)
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.suffix in (".yaml", ".yml", ".json") and p.is_file())
        if not files:
            raise ManifestError("no *.yaml, *.yml or *.json files", source=str(path))
        docs: list[dict[str, Any]] = []
        errors: list[ManifestError] = []
        for f in files:
            try:
                docs.extend(load_file(f))
            except ManifestError as e:
                errors.append(e)
        if errors:
            raise InputErrors(errors)
        return docs
    return load_file(path)


def list_items(doc: Mapping[str, Any]) -> Iterator[Any]:
    """A document, or the items of the ``List`` (or ``<Kind>List``) it is, with the list's
    apiVersion and the kind its name says given to items that lack them; an item that is no
    object comes as the :class:`ManifestError` saying so, with its line."""
    kind = doc.get("kind")
    items = doc.get("items")
    if not (isinstance(kind, str) and kind.endswith("List") and isinstance(items, list)):
        yield doc
        return
    item_kind = kind.removesuffix("List") if kind != "List" else None
    lines = getattr(items, "item_lines", None)
    for i, item in enumerate(items):
        if not isinstance(item, dict):  # said here, where the list still knows the item's line
            where = f"{getattr(items, 'source', '')}:{lines[i]}" if lines else ""
            yield ManifestError(f"expected an object, got {describe(item)}", path=f"items[{i}]", obj=kind,
                                source=where)
            continue
        if item_kind and "kind" not in item:
            item.setdefault("apiVersion", doc.get("apiVersion"))
            item["kind"] = item_kind
        yield item


def _group_version(api_version: Any) -> tuple[str, str]:
    if not isinstance(api_version, str):
        return "", ""
    group, _, version = api_version.rpartition("/")
    return group, version


def _modelled_groups() -> frozenset[str]:
    return frozenset({_group_version(v)[0] for versions in API_VERSIONS.values() for v in versions}
                     | set(UNUSED_KINDS))


def skipped_kind(doc: Mapping[str, Any]) -> str | None:
    """``Kind (apiVersion)`` when ``doc`` is a real kind the model does not use; None when it
    is to be loaded (a kind the model uses, or an unknown one that loading reports)."""
    kind, api_version = doc.get("kind"), doc.get("apiVersion")
    if not isinstance(kind, str) or kind in API_VERSIONS:
        return None
    group, version = _group_version(api_version)
    label = f"{kind} ({api_version})"
    if group in _modelled_groups():
        served = (group, version, kind) in kubernetes.served_kinds() or kind in UNUSED_KINDS.get(group, ())
        return label if served else None
    if (group, version, kind) in kubernetes.served_kinds():
        return label
    if group in {g for g, _, _ in kubernetes.served_kinds()}:
        return None
    return label


def _times(node: Any) -> Iterator[int]:
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, Mapping):
            for key, value in item.items():
                if key in OBSERVED_TIMES and isinstance(value, str):
                    try:
                        seconds = parse_time(value)
                    except ValueError:
                        continue
                    yield seconds
                elif isinstance(value, (Mapping, list)):
                    stack.append(value)
        elif isinstance(item, list):
            stack.extend(item)


def newest_timestamp(documents: Iterable[Any]) -> int | None:
    """The newest time recorded in ``documents`` (creation, conditions, managed fields,
    events...; never a time to come like ``requeueAt``), epoch seconds; None if none has one."""
    return max((t for doc in documents for t in _times(doc)), default=None)


def load_inputs(sources: Sequence[str], *, validation: str = STRICT, stdin: TextIO | None = None,
                keep_going: bool = False, semantics: frozenset[str] = frozenset()) -> Inputs:
    """Every object of every ``-f`` source; raises :class:`InputErrors` with every error of
    every file (``validation`` is kubectl's ``--validate``, ``semantics`` the switches in force,
    see :func:`~kueue_provreq.manifests.objects.check_object`).  With ``keep_going``, as ``kubectl
    apply`` creates what the API server accepts and reports the rest, the objects (and files)
    with errors are left out and their errors returned in :attr:`Inputs.errors`; it raises only
    when nothing is left."""
    errors: list[ManifestError] = []
    warnings: list[ManifestError] = []
    documents: list[Any] = []
    for source in sources:
        try:
            documents.extend(item for doc in read_source(source, stdin) for item in list_items(doc))
        except InputErrors as e:
            errors.extend(e.errors)
        except ManifestError as e:
            errors.append(e)
    skipped: Counter[str] = Counter()
    loaded: list[tuple[KubeObject, Any]] = []
    read: list[Any] = []  # what is used (loaded or skipped): a refused document is not walked again
    for doc in documents:
        if isinstance(doc, ManifestError):  # a List's item that is no object
            errors.append(doc)
            continue
        label = skipped_kind(doc) if isinstance(doc, Mapping) else None
        if label is not None:
            skipped[label] += 1
            read.append(doc)
            continue
        if isinstance(doc, Mapping) and is_scenario(doc):
            errors.append(ManifestError("a conformance scenario, not a manifest: give scenarios to "
                                        "run or conform", obj=f"scenario {doc.get('name')!r}",
                                        source=_where(doc)))
            continue
        checked = check_object(doc, validation=validation, semantics=semantics)
        errors.extend(checked.errors)
        warnings.extend(checked.warnings)
        if checked.obj is not None:
            loaded.append((checked.obj, doc))
            read.append(doc)
    if errors and (not keep_going or not loaded):
        raise InputErrors(errors)
    objects = _merge_duplicates(_name_generated(_in_namespace(loaded)), warnings)
    if not objects and not skipped:
        raise InputErrors([ManifestError(f"no objects in {', '.join(sources)}")])
    return Inputs(objects=tuple(objects), warnings=tuple(warnings), skipped=dict(skipped),
                  newest_timestamp=newest_timestamp(read), errors=tuple(errors))


def _in_namespace(loaded: list[tuple[KubeObject, Any]]) -> list[tuple[KubeObject, Any]]:
    """A namespaced object without a namespace is in ``default``."""
    return [(evolve(obj, metadata=evolve(obj.metadata, namespace=c.DEFAULT_NAMESPACE))
             if obj.NAMESPACED and not obj.metadata.namespace else obj, doc) for obj, doc in loaded]


def _name_generated(loaded: list[tuple[KubeObject, Any]]) -> list[tuple[KubeObject, Any]]:
    """Give each ``generateName`` object the name the ``ordinal``-th such object gets, past
    any name the inputs use already."""
    taken = {key_of(obj) for obj, _ in loaded if obj.metadata.name}
    ordinals: Counter[tuple[str, str]] = Counter()
    out = []
    for obj, doc in loaded:
        meta = obj.metadata
        if not meta.name:
            prefix = str(meta.extra.get("generateName", ""))
            while True:
                name = generated_name(meta.namespace, prefix, ordinals[(meta.namespace, prefix)])
                ordinals[(meta.namespace, prefix)] += 1
                if (obj.KIND, meta.namespace, name) not in taken:
                    break
            obj = evolve(obj, metadata=evolve(meta, name=name))
            taken.add(key_of(obj))
        out.append((obj, doc))
    return out


def _where(doc: Any) -> str:
    return locate(doc, "") if isinstance(doc, SourcedDict) else "an earlier input"


def _merge_duplicates(loaded: list[tuple[KubeObject, Any]], warnings: list[ManifestError]) -> list[KubeObject]:
    """One object per kind, namespace and name: a later definition is applied over an earlier
    one, as ``kubectl apply`` does (its spec, labels and annotations win; identity and, unless
    it has its own, status stay the earlier one's)."""
    first: dict[tuple[str, str, str], tuple[int, Any]] = {}
    objects: list[KubeObject] = []
    for obj, doc in loaded:
        key = key_of(obj)
        if key not in first:
            first[key] = (len(objects), doc)
            objects.append(obj)
            continue
        index, earlier = first[key]
        old = objects[index]
        meta = obj.metadata
        merged: Any = evolve(obj, metadata=evolve(
            meta, uid=meta.uid or old.metadata.uid,
            creation_timestamp=old.metadata.creation_timestamp if meta.creation_timestamp is None
            else meta.creation_timestamp,
            generation=old.metadata.generation if meta.generation is None else meta.generation))
        if hasattr(old, "status") and not (isinstance(doc, Mapping) and "status" in doc):
            merged = evolve(merged, status=old.status)
        objects[index] = merged
        name = f"{obj.KIND} {meta.namespace + '/' if meta.namespace else ''}{meta.name}"
        warnings.append(ManifestError(f"also defined at {_where(earlier)}; this definition is applied over "
                                      "it, as kubectl apply would", obj=name, source=_where(doc)))
    return objects


def is_scenario(doc: Mapping[str, Any]) -> bool:
    """A conformance scenario (``name`` and ``steps``, no ``kind``), not a manifest."""
    return "kind" not in doc and "steps" in doc



