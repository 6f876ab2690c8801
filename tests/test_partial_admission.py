"""Partial admission (gate ``PartialAdmission``, on by default): a workload that does not fit whole
and has a podset whose ``minCount`` is below its ``count`` is admitted with the counts upstream's
``PodSetReducer`` finds (pkg/scheduler/flavorassigner/podset_reducer.go, scheduler.go
``getInitialAssignments``)."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kueue_provreq.api import constants as c
from kueue_provreq.api.config import Configuration
from kueue_provreq.api.workload import PodSet, Workload
from kueue_provreq.controllers import scheduler
from kueue_provreq.controllers.context import Context
from kueue_provreq.controllers.scheduler import QuotaTable, assign_flavors, reduced_assignment
from kueue_provreq.explain import explain
from kueue_provreq.manifests.inputs import load_inputs
from kueue_provreq.world import Update, World

import builders
from builders import T0
from test_scheduler import cluster_queue, flavor, local_queue


def pod_set(name: str, count: int, min_count: int | None = None, cpu: str = "1") -> PodSet:
    return PodSet(name, count, builders.template({"cpu": cpu}), min_count=min_count)


def admitted_counts(wl: Workload, quota: str, used: str = "0") -> list[int] | None:
    """The counts the reducer admits ``wl`` with in a queue of ``quota`` cpus, ``used`` taken."""
    table = QuotaTable.of(cluster_queue(flavors=(("default", {"cpu": quota}),)))
    found = reduced_assignment(wl, table, {("default", "cpu"): Decimal(used)})
    return None if found is None else [psa.count or 0 for psa in found.pod_sets]


def test_the_upstream_example_gets_the_nine_pods_a_nine_cpu_queue_holds() -> None:
    """jobs-sample-job-partial-admission.yaml: parallelism 20, job-min-parallelism 5, one cpu each."""
    wl = builders.workload(pod_sets=(pod_set("main", 20, 5),))
    assert admitted_counts(wl, "9") == [9]


def test_below_min_count_nothing_is_admitted() -> None:
    wl = builders.workload(pod_sets=(pod_set("main", 20, 5),))
    assert reduced_assignment(wl, QuotaTable.of(cluster_queue(flavors=(("default", {"cpu": "4"}),))), {}) is None


def test_only_the_podsets_with_a_min_count_shrink() -> None:
    wl = builders.workload(pod_sets=(pod_set("a", 10, 2), pod_set("b", 4)))
    assert admitted_counts(wl, "10") == [6, 4]


def test_podsets_shrink_together_step_by_step() -> None:
    """Step i of total takes delta * i // total off each podset: two podsets of 10 (minCount 0)
    in 7 cpus shrink by 7 each (step 14 of 20), not to 7 + 0."""
    wl = builders.workload(pod_sets=(pod_set("a", 10, 0), pod_set("b", 10, 0)))
    assert admitted_counts(wl, "7") == [3, 3]


def test_what_others_hold_counts() -> None:
    """A workload that would only need preemption (``WaitingForQuota``) is reduced too."""
    wl = builders.workload(pod_sets=(pod_set("main", 8, 1),))
    assert admitted_counts(wl, "8", used="5") == [3]


@given(st.integers(1, 40), st.integers(0, 40), st.integers(0, 40), st.integers(1, 3))
def test_one_podset_gets_the_largest_count_that_fits(count: int, min_count: int, quota: int, cpu: int) -> None:
    """With one podset the binary search finds what counting down would: the largest count
    between minCount and count whose requests fit."""
    min_count = min(min_count, count)
    wl = builders.workload(pod_sets=(pod_set("main", count, min_count, cpu=str(cpu)),))
    fits = [n for n in range(min_count, count + 1) if n * cpu <= quota]
    assert admitted_counts(wl, str(quota)) == ([max(fits)] if fits and count > min_count else None)


def schedule(wl: Workload, quota: str, config: Configuration = Configuration()) -> Workload:
    world = World([flavor("default"), cluster_queue(flavors=(("default", {"cpu": quota}),)), local_queue(), wl])
    (update,) = [e for e in scheduler.schedule(world, Context(now=T0, config=config)).effects
                 if isinstance(e, Update)]
    assert isinstance(update.obj, Workload)
    return update.obj


def test_the_scheduler_admits_the_reduced_count_and_its_usage() -> None:
    new = schedule(builders.workload(pod_sets=(pod_set("main", 20, 5),)), "9")
    assert new.is_admitted()
    assert new.status.admission is not None
    (psa,) = new.status.admission.pod_set_assignments
    assert (psa.count, psa.resource_usage["cpu"].value) == (9, 9)


def test_with_the_gate_off_the_whole_count_is_refused() -> None:
    off = Configuration(feature_gates=Configuration().feature_gates.set(c.GATE_PARTIAL_ADMISSION, False))
    new = schedule(builders.workload(pod_sets=(pod_set("main", 20, 5),)), "9", off)
    cond = new.condition(c.WORKLOAD_QUOTA_RESERVED)
    assert cond is not None and (cond.status, cond.reason) == (c.FALSE, c.REASON_EXCEEDS_MAX_QUOTA)


def test_when_no_reduction_fits_the_whole_workloads_reason_stands() -> None:
    new = schedule(builders.workload(pod_sets=(pod_set("main", 20, 5),)), "4")
    cond = new.condition(c.WORKLOAD_QUOTA_RESERVED)
    assert cond is not None and cond.reason == c.REASON_EXCEEDS_MAX_QUOTA
    whole = assign_flavors(builders.workload(pod_sets=(pod_set("main", 20, 5),)).spec.pod_sets,
                           QuotaTable.of(cluster_queue(flavors=(("default", {"cpu": "4"}),))), {})
    assert cond.message == whole.message


def test_explain_admits_the_upstream_examples_reduced_count(upstream: Path) -> None:
    examples = upstream / "examples"
    inputs = load_inputs([str(examples / "single-clusterqueue-setup.yaml"),
                          str(examples / "jobs-sample-job-partial-admission.yaml")])
    report = explain(inputs.objects, "2024-01-01T00:00:00Z")
    lines = [line for action in report.actions for line in action.effects]
    assert any("podSet main 9 of 20 pods (partial admission)" in line for line in lines), lines
    assert any("Pending -> Admitted" in line for line in lines)


@pytest.mark.parametrize("min_count", [None, 20])
def test_a_workload_without_room_to_shrink_is_not_searched(min_count: int | None) -> None:
    assert not scheduler.can_be_partially_admitted(builders.workload(pod_sets=(pod_set("main", 20, min_count),)))
