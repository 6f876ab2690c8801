"""A snapshot of what the model reads, from a live cluster or a dump, and the one way it
becomes objects.

Reading a cluster is list calls only (``get``/``list`` RBAC is all it needs): every kind the
model uses, each listed completely (all pages) across namespaces or in one.  A kind the
user may not list (403) or the cluster does not serve (404: the CRD is not installed) is
skipped with a warning instead of failing the whole read, and the snapshot says which
kinds it lacks, so that a judgement that needs them (is this request's owner gone?) is not
made on missing evidence.

:func:`to_objects` is where documents -- the dicts the API server sent, or a dump's
items -- become the model's objects; explain, audit and anything else that reads a cluster
go through it, so there is one place that decides what the input layer accepts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from kueue_provreq.api.objects import KubeObject
from kueue_provreq.cluster.client import ApiError, Client, ClusterError
from kueue_provreq.cluster.resources import RESOURCES, SNAPSHOT_KINDS, SNAPSHOT_SELECTORS
from kueue_provreq.manifests import ManifestError
from kueue_provreq.manifests.inputs import InputErrors
from kueue_provreq.manifests.objects import STRICT, check_object


@attrs.frozen
class Snapshot:
    """The objects read, as the API server sent them, and what could not be read."""

    documents: tuple[dict[str, Any], ...]
    unread: frozenset[str] = frozenset()
    """Kinds that were not read (forbidden, or not served): judgements needing them are skipped."""
    warnings: tuple[str, ...] = ()
    source: str = ""
    """Where it came from, for messages: ``cluster <context> (<server>)``."""


PAGE_SIZE = 500
"""Objects per list call, as ``kubectl --chunk-size`` (the API server pages with ``continue``)."""


def read(client: Client, namespace: str = "") -> Snapshot:
    """Every object of :data:`~kueue_provreq.cluster.resources.SNAPSHOT_KINDS`, cluster-scoped
    kinds in full, namespaced ones in ``namespace`` (all namespaces when empty), in pages of
    :data:`PAGE_SIZE`."""
    documents: list[dict[str, Any]] = []
    unread: set[str] = set()
    warnings: list[str] = []
    where = f"cluster {client.context} ({client.server})" if client.context else f"cluster {client.server}"
    for kind in SNAPSHOT_KINDS:
        res = RESOURCES[kind]
        try:
            listing = client.list(res, namespace if res.namespaced else "", PAGE_SIZE,
                                  SNAPSHOT_SELECTORS.get(kind, ""))
        except ApiError as e:
            if e.code not in (403, 404):  # 401 and the like: the cluster, named, and what it said
                raise ClusterError(f"{where}: cannot list {res.resource_name}: {e}") from None
            unread.add(kind)
            why = "forbidden" if e.code == 403 else "not served by this cluster (is its CRD installed?)"
            warnings.append(f"cannot list {res.resource_name}: {why}; skipped ({e.message})")
            continue
        documents.extend(listing.items)
    return Snapshot(tuple(documents), frozenset(unread), tuple(warnings), where)


def to_objects(documents: Iterable[Mapping[str, Any]], source: str = "", validation: str = STRICT,
               semantics: frozenset[str] = frozenset()) -> tuple[list[KubeObject], list[ManifestError]]:
    """The model's objects for ``documents``, checked one by one as ``-f`` input is
    (:func:`~kueue_provreq.manifests.objects.check_object`, kubectl's ``--validate`` level, the
    schemas the semantics switches give),
    and the warnings; every error found raises :class:`~kueue_provreq.manifests.inputs.InputErrors`,
    each naming ``source``, the object and the field."""
    objects: list[KubeObject] = []
    errors: list[ManifestError] = []
    warnings: list[ManifestError] = []
    for doc in documents:
        checked = check_object(doc, validation=validation, semantics=semantics)
        errors += [e.within(source=source) for e in checked.errors]
        warnings += [w.within(source=source) for w in checked.warnings]
        if checked.obj is not None:
            objects.append(checked.obj)
    if errors:
        raise InputErrors(errors)
    return objects, warnings
