"""Worlds for the invariant tests: small hand-built ones, and replays through the real engine.

Hand-built worlds hold one ClusterQueue (2 cpu of flavor ``rf``), one ProvisioningRequest check
``check`` and its config; :func:`workload` and :func:`request` make the objects a case needs, on
``tests/builders.py``'s clock and builders.

:class:`Replay` drives the stateful tests' machine (``tests/test_stateful.py``) by hand: check
``capacity`` applies to every flavor, ``gpu-capacity`` to the GPU flavor only, and every rule
settles and checks every invariant.  It replays, deterministically, the upstream behaviours an
invariant's exemption allows; :func:`stop_waiting` then breaks the conditions of one of them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from kueue_provreq import invariants as inv
from kueue_provreq.api import constants as c
from kueue_provreq.api import naming
from kueue_provreq.api.config import Configuration, RequeuingStrategy, WaitForPodsReady
from kueue_provreq.api.evolve import evolve
from kueue_provreq.api.frozen import FrozenMap
from kueue_provreq.api.meta import Condition, ObjectMeta, OwnerReference
from kueue_provreq.api.objects import KubeObject
from kueue_provreq.api.provisioning import (
    PodTemplate,
    ProvisioningRequest,
    ProvisioningRequestConfig,
    ProvisioningRequestConfigSpec,
    ProvisioningRequestSpec,
    ProvisioningRequestStatus,
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
    ClusterQueueSpec,
    FlavorQuotas,
    ParametersReference,
    ResourceGroup,
    ResourceQuota,
)
from kueue_provreq.api.workload import AdmissionCheckState, PodSetAssignment, RequeueState, Workload
from kueue_provreq.explore.search import autoscaler_step
from kueue_provreq.world import World

import builders
import test_stateful as sm
from builders import NS, at, check_state

# --- hand-built worlds -----------------------------------------------------------------------------

NOW = at(1_000)


def cond(type_: str, status: str = c.TRUE, reason: str = "", seconds: float = 900) -> Condition:
    """A condition set ``seconds`` after ``T0`` (by default shortly before :data:`NOW`)."""
    return builders.cond(type_, status, reason, at=at(seconds))


def workload(name: str = "wl", *conds: Condition, checks: tuple[AdmissionCheckState, ...] = (), cpu: int = 1,
             admitted: bool = True, requeue_state: RequeueState | None = None) -> Workload:
    """A workload of one pod set in ClusterQueue ``cq``; by default reserved, admitted and
    running, with check ``check`` Ready.  ``admitted=False`` leaves ``status.admission`` out even
    with QuotaReserved=True."""
    conds = conds or (cond(c.WORKLOAD_QUOTA_RESERVED), cond(c.WORKLOAD_ADMITTED), cond(c.WORKLOAD_PODS_READY))
    reserved = any(x.type == c.WORKLOAD_QUOTA_RESERVED and x.status == c.TRUE for x in conds)
    assignment = PodSetAssignment("main", FrozenMap({"cpu": "rf"}), FrozenMap({"cpu": Quantity.parse(cpu)}), 1)
    return builders.workload(name, conditions=conds, checks=checks or (READY,), requeue_state=requeue_state,
                             admission=builders.admission("cq", assignment) if reserved and admitted else None)


def request(attempt: int, *conds: Condition, owner: str = "wl") -> ProvisioningRequest:
    """Attempt ``attempt`` of check ``check`` of workload ``owner``."""
    return ProvisioningRequest(
        ObjectMeta(name=f"{owner}-check-{attempt}", namespace=NS, uid=f"u-pr-{owner}-{attempt}",
                   owner_references=(OwnerReference(c.KUEUE_V1BETA2, c.WORKLOAD, owner, f"{owner}-uid", True),)),
        status=ProvisioningRequestStatus(conditions=conds))


def pod_template(pr: ProvisioningRequest) -> PodTemplate:
    return PodTemplate(ObjectMeta(name=f"ppt-{pr.metadata.name}-main", namespace=NS, uid=f"u-pt-{pr.metadata.name}",
                                  owner_references=(OwnerReference(c.AUTOSCALING_V1, c.PROVISIONING_REQUEST,
                                                                   pr.metadata.name, pr.metadata.uid, True),)))


def base_objects() -> list[KubeObject]:
    return [
        ClusterQueue(ObjectMeta(name="cq", uid="u-cq"), ClusterQueueSpec(namespace_selector=EVERY_NAMESPACE,
            resource_groups=(ResourceGroup(("cpu",), (FlavorQuotas("rf", (ResourceQuota("cpu", Quantity.parse(2)),)),)),),
            admission_checks_strategy=AdmissionChecksStrategy((AdmissionCheckStrategyRule("check"),)))),
        AdmissionCheck(ObjectMeta(name="check", uid="u-ac"), AdmissionCheckSpec(
            c.PROVISIONING_REQUEST_CONTROLLER_NAME,
            ParametersReference(c.KUEUE_GROUP, c.PROVISIONING_REQUEST_CONFIG, "prc"))),
        ProvisioningRequestConfig(ObjectMeta(name="prc", uid="u-prc"), ProvisioningRequestConfigSpec(
            c.CLASS_CHECK_CAPACITY, retry_strategy=RetryStrategy(3, 60, 1800))),
    ]


def good_world() -> World:
    """A workload admitted through its Provisioned request: every invariant holds."""
    pr = request(1, cond(c.PR_PROVISIONED))
    return World([*base_objects(), workload(), pr, pod_template(pr)])


def world_with(*objs: KubeObject) -> World:
    return World([*base_objects(), *objs])


def step(before: list[KubeObject], after: list[KubeObject]) -> tuple[frozenset[KubeObject], World]:
    """A step from ``before`` to ``after`` (each beside the base objects)."""
    return World([*base_objects(), *before]).snapshot(), world_with(*after)


CTX = inv.CheckContext(now=NOW)
QUIET = inv.CheckContext(now=NOW, quiescent=True)
KEEP = inv.CheckContext(now=NOW, config=Configuration(
    feature_gates=Configuration().feature_gates.set(c.GATE_KEEP_QUOTA_FOR_PROVREQ_RETRY, True)))
LIMITED = inv.CheckContext(now=NOW, config=Configuration(
    wait_for_pods_ready=WaitForPodsReady(requeuing_strategy=RequeuingStrategy(backoff_limit_count=1))))

NOT_READY = (cond(c.WORKLOAD_QUOTA_RESERVED), cond(c.WORKLOAD_ADMITTED, seconds=0),
             cond(c.WORKLOAD_PODS_READY, c.FALSE, c.REASON_WAIT_FOR_START))
READY = check_state("check", c.CHECK_READY, at=at(900))
RETRY = check_state("check", c.CHECK_RETRY, at=at(900), requeue_after=60)
REJECTED = evolve(RETRY, state=c.CHECK_REJECTED)
PENDING = (check_state("check", c.CHECK_PENDING, at=at(900)),)
PENDING_WL = (cond(c.WORKLOAD_QUOTA_RESERVED, c.FALSE),)
FAILED_1 = request(1, cond(c.PR_FAILED, seconds=950))


# --- replays through the real engine -----------------------------------------------------------------

CAPACITY, GPU_CAPACITY = sm.CHECKS


class Pick:
    """Stands in for hypothesis' ``data`` argument: ``draw`` returns the given values in order."""

    def __init__(self, *values: object) -> None:
        self.values = list(values)

    def draw(self, strategy: object) -> object:
        return self.values.pop(0)


