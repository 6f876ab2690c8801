"""Benchmarks for the core issue, all measured in one run so that ratios are meaningful
on a noisy machine.

(a) one provisioning decision through the library: reconcile a quota-reserved workload
    whose ProvisioningRequest Failed -> the check goes to Retry;
(b) the same decision through the naive use of ``transitions``: the workload, its request
    and its check as mutable models, each with a Machine built for this workload, one
    trigger per step, and otherwise the library's own code (so both give the same Result);
    the narrower variant with the check's Machine only is printed beside it;
(c) settling N workloads through a full provision -> fail -> retry -> provision cycle,
    for N in 1k, 10k, 100k (``--sizes`` to change), in fast mode (``verify=False``): the time,
    the reconciles per workload and how many of them changed something, and the peak memory
    the settled world took per workload (peak RSS above the RSS before it was built);
(c') the same settle in verify mode (the default of the runner, the explorer and the tests)
    for the sizes up to ``--verify-up-to`` (10k), with its ratio to fast mode.

Usage: python benchmarks/bench_core.py [--sizes 1000,10000,100000] [--seconds 1] [--repeat 3] [--cpu]
"""

from __future__ import annotations

import argparse
import gc
import itertools
import resource
import statistics
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path

from kueue_provreq.api import constants as c
from kueue_provreq.api.evolve import evolve
from kueue_provreq.api.frozen import FrozenMap, freeze
from kueue_provreq.api.memo import clear_caches
from kueue_provreq.api.meta import Condition, ObjectMeta, OwnerReference, Time
from kueue_provreq.api.provisioning import (
    ProvisioningRequest,
    ProvisioningRequestConfig,
    ProvisioningRequestConfigSpec,
    ProvisioningRequestPodSet,
    ProvisioningRequestSpec,
    ProvisioningRequestStatus,
    Reference,
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
    ResourceGroup,
    ResourceQuota,
)
from kueue_provreq.api.workload import (
    Admission,
    AdmissionCheckState,
    PodSet,
    PodSetAssignment,
    Workload,
    WorkloadSpec,
    WorkloadStatus,
)
from kueue_provreq.controllers import provisioning
from kueue_provreq.controllers.context import Context
from kueue_provreq.engine import Manager
from kueue_provreq.machines import (
    ADMISSION_CHECK_MACHINE,
    PROVISIONING_REQUEST_MACHINE,
    WORKLOAD_MACHINE,
    CheckTrigger,
    Transition,
    WorkloadPhase,
)
from kueue_provreq.machines.phases import provisioning_request_phase, workload_phase
from kueue_provreq.machines.table import MachineTable
from kueue_provreq.world import Update, World
from transitions import Machine

sys.path.insert(0, str(Path(__file__).resolve().parent))
import floor  # noqa: E402

