"""A write's parts (``controllers/parts.py``): what the routing and the write path's no-op test
read of a Workload write.  They must be exact: 0 when, and only when, nothing changed, as the
fast engine drops a write whose parts are 0."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kueue_provreq.api import constants as c
from kueue_provreq.api.evolve import evolve
from kueue_provreq.api.frozen import FrozenMap
from kueue_provreq.api.model import fields
from kueue_provreq.api.workload import RequeueState, Workload, WorkloadStatus
from kueue_provreq.controllers.parts import (
    ADMISSION,
    CHECK_DETAILS,
    CHECKS,
    CONDITION,
    EXTRA,
    METADATA,
    REQUEUE_STATE,
    SPEC,
    UNREAD,
    changed_parts,
    parts,
)

from builders import ADMITTED, admission, check_state, cond, reserved_in, workload

BASE = workload(conditions=(reserved_in(), ADMITTED), checks=(check_state(state=c.CHECK_READY),),
                admission=admission())


def with_status(wl: Workload, **changes: Any) -> Workload:
    return evolve(wl, status=evolve(wl.status, **changes))


def test_each_field_of_a_workload_is_some_part() -> None:
    """A field the parts did not look at would make the fast engine drop a write that changes it."""
    assert [f.name for f in fields(Workload)] == ["metadata", "spec", "status", "extra"]
    assert [f.name for f in fields(WorkloadStatus)] == [
        "conditions", "admission", "admission_checks", "requeue_state", "extra"]
    changed = {
        "metadata": evolve(BASE, metadata=evolve(BASE.metadata, generation=2)),
        "spec": evolve(BASE, spec=evolve(BASE.spec, active=False)),
        "extra": evolve(BASE, extra=FrozenMap({"x": 1})),
        "admission": with_status(BASE, admission=admission("other")),
        "checks": with_status(BASE, admission_checks=(check_state(state=c.CHECK_RETRY),)),
        "check details": with_status(BASE, admission_checks=(check_state(state=c.CHECK_READY, message="m"),)),
        "requeue state": with_status(BASE, requeue_state=RequeueState(1)),
        "status extra": with_status(BASE, extra=FrozenMap({"x": 1})),
        "a condition": with_status(BASE, conditions=(reserved_in(at=5), ADMITTED)),
        "an unread condition": with_status(BASE, conditions=(*BASE.status.conditions, cond("Custom"))),
        "the conditions' order": with_status(BASE, conditions=(ADMITTED, reserved_in())),
    }
    assert {what: changed_parts(BASE, wl) for what, wl in changed.items()} == {
        "metadata": METADATA, "spec": SPEC, "extra": EXTRA, "admission": ADMISSION,
        "checks": CHECKS | CHECK_DETAILS, "check details": CHECK_DETAILS, "requeue state": REQUEUE_STATE,
        "status extra": EXTRA, "a condition": CONDITION[c.WORKLOAD_QUOTA_RESERVED],
        "an unread condition": UNREAD, "the conditions' order": UNREAD}


def test_a_condition_gone_is_its_part() -> None:
    assert changed_parts(BASE, with_status(BASE, conditions=(reserved_in(),))) == parts(c.WORKLOAD_ADMITTED)


def test_parts_meet_by_bits() -> None:
    assert parts(c.WORKLOAD_ADMITTED, c.WORKLOAD_EVICTED) & parts(c.WORKLOAD_EVICTED)
    assert not parts(c.WORKLOAD_ADMITTED) & (METADATA | SPEC | UNREAD)
    with pytest.raises(KeyError):
        parts("NotACondition")


Edit = Callable[[Workload], Workload]

_EDITS = st.lists(st.sampled_from(list[Edit]([
    lambda wl: wl,
    lambda wl: evolve(wl),  # equal, not the same object
    lambda wl: with_status(wl, conditions=wl.status.conditions[::-1]),
    lambda wl: with_status(wl, conditions=wl.status.conditions[:1]),
    lambda wl: with_status(wl, conditions=(*wl.status.conditions, cond(c.WORKLOAD_EVICTED))),
    lambda wl: with_status(wl, admission=None),
    lambda wl: with_status(wl, admission_checks=()),
    lambda wl: with_status(wl, requeue_state=RequeueState(2)),
    lambda wl: evolve(wl, spec=evolve(wl.spec, priority=3)),
])), max_size=4)


@given(_EDITS, _EDITS)
def test_parts_are_zero_exactly_when_the_workloads_are_equal(a: list[Edit], b: list[Edit]) -> None:
    old, new = BASE, BASE
    for edit in a:
        old = edit(old)
    for edit in b:
        new = edit(new)
    assert (changed_parts(old, new) == 0) == (old == new)


_CONDITIONS = st.lists(st.builds(cond, st.sampled_from([c.WORKLOAD_ADMITTED, c.WORKLOAD_EVICTED, "Custom"]),
                                 st.sampled_from([c.TRUE, c.FALSE])), max_size=4).map(tuple)


@given(_CONDITIONS, _CONDITIONS, st.booleans())
def test_condition_parts_are_those_of_the_first_condition_of_each_type(
        before: tuple[Any, ...], after: tuple[Any, ...], in_place: bool) -> None:
    """Pairs compared in place (one condition per type, lined up) or types indexed, the parts
    are those of each type whose first condition differs, and UNREAD for the rest of a change."""
    if in_place:  # a write that replaces conditions where they stand, as most do
        after = tuple(b if a.type == b.type else a for a, b in zip(before, after, strict=False)) + before[len(after):]
    old, new = with_status(BASE, conditions=before), with_status(BASE, conditions=after)
    first_old = {cd.type: cd for cd in reversed(before)}
    first_new = {cd.type: cd for cd in reversed(after)}
    expected = 0
    for type_ in {*first_old, *first_new}:
        if first_old.get(type_) != first_new.get(type_):
            expected |= CONDITION.get(type_, UNREAD)
    if not expected and before != after:
        expected = UNREAD
    assert changed_parts(old, new) == expected
