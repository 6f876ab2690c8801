"""The benchmarks still run (at toy sizes): they are not timed here, only kept from rotting as
the code they measure changes."""

from __future__ import annotations

import importlib.util
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name, argv", [
    ("bench_core", ["--sizes", "20", "--seconds", "0.01", "--repeat", "1"]),
    ("bench_core", ["--sizes", "20", "--seconds", "0.01", "--repeat", "1", "--verify-up-to", "0", "--cpu"]),
    ("bench_inputs", ["--sizes", "10", "--repeat", "1"]),
    ("bench_sim", ["--workloads", "20", "--settle-size", "20", "--repeat", "1"]),
    ("bench_backlog", ["--workloads", "20"]),
    ("bench_verify", ["--size", "20", "--repeat", "1"]),
    ("bench_breakdown", ["--size", "20"]),
    ("bench_sim_breakdown", ["--workloads", "20"]),
    ("bench_sim_cold", ["--workloads", "20", "--every", "2", "--repeat", "1", "--thrash", "data", "--data-kib", "64"]),
    ("bench_passes", ["--size", "10", "--runs", "2"]),
    ("bench_bytecodes", ["--size", "5", "--top", "3"]),
    ("bench_memory", ["--size", "20", "--top", "3"]),
    ("bench_model_classes", ["--objects", "100", "--repeat", "1", "--no-compile"]),
    # this checkout against itself: the ratio of two runs of the same code
    ("bench_ab", [str(BENCHMARKS.parent), "--size", "20", "--pairs", "1"]),
    ("bench_ab", [str(BENCHMARKS.parent), "--simulate", "20", "--pairs", "1"]),
])
def test_benchmark_runs(name: str, argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert load(name).main(argv) in (0, None)
    assert capsys.readouterr().out.strip()


def test_bench_compiled_reads_what_bench_core_prints(capsys: pytest.CaptureFixture[str]) -> None:
    load("bench_core").main(["--sizes", "20,30", "--seconds", "0.01", "--repeat", "1"])
    found = load("bench_compiled").figures(capsys.readouterr().out)
    assert list(found) == ["(a)", "(c) 20", "(c) 30"] and all(us > 0 for us in found.values())


def test_bench_compiled_without_a_build_says_how_to_make_one(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    assert load("bench_compiled").main(["--compiled", str(tmp_path)]) == 2
    assert "run `make compiled` first" in capsys.readouterr().err


def test_bench_core_prints_the_floor_beside_the_settle(capsys: pytest.CaptureFixture[str]) -> None:
    load("bench_core").main(["--sizes", "20", "--seconds", "0.01", "--repeat", "1", "--verify-up-to", "0"])
    out = capsys.readouterr().out
    settle = next(line for line in out.splitlines() if line.startswith("(c) settle"))
    floor = next(line for line in out.splitlines() if line.strip().startswith("floor"))
    assert "us/workload" in settle and "ratio settle/floor" in floor


def test_bench_model_classes_checks_each_compiled_form_answers_right(
        capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("mypyc", reason="mypyc comes with the dev extra")
    load("bench_model_classes").main(["--objects", "100", "--repeat", "1"])
    rows = {tuple(line.split()[:2]): line for line in capsys.readouterr().out.splitlines()[2:]}
    assert len(rows) == 6, rows
    # the hand-written class answers right compiled or not; the interpreted attrs models too
    assert not any("WRONG" in rows[form, "interpreted"] for form in ("attrs_define", "attr_s", "plain_slots"))
    assert "WRONG" not in rows["plain_slots", "compiled"]


def model_writes(n: int, monkeypatch: pytest.MonkeyPatch) -> Counter[tuple[str, str]]:
    """What bench_core's settle writes for ``n`` workloads, tallied as floor.py tallies its own:
    the effects the engine applied (by kind), the Cluster Autoscaler's updates from outside, and
    the machine lookups (``MachineTable.transition`` and the provisioning check's memoised fire)."""
    from kueue_provreq.controllers import provisioning
    from kueue_provreq.machines.table import MachineTable
    from kueue_provreq.world import Create, Delete, Event, MetricInc, Update, World

    tally: Counter[tuple[str, str]] = Counter()

    def counting(name: tuple[str, str], fn: Callable[..., Any]) -> Callable[..., Any]:
        def counted(*args: Any, **kwargs: Any) -> Any:
            tally[name] += 1
            return fn(*args, **kwargs)
        return counted

    monkeypatch.setattr(MachineTable, "transition", counting(("lookup", ""), MachineTable.transition))
    monkeypatch.setattr(provisioning, "_check_transition", counting(("lookup", ""), provisioning._check_transition))
    monkeypatch.setattr(World, "apply", counting(("outside", "Update"), World.apply))

    def on_effect(controller: str, key: object, effect: object) -> None:
        if isinstance(effect, (Create, Update)):
            tally[(type(effect).__name__, effect.obj.KIND)] += 1
        elif isinstance(effect, Delete):
            tally[("Delete", effect.kind)] += 1
        else:
            assert isinstance(effect, (Event, MetricInc))
            tally[(type(effect).__name__, "")] += 1

    load("bench_core").settle_cycle(n, instrument=lambda m: setattr(m.record, "on_effect", on_effect))
    return tally


@pytest.mark.parametrize("n", [1, 7])
def test_floor_makes_the_writes_the_model_makes(n: int, monkeypatch: pytest.MonkeyPatch) -> None:
    floor = load("floor").count(n)
    assert floor[("Update", "Workload")] == 13 * n  # the story's writes, as the issue counts them
    assert floor == model_writes(n, monkeypatch)


def test_bench_passes_names_what_it_cannot_measure(capsys: pytest.CaptureFixture[str]) -> None:
    bench = load("bench_passes")
    assert bench.main(["--size", "10", "--controllers", "workload,sheduler"]) == 2
    assert capsys.readouterr().err.strip() == "ERROR: --controllers: no controller named sheduler"
    assert bench.main(["--size", "10", "--workload", "wl-10", "--runs", "1"]) == 2
    assert capsys.readouterr().err.strip() == \
        "ERROR: --workload: no pass over wl-10 (the story names wl-0 .. wl-9)"
