"""Explicit-state breadth-first search over the sans-IO controllers.

A state is a world at a clock.  From each state the search tries every
interleaving of what may happen next: Cluster Autoscaler moving the newest
ProvisioningRequest of each (workload, check) along a declared transition of
the ProvisioningRequest machine, the controllers catching up (one ``settle``,
or -- at ``reconcile`` granularity -- any single reconcile that changes
something, and the scheduler's cycle), and the clock jumping to the next
deadline a reconcile asked to be woken at.  Every reached state and every step
is checked against :mod:`kueue_provreq.invariants`; the first violation is
returned with its trace, which is the shortest one because the search is
breadth-first.

States are compared after canonicalisation: uids are dropped (every object is
named uniquely and refers to its owner by name too), times are made relative to
the clock, and identical workloads are interchangeable (symmetry reduction).

Nothing here reads a clock, prints or touches a file: :mod:`kueue_provreq.cli.explore`
measures and reports.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable, Hashable, Iterator, Sequence
from typing import Any

import attrs

from kueue_provreq import invariants as inv
from kueue_provreq.api import constants as c
from kueue_provreq.api.config import SEMANTICS_KEP_993_PREEMPTION, Configuration, parse_semantics
from kueue_provreq.api.evolve import evolve
from kueue_provreq.api.frozen import FrozenMap, freeze
from kueue_provreq.api.meta import Condition, ObjectMeta, Time, set_condition
from kueue_provreq.api.model import fields, is_model
from kueue_provreq.api.objects import Key, KubeObject
from kueue_provreq.api.provisioning import (
    ProvisioningRequest,
    ProvisioningRequestConfig,
    ProvisioningRequestConfigSpec,
    RetryStrategy,
)
from kueue_provreq.api.quantity import Quantity
from kueue_provreq.api.queues import (
    EVERY_NAMESPACE,
    AdmissionCheck,
    AdmissionCheckSpec,
    AdmissionChecksStrategy,
    AdmissionCheckStrategyRule,
    ClusterQueue,
    ClusterQueuePreemption,
    ClusterQueueSpec,
    FlavorQuotas,
    LocalQueue,
    LocalQueueSpec,
    ParametersReference,
    ResourceFlavor,
    ResourceGroup,
    ResourceQuota,
)
from kueue_provreq.api.workload import PodSet, Workload, WorkloadSpec
from kueue_provreq.controllers import registry, scheduler
from kueue_provreq.controllers.context import Context
from kueue_provreq.engine import SCHEDULER, Manager, SettleError, changes_world
from kueue_provreq.errors import KueueProvreqError
from kueue_provreq.machines import (
    PROVISIONING_REQUEST_MACHINE,
    IllegalTransition,
    RequestTrigger,
    requests,
)
from kueue_provreq.machines.phases import provisioning_request_phase
from kueue_provreq.world import World

#: The conformance format's default start clock (2024-01-01T00:00:00Z).
EPOCH = Time(1_704_067_200)
NAMESPACE = "default"
WORKLOAD_NAMES = ("wla", "wlb")
COHORT = "team"
GRANULARITIES = ("settle", "reconcile")

class OptionsError(KueueProvreqError, ValueError):
    """Options that describe no world the search can build."""


@attrs.frozen
class Options:
    workloads: int = attrs.field(default=1, validator=attrs.validators.in_((1, 2)))
    checks: int = attrs.field(default=1, validator=attrs.validators.in_((1, 2)))
    depth: int = 12
    backoff_limit: int = attrs.field(default=1, validator=attrs.validators.in_(range(4)))
    keep_quota: bool = False
    semantics: frozenset[str] = attrs.field(default=frozenset(), converter=parse_semantics)
    """The semantics switches (``api.config.SEMANTICS``), as a set or a comma-separated string;
    none: the default semantics."""
    granularity: str = attrs.field(default="settle", validator=attrs.validators.in_(GRANULARITIES))
    symmetry: bool = True
    max_states: int | None = None
    """Stop (without a verdict on the rest) after this many distinct states."""
    quota: int | None = None
    """The ClusterQueue's cpu quota in pods (each workload is one pod); default: one per workload.
    Less makes the workloads compete; one per workload lets symmetric states arise."""
    outcomes: tuple[str, ...] = tuple(RequestTrigger)
    """The ProvisioningRequest machine's triggers Cluster Autoscaler may fire (default: all)."""
    preemption: bool = False
    """Two workloads of different priority in a queue that preempts (``withinClusterQueue:
    LowerPriority``): ``wla`` is there from the start, the higher-priority ``wlb`` arrives at any
    moment (the ``submit`` action), and the quota (one pod, unless given) makes it preempt.
    Under KEP-993 (``kep-993-preemption``) every check is ``AfterCheckPassedOrOnDemand``."""
    cohort: bool = False
    """A second ClusterQueue, ``cq2`` (no checks), shares cohort ``team`` with ``cq`` and lends it
    its quota: ``cq`` holds one pod (or ``quota``) and borrows the rest from ``cq2``, which holds
    one per workload.  With ``preemption``, ``cq`` holds nothing, ``wla`` borrows ``cq2``'s one
    pod, and ``wlb`` arrives in ``cq2`` (``reclaimWithinCohort: LowerPriority``) to reclaim it."""

    def __attrs_post_init__(self) -> None:
        if self.preemption and self.workloads != 2:
            raise OptionsError("the preemption world has two workloads (--workloads 2)")
        if self.cohort and SEMANTICS_KEP_993_PREEMPTION in self.semantics:
            raise OptionsError("the cohort world is not modelled under kep-993-preemption")


