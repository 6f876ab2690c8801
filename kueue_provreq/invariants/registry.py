"""The registry of invariants and the two entry points that run them.

A *state invariant* is ``f(world, ctx) -> violations``; a *step invariant* is
``f(before, after, ctx) -> violations`` over one step, ``before`` being a ``World.snapshot()``
and ``after`` the world the step left.  Each registers itself with :func:`state_invariant` or
:func:`step_invariant`, saying how far the controllers must have got for it to apply
(:attr:`Invariant.when`).  :func:`check_state` and :func:`check_step` run every invariant that
applies, in the order they were registered.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from kueue_provreq.api import constants as c
from kueue_provreq.api.config import (
    SEMANTICS_CURRENT,
    SEMANTICS_PRE_KEP_3258,
    Configuration,
)
from kueue_provreq.api.meta import Time
from kueue_provreq.api.objects import KubeObject
from kueue_provreq.world import World

Snapshot = frozenset[KubeObject]

CURRENT = SEMANTICS_CURRENT
PRE_KEP_3258 = SEMANTICS_PRE_KEP_3258


@attrs.frozen
class CheckContext:
    """What an invariant needs besides the world: the clock, the configuration, and how far the
    controllers have got.  ``settled``: another settle at the same clock would change nothing.
    ``quiescent``: settled, and no reconcile asked to be woken later."""

    now: Time
    config: Configuration = Configuration()
    settled: bool = True
    quiescent: bool = False

    @property
    def semantics(self) -> str:
        return self.config.admission_check_semantics

    @property
    def current(self) -> bool:
        """KEP-3258's semantics (Kueue v0.15 and later), as opposed to :data:`PRE_KEP_3258`."""
        return self.semantics == CURRENT

    @property
    def keep_quota(self) -> bool:
        return self.config.gate(c.GATE_KEEP_QUOTA_FOR_PROVREQ_RETRY)

    @property
    def retry_releases_quota(self) -> bool:
        """A check in Retry gets the workload evicted, releasing its quota: KEP-3258's semantics
        without KeepQuotaForProvReqRetry (PC §1.13, §5 v0.9)."""
        return self.current and not self.keep_quota

    @property
    def eviction_deletes_requests(self) -> bool:
        """An eviction deletes the workload's requests: CleanupProvisioningRequestsOnEviction
        (PC §1.12)."""
        return self.current and self.config.gate(c.GATE_CLEANUP_ON_EVICTION)


StateCheck = Callable[[World, CheckContext], list[str]]
StepCheck = Callable[[Snapshot, World, CheckContext], list[str]]


@attrs.frozen
class Invariant:
    name: str
    doc: str
    state: StateCheck | None = None
    step: StepCheck | None = None
    when: str = "always"
    """``always``, ``settled`` or ``quiescent``: the least the driver must guarantee for it to apply."""

    def applies(self, ctx: CheckContext) -> bool:
        return self.when == "always" or (self.when == "settled" and ctx.settled) or ctx.quiescent


STATE_INVARIANTS: dict[str, Invariant] = {}
STEP_INVARIANTS: dict[str, Invariant] = {}


def state_invariant(when: str = "always") -> Callable[[StateCheck], StateCheck]:
    def register(fn: StateCheck) -> StateCheck:
        STATE_INVARIANTS[fn.__name__] = Invariant(fn.__name__, (fn.__doc__ or "").strip(), state=fn, when=when)
        return fn
    return register


def step_invariant(when: str = "always") -> Callable[[StepCheck], StepCheck]:
    def register(fn: StepCheck) -> StepCheck:
        STEP_INVARIANTS[fn.__name__] = Invariant(fn.__name__, (fn.__doc__ or "").strip(), step=fn, when=when)
        return fn
    return register


def check_state(world: World, ctx: CheckContext) -> list[str]:
    """Every applicable state invariant, each violation prefixed with the invariant's name."""
    out: list[str] = []
    for inv in STATE_INVARIANTS.values():
        if inv.applies(ctx) and inv.state is not None:
            out.extend(f"{inv.name}: {v}" for v in inv.state(world, ctx))
    return out


def check_step(before: Snapshot, after: World, ctx: CheckContext) -> list[str]:
    """Every applicable step invariant over one step, each violation prefixed likewise."""
    out: list[str] = []
    for inv in STEP_INVARIANTS.values():
        if inv.applies(ctx) and inv.step is not None:
            out.extend(f"{inv.name}: {v}" for v in inv.step(before, after, ctx))
    return out
