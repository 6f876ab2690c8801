"""``kueue-provreq diagram``: the declared lifecycles as Mermaid, Graphviz DOT or SVG."""

from __future__ import annotations

import argparse

from kueue_provreq import diagrams
from kueue_provreq.cli import options
from kueue_provreq.machines import MACHINES

#: ``diagram`` argument -> machine name (``check`` is what users call the admission check).
MACHINE_NAMES = {"workload": "workload", "check": "admissioncheck", "provisioningrequest": "provisioningrequest"}


def register(subparsers: argparse._SubParsersAction[options.Parser]) -> None:
    cmd = options.add_command(
        subparsers, "diagram", run, help="draw a lifecycle as Mermaid, Graphviz DOT or SVG",
        description="Draw the declared state machine(s); 'all' draws the three side by side. "
                    "SVG needs the Graphviz 'dot' executable.")
    cmd.add_argument("machine", nargs="?", default="all", choices=(*MACHINE_NAMES, "all"),
                     help="workload, check, provisioningrequest or all (default)")
    options.output(cmd, ("mermaid", "dot", "svg"))


def run(args: argparse.Namespace) -> int:
    tables = [MACHINES[MACHINE_NAMES[args.machine]]] if args.machine != "all" else list(MACHINES.values())
    if args.output == "mermaid":
        text = diagrams.to_mermaid(tables[0]) if len(tables) == 1 else diagrams.combined_mermaid(tables)
    else:
        text = diagrams.to_dot(tables[0]) if len(tables) == 1 else diagrams.combined_dot(tables)
        if args.output == "svg":
            text = diagrams.render_svg(text)
    print(text, end="")
    return 0