T0 = Time(1_704_067_200)  # 2024-01-01T00:00:00Z
NS_ = "default"
TEMPLATE = freeze({"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}})


def setup_objects(quota: int) -> list:
    return [
        ResourceFlavor(ObjectMeta(name="default-flavor", uid="rf")),
        ClusterQueue(ObjectMeta(name="cq", uid="cq"), ClusterQueueSpec(namespace_selector=EVERY_NAMESPACE,
            resource_groups=(ResourceGroup(("cpu",), (FlavorQuotas("default-flavor", (
                ResourceQuota("cpu", Quantity.parse(str(quota))),)),)),),
            admission_checks_strategy=AdmissionChecksStrategy((AdmissionCheckStrategyRule("prov"),)))),
        LocalQueue(ObjectMeta(name="lq", namespace=NS_, uid="lq"), LocalQueueSpec("cq")),
        AdmissionCheck(ObjectMeta(name="prov", uid="ac"), AdmissionCheckSpec(
            c.PROVISIONING_REQUEST_CONTROLLER_NAME,
            ParametersReference(c.KUEUE_GROUP, c.PROVISIONING_REQUEST_CONFIG, "prc"))),
        ProvisioningRequestConfig(ObjectMeta(name="prc", uid="prc"),
                                  ProvisioningRequestConfigSpec(provisioning_class_name=c.CLASS_CHECK_CAPACITY)),
    ]


def workload(i: int) -> Workload:
    return Workload(ObjectMeta(name=f"wl-{i}", namespace=NS_, uid=f"wl-uid-{i:07d}", generation=1,
                               creation_timestamp=T0),
                    WorkloadSpec(pod_sets=(PodSet("main", 1, TEMPLATE),), queue_name="lq"))


# --- (a) and (b): one decision --------------------------------------------------------


def decision_world() -> tuple[World, tuple[str, str, str]]:
    """A quota-reserved workload with check ``prov`` Pending and request attempt 1 Failed."""
    wl = workload(0)
    wl = evolve(wl, status=WorkloadStatus(
        conditions=(Condition(c.WORKLOAD_QUOTA_RESERVED, c.TRUE, c.REASON_QUOTA_RESERVED, "", T0),),
        admission=Admission("cq", (PodSetAssignment("main", FrozenMap({"cpu": "default-flavor"}),
                                                    FrozenMap({"cpu": Quantity.parse("1")}), 1),)),
        admission_checks=(AdmissionCheckState("prov", c.CHECK_PENDING, T0),)))
    pr = ProvisioningRequest(
        ObjectMeta(name="wl-0-prov-1", namespace=NS_, uid="pr-1", creation_timestamp=T0,
                   labels=FrozenMap({c.LABEL_MANAGED: "true"}),
                   owner_references=(OwnerReference(c.KUEUE_V1BETA2, c.WORKLOAD, "wl-0", wl.metadata.uid,
                                                    True, True),)),
        ProvisioningRequestSpec(c.CLASS_CHECK_CAPACITY, FrozenMap(),
                                (ProvisioningRequestPodSet(Reference("ppt-wl-0-prov-1-main"), 1),)),
        ProvisioningRequestStatus((Condition(c.PR_FAILED, c.TRUE, "CapacityIsNotFound", "no capacity", T0),)))
    return World([*setup_objects(10), wl, pr]), (c.WORKLOAD, NS_, "wl-0")


def library_decision(world: World, key: tuple[str, str, str], ctx: Context) -> str:
    result = provisioning.reconcile(world, key, ctx)
    wl = next(e.obj for e in result.effects if isinstance(e, Update) and isinstance(e.obj, Workload))
    state = wl.status.admission_checks[0].state
    assert state == c.CHECK_RETRY, state
    return state


class NaiveModel:
    """What a first-time user of ``transitions`` writes: a mutable model with its own
    ``Machine`` (declared with the library's states and edges, ``auto_transitions`` left at
    its default), put in the state read off the object.  Guards are methods of the model."""

    def __init__(self, table: MachineTable, state: str, **guards: bool) -> None:
        self.guards = guards
        Machine(model=self, states=[s.value for s in table.states], initial=str(state),
                transitions=[{"trigger": e.trigger.value, "source": e.source.value,
                              "dest": None if e.dest is None else e.dest.value,
                              "conditions": [g.value for g in e.conditions],
                              "unless": [g.value for g in e.unless]}
                             for e in table.edges])

    def within_backoff_limit(self) -> bool:
        return self.guards.get("within_backoff_limit", False)

    def keep_quota(self) -> bool:
        return self.guards.get("keep_quota", False)

    def newer_attempt(self) -> bool:
        return self.guards.get("newer_attempt", False)


def naive_decision(world: World, key: tuple[str, str, str], ctx: Context, lifecycles: int = 3) -> str:
    """The same reconcile, with every lifecycle question answered by naive models: one per
    lifecycle the decision reads (the Workload, its request, its check; ``lifecycles=1``: the
    check only), each a Machine built for this workload, and one trigger per decision step.
    Everything else (lookups, naming, backoff, the new status and the event) is the library's
    own code, so the two results are equal and only the state machinery differs."""
    wl = world.get(*key)
    assert isinstance(wl, Workload)
    pr = world.owned_by_name(c.PROVISIONING_REQUEST, key[1], key[2])[0]
    assert isinstance(pr, ProvisioningRequest)
    if lifecycles == 3:
        workload_model = NaiveModel(WORKLOAD_MACHINE, workload_phase(wl))
        request_model = NaiveModel(PROVISIONING_REQUEST_MACHINE, provisioning_request_phase(pr))
        assert workload_model.state == WorkloadPhase.QUOTA_RESERVED  # type: ignore[attr-defined]
        assert request_model.state == c.PR_FAILED  # type: ignore[attr-defined]

    def fire(state: str, trigger: CheckTrigger, check: str, within_backoff_limit: bool = False,
             keep_quota: bool = False, newer_attempt: bool = False) -> Transition:
        check_model = NaiveModel(ADMISSION_CHECK_MACHINE, state, within_backoff_limit=within_backoff_limit,
                                 keep_quota=keep_quota, newer_attempt=newer_attempt)
        getattr(check_model, trigger)()
        return Transition(ADMISSION_CHECK_MACHINE.name, state, trigger, str(check_model.state),  # type: ignore[attr-defined]
                          check)

    memoised = provisioning._check_transition
    provisioning._check_transition = fire  # type: ignore[assignment]
    try:
        return library_decision(world, key, ctx)
    finally:
        provisioning._check_transition = memoised


def _batch(fn: Callable[[], object]) -> int:
    """How many calls of ``fn`` take about 50 ms."""
    n = 1
    while True:
        t = time.perf_counter()
        for _ in range(n):
            fn()
        if time.perf_counter() - t > 0.05:
            return n
        n *= 2


def _sample(fn: Callable[[], object], n: int) -> float:
    t = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t) / n * 1e6


def per_call(*fns: Callable[[], object], seconds: float = 1.0) -> list[float]:
    """Median microseconds per call of each of ``fns``, over batches lasting about ``seconds``
    in total per function.  The batches of the functions alternate, so that a slow spell of a
    noisy machine weighs on all of them alike and their ratios stay comparable."""
    sizes = [_batch(fn) for fn in fns]
    samples: list[list[float]] = [[] for _ in fns]
    deadline = time.perf_counter() + seconds * len(fns)
    while time.perf_counter() < deadline or len(samples[0]) < 5:
        for fn, n, out in zip(fns, sizes, samples, strict=True):
            out.append(_sample(fn, n))
    return [statistics.median(out) for out in samples]


# --- (c): settling many workloads -----------------------------------------------------


def set_condition_on_latest(world: World, attempt: int, type_: str, reason: str, now: Time) -> int:
    """The autoscaler step for every workload's request of ``attempt``."""
    n = 0
    cond = Condition(type_, c.TRUE, reason, f"{type_} by benchmark", now)  # as CA's, one text for all
    for pr in world.objects(c.PROVISIONING_REQUEST):
        assert isinstance(pr, ProvisioningRequest)
        if not pr.metadata.name.endswith(f"-{attempt}"):
            continue
        world.apply(Update(evolve(pr, status=evolve(
            pr.status, conditions=pr.status.conditions + (cond,)))))
        n += 1
    return n


def settle_cycle(n: int, verify: bool = False, instrument: Callable[[Manager], None] | None = None
                 ) -> tuple[float, Manager, int, World]:
    """Returns (seconds, the Manager and its counts, admitted, the settled world) for n
    workloads through fail -> retry -> provision.
    Only the four settles are timed; Cluster Autoscaler's condition writes between them are
    the world outside the library.  ``instrument`` is given the Manager before the first
    settle (``bench_breakdown`` times its parts)."""
    world = World([*setup_objects(n + 10), *(workload(i) for i in range(n))])
    manager = Manager(world, verify=verify)
    if instrument is not None:
        instrument(manager)
    now = T0
    elapsed = 0.0

    def settle() -> None:
        nonlocal elapsed
        t = time.perf_counter()
        manager.settle(Context(now))
        elapsed += time.perf_counter() - t

    settle()
    assert set_condition_on_latest(world, 1, c.PR_FAILED, "CapacityIsNotFound", now) == n
    settle()
    now = Time(now + 60)
    settle()
    assert set_condition_on_latest(world, 2, c.PR_PROVISIONED, "CapacityIsFound", now) == n
    settle()
    admitted = sum(1 for w in world.objects(c.WORKLOAD) if isinstance(w, Workload) and w.is_admitted())
    return elapsed, manager, admitted, world


def rss_kib() -> int:
    """The process's resident set now (Linux), in KiB."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() // 1024


def peak_rss_kib() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux


def full_collection_seconds() -> float:
    """What the cyclic collector costs once over what is alive (the Manager pauses it during a
    settle; afterwards it runs as usual, at most once per 25% growth of the heap)."""
    t = time.perf_counter()
    gc.collect()
    return time.perf_counter() - t


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="1000,10000,100000")
    p.add_argument("--seconds", type=float, default=1.0, help="time per micro-benchmark")
    p.add_argument("--verify-up-to", type=int, default=10_000,
                   help="sizes up to this one are also settled in verify mode")
    p.add_argument("--repeat", type=int, default=3,
                   help="settles of each size below 100k, the fastest counts (the machine is noisy)")
    p.add_argument("--cpu", action="store_true",
                   help="time in CPU seconds of this process, not wall-clock seconds (as bench_ab.py does): on"
                        " a shared machine, what the code costs without the time it waits for a core")
    args = p.parse_args(argv)
    if not args.cpu:
        return run(args)
    wall = time
    globals()["time"] = floor.time = types.SimpleNamespace(perf_counter=time.process_time)  # every timer
    try:
        return run(args)
    finally:
        globals()["time"] = floor.time = wall


def run(args: argparse.Namespace) -> int:
    world, key = decision_world()
    ctx = Context(Time(T0 + 5))
    a, b, b1 = per_call(lambda: library_decision(world, key, ctx), lambda: naive_decision(world, key, ctx),
                        lambda: naive_decision(world, key, ctx, lifecycles=1), seconds=args.seconds)
    print(f"(a) provisioning decision, library:                  {a:9.1f} us")
    print(f"(b) same decision, a Machine per lifecycle it reads: {b:9.1f} us   "
          f"ratio (b)/(a) {b / a:5.1f}x   (target >= 60x)")
    print(f"    (the check's Machine only:                       {b1:9.1f} us   "
          f"ratio {b1 / a:5.1f}x)")

    sizes = [int(s) for s in args.sizes.split(",") if s]
    results = []
    for n in sizes:
        clear_caches()  # each size starts cold; the fastest of its repeats counts
        best: tuple[float, int, int] | None = None
        for run in range(args.repeat if n < 100_000 else 1):
            gc.collect()
            before = rss_kib()
            secs, manager, admitted, settled = settle_cycle(n)
            reconciles, changing = manager.reconciles, manager.changing_reconciles
            if admitted != n:
                print(f"ERROR: {admitted} of {n} workloads admitted after the cycle", file=sys.stderr)
                return 1
            if run == 0:  # the first world of this size is the one the peak can be charged to
                per_workload_kib = max(0, peak_rss_kib() - before) / n
            collect = full_collection_seconds()
            del settled
            if best is None or secs < best[0]:
                best = (secs, reconciles, changing)
        assert best is not None
        secs, reconciles, changing = best
        results.append((n, secs))
        print(f"(c) settle {n:>7} workloads (provision-fail-retry-provision): {secs:8.2f} s"
              f"  {secs / n * 1e6:7.1f} us/workload  {reconciles / n:5.1f} reconciles/workload,"
              f" {changing / n:4.1f} changed something ({1 - changing / reconciles:4.0%} changed nothing;"
              f" target <= 25%)", flush=True)
        del manager  # the floor runs without the settled world: the collector would walk it
        gc.collect()
        floor_secs = min(floor.run(n) for _ in range(args.repeat if n < 100_000 else 1))
        print(f"    floor {n:>7} workloads (the same writes in plain Python, benchmarks/floor.py):"
              f" {floor_secs / n * 1e6:7.1f} us/workload   ratio settle/floor {secs / floor_secs:5.1f}x"
              f"   (target <= 4x)", flush=True)
        print(f"    memory: peak RSS {peak_rss_kib() / 1024:.0f} MiB, {per_workload_kib * 1.024:.2f} KB"
              f" ({per_workload_kib:.2f} KiB)/workload"
              f" above the RSS before the world was built (target < 6 KB; meaningful when the sizes"
              f" ascend); one full GC of the settled world: {collect:.2f} s", flush=True)
        if n <= args.verify_up_to:
            vsecs, vmanager, _, _ = min((settle_cycle(n, verify=True) for _ in range(args.repeat)),
                                        key=lambda run: run[0])
            print(f"(c') verify mode {n:>7} workloads: {vsecs:8.2f} s  {vsecs / n * 1e6:7.1f} us/workload"
                  f"   ratio verify/fast {vsecs / secs:4.2f}x   (target <= 1.3x at 10k);"
                  f" {vmanager.proofs / n:4.1f} proofs/workload (reconciles rerun to show one left out"
                  f" changes nothing)", flush=True)
    for (n1, s1), (n2, s2) in itertools.pairwise(results):
        print(f"    scaling {n1} -> {n2} ({n2 // n1}x workloads): {s2 / s1:5.2f}x time"
              f"   (target <= {1.1 * n2 / n1:.0f}x)")
    if len(results) > 1:
        (n1, s1), (n2, s2) = results[0], results[-1]
        print(f"    per-workload cost {n2} / {n1}: {(s2 / n2) / (s1 / n1):4.2f}x   (target <= 1.1x)")
    if results and results[-1][0] == 100_000:
        print(f"    100k workloads: {results[-1][1]:.2f} s   (target < 20 s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