class Replay:
    """The stateful test's machine driven by hand; every step settles and checks every invariant,
    and :attr:`before` keeps the world the last step started from."""

    def __init__(self, keep_quota: bool = False, timeout: int = 300) -> None:
        self.m = sm.AdmissionMachine()
        self.m.setup(keep_quota=keep_quota, pods_ready_limit=None, timeout=timeout)
        self.before: frozenset[KubeObject] = frozenset()

    def step(self, rule: Callable[..., None], *args: object) -> None:
        """A rule of the machine, remembering the world before it."""
        self.before = self.m.world.snapshot()
        rule(*args)

    def autoscaler(self, name: str, trigger: str) -> None:
        """Cluster Autoscaler moves request ``name`` by ``trigger``; then everything settles."""
        pr = self.request(name)
        assert pr is not None
        self.before = self.m.world.snapshot()
        autoscaler_step(self.m.world, pr, trigger, self.m.now)
        self.m.settle_and_check(self.before)

    def request(self, name: str) -> ProvisioningRequest | None:
        pr = self.m.world.get(c.PROVISIONING_REQUEST, sm.NS, name)
        assert pr is None or isinstance(pr, ProvisioningRequest)
        return pr

    def workload(self) -> Workload:
        (wl,) = self.m.workloads()
        return wl

    def workload_before(self) -> Workload:
        return next(o for o in self.before if isinstance(o, Workload))

    def check_before(self, check: str) -> AdmissionCheckState:
        state = self.workload_before().check_state(check)
        assert state is not None
        return state

    def ctx(self) -> inv.CheckContext:
        """What the stateful test checks with after a step (settled)."""
        return inv.CheckContext(now=self.m.now, config=self.m.config, settled=True)


