"""Shared test settings: hypothesis profiles and the location of upstream test data."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

#: CI keeps hypothesis' built-in deterministic profile (derandomize, no database)
#: and raises the example count; `thorough` is for long local runs.
settings.register_profile("ci", settings.get_profile("ci"), max_examples=200)
settings.register_profile("dev", max_examples=50, deadline=None)
settings.register_profile("thorough", max_examples=10_000, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))

UPSTREAM = Path(__file__).resolve().parents[2] / "shared" / "upstream"


@pytest.fixture
def upstream() -> Path:
    """../shared/upstream (CRDs and examples as test data); absent in a user's fresh clone."""
    if not UPSTREAM.is_dir():
        pytest.skip(f"upstream test data not found at {UPSTREAM} (it lives beside the repo, "
                    "in ../shared/upstream, and is not part of a clone)")
    return UPSTREAM


# --- machine coverage: which (state, trigger) pairs of the declared machines the tests drive ----------
#
# Every pair of every table must be exercised by some test other than test_machines.py (which walks
# the tables themselves).  Admission check and ProvisioningRequest pairs are recorded where the
# runtime asks a table (``MachineTable.fire``); the workload machine is not consulted by the
# controllers, so its pairs are read off every Workload change any driver makes to a World.

from kueue_provreq.api import constants as _c  # noqa: E402
from kueue_provreq.api.workload import Workload as _Workload  # noqa: E402
from kueue_provreq.machines import MACHINES, WORKLOAD_MACHINE  # noqa: E402
from kueue_provreq.machines import declarations as _d  # noqa: E402
from kueue_provreq.machines.phases import workload_phase as _phase  # noqa: E402
from kueue_provreq.machines.table import MachineTable as _MachineTable  # noqa: E402
from kueue_provreq.world import World as _World  # noqa: E402

FIRED: set[tuple[str, str, str]] = set()
"""(machine, state, trigger) pairs exercised so far in this session."""

_TESTS_DIR = str(Path(__file__).resolve().parent)
_fire = _MachineTable.fire


def _recording_fire(self: _MachineTable, state: str, trigger: str, guards: object = None) -> str:
    caller = sys._getframe(1).f_code.co_filename
    if not caller.endswith("test_machines.py"):
        FIRED.add((self.name, state, trigger))
    return _fire(self, state, trigger, guards)  # type: ignore[arg-type]


def _workload_trigger(old: _Workload, new: _Workload) -> str | None:
    """The workload machine's trigger a change stands for (None: no transition)."""
    before, after = _phase(old), _phase(new)
    if after == _d.FINISHED:
        return "finish" if before != _d.FINISHED else None
    if old.is_active != new.is_active:
        return "deactivate" if not new.is_active else "reactivate"
    if before == after:
        return None
    if before == _d.PENDING and after in (_d.QUOTA_RESERVED, _d.ADMITTED):
        return "reserve_quota"
    if (before, after) == (_d.QUOTA_RESERVED, _d.ADMITTED):
        return "admit"
    if (before, after) == (_d.ADMITTED, _d.QUOTA_RESERVED):
        return "unadmit"
    if after == _d.EVICTED:
        return "evict"
    if (before, after) == (_d.BACKOFF, _d.PENDING):
        return "requeue"
    if (before, after) == (_d.PENDING, _d.BACKOFF):
        return "delay"
    if before == _d.INACTIVE:
        return "reactivate"
    if before == _d.EVICTED and new.condition(_c.WORKLOAD_REQUEUED) != old.condition(_c.WORKLOAD_REQUEUED):
        return "release_quota"
    return "unset_quota"


def _record_workload(old: object, new: object) -> None:
    if isinstance(old, _Workload) and isinstance(new, _Workload) and old is not new:
        trigger = _workload_trigger(old, new)
        if trigger is not None:
            FIRED.add((WORKLOAD_MACHINE.name, _phase(old), trigger))


_put, _apply = _World.put, _World.apply


def _recording_put(self: _World, obj: Any) -> Any:
    old = self.get(obj.KIND, obj.metadata.namespace, obj.metadata.name)
    _record_workload(old, obj)
    return _put(self, obj)


def _recording_apply(self: _World, effect: Any) -> Any:
    obj = getattr(effect, "obj", None)
    if obj is not None:
        _record_workload(self.get(obj.KIND, obj.metadata.namespace, obj.metadata.name), obj)
    return _apply(self, effect)


_MachineTable.fire = _recording_fire  # type: ignore[method-assign]
_World.put = _recording_put  # type: ignore[method-assign]
_World.apply = _recording_apply  # type: ignore[method-assign]


def all_machine_pairs() -> set[tuple[str, str, str]]:
    return {(m.name, s, t) for m in MACHINES.values() for (s, t) in m.by_key}


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """Run the machine-coverage test last, after every other test had its chance to fire pairs,
    and tell it whether the whole suite is running (only then is a missing pair a failure)."""
    last = [i for i in items if i.get_closest_marker("machine_coverage")]
    for item in last:
        items.remove(item)
        items.append(item)
    modules = {Path(str(i.fspath)).name for i in items}
    wanted = {p.name for p in Path(_TESTS_DIR).glob("test_*.py")}
    config.stash[WHOLE_SUITE] = modules >= wanted and not config.option.keyword and not config.option.markexpr


WHOLE_SUITE = pytest.StashKey[bool]()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "machine_coverage: checks FIRED after every other test (runs last)")
