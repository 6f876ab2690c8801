"""Upstream's rules as the oracle derives them again (``kueue_provreq.invariants.upstream``).

The oracle writes them independently of the controllers; these tests hold the two writings
to the same answers, so that an invariant judges by the rule the controller should follow.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from kueue_provreq.api import constants as c
from kueue_provreq.api.frozen import FrozenMap, freeze
from kueue_provreq.api.meta import ObjectMeta, OwnerReference
from kueue_provreq.api.provisioning import (
    ProvisioningRequest,
    ProvisioningRequestConfig,
    ProvisioningRequestConfigSpec,
    ProvisioningRequestSpec,
)
from kueue_provreq.api.workload import Admission, PodSet, PodSetAssignment
from kueue_provreq.controllers.backoff import nominal_delay_seconds
from kueue_provreq.controllers.provisioning import ReconcileError, _synced_with_config, req_is_needed
from kueue_provreq.invariants import upstream

from builders import NS, workload


def test_backoff_agrees_with_the_controllers_backoff() -> None:
    for base in (0, 1, 60, 100):
        for cap in (0, 50, 1800, 3600):
            for n in range(1, 12):
                assert upstream.nominal_retry_delay(n, base, cap) == nominal_delay_seconds(n, base, cap)


RESOURCES = ("cpu", "memory", "example.com/gpu")
resources = st.dictionaries(st.sampled_from(RESOURCES), st.just("1"), max_size=2)
containers = st.lists(st.fixed_dictionaries({}, optional={"requests": resources, "limits": resources}).map(
    lambda r: {"name": "c", "resources": r}), max_size=2)
templates = st.fixed_dictionaries({}, optional={"containers": containers, "initContainers": containers}).map(
    lambda spec: freeze({"spec": spec}))
#: a pod set's count and template, and its assignment: missing, without a count (None), or with one
pod_sets = st.tuples(st.integers(0, 2), templates, st.sampled_from(["missing", None, 0, 1]))


@given(sets=st.lists(pod_sets, min_size=1, max_size=3), managed=st.sets(st.sampled_from(RESOURCES), max_size=2),
       admitted=st.booleans())
def test_needs_request_agrees_with_req_is_needed(sets: list[tuple[int, FrozenMap[str, object], object]],
                                                  managed: set[str], admitted: bool) -> None:
    """``reqIsNeeded`` as the oracle writes it, and as the provisioning controller does; a
    missing assignment, which makes upstream's reconcile fail before it writes anything, counts
    as needing a request."""
    pod_sets_ = tuple(PodSet(f"ps{i}", n, t) for i, (n, t, _) in enumerate(sets))
    assignments = {f"ps{i}": PodSetAssignment(f"ps{i}", count=a) for i, (_, _, a) in enumerate(sets) if a != "missing"}
    wl = workload("wl", pod_sets=pod_sets_, admission=Admission("cq", tuple(assignments.values())) if admitted else None)
    prc = ProvisioningRequestConfig(ObjectMeta(name="prc"), ProvisioningRequestConfigSpec(
        c.CLASS_CHECK_CAPACITY, managed_resources=tuple(sorted(managed))))
    try:
        expected = req_is_needed(wl, prc, assignments if admitted else {})
    except ReconcileError:
        expected = True
    assert upstream.needs_request(wl, prc) == expected


parameters = st.dictionaries(st.sampled_from(["a", "b", "c"]), st.sampled_from(["1", "2"]), max_size=2)


@given(klass=st.sampled_from([c.CLASS_CHECK_CAPACITY, c.CLASS_BEST_EFFORT_ATOMIC]), config=parameters,
       on_request=st.none() | parameters)
def test_in_sync_agrees_with_the_controller(klass: str, config: dict[str, str], on_request: dict[str, str] | None) -> None:
    """``provReqSyncedWithConfig``: the class, and every parameter of the config (not those the
    request has besides, from annotations)."""
    prc = ProvisioningRequestConfig(ObjectMeta(name="prc"), ProvisioningRequestConfigSpec(
        c.CLASS_CHECK_CAPACITY, parameters=FrozenMap(config)))
    pr = ProvisioningRequest(ObjectMeta(name="wl-check-1", namespace=NS),
                             ProvisioningRequestSpec(klass, None if on_request is None else FrozenMap(on_request)))
    assert upstream.in_sync(pr, prc) == _synced_with_config(pr, prc)


def _request(name: str, owner_uid: str = "u-wl", controller: bool = True) -> ProvisioningRequest:
    return ProvisioningRequest(ObjectMeta(name=name, namespace=NS, uid=f"u-{name}", owner_references=(
        OwnerReference(c.KUEUE_V1BETA2, c.WORKLOAD, "wl", owner_uid, controller),)))


def test_requests_of_selects_by_controller_and_name_oldest_first() -> None:
    """A check's requests are those the workload controls whose name carries the check (PC §1.5):
    not those of an earlier workload of the same name, nor those it only owns, nor another
    check's."""
    wl = workload("wl", uid="u-wl")
    objs = [_request("wl-check-10"), _request("wl-check-2"), _request("wl-check-7", owner_uid="u-earlier"),
            _request("wl-check-8", controller=False), _request("wl-other-5")]
    assert [(n, pr.metadata.name) for n, pr in upstream.requests_of(objs, wl, "check")] == [
        (2, "wl-check-2"), (10, "wl-check-10")]


def test_eviction_count_reads_scheduling_stats() -> None:
    wl = workload("w")
    assert upstream.eviction_count(wl) == 0
    stats = FrozenMap({"evictions": (FrozenMap({"reason": "Preempted", "underlyingCause": "", "count": 2}),
                                     FrozenMap({"reason": "AdmissionCheck", "underlyingCause": "", "count": 1}))})
    assert upstream.eviction_count(wl.with_status(extra=FrozenMap({"schedulingStats": stats}))) == 3
