"""How the invariants read a world or a snapshot: typed views, and names for their messages."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from kueue_provreq.api import constants as c
from kueue_provreq.api.objects import KubeObject
from kueue_provreq.api.provisioning import ProvisioningRequest
from kueue_provreq.api.workload import Workload
from kueue_provreq.invariants.registry import Snapshot
from kueue_provreq.world import World


def workloads(objs: Iterable[KubeObject]) -> Iterator[Workload]:
    return (o for o in objs if isinstance(o, Workload))


def provisioning_requests(objs: Iterable[KubeObject]) -> Iterator[ProvisioningRequest]:
    return (o for o in objs if isinstance(o, ProvisioningRequest))


def workloads_by_uid(objs: Iterable[KubeObject]) -> dict[str, Workload]:
    return {o.metadata.uid: o for o in workloads(objs)}


def name(wl: Workload) -> str:
    return f"{wl.metadata.namespace}/{wl.metadata.name}"


def evicted_reason(wl: Workload) -> str | None:
    """The reason of ``Evicted=True``, or None while the workload is not evicted."""
    cond = wl.condition(c.WORKLOAD_EVICTED)
    return cond.reason if cond is not None and cond.status == c.TRUE else None


def created_requests(before: Snapshot, after: World) -> list[ProvisioningRequest]:
    """The requests the step created (a request deleted and made again under its name counts)."""
    old = {o.metadata.uid for o in before}
    return [pr for pr in provisioning_requests(after) if pr.metadata.uid not in old]


def controlling_workload(world: World, pr: ProvisioningRequest) -> Workload | None:
    ref = pr.metadata.controller_ref()
    wl = world.get(c.WORKLOAD, pr.metadata.namespace, ref.name) if ref is not None else None
    return wl if isinstance(wl, Workload) else None
