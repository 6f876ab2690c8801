"""Sphinx configuration: API reference from the docstrings, diagrams from the machine declarations."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

DOCS = Path(__file__).resolve().parent
sys.path[:0] = [str(DOCS / "_ext"), str(DOCS.parent)]

import kueue_provreq  # after the path change: works without installing the package

project = "kueue-provreq"
author = "kueue-provreq authors"
copyright = "the kueue-provreq authors; Apache-2.0"
release = version = kueue_provreq.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.doctest",
    "myst_parser",
    "machine_diagrams",
    "command_output",
]

# Markdown only for the conformance contract, which is written (and read on GitHub) as Markdown.
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "_vendor", "_generated", "README.md"]
html_theme = "alabaster"
# Wider than alabaster's 940 px so that the state diagrams and the transition tables fit.
html_theme_options = {"page_width": "1200px", "body_max_width": "none"}
html_static_path = ["_static"]
html_css_files = ["site.css"]

autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"members": True, "undoc-members": True, "show-inheritance": True}

# Only ``.. doctest::`` blocks run in the doctest builder.  Docstring examples
# pulled in by autodoc are run by pytest (--doctest-modules) with their module's
# globals, which Sphinx would not give them.
doctest_test_doctest_blocks = ""


def setup(app: Any) -> None:
    # Module constants show their value, except where it runs past a line: the manifest
    # schemas of kueue_provreq.manifests.validation print thousands of characters.
    from sphinx.ext.autodoc import DataDocumenter
    from sphinx.util.inspect import object_description

    class ShortValueDataDocumenter(DataDocumenter):
        def should_suppress_value_header(self) -> bool:
            return super().should_suppress_value_header() or len(object_description(self.object)) > 100

    app.add_autodocumenter(ShortValueDataDocumenter, override=True)

    # automodule shows no title: each module's text starts with its name, so that an API page
    # reads as one section per module while listing each in one line.
    def name_the_module(app: Any, what: str, name: str, obj: Any, options: Any, lines: list[str]) -> None:
        if what == "module":
            lines[:0] = [f".. rubric:: {name}", ""]

    app.connect("autodoc-process-docstring", name_the_module)
