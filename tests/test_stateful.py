"""Stateful property tests: random histories through the real engine, every invariant after every step.

Hypothesis drives a world of one ClusterQueue with two ProvisioningRequest checks (one applying
to every flavor, one to the GPU flavor only) through what users, the job, Cluster Autoscaler and
the clock do: workloads created with random pod sets, resources and annotations; the autoscaler
moving the newest request of a check along the transitions the ProvisioningRequest machine
declares from that request's current phase; clock advances (small ones, and jumps to the next
deadline a reconcile asked for, which is how PodsReady timeouts and retry delays fire);
configuration changes (class, parameters, retryStrategy, managed resources); deletion,
finishing, deactivation, reactivation and pods becoming ready.  Both KeepQuotaForProvReqRetry
settings are drawn.  After every step the controllers settle and
:func:`kueue_provreq.invariants.check_state` / ``check_step`` must find nothing.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule
from kueue_provreq import invariants as inv
from kueue_provreq.api import constants as c
from kueue_provreq.api.config import Configuration, RequeuingStrategy, WaitForPodsReady
from kueue_provreq.api.evolve import evolve
from kueue_provreq.api.frozen import FrozenMap, freeze
from kueue_provreq.api.meta import Condition, Duration, ObjectMeta, Time, set_condition
from kueue_provreq.api.objects import KubeObject
from kueue_provreq.api.provisioning import (
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
    ClusterQueueSpec,
    FlavorQuotas,
    LocalQueue,
    LocalQueueSpec,
    ParametersReference,
    ResourceFlavor,
    ResourceFlavorSpec,
    ResourceGroup,
    ResourceQuota,
)
from kueue_provreq.api.workload import PodSet, Workload, WorkloadSpec
from kueue_provreq.conformance.runner import quota_step, user_changes
from kueue_provreq.controllers.context import Context
from kueue_provreq.engine import ALL_CONTROLLERS, Manager, verify_change
from kueue_provreq.explore.search import (
    EPOCH,
    autoscaler_step,
    autoscaler_triggers,
    initial_world,
    newest_requests,
    probe,
)
from kueue_provreq.world import Delete, Update, World

NS = "default"
GPU = "example.com/gpu"
CHECKS = ("capacity", "gpu-capacity")

#: A pod set: (count, cpu request, gpu request); 0 means "not requested".
pod_sets = st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2), st.integers(0, 1)), min_size=1, max_size=3)
#: Workload annotations; a ``provreq.kueue.x-k8s.io/`` one becomes a request parameter.  One that
#: overrides a config parameter with a different value is left out on purpose: upstream then
#: deletes and recreates the request on every reconcile (PC §1.7, "Quirk"), which never settles.
annotations = st.sets(st.sampled_from([(c.ANNOTATION_PROVREQ_PREFIX + "noRetry", "true"),
                                       (c.ANNOTATION_PROVREQ_PREFIX + "maxRunDurationSeconds", "600"),
                                       ("other/annotation", "x")])).map(dict)
retry_strategies = st.builds(RetryStrategy, st.integers(0, 3), st.sampled_from([0, 1, 60]),
                             st.sampled_from([0, 100, 1800]))


def cluster_objects() -> list[KubeObject]:
    """Two flavors: ``default-flavor`` (cpu) and ``gpu-flavor`` (gpu, with a node label), each
    check applying to its flavors; quota for a few pods, so workloads compete."""
    rg_cpu = ResourceGroup(("cpu",), (FlavorQuotas("default-flavor", (ResourceQuota("cpu", Quantity.parse(4)),)),))
    rg_gpu = ResourceGroup((GPU,), (FlavorQuotas("gpu-flavor", (ResourceQuota(GPU, Quantity.parse(2)),)),))
    objs: list[KubeObject] = [
        ResourceFlavor(ObjectMeta(name="default-flavor")),
        ResourceFlavor(ObjectMeta(name="gpu-flavor"), ResourceFlavorSpec(node_labels=FrozenMap({"gpu": "yes"}))),
        ClusterQueue(ObjectMeta(name="cq"), ClusterQueueSpec(namespace_selector=EVERY_NAMESPACE,
            resource_groups=(rg_cpu, rg_gpu),
            admission_checks_strategy=AdmissionChecksStrategy((
                AdmissionCheckStrategyRule(CHECKS[0]),
                AdmissionCheckStrategyRule(CHECKS[1], ("gpu-flavor",)))))),
        LocalQueue(ObjectMeta(name="lq", namespace=NS), LocalQueueSpec("cq")),
    ]
    for name in CHECKS:
        objs.append(AdmissionCheck(ObjectMeta(name=name), AdmissionCheckSpec(
            c.PROVISIONING_REQUEST_CONTROLLER_NAME, ParametersReference(c.KUEUE_GROUP, c.PROVISIONING_REQUEST_CONFIG, name))))
        objs.append(ProvisioningRequestConfig(ObjectMeta(name=name), ProvisioningRequestConfigSpec(
            c.CLASS_CHECK_CAPACITY, retry_strategy=RetryStrategy(2, 60, 1800))))
    return objs


def default_config(check: str) -> KubeObject:
    return next(o for o in cluster_objects() if o.KIND == c.PROVISIONING_REQUEST_CONFIG and o.metadata.name == check)


def template(cpu: int, gpu: int) -> FrozenMap[str, object]:
    requests = {**({"cpu": str(cpu)} if cpu else {}), **({GPU: str(gpu)} if gpu else {})}
    return freeze({"spec": {"containers": [{"name": "c", "resources": {"requests": requests}}]}})


class AdmissionMachine(RuleBasedStateMachine):
    """The world, the clock and the configuration; one rule = one thing happening, then a settle."""

    def __init__(self) -> None:
        super().__init__()
        self.world = World()
        self.now = EPOCH
        self.config = Configuration()
        self.serial = 0
        self.wake: float | None = None
        #: one Manager for the whole history, as an operator keeps one: every settle after the
        #: first reconciles only what is due, and (verify mode) proves it missed nothing
        self.manager = Manager(self.world, max_reconciles=1_000)

    # --- the step every rule takes -------------------------------------------------------
    def ctx(self) -> Context:
        return Context(now=self.now, config=self.config)

    def settle_and_check(self, before: frozenset[KubeObject]) -> None:
        self.manager.settle(self.ctx())
        changing, self.wake = probe(self.world, self.ctx())
        assert changing == [], f"settle left work undone: {changing}"
        ctx = inv.CheckContext(now=self.now, config=self.config, settled=True, quiescent=self.wake is None)
        found = inv.check_state(self.world, ctx) + inv.check_step(before, self.world, ctx)
        assert found == [], "\n".join(found)

    def workloads(self) -> list[Workload]:
        return sorted((w for w in self.world.objects(c.WORKLOAD) if isinstance(w, Workload)),
                      key=lambda w: w.metadata.name)

    def put_workload(self, wl: Workload) -> None:
        """A user's write (creation, (de)activation, a finished job, pods becoming ready): it
        fires the workload machine's user triggers as the conformance runner's steps do."""
        before = self.world.snapshot()
        self.write_workload(wl)
        self.settle_and_check(before)

    def write_workload(self, wl: Workload) -> None:
        old = self.world.get(c.WORKLOAD, NS, wl.metadata.name)
        if old is None:
            self.world.put(wl)
        else:
            update = Update(wl, user_changes(old, wl))
            verify_change(old, update)  # a user's action is a declared transition too
            self.world.apply(update)

    # --- setup ---------------------------------------------------------------------------
    @initialize(keep_quota=st.booleans(), pods_ready_limit=st.sampled_from([None, 0, 1, 2]),
                timeout=st.sampled_from([120, 300]))
    def setup(self, keep_quota: bool, pods_ready_limit: int | None, timeout: int) -> None:
        self.config = Configuration(
            wait_for_pods_ready=WaitForPodsReady(timeout=Duration(float(timeout)), requeuing_strategy=RequeuingStrategy(
                backoff_limit_count=pods_ready_limit, backoff_base_seconds=10, backoff_max_seconds=100)),
            feature_gates=Configuration().feature_gates.set(c.GATE_KEEP_QUOTA_FOR_PROVREQ_RETRY, keep_quota))
        self.world = initial_world(cluster_objects(), self.now)
        self.manager = Manager(self.world, max_reconciles=1_000)
        self.settle_and_check(self.world.snapshot())

    # --- users -----------------------------------------------------------------------------
    @precondition(lambda self: len(self.world.objects(c.WORKLOAD)) < 3)
    @rule(sets=pod_sets, notes=annotations, priority=st.sampled_from([None, 0, 10]))
    def create_workload(self, sets: list[tuple[int, int, int]], notes: dict[str, str], priority: int | None) -> None:
        self.serial += 1
        spec = WorkloadSpec(pod_sets=tuple(PodSet(f"ps{i}", n, template(cpu, gpu)) for i, (n, cpu, gpu) in enumerate(sets)),
                            queue_name="lq", priority=priority)
        meta = ObjectMeta(name=f"wl{self.serial}", namespace=NS, uid=self.world.next_uid(), generation=1,
                          creation_timestamp=self.now, annotations=FrozenMap(notes))
        self.put_workload(Workload(meta, spec))

    @precondition(lambda self: self.world.objects(c.WORKLOAD))
    @rule(data=st.data())
    def delete_workload(self, data: st.DataObject) -> None:
        wl = data.draw(st.sampled_from(self.workloads()))
        before = self.world.snapshot()
        self.world.apply(Delete(c.WORKLOAD, NS, wl.metadata.name))
        assert not self.world.owned_by_name(c.PROVISIONING_REQUEST, NS, wl.metadata.name)
        self.settle_and_check(before)

    @precondition(lambda self: self.world.objects(c.WORKLOAD))
    @rule(data=st.data(), active=st.booleans())
    def set_active(self, data: st.DataObject, active: bool) -> None:
        """Deactivation (``spec.active=false``) or reactivation, as a user edits the spec."""
        wl = data.draw(st.sampled_from(self.workloads()))
        meta = evolve(wl.metadata, generation=(wl.metadata.generation or 1) + 1)
        self.put_workload(evolve(wl, metadata=meta, spec=evolve(wl.spec, active=active)))

    @precondition(lambda self: self.world.objects(c.WORKLOAD))
    @rule(data=st.data())
    def finish(self, data: st.DataObject) -> None:
        """The job completes: the job integration writes Finished=True."""
        wl = data.draw(st.sampled_from(self.workloads()))
        conds, _ = set_condition(wl.status.conditions, Condition(c.WORKLOAD_FINISHED, c.TRUE, "Succeeded", "done"),
                                 self.now)
        self.put_workload(wl.with_status(conditions=conds))

    @precondition(lambda self: any(w.is_admitted() for w in self.workloads()))
    @rule(data=st.data(), ready=st.booleans())
    def pods_ready(self, data: st.DataObject, ready: bool) -> None:
        """The admitted job's pods become ready, or one fails after having been ready."""
        wl = data.draw(st.sampled_from([w for w in self.workloads() if w.is_admitted()]))
        cond = Condition(c.WORKLOAD_PODS_READY, c.TRUE, c.REASON_STARTED, "All pods reached readiness") if ready else \
            Condition(c.WORKLOAD_PODS_READY, c.FALSE, c.REASON_WAIT_FOR_RECOVERY, "At least one pod has failed")
        conds, _ = set_condition(wl.status.conditions, cond, self.now)
        self.put_workload(wl.with_status(conditions=conds))

    # --- administrators --------------------------------------------------------------------
    @rule(check=st.sampled_from(CHECKS), klass=st.sampled_from([c.CLASS_CHECK_CAPACITY, c.CLASS_BEST_EFFORT_ATOMIC]),
          params=st.sampled_from([{}, {"noRetry": "true"}]), retry=retry_strategies,
          managed=st.sampled_from([(), ("cpu",), (GPU,)]))
    def change_config(self, check: str, klass: str, params: dict[str, str], retry: RetryStrategy,
                      managed: tuple[str, ...]) -> None:
        old = self.world.get(c.PROVISIONING_REQUEST_CONFIG, "", check) or default_config(check)
        assert isinstance(old, ProvisioningRequestConfig)
        spec = evolve(old.spec, provisioning_class_name=klass, parameters=FrozenMap(params),
                            retry_strategy=retry, managed_resources=managed)
        before = self.world.snapshot()
        self.world.put(evolve(old, spec=spec, metadata=evolve(
            old.metadata, generation=(old.metadata.generation or 1) + 1)))
        self.settle_and_check(before)

    @rule(check=st.sampled_from(CHECKS), present=st.booleans())
    def config_presence(self, check: str, present: bool) -> None:
        """The ProvisioningRequestConfig is deleted (the check becomes inactive) or created again."""
        before = self.world.snapshot()
        if present:
            self.world.put(default_config(check))
        else:
            self.world.apply(Delete(c.PROVISIONING_REQUEST_CONFIG, "", check))
        self.settle_and_check(before)

    # --- the job integration held back, and the test helper that drops quota -------------------
    @precondition(lambda self: any(w.has_quota_reservation() for w in self.workloads()))
    @rule(data=st.data())
    def unset_quota(self, data: st.DataObject) -> None:
        """The conformance format's ``setQuotaReservation: {admission: null}``
        (``UnsetQuotaReservationWithCondition``, as upstream tests emulate preemption).  Not while
        a check is Retry or Rejected: quota dropped without an eviction then leaves the workload
        stuck, a known upstream case (issues #3322, #3543) that no_stuck_workload reports."""
        candidates = [w for w in self.workloads() if w.has_quota_reservation()
                      and not any(s.state in (c.CHECK_RETRY, c.CHECK_REJECTED) for s in w.status.admission_checks)]
        if not candidates:
            return
        wl = data.draw(st.sampled_from(candidates))
        before = self.world.snapshot()
        self.world.apply(quota_step(wl, None, self.now, self.config))
        self.settle_and_check(before)

    @rule(data=st.data())
    def user_acts_before_the_job_integration(self, data: st.DataObject) -> None:
        """Everything but the job integration catches up (so an evicted workload keeps its quota
        for now), then a user deactivates or finishes a workload; then everything settles."""
        before = self.world.snapshot()
        self.manager.settle(self.ctx(), [n for n in ALL_CONTROLLERS if n != "job"])
        if self.world.objects(c.WORKLOAD):
            wl = data.draw(st.sampled_from(self.workloads()))
            if data.draw(st.booleans()):
                wl = evolve(wl, spec=evolve(wl.spec, active=False))
            else:
                conds, _ = set_condition(wl.status.conditions,
                                         Condition(c.WORKLOAD_FINISHED, c.TRUE, "Failed", "stopped"), self.now)
                wl = wl.with_status(conditions=conds)
            self.write_workload(wl)
        self.settle_and_check(before)

    # --- Cluster Autoscaler --------------------------------------------------------------------
    @precondition(lambda self: any(True for _ in newest_requests(self.world)))
    @rule(data=st.data())
    def autoscaler(self, data: st.DataObject) -> None:
        pr = data.draw(st.sampled_from(sorted(newest_requests(self.world), key=lambda p: p.metadata.name)))
        triggers = autoscaler_triggers(pr)
        if not triggers:
            return
        trigger = data.draw(st.sampled_from(triggers))
        before = self.world.snapshot()
        autoscaler_step(self.world, pr, trigger, self.now)
        self.settle_and_check(before)

    # --- the clock ------------------------------------------------------------------------------
    @rule(seconds=st.sampled_from([1, 30, 59, 60, 61, 600]))
    def advance(self, seconds: int) -> None:
        before = self.world.snapshot()
        self.now = Time(self.now + seconds)
        self.settle_and_check(before)

    @precondition(lambda self: self.wake is not None)
    @rule()
    def advance_to_deadline(self) -> None:
        """Jump to the next wake-up a reconcile asked for: ends backoffs and retry delays, and
        passes PodsReady timeouts."""
        assert self.wake is not None
        before = self.world.snapshot()
        self.now = Time(self.now + math.ceil(self.wake))
        self.settle_and_check(before)


AdmissionMachine.TestCase.settings = settings(
    settings.default, stateful_step_count=50, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
TestAdmission = AdmissionMachine.TestCase


@pytest.mark.machine_coverage
def test_every_declared_machine_pair_is_exercised(request: pytest.FixtureRequest) -> None:
    """Every (state, trigger) pair of every declared machine is driven by some test (recorded by
    tests/conftest.py over the whole session; this runs last).  On a partial run it only reports."""
    import conftest

    missing = sorted(conftest.all_machine_pairs() - conftest.FIRED)
    if not request.config.stash.get(conftest.WHOLE_SUITE, False):
        pytest.skip(f"partial run; {len(missing)} pairs not exercised so far")
    assert sorted(set(missing) - NOT_YET_EXERCISED) == [], [(m, s.value, t.value) for m, s, t in missing]


NOT_YET_EXERCISED: set[tuple[str, str, str]] = set()
