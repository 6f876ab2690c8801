"""Sphinx directives that draw the declared machines at build time.

``.. machine-diagram:: <name>`` (a key of ``MACHINES``, or ``combined``) renders
an inline SVG through Graphviz when ``dot`` is installed, and always adds the
Mermaid text of the same diagram, so a build without Graphviz still shows every
state and edge.  ``.. machine-transitions:: <name>`` lists the edges as a table.
Nothing is checked in: the pages are redrawn whenever the declarations change.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from docutils import nodes
from docutils.parsers.rst import directives
from kueue_provreq import diagrams
from kueue_provreq.machines import MACHINES, MachineTable, declarations
from sphinx.application import Sphinx
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

logger = logging.getLogger(__name__)
COMBINED = "combined"


def _choose(argument: str) -> str:
    return str(directives.choice(argument, [*MACHINES, COMBINED]))


def _tables(name: str) -> list[MachineTable]:
    return list(MACHINES.values()) if name == COMBINED else [MACHINES[name]]


def _svg_body(svg: str) -> str:
    """Drop the XML prolog and DOCTYPE: the SVG is inlined into an HTML page."""
    return svg[svg.index("<svg"):]


class MachineDiagram(SphinxDirective):
    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        name = _choose(self.arguments[0])
        self.env.note_dependency(declarations.__file__)
        tables = _tables(name)
        dot = diagrams.combined_dot(tables) if name == COMBINED else diagrams.to_dot(tables[0])
        mermaid = diagrams.combined_mermaid(tables) if name == COMBINED else diagrams.to_mermaid(tables[0])
        out: list[nodes.Node] = []
        n_states = sum(len(t.states) for t in tables)
        n_edges = sum(len(t.edges) for t in tables)
        n_internal = sum(1 for t in tables for e in t.edges if e.dest is None)
        out.append(nodes.paragraph(
            text=f"{n_states} states, {n_edges} declared transitions ({n_internal} internal), "
                 "drawn from kueue_provreq.machines at build time."))
        if diagrams.dot_available():
            svg = _svg_body(diagrams.render_svg(dot))
            box = nodes.container(classes=["machine-diagram"])
            box += nodes.raw("", f'<div style="overflow-x:auto">{svg}</div>', format="html")
            out.append(box)
        else:
            logger.info("machine-diagram %s: Graphviz 'dot' not found, showing Mermaid text only", name,
                        location=self.get_location())
        out.append(nodes.paragraph(text="Mermaid source of the same diagram (stateDiagram-v2):"))
        out.append(nodes.literal_block(mermaid, mermaid, language="none"))
        return out


class MachineTransitions(SphinxDirective):
    """Every edge of one machine as a table, in declaration order (the order ``fire`` tries them)."""

    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        name = _choose(self.arguments[0])
        if name == COMBINED:
            raise self.error("machine-transitions takes one machine, not 'combined'")
        self.env.note_dependency(declarations.__file__)
        table = MACHINES[name]
        header = ("source", "trigger", "guards", "target")
        rows = [(e.source, e.trigger,
                 ", ".join([*e.conditions, *(f"not {g}" for g in e.unless)]),
                 f"{e.target} (internal)" if e.dest is None else e.target)
                for e in table.edges]
        return [_table(header, rows)]


def _table(header: tuple[str, ...], rows: Sequence[tuple[str, ...]]) -> nodes.table:
    table = nodes.table(classes=["machine-transitions"])
    group = nodes.tgroup(cols=len(header))
    table += group
    # Column widths in characters: the text and LaTeX writers lay the table out with them.
    group.extend(nodes.colspec(colwidth=max(len(r[i]) for r in [header, *rows]))
                 for i in range(len(header)))
    thead, tbody = nodes.thead(), nodes.tbody()
    group += thead
    group += tbody
    for cells, parent in [(header, thead), *((r, tbody) for r in rows)]:
        row = nodes.row()
        for cell in cells:
            entry = nodes.entry()
            entry += nodes.paragraph(text=cell)
            row += entry
        parent += row
    return table


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("machine-diagram", MachineDiagram)
    app.add_directive("machine-transitions", MachineTransitions)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
