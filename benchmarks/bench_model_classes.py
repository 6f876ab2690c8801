"""What a model object costs to build, compare and hash, by how its class is written and run.

Issue 25 asks for mypyc over the whole package "with native model classes". Whether that can
pay depends on one question this answers in one run: does compiling a model class make it
cheaper, or only a class mypyc can turn into a native class? Three forms of the same class (the
shape of :class:`kueue_provreq.api.meta.Condition`: six fields, equal and hashed by value) are
timed building, comparing and hashing objects:

- ``attrs.define(unsafe_hash=True)``, as the package's models are written;
- ``attr.s(auto_attribs=True)``, the older attrs API, the only attrs form mypyc 2.4 treats as a
  class it may compile (``mypyc/irbuild/util.py``: ``DATACLASS_DECORATORS``);
- a plain ``@final`` ``__slots__`` class with a hand-written ``__init__``, ``__eq__`` and
  ``__hash__``;

each interpreted and, when mypyc is installed (the ``dev`` extra), compiled into a temporary
directory first (a few seconds). Ratios are against the interpreted ``attrs.define`` form.
Each form is also asked a few answers (equal objects compare equal and hash alike); a form
that answers wrongly is marked ``WRONG``, as mypyc 2.4.1 does to both attrs forms: when the
class is compiled, compiled code finds two equal ``attrs.define`` objects unequal (interpreted
code still finds them equal), and an ``attr.s`` class, compiled to a native class, loses attrs'
``__eq__``, ``__hash__`` and ``__repr__`` altogether.

Usage: python benchmarks/bench_model_classes.py [--objects 200000] [--repeat 5] [--no-compile]
"""

from __future__ import annotations

import argparse
import importlib
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from types import ModuleType

_BODY = '''
def build(n: int) -> int:
    """Builds n objects."""
    total = 0
    for i in range(n):
        c = {cls}("QuotaReserved", "True", "QuotaReserved", "Quota reserved", None, i)
        total += 1 if c.observed_generation == i else 0
    return total


def compare(n: int) -> int:
    """Compares two equal objects n times (every field is read)."""
    a = {cls}("QuotaReserved", "True", "QuotaReserved", "Quota reserved", None, 7)
    b = {cls}("QuotaReserved", "True", "QuotaReserved", "Quota reserved", None, 7)
    return sum(1 for _ in range(n) if a == b)


def hash_(n: int) -> int:
    """Hashes an object n times."""
    a = {cls}("QuotaReserved", "True", "QuotaReserved", "Quota reserved", None, 7)
    b = {cls}("QuotaReserved", "True", "QuotaReserved", "Quota reserved", None, 7)
    return sum(1 for _ in range(n) if hash(a) == hash(b))


OPERATIONS = {{"build": build, "compare": compare, "hash": hash_}}
'''

_ATTRS_CLASS = '''
from __future__ import annotations
import {module}

@{decorator}
class Condition:
    type: str
    status: str
    reason: str
    message: str
    last_transition_time: int | None
    observed_generation: int | None
'''

FORMS: dict[str, str] = {
    "attrs_define": _ATTRS_CLASS.format(module="attrs", decorator="attrs.define(unsafe_hash=True)")
    + _BODY.format(cls="Condition"),
    "attr_s": _ATTRS_CLASS.format(
        module="attr", decorator="attr.s(auto_attribs=True, hash=True, eq=True, slots=True)")
    + _BODY.format(cls="Condition"),
    "plain_slots": textwrap.dedent('''
        from __future__ import annotations
        from typing import final

        @final
        class Condition:
            __slots__ = ("type", "status", "reason", "message", "last_transition_time",
                         "observed_generation")

            def __init__(self, type: str, status: str, reason: str, message: str,
                         last_transition_time: int | None,
                         observed_generation: int | None) -> None:
                self.type = type
                self.status = status
                self.reason = reason
                self.message = message
                self.last_transition_time = last_transition_time
                self.observed_generation = observed_generation

            def _key(self) -> tuple[str, str, str, str, int | None, int | None]:
                return (self.type, self.status, self.reason, self.message,
                        self.last_transition_time, self.observed_generation)

            def __eq__(self, other: object) -> bool:
                if not isinstance(other, Condition):
                    return NotImplemented
                return self._key() == other._key()

            def __hash__(self) -> int:
                return hash(self._key())
        ''') + _BODY.format(cls="Condition"),
}


def write_forms(folder: Path) -> None:
    for name, source in FORMS.items():
        (folder / f"model_{name}.py").write_text(source)


def compile_forms(folder: Path) -> str | None:
    """Compiles every form with mypyc in ``folder``; the reason when it cannot."""
    mypyc = shutil.which("mypyc", path=str(Path(sys.executable).parent))
    if mypyc is None:
        return "mypyc is not installed (pip install -e '.[dev]')"
    done = subprocess.run(
        [mypyc, *sorted(p.name for p in folder.glob("model_*.py"))],
        cwd=folder, capture_output=True, text=True, check=False,
    )
    if done.returncode != 0:
        return f"mypyc failed: {done.stdout.strip().splitlines()[-1:]}"
    return None


def load(folder: Path, name: str, tag: str) -> ModuleType:
    """Imports ``model_<name>`` from ``folder`` under a name of its own per folder."""
    sys.path.insert(0, str(folder))
    try:
        module = importlib.import_module(f"model_{name}")
    finally:
        sys.path.pop(0)
    sys.modules[f"{tag}_model_{name}"] = sys.modules.pop(f"model_{name}")
    return module


def answers(module: ModuleType) -> dict[str, int]:
    """What each operation returns on a small count: every form must give the same."""
    return {operation: run(100) for operation, run in module.OPERATIONS.items()}


def best_ns(module: ModuleType, objects: int, repeat: int) -> dict[str, float]:
    """The best time per object of each operation, in ns."""
    found: dict[str, float] = {}
    for operation, run in module.OPERATIONS.items():
        best = float("inf")
        for _ in range(repeat):
            start = time.perf_counter()
            run(objects)
            best = min(best, time.perf_counter() - start)
        found[operation] = best / objects * 1e9
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-compile", action="store_true", help="time the interpreted forms only")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        interpreted, compiled = Path(tmp, "interpreted"), Path(tmp, "compiled")
        interpreted.mkdir()
        compiled.mkdir()
        write_forms(interpreted)
        write_forms(compiled)
        why_not = "--no-compile" if args.no_compile else compile_forms(compiled)
        rows: list[tuple[str, str, dict[str, float], list[str]]] = []
        expected = {"build": 100, "compare": 100, "hash": 100}
        for name in FORMS:
            runs = [("interpreted", load(interpreted, name, "i"))]
            if why_not is None:
                runs.append(("compiled", load(compiled, name, "c")))
            for how, module in runs:
                got = answers(module)
                wrong = [f"{op} gave {got[op]} of {n}" for op, n in expected.items() if got[op] != n]
                rows.append((name, how, best_ns(module, args.objects, args.repeat), wrong))
    base = rows[0][2]
    print(f"one Condition-shaped object, ns per operation (best of {args.repeat} x {args.objects:,});"
          " in brackets: how many times faster than the interpreted attrs_define")
    print(f"  {'form':13} {'run':12} " + "".join(f"{op:>16}" for op in base))
    for name, how, ns, wrong in rows:
        cells = "".join(f"{ns[op]:8.0f} [{base[op] / ns[op]:4.1f}x]" for op in base)
        print(f"  {name:13} {how:12} {cells}" + (f"   WRONG: {'; '.join(wrong)}" if wrong else ""))
    if why_not is not None:
        print(f"  (compiled forms not timed: {why_not})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
