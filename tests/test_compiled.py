"""The optional mypyc build (``make compiled``, build/compiled/) compares by value where the
interpreted package does.

mypyc lowers ``a == b`` to ``a is b`` when both sides are statically of one class it compiled
whose IR has no ``__eq__``: an attrs class defined in a compiled module is such a class (its
``__eq__`` is generated at run time, which mypyc does not see).  The compiled modules compare
two such values through :func:`~kueue_provreq.api.evolve.same` (typed ``object``) instead.  The
first test reads mypy's types of every compiled module for a comparison that would be lowered
so; the second runs the compiled tree where such a comparison once stood.  Both skip unless the
build exists.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
COMPILED = ROOT / "build" / "compiled"

pytestmark = pytest.mark.skipif(not (COMPILED / ".built").is_file(),
                                reason="no compiled build: `make compiled` builds build/compiled/")


def compiled_modules() -> dict[str, Path]:
    """Module name -> source file of every module the build compiled (a ``.so`` beside it)."""
    found = {}
    for ext in COMPILED.glob("kueue_provreq/**/*.so"):
        source = ext.with_name(ext.name.split(".")[0] + ".py")
        found[".".join(source.relative_to(COMPILED).with_suffix("").parts)] = ROOT / source.relative_to(COMPILED)
    return found


def identity_comparisons(modules: dict[str, Path]) -> list[str]:
    """``==``/``!=`` in ``modules`` between two values statically of one attrs class that a
    compiled module defines (each side's type, or each pair of a tuple's items)."""
    from mypy import build
    from mypy.modulefinder import BuildSource
    from mypy.nodes import ComparisonExpr
    from mypy.options import Options
    from mypy.types import Instance, TupleType, Type, get_proper_type

    options = Options()
    options.export_types = True
    options.incremental = False
    options.follow_imports = "silent"
    result = build.build([BuildSource(str(path), name) for name, path in modules.items()], options)
    # which compiled file each comparison is in, by its span (a compiled mypy's tree visitors
    # cannot be subclassed, and the types of every module checked come in one map)
    where = {(node.lineno, node.col_offset, node.end_lineno, node.end_col_offset): path
             for path in modules.values() for node in ast.walk(ast.parse(path.read_text()))
             if isinstance(node, ast.Compare)}

    def trapped(left: Type, right: Type) -> bool:
        left, right = get_proper_type(left), get_proper_type(right)
        if isinstance(left, TupleType) and isinstance(right, TupleType):
            return len(left.items) == len(right.items) and any(map(trapped, left.items, right.items))
        return (isinstance(left, Instance) and isinstance(right, Instance) and left.type is right.type
                and left.type.module_name in modules and "attrs" in left.type.metadata)

    types = result.types
    found = []
    for expr in types:
        path = where.get((expr.line, expr.column, expr.end_line, expr.end_column))
        if path is None or not isinstance(expr, ComparisonExpr):
            continue
        for op, left, right in zip(expr.operators, expr.operands, expr.operands[1:], strict=False):
            if op in ("==", "!=") and left in types and right in types and trapped(types[left], types[right]):
                found.append(f"{path.relative_to(ROOT)}:{expr.line}: {op}")
    return sorted(found)


def test_no_compiled_module_compares_two_attrs_values_with_eq() -> None:
    modules = compiled_modules()
    assert "kueue_provreq.controllers.podsets" in modules and "kueue_provreq.engine.manager" in modules
    assert identity_comparisons(modules) == []


def test_the_compiled_tree_compares_attrs_values_by_value() -> None:
    """podsets' ``merge_into``/``restore_into`` hand back the template itself when the info
    changes nothing; with ``==`` compiled to ``is`` they rebuilt it."""
    script = textwrap.dedent("""
        from kueue_provreq.api.frozen import freeze
        from kueue_provreq.api.workload import PodSet
        from kueue_provreq.controllers import podsets
        assert podsets.__file__.endswith(".so"), podsets.__file__
        template = freeze({"metadata": {"labels": {"app": "a"}}, "spec": {"nodeSelector": {"zone": "z"}}})
        info = podsets.from_pod_set(PodSet("main", 1, template))
        assert podsets.merge_into(template, info) is template
        assert podsets.restore_into(template, info) is template
    """)
    env = {**os.environ, "PYTHONPATH": str(COMPILED)}
    done = subprocess.run([sys.executable, "-P", "-c", script], env=env, capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
