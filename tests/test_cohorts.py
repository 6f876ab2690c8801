"""The cohort tree's quota arithmetic (upstream ``resource_node.go``), cycles, and the
webhooks' refusal of limits without a parent."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kueue_provreq.api import constants as c
from kueue_provreq.api.queues import ClusterQueue
from kueue_provreq.controllers import cohorts
from kueue_provreq.errors import KueueProvreqError
from kueue_provreq.world import World

from builders import objects

CPU = ("default", "cpu")


def queue(name: str, cohort: str, nominal: str, borrowing: str | None = None, lending: str | None = None) -> str:
    limits = (f", borrowingLimit: '{borrowing}'" if borrowing is not None else "") + \
        (f", lendingLimit: '{lending}'" if lending is not None else "")
    return f"""
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {{name: {name}}}
spec:
  namespaceSelector: {{}}
  cohortName: {cohort}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: default
      resources:
      - {{name: cpu, nominalQuota: '{nominal}'{limits}}}
"""


def cohort(name: str, parent: str = "", nominal: str | None = None) -> str:
    spec = f"parentName: {parent}\n" if parent else ""
    if nominal is not None:
        spec += f"""resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: default
      resources:
      - {{name: cpu, nominalQuota: '{nominal}'}}
"""
    return f"""
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata: {{name: {name}}}
spec:
  {spec}
"""


def tree(*texts: str, used: dict[str, str] | None = None) -> cohorts.Tree:
    usage = {name: {CPU: Decimal(v)} for name, v in (used or {}).items()}
    return cohorts.Tree.build(World(objects(*texts)), usage)


def test_flat_cohort_lends_everything_without_lending_limits() -> None:
    t = tree(queue("a", "eng", "10"), queue("b", "eng", "6"), used={"b": "4"})
    a = cohorts.cq_node("a")
    assert t.available(a, CPU) == 12  # 16 in the cohort, 4 used by b
    assert t.potential(a, CPU) == 16
    assert t.borrow_level(a, CPU, Decimal(11)) == (1, False)  # above its own 10: borrows from the root
    assert t.borrow_level(a, CPU, Decimal(10)) == (0, True)


def test_borrowing_and_lending_limits() -> None:
    t = tree(queue("lender", "eng", "10", lending="3"), queue("borrower", "eng", "5", borrowing="2"))
    borrower, lender = cohorts.cq_node("borrower"), cohorts.cq_node("lender")
    assert t.potential(borrower, CPU) == 7  # its 5 and at most 2 borrowed (3 lent)
    assert t.potential(lender, CPU) == 15  # it keeps 7 and may take the cohort's 8
    t.add(borrower, CPU, Decimal(7))
    assert t.available(borrower, CPU) == 0
    assert t.available(lender, CPU) == 8  # its own 7 and the 1 lent nobody took
    t.remove(borrower, CPU, Decimal(7))
    assert t.usage[cohorts.cohort_node("eng")].get(CPU, 0) == 0


def test_hierarchical_cohort_takes_its_own_quota_and_the_parents() -> None:
    t = tree(cohort("root", nominal="4"), cohort("child", parent="root"), queue("q", "child", "2"))
    q = cohorts.cq_node("q")
    assert t.potential(q, CPU) == 6
    assert t.borrow_level(q, CPU, Decimal(3)) == (2, False)  # only the root holds 3
    assert t.path(q) == "/root/child/q"


def test_a_cycle_leaves_the_queues_under_it_out() -> None:
    world = World(objects(cohort("x", parent="y"), cohort("y", parent="x"), queue("q", "x", "2"),
                          queue("free", "z", "2")))
    t = cohorts.Tree.build(world, {})
    assert cohorts.cq_node("q") not in t and cohorts.cq_node("free") in t
    q = world.get(c.CLUSTER_QUEUE, "", "q")
    assert isinstance(q, ClusterQueue) and cohorts.in_cycle(world, q)


@given(st.lists(st.tuples(st.sampled_from("ab"), st.integers(0, 6)), max_size=8))
def test_usage_goes_back_to_nothing_when_every_admission_is_undone(steps: list[tuple[str, int]]) -> None:
    t = tree(queue("a", "eng", "4", lending="2"), queue("b", "eng", "3", borrowing="2"))
    for name, value in steps:
        t.add(cohorts.cq_node(name), CPU, Decimal(value))
    for name, value in reversed(steps):
        t.remove(cohorts.cq_node(name), CPU, Decimal(value))
    assert all(v == 0 for usage in t.usage.values() for v in usage.values())


@pytest.mark.parametrize(("text", "path", "message"), [
    (cohort("root").replace("spec:\n  ", "spec:\n  resourceGroups: [{coveredResources: [cpu], flavors: [{name: "
                            "default, resources: [{name: cpu, nominalQuota: '1', lendingLimit: '1'}]}]}]"),
     "spec.resourceGroups[0].flavors[0].resources[0].lendingLimit", "must be nil when parent is empty"),
    (queue("q", "eng", "1").replace("cohortName: eng", "cohortName: ''").replace(
        "nominalQuota: '1'", "nominalQuota: '1', lendingLimit: '1'"),
     "spec.resourceGroups[0].flavors[0].resources[0].lendingLimit", "must be nil when cohort is empty"),
])
def test_limits_without_a_parent_are_refused(text: str, path: str, message: str) -> None:
    with pytest.raises(KueueProvreqError) as refused:
        objects(text)
    assert path in str(refused.value) and message in str(refused.value)
