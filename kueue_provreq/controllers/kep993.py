"""KEP-993's preemption policy: the opt-in ``kep-993-preemption`` semantics (upstream never
implemented it; its CRDs have neither ``AdmissionCheck.spec.preemptionPolicy`` nor the
``PreemptionRequired`` check state).

What the KEP says, and how the model reads it where the KEP leaves it open:

* **Reserve first, preempt later.**  "Kueue will only pass as many pods into QuotaReserved as
  there would fit in the quota together, assuming that necessary preemptions will happen."  A
  workload that fits only by preempting gets its quota reservation at once (so its checks
  start), and the workloads it needs are *claimed*: the next reservations count them as gone.
* **When to preempt.**  At once when every check of the preemptor is ``Anytime`` (the
  default); otherwise as soon as every check with ``AfterCheckPassedOrOnDemand`` is ``Ready``,
  or any check asks for it with ``PreemptionRequired`` (:func:`policy_allows`).
* **Re-validate before Admitted.**  "Once all admission checks are satisfied, Kueue will
  recheck that Admission settings are still valid": a workload is admitted only when it fits
  beside what may still be running, the admitted workloads and the evicted ones that have not
  released their quota yet (:func:`preemptions_pending`); a reservation whose preemptions can
  no longer happen (a target's priority rose, the policy turned ``Never``) is taken back.

Who preempts whom is not stored anywhere (upstream keeps it in memory; the model keeps no
state beside the objects): :func:`plan` works it out again from the workloads holding quota in
a queue, in the order they got it, as the scheduler met them.  Each one either fits beside the
ones kept so far, or claims targets among them (:func:`preemption.find_targets`, upstream's
heuristic), or, with none to claim, holds a reservation that is no longer valid.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal

import attrs

from kueue_provreq.api import constants as c
from kueue_provreq.api.config import Configuration
from kueue_provreq.api.meta import Time
from kueue_provreq.api.queues import AdmissionCheck, ClusterQueue
from kueue_provreq.api.workload import Workload
from kueue_provreq.controllers import preemption
from kueue_provreq.controllers import workload_status as ws
from kueue_provreq.controllers.preemption import Amounts, FlavorResource
from kueue_provreq.world import World

_ZERO = Decimal(0)


def policy_allows(world: World, wl: Workload, cq: ClusterQueue) -> bool:
    """Whether the workload's ``preemptionPolicy`` lets its preemptions be issued now: a check
    asks for them (``PreemptionRequired``), or every check whose AdmissionCheck says
    ``AfterCheckPassedOrOnDemand`` is ``Ready``.  The checks are those its flavors require
    (a required check not listed yet counts as ``Pending``); a missing AdmissionCheck object
    counts as ``Anytime``."""
    states = {s.name: s.state for s in wl.status.admission_checks}
    required = ws.checks_for_workload(wl, cq)
    if any(states.get(name) == c.CHECK_PREEMPTION_REQUIRED for name in required):
        return True
    for name in required:
        ac = world.get(c.ADMISSION_CHECK, "", name)
        if isinstance(ac, AdmissionCheck) and ac.spec.waits_for_check and states.get(name) != c.CHECK_READY:
            return False
    return True


@attrs.frozen
class Plan:
    """What the quota reservations of one ClusterQueue count on."""

    claims: Mapping[str, tuple[Workload, ...]]
    """Preemptor UID -> the workloads it needs preempted that still hold quota (evicted or not)."""
    invalid: tuple[Workload, ...]
    """Reservations that need preemptions no candidate can give any more."""
    used: Mapping[FlavorResource, Decimal]
    """The quota held once every claimed workload is gone: what the next reservation sees."""

    @property
    def claimed(self) -> frozenset[str]:
        return frozenset(t.metadata.uid for targets in self.claims.values() for t in targets)


def reservation_order(wl: Workload, config: Configuration) -> tuple[Time, int, Time, str]:
    """The order the scheduler gave quota in, as far as the objects tell: the reservation time
    (``QuotaReserved``'s, whole seconds).  Reservations of the same second may come from one
    cycle or several; only a higher priority can over-commit a queue (a preemptor takes lower
    priorities only), so among them the lower priorities count as the earlier, then the queue
    order."""
    return (_reserved_at(wl), preemption.priority(wl), ws.queue_order_timestamp(wl, config), wl.metadata.uid)


def plan(cq: ClusterQueue, holding: Sequence[tuple[Workload, Amounts]], nominal: Amounts,
         config: Configuration, now: Time) -> Plan:
    """Replay the queue's reservations in the order they were made: each one fits beside the
    reservations kept so far, or claims targets among them (those become gone for the next
    ones), or has none left to claim."""
    kept: list[tuple[Workload, Amounts]] = []
    used: dict[FlavorResource, Decimal] = {}
    claims: dict[str, tuple[Workload, ...]] = {}
    invalid: list[Workload] = []
    policy = cq.spec.within_cluster_queue
    for wl, amounts in sorted(holding, key=lambda pair: reservation_order(pair[0], config)):
        short = frozenset(fr for fr, v in amounts.items() if used.get(fr, _ZERO) + v > nominal.get(fr, _ZERO))
        if short:
            targets = preemption.find_targets(wl, kept, short, amounts, nominal, policy, config, now)
            if not targets:
                invalid.append(wl)
                continue
            gone = {t.metadata.uid for t in targets}
            for target, held in kept:
                if target.metadata.uid in gone:
                    for fr, v in held.items():
                        used[fr] = used.get(fr, _ZERO) - v
            kept = [pair for pair in kept if pair[0].metadata.uid not in gone]
            claims[wl.metadata.uid] = tuple(targets)
        kept.append((wl, amounts))
        for fr, v in amounts.items():
            used[fr] = used.get(fr, _ZERO) + v
    return Plan(claims, tuple(invalid), used)


def preemptions_pending(wl: Workload, wants: Amounts, running: Sequence[tuple[Workload, Amounts]],
                        nominal: Amounts) -> bool:
    """Whether admitting ``wl`` now would exceed the nominal quota beside what may still be
    running in its queue: the admitted workloads and the evicted ones not released yet
    (``running``, ``wl`` itself left out)."""
    used: dict[FlavorResource, Decimal] = {}
    uid = wl.metadata.uid
    for other, held in running:
        if other.metadata.uid != uid and (other.is_admitted() or other.is_evicted()):
            for fr, v in held.items():
                used[fr] = used.get(fr, _ZERO) + v
    return any(used.get(fr, _ZERO) + v > nominal.get(fr, _ZERO) for fr, v in wants.items())


def _reserved_at(wl: Workload) -> Time:
    cond = wl.condition(c.WORKLOAD_QUOTA_RESERVED)
    return cond.last_transition_time if cond is not None and cond.last_transition_time is not None else Time(0)
