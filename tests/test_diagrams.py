"""The diagrams are complete: every declared state and (source, trigger, guards, target)
appears in each format, parsed back from the text rather than compared with it."""

from __future__ import annotations

import html
import re
import subprocess
import sys

import pytest
from kueue_provreq import diagrams
from kueue_provreq.machines import MACHINES, Edge, MachineTable

from builders import cli

TABLES = list(MACHINES.values())
IDS = list(MACHINES)

_DOT_NODE = re.compile(r'^\s*"(?P<id>(?:[^"\\]|\\.)*)" \[label="(?P<label>(?:[^"\\]|\\.)*)"')
_DOT_EDGE = re.compile(r'^\s*"(?P<src>(?:[^"\\]|\\.)*)" -> "(?P<dst>(?:[^"\\]|\\.)*)"'
                       r'(?: \[label="(?P<label>(?:[^"\\]|\\.)*)"(?P<attrs>[^\]]*)\])?;$')
_MERMAID_STATE = re.compile(r'^\s*state "(?P<name>[^"]+)" as (?P<id>\w+)$')
_MERMAID_EDGE = re.compile(r"^\s*(?P<src>\S+) --> (?P<dst>\S+?)(?:: (?P<label>.+))?$")

Triple = tuple[str, str, tuple[str, ...], str]
"""(source, trigger, guards with ``!`` for unless, target) as read off a diagram."""


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)


_MARK = re.compile(r" \([^()]* only\)")
"""How an opt-in semantics' part is marked (``(KEP-993 only)``); stripped when reading back."""


def _unmarked(text: str) -> str:
    return _MARK.sub("", text)


def _parse_label(label: str) -> tuple[str, tuple[str, ...]]:
    trigger, _, guards = _unmarked(label).partition(" [")
    return trigger, tuple(guards.removesuffix("]").split(", ")) if guards else ()


def _expected(table: MachineTable, prefix: str = "") -> list[Triple]:
    return [(prefix + e.source, e.trigger, e.conditions + tuple(f"!{g}" for g in e.unless),
             prefix + e.target) for e in table.edges]


def _dot_graph(text: str) -> tuple[dict[str, str], list[Triple], set[tuple[str, str]]]:
    """Node id -> label, every labelled edge line split back into single edges, dashed pairs."""
    nodes: dict[str, str] = {}
    edges: list[Triple] = []
    dashed: set[tuple[str, str]] = set()
    for line in text.splitlines():
        if m := _DOT_EDGE.match(line):
            if m["label"] is None:
                continue
            src, dst = _unescape(m["src"]), _unescape(m["dst"])
            for part in m["label"].split("\\n"):
                trigger, guards = _parse_label(_unescape(part))
                edges.append((src, trigger, guards, dst))
            if "style=dashed" in m["attrs"]:
                dashed.add((src, dst))
        elif m := _DOT_NODE.match(line):
            nodes[_unescape(m["id"])] = _unmarked(_unescape(m["label"]))
    return nodes, edges, dashed


def _mermaid_graph(text: str) -> tuple[dict[str, str], list[Triple], list[Triple], list[tuple[str, str]]]:
    """State id -> name; every labelled transition split back into single edges, ids as written;
    the edges marked internal; and the (source, target) pair of each transition line."""
    names: dict[str, str] = {}
    edges: list[Triple] = []
    internal: list[Triple] = []
    pairs: list[tuple[str, str]] = []
    for line in text.splitlines():
        if m := _MERMAID_STATE.match(line):
            names[m["id"]] = _unmarked(m["name"])
        elif (m := _MERMAID_EDGE.match(line)) and m["label"] is not None:
            pairs.append((m["src"], m["dst"]))
            for part in m["label"].split(diagrams.MERMAID_LINE_BREAK):
                bare = part.removesuffix(diagrams.INTERNAL_MARK)
                trigger, guards = _parse_label(bare)
                edges.append((m["src"], trigger, guards, m["dst"]))
                if bare != part:
                    internal.append(edges[-1])
    return names, edges, internal, pairs


