"""What Kueue writes into a job's pod templates when it starts the job, and takes back when it stops
it (``pkg/podset``): the assigned flavors' node labels and tolerations, the podset label, and the
admission checks' ``podSetUpdates`` (for the provisioning check, the annotations that make the
pods consume the ProvisioningRequest's capacity).

Pod templates are frozen JSON; every function returns a new template.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from kueue_provreq.api import constants as c
from kueue_provreq.api.config import Configuration
from kueue_provreq.api.evolve import same
from kueue_provreq.api.frozen import EMPTY, FrozenMap, freeze
from kueue_provreq.api.meta import Json
from kueue_provreq.api.objects import not_in_cache
from kueue_provreq.api.queues import ResourceFlavor
from kueue_provreq.api.workload import PodSet, PodSetUpdate, Workload
from kueue_provreq.errors import KueueProvreqError
from kueue_provreq.world import Txn


class BadPodSetsInfo(KueueProvreqError):
    """What cannot be put in a job's pod templates: two sources setting one key to different
    values (``podset.BadPodSetsUpdateError``), or infos for another number of podsets than the
    job has (``BadPodSetsInfoLenError``).  Upstream treats both as permanent and never starts the
    job."""


@attrs.frozen
class PodSetInfo:
    """``podset.PodSetInfo``: what one podset's pods get beside the template."""

    name: str
    count: int
    labels: FrozenMap[str, str] = EMPTY
    annotations: FrozenMap[str, str] = EMPTY
    node_selector: FrozenMap[str, str] = EMPTY
    tolerations: tuple[FrozenMap[str, Json], ...] = ()

    def merged(self, other: PodSetInfo) -> PodSetInfo:
        """``PodSetInfo.Merge``: ``other``'s keys added, a different value for a key already
        set is a conflict; tolerations added once each."""
        return attrs.evolve(
            self, annotations=_merge_map("annotations", self.annotations, other.annotations),
            labels=_merge_map("labels", self.labels, other.labels),
            node_selector=_merge_map("nodeSelector", self.node_selector, other.node_selector),
            tolerations=self.tolerations + tuple(t for t in other.tolerations if t not in self.tolerations))


def _merge_map(field: str, mine: FrozenMap[str, str], theirs: Mapping[str, str]) -> FrozenMap[str, str]:
    for key, value in mine.items():
        if key in theirs and theirs[key] != value:
            raise BadPodSetsInfo(c.ERR_POD_SET_UPDATE_CONFLICT.format(
                field=field, key=key, value1=value, value2=theirs[key]))
    return mine.merged({k: v for k, v in theirs.items() if k not in mine})


def _update_info(update: PodSetUpdate) -> PodSetInfo:
    return PodSetInfo(update.name, 0, update.labels, update.annotations, update.node_selector or EMPTY,
                      update.tolerations)


def from_status(txn: Txn, wl: Workload, config: Configuration) -> tuple[PodSetInfo, ...]:
    """``getPodSetsInfoFromStatus``: per assigned podset (in the admission's order, which is the
    podsets' order), the admitted count, its flavors' node labels and tolerations, the podset
    label, the Workload's name (with TopologyAwareScheduling on), and the podSetUpdates of every admission check.  Raises
    :class:`BadPodSetsInfo`, or ``LookupError`` for a flavor that does not exist."""
    assert wl.status.admission is not None
    annotations = FrozenMap({c.ANNOTATION_WORKLOAD: wl.metadata.name}) \
        if config.gate(c.GATE_TOPOLOGY_AWARE_SCHEDULING) else EMPTY
    out = []
    for i, psa in enumerate(wl.status.admission.pod_set_assignments):
        if i >= len(wl.spec.pod_sets):
            raise LookupError(c.ERR_INCONSISTENT_ASSIGNMENTS)
        ps = wl.spec.pod_sets[i]
        selector: dict[str, str] = {}
        tolerations: list[FrozenMap[str, Json]] = []
        for flavor_name in dict.fromkeys(psa.flavors.values()):
            flavor = txn.get(c.RESOURCE_FLAVOR, "", flavor_name)
            if not isinstance(flavor, ResourceFlavor):
                raise LookupError(not_in_cache(c.RESOURCE_FLAVOR, flavor_name))
            selector.update(flavor.spec.node_labels)
            tolerations.extend(flavor.spec.tolerations)
        info = PodSetInfo(psa.name, ps.count if psa.count is None else psa.count,
                          labels=FrozenMap({c.LABEL_POD_SET: psa.name}), annotations=annotations,
                          node_selector=FrozenMap(selector), tolerations=tuple(tolerations))
        for check in wl.status.admission_checks:
            update = next((u for u in check.pod_set_updates if u.name == info.name), None)
            if update is not None:
                try:
                    info = info.merged(_update_info(update))
                except BadPodSetsInfo as e:
                    raise BadPodSetsInfo(f'in admission check "{check.name}": {e}') from None
        out.append(info)
    return tuple(out)


def from_pod_set(ps: PodSet) -> PodSetInfo:
    """``podset.FromPodSet``: what the Workload recorded of the template before Kueue changed it."""
    meta = ps.template.get("metadata") or EMPTY
    spec = ps.template.get("spec") or EMPTY
    return PodSetInfo(ps.name, ps.count, meta.get("labels") or EMPTY, meta.get("annotations") or EMPTY,
                      spec.get("nodeSelector") or EMPTY, tuple(spec.get("tolerations") or ()))


def _with(template: FrozenMap[str, Json], labels: Mapping[str, str], annotations: Mapping[str, str],
          node_selector: Mapping[str, str], tolerations: tuple[FrozenMap[str, Json], ...]) -> FrozenMap[str, Json]:
    """``template`` with these four fields; an empty one is left out, as Go's omitempty writes it."""
    meta: FrozenMap[str, Json] = template.get("metadata") or EMPTY
    spec: FrozenMap[str, Json] = template.get("spec") or EMPTY
    for key, value in (("labels", labels), ("annotations", annotations)):
        meta = meta.set(key, freeze(value)) if value else meta.without(key)
    spec = spec.set("nodeSelector", freeze(node_selector)) if node_selector else spec.without("nodeSelector")
    spec = spec.set("tolerations", tolerations) if tolerations else spec.without("tolerations")
    out = template.set("spec", spec)
    return out.set("metadata", meta) if meta else out.without("metadata")


def merge_into(template: FrozenMap[str, Json], info: PodSetInfo) -> FrozenMap[str, Json]:
    """``podset.Merge``: ``info`` added to the template's labels, annotations, node selector and
    tolerations (raises :class:`BadPodSetsInfo`)."""
    current = from_pod_set(PodSet(info.name, info.count, template))
    have = current.merged(info)
    # ``same``, not ``==``: compiled by mypyc, ``==`` between two values of one attrs class
    # defined in a compiled module is an identity test (docs/performance.rst,
    # "No compiled build, measured")
    if same(have, current):
        return template
    return _with(template, have.labels, have.annotations, have.node_selector, have.tolerations)


def restore_into(template: FrozenMap[str, Json], info: PodSetInfo) -> FrozenMap[str, Json]:
    """``podset.RestorePodSpec``: the template's labels, annotations, node selector and
    tolerations set back to ``info``'s."""
    if same(from_pod_set(PodSet(info.name, info.count, template)), info):  # (``same``: see merge_into)
        return template
    return _with(template, info.labels, info.annotations, info.node_selector, info.tolerations)
