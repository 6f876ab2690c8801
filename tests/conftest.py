"""Shared test settings: hypothesis profiles and the location of upstream test data."""

from __future__ import annotations

import os
import sys
from collections import Counter
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
# the tables themselves).  A pair counts when the code fires it: ``MachineTable.fire`` is the one
# decision function, so recording its calls records what the controllers, the runner and the
# explorer decided.

from kueue_provreq.machines import MACHINES  # noqa: E402
from kueue_provreq.machines.table import MachineTable as _MachineTable  # noqa: E402

FIRED: set[tuple[str, str, str]] = set()
"""(machine, state, trigger) pairs exercised so far in this session."""

_TESTS_DIR = str(Path(__file__).resolve().parent)
_fire = _MachineTable.fire


def _recording_fire(self: _MachineTable, state: str, trigger: str, guards: Any = None) -> Any:  # type: ignore[type-arg]
    caller = sys._getframe(1).f_code.co_filename
    if not caller.endswith("test_machines.py"):
        FIRED.add((self.name, str(state), str(trigger)))
    return _fire(self, state, trigger, guards)


_MachineTable.fire = _recording_fire  # type: ignore[method-assign]


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


# --- the local control plane with the real Kueue (built by `make oracle`) ------------------------------


@pytest.fixture(scope="session")
def testbed(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A running testbed for the whole session (etcd, kube-apiserver, kube-controller-manager and
    the real Kueue), stopped at the end; skipped with the reason where `make oracle` has not built
    the programs (a machine without Go)."""
    from kueue_provreq.cluster.client import ClusterError
    from kueue_provreq.cluster.testbed import controlplane

    try:
        oracle = controlplane.find_oracle()
    except ClusterError as e:
        pytest.skip(f"no real Kueue: {e}")
    bed = controlplane.up(oracle, tmp_path_factory.mktemp("testbed") / "state")
    try:
        yield bed
    finally:
        controlplane.down(Path(bed.folder))


# --- why tests were skipped ---------------------------------------------------------------------


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """One line per reason a test was skipped, with how many it skipped, so that ``make test``
    says what a fresh machine lacks (no real Kueue built, no upstream checkout...) rather than
    only a count."""
    reasons: Counter[str] = Counter()
    for report in terminalreporter.stats.get("skipped", []):
        longrepr = report.longrepr
        reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
        reasons[reason.removeprefix("Skipped: ")] += 1
    if not reasons:
        return
    terminalreporter.section("skipped, by reason", sep="-")
    for reason, count in reasons.most_common():
        terminalreporter.write_line(f"{count:4d} skipped: {reason}")


# --- the models stay immutable -------------------------------------------------------------------
#
# The models are not frozen attrs classes (kueue_provreq.api.immutable says why): every test runs
# with their fields guarded, so that a write changing a model in place fails as it would on a
# frozen class.


def _models() -> list[type]:
    """The value classes of ``kueue_provreq.api`` and the effects of ``kueue_provreq.world``:
    hashable model classes (attrs or hand-written) that are not frozen (``world.Hooks``, mutable by
    design, hashes not)."""
    import importlib
    import pkgutil

    import kueue_provreq.api
    from kueue_provreq.api.model import is_model

    modules = [importlib.import_module(f"kueue_provreq.api.{m.name}")
               for m in pkgutil.iter_modules(kueue_provreq.api.__path__)]
    modules.append(importlib.import_module("kueue_provreq.world"))
    found = []
    for module in modules:
        for cls in vars(module).values():
            if isinstance(cls, type) and is_model(cls) and cls.__module__ == module.__name__ \
                    and cls.__hash__ is not None and cls.__setattr__ is object.__setattr__:
                found.append(cls)
    return found


def _guard_models() -> None:
    from kueue_provreq.api.immutable import guard

    models = _models()
    assert len(models) >= 60, [m.__name__ for m in models]
    guard(models)


_guard_models()