def _same_edges(found: list[Triple], table: MachineTable, prefix: str = "") -> None:
    expected = _expected(table, prefix)
    assert sorted(found) == sorted(expected)


@pytest.mark.parametrize("table", TABLES, ids=IDS)
def test_dot_has_every_state_and_transition(table: MachineTable) -> None:
    nodes, edges, dashed = _dot_graph(diagrams.to_dot(table))
    assert {n: lbl for n, lbl in nodes.items() if n != "__start__"} == {s: s for s in table.states}
    _same_edges(edges, table)
    assert f'"__start__" -> "{table.initial}";' in diagrams.to_dot(table)
    for e in table.edges:
        if e.dest is None:
            assert (e.source, e.source) in dashed, e


@pytest.mark.parametrize("table", TABLES, ids=IDS)
def test_mermaid_has_every_state_and_transition(table: MachineTable) -> None:
    text = diagrams.to_mermaid(table)
    assert text.splitlines()[1] == "stateDiagram-v2"
    names, edges, _, pairs = _mermaid_graph(text)
    assert sorted(names.values()) == sorted(table.states)
    named = [(names[s], t, g, names[d]) for s, t, g, d in edges]
    _same_edges(named, table)
    # one arrow per pair of states, its lines in declaration order
    assert len(pairs) == len(set(pairs)) == len({(e.source, e.target) for e in table.edges})
    for pair in pairs:
        mine = [(t, g) for s, t, g, d in named if (s, d) == (names[pair[0]], names[pair[1]])]
        assert mine == [(t, g) for s, t, g, d in _expected(table) if (s, d) == (names[pair[0]], names[pair[1]])]
    initial_id = next(i for i, n in names.items() if n == table.initial)
    assert f"[*] --> {initial_id}" in text


def test_guards_and_unless_are_labelled() -> None:
    check = MACHINES["admissioncheck"]
    labels = {diagrams.edge_label(e) for e in check.edges}
    assert "request_failed [newer_attempt]" in labels
    assert "request_failed [!within_backoff_limit]" in labels
    assert diagrams.edge_label(Edge("a", "t", "b", ("x", "y"), ("z",))) == "t [x, y, !z]"


def test_preemption_required_and_its_edges_are_marked_kep_993_only() -> None:
    """``kueue-provreq diagram check -o mermaid``, with no flags, draws KEP-993's state."""
    out = cli("diagram", "check", "-o", "mermaid")
    assert out.returncode == 0
    text = out.stdout
    assert 'state "PreemptionRequired (KEP-993 only)" as admissioncheck_PreemptionRequired' in text
    assert "class admissioncheck_PreemptionRequired optIn" in text
    lines = [line.strip() for line in text.splitlines()]
    touching = [line for line in lines if "-->" in line and ":" in line and "PreemptionRequired" in line]
    labels = [part.removesuffix(diagrams.INTERNAL_MARK) for line in touching
              for part in line.partition(": ")[2].split(diagrams.MERMAID_LINE_BREAK)]
    assert labels and all(label.endswith(" (KEP-993 only)") for label in labels)
    assert "request_preemption (KEP-993 only)" in labels


@pytest.mark.parametrize("table", TABLES, ids=IDS)
def test_exactly_the_opt_in_parts_are_marked(table: MachineTable) -> None:
    marked_states = {s for s in table.states if diagrams.state_label(table, s) != s}
    assert marked_states == {s for o in table.opt_in for s in o.states}
    for e in table.edges:
        label = diagrams.edge_label(e, table)
        opt_guards = {g for g in e.guards if table.opt_in_of_guard(g)}
        assert label.endswith(" (KEP-993 only)") == (table.opt_in_of_edge(e) is not None), label
        assert label.count("(KEP-993 only)") == (table.opt_in_of_edge(e) is not None) + len(opt_guards), label


