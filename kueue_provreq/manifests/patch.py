"""The conformance format's ``patch``: a JSON merge patch (RFC 7386) with keyed status lists.

A plain merge patch would replace ``status.conditions`` wholesale, so a test that sets one
condition would erase the others.  Here ``status.conditions`` (by ``type``) and
``status.admissionChecks`` (by ``name``) merge element by element, as a strategic merge
patch or ``meta.SetStatusCondition`` would, and an omitted ``lastTransitionTime`` follows
the API convention: it moves to now when the status changes or the element is new.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kueue_provreq.manifests.errors import ManifestError

#: status list -> (its key field, the field whose change moves lastTransitionTime)
KEYED_STATUS_LISTS = {"conditions": ("type", "status"), "admissionChecks": ("name", "state")}


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: mappings merge recursively, ``null`` deletes, anything else replaces."""
    if not isinstance(patch, Mapping):
        return patch
    out = dict(target) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


def patch_document(doc: Mapping[str, Any], patch: Mapping[str, Any], now: str) -> dict[str, Any]:
    """Apply ``patch`` to an object's manifest; ``now`` is the clock as an RFC 3339 text."""
    status_patch = patch.get("status")
    keyed: dict[str, list[Any]] = {}
    if isinstance(status_patch, Mapping):
        rest = dict(status_patch)
        for field in KEYED_STATUS_LISTS:
            if isinstance(rest.get(field), list):
                keyed[field] = rest.pop(field)
        patch = {**patch, "status": rest}
    out: dict[str, Any] = merge_patch(doc, patch)
    if keyed:
        status = dict(out.get("status") or {})
        for field, elements in keyed.items():
            key, tracked = KEYED_STATUS_LISTS[field]
            status[field] = merge_keyed(status.get(field) or [], elements, key, tracked, now,
                                        f"merge.status.{field}")
        out["status"] = status
    return out


def merge_keyed(current: list[Any], elements: list[Any], key: str, tracked: str, now: str,
                path: str) -> list[Any]:
    """Merge each element into the one with its key, or append it."""
    out = [dict(e) for e in current]
    for i, element in enumerate(elements):
        if not isinstance(element, Mapping) or not isinstance(element.get(key), str):
            raise ManifestError(f'each element needs a "{key}"', path=f"{path}[{i}]")
        if tracked == "status" and isinstance(element.get("status"), bool):
            element = {**element, "status": "True" if element["status"] else "False"}
        index = next((j for j, e in enumerate(out) if e.get(key) == element[key]), None)
        old = out[index] if index is not None else None
        new = merge_patch(old or {}, element)
        if "lastTransitionTime" not in element and (old is None or old.get(tracked) != new.get(tracked)):
            new["lastTransitionTime"] = now
        if index is None:
            out.append(new)
        else:
            out[index] = new
    return out
