"""State diagrams drawn from the machine declarations, as Graphviz DOT and Mermaid text.

This is an edge module: the docs build and humans use it, the core never imports
it.  Every state and edge comes from a :class:`~kueue_provreq.machines.table.MachineTable`,
so a diagram cannot drift from the tables the controllers consult (h11's warning about
hand-drawn diagrams is the failure this avoids).

Conventions shared by both formats:

* an edge is labelled ``trigger [guard, !unless_guard]``; ``!`` marks an
  ``unless`` guard, so ``request_failed [!within_backoff_limit]`` reads "fires
  when the attempt is beyond the limit";
* one arrow per pair of states, its label one line per declared edge in
  declaration order: the check machine declares over forty edges between four
  states, unreadable as separate arrows;
* an internal transition (``dest=None``: the trigger is handled and the state
  stays) is a self-loop: dashed in DOT; in Mermaid, which cannot style one
  transition, its line ends with ``(internal)`` and it shares the state's one
  self-loop with the external self-transitions, so that two loops on one state
  never stand side by side with labels that read as one;
* states, then edges, appear in declaration order, so the text is
  deterministic and diffs of it are meaningful;
* a state with no outgoing edge is terminal: double border in DOT, ``--> [*]``
  in Mermaid.

Edges with the same source and trigger are tried in declaration order and the
first whose guards hold wins (:meth:`~kueue_provreq.machines.table.MachineTable.fire`);
the labels show each edge's own guards, not the negation of the earlier ones.

>>> from kueue_provreq.machines import PROVISIONING_REQUEST_MACHINE as pr
>>> [line.strip() for line in to_mermaid(pr).splitlines() if "expire_booking" in line]
['provisioningrequest_Provisioned --> provisioningrequest_BookingExpired: expire_booking']
>>> from kueue_provreq.machines import ADMISSION_CHECK_MACHINE as check
>>> [line.strip() for line in to_mermaid(check).splitlines() if "Retry --> admissioncheck_Retry" in line]
['admissioncheck_Retry --> admissioncheck_Retry: request_failed [newer_attempt]<br/>request_failed (internal)']
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterable
from typing import Any

from kueue_provreq.errors import KueueProvreqError
from kueue_provreq.machines import MACHINES, Edge, MachineTable

__all__ = ["INTERNAL_MARK", "MERMAID_LINE_BREAK", "GraphvizError", "combined_dot", "combined_mermaid",
           "dot_available", "edge_label", "render_svg", "to_dot", "to_mermaid"]


class GraphvizError(KueueProvreqError, RuntimeError):
    """Rendering needs the Graphviz ``dot`` binary, and it is missing or refused the input."""


def edge_label(edge: Edge[Any, Any]) -> str:
    """The trigger and its guards, e.g. ``request_failed [newer_attempt]``.

    >>> from kueue_provreq.machines import CheckState, CheckTrigger, Guard
    >>> edge_label(Edge(CheckState.PENDING, CheckTrigger.REQUEST_FAILED, CheckState.REJECTED,
    ...                 unless=(Guard.WITHIN_BACKOFF_LIMIT,)))
    'request_failed [!within_backoff_limit]'
    """
    guards = [*map(str, edge.conditions), *(f"!{g}" for g in edge.unless)]
    return f"{edge.trigger} [{', '.join(guards)}]" if guards else str(edge.trigger)


def _terminal_states(table: MachineTable[Any, Any]) -> list[str]:
    sources = {e.source for e in table.edges}
    return [s for s in table.states if s not in sources]


# --- Graphviz DOT ------------------------------------------------------------------


def _dot_id(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _dot_lines(table: MachineTable[Any, Any], prefix: str, indent: str) -> list[str]:
    """Nodes and edges of one machine; ``prefix`` keeps node ids unique in the combined view."""
    terminal = set(_terminal_states(table))
    start = f"{prefix}__start__"
    lines = [f"{indent}{_dot_id(start)} [shape=point, width=0.12, label=\"\"];"]
    for state in table.states:
        extra = ", peripheries=2" if state in terminal else ""
        lines.append(f"{indent}{_dot_id(prefix + state)} [label={_dot_id(state)}{extra}];")
    lines.append(f"{indent}{_dot_id(start)} -> {_dot_id(prefix + table.initial)};")
    # One arrow per (source, target, internal?), its label one line per declared edge:
    # the check machine declares ~50 edges between 4 states, unreadable as separate arrows.
    grouped: dict[tuple[str, str, bool], list[str]] = {}
    for e in table.edges:
        grouped.setdefault((e.source, e.target, e.dest is None), []).append(edge_label(e))
    for (source, target, internal), labels in grouped.items():
        label = "\\n".join(_dot_id(lbl)[1:-1] for lbl in labels)
        style = ", style=dashed" if internal else ""
        lines.append(f"{indent}{_dot_id(prefix + source)} -> {_dot_id(prefix + target)} "
                     f"[label=\"{label}\"{style}];")
    return lines


_DOT_DEFAULTS = [
    "rankdir=LR;",
    "labelloc=t;",
    "nodesep=0.6;",
    "ranksep=0.9;",
    'fontname="Helvetica";',
    'node [shape=box, style=rounded, fontname="Helvetica", fontsize=11];',
    'edge [fontname="Helvetica", fontsize=9];',
]


def to_dot(table: MachineTable[Any, Any]) -> str:
    """One machine as a DOT digraph; node ids are the state names."""
    lines = [f"digraph {_dot_id(table.name)} {{", f"  id={_dot_id(table.name)};",
             f"  label={_dot_id(table.title)};"]
    lines += ["  " + d for d in _DOT_DEFAULTS]
    lines += _dot_lines(table, "", "  ")
    lines.append("}")
    return "\n".join(lines) + "\n"


def combined_dot(tables: Iterable[MachineTable[Any, Any]] = MACHINES.values()) -> str:
    """Every machine as one cluster of a single digraph, node ids ``<machine>.<state>``.

    The machines run side by side on different objects (a Workload, each entry
    of its ``status.admissionChecks``, each ProvisioningRequest), so the view
    shows regions, not the product of their states.
    """
    lines = ['digraph "kueue_provreq" {', '  id="combined";',
             '  label="Workload, admission check and ProvisioningRequest lifecycles";']
    lines += ["  " + d for d in _DOT_DEFAULTS]
    for table in tables:
        lines.append(f"  subgraph {_dot_id('cluster_' + table.name)} {{")
        lines.append(f"    label={_dot_id(table.title)};")
        lines.append('    style=rounded; color="#888888";')
        lines += _dot_lines(table, f"{table.name}.", "    ")
        lines.append("  }")
    lines.append("}")
    return "\n".join(lines) + "\n"


# --- Mermaid ----------------------------------------------------------------------------


MERMAID_LINE_BREAK = "<br/>"
"""Separates the edges drawn by one Mermaid transition (Mermaid's own line break in labels)."""

INTERNAL_MARK = " (internal)"
"""Ends the label line of an internal transition in Mermaid, which cannot dash one transition."""


def _mermaid_id(prefix: str, state: str) -> str:
    return re.sub(r"\W", "_", f"{prefix}_{state}")


def _mermaid_lines(table: MachineTable[Any, Any], indent: str) -> list[str]:
    ids = {s: _mermaid_id(table.name, s) for s in table.states}
    lines = [f'{indent}state "{s}" as {ids[s]}' for s in table.states]
    lines.append(f"{indent}[*] --> {ids[table.initial]}")
    # One transition per pair of states, so internal and external self-loops share one loop.
    grouped: dict[tuple[str, str], list[str]] = {}
    for e in table.edges:
        label = edge_label(e) + (INTERNAL_MARK if e.dest is None else "")
        grouped.setdefault((e.source, e.target), []).append(label)
    lines += [f"{indent}{ids[source]} --> {ids[target]}: {MERMAID_LINE_BREAK.join(labels)}"
              for (source, target), labels in grouped.items()]
    lines += [f"{indent}{ids[s]} --> [*]" for s in _terminal_states(table)]
    return lines


def to_mermaid(table: MachineTable[Any, Any]) -> str:
    """One machine as a Mermaid ``stateDiagram-v2``; state ids are ``<machine>_<state>``
    (Mermaid ids must be identifiers, and some state names repeat across machines)."""
    lines = [f"%% {table.title}", "stateDiagram-v2", "    direction TB"]
    lines += _mermaid_lines(table, "    ")
    return "\n".join(lines) + "\n"


def combined_mermaid(tables: Iterable[MachineTable[Any, Any]] = MACHINES.values()) -> str:
    """Every machine as a composite state of one diagram (the Mermaid twin of :func:`combined_dot`)."""
    lines = ["%% Workload, admission check and ProvisioningRequest lifecycles", "stateDiagram-v2",
             "    direction TB"]
    for table in tables:
        lines.append(f"    %% {table.title}")
        lines.append(f"    state {table.name} {{")
        lines += _mermaid_lines(table, "        ")
        lines.append("    }")
    return "\n".join(lines) + "\n"


# --- rendering ----------------------------------------------------------------------


def dot_available() -> bool:
    """Whether :func:`render_svg` can work here (the ``dot`` binary is on ``PATH``)."""
    return shutil.which("dot") is not None


def render_svg(dot_text: str) -> str:
    """Render DOT to an SVG document with the Graphviz ``dot`` binary.

    Raises :class:`GraphvizError` naming the fix when ``dot`` is not installed
    (the Python ``graphviz`` package alone is not enough), and with ``dot``'s
    own message when it rejects the input.
    """
    exe = shutil.which("dot")
    if exe is None:
        raise GraphvizError("cannot render SVG: the Graphviz 'dot' executable is not on PATH; "
                            "install Graphviz (e.g. 'apt-get install graphviz' or 'brew install graphviz'), "
                            "or use the Mermaid output instead")
    proc = subprocess.run([exe, "-Tsvg"], input=dot_text.encode(), capture_output=True, check=False)
    if proc.returncode != 0:
        raise GraphvizError(f"dot -Tsvg failed (exit {proc.returncode}): "
                            f"{proc.stderr.decode(errors='replace').strip()}")
    return proc.stdout.decode()
