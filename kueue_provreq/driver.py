"""The world-driver interface: what the conformance runner needs of an implementation of Kueue.

A scenario's steps need only a few verbs: create, apply, patch and delete objects; settle
(until nothing changes); advance the clock; act as Cluster Autoscaler or as Kueue's test helpers;
read objects, events and metrics.  The runner (:mod:`kueue_provreq.conformance`) speaks them to
a :class:`WorldDriver`, and two edges implement it: the model (World and Manager, simulated
time, in :mod:`kueue_provreq.conformance.model`) and a real cluster running Kueue (API calls,
real time, in :mod:`kueue_provreq.cluster.conform`).  The interface lives here, below both, so
that neither edge imports the other; the command line joins them.

What a driver cannot do is declared, not hidden: :meth:`WorldDriver.refuses` answers, before a
scenario starts, why it cannot run it (a single controller's reconcile, a fault, a semantics
switch only the model has, a wait too long for real time), and the runner reports the scenario
as skipped with that reason.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import attrs

from kueue_provreq.api.meta import Condition
from kueue_provreq.api.objects import Key, KubeObject
from kueue_provreq.api.workload import Admission
from kueue_provreq.errors import KueueProvreqError


class StepFailed(KueueProvreqError):
    """A step whose outcome differs from what the scenario says."""


#: What a scenario may need beyond the verbs every driver has (see :class:`Needs`).
NEED_RECONCILE = "reconcile"
"""A single controller's reconcile of a single object (``reconcile`` steps)."""
NEED_RESTRICTED_SETTLE = "restricted settle"
"""A settle that runs some controllers only."""
NEED_FAULTS = "faults"
"""API calls made to fail (the scenario's ``faults``)."""
NEED_SEMANTICS = "semantics"
"""A semantics switch (a behaviour of the model's choosing, no Kueue setting)."""


@attrs.frozen
class Needs:
    """What a scenario asks of a driver, read off it before it runs."""

    features: frozenset[str] = frozenset()
    advance: float = 0.0
    """The seconds its ``advance`` steps add up to (a real cluster waits them out)."""
    config: Mapping[str, Any] | None = None
    """Its Kueue ``config`` fragment, as written (None: the default Configuration)."""
    bare_workloads: tuple[tuple[Key, int], ...] = ()
    """Workloads of its world that no job owns (the format's implicit job integration), each
    with its number of pod sets."""
    multikueue: bool = False
    """Whether its world holds a MultiKueue admission check."""
    longest_derived_name: int = 0
    """The longest name its world lets Kueue derive: a request's PodTemplate,
    ``ppt-<workload>-<check>-<attempt>-<pod set>``."""
    tied_creations: bool = False
    """Whether two Workloads of its world give the same ``creationTimestamp`` (their queue order
    then rests on their uids)."""
    cohort_cycle: bool = False
    """Whether its world holds Cohorts whose parents lead back to themselves."""
    cluster_names: frozenset[str] = frozenset()
    """The names of the cluster-scoped objects it creates (in its world or by ``apply``) or its
    world refers to (a ClusterQueue's checks and flavors, a check's config, a LocalQueue's
    ClusterQueue), whether or not they exist."""


@attrs.frozen
class Reconciled:
    """What a single reconcile returned."""

    error: str | None = None
    requeue_after: float | None = None


class WorldDriver(Protocol):
    """One scenario's world, as an implementation of Kueue keeps it.  Every method raises
    :class:`StepFailed` (or another :class:`~kueue_provreq.errors.KueueProvreqError`) for a
    step that cannot be done as asked."""

    def refuses(self, needs: Needs) -> str | None:
        """Why this driver cannot run a scenario with these needs, or None."""

    def begin(self, objects: Sequence[KubeObject], clock: float) -> None:
        """Build the scenario's world (its objects created in order) at ``clock``."""

    @property
    def now(self) -> float:
        """The scenario's clock, epoch seconds."""

    def settle(self, controllers: tuple[str, ...] | None) -> None:
        """Run the controllers (all of them when None) until nothing changes."""

    def reconcile(self, controller: str, key: Key) -> Reconciled:
        """One reconcile of one controller for one object."""

    def advance(self, seconds: float) -> None:
        """Move the clock forward; nothing runs by itself."""

    def apply(self, obj: KubeObject, has_status: bool, has_generation: bool) -> None:
        """``kubectl apply``: create, or replace what the manifest gives."""

    def patch(self, kind: str, namespace: str, name: str, api_version: str | None,
              merge: Mapping[str, Any]) -> None:
        """The format's merge patch (conditions and check states merged by key)."""

    def delete(self, kind: str, namespace: str, name: str) -> None:
        """Delete, cascading to what the object owns."""

    def autoscaler(self, namespace: str | None, request: str, condition: Condition,
                   details: Mapping[str, str] | None) -> None:
        """Cluster Autoscaler sets ``condition`` (and the class details) on a request
        (``$latest``: the newest request of the only workload)."""

    def set_quota_reservation(self, namespace: str, name: str, admission: Admission | None) -> None:
        """Kueue's ``SetQuotaReservation`` test helper (``UnsetQuotaReservationWithCondition``
        for None), and nothing else."""

    def read(self, kind: str, namespace: str, name: str, api_version: str | None) -> dict[str, Any] | None:
        """The object as ``kubectl get -o yaml`` shows it in ``api_version`` (the storage
        version when None), or None when it does not exist."""

    def count(self, kind: str) -> int:
        """How many objects of ``kind`` the scenario's world holds."""

    def take_events(self) -> list[dict[str, Any]]:
        """The events emitted since the last call, in order, each in the format's shape
        (``type``, ``reason``, ``message``, ``object: {kind, namespace, name}``)."""

    def metric_series(self) -> list[tuple[str, Mapping[str, str], float]]:
        """Every counter since the scenario started and every gauge as it stands now."""

    def end(self) -> None:
        """The scenario is over: release what it holds."""
