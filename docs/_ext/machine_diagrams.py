"""Sphinx directives that draw the declared machines in the built site.

``.. machine-diagram:: <name>`` (a key of ``MACHINES``) puts the Mermaid text of that
machine into the page, the text ``kueue-provreq diagram -o mermaid`` prints, and the browser
draws it with the Mermaid script served from ``_static/mermaid/``.  A diagram is drawn at
natural size: wider than the column, its frame scrolls sideways, and its "full size" link
shows it alone over the whole window (CSS ``:target``, no script).
``.. machine-transitions:: <name>`` lists the edges as a table, and
``.. machine-triggers:: <name>`` who fires each trigger (``MachineTable.fired_by``).  Nothing
is checked in: the pages are redrawn whenever the declarations change.

The script is Mermaid's single-file build (``dist/mermaid.min.js`` of the npm package),
which ``make docs`` fetches into ``docs/_vendor/mermaid/`` (see the Makefile).  It is loaded
as a classic script, not as the ES module sphinxcontrib-mermaid imports: browsers refuse
module imports from ``file://`` pages, so a site opened from disk would show no picture.
When the script has not been fetched the build still succeeds (``make test`` needs no
network) and each diagram shows as its Mermaid text.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from docutils import nodes
from docutils.parsers.rst import directives
from kueue_provreq import diagrams
from kueue_provreq.machines import MACHINES, declarations
from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

logger = logging.getLogger(__name__)
VENDOR_DIR = "_vendor"
"""Under the docs folder; its ``mermaid/`` is served as ``_static/mermaid/``."""
MERMAID_JS = "mermaid/mermaid.min.js"

#: The ``kueue-provreq diagram`` argument that prints each diagram.
_CLI_ARGUMENT = {"admissioncheck": "check"}

# Drawn at natural size (a wide diagram scrolls sideways rather than shrinking its labels),
# ids numbered per page so that two diagrams on one page never share one.  A frame narrower
# than its diagram opens on the start state, not on the left edge; ``data-machine-diagrams``
# on <html> tells a browser test that drawing is over.
_MERMAID_INIT = """\
mermaid.initialize({
  startOnLoad: false,
  deterministicIds: true,
  securityLevel: "strict",
  state: {useMaxWidth: false},
  themeVariables: {fontSize: "14px"}
});
window.addEventListener("load", async () => {
  try {
    await mermaid.run({querySelector: "div.machine-diagram-canvas pre.mermaid"});
  } finally {
    for (const canvas of document.querySelectorAll("div.machine-diagram-canvas")) {
      const start = canvas.querySelector('g[id*="-state-root_start"]');
      if (!start) continue;
      const dot = start.getBoundingClientRect(), frame = canvas.getBoundingClientRect();
      canvas.scrollLeft += dot.left + dot.width / 2 - (frame.left + frame.width / 2);
    }
    document.documentElement.dataset.machineDiagrams = "drawn";
  }
});"""


def _choose(argument: str) -> str:
    return str(directives.choice(argument, list(MACHINES)))


class machine_diagram(nodes.General, nodes.Element):
    """A diagram's Mermaid text; only the HTML writer draws it."""


def _mermaid_js(app: Sphinx) -> Path:
    return Path(app.confdir) / VENDOR_DIR / MERMAID_JS


def _visit_html(self: Any, node: machine_diagram) -> None:
    text = html.escape(node["mermaid"])
    machine = node["machine"]
    command = f"kueue-provreq diagram {_CLI_ARGUMENT.get(machine, machine)}"
    drawn = _mermaid_js(self.builder.app).is_file()
    parts = [f'<span id="{machine}-diagram-frame"></span>',
             f'<figure class="machine-diagram" id="{machine}-diagram" data-machine="{machine}">']
    if drawn:
        parts.append(f'<div class="machine-diagram-bar"><a class="machine-diagram-open" '
                     f'href="#{machine}-diagram">full size</a><a class="machine-diagram-close" '
                     f'href="#{machine}-diagram-frame">close</a></div>')
    parts.append(f'<div class="machine-diagram-canvas"><pre class="mermaid">{text}</pre></div>')
    # Without the script the canvas already shows the text; once drawn, the text is one click away.
    if drawn:
        parts.append(f'<details class="machine-diagram-source"><summary>Mermaid source '
                     f"(<code>{command}</code> prints the same)</summary><pre>{text}</pre></details>")
    parts.append("</figure>\n")
    self.body.append("".join(parts))
    raise nodes.SkipNode


class MachineDiagram(SphinxDirective):
    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        name = _choose(self.arguments[0])
        self.env.note_dependency(declarations.__file__)
        table = MACHINES[name]
        n_internal = sum(1 for e in table.edges if e.dest is None)
        summary = nodes.paragraph(
            text=f"{len(table.states)} states, {len(table.edges)} declared transitions "
                 f"({n_internal} internal), drawn from kueue_provreq.machines when the site is built.")
        return [summary, machine_diagram(machine=name, mermaid=diagrams.to_mermaid(table))]


class MachineTransitions(SphinxDirective):
    """Every edge of one machine as a table, in declaration order (the order ``fire`` tries them)."""

    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        name = _choose(self.arguments[0])
        self.env.note_dependency(declarations.__file__)
        table = MACHINES[name]
        header = ("source", "trigger", "guards", "target")
        rows = [(e.source, e.trigger,
                 ", ".join([*e.conditions, *(f"not {g}" for g in e.unless)]),
                 f"{e.target} (internal)" if e.dest is None else e.target)
                for e in table.edges]
        return [_table(header, rows)]


class MachineTriggers(SphinxDirective):
    """Each trigger of one machine, the actors that fire it, and how many edges it has."""

    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        name = _choose(self.arguments[0])
        self.env.note_dependency(declarations.__file__)
        table = MACHINES[name]
        header = ("trigger", "fired by", "edges")
        rows = [(str(t), ", ".join(table.fired_by[t]), str(sum(1 for e in table.edges if e.trigger == t)))
                for t in table.triggers]
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


def _serve_vendored_mermaid(app: Sphinx, config: Config) -> None:
    if _mermaid_js(app).is_file():
        config.html_static_path.append(str(Path(app.confdir) / VENDOR_DIR))
    else:
        logger.info("machine-diagram: %s not found, so the diagrams show as Mermaid text; "
                    "'make docs' fetches it", _mermaid_js(app))


def _add_mermaid_to_pages_with_diagrams(app: Sphinx, pagename: str, templatename: str,
                                        context: dict[str, Any], doctree: nodes.document | None) -> None:
    if doctree is None or doctree.next_node(machine_diagram) is None:
        return
    if _mermaid_js(app).is_file():
        app.add_js_file(MERMAID_JS)
        app.add_js_file(None, body=_MERMAID_INIT)


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_node(machine_diagram, html=(_visit_html, None))
    app.add_directive("machine-diagram", MachineDiagram)
    app.add_directive("machine-transitions", MachineTransitions)
    app.add_directive("machine-triggers", MachineTriggers)
    app.add_css_file("machine-diagrams.css")
    app.connect("config-inited", _serve_vendored_mermaid)
    app.connect("html-page-context", _add_mermaid_to_pages_with_diagrams)
    return {"version": "2", "parallel_read_safe": True, "parallel_write_safe": True}
