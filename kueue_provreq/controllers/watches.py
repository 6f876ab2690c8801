"""What each controller reads of a Workload: the watch predicates of the registry.

The engine wakes a Workload reconcile that last left the Workload with nothing to do only when a
write changes what that pass read (:mod:`.parts`).  These predicates say, per controller, what
that is; they are the registry's declarations (``registry.Controller.reads``, ``view``,
``idle``), kept here so that each controller module reads as the upstream controller it ports.
Each one is a function of the Workload's parts it names, of the configuration, and of objects
whose changes the controller's watches route to it; verify mode proves every reconcile they
leave out would change nothing.
"""

from __future__ import annotations

from collections.abc import Hashable

from kueue_provreq.api import constants as c
from kueue_provreq.api.config import Configuration
from kueue_provreq.api.provisioning import ProvisioningRequest
from kueue_provreq.api.workload import Workload
from kueue_provreq.controllers import job, provisioning
from kueue_provreq.controllers.integrations import INTEGRATIONS
from kueue_provreq.controllers.parts import (
    ADMISSION,
    CHECK_DETAILS,
    CHECKS,
    CONDITIONS,
    EVERYTHING,
    EXTRA,
    METADATA,
    REQUEUE_STATE,
    SPEC,
    Parts,
    parts,
)
from kueue_provreq.machines import requests
from kueue_provreq.world import World

_FINISHED = parts(c.WORKLOAD_FINISHED)


def idle(wl: Workload, config: Configuration) -> bool:
    """The workload and job controllers leave a finished Workload alone."""
    return wl.status.is_true(c.WORKLOAD_FINISHED)


# --- the workload controller ----------------------------------------------------------------

_WORKLOAD_DECIDES = EVERYTHING & ~(CONDITIONS | CHECK_DETAILS | EXTRA) | parts(
    c.WORKLOAD_FINISHED, c.WORKLOAD_QUOTA_RESERVED, c.WORKLOAD_ADMITTED, c.WORKLOAD_EVICTED, c.WORKLOAD_REQUEUED,
    c.WORKLOAD_DEACTIVATION_TARGET)
_FAILED_CHECK_STATES = (c.CHECK_RETRY, c.CHECK_REJECTED)
_PODS_READY = parts(c.WORKLOAD_PODS_READY)


def workload_reads(world: World, wl: Workload, config: Configuration) -> Parts:
    """Nearly everything, but of the checks only names and states unless one is Retry or
    Rejected (whose times and messages it reads), ``PodsReady`` only for the PodsReady timeout
    of an admitted workload, and nothing of the fields it does not model."""
    true = wl.status.true_types
    if c.WORKLOAD_FINISHED in true:
        return _FINISHED
    out = _WORKLOAD_DECIDES
    if any(s.state in _FAILED_CHECK_STATES for s in wl.status.admission_checks):
        out |= CHECK_DETAILS
    if config.wait_for_pods_ready is not None and c.WORKLOAD_ADMITTED in true:
        out |= _PODS_READY
    return out


# --- the provisioning controller ---------------------------------------------------------------

_FIRST_TEST = parts(c.WORKLOAD_FINISHED, c.WORKLOAD_EVICTED, c.WORKLOAD_QUOTA_RESERVED)
_EVICTED = parts(c.WORKLOAD_FINISHED, c.WORKLOAD_EVICTED)
_SYNCED = _FIRST_TEST | METADATA | SPEC | ADMISSION | CHECKS | CHECK_DETAILS
_ADMITTED = parts(c.WORKLOAD_ADMITTED)
_ENDS_ONLY_UNADMITTED = frozenset(row.condition for row in requests.REQUEST_CONDITIONS if not row.while_admitted)


def provisioning_reads(world: World, wl: Workload, config: Configuration) -> Parts:
    """Only whether it is finished, evicted or holding quota, unless it holds quota undisturbed;
    then its metadata (names, parameters), spec, admission and checks, ``Admitted`` only while
    one of its requests has a True condition that counts only before admission (BookingExpired),
    and the requeueState only before KEP-3258.  Its requests are watched as requests."""
    true = wl.status.true_types
    if c.WORKLOAD_FINISHED in true:
        return _FINISHED
    if not provisioning.syncing(wl, config):
        # once evicted (since KEP-3258) the quota it may still hold changes nothing
        return _EVICTED if c.WORKLOAD_EVICTED in true and not config.pre_kep_3258 else _FIRST_TEST
    out = _SYNCED
    if config.pre_kep_3258:
        out |= REQUEUE_STATE
    meta = wl.metadata
    for pr in world.owned_by_name(c.PROVISIONING_REQUEST, meta.namespace, meta.name):
        if isinstance(pr, ProvisioningRequest) and any(
                cd.status == c.TRUE and cd.type in _ENDS_ONLY_UNADMITTED for cd in pr.status.conditions):
            return out | _ADMITTED
    return out


def provisioning_idle(wl: Workload, config: Configuration) -> bool:
    """A workload neither finished, evicted nor holding quota has nothing to provision."""
    return not provisioning.handled(wl, config)


# --- the job reconciler -------------------------------------------------------------------------

_JOB_READS = parts(c.WORKLOAD_FINISHED, c.WORKLOAD_EVICTED, c.WORKLOAD_QUOTA_RESERVED, c.WORKLOAD_PODS_READY,
                   c.WORKLOAD_ADMITTED) | METADATA | SPEC


def job_reads(world: World, wl: Workload, config: Configuration) -> Parts:
    """The parts :func:`job_view` is made of."""
    return _JOB_READS


def job_view(wl: Workload) -> Hashable:
    """What a Workload reconcile decides from (finer than :func:`job_reads`): whether the
    workload is finished, and whether evicted with its quota (the release); for a workload owned
    by a job, the eviction that stops the job and the podsets it restores; and whether
    ``PodsReady`` already says what it would write."""
    status = wl.status
    true = status.true_types
    if c.WORKLOAD_FINISHED in true:
        return True
    refs = wl.metadata.owner_references
    releasing = c.WORKLOAD_EVICTED in true and c.WORKLOAD_QUOTA_RESERVED in true
    if refs and any(ref.kind in INTEGRATIONS for ref in refs):
        stopping: Hashable = (refs, status.conditions_by_type.get(c.WORKLOAD_EVICTED), wl.spec.pod_sets)
        return (releasing, stopping, job.pods_ready_current(wl))
    return _UNOWNED_VIEWS[releasing, job.pods_ready_current(wl)]


_UNOWNED_VIEWS = {(releasing, ready): (releasing, None, ready) for releasing in (False, True) for ready in (False, True)}
""":func:`job_view` of a Workload no job owns: one of four, shared (the engine keeps a view per
quiet Workload)."""
