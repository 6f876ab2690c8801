"""What workloads ask for and what they hold: Kueue's resource accounting.

A pod's requests are added up as ``resourcehelper.PodRequests`` does, a podset's are its pods'
times its count, and a workload holding quota holds, per (flavor, resource), its admission's
``resourceUsage`` (or its podsets' requests for the assigned counts where that is missing).
The scheduler, the ClusterQueue status and the queue index (:mod:`kueue_provreq.controllers.queues`) all count so.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal

from kueue_provreq.api.frozen import FrozenMap
from kueue_provreq.api.memo import memo
from kueue_provreq.api.meta import Json
from kueue_provreq.api.quantity import Quantity
from kueue_provreq.api.workload import Admission, PodSet, Workload

FlavorResource = tuple[str, str]
Usage = dict[FlavorResource, Decimal]
_ZERO = Decimal(0)


def _add_into(total: dict[str, Decimal], more: dict[str, Decimal]) -> None:
    for name, value in more.items():
        total[name] = total.get(name, _ZERO) + value


def _max_into(total: dict[str, Decimal], other: dict[str, Decimal]) -> None:
    for name, value in other.items():
        if value > total.get(name, _ZERO):
            total[name] = value


def _container_requests(container: Json) -> dict[str, Decimal]:
    """Requests, with limits standing in for missing requests (Kueue defaults them so)."""
    resources = container.get("resources") or {}
    out = {name: Quantity.parse(v).value for name, v in (resources.get("limits") or {}).items()}
    out.update({name: Quantity.parse(v).value for name, v in (resources.get("requests") or {}).items()})
    return out


@memo(4096)
def pod_requests(ps: PodSet) -> FrozenMap[str, Decimal]:
    """One pod's requests as ``resourcehelper.PodRequests`` adds them up: the sum of the
    containers, at least the largest init container (sidecars, ``restartPolicy: Always``,
    run beside everything after them), plus the pod overhead.  Cached: PodSets are frozen,
    and a queue of identical workloads parses its template once."""
    spec = ps.template.get("spec") or {}
    total: dict[str, Decimal] = {}
    for container in spec.get("containers") or ():
        _add_into(total, _container_requests(container))
    sidecars: dict[str, Decimal] = {}
    init_peak: dict[str, Decimal] = {}
    for container in spec.get("initContainers") or ():
        reqs = _container_requests(container)
        if container.get("restartPolicy") == "Always":
            _add_into(total, reqs)
            _add_into(sidecars, reqs)
            running = dict(sidecars)
        else:
            running = dict(reqs)
            _add_into(running, sidecars)
        _max_into(init_peak, running)
    _max_into(total, init_peak)
    _add_into(total, {name: Quantity.parse(v).value for name, v in (spec.get("overhead") or {}).items()})
    return FrozenMap(total)


@memo(4096)
def podset_requests(ps: PodSet, count: int, counts_pods: bool) -> FrozenMap[str, Decimal]:
    """The requests of ``count`` pods; ``pods`` itself is requested when the queue covers it."""
    out = {name: value * count for name, value in pod_requests(ps).items()}
    if counts_pods:
        out["pods"] = Decimal(count)
    return FrozenMap(out)


def usage_of(reserving: Iterable[Workload]) -> Usage:
    """Quota held per (flavor, resource): each admission's ``resourceUsage``, or, when an
    assignment has none, its podset's requests for the assigned count."""
    used: Usage = {}
    for wl in reserving:
        assert wl.status.admission is not None
        _add_held(used, wl.status.admission, wl.spec.pod_sets)
    return used


@memo(4096)
def held_by(admission: Admission, pod_sets: tuple[PodSet, ...]) -> Mapping[FlavorResource, Decimal]:
    """:func:`usage_of` one workload with this admission and these podsets, read-only: the
    queue index keeps one per workload holding quota, and look-alike workloads then share
    one map instead of holding a dict each (about 320 bytes)."""
    used: Usage = {}
    _add_held(used, admission, pod_sets)
    return used


def _add_held(used: Usage, admission: Admission, pod_sets: tuple[PodSet, ...]) -> None:
    """Add what one admission holds into ``used``."""
    podsets = {ps.name: ps for ps in pod_sets}
    for psa in admission.pod_set_assignments:
        if psa.resource_usage:
            amounts: Mapping[str, Decimal] = {name: q.value for name, q in psa.resource_usage.items()}
        elif psa.name in podsets:
            ps = podsets[psa.name]
            amounts = podset_requests(ps, ps.count if psa.count is None else psa.count, False)
        else:
            continue
        for name, value in amounts.items():
            flavor = psa.flavors.get(name)
            if flavor is not None:
                used[(flavor, name)] = used.get((flavor, name), _ZERO) + value