def test_a_kep_993_guard_on_an_ordinary_edge_is_marked_alone() -> None:
    workload = MACHINES["workload"]
    labels = {diagrams.edge_label(e, workload) for e in workload.edges}
    assert "reserve_quota [all_checks_ready, !preemptions_pending (KEP-993 only)]" in labels
    assert "revoke_reservation (KEP-993 only)" in labels


@pytest.mark.parametrize("table", TABLES, ids=IDS)
def test_internal_transitions_are_marked_self_loops(table: MachineTable) -> None:
    names, _, internal, _ = _mermaid_graph(diagrams.to_mermaid(table))
    marked = [(names[s], t, g, names[d]) for s, t, g, d in internal]
    assert sorted(marked) == sorted(t for t, e in zip(_expected(table), table.edges, strict=True) if e.dest is None)
    assert all(s == d for s, _, _, d in marked)


def test_combined_dot_has_every_edge_of_every_machine() -> None:
    text = diagrams.combined_dot()
    nodes, edges, _ = _dot_graph(text)
    for table in TABLES:
        assert f'subgraph "cluster_{table.name}"' in text
        prefix = f"{table.name}."
        assert {n for n in nodes if n.startswith(prefix) and not n.endswith("__start__")} == \
            {prefix + s for s in table.states}
        _same_edges([e for e in edges if e[0].startswith(prefix)], table, prefix)
    assert len(edges) == sum(len(t.edges) for t in TABLES)


def test_combined_mermaid_has_every_edge_of_every_machine() -> None:
    text = diagrams.combined_mermaid()
    names, edges, _, _ = _mermaid_graph(text)
    for table in TABLES:
        assert f"state {table.name} {{" in text
        ids = {i: n for i, n in names.items() if i.startswith(f"{table.name}_")}
        assert sorted(ids.values()) == sorted(table.states)
        mine = [(ids[s], t, g, ids[d]) for s, t, g, d in edges if s in ids]
        _same_edges(mine, table)
    assert len(edges) == sum(len(t.edges) for t in TABLES)


def test_output_is_deterministic() -> None:
    code = ("from kueue_provreq import diagrams as d\n"
            "print(d.combined_dot() + d.combined_mermaid())")
    runs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={"PYTHONHASHSEED": seed}).stdout for seed in ("1", "2")}
    assert len(runs) == 1


def test_core_never_imports_the_diagram_module() -> None:
    code = ("import sys, kueue_provreq.engine, kueue_provreq.machines.phases\n"
            "print('kueue_provreq.diagrams' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_render_svg_without_graphviz_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "")
    assert not diagrams.dot_available()
    with pytest.raises(diagrams.GraphvizError, match="install Graphviz"):
        diagrams.render_svg(diagrams.to_dot(MACHINES["workload"]))


def _svg_texts(svg: str) -> set[str]:
    return {html.unescape(t) for t in re.findall(r"<text[^>]*>([^<]*)</text>", svg)}


needs_dot = pytest.mark.skipif(not diagrams.dot_available(),
                               reason="Graphviz 'dot' is not installed; SVG rendering is not tested")


@needs_dot
@pytest.mark.parametrize("table", TABLES, ids=IDS)
def test_svg_draws_every_state(table: MachineTable) -> None:
    svg = diagrams.render_svg(diagrams.to_dot(table))
    assert "<svg" in svg
    texts = _svg_texts(svg)
    assert {diagrams.state_label(table, s) for s in table.states} <= texts
    assert {diagrams.edge_label(e, table) for e in table.edges} <= texts


@needs_dot
def test_svg_of_the_combined_view() -> None:
    svg = diagrams.render_svg(diagrams.combined_dot())
    texts = _svg_texts(svg)
    assert {t.title for t in TABLES} <= texts
    assert {diagrams.edge_label(e, t) for t in TABLES for e in t.edges} <= texts


@needs_dot
def test_render_svg_reports_dot_errors() -> None:
    with pytest.raises(diagrams.GraphvizError, match="dot -Tsvg failed"):
        diagrams.render_svg("digraph { a -> }")
