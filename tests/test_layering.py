"""The layering of the package, written down as import contracts (in the manner of kopf's
import-linter contracts) and checked on every import statement of every module: module level,
inside functions (the lazy imports), and under ``TYPE_CHECKING``.

Floors, lowest first: a module may import its own room and the rooms of lower floors, never a
higher one.  The rooms of the edge floor are independent: none imports another.  Where two edges
must meet, the lower one defines an interface the other implements, or the command line (the top
floor) joins them.  To move a module, change its row of :data:`ROOMS`; a module the table does
not place fails the test, so a new room is placed on purpose.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

import kueue_provreq

PACKAGE = Path(kueue_provreq.__file__).parent

#: The floors, lowest first.  The core is ``errors`` to ``engine`` (sans-IO: no clock, no
#: randomness, no cluster, no YAML); ``shared`` holds what several edges read or write with
#: (manifests, times, the invariants oracle, what a workload waits for, what a write changed, drawings, the interface a
#: conformance world driver implements, the Cluster Autoscaler model simulation and cluster both play); the edges
#: each answer one kind of question; the command line joins them.
FLOORS = ("errors", "api", "machines", "world", "controllers", "engine", "shared", "edges", "cli")

#: Module (or package) -> (floor, room).  The longest matching name wins.  Edges are rooms of
#: their own; explain and audit are one room (the reports on a snapshot).
ROOMS: dict[str, tuple[str, str]] = {
    "kueue_provreq.errors": ("errors", "errors"),
    "kueue_provreq.api": ("api", "api"),
    "kueue_provreq.machines": ("machines", "machines"),
    "kueue_provreq.world": ("world", "world"),
    "kueue_provreq.controllers": ("controllers", "controllers"),
    "kueue_provreq.engine": ("engine", "engine"),
    "kueue_provreq.world_builder": ("engine", "world_builder"),
    "kueue_provreq.manifests": ("shared", "manifests"),
    "kueue_provreq.timestamps": ("shared", "timestamps"),
    "kueue_provreq.invariants": ("shared", "invariants"),
    "kueue_provreq.waits": ("shared", "waits"),
    "kueue_provreq.diagrams": ("shared", "diagrams"),
    "kueue_provreq.driver": ("shared", "driver"),  # the runner's world-driver interface: two edges implement it
    "kueue_provreq.autoscaler": ("shared", "autoscaler"),  # the Cluster Autoscaler model: simulation and cluster play it
    "kueue_provreq.changes": ("shared", "changes"),  # what a write changed: the timeline and the simulation read it
    "kueue_provreq.extras": ("shared", "extras"),
    "kueue_provreq.trace": ("shared", "trace"),  # the trace format: cluster records it, simulation replays it  # which extra to install: every edge that needs one asks
    "kueue_provreq.simulation": ("edges", "simulation"),
    "kueue_provreq.cluster": ("edges", "cluster"),
    "kueue_provreq.conformance": ("edges", "conformance"),
    "kueue_provreq.explore": ("edges", "explore"),
    "kueue_provreq.explain": ("edges", "reports"),
    "kueue_provreq.audit": ("edges", "reports"),
    "kueue_provreq.cli": ("cli", "cli"),
    "kueue_provreq.__main__": ("cli", "cli"),
    "kueue_provreq": ("cli", "package"),  # the package itself: its version, nothing else
}

#: What the core may import beyond the standard library, and the standard modules it may not
#: (a clock, randomness, logging, the operating system, the network).
CORE_FLOORS = FLOORS[:FLOORS.index("shared")]
CORE_THIRD_PARTY = {"attrs", "transitions"}
CORE_FORBIDDEN_STDLIB = {"random", "datetime", "time", "logging", "os", "socket", "subprocess", "threading",
                         "asyncio", "urllib", "http", "secrets", "uuid"}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def is_module(name: str) -> bool:
    return name in modules()


def imports(path: Path) -> Iterator[tuple[str, bool, int]]:
    """Every module ``path`` imports, whether only for type checking, and the line."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            typing_only |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, id(node) in typing_only, node.lineno
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            for alias in node.names:
                full = f"{base}.{alias.name}"
                yield (full if is_module(full) else base), id(node) in typing_only, node.lineno


def placed(module: str) -> tuple[str, str]:
    for prefix in sorted(ROOMS, key=len, reverse=True):
        if module == prefix or module.startswith(prefix + "."):
            return ROOMS[prefix]
    raise AssertionError(f"{module} is in no room of ROOMS: place it")


def internal_imports() -> Iterator[tuple[str, str, int]]:
    for name, path in modules().items():
        for target, _, line in imports(path):
            if target == "kueue_provreq" or target.startswith("kueue_provreq."):
                yield name, target, line


def breaches() -> set[tuple[str, str]]:
    found = set()
    for source, target, _ in internal_imports():
        (floor, room), (target_floor, target_room) = placed(source), placed(target)
        upward = FLOORS.index(target_floor) > FLOORS.index(floor)
        across_edges = floor == target_floor == "edges" and room != target_room
        if upward or across_edges:
            found.add((source, target))
    return found


def test_every_module_is_placed() -> None:
    for name in modules():
        placed(name)


def test_no_module_imports_a_higher_floor_and_no_edge_imports_another() -> None:
    """Upward imports and imports from one edge into another, lazy ones included."""
    new = sorted(breaches())
    assert new == [], "\n".join(f"{s} imports {t} ({placed(s)} -> {placed(t)})" for s, t in new)


def test_the_core_imports_only_attrs_transitions_and_the_quiet_standard_library() -> None:
    """At run time (type-only imports name types, they load nothing), lazy imports included."""
    stdlib = set(sys.stdlib_module_names)
    offenders = []
    for name, path in modules().items():
        if placed(name)[0] not in CORE_FLOORS:
            continue
        for target, typing_only, line in imports(path):
            top = target.split(".")[0]
            if typing_only or top in ("kueue_provreq", "__future__"):
                continue
            if top in CORE_FORBIDDEN_STDLIB or (top not in stdlib and top not in CORE_THIRD_PARTY):
                offenders.append(f"{name}:{line} imports {target}")
    assert offenders == []


def test_the_checker_sees_lazy_and_type_only_imports() -> None:
    """The contract reads imports inside functions, not only those run at import time."""
    context = modules()["kueue_provreq.controllers.context"]
    assert all(not t.startswith("kueue_provreq.timestamps") for t, _, _ in imports(context))
    lazy = {t for t, _, _ in imports(PACKAGE / "cli" / "forecast.py")}  # inside run()
    assert "kueue_provreq.simulation.forecast" in lazy
    typing_only = {t for t, typing, _ in imports(PACKAGE / "cli" / "options.py") if typing}
    assert typing_only == {"kueue_provreq.autoscaler"}