@attrs.frozen
class Action:
    """One step of a trace, in the conformance format's vocabulary."""

    kind: str
    """``settle``, ``reconcile``, ``advance``, ``autoscaler`` or ``submit`` (a workload arrives)."""
    controller: str = ""
    workload: str = ""
    """``NS/NAME`` of the object a reconcile is for (a Workload, or a ``target_kind`` object)."""
    target_kind: str = c.WORKLOAD
    seconds: int = 0
    request: str = ""
    trigger: str = ""

    def describe(self) -> str:
        if self.kind == "reconcile":
            where = self.workload.removeprefix("/")  # a cluster-scoped object has no namespace
            target = f" {where}" if self.target_kind == c.WORKLOAD else f" {self.target_kind} {where}"
            return f"reconcile {self.controller}" + (target if self.workload else "")
        if self.kind == "advance":
            return f"advance {self.seconds}s"
        if self.kind == "autoscaler":
            return f"autoscaler {self.trigger} {self.request}"
        if self.kind == "submit":
            return f"submit {self.workload}"
        return self.kind


SETTLE = Action("settle")


@attrs.frozen
class Violation:
    messages: tuple[str, ...]
    trace: tuple[Action, ...]
    """From the initial world (its first step is the initial ``settle``)."""
    world: World = attrs.field(eq=False)
    now: Time
    raised: bool = False
    """The last step raised (an illegal transition, a settle that does not end) rather than
    reaching a state that breaks an invariant."""


@attrs.frozen
class Report:
    states: int
    transitions: int
    depth: int
    """The deepest level completed (every state at that distance expanded)."""
    complete: bool
    """True when the search ran out of new states before ``Options.depth``."""
    violation: Violation | None
    cut_off: bool = False
    """True when ``Options.max_states`` stopped the search before it finished its depth: the
    states it did not reach were not checked."""


# --- the world ------------------------------------------------------------------------------


def build_config(opts: Options) -> Configuration:
    gates = Configuration().feature_gates.set(c.GATE_KEEP_QUOTA_FOR_PROVREQ_RETRY, opts.keep_quota)
    return Configuration(feature_gates=gates, semantics=opts.semantics)


