"""Times at the edges of the Python API: seconds, RFC 3339 text or an aware ``datetime``, read by
:mod:`kueue_provreq.timestamps`; the core's ``Time`` stays whole seconds."""

from __future__ import annotations

import datetime

import pytest
from kueue_provreq.api.meta import TimeError
from kueue_provreq.conformance.runner import Run
from kueue_provreq.conformance.scenario import parse_scenario
from kueue_provreq.controllers.context import Context
from kueue_provreq.engine import Manager
from kueue_provreq.explain import explain
from kueue_provreq.timestamps import to_time
from kueue_provreq.world import World

import builders
from builders import T0

UTC = datetime.UTC


@pytest.mark.parametrize("value", [
    T0, float(T0) + 0.75, "2024-01-01T00:00:00Z", "2024-01-01T01:00:00.5+01:00",
    datetime.datetime(2024, 1, 1, tzinfo=UTC),
    datetime.datetime(2023, 12, 31, 19, tzinfo=datetime.timezone(datetime.timedelta(hours=-5))),
])
def test_every_form_of_a_time_is_the_same_second(value: object) -> None:
    assert to_time(value) == T0  # type: ignore[arg-type]
    assert Context(now=to_time(value)).now == T0  # type: ignore[arg-type]


@pytest.mark.parametrize("value", [datetime.datetime(2024, 1, 1), "yesterday", True, [1]])
def test_what_is_not_a_time_is_refused(value: object) -> None:
    with pytest.raises(TimeError):
        to_time(value)  # type: ignore[arg-type]


@pytest.mark.parametrize("value", ["2024-01-01T00:00:00Z", datetime.datetime(2024, 1, 1, tzinfo=UTC), True,
                                   float("nan")])
def test_the_core_takes_seconds_only(value: object) -> None:
    """Text and datetimes are read at the edges: the core's Context names the reader to use."""
    with pytest.raises(TimeError, match="to_time reads RFC 3339 text"):
        Context(now=value)  # type: ignore[arg-type]
    assert Context(now=float(T0) + 0.75).now == T0


def test_a_naive_datetime_is_refused_with_the_remedy() -> None:
    with pytest.raises(ValueError, match="has no timezone: give one"):
        to_time(datetime.datetime(2024, 1, 1))


def test_settle_takes_seconds_alone() -> None:
    world = World([builders.workload(queue="")])
    manager = Manager(world)
    manager.settle(T0)
    manager.settle(to_time(datetime.datetime(2024, 1, 1, 0, 1, tzinfo=UTC)))
    assert world.get("Workload", builders.NS, "wl") is not None


def test_explain_takes_a_datetime() -> None:
    report = explain([builders.workload(queue="")], datetime.datetime(2024, 1, 1, tzinfo=UTC))
    assert report.at == T0


def test_a_scenario_clock_given_in_python_may_be_text_or_a_datetime() -> None:
    scenario = parse_scenario({"name": "s", "steps": [{"settle": {}}]}, "<test>")
    for clock in ("2024-01-01T00:00:00Z", datetime.datetime(2024, 1, 1, tzinfo=UTC), T0):
        moved = type(scenario)(name=scenario.name, source=scenario.source, clock=clock,  # type: ignore[arg-type]
                               config=scenario.config, faults=(), objects=(), steps=scenario.steps)
        assert moved.clock == float(T0) and Run(moved).run().passed