def replaced(objs: Iterable[KubeObject], *new: KubeObject) -> frozenset[KubeObject]:
    """``objs`` with each object of ``new`` put in place of the one of the same kind and name."""
    keys = {(o.KIND, o.metadata.namespace, o.metadata.name) for o in new}
    return frozenset({*(o for o in objs if (o.KIND, o.metadata.namespace, o.metadata.name) not in keys), *new})


def with_check_states(wl: Workload, check: str, **changes: object) -> Workload:
    return wl.with_status(admission_checks=tuple(
        evolve(s, **changes) if s.name == check else s for s in wl.status.admission_checks))


#: The conditions of ``upstream.waits_for_another_request``, each broken on its own by :func:`stop_waiting`.
WAIT_BROKEN = ("request in sync", "no request needed", "not a provisioning check", "no config")


def stop_waiting(objs: Iterable[KubeObject], wl: Workload, check: str, how: str,
                 configs: Iterable[KubeObject] | None = None) -> frozenset[KubeObject]:
    """``objs`` changed so that ``wl``'s ``check`` no longer waits for a request, ``how`` being one
    of :data:`WAIT_BROKEN`: a request in sync with the check's config (as ``configs`` has it,
    ``objs`` by default) is there, no pod set uses the config's managedResources, the
    AdmissionCheck belongs to another controller, or the config is gone.  A change to an object
    ``objs`` lacks changes nothing."""
    objs = frozenset(objs)
    ac = next(o for o in objs if isinstance(o, AdmissionCheck) and o.metadata.name == check)
    assert ac.spec.parameters is not None
    ref = ac.spec.parameters.name
    prc = next((o for o in (objs if configs is None else configs)
                if isinstance(o, ProvisioningRequestConfig) and o.metadata.name == ref), None)
    if how == "request in sync":
        assert prc is not None
        name = naming.provisioning_request_name(wl.metadata.name, check, 1)
        pr = ProvisioningRequest(
            ObjectMeta(name=name, namespace=wl.metadata.namespace, uid=f"u-{name}-in-sync",
                       owner_references=(OwnerReference(c.KUEUE_V1BETA2, c.WORKLOAD, wl.metadata.name,
                                                        wl.metadata.uid, True),)),
            ProvisioningRequestSpec(prc.spec.provisioning_class_name, prc.spec.parameters))
        return replaced(objs, pr)
    if how == "not a provisioning check":
        return replaced(objs, evolve(ac, spec=evolve(ac.spec, controller_name="example.com/other")))
    if prc is None or prc not in objs:
        return objs
    if how == "no request needed":
        return replaced(objs, evolve(prc, spec=evolve(prc.spec, managed_resources=("memory",))))
    assert how == "no config", how
    return frozenset(o for o in objs if o is not prc)
