"""The benchmarks still run (at toy sizes): they are not timed here, only kept from rotting as
the code they measure changes."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

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
    ("bench_inputs", ["--sizes", "10", "--repeat", "1"]),
    ("bench_sim", ["--workloads", "20", "--settle-size", "20", "--repeat", "1"]),
    ("bench_verify", ["--size", "20", "--repeat", "1"]),
    ("bench_breakdown", ["--size", "20"]),
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
