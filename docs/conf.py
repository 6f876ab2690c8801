"""Sphinx configuration: API reference from the docstrings, diagrams from the machine declarations."""

from __future__ import annotations

import sys
from pathlib import Path

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
exclude_patterns = ["_build", "_generated", "README.md"]
html_theme = "alabaster"
html_static_path: list[str] = []

autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"members": True, "undoc-members": True, "show-inheritance": True}

# Only ``.. doctest::`` blocks run in the doctest builder.  Docstring examples
# pulled in by autodoc are run by pytest (--doctest-modules) with their module's
# globals, which Sphinx would not give them.
doctest_test_doctest_blocks = ""