def build_objects(opts: Options) -> list[KubeObject]:
    """One ClusterQueue with ``quota`` cpus, ``checks`` provisioning checks, and ``workloads``
    identical one-pod, one-cpu workloads (the only difference is the name); in the preemption
    world the second one has a higher priority and arrives later (:func:`late_arrival`)."""
    checks = [f"check{i + 1}" for i in range(opts.checks)]
    default = (0 if opts.preemption else 1) if opts.cohort else (1 if opts.preemption else opts.workloads)
    cpu = Quantity.parse(default if opts.quota is None else opts.quota)
    preemption = ClusterQueuePreemption(c.PREEMPTION_POLICY_LOWER_PRIORITY) \
        if opts.preemption and not opts.cohort else None
    cohort = COHORT if opts.cohort else ""
    objs: list[KubeObject] = [
        ResourceFlavor(ObjectMeta(name="default-flavor")),
        ClusterQueue(ObjectMeta(name="cq"), ClusterQueueSpec(namespace_selector=EVERY_NAMESPACE,
            resource_groups=_cpu_group(cpu), cohort_name=cohort,
            admission_checks_strategy=AdmissionChecksStrategy(tuple(AdmissionCheckStrategyRule(n) for n in checks)),
            preemption=preemption)),
        LocalQueue(ObjectMeta(name="lq", namespace=NAMESPACE), LocalQueueSpec("cq")),
    ]
    if opts.cohort:
        reclaim = ClusterQueuePreemption(reclaim_within_cohort=c.PREEMPTION_POLICY_LOWER_PRIORITY) \
            if opts.preemption else None
        objs.append(ClusterQueue(ObjectMeta(name="cq2"), ClusterQueueSpec(namespace_selector=EVERY_NAMESPACE,
            resource_groups=_cpu_group(Quantity.parse(1 if opts.preemption else opts.workloads)),
            cohort_name=cohort, preemption=reclaim)))
        objs.append(LocalQueue(ObjectMeta(name="lq2", namespace=NAMESPACE), LocalQueueSpec("cq2")))
    waits = opts.preemption and SEMANTICS_KEP_993_PREEMPTION in opts.semantics
    for name in checks:
        objs.append(AdmissionCheck(ObjectMeta(name=name), AdmissionCheckSpec(
            c.PROVISIONING_REQUEST_CONTROLLER_NAME,
            ParametersReference(c.KUEUE_GROUP, c.PROVISIONING_REQUEST_CONFIG, name),
            preemption_policy=c.PREEMPTION_POLICY_AFTER_CHECK_PASSED_OR_ON_DEMAND if waits else None)))
        objs.append(ProvisioningRequestConfig(ObjectMeta(name=name), ProvisioningRequestConfigSpec(
            c.CLASS_CHECK_CAPACITY, retry_strategy=RetryStrategy(opts.backoff_limit, 60, 1800))))
    template = freeze({"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}})
    for name in WORKLOAD_NAMES[:1 if opts.preemption else opts.workloads]:
        objs.append(Workload(ObjectMeta(name=name, namespace=NAMESPACE),
                             WorkloadSpec(pod_sets=(PodSet("main", 1, template),), queue_name="lq")))
    return objs


def _cpu_group(cpu: Quantity) -> tuple[ResourceGroup, ...]:
    return (ResourceGroup(("cpu",), (FlavorQuotas("default-flavor", (ResourceQuota("cpu", cpu),)),)),)


def late_arrival(opts: Options) -> Workload | None:
    """The preemption world's second workload, ``wlb``: priority 10 against ``wla``'s 0, created
    when the ``submit`` action brings it."""
    if not opts.preemption:
        return None
    template = freeze({"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}})
    return Workload(ObjectMeta(name=WORKLOAD_NAMES[1], namespace=NAMESPACE),
                    WorkloadSpec(pod_sets=(PodSet("main", 1, template),), queue_name="lq2" if opts.cohort else "lq",
                                 priority=10))


def initial_world(objs: Sequence[KubeObject], now: Time) -> World:
    """What the API server stores on create: a uid, generation 1 and the creation time."""
    w = World()
    for o in objs:
        w.put(w.created(o, now))
    return w


# --- what may happen -------------------------------------------------------------------------


def newest_requests(world: World) -> Iterator[ProvisioningRequest]:
    """The newest request of every (workload, check): the only one Kueue still reads."""
    for wl in world.objects(c.WORKLOAD):
        assert isinstance(wl, Workload)
        for s in wl.status.admission_checks:
            prs = inv.requests_of(world, wl, s.name)
            if prs:
                yield prs[-1][1]


def autoscaler_triggers(pr: ProvisioningRequest) -> list[str]:
    """The triggers the ProvisioningRequest machine declares from the request's current phase."""
    phase = provisioning_request_phase(pr)
    return [t for (src, t) in PROVISIONING_REQUEST_MACHINE.by_key if src == phase]


def autoscaler_step(world: World, pr: ProvisioningRequest, trigger: str, now: Time) -> ProvisioningRequest:
    """Cluster Autoscaler fires ``trigger`` on ``pr``: set its conditions (the transition time
    moves when the status does) and store it.  The request's phase afterwards must be the one the
    machine declares, or the machine and the phase reading disagree."""
    want = PROVISIONING_REQUEST_MACHINE.fire(provisioning_request_phase(pr), trigger)
    conds = pr.status.conditions
    for type_, status, reason, message in requests.CA_WRITES[RequestTrigger(trigger)]:
        conds, _ = set_condition(conds, Condition(type_, status, reason, message), now)
    new = evolve(pr, status=evolve(pr.status, conditions=conds))
    if provisioning_request_phase(new) != want:
        raise IllegalTransition(f"autoscaler {trigger} took {pr.metadata.name} to "
                                f"{provisioning_request_phase(new)}, the machine says {want}")
    world.put(new)
    return new


def probe(world: World, ctx: Context) -> tuple[list[tuple[str, Key]], float | None]:
    """Which single reconciles would change the world now, and the earliest wake-up any of them
    asks for.  Reconciles are pure, so this runs them without applying anything."""
    changing: list[tuple[str, Key]] = []
    wake: float | None = None
    for ctl in registry.CONTROLLERS:
        for key in ctl.keys(world):
            res = ctl.reconcile(world, key, ctx)
            if changes_world(world, res):
                changing.append((ctl.name.value, key))
            if res.requeue_after is not None and res.requeue_after > 0:
                wake = res.requeue_after if wake is None else min(wake, res.requeue_after)
    if changes_world(world, scheduler.schedule(world, ctx, None)):
        changing.append((SCHEDULER, (SCHEDULER, "", "")))
    return changing, wake


@attrs.define
class _Node:
    world: World
    now: Time
    settled: bool
    wake: float | None


class Explorer:
    """One search; ``run`` returns the :class:`Report`."""

    def __init__(self, opts: Options) -> None:
        self.opts = opts
        self.config = build_config(opts)
        self.objects = build_objects(opts)
        self.parents: dict[Hashable, tuple[Hashable, Action] | None] = {}
        self.transitions = 0

    def ctx(self, now: Time) -> Context:
        return Context(now=now, config=self.config)

    def check_ctx(self, node: _Node) -> inv.CheckContext:
        return inv.CheckContext(now=node.now, config=self.config, settled=node.settled,
                                quiescent=node.settled and node.wake is None)

    # --- stepping ---------------------------------------------------------------------------
    def _node(self, world: World, now: Time, settle: bool) -> _Node:
        if settle:
            Manager(world).settle(self.ctx(now))
        changing, wake = probe(world, self.ctx(now))
        if settle and changing:
            raise SettleError(f"settle left work undone: {changing}")
        return _Node(world, now, not changing, wake)

    def actions(self, node: _Node) -> Iterator[Action]:
        if self.opts.granularity == "reconcile" and not node.settled:
            changing, _ = probe(node.world, self.ctx(node.now))
            for name, key in changing:
                if name == SCHEDULER:
                    yield Action("reconcile", name)
                else:
                    yield Action("reconcile", name, f"{key[1]}/{key[2]}", target_kind=key[0])
        for pr in newest_requests(node.world):
            for trigger in autoscaler_triggers(pr):
                if trigger in self.opts.outcomes:
                    yield Action("autoscaler", request=pr.metadata.name, trigger=trigger)
        if node.settled and node.wake is not None:
            yield Action("advance", seconds=math.ceil(node.wake))
        late = late_arrival(self.opts)
        if late is not None and node.world.get(c.WORKLOAD, NAMESPACE, late.metadata.name) is None:
            yield Action("submit", workload=f"{NAMESPACE}/{late.metadata.name}")

    def step(self, node: _Node, action: Action) -> _Node:
        world, now = node.world.copy(), node.now
        settle = self.opts.granularity == "settle"
        if action.kind == "autoscaler":
            pr = world.get(c.PROVISIONING_REQUEST, NAMESPACE, action.request)
            assert isinstance(pr, ProvisioningRequest)
            autoscaler_step(world, pr, action.trigger, now)
        elif action.kind == "advance":
            now = Time(now + action.seconds)
        elif action.kind == "submit":
            late = late_arrival(self.opts)
            assert late is not None
            world.put(world.created(late, now))
        elif action.kind == "reconcile":
            ns, _, name = action.workload.partition("/")
            key: Key = (SCHEDULER, "", "") if action.controller == SCHEDULER else (action.target_kind, ns, name)
            Manager(world).reconcile(action.controller, key, self.ctx(now))
        return self._node(world, now, settle or action.kind == "settle")

    # --- canonical states -------------------------------------------------------------------
    def key(self, node: _Node) -> Hashable:
        objs = frozenset(_canonical(o, node.now) for o in node.world)
        if not self.opts.symmetry or self.opts.workloads < 2 or self.opts.preemption:
            return objs
        # identical workloads: the representative is the smallest hash over the renamings
        best: frozenset[Any] | None = None
        for perm in itertools.permutations(WORKLOAD_NAMES[:self.opts.workloads]):
            mapping = dict(zip(WORKLOAD_NAMES, perm, strict=False))
            renamed = frozenset(_rename(o, mapping) for o in objs) if perm != WORKLOAD_NAMES[:len(perm)] else objs
            if best is None or hash(renamed) < hash(best):
                best = renamed
        return best

    # --- checking -----------------------------------------------------------------------------
    def check(self, before: World | None, after: _Node) -> list[str]:
        ctx = self.check_ctx(after)
        found = inv.check_state(after.world, ctx)
        if before is not None:
            found += inv.check_step(before.snapshot(), after.world, ctx)
        return found

    def drain(self, node: _Node) -> tuple[list[Action], _Node] | None:
        """For a workload waiting without quota behind a Retry or Rejected check: let the
        controllers and the clock run with nothing else happening (settle, jump to the next
        deadline, again) until nothing is scheduled; returns the steps and where they end when the
        wait is still there then -- a stuck workload -- and None when something moved it."""
        if not _waits_behind_failed_check(node.world):
            return None
        steps: list[Action] = []
        for _ in range(8):
            if not node.settled:
                node = self.step(node, SETTLE)
                steps.append(SETTLE)
            if not _waits_behind_failed_check(node.world):
                return None
            if node.wake is None:
                return steps, node
            adv = Action("advance", seconds=math.ceil(node.wake))
            node = self.step(node, adv)
            steps.append(adv)
        return None

    def trace(self, key: Hashable) -> list[Action]:
        out: list[Action] = []
        link = self.parents[key]
        while link is not None:
            key, action = link
            out.append(action)
            link = self.parents[key]
        return [SETTLE, *reversed(out)]

    # --- the search -----------------------------------------------------------------------------
    def run(self, progress: Callable[[int, int], None] | None = None) -> Report:
        start = initial_world(self.objects, EPOCH)
        root = self._node(start.copy(), EPOCH, settle=True)
        root_key = self.key(root)
        self.parents[root_key] = None
        found = self.check(start, root)
        if found:
            return self._report(0, False, Violation(tuple(found), (SETTLE,), root.world, root.now))
        frontier = [(root_key, root)]
        depth = 0
        while frontier and depth < self.opts.depth:
            nxt: list[tuple[Hashable, _Node]] = []
            for key, node in frontier:
                for action in self.actions(node):
                    self.transitions += 1
                    try:
                        new = self.step(node, action)
                    except (IllegalTransition, SettleError) as e:
                        return self._report(depth, False, Violation(
                            (f"{type(e).__name__}: {e}",), (*self.trace(key), action), node.world, node.now,
                            raised=True))
                    new_key = self.key(new)
                    known = new_key in self.parents
                    if not known:
                        self.parents[new_key] = (key, action)
                    found = self.check(node.world, new)
                    if found:
                        path = self.trace(new_key) if not known else [*self.trace(key), action]
                        return self._report(depth, False, Violation(tuple(found), tuple(path), new.world, new.now))
                    if known:
                        continue
                    stuck = self.drain(new)
                    if stuck is not None:
                        steps, end = stuck
                        found = inv.STATE_INVARIANTS["no_stuck_workload"].state(end.world, self.check_ctx(end)) \
                            if inv.STATE_INVARIANTS["no_stuck_workload"].state else []
                        return self._report(depth, False, Violation(
                            tuple(f"no_stuck_workload: {m}" for m in found),
                            (*self.trace(new_key), *steps), end.world, end.now))
                    nxt.append((new_key, new))
                    if self.opts.max_states is not None and len(self.parents) >= self.opts.max_states:
                        return self._report(depth, False, None, cut_off=True)
            frontier = nxt
            depth += 1
            if progress is not None:
                progress(depth, len(self.parents))
        return self._report(depth, not frontier, None)

    def _report(self, depth: int, complete: bool, violation: Violation | None, cut_off: bool = False) -> Report:
        return Report(len(self.parents), self.transitions, depth, complete, violation, cut_off)


def _waits_behind_failed_check(world: World) -> bool:
    for wl in world.objects(c.WORKLOAD):
        assert isinstance(wl, Workload)
        if wl.is_active and not wl.is_finished() and not wl.has_quota_reservation() and \
                any(s.state in (c.CHECK_RETRY, c.CHECK_REJECTED) for s in wl.status.admission_checks):
            return True
    return False


# --- canonicalisation -------------------------------------------------------------------------

_TIME = re.compile(r"\bTime\b")


_PLANS: dict[type, tuple[tuple[str, str], ...]] = {}


def _plan(cls: type) -> tuple[tuple[str, str], ...]:
    """Per attrs field: ``time`` (relative to the clock), ``uid`` (dropped) or ``deep``."""
    plan = _PLANS.get(cls)
    if plan is None:
        plan = _PLANS[cls] = tuple(
            (f.name, "uid" if f.name == "uid" else "time" if _TIME.search(str(f.type)) else "deep")
            for f in fields(cls))
    return plan


def _transform(value: Any, now: int, strings: Callable[[str], str] | None) -> Any:
    if isinstance(value, str):
        return strings(value) if strings is not None else value
    if isinstance(value, tuple):
        return tuple(_transform(v, now, strings) for v in value)
    if isinstance(value, FrozenMap):
        return FrozenMap({_transform(k, now, strings): _transform(v, now, strings) for k, v in value.items()}) \
            if strings is not None else value
    if isinstance(value, Quantity) or not is_model(type(value)):
        return value
    changes = {}
    for name, kind in _plan(type(value)):
        old = getattr(value, name)
        if kind == "uid":
            new = "" if strings is None else old
        elif kind == "time":
            new = old - now if strings is None and isinstance(old, int) else old
        else:
            new = _transform(old, now, strings)
        if new is not old:
            changes[name] = new
    return evolve(value, **changes) if changes else value


_CANONICAL: dict[tuple[KubeObject, int], KubeObject] = {}


def _canonical(obj: KubeObject, now: int) -> KubeObject:
    """``obj`` with uids dropped and times made relative to ``now``; memoised per object and
    clock, because most objects are shared, unchanged, between neighbouring states."""
    memo = (obj, now)
    out = _CANONICAL.get(memo)
    if out is None:
        if len(_CANONICAL) > 200_000:
            _CANONICAL.clear()
        out = _CANONICAL[memo] = _transform(obj, now, None)
    return out


def _rename(obj: KubeObject, mapping: dict[str, str]) -> KubeObject:
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, mapping)) + r")\b")
    result: KubeObject = _transform(obj, 0, lambda s: pattern.sub(lambda m: mapping[m.group(1)], s))
    return result


def explore(opts: Options, progress: Callable[[int, int], None] | None = None) -> tuple[Report, Explorer]:
    """Run one search; the Explorer is returned too, for the objects and config a trace starts from."""
    ex = Explorer(opts)
    return ex.run(progress), ex


__all__ = ["Action", "EPOCH", "Explorer", "Options", "Report", "Violation", "autoscaler_step",
           "autoscaler_triggers", "build_config", "build_objects", "explore", "initial_world",
           "late_arrival", "newest_requests", "probe"]
